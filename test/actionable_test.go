package test

import (
	"fmt"
	"testing"

	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// TestE2EActionable: a click lands where a person's would, in real
// Chromium: on a control drawn by its own pseudo-element, past a decorative
// child, through a styled label to its invisible checkbox, on a button in a
// shadow root; a control covered by another, or by a cookie banner, is
// refused with nothing sent, and the answer names what covers it.
func TestE2EActionable(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/actionable")
	clicks := func(id string) int { return eval[int](p, fmt.Sprintf("window.clicks[%q] || 0", id)) }
	checked := func(id string) bool { return eval[bool](p, fmt.Sprintf("document.getElementById(%q).checked", id)) }

	// The point hits ::before, whose originating element is the button.
	succeeded(t, "click a button drawn by ::before", p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Pseudo"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("button", "Pseudo"), "state": "attached"}}), "observed")
	if clicks("pseudo") != 1 {
		t.Fatalf("the pseudo-element button saw %d clicks", clicks("pseudo"))
	}
	succeeded(t, "click past a decorative icon", p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Decorated"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("button", "Decorated"), "state": "attached"}}), "observed")
	if clicks("deco") != 1 {
		t.Fatalf("the decorated button saw %d clicks", clicks("deco"))
	}
	// Styled boxes over invisible (opacity:0) checkboxes: the label they are
	// in, or the label whose ::before is over one, activates it.
	succeeded(t, "check a box under a styled label", p.act(map[string]any{"kind": "check", "ref": p.ref("checkbox", "Remember me"), "checked": true}), "observed")
	succeeded(t, "check TodoMVC's toggle", p.act(map[string]any{"kind": "check", "ref": p.ref("checkbox", "Walk the dog"), "checked": true}), "observed")
	if !checked("remember") || !checked("walk") {
		t.Fatalf("remember %v, walk %v: both should be checked once", checked("remember"), checked("walk"))
	}
	// Slotted light DOM shown inside a shadow root's button, which is in view
	// but under the cookie banner: scrolled clear of it first.
	under := `(() => { const r = document.getElementById('fancy').getBoundingClientRect();
		return r.bottom <= innerHeight && !!document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2).closest('#banner'); })()`
	if !eval[bool](p, under) {
		t.Fatal("the shadow button is not in view under the banner")
	}
	r := p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Shadow button"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("button", "Shadow button"), "state": "attached"}})
	succeeded(t, "click a button in a shadow root", r, "observed")
	if clicks("fancy") != 1 {
		t.Fatalf("the shadow button saw %d clicks", clicks("fancy"))
	}

	// Another control over the button: refused, named with a ref that works.
	r = p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Under")}, "timeoutMs", 1500)
	refused(t, "click a covered button", r, wire.CodeNotActionable)
	if c := r.CoveredBy; c == nil || c.Tag != "button" || c.Role != "button" || c.Name != "Over" || c.Ref != p.ref("button", "Over") {
		t.Fatalf("covered by %+v, want the button Over with its ref", c)
	}
	// A cookie banner over Buy: named as the dialog it is.
	r = p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Buy")}, "timeoutMs", 1500)
	refused(t, "click under a cookie banner", r, wire.CodeNotActionable)
	if c := r.CoveredBy; c == nil || c.Tag != "div" || c.Role != "dialog" || c.Name != "Cookie consent" || c.Ref == "" {
		t.Fatalf("covered by %+v, want the dialog Cookie consent", c)
	}
	if clicks("under")+clicks("over")+clicks("buy") != 0 {
		t.Fatal("a covered control, or what covers it, was clicked")
	}
	// Once the banner is gone, Buy takes the click.
	succeeded(t, "accept the cookies", p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Accept"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("button", "Accept"), "state": "detached"}}), "observed")
	r = p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Buy"), "expected": map[string]any{"kind": "state", "ref": p.ref("button", "Buy"), "state": "attached"}})
	succeeded(t, "buy", r, "observed")
	if clicks("buy") != 1 || r.CoveredBy != nil {
		t.Fatalf("Buy saw %d clicks; %+v", clicks("buy"), r.CoveredBy)
	}
}

// TestE2ECoverGoesAway: a cover that goes away while the action waits (a
// spinner, a closing modal) is waited out, and the click lands.
func TestE2ECoverGoesAway(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/actionable")
	eval[any](p, "setTimeout(() => document.getElementById('banner').remove(), 400)")
	r := p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Buy"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("button", "Buy"), "state": "attached"}})
	succeeded(t, "click once the banner is gone", r, "observed")
	if n := eval[int](p, "window.clicks.buy || 0"); n != 1 || r.CoveredBy != nil {
		t.Fatalf("Buy saw %d clicks; covered by %+v", n, r.CoveredBy)
	}
}
