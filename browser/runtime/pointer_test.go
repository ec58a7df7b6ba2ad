package runtime

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// withHit is a leased standard page on a provider that answers dom.hit by
// hit (and advertises the pointer and keyboard vocabulary).
func withHit(t *testing.T, hit func(req hitRequest) hitFacts) *actOn {
	a := newActOn(t, Config{}, append(allCaps(), browser.CapDOMHit, browser.CapInputPointer, browser.CapInputChord)...)
	a.p.on(browser.ProviderDOMHit, func(params any) (any, error) {
		return hit(params.(*requestParams[hitRequest]).Request), nil
	})
	return a
}

func lastCommand(t *testing.T, p *fakeProvider, method string) inputCommand {
	t.Helper()
	sent := p.sent(method)
	if len(sent) == 0 {
		t.Fatalf("%s never sent", method)
	}
	return sent[len(sent)-1].(*requestParams[inputCommand]).Request
}

// TestHitDecidesInTheBroker: what a point would hit is the broker's to
// decide: the target, something inside it or a label that activates it
// take the input, with the same list for the extension's last check;
// anything else is waited out, then refused NOT_ACTIONABLE with no input,
// naming what covers the target.
func TestHitDecidesInTheBroker(t *testing.T) {
	t.Parallel()
	for _, relation := range []string{"target", "inside", "label"} {
		a := withHit(t, func(hitRequest) hitFacts { return hitFacts{Relation: relation, Pseudo: relation == "target"} })
		res := a.act("s", a.request("c-"+relation, map[string]any{"kind": "click", "ref": a.ref("button", "Greet")}))
		if res.Dispatch != "observed" || res.CoveredBy != nil {
			t.Fatalf("a hit on the %s: %+v", relation, res)
		}
		cmd := lastCommand(t, a.p, browser.ProviderInputClick)
		if !slices.Equal(cmd.Accept, []string{"target", "inside", "label"}) || *cmd.X != 60 || *cmd.Y != 25 {
			t.Fatalf("a hit on the %s sent %+v", relation, cmd)
		}
		hit := a.p.sent(browser.ProviderDOMHit)[0].(*requestParams[hitRequest]).Request
		if hit != (hitRequest{DocumentEpoch: "F:L1", BackendNodeID: 4, X: 60, Y: 25}) {
			t.Fatalf("dom.hit asked %+v", hit)
		}
	}

	// A dialog over the button: named, with a ref the agent can use, and
	// no input at all.
	a := withHit(t, func(hitRequest) hitFacts {
		return hitFacts{Relation: "outside", Cover: &coverFacts{BackendNodeID: 2, Tag: "MAIN", FrameID: "F"}}
	})
	res := a.act("s", a.request("covered", map[string]any{"kind": "click", "ref": a.ref("button", "Greet")}))
	if res.Outcome != "failed" || res.Dispatch != "notDispatched" || res.Code != wire.CodeNotActionable ||
		res.CoveredBy == nil || *res.CoveredBy != (browser.Cover{Tag: "main", Role: "main", Name: "Main area", Ref: a.ref("main", "Main area")}) {
		t.Fatalf("covered by the main region: %+v %+v", res, res.CoveredBy)
	}
	if a.inputs() != 0 {
		t.Fatal("a covered button got input")
	}
	if n := a.p.count(browser.ProviderDOMHit); n < 2 {
		t.Fatalf("dom.hit asked %d times: a covered target is waited for", n)
	}

	// The cover goes away: the click goes through, the result names nothing.
	covered := 3
	a = withHit(t, func(hitRequest) hitFacts {
		if covered > 0 {
			covered--
			return hitFacts{Relation: "outside", Cover: &coverFacts{BackendNodeID: 77, Tag: "div", FrameID: "F"}}
		}
		return hitFacts{Relation: "target"}
	})
	res = a.act("s", a.request("uncovered", map[string]any{"kind": "click", "ref": a.ref("button", "Greet")}))
	if res.Dispatch != "observed" || res.CoveredBy != nil || a.p.count(browser.ProviderInputClick) != 1 {
		t.Fatalf("a spinner that goes away: %+v", res)
	}
}

