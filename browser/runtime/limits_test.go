package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

func TestResultCacheLimits(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newResultCache(func() time.Time { return now })
	for i := range MaxResults {
		c.put(fmt.Sprint("id", i), "lease", &browser.ActionResult{RequestID: fmt.Sprint(i)})
	}
	if c.get("id0") == nil {
		t.Fatalf("%d results: the oldest must still be retained", MaxResults)
	}
	c.put("one-more", "lease", &browser.ActionResult{RequestID: "x"})
	if c.get("id0") != nil || c.get("id1") == nil || c.get("one-more") == nil || c.order.Len() != MaxResults {
		t.Fatalf("result %d must evict the oldest, keeping %d (have %d)", MaxResults+1, MaxResults, c.order.Len())
	}

	// Age: retained at 120 s, gone just past it; reads do not extend it.
	now = now.Add(ResultRetention)
	if c.get("one-more") == nil {
		t.Fatal("a result exactly 120 s old must still be returned")
	}
	now = now.Add(time.Millisecond)
	if c.get("one-more") != nil {
		t.Fatal("a result past 120 s must be gone")
	}

	// Size: one result over 128 KiB is not retained; the total stays under 8 MiB.
	big := &browser.ActionResult{RequestID: strings.Repeat("x", MaxResultSize)}
	c.put("too-big", "lease", big)
	if c.get("too-big") != nil {
		t.Fatal("a result over 128 KiB must not be retained")
	}
	fill := &browser.ActionResult{RequestID: strings.Repeat("y", MaxResultSize-200)}
	for i := range 80 {
		c.put(fmt.Sprint("fill", i), "lease", fill)
		if c.bytes > MaxResultBytes {
			t.Fatalf("cache holds %d bytes, over the %d budget", c.bytes, MaxResultBytes)
		}
	}
	if c.get("fill79") == nil || c.get("fill0") != nil {
		t.Fatal("the byte budget must evict the oldest results first")
	}

	c.put("other", "lease-2", &browser.ActionResult{})
	c.purgeLease("lease")
	if c.order.Len() != 1 || c.get("other") == nil {
		t.Fatalf("purging a lease must drop its results only (left %d)", c.order.Len())
	}
}

func TestInMemoryFenceLimit(t *testing.T) {
	r := New(Config{}, newTestHost())
	for i := range MaxFences {
		if _, first, err := r.enter(fmt.Sprint("id", i), [32]byte{}); err != nil || !first {
			t.Fatalf("fence %d: %v", i, err)
		}
	}
	if _, _, err := r.enter("one-more", [32]byte{}); !errors.Is(err, wire.Err(wire.CodeJournalFull)) {
		t.Fatalf("fence %d: %v, want JOURNAL_FULL (never evicting)", MaxFences+1, err)
	}
	if _, first, err := r.enter("id0", [32]byte{}); err != nil || first {
		t.Fatal("the first fence was evicted")
	}
}

func TestObservationBudgets(t *testing.T) {
	var nodes []axNode
	for i := range browser.MaxControls + 1 {
		nodes = append(nodes, axNode{BackendNodeID: int64(1 + i), Role: "button", Name: fmt.Sprint("b", i)})
	}
	for i := range browser.MaxRegions + 1 {
		nodes = append(nodes, axNode{BackendNodeID: int64(1000 + i), Role: "region", Name: fmt.Sprint("r", i)})
	}
	for i := range browser.MaxTextFragment + 1 {
		nodes = append(nodes, axNode{Role: "StaticText", Name: fmt.Sprint("t", i)})
	}
	obs := project(nodes, false)
	controls, regions := 0, 0
	for _, e := range obs.Elements {
		if e.Ref.Kind == "region" {
			regions++
		} else {
			controls++
		}
	}
	if controls != browser.MaxControls || regions != browser.MaxRegions || len(obs.Text) != browser.MaxTextFragment || !obs.Truncated {
		t.Fatalf("kept %d controls, %d regions, %d texts (truncated %v); want %d, %d, %d and truncated",
			controls, regions, len(obs.Text), obs.Truncated, browser.MaxControls, browser.MaxRegions, browser.MaxTextFragment)
	}

	// At the limits exactly, nothing is cut.
	obs = project(append(append(nodes[:browser.MaxControls:browser.MaxControls],
		nodes[browser.MaxControls+1:browser.MaxControls+1+browser.MaxRegions]...), nodes[browser.MaxControls+browser.MaxRegions+2:len(nodes)-1]...), false)
	if obs.Truncated || len(obs.Elements) != browser.MaxControls+browser.MaxRegions || len(obs.Text) != browser.MaxTextFragment {
		t.Fatalf("at the limits: %d elements, %d texts, truncated %v", len(obs.Elements), len(obs.Text), obs.Truncated)
	}

	// A name over 1,000 units is dropped, not cut.
	obs = project([]axNode{
		{BackendNodeID: 1, Role: "button", Name: strings.Repeat("n", browser.MaxNameLength)},
		{BackendNodeID: 2, Role: "button", Name: strings.Repeat("n", browser.MaxNameLength+1)},
	}, false)
	if len(obs.Elements) != 1 || !obs.Truncated {
		t.Fatalf("names at and past 1,000: kept %d, truncated %v", len(obs.Elements), obs.Truncated)
	}
}

