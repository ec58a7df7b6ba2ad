package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/test/harness/stack"
)

// TestE2EClickables: elements clickable only by the page's own doing — a
// click listener, a cursor:pointer or grab area, a tab stop, an icon with a
// title — have refs, named by what a person reads on them, and take a
// click; a wrapper around a button and plain text have none.
func TestE2EClickables(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/clickables")
	var got []string
	for _, n := range p.obs.Nodes {
		got = append(got, n.Role+":"+n.Name)
	}
	want := "generic:Day 5|generic:Open span|generic:Tabbable|generic:Code view|generic:Grab me|button:Inside"
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
}