// TestCoverIsBounded: what covers a target is named by what the page's own
// document says of it, cut short; another frame's content is never read.
func TestCoverIsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cover *coverFacts
		want  browser.Cover
		ax    bool // its accessibility node is read
	}{
		{"a plain overlay", &coverFacts{BackendNodeID: 5, Tag: "DIV", FrameID: "F"}, browser.Cover{Tag: "div"}, true},
		{"another frame's content", &coverFacts{BackendNodeID: 3, Tag: "input", FrameID: "other"}, browser.Cover{Tag: "iframe"}, false},
		{"no frame", &coverFacts{BackendNodeID: 3, Tag: "input"}, browser.Cover{Tag: "iframe"}, false},
		{"no node", &coverFacts{Tag: "svg", FrameID: "F"}, browser.Cover{Tag: "svg"}, false},
		{"a strange tag", &coverFacts{Tag: "x<y>", FrameID: "F"}, browser.Cover{Tag: "element"}, false},
		{"a custom element", &coverFacts{Tag: "cookie-banner", FrameID: "F"}, browser.Cover{Tag: "cookie-banner"}, false},
		{"nothing said", nil, browser.Cover{Tag: "element"}, false},
		{"a long name", &coverFacts{BackendNodeID: 90, Tag: "button", FrameID: "F"},
			browser.Cover{Tag: "button", Role: "button", Name: strings.Repeat("é", browser.MaxCoverName)}, true},
	} {
		a := withHit(t, func(hitRequest) hitFacts { return hitFacts{Relation: "outside", Cover: tc.cover} })
		a.p.page.edit(func(pg *fakePage) {
			pg.add("90", "2", axNode{BackendNodeID: 90, Role: "button", Name: strings.Repeat("é", browser.MaxNameLength+1)})
		})
		res := a.act("s", a.request("c", map[string]any{"kind": "click", "ref": a.ref("button", "Greet"), "expected": expect("x")}, "timeoutMs", 1000))
		if res.Code != wire.CodeNotActionable || res.CoveredBy == nil || *res.CoveredBy != tc.want {
			t.Errorf("%s: %+v %+v, want %+v", tc.name, res, res.CoveredBy, tc.want)
		}
		read := false
		for _, c := range a.p.sent(browser.ProviderCDP) {
			if c := c.(*cdpParams); c.Method == "Accessibility.getPartialAXTree" && c.Params.(map[string]any)["backendNodeId"] != float64(4) {
				read = true
			}
		}
		if read != tc.ax {
			t.Errorf("%s: the cover's accessibility node read %v, want %v", tc.name, read, tc.ax)
		}
	}
}

// TestHitWithoutTheProviderCapability: a provider without dom.hit.v1 is
// never asked, and its own check at dispatch decides (no accept list).
func TestHitWithoutTheProviderCapability(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	res := a.act("s", a.request("c", map[string]any{"kind": "click", "ref": a.ref("button", "Greet")}))
	if res.Dispatch != "observed" || a.p.count(browser.ProviderDOMHit) != 0 || lastCommand(t, a.p, browser.ProviderInputClick).Accept != nil {
		t.Fatalf("%+v %v", res, a.p.methods())
	}
	// The vocabulary past the click needs its provider capabilities.
	for _, action := range []map[string]any{
		{"kind": "dblclick", "ref": a.ref("button", "Greet")},
		{"kind": "hover", "ref": a.ref("button", "Greet")},
		{"kind": "drag", "ref": a.ref("button", "Greet"), "deltaX": 5, "deltaY": 0},
		{"kind": "chord", "ref": a.ref("textbox", "Your name"), "key": "a", "modifiers": []string{"Control"}},
	} {
		if res := a.act("s", a.request("k-"+action["kind"].(string), action)); res.Code != wire.CodeUnsupportedCapability || res.Dispatch != "notDispatched" {
			t.Errorf("%v without the provider capability: %+v", action, res)
		}
	}
}

