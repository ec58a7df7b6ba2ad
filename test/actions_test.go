package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// page is a leased tab of a personal-mode stack, for the action tests: each
// test asserts what the page itself saw.
type page struct {
	t      *testing.T
	s      *stack.Stack
	target target.ID
	lease  browser.LeaseResult
	obs    browser.Observation
	seq    int
}

func openPage(t *testing.T, s *stack.Stack, path string) *page {
	t.Helper()
	tab, tgt := s.Tab(t, s.Pages.URL(path))
	p := &page{t: t, s: s, target: tgt, lease: s.Claim(t, "s", tab)}
	p.observe()
	return p
}

// observe reads the page again; the refs of ref() come from it.
func (p *page) observe() browser.Observation {
	p.t.Helper()
	p.obs = p.s.Observe(p.t, "s", p.lease.ID)
	return p.obs
}

func (p *page) ref(role, name string) string {
	p.t.Helper()
	return refOf(p.t, p.obs, role, name)
}

// act performs action on the last observation's document, with request
// members extra (timeoutMs, …).
func (p *page) act(action map[string]any, extra ...any) browser.ActionResult {
	p.t.Helper()
	p.seq++
	req := map[string]any{"requestId": fmt.Sprintf("%s-%d", p.t.Name(), p.seq), "leaseId": p.lease.ID,
		"documentEpoch": p.obs.DocumentEpoch, "action": action}
	for i := 0; i+1 < len(extra); i += 2 {
		req[extra[i].(string)] = extra[i+1]
	}
	raw, err := p.s.Call(p.t, "browser.act", map[string]any{"sessionId": "s", "request": req})
	if err != nil {
		p.t.Fatalf("act %v: %v", action, err)
	}
	var r browser.ActionResult
	if err := json.Unmarshal(raw, &r); err != nil {
		p.t.Fatal(err)
	}
	return r
}

// eval reads the page's own state.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	return chromium.Eval[T](p.t, p.s.Browser, p.target, expr)
}

func succeeded(t *testing.T, what string, r browser.ActionResult, dispatch string) {
	t.Helper()
	if r.Outcome != "succeeded" || r.Postcondition != "passed" || r.Dispatch != dispatch || r.Code != "" || r.Observation == nil {
		t.Fatalf("%s: %+v, want succeeded, passed, %s, with an observation", what, r, dispatch)
	}
}

func refused(t *testing.T, what string, r browser.ActionResult, code wire.Code) {
	t.Helper()
	if r.Outcome != "failed" || r.Dispatch != "notDispatched" || r.Code != code {
		t.Fatalf("%s: %+v, want failed, notDispatched, %s", what, r, code)
	}
}

