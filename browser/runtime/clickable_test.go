package runtime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
)

// clickablePage adds to the standard page what applications are made of:
// elements clickable by the page's own doing that have no control role.
func clickablePage(pg *fakePage) {
	pg.add("c1", "2", axNode{BackendNodeID: 101, Role: "generic", Props: axProps{Clickable: true}})
	pg.add("c1t", "c1", axNode{Role: "StaticText", Name: "Day   5"})
	pg.add("c2", "2", axNode{BackendNodeID: 102, Role: "generic", Description: "Code view", Props: axProps{Clickable: true}})
	pg.add("c3", "2", axNode{BackendNodeID: 103, Role: "generic", Props: axProps{Clickable: true}}) // holds a button
	pg.add("c3b", "c3", axNode{BackendNodeID: 104, Role: "button", Name: "Inner"})
	pg.add("c4", "2", axNode{BackendNodeID: 105, Role: "gridcell", Name: "17", Props: axProps{Clickable: true}})
	pg.add("c5", "2", axNode{BackendNodeID: 106, Role: "generic", Props: axProps{Clickable: true, Hidden: true}})
	pg.add("c6", "2", axNode{BackendNodeID: 107, Role: "generic", Props: axProps{Clickable: true}})
	pg.add("c6t", "c6", axNode{Role: "StaticText", Name: strings.Repeat("word ", 60)})
	pg.add("c7", "2", axNode{BackendNodeID: 108, Role: "generic"}) // not clickable
	pg.add("c7t", "c7", axNode{Role: "StaticText", Name: "Plain"})
	pg.add("c8", "2", axNode{BackendNodeID: 109, Role: "LabelText", Props: axProps{Clickable: true}}) // an icon with nothing to say
	pg.add("c9", "2", axNode{BackendNodeID: 110, Role: "group", Props: axProps{Clickable: true}})     // a draggable card
	pg.add("c9t", "c9", axNode{Role: "StaticText", Name: "Card"})
	pg.add("c10", "2", axNode{BackendNodeID: 111, Role: "group", Name: "Tools", Props: axProps{Clickable: true}}) // a named region
}

// TestClickablesGetRefs: what a person can click has a ref, with its role
// and a name from its title or text; the identity stays the tree's.
func TestClickablesGetRefs(t *testing.T) {
	t.Parallel()
	a := withHit(t, func(hitRequest) hitFacts { return hitFacts{Relation: "inside"} })
	a.p.page.edit(clickablePage)
	o := a.observe("s", a.lease.ID)
	var got []string
	for _, n := range o.Nodes {
		got = append(got, n.Role+":"+n.Name)
	}
	long := strings.TrimSpace(strings.Repeat("word ", 20))
	want := []string{"main:Main area", "textbox:Your name", "button:Greet", "generic:Day 5", "generic:Code view", "button:Inner",
		"gridcell:17", "generic:" + long, "LabelText:", "group:Card", "group:Tools"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("refs\n%q\nwant\n%q", got, want)
	}
	if !containsText(o.Text, "Day 5") || !strings.Contains(strings.Join(o.Text, "|"), "Plain") {
		t.Fatalf("the text stays text too: %q", o.Text)
	}
	// Clicked as any ref: the identity checked right before the input is the
	// accessibility tree's (a generic has no name there).
	a.obs = o
	res := a.act("s", a.request("day", map[string]any{"kind": "click", "ref": a.ref("generic", "Day 5")}))
	if res.Dispatch != "observed" {
		t.Fatalf("click a clickable div: %+v", res)
	}
	if c := lastCommand(t, a.p, browser.ProviderInputClick); *c.Target != (inputTarget{101, "generic", ""}) {
		t.Fatalf("sent %+v", c.Target)
	}
	// The same in a page window.
	w := must[browser.PageWindow](t, a.r.ReadPage, a.c, map[string]any{"sessionId": "s", "leaseId": a.lease.ID})
	var inWindow []string
	for _, n := range w.Nodes {
		inWindow = append(inWindow, n.Role+":"+n.Name)
	}
	if strings.Join(inWindow, "|") != strings.Join(want, "|") {
		t.Fatalf("window refs\n%q\nwant\n%q", inWindow, want)
	}
}

// TestClickablesWithinBudgets: clickable elements count as controls, within
// the observation's budgets.
func TestClickablesWithinBudgets(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	a.p.page.edit(func(pg *fakePage) {
		for i := range browser.MaxControls {
			pg.add(fmt.Sprint("g", i), "2", axNode{BackendNodeID: int64(1000 + i), Role: "generic", Description: fmt.Sprint("Tile ", i), Props: axProps{Clickable: true}})
		}
	})
	o := a.observe("s", a.lease.ID)
	if !o.Truncated || len(o.Nodes) != browser.MaxControls+1 || o.Nodes[len(o.Nodes)-1].Name != fmt.Sprint("Tile ", browser.MaxControls-3) {
		t.Fatalf("%d refs, truncated %v, last %+v", len(o.Nodes), o.Truncated, o.Nodes[len(o.Nodes)-1])
	}
}