// TestPointerKinds: dblclick, hover, clickAt and drag send the input the
// extension turns into a person's gesture, at the points the broker chose.
func TestPointerKinds(t *testing.T) {
	t.Parallel()
	var asked []hitRequest
	a := withHit(t, func(req hitRequest) hitFacts {
		asked = append(asked, req)
		return hitFacts{Relation: "target"}
	})
	greet, box := a.ref("button", "Greet"), a.ref("textbox", "Your name")
	accept := []string{"target", "inside", "label"}

	res := a.act("s", a.request("dbl", map[string]any{"kind": "dblclick", "ref": greet, "expected": expect("DSH demo")}))
	if res.Outcome != "succeeded" || res.Dispatch != "observed" {
		t.Fatalf("dblclick: %+v", res)
	}
	if c := lastCommand(t, a.p, browser.ProviderInputClick); c.Count != 2 || *c.X != 60 || *c.Y != 25 || !slices.Equal(c.Accept, accept) {
		t.Fatalf("dblclick sent %+v", c)
	}

	if res := a.act("s", a.request("hover", map[string]any{"kind": "hover", "ref": greet})); res.Dispatch != "observed" {
		t.Fatalf("hover: %+v", res)
	}
	if c := lastCommand(t, a.p, browser.ProviderInputHover); c.Count != 0 || *c.X != 60 || *c.Y != 25 || c.Target.BackendNodeID != 4 {
		t.Fatalf("hover sent %+v", c)
	}

	// clickAt: the box is 100×30 at (10, 10).
	if res := a.act("s", a.request("at", map[string]any{"kind": "clickAt", "ref": greet, "x": 5, "y": 7})); res.Dispatch != "observed" {
		t.Fatalf("clickAt: %+v", res)
	}
	if c := lastCommand(t, a.p, browser.ProviderInputClick); *c.X != 15 || *c.Y != 17 || c.Count != 0 {
		t.Fatalf("clickAt sent %+v", c)
	}
	if h := asked[len(asked)-1]; h.X != 15 || h.Y != 17 {
		t.Fatalf("clickAt hit-tested %+v", h)
	}
	// At and past the box's edges: refused at once, with no input.
	clicks := a.p.count(browser.ProviderInputClick)
	for i, p := range [][2]int{{99, 29}, {100, 0}, {0, 30}, {10000, 10000}} {
		quads := a.p.count(browser.ProviderCDP)
		res := a.act("s", a.request("edge"+string(rune('a'+i)), map[string]any{"kind": "clickAt", "ref": greet, "x": p[0], "y": p[1]}, "timeoutMs", 30000))
		inside := p == [2]int{99, 29}
		if inside != (res.Dispatch == "observed") || (!inside && res.Code != wire.CodeNotActionable) {
			t.Fatalf("clickAt %v: %+v", p, res)
		}
		if !inside && a.p.count(browser.ProviderCDP)-quads > 4 {
			t.Fatalf("clickAt %v off the box waited: %d CDP calls", p, a.p.count(browser.ProviderCDP)-quads)
		}
	}
	if n := a.p.count(browser.ProviderInputClick) - clicks; n != 1 {
		t.Fatalf("%d clicks at the edges, want the one inside", n)
	}

	// drag onto another element: its identity checked, its centre hit, the
	// source's box only scrolled into view.
	scrolls := 0
	countScrolls := func() int {
		n := 0
		for _, c := range a.p.sent(browser.ProviderCDP) {
			if c.(*cdpParams).Method == "DOM.scrollIntoViewIfNeeded" {
				n++
			}
		}
		return n
	}
	scrolls = countScrolls()
	res = a.act("s", a.request("drag", map[string]any{"kind": "drag", "ref": greet, "toRef": box}))
	if res.Dispatch != "observed" || countScrolls()-scrolls != 1 {
		t.Fatalf("drag: %+v, %d scrolls", res, countScrolls()-scrolls)
	}
	c := lastCommand(t, a.p, browser.ProviderInputDrag)
	if *c.X != 60 || *c.Y != 25 || *c.ToX != 60 || *c.ToY != 25 || c.To == nil || *c.To != (inputTarget{3, "textbox", "Your name"}) ||
		c.Target.BackendNodeID != 4 || !slices.Equal(c.Accept, accept) {
		t.Fatalf("drag sent %+v", c)
	}
	if h := asked[len(asked)-1]; h.BackendNodeID != 3 {
		t.Fatalf("the drop point was hit-tested against %d", h.BackendNodeID)
	}
	// By an offset, within the viewport (800×600) and past it.
	if res := a.act("s", a.request("by", map[string]any{"kind": "drag", "ref": greet, "deltaX": 739, "deltaY": 574})); res.Dispatch != "observed" {
		t.Fatalf("drag by an offset: %+v", res)
	}
	if c := lastCommand(t, a.p, browser.ProviderInputDrag); *c.ToX != 799 || *c.ToY != 599 || c.To != nil {
		t.Fatalf("drag by an offset sent %+v", c)
	}
	drags := a.p.count(browser.ProviderInputDrag)
	for _, d := range [][2]int{{740, 0}, {0, 575}, {-61, 0}} {
		if res := a.act("s", a.request("out"+string(rune('a'+d[0]%7)), map[string]any{"kind": "drag", "ref": greet, "deltaX": d[0], "deltaY": d[1]})); res.Code != wire.CodeNotActionable || res.Dispatch != "notDispatched" {
			t.Fatalf("drag out of the viewport %v: %+v", d, res)
		}
	}
	// Onto a ref that is not known, or a region.
	if res := a.act("s", a.request("stale", map[string]any{"kind": "drag", "ref": greet, "toRef": "r-unknown"})); res.Code != wire.CodeStaleTarget {
		t.Fatalf("drag onto an unknown ref: %+v", res)
	}
	if res := a.act("s", a.request("region", map[string]any{"kind": "drag", "ref": greet, "toRef": a.ref("main", "Main area")})); res.Code != wire.CodeNotActionable {
		t.Fatalf("drag onto a region: %+v", res)
	}
	if a.p.count(browser.ProviderInputDrag) != drags {
		t.Fatal("a refused drag was sent")
	}
}

