package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

func isCode(err error, code wire.Code) bool {
	we, ok := errors.AsType[*wire.Error](err)
	return ok && we.Code == code
}

func TestTraversalLimits(t *testing.T) {
	p := newPage(nil, "F:L")
	now := time.Unix(1000, 0)
	var tokens []string
	for range browser.MaxTraversals {
		tok, err := p.keepReading(&traversal{epoch: "F:L", expires: now.Add(browser.ContinuationTTL)}, now)
		if err != nil {
			t.Fatalf("traversal %d: %v", len(tokens)+1, err)
		}
		tokens = append(tokens, tok)
	}
	if _, err := p.keepReading(&traversal{epoch: "F:L", expires: now.Add(browser.ContinuationTTL)}, now); !isCode(err, wire.CodeQueueFull) {
		t.Fatalf("traversal %d: %v, want QUEUE_FULL", browser.MaxTraversals+1, err)
	}
	// Nothing was evicted: every continuation still reads on, exactly at
	// its 2 minutes.
	at := now.Add(browser.ContinuationTTL)
	if _, err := p.startReading(browser.ReadPageOptions{Continuation: tokens[0]}, at); err != nil {
		t.Fatalf("a continuation exactly 2 min old: %v", err)
	}
	if _, err := p.startReading(browser.ReadPageOptions{Continuation: tokens[1]}, at.Add(time.Nanosecond)); !isCode(err, wire.CodeStaleTarget) {
		t.Fatalf("a continuation past 2 min: %v, want STALE_TARGET", err)
	}
	// Expired traversals make room.
	if _, err := p.keepReading(&traversal{epoch: "F:L", expires: at.Add(time.Minute)}, at.Add(time.Nanosecond)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	// A continuation of another document, or with another root, is stale.
	tok, _ := p.keepReading(&traversal{epoch: "F:old", expires: at.Add(time.Minute)}, at)
	if _, err := p.startReading(browser.ReadPageOptions{Continuation: tok}, at); !isCode(err, wire.CodeStaleTarget) {
		t.Errorf("continuation of another document: %v", err)
	}
	tok, _ = p.keepReading(&traversal{epoch: "F:L", rootRef: "r1", expires: at.Add(time.Minute)}, at)
	if _, err := p.startReading(browser.ReadPageOptions{Continuation: tok, RootRef: "r2"}, at); !isCode(err, wire.CodeStaleTarget) {
		t.Errorf("continuation with another root: %v", err)
	}
}

// button returns a button and its text as a window would have them.
func button(i int, parent string) []windowNode {
	id := fmt.Sprint("b", i)
	name := fmt.Sprint("Item ", i)
	return []windowNode{
		{axNode{BackendNodeID: int64(100 + i), Role: "button", Name: name, AXID: id, ParentAXID: parent}},
		{axNode{BackendNodeID: int64(10000 + i), Role: "StaticText", Name: name, AXID: "t" + id, ParentAXID: id}},
	}
}

func TestWindowBudgets(t *testing.T) {
	after := []string{"root", "main"} // the chain the window resumed after
	window := func(n int) *windowRead {
		r := &windowRead{DocumentEpoch: "F:L", Resume: []string{"root", "main", "x"}}
		for i := range n {
			r.Nodes = append(r.Nodes, windowNode{axNode{Ignored: true, AXID: fmt.Sprint("g", i), ParentAXID: "main"}})
			r.Nodes = append(r.Nodes, button(i, fmt.Sprint("g", i))...)
		}
		return r
	}
	project := func(r *windowRead) (*browser.PageWindow, []string) {
		w := &browser.PageWindow{Nodes: []browser.NodeRef{}, Text: []string{}}
		next, _ := projectWindow(w, newPage(nil, "F:L"), after, r)
		return w, next
	}

	// 50 buttons are 100 entries: all fit, and the reading resumes where
	// the provider stopped.
	w, next := project(window(browser.MaxWindowEntries / 2))
	if len(w.Nodes)+len(w.Text) != browser.MaxWindowEntries || !slices.Equal(next, []string{"root", "main", "x"}) {
		t.Fatalf("at the budget: %d entries, next %v", len(w.Nodes)+len(w.Text), next)
	}
	// One more button: the window ends before it, right after the last
	// node kept (the 50th button's text), whose chain runs through the
	// ignored group it sits in.
	w, next = project(window(browser.MaxWindowEntries/2 + 1))
	if len(w.Nodes)+len(w.Text) != browser.MaxWindowEntries || !slices.Equal(next, []string{"root", "main", "g50"}) {
		t.Fatalf("past the budget: %d entries, next %v", len(w.Nodes)+len(w.Text), next)
	}

	// Regions: 24 fit, the 25th starts the next window.
	r := &windowRead{DocumentEpoch: "F:L"}
	for i := range browser.MaxWindowRegions + 1 {
		r.Nodes = append(r.Nodes, windowNode{axNode{BackendNodeID: int64(i + 1), Role: "region", Name: fmt.Sprint("R", i), AXID: fmt.Sprint("r", i), ParentAXID: "main"}})
	}
	w, next = project(r)
	if len(w.Nodes) != browser.MaxWindowRegions || !slices.Equal(next, []string{"root", "main", fmt.Sprint("r", browser.MaxWindowRegions-1)}) {
		t.Fatalf("regions: %d kept, next %v", len(w.Nodes), next)
	}

	// Bytes: 16 KiB of text fragments.
	r = &windowRead{DocumentEpoch: "F:L"}
	long := strings.Repeat("x", 992) // about 1,000 bytes with its share
	for i := range 17 {
		r.Nodes = append(r.Nodes, windowNode{axNode{Role: "StaticText", Name: long + fmt.Sprint(i%10), AXID: fmt.Sprint("s", i), ParentAXID: "main"}})
	}
	w, next = project(r)
	if len(w.Text) != browser.MaxWindowBytes/1000 || next == nil || next[len(next)-1] != fmt.Sprint("s", len(w.Text)-1) {
		t.Fatalf("bytes: %d fragments kept, next %v", len(w.Text), next)
	}
	// The last window: no resume from the provider, nothing cut.
	r = &windowRead{DocumentEpoch: "F:L", Nodes: button(1, "main")}
	if _, next = project(r); next != nil {
		t.Fatalf("last window: next %v", next)
	}
}

// newBigPage is a leased page of groups "Group 1".."Group N" of n buttons
// "Item i" each, with their text: several windows long.
func newBigPage(t *testing.T, cfg Config, groups, n int, caps ...string) (*fixture, browser.LeaseResult) {
	f := newFixture(t, cfg, caps...)
	f.p.page.edit(func(pg *fakePage) {
		pg.nodes = pg.nodes[:1]
		for g := 1; g <= groups; g++ {
			gid := fmt.Sprint("g", g)
			pg.add(gid, "1", axNode{BackendNodeID: int64(g), Role: "region", Name: fmt.Sprint("Group ", g)})
			for i := (g-1)*n + 1; i <= g*n; i++ {
				pg.add(fmt.Sprint("b", i), gid, axNode{BackendNodeID: int64(100 + i), Role: "button", Name: fmt.Sprint("Item ", i)})
				pg.add(fmt.Sprint("t", i), fmt.Sprint("b", i), axNode{BackendNodeID: int64(10000 + i), Role: "StaticText", Name: fmt.Sprint("Item ", i)})
			}
		}
	})
	return f, f.claim("s")
}

func readWindow(t *testing.T, f *fixture, leaseID string, opts map[string]any) (browser.PageWindow, error) {
	t.Helper()
	params := map[string]any{"sessionId": "s", "leaseId": leaseID}
	if opts != nil {
		params["options"] = opts
	}
	return invoke[browser.PageWindow](t, f.r.ReadPage, f.c, params)
}

// readAll reads every window of a reading and counts each button and text.
func readAll(t *testing.T, f *fixture, leaseID string, opts map[string]any) (ws []browser.PageWindow, buttons, texts map[string]int) {
	t.Helper()
	buttons, texts = map[string]int{}, map[string]int{}
	for {
		w, err := readWindow(t, f, leaseID, opts)
		if err != nil {
			t.Fatalf("window %d: %v", len(ws), err)
		}
		if w.Page.Index != len(ws) || w.Truncated != (w.Page.Continuation != "" || w.Page.Incomplete) || len(w.Nodes)+len(w.Text) > browser.MaxWindowEntries {
			t.Fatalf("window %d: %+v", len(ws), w.Page)
		}
		ws = append(ws, w)
		for _, n := range w.Nodes {
			if n.Role == "button" {
				buttons[n.Name]++
			}
		}
		for _, s := range w.Text {
			texts[s]++
		}
		if w.Page.Continuation == "" {
			return ws, buttons, texts
		}
		opts = map[string]any{"continuation": w.Page.Continuation}
		if root, ok := w.Scope.RootRef, w.Scope.Kind == "subtree"; ok {
			opts["rootRef"] = root
		}
	}
}

func TestReadPage(t *testing.T) {
	t.Parallel()
	f, l := newBigPage(t, Config{}, 3, 40)
	ws, buttons, texts := readAll(t, f, l.ID, nil)
	if len(ws) < 3 || len(buttons) != 120 || len(texts) != 120 {
		t.Fatalf("%d windows, %d buttons, %d texts", len(ws), len(buttons), len(texts))
	}
	for name, n := range buttons {
		if n != 1 || texts[name] != 1 {
			t.Fatalf("%s read %d times, its text %d times", name, n, texts[name])
		}
	}
	if w := ws[0]; w.Tab != l.Tab || w.URL != pageURL || w.DocumentEpoch != "F:L1" || w.Scope.Kind != "document" || w.Page.Incomplete {
		t.Fatalf("first window %+v", w)
	}
	pages := f.p.sent(browser.ProviderAXPage)
	first, second := pages[0].(*requestParams[pageRequest]), pages[1].(*requestParams[pageRequest])
	if first.Request.MaxNodes != windowNodes || first.Request.After != nil || first.Request.BackendNodeID != 0 || first.Lease.ID != l.ID ||
		len(second.Request.After) < 2 || second.Request.After[0] != "1" {
		t.Fatalf("ax.page sent %+v then %+v", first.Request, second.Request)
	}

	t.Run("a region", func(t *testing.T) {
		w, err := readWindow(t, f, l.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		group := refOf(t, w.Nodes, "region", "Group 2")
		ws, buttons, _ := readAll(t, f, l.ID, map[string]any{"rootRef": group})
		if len(buttons) != 40 || buttons["Item 41"] != 1 || buttons["Item 80"] != 1 || ws[0].Scope.Kind != "subtree" || ws[0].Scope.RootRef != group {
			t.Fatalf("Group 2 read as %v, scope %+v", buttons, ws[0].Scope)
		}
		// The root element changed its name: the region is not the one named.
		f.p.page.edit(func(pg *fakePage) {
			pg.nodes[slices.IndexFunc(pg.nodes, func(n fakeNode) bool { return n.id == "g2" })].Name = "Renamed"
		})
		defer f.p.page.edit(func(pg *fakePage) {
			pg.nodes[slices.IndexFunc(pg.nodes, func(n fakeNode) bool { return n.id == "g2" })].Name = "Group 2"
		})
		if _, err := readWindow(t, f, l.ID, map[string]any{"rootRef": group}); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("a renamed root: %v, want STALE_TARGET", err)
		}
		if _, err := readWindow(t, f, l.ID, map[string]any{"rootRef": "r-unknown"}); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("an unknown root: %v, want STALE_TARGET", err)
		}
	})

	t.Run("continuations", func(t *testing.T) {
		w, err := readWindow(t, f, l.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		next := map[string]any{"continuation": w.Page.Continuation}
		if _, err := readWindow(t, f, l.ID, map[string]any{"continuation": w.Page.Continuation, "rootRef": refOf(t, w.Nodes, "region", "Group 1")}); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("a continuation with another root: %v", err)
		}
		if _, err := readWindow(t, f, l.ID, next); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("a continuation tried with another root is used up: %v", err)
		}
		w, _ = readWindow(t, f, l.ID, nil)
		next = map[string]any{"continuation": w.Page.Continuation}
		if _, err := readWindow(t, f, l.ID, next); err != nil {
			t.Fatalf("first use: %v", err)
		}
		if _, err := readWindow(t, f, l.ID, next); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("second use: %v, want STALE_TARGET", err)
		}
		// Two minutes exactly, then past them.
		w1, _ := readWindow(t, f, l.ID, nil)
		w2, _ := readWindow(t, f, l.ID, nil)
		f.clock.advance(browser.ContinuationTTL)
		if _, err := readWindow(t, f, l.ID, map[string]any{"continuation": w1.Page.Continuation}); err != nil {
			t.Fatalf("a continuation 2 minutes old: %v", err)
		}
		f.clock.advance(time.Nanosecond)
		if _, err := readWindow(t, f, l.ID, map[string]any{"continuation": w2.Page.Continuation}); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("a continuation past 2 minutes: %v", err)
		}
		// Another session's continuation is not this one's (its lease is not).
		if _, err := invoke[any](t, f.r.ReadPage, newFakeClient(2), map[string]any{"sessionId": "s", "leaseId": l.ID,
			"options": map[string]any{"continuation": w.Page.Continuation}}); !isCode(err, wire.CodeLeaseRevoked) {
			t.Fatalf("another connection: %v", err)
		}
	})

	t.Run("eight open readings", func(t *testing.T) {
		g, l := newBigPage(t, Config{}, 3, 40)
		var open []string
		for range browser.MaxTraversals {
			w, err := readWindow(t, g, l.ID, nil)
			if err != nil {
				t.Fatalf("reading %d: %v", len(open)+1, err)
			}
			open = append(open, w.Page.Continuation)
		}
		if _, err := readWindow(t, g, l.ID, nil); !isCode(err, wire.CodeQueueFull) {
			t.Fatalf("reading %d: %v, want QUEUE_FULL", browser.MaxTraversals+1, err)
		}
		for _, c := range open { // nothing was evicted
			if _, err := readWindow(t, g, l.ID, map[string]any{"continuation": c}); err != nil {
				t.Fatalf("an open reading: %v", err)
			}
		}
	})

	t.Run("the path changed", func(t *testing.T) {
		g, l := newBigPage(t, Config{}, 3, 40)
		w, _ := readWindow(t, g, l.ID, nil)
		// The first window stops inside Group 2: take the group away.
		g.p.page.edit(func(pg *fakePage) {
			pg.nodes = slices.DeleteFunc(pg.nodes, func(n fakeNode) bool { return n.id == "g2" })
		})
		if _, err := readWindow(t, g, l.ID, map[string]any{"continuation": w.Page.Continuation}); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("a continuation through a removed region: %v, want STALE_TARGET", err)
		}
	})

	t.Run("the document changed", func(t *testing.T) {
		g, l := newBigPage(t, Config{}, 3, 40)
		w, _ := readWindow(t, g, l.ID, nil)
		g.p.page.edit(func(pg *fakePage) { pg.epoch = "F:L2" })
		if _, err := readWindow(t, g, l.ID, map[string]any{"continuation": w.Page.Continuation}); !isCode(err, wire.CodeStaleTarget) {
			t.Fatalf("a continuation into a new document: %v, want STALE_TARGET", err)
		}
		// A new reading starts on the new document.
		if w, err := readWindow(t, g, l.ID, nil); err != nil || w.DocumentEpoch != "F:L2" {
			t.Fatalf("a new reading: %+v %v", w, err)
		}
		g.p.page.edit(func(pg *fakePage) { pg.url = "https://elsewhere.test/" })
		if _, err := readWindow(t, g, l.ID, nil); !isCode(err, wire.CodeLeaseRevoked) {
			t.Fatalf("a page of another origin: %v, want LEASE_REVOKED", err)
		}
	})

	t.Run("incomplete", func(t *testing.T) {
		g, l := newBigPage(t, Config{}, 1, 3)
		g.p.on(browser.ProviderAXPage, func(params any) (any, error) {
			w, err := g.p.page.window(params.(*requestParams[pageRequest]).Request)
			w.Truncated = true
			return w, err
		})
		w, err := readWindow(t, g, l.ID, nil)
		if err != nil || !w.Page.Incomplete || !w.Truncated || w.Page.Continuation != "" {
			t.Fatalf("an incomplete last window: %+v %v", w.Page, err)
		}
	})
}