func TestFrameHandleLimit(t *testing.T) {
	p := newPage(nil, "F:L")
	first := p.frameHandle("F0")
	for i := 1; i < MaxFrameHandles; i++ {
		p.frameHandle(fmt.Sprint("F", i))
	}
	if got := p.frameHandle("F0"); got != first || len(p.frames) != MaxFrameHandles {
		t.Fatalf("%d frames: F0's ID changed (%s, was %s) or %d kept", MaxFrameHandles, got, first, len(p.frames))
	}
	// One more frame: the remembered IDs start over (old IDs go stale).
	p.frameHandle("one-more")
	if got := p.frameHandle("F0"); got == first || len(p.frames) != 2 {
		t.Fatalf("frame %d: F0 kept its ID %s; %d kept", MaxFrameHandles+1, got, len(p.frames))
	}
	if p.frameHandle("") == p.frameHandle("") {
		t.Fatal("a frame without a provider ID must get a fresh ID each time")
	}
}

// FuzzProject feeds arbitrary answers to the projection: an answer that
// decodes projects within the budgets, every element with a DOM node and
// a name of at most 1,000 units, and a truncated answer stays truncated.
func FuzzProject(f *testing.F) {
	f.Add([]byte(`{"documentEpoch":"F:L1","nodes":[{"axId":"1","backendNodeId":4,"role":"button","name":"Go"},{"axId":"2","parentAxId":"1","role":"StaticText","name":"Go"}]}`), false)
	f.Add([]byte(`{"documentEpoch":"F:L1","truncated":true,"nodes":[{"axId":"1","backendNodeId":3,"role":"generic","props":{"clickable":true}},{"axId":"2","parentAxId":"1","role":"StaticText","name":"Open"}]}`), false)
	f.Add([]byte(`{"documentEpoch":"F:L1","nodes":[{"backendNodeId":5,"role":"checkbox","name":"Terms","props":{"checked":"mixed"}},{"backendNodeId":6,"role":"region","name":"Main","value":"v"}],"frameOwners":2}`), true)
	f.Add([]byte(`{"documentEpoch":"F:L1","nodes":{}}`), false)
	f.Fuzz(func(t *testing.T, answer []byte, query bool) {
		p, err := Project(answer, query)
		if err != nil {
			return
		}
		controls, regions, textBytes := 0, 0, 0
		for _, e := range p.Elements {
			if e.Ref.Kind == "region" {
				regions++
			} else {
				controls++
			}
			if e.BackendNodeID <= 0 || textLen(e.Ref.Name) > browser.MaxNameLength || e.Ref.ID != "" {
				t.Fatalf("element %+v", e)
			}
		}
		for _, s := range p.Text {
			textBytes += len(s)
		}
		if controls > browser.MaxControls || regions > browser.MaxRegions || len(p.Text) > browser.MaxTextFragment || textBytes > browser.MaxTextBytes {
			t.Fatalf("%d controls, %d regions, %d fragments of %d bytes: past the budgets", controls, regions, len(p.Text), textBytes)
		}
		var read axRead
		if json.Unmarshal(answer, &read) == nil && read.Truncated && !p.Truncated {
			t.Fatal("a truncated answer projects untruncated")
		}
	})
}

// TestProviderNameLimits: a document epoch a provider names is at most 512
// bytes (what a client may send back), a frame's origin at most 512; one
// byte more is a broken contract, in a read, a frame list and a capture.
func TestProviderNameLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	params := map[string]any{"sessionId": "s", "leaseId": l.ID}
	// An epoch of n bytes: the main frame's "F:" and a loader ID.
	epoch := func(n int) string { return "F:" + strings.Repeat("L", n-2) }
	for _, n := range []int{maxEpoch, maxEpoch + 1} {
		f.p.page.edit(func(pg *fakePage) { pg.epoch = epoch(n) })
		_, err := invoke[browser.Observation](t, f.r.Observe, f.c, params)
		if got := errors.Is(err, errProvider); got != (n > maxEpoch) {
			t.Fatalf("an observation of a document epoch of %d bytes: %v", n, err)
		}
		_, err = invoke[browser.Screenshot](t, f.r.Capture, f.c, params)
		if got := errors.Is(err, errProvider); got != (n > maxEpoch) {
			t.Fatalf("a capture of a document epoch of %d bytes: %v", n, err)
		}
	}
	f.p.page.edit(func(pg *fakePage) { pg.epoch = "F:L1" })
	for _, tc := range []struct {
		name  string
		frame sourceFrame
		ok    bool
	}{
		{"a frame's epoch at the limit", sourceFrame{FrameID: "A", ParentID: "F", LoaderID: strings.Repeat("L", maxEpoch-2), Local: true}, true},
		{"a frame's epoch past it", sourceFrame{FrameID: "A", ParentID: "F", LoaderID: strings.Repeat("L", maxEpoch-1), Local: true}, false},
		{"an origin at the limit", sourceFrame{FrameID: "A", ParentID: "F", LoaderID: "LA", Origin: "https://" + strings.Repeat("a", maxOrigin-8), Local: true}, true},
		{"an origin past it", sourceFrame{FrameID: "A", ParentID: "F", LoaderID: "LA", Origin: "https://" + strings.Repeat("a", maxOrigin-7), Local: true}, false},
		{"a parent ID past the limit", sourceFrame{FrameID: "A", ParentID: strings.Repeat("P", maxEpoch+1), LoaderID: "LA", Local: true}, false},
	} {
		f.p.page.edit(func(pg *fakePage) { pg.frames = []sourceFrame{tc.frame} })
		_, err := invoke[browser.FrameInventory](t, f.r.Frames, f.c, params)
		if got := err == nil; got != tc.ok {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, errProvider) {
			t.Fatalf("%s: %v, want errProvider", tc.name, err)
		}
	}
}