// TestSelectByValue: an option is chosen by its value as by its label:
// exactly one enabled option must have it; the extension is told both.
func TestSelectByValue(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	a.p.page.edit(func(pg *fakePage) {
		pg.add("40", "2", axNode{BackendNodeID: 40, Role: "combobox", Name: "Colour", Props: axProps{Focusable: true}})
		pg.selects = map[int64]*selectFacts{40: {Options: []optionFacts{
			{Label: "Red", Value: "r", Selected: true}, {Label: "Green", Value: "g"}, {Label: "Grey", Value: "g"},
			{Label: "Blue", Value: "b", Disabled: true}, {Label: "None", Value: ""},
		}}}
	})
	a.obs = a.observe("s", a.lease.ID)
	sel := a.ref("combobox", "Colour")
	choose := func(id, value string) browser.ActionResult {
		return a.act("s", a.request(id, map[string]any{"kind": "select", "ref": sel, "value": value}, "timeoutMs", 500))
	}
	if res := choose("empty", ""); res.Outcome != "succeeded" || res.Dispatch != "observed" {
		t.Fatalf("select the empty value: %+v", res)
	}
	c := lastCommand(t, a.p, browser.ProviderInputSelect)
	if c.Option == nil || c.Option.Index != 4 || c.Option.Label != "None" || c.Option.Value == nil || *c.Option.Value != "" {
		t.Fatalf("sent %+v", c.Option)
	}
	if res := choose("again", ""); res.Outcome != "succeeded" || res.Dispatch != "notDispatched" {
		t.Fatalf("the chosen value again: %+v", res)
	}
	for value, code := range map[string]wire.Code{"g": wire.CodeAmbiguousTarget, "b": wire.CodeNotActionable, "x": wire.CodeNotActionable, "R": wire.CodeNotActionable} {
		if res := choose("v-"+value, value); res.Code != code || res.Dispatch != "notDispatched" {
			t.Errorf("value %q: %+v, want %s", value, res, code)
		}
	}
	// By label, the extension is told no value.
	if res := a.act("s", a.request("label", map[string]any{"kind": "select", "ref": sel, "option": "Red"})); res.Outcome != "succeeded" {
		t.Fatalf("by label: %+v", res)
	}
	if c := lastCommand(t, a.p, browser.ProviderInputSelect); c.Option.Value != nil || c.Option.Label != "Red" {
		t.Fatalf("by label sent %+v", c.Option)
	}
}

