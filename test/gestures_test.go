package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// TestE2EGestures: the input vocabulary past the click, in real Chromium:
// a double-click, a hover, a drag onto another element and by an offset, a
// click at a point of a canvas, and an option chosen by its value.
func TestE2EGestures(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/gestures")
	text := func(id string) string {
		return eval[string](p, fmt.Sprintf("document.getElementById(%q).textContent", id))
	}
	expect := func(s string) map[string]any { return map[string]any{"kind": "text", "text": s} }

	// A double-click: two clicks, detail 1 then 2, and one dblclick.
	succeeded(t, "double-click", p.act(map[string]any{"kind": "dblclick", "ref": p.ref("button", "Rename me"), "expected": expect("Editing")}), "observed")
	if got := eval[[]int](p, "window.clickDetails"); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("click details %v, want [1 2]", got)
	}

	// A hover opens the menu; nothing is clicked.
	succeeded(t, "hover", p.act(map[string]any{"kind": "hover", "ref": p.ref("button", "Menu"), "expected": expect("Menu open")}), "observed")

	// A drag onto another item sorts the list.
	p.observe()
	r := p.act(map[string]any{"kind": "drag", "ref": p.ref("listitem", "Item A"), "toRef": p.ref("listitem", "Item C"),
		"expected": map[string]any{"kind": "state", "ref": p.ref("listitem", "Item A"), "state": "attached"}})
	succeeded(t, "drag onto an item", r, "observed")
	if order := eval[string](p, "window.order"); order != "Item B,Item C,Item A" {
		t.Fatalf("order %q after dragging A onto C", order)
	}

	// A drag by an offset draws a line on the board, moving with the button
	// held, in the canvas's own pixels.
	r = p.act(map[string]any{"kind": "drag", "ref": p.ref("image", "Drawing board"), "deltaX": 50, "deltaY": 30,
		"expected": expect("Line 100,50 to 150,80")}, "timeoutMs", 3000)
	succeeded(t, "draw", r, "observed")
	// Ten steps, and one more at the end once the page has settled.
	if line := text("line"); !strings.HasSuffix(line, "after 11 moves") {
		t.Fatalf("line %q", line)
	}
	// Past the viewport: refused, nothing sent.
	refused(t, "drag out of the viewport", p.act(map[string]any{"kind": "drag", "ref": p.ref("image", "Drawing board"), "deltaX": 10000, "deltaY": 0}), wire.CodeNotActionable)

	// A click at a point of the chart, in its own pixels; one past its box
	// is refused at once.
	succeeded(t, "click at a point", p.act(map[string]any{"kind": "clickAt", "ref": p.ref("image", "Chart"), "x": 30, "y": 20,
		"expected": expect("Point 30,20")}), "observed")
	succeeded(t, "click at the last pixel", p.act(map[string]any{"kind": "clickAt", "ref": p.ref("image", "Chart"), "x": 199, "y": 99,
		"expected": expect("Point 199,99")}), "observed")
	refused(t, "click past the box", p.act(map[string]any{"kind": "clickAt", "ref": p.ref("image", "Chart"), "x": 200, "y": 0}), wire.CodeNotActionable)

	// An option by its value.
	r = p.act(map[string]any{"kind": "select", "ref": p.ref("combobox", "Size"), "value": "m"})
	succeeded(t, "select by value", r, "observed")
	if v := eval[string](p, "document.getElementById('size').value"); v != "m" {
		t.Fatalf("size %q", v)
	}
	refused(t, "a disabled option's value", p.act(map[string]any{"kind": "select", "ref": p.ref("combobox", "Size"), "value": "m2"}), wire.CodeNotActionable)
}

// TestE2EDragAndDrop: a drag between HTML drag-and-drop elements
// (draggable, drop handlers) drops.
func TestE2EDragAndDrop(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/gestures")
	r := p.act(map[string]any{"kind": "drag", "ref": p.ref("group", "Card"), "toRef": p.ref("generic", "Drop zone"),
		"expected": map[string]any{"kind": "text", "text": "Dropped card"}}, "timeoutMs", 5000)
	succeeded(t, "drag and drop", r, "observed")
}
