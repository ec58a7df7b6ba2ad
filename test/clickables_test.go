package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/test/harness/stack"
)

// TestE2EClickables: elements clickable only by the page's own doing — a
// click listener, a cursor:pointer or grab area, a tab stop, an icon with a
// title, a double-click or press listener of their own, the items of a list
// that listens for a press to drag them, one drawn in a subtree aria-hidden
// keeps from screen readers — have refs, named by what a person
// reads on them, and take a click (a double-click, a drag that waits for a
// list's items to slide aside); a wrapper around
// a button and plain text have none.
func TestE2EClickables(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/clickables")
	var got []string
	for _, n := range p.obs.Nodes {
		got = append(got, n.Role+":"+n.Name)
	}
	want := "generic:Day 5|generic:Open span|generic:Tabbable|generic:Code view|generic:Grab me|button:Inside|" +
		"LabelText:Buy milk|generic:Press me|listitem:First|listitem:Second|listitem:Third|button:Fold section"
	if strings.Join(got, "|") != want {
		t.Fatalf("refs %q, want %q", strings.Join(got, "|"), want)
	}
	for id, name := range map[string]string{"day5": "Day 5", "open": "Open span", "tab": "Tabbable", "code": "Code view", "grab": "Grab me"} {
		r := p.act(map[string]any{"kind": "click", "ref": p.ref("generic", name),
			"expected": map[string]any{"kind": "state", "ref": p.ref("generic", name), "state": "attached"}})
		succeeded(t, "click "+name, r, "observed")
		if n := eval[int](p, fmt.Sprintf("window.clicks[%q] || 0", id)); n != 1 {
			t.Fatalf("%s saw %d clicks", id, n)
		}
	}
	// Drawn in a gutter that aria-hidden keeps from screen readers: a person
	// sees and clicks it; its identity is checked in the DOM.
	succeeded(t, "click the fold widget", p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Fold section"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("generic", "Day 5"), "state": "attached"}}), "observed")
	if n := eval[int](p, "window.clicks.fold || 0"); n != 1 {
		t.Fatalf("the fold widget saw %d clicks", n)
	}
	succeeded(t, "double-click the label", p.act(map[string]any{"kind": "dblclick", "ref": p.ref("LabelText", "Buy milk"),
		"expected": map[string]any{"kind": "text", "text": "Editing"}}), "observed")
	succeeded(t, "press the tile", p.act(map[string]any{"kind": "click", "ref": p.ref("generic", "Press me"),
		"expected": map[string]any{"kind": "text", "text": "Pressed"}}), "observed")
	// The drag passes over Second (which slides aside) on its way to First,
	// and holds there until the list has settled.
	r := p.act(map[string]any{"kind": "drag", "ref": p.ref("listitem", "Third"), "toRef": p.ref("listitem", "First"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("listitem", "Third"), "state": "attached"}})
	succeeded(t, "drag an item", r, "observed")
	if order := eval[string](p, "[...document.querySelectorAll('#sortable li')].map((li) => li.textContent).join()"); order != "Third,First,Second" {
		t.Fatalf("the list reads %q after dragging Third onto First", order)
	}
}
