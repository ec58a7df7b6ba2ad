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
		{axNode: axNode{BackendNodeID: int64(100 + i), Role: "button", Name: name}, AXID: id, ParentAXID: parent},
		{axNode: axNode{BackendNodeID: int64(10000 + i), Role: "StaticText", Name: name}, AXID: "t" + id, ParentAXID: id},
	}
}

func TestWindowBudgets(t *testing.T) {
	after := []string{"root", "main"} // the chain the window resumed after
	window := func(n int) *windowRead {
		r := &windowRead{DocumentEpoch: "F:L", Resume: []string{"root", "main", "x"}}
		for i := range n {
			r.Nodes = append(r.Nodes, windowNode{axNode: axNode{Ignored: true}, AXID: fmt.Sprint("g", i), ParentAXID: "main"})
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
		r.Nodes = append(r.Nodes, windowNode{axNode: axNode{BackendNodeID: int64(i + 1), Role: "region", Name: fmt.Sprint("R", i)}, AXID: fmt.Sprint("r", i), ParentAXID: "main"})
	}
	w, next = project(r)
	if len(w.Nodes) != browser.MaxWindowRegions || !slices.Equal(next, []string{"root", "main", fmt.Sprint("r", browser.MaxWindowRegions-1)}) {
		t.Fatalf("regions: %d kept, next %v", len(w.Nodes), next)
	}

	// Bytes: 16 KiB of text fragments.
	r = &windowRead{DocumentEpoch: "F:L"}
	long := strings.Repeat("x", 992) // about 1,000 bytes with its share
	for i := range 17 {
		r.Nodes = append(r.Nodes, windowNode{axNode: axNode{Role: "StaticText", Name: long + fmt.Sprint(i%10)}, AXID: fmt.Sprint("s", i), ParentAXID: "main"})
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
