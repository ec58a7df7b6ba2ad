package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// observationOf returns an observation whose JSON is exactly n bytes, made
// of text that JSON escapes, and '<', which the reference does not escape.
func observationOf(t *testing.T, n int) *browser.Observation {
	t.Helper()
	obs := &browser.Observation{Format: "full", Cursor: "c1", Tab: "t", URL: "https://a.test/", DocumentEpoch: "F:L",
		Nodes: []browser.NodeRef{}, Text: []string{}, Scope: browser.Scope{Kind: "document"}}
	base := snapshotSize(obs)
	obs.Text = []string{""}
	pad := n - snapshotSize(obs)
	if pad < 0 || base >= n {
		t.Fatalf("cannot make %d bytes", n)
	}
	// Each '"' takes two bytes; '<' one; the rest with 'x'.
	text := strings.Repeat(`"`, pad/4) + strings.Repeat("<", pad/4)
	text += strings.Repeat("x", pad-2*(pad/4)-pad/4)
	obs.Text[0] = text
	if got := snapshotSize(obs); got != n {
		t.Fatalf("built %d bytes, want %d", got, n)
	}
	return obs
}

// TestSnapshotLimit: an observation of exactly 96 KiB passes; one byte more
// is QUEUE_FULL, and an action's result loses it.
func TestSnapshotLimit(t *testing.T) {
	at := observationOf(t, browser.MaxSnapshotSize)
	res := boundSnapshot(&browser.ActionResult{Outcome: "succeeded", Dispatch: "observed", Postcondition: "passed", Observation: at})
	if res.Observation == nil || res.Outcome != "succeeded" {
		t.Fatalf("at the limit: %+v", res)
	}
	past := observationOf(t, browser.MaxSnapshotSize+1)
	res = boundSnapshot(&browser.ActionResult{Outcome: "succeeded", Dispatch: "observed", Postcondition: "passed", Observation: past})
	if res.Observation != nil || res.Outcome != "unknown" || res.Dispatch != "dispatched" || res.Code != wire.CodeQueueFull || res.Postcondition != "unverified" {
		t.Fatalf("past the limit, after input: %+v", res)
	}
	res = boundSnapshot(&browser.ActionResult{Outcome: "succeeded", Dispatch: "notDispatched", Postcondition: "passed", Observation: past})
	if res.Observation != nil || res.Outcome != "failed" || res.Dispatch != "notDispatched" || res.Code != wire.CodeQueueFull {
		t.Fatalf("past the limit, no input: %+v", res)
	}
}

// TestFrameSnapshotLimit: a frame's observation in a page's (inline
// frames) of exactly 96 KiB is kept; one byte more is dropped, its code
// QUEUE_FULL.
func TestFrameSnapshotLimit(t *testing.T) {
	at := browser.InlineFrame{Observation: observationOf(t, browser.MaxSnapshotSize)}
	if !boundFrame(&at) || at.Observation == nil || at.Code != "" {
		t.Fatalf("at the limit: %+v", at)
	}
	past := browser.InlineFrame{Observation: observationOf(t, browser.MaxSnapshotSize+1)}
	if boundFrame(&past) || past.Observation != nil || past.Code != string(wire.CodeQueueFull) {
		t.Fatalf("past the limit: %+v", past)
	}
}

// TestTabQueue: 16 operations may hold or wait for a tab; the 17th is
// QUEUE_FULL at once, and a slot freed makes room again.
func TestTabQueue(t *testing.T) {
	p := newPage(nil, "F:L")
	never := make(chan struct{})
	if err := p.acquire(never); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, MaxTabQueue)
	for range MaxTabQueue - 1 {
		go func() { waiting <- p.acquire(never) }()
	}
	for deadline := 0; ; deadline++ {
		p.mu.Lock()
		n := p.queued
		p.mu.Unlock()
		if n == MaxTabQueue {
			break
		}
		if deadline > 1000 {
			t.Fatalf("%d queued", n)
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.acquire(never); rpc.CodeOf(err) != wire.CodeQueueFull {
		t.Fatalf("the 17th: %v, want QUEUE_FULL", err)
	}
	done := make(chan struct{})
	close(done)
	p.release() // one waiter takes the slot
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if err := p.acquire(done); rpc.CodeOf(err) != wire.CodeDeadlineExceeded {
		t.Fatal("a waiter whose deadline passed took the slot")
	}
}