func TestE2ECheck(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/controls")
	clicks := func(id string) int { return eval[int](p, fmt.Sprintf("window.clicks[%q] || 0", id)) }
	check := func(name string, checked bool, extra ...any) browser.ActionResult {
		return p.act(map[string]any{"kind": "check", "ref": p.ref("checkbox", name), "checked": checked}, extra...)
	}

	succeeded(t, "check Newsletter", check("Newsletter", true), "observed")
	if !eval[bool](p, "document.getElementById('news').checked") || clicks("news") != 1 {
		t.Fatalf("newsletter checked=%v after %d clicks, want checked after 1", eval[bool](p, "document.getElementById('news').checked"), clicks("news"))
	}
	// Already so: no input at all.
	succeeded(t, "check Newsletter again", check("Newsletter", true), "notDispatched")
	if clicks("news") != 1 {
		t.Fatalf("a checked box was clicked again: %d clicks", clicks("news"))
	}
	succeeded(t, "uncheck Terms", check("Terms", false), "observed")
	if eval[bool](p, "document.getElementById('terms').checked") || clicks("terms") != 1 {
		t.Fatal("Terms is still checked, or was clicked more than once")
	}
	// A box that refuses to change gets one click, never a second: the
	// outcome is failed once the deadline shows it unchanged.
	if r := check("Stuck", true, "timeoutMs", 1200); r.Outcome != "failed" || r.Postcondition != "failed" || r.Dispatch != "observed" {
		t.Fatalf("a box that refuses to change: %+v", r)
	}
	if n := clicks("stuck"); n != 1 {
		t.Fatalf("the stuck box got %d clicks, want exactly 1", n)
	}
	// A disabled box is not actionable: nothing is sent.
	refused(t, "check a disabled box", check("Unavailable", true, "timeoutMs", 600), wire.CodeNotActionable)
	if clicks("off") != 0 {
		t.Fatal("a disabled box was clicked")
	}

	// A custom switch that answers 60 ms later.
	r := p.act(map[string]any{"kind": "check", "ref": p.ref("switch", "Dark mode"), "checked": true})
	succeeded(t, "switch on", r, "observed")
	if eval[string](p, "document.getElementById('dark').getAttribute('aria-checked')") != "true" || clicks("dark") != 1 {
		t.Fatal("the switch did not turn on with one click")
	}

	// A native radio is chosen, never unchosen; a custom radio is not ours to set.
	succeeded(t, "choose Large", p.act(map[string]any{"kind": "check", "ref": p.ref("radio", "Large"), "checked": true}), "observed")
	if !eval[bool](p, "document.getElementById('large').checked && !document.getElementById('small').checked") || clicks("large") != 1 {
		t.Fatal("the radio group did not move to Large with one click")
	}
	refused(t, "unchoose Small", p.act(map[string]any{"kind": "check", "ref": p.ref("radio", "Small"), "checked": false}), wire.CodeUnsupportedCapability)
	refused(t, "a custom radio", p.act(map[string]any{"kind": "check", "ref": p.ref("radio", "Fancy"), "checked": true}), wire.CodeUnsupportedCapability)
	refused(t, "check a button", p.act(map[string]any{"kind": "check", "ref": p.ref("button", "Nothing"), "checked": true}), wire.CodeUnsupportedCapability)
	if clicks("small")+clicks("fancy")+clicks("noop") != 0 {
		t.Fatal("a refused check was clicked")
	}

	// A stale document: nothing is sent.
	old := p.obs
	s.Browser.Navigate(t, p.target, s.Pages.URL("/controls"))
	p.obs = old
	refused(t, "check on an old document", check("Newsletter", true), wire.CodeStaleTarget)
	if clicks("news") != 0 {
		t.Fatal("a stale check reached the new page")
	}
}

func TestE2EStateExpectations(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/controls")
	click := func(button string, expected map[string]any, extra ...any) browser.ActionResult {
		return p.act(map[string]any{"kind": "click", "ref": p.ref("button", button), "expected": expected}, extra...)
	}
	state := func(role, name, st string) map[string]any {
		return map[string]any{"kind": "state", "ref": p.ref(role, name), "state": st}
	}
	// Each predicate, on an element that changes 80 ms after the click.
	for _, tc := range []struct {
		button, role, name, state string
	}{
		{"Hide", "button", "Hideable", "hidden"},
		{"Remove", "button", "Doomed", "detached"},
		{"Enable later", "button", "Later", "enabled"},
		{"Disable", "button", "Victim", "disabled"},
		{"Grow", "button", "Tiny", "visible"},
		{"Tick the newsletter", "checkbox", "Newsletter", "checked"},
		{"Nothing", "checkbox", "Terms", "checked"},
		{"Nothing", "checkbox", "Stuck", "unchecked"},
		{"Nothing", "button", "Nothing", "attached"},
	} {
		succeeded(t, tc.button+" expecting "+tc.name+" "+tc.state, click(tc.button, state(tc.role, tc.name, tc.state)), "observed")
	}
	if n := eval[int](p, "Object.values(window.clicks).reduce((a, b) => a + b, 0)"); n != 9 {
		t.Fatalf("the page saw %d clicks, want 9", n)
	}
	// A predicate that stays false: one click, then failed at the deadline.
	if r := click("Nothing", state("button", "Victim", "enabled"), "timeoutMs", 1000); r.Outcome != "failed" || r.Postcondition != "failed" || r.Dispatch != "observed" {
		t.Fatalf("a state that never comes: %+v", r)
	}
	// Unsupported predicates and unknown refs are refused before any input.
	before := eval[int](p, "window.clicks.noop")
	refused(t, "checked of a button", click("Nothing", state("button", "Nothing", "checked")), wire.CodeUnsupportedCapability)
	refused(t, "an unknown ref", click("Nothing", map[string]any{"kind": "state", "ref": "r-unknown", "state": "visible"}), wire.CodeStaleTarget)
	if eval[int](p, "window.clicks.noop") != before {
		t.Fatal("a refused action clicked")
	}
}