// TestCoverNudges: a target in view under a bar is scrolled clear, once each
// way: with room below it, then above it.
func TestCoverNudges(t *testing.T) {
	t.Parallel()
	hits := 0
	a := withHit(t, func(hitRequest) hitFacts {
		hits++
		if hits <= 3 {
			return hitFacts{Relation: "outside", Cover: &coverFacts{BackendNodeID: 2, Tag: "div", FrameID: "F"}}
		}
		return hitFacts{Relation: "target"}
	})
	res := a.act("s", a.request("nudged", map[string]any{"kind": "click", "ref": a.ref("button", "Greet")}))
	if res.Dispatch != "observed" {
		t.Fatalf("%+v", res)
	}
	var rects []any
	for _, c := range a.p.sent(browser.ProviderCDP) {
		if c := c.(*cdpParams); c.Method == "DOM.scrollIntoViewIfNeeded" {
			rects = append(rects, c.Params.(map[string]any)["rect"])
		}
	}
	// The box is 100×30, the viewport 600 high: 300 of room.
	want := []any{nil, map[string]any{"x": 0.0, "y": 0.0, "width": 100.0, "height": 330.0},
		map[string]any{"x": 0.0, "y": -300.0, "width": 100.0, "height": 330.0}, nil}
	if len(rects) != len(want) || rects[0] != nil || rects[3] != nil || !sameJSON(rects[1], want[1]) || !sameJSON(rects[2], want[2]) {
		t.Fatalf("scrolled %v, want %v", rects, want)
	}
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// steps lists the provider calls made since call number from, a cdp call
// by its CDP method.
func steps(p *fakeProvider, from int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.calls[from:] {
		if cp, ok := c.Params.(*cdpParams); ok {
			out = append(out, cp.Method)
		} else {
			out = append(out, c.Method)
		}
	}
	return out
}

// TestHitDuringTheStabilityWait: the hit test of a click runs in the wait
// between the two samples of the target's box, not after it, and its
// answer stands for the box they agree on; the answer for a box that moved
// is dropped.
func TestHitDuringTheStabilityWait(t *testing.T) {
	t.Parallel()
	moved := quad{10, 60, 110, 60, 110, 90, 10, 90} // the box before it settles at quadOf
	a := withHit(t, func(req hitRequest) hitFacts {
		if req.Y == 75 { // the centre of moved: something else is there
			return hitFacts{Relation: "outside", Cover: &coverFacts{Tag: "div"}}
		}
		return hitFacts{Relation: "target"}
	})
	a.p.mu.Lock()
	cdp := a.p.script[browser.ProviderCDP].answer
	a.p.mu.Unlock()
	samples := 0
	a.p.on(browser.ProviderCDP, func(params any) (any, error) {
		if params.(*cdpParams).Method == "DOM.getContentQuads" {
			if samples++; samples == 1 {
				return map[string]any{"quads": []quad{moved}}, nil
			}
		}
		return cdp(params)
	})
	from := len(a.p.methods())
	res := a.act("s", a.request("settles", map[string]any{"kind": "click", "ref": a.ref("button", "Greet")}))
	if res.Dispatch != "observed" || res.CoveredBy != nil {
		t.Fatalf("a click on a box that settled: %+v", res)
	}
	if c := lastCommand(t, a.p, browser.ProviderInputClick); *c.X != 60 || *c.Y != 25 {
		t.Fatalf("clicked at (%v, %v), want the centre of the settled box", *c.X, *c.Y)
	}
	got := steps(a.p, from)
	got = got[slices.Index(got, "DOM.scrollIntoViewIfNeeded"):slices.Index(got, browser.ProviderInputClick)]
	want := []string{"DOM.scrollIntoViewIfNeeded",
		"DOM.getContentQuads", browser.ProviderDOMHit, // moved: its answer dropped
		"DOM.getContentQuads", browser.ProviderDOMHit, // settled: probed in the wait
		"DOM.getContentQuads"} // the same: stable
	if !slices.Equal(got, want) {
		t.Fatalf("calls before the click:\n%v\nwant\n%v", got, want)
	}
}