func TestReadPageInFrame(t *testing.T) {
	t.Parallel()
	f, l, frames := frameFixture(t)
	f.p.page.docs["C"].edit(func(pg *fakePage) {
		for i := range 120 {
			pg.add(fmt.Sprint("x", i), "1", axNode{BackendNodeID: int64(1000 + i), Role: "StaticText", Name: fmt.Sprint("Line ", i)})
		}
	})
	sel := selector(frames[1])
	w, err := readWindow(t, f, l.ID, map[string]any{"frame": sel})
	if err != nil || w.Scope.Kind != "frame" || w.Scope.FrameID != frames[1].ID || w.DocumentEpoch != "C:LC1" || w.Page.Continuation == "" {
		t.Fatalf("a frame's first window %+v %v", w, err)
	}
	if sent := f.p.sent(browser.ProviderAXPage)[0].(*requestParams[pageRequest]).Request.Frame; sent == nil || *sent != (frameDocument{"C", "LC1"}) {
		t.Fatalf("ax.page sent frame %+v", sent)
	}
	// The continuation is bound to the frame.
	if _, err := readWindow(t, f, l.ID, map[string]any{"continuation": w.Page.Continuation}); !isCode(err, wire.CodeStaleTarget) {
		t.Fatalf("a frame's continuation without the frame: %v", err)
	}
	w, _ = readWindow(t, f, l.ID, map[string]any{"frame": sel})
	if next, err := readWindow(t, f, l.ID, map[string]any{"frame": sel, "continuation": w.Page.Continuation}); err != nil || next.Page.Index != 1 {
		t.Fatalf("the frame's second window %+v %v", next.Page, err)
	}
	if _, err := readWindow(t, f, l.ID, map[string]any{"frame": selector(frames[0])}); !isCode(err, wire.CodeInvalidRequest) {
		t.Fatalf("the main frame as a frame: %v", err)
	}

	// Without ax.read-frame.v1 the provider is not asked.
	g, l2, frames2 := frameFixture(t, append(browser.Required(), browser.CapAXPage, browser.CapFramesList)...)
	if _, err := readWindow(t, g, l2.ID, map[string]any{"frame": selector(frames2[1])}); !isCode(err, wire.CodeUnsupportedCapability) {
		t.Fatalf("a frame reading without ax.read-frame.v1: %v", err)
	}
	if g.p.count(browser.ProviderAXPage) != 0 {
		t.Fatal("ax.page was sent")
	}
}