func TestE2EFillAppendAndValue(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/fields")
	value := func(id string) string { return eval[string](p, fmt.Sprintf("document.getElementById(%q).value", id)) }
	text := func(kind, name, text string, extra ...any) browser.ActionResult {
		return p.act(map[string]any{"kind": kind, "ref": p.ref("textbox", name), "text": text}, extra...)
	}
	expectValue := func(kind, name, t, v string) browser.ActionResult {
		return p.act(map[string]any{"kind": kind, "ref": p.ref("textbox", name), "text": t, "expected": map[string]any{"kind": "value", "value": v}})
	}

	// Fill replaces the value; it is verified by the value it leaves, or by
	// the value expectation.
	succeeded(t, "fill City", text("fill", "City", "Paris"), "observed")
	succeeded(t, "fill City expecting its value", expectValue("fill", "City", "Lyon", "Lyon"), "observed")
	if value("city") != "Lyon" {
		t.Fatalf("city = %q", value("city"))
	}
	// Append adds to the end, re-checking the prefix it read; the value it
	// expects must include that prefix.
	succeeded(t, "append to City", text("append", "City", " Nord"), "observed")
	refused(t, "append expecting the suffix alone", expectValue("append", "City", "!", "!"), wire.CodeInvalidRequest)
	succeeded(t, "append expecting the whole value", expectValue("append", "City", "!", "Lyon Nord!"), "observed")
	if value("city") != "Lyon Nord!" {
		t.Fatalf("city = %q after the appends", value("city"))
	}
	// An empty append verifies the value and sends nothing.
	inputs := eval[int](p, "window.inputs.city")
	succeeded(t, "empty append", text("append", "City", ""), "notDispatched")
	if eval[int](p, "window.inputs.city") != inputs {
		t.Fatal("an empty append sent input")
	}
	// maxlength is checked before anything is sent, for a fill and an append.
	succeeded(t, "append to Code up to its maxlength", text("append", "Code", "CDE"), "observed")
	refused(t, "append past maxlength", text("append", "Code", "F"), wire.CodeNotActionable)
	refused(t, "fill past maxlength", text("fill", "Code", "123456"), wire.CodeNotActionable)
	if value("code") != "ABCDE" {
		t.Fatalf("code = %q", value("code"))
	}
	// A single-line field takes no line break; a textarea does.
	refused(t, "a line break in an input", text("fill", "City", "a\nb"), wire.CodeUnsupportedCapability)
	succeeded(t, "append a line to Notes", text("append", "Notes", "\nLine two"), "observed")
	if value("notes") != "Line one\nLine two" {
		t.Fatalf("notes = %q", value("notes"))
	}
	// A contenteditable editor is filled and appended to within its bounds.
	editor := func(kind, t string) browser.ActionResult {
		return p.act(map[string]any{"kind": kind, "ref": p.ref("textbox", "Editor"), "text": t})
	}
	succeeded(t, "fill the editor", editor("fill", "Hello editor"), "observed")
	succeeded(t, "append to the editor", editor("append", " more"), "observed")
	if got := eval[string](p, "document.getElementById('editor').innerText"); got != "Hello editor more" {
		t.Fatalf("editor = %q", got)
	}

	// Refusals, each before any input: a password (never read, never
	// filled), a read-only field, a disabled field, something not editable.
	inputs = eval[int](p, "Object.values(window.inputs).reduce((a, b) => a + b, 0)")
	refused(t, "fill a password", text("fill", "Password", "x"), wire.CodeUnsupportedCapability)
	r := p.act(map[string]any{"kind": "click", "ref": p.ref("textbox", "Password"), "expected": map[string]any{"kind": "value", "value": "hunter2"}})
	refused(t, "expect a password's value", r, wire.CodeUnsupportedCapability)
	refused(t, "fill a read-only field", text("fill", "Fixed", "x"), wire.CodeUnsupportedCapability)
	refused(t, "fill a disabled field", text("fill", "Disabled", "x", "timeoutMs", 600), wire.CodeNotActionable)
	refused(t, "fill a button", p.act(map[string]any{"kind": "fill", "ref": p.ref("button", "Send"), "text": "x"}), wire.CodeUnsupportedCapability)
	if n := eval[int](p, "Object.values(window.inputs).reduce((a, b) => a + b, 0)"); n != inputs || value("secret") != "hunter2" || value("fixed") != "locked" {
		t.Fatalf("a refused fill reached the page: %d inputs (was %d), password %q, fixed %q", n, inputs, value("secret"), value("fixed"))
	}
	// The password's value is never read: in no observation, no result.
	raw, _ := json.Marshal(p.observe())
	if strings.Contains(string(raw), "hunter2") {
		t.Fatalf("an observation holds the password: %s", raw)
	}

	// press with Shift, and a value expectation on another kind.
	r = p.act(map[string]any{"kind": "press", "ref": p.ref("textbox", "City"), "key": "Tab", "shift": true,
		"expected": map[string]any{"kind": "value", "value": "Lyon Nord!"}})
	succeeded(t, "Shift+Tab", r, "observed")
	if keys := eval[[]string](p, "window.keys"); len(keys) == 0 || keys[len(keys)-1] != "Shift+Tab" {
		t.Fatalf("keys %v, want Shift+Tab last", keys)
	}
	// A value that never comes: failed at the deadline.
	r = p.act(map[string]any{"kind": "fill", "ref": p.ref("textbox", "City"), "text": "Nice",
		"expected": map[string]any{"kind": "value", "value": "Cannes"}}, "timeoutMs", 1000)
	if r.Outcome != "failed" || r.Postcondition != "failed" || value("city") != "Nice" {
		t.Fatalf("a value that never comes: %+v (city %q)", r, value("city"))
	}
}

func TestE2ESelect(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/fields")
	color := func() string { return eval[string](p, "document.getElementById('color').value") }
	changes := func() int { return eval[int](p, "window.changes.color || 0") }
	choose := func(option string, extra ...any) browser.ActionResult {
		return p.act(map[string]any{"kind": "select", "ref": p.ref("combobox", "Color"), "option": option}, extra...)
	}
	r := p.act(map[string]any{"kind": "select", "ref": p.ref("combobox", "Color"), "option": "Blue",
		"expected": map[string]any{"kind": "value", "value": "b"}})
	succeeded(t, "choose Blue", r, "observed")
	if color() != "b" || changes() != 1 || eval[int](p, "window.inputs.color") != 1 {
		t.Fatalf("color %q after %d change events", color(), changes())
	}
	succeeded(t, "choose Blue again", choose("Blue"), "notDispatched")
	if changes() != 1 {
		t.Fatal("choosing the selected option fired another change")
	}
	refused(t, "a disabled option", choose("Gray"), wire.CodeNotActionable)
	refused(t, "two options with one label", choose("Twin"), wire.CodeAmbiguousTarget)
	refused(t, "no such option", choose("Purple"), wire.CodeNotActionable)
	refused(t, "select in a text field", p.act(map[string]any{"kind": "select", "ref": p.ref("textbox", "City"), "option": "Blue"}), wire.CodeUnsupportedCapability)
	if color() != "b" || changes() != 1 {
		t.Fatal("a refused choice changed the select")
	}
	// The form sends what was chosen.
	r = p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Send"), "expected": map[string]any{"kind": "text", "text": "Sent: Par / b"}})
	succeeded(t, "send the form", r, "observed")
}

func TestE2EScrollAndWheel(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/scroll")
	scroll := func(ref string, dx, dy int, extra ...any) browser.ActionResult {
		a := map[string]any{"kind": "scroll", "deltaX": dx, "deltaY": dy}
		if ref != "" {
			a["ref"] = ref
		}
		return p.act(a, extra...)
	}
	// The document.
	r := scroll("", 0, 400)
	succeeded(t, "scroll the document", r, "observed")
	e := r.Scroll
	if e == nil || e.Target.Kind != "document" || e.Requested != (browser.ScrollDelta{DeltaY: 400}) || e.Before.Y != 0 || e.After.Y != 400 || !e.Moved {
		t.Fatalf("document scroll evidence %+v", e)
	}
	if y := eval[float64](p, "window.scrollY"); y != 400 {
		t.Fatalf("the page is at %v, want 400", y)
	}
	// Exactly one element: the rows, not the document.
	box := p.ref("region", "Rows")
	r = scroll(box, 0, 80)
	succeeded(t, "scroll the rows", r, "observed")
	if r.Scroll.Target != (browser.ScrollTarget{Kind: "element", Ref: box}) || r.Scroll.After.Y-r.Scroll.Before.Y != 80 {
		t.Fatalf("element scroll evidence %+v", r.Scroll)
	}
	if top, y := eval[float64](p, "document.getElementById('box').scrollTop"), eval[float64](p, "window.scrollY"); top != 80 || y != 400 {
		t.Fatalf("rows at %v and the page at %v, want 80 and 400", top, y)
	}
	// Nothing to scroll: unverified, with the evidence.
	r = scroll(p.ref("region", "Short region"), 0, 50)
	if r.Outcome != "unknown" || r.Postcondition != "unverified" || r.Scroll == nil || r.Scroll.Moved {
		t.Fatalf("a scroll that cannot move: %+v %+v", r, r.Scroll)
	}
	// With an expectation.
	r = scroll("", 0, -10000, "timeoutMs", 5000)
	succeeded(t, "scroll back to the top", r, "observed")
	if y := eval[float64](p, "window.scrollY"); y != 0 {
		t.Fatalf("the page is at %v after scrolling back", y)
	}

	// One wheel sample at a verified point of the pad, which handles it
	// without scrolling.
	pad := p.ref("region", "Wheel pad")
	r = p.act(map[string]any{"kind": "wheel", "ref": pad, "deltaX": 0, "deltaY": 120})
	if r.Outcome != "unknown" || r.Dispatch != "observed" {
		t.Fatalf("wheel without an expectation: %+v", r)
	}
	r = p.act(map[string]any{"kind": "wheel", "ref": pad, "deltaX": 30, "deltaY": -60, "expected": map[string]any{"kind": "text", "text": "Wheel: 2"}})
	succeeded(t, "wheel expecting text", r, "observed")
	var wheels []struct {
		DX, DY  float64
		Trusted bool
	}
	json.Unmarshal([]byte(eval[string](p, "JSON.stringify(window.wheels)")), &wheels)
	if len(wheels) != 2 || !wheels[0].Trusted || wheels[0].DY != 120 || wheels[1].DX != 30 || wheels[1].DY != -60 {
		t.Fatalf("the pad saw %+v, want two trusted samples (0,120) and (30,-60)", wheels)
	}
}
