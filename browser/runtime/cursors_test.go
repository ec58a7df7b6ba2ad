package runtime

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
)

// randomPage is an observation of a random page: nodes with IDs from a
// small pool (so that two pages share some), random values and text.
func randomPage(rng *rand.Rand, cursor string) *browser.Observation {
	o := &browser.Observation{Format: "full", Cursor: cursor, DocumentEpoch: "F:L", Scope: browser.Scope{Kind: "document"}, Nodes: []browser.NodeRef{}, Text: []string{}}
	ids := rng.Perm(40)[:rng.IntN(30)]
	for _, i := range ids {
		n := browser.NodeRef{ID: fmt.Sprint("r", i), Role: "button", Name: fmt.Sprint("B", i)}
		if rng.IntN(3) == 0 {
			v := fmt.Sprint(rng.IntN(3))
			n.Role, n.Editable, n.Value = "textbox", true, &v
		}
		n.Disabled = rng.IntN(5) == 0
		o.Nodes = append(o.Nodes, n)
	}
	for range rng.IntN(20) {
		o.Text = append(o.Text, fmt.Sprint("t", rng.IntN(12)))
	}
	return o
}

func TestDeltaAppliesToTheBaseline(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	deltas := 0
	for i := range 5000 {
		base := randomPage(rng, "c-base")
		next := randomPage(rng, "c-next")
		if i%3 == 0 { // a small change: the usual case
			next = randomPage(rng, "c-next")
			next.Nodes = append([]browser.NodeRef(nil), base.Nodes...)
			next.Text = append([]string{"new"}, base.Text...)
			if len(next.Nodes) > 1 && i%2 == 0 {
				next.Nodes[0], next.Nodes[1] = next.Nodes[1], next.Nodes[0]
			}
		}
		want := *next
		got := since(base, next)
		d, ok := got.(*browser.ObservationDelta)
		if !ok {
			if got.(*browser.Observation).ResyncRequired {
				t.Fatalf("a full answer to a valid cursor must not ask for a resync: %+v", got)
			}
			continue
		}
		deltas++
		nodes, text := d.Apply(base.Nodes, base.Text)
		if !reflect.DeepEqual(nodes, want.Nodes) && !(len(nodes) == 0 && len(want.Nodes) == 0) {
			t.Fatalf("case %d: nodes\n%+v\nwant\n%+v\n(delta %+v)", i, nodes, want.Nodes, d.Nodes)
		}
		if !reflect.DeepEqual(text, want.Text) && !(len(text) == 0 && len(want.Text) == 0) {
			t.Fatalf("case %d: text %q, want %q (splice %+v)", i, text, want.Text, d.Text)
		}
		if d.Cursor != "c-next" || d.BaseCursor != "c-base" || d.ResyncRequired {
			t.Fatalf("delta header %+v", d)
		}
	}
	if deltas < 1000 {
		t.Fatalf("only %d deltas in 5,000 cases: the test no longer exercises them", deltas)
	}
}

func TestDeltaOrFull(t *testing.T) {
	v := "1"
	page := func(cursor string, text ...string) *browser.Observation {
		o := &browser.Observation{Format: "full", Cursor: cursor, DocumentEpoch: "F:L", Scope: browser.Scope{Kind: "document"}, Text: text}
		for i := range 20 {
			o.Nodes = append(o.Nodes, browser.NodeRef{ID: fmt.Sprint("r", i), Role: "button", Name: strings.Repeat("n", 40)})
		}
		return o
	}
	base := page("c1", "Clicks: 0", "footer")
	now := page("c2", "Clicks: 1", "footer")
	now.Nodes[3].Value = &v
	d, ok := since(base, now).(*browser.ObservationDelta)
	if !ok || len(d.Nodes.Upsert) != 1 || d.Nodes.Upsert[0].ID != "r3" || len(d.Nodes.Remove) != 0 || d.Nodes.Order != nil ||
		d.Text == nil || d.Text.Start != 0 || d.Text.DeleteCount != 1 || !reflect.DeepEqual(d.Text.Insert, []string{"Clicks: 1"}) {
		t.Fatalf("one changed node and one changed fragment: %+v %+v", d, d.Text)
	}
	// Nothing changed: an empty delta, no text splice.
	if d, ok := since(base, page("c3", "Clicks: 0", "footer")).(*browser.ObservationDelta); !ok || len(d.Nodes.Upsert) != 0 || d.Text != nil {
		t.Fatalf("no change: %+v", d)
	}
	// Everything changed: the full observation, without a resync request.
	other := page("c4", "x")
	for i := range other.Nodes {
		other.Nodes[i].ID = fmt.Sprint("z", i)
	}
	if o, ok := since(base, other).(*browser.Observation); !ok || o.ResyncRequired {
		t.Fatalf("a whole new page: %+v", o)
	}
	for _, tc := range []struct {
		base   *browser.Observation
		mutate func(*browser.Observation)
		reason string
	}{
		{nil, func(*browser.Observation) {}, "cursor-unavailable"},
		{base, func(o *browser.Observation) { o.DocumentEpoch = "F:L2" }, "document-changed"},
		{base, func(o *browser.Observation) {
			o.Scope = browser.Scope{Kind: "query", Query: &browser.Query{Name: "Go"}}
		}, "scope-changed"},
	} {
		o := page("c5", "Clicks: 0", "footer")
		tc.mutate(o)
		got, ok := since(tc.base, o).(*browser.Observation)
		if !ok || !got.ResyncRequired || got.ResyncReason != tc.reason {
			t.Errorf("want full with %s, got %+v", tc.reason, got)
		}
	}
}

func TestCursorLimits(t *testing.T) {
	now := time.Unix(1000, 0)
	r := New(Config{Now: func() time.Time { return now }}, newTestHost())
	me := lease.Owner{Conn: 1, Session: "s"}
	obs := func(cursor string, size int) *browser.Observation {
		return &browser.Observation{Cursor: cursor, Text: []string{strings.Repeat("x", size)}}
	}
	for i := range MaxCursors {
		r.publish(me, "L", obs(fmt.Sprint("c", i), 10))
	}
	if r.baseline(me, "L", "c0") == nil {
		t.Fatalf("%d baselines: the oldest must be kept", MaxCursors)
	}
	r.publish(me, "L", obs("one-more", 10))
	if r.baseline(me, "L", "c0") != nil || r.baseline(me, "L", "c1") == nil {
		t.Fatalf("baseline %d must evict the oldest", MaxCursors+1)
	}
	// Another owner, another lease: the cursor does not exist for them.
	if r.baseline(lease.Owner{Conn: 2, Session: "s"}, "L", "c1") != nil || r.baseline(me, "L2", "c1") != nil {
		t.Fatal("a cursor answered another owner or lease")
	}
	// 96 KiB: at the limit kept, past it not.
	overhead := len(`{"format":"","cursor":"at","resyncRequired":false,"tab":"","url":"","title":"","documentEpoch":"","revision":0,"nodes":null,"text":[""],"truncated":false,"scope":{"kind":""}}`)
	r.publish(me, "L", obs("at", browser.MaxSnapshotSize-overhead))
	r.publish(me, "L", obs("past", browser.MaxSnapshotSize-overhead+1))
	if r.baseline(me, "L", "at") == nil || r.baseline(me, "L", "past") != nil {
		t.Fatal("a baseline of exactly 96 KiB must be kept, one byte more must not")
	}
	// Age: kept at 120 s, gone past it.
	now = now.Add(CursorRetention)
	if r.baseline(me, "L", "at") == nil {
		t.Fatal("a baseline exactly 120 s old must be kept")
	}
	now = now.Add(time.Millisecond)
	if r.baseline(me, "L", "at") != nil {
		t.Fatal("a baseline past 120 s must be gone")
	}
	// 8 MiB in all: big baselines push the oldest out before 128 of them.
	for i := range 100 {
		r.publish(me, "L", obs(fmt.Sprint("big", i), 90<<10))
	}
	r.mu.Lock()
	total, n := r.cursors.bytes, r.cursors.order.Len()
	r.mu.Unlock()
	if total > MaxCursorBytes || n >= 100 || r.baseline(me, "L", "big99") == nil || r.baseline(me, "L", "big0") != nil {
		t.Fatalf("%d baselines in %d bytes: over the 8 MiB budget, or the wrong ones evicted", n, total)
	}
	// Release purges the lease's baselines.
	now = now.Add(time.Hour)
	r.publish(me, "L", obs("mine", 1))
	r.publish(me, "L2", obs("theirs", 1))
	r.mu.Lock()
	r.cursors.purgeLease("L")
	r.mu.Unlock()
	if r.baseline(me, "L", "mine") != nil || r.baseline(me, "L2", "theirs") == nil {
		t.Fatal("purging a lease must drop its baselines only")
	}
}

// TestDeltaThreshold: a delta is sent exactly when its JSON is under 85% of
// the full observation's, on both sides of the line.
func TestDeltaThreshold(t *testing.T) {
	base := &browser.Observation{Format: "full", Cursor: "c1", DocumentEpoch: "F:L", Scope: browser.Scope{Kind: "document"}, Text: []string{}}
	for i := range 40 {
		base.Nodes = append(base.Nodes, browser.NodeRef{ID: fmt.Sprint("r", i), Role: "button", Name: fmt.Sprint("Button ", i)})
	}
	sides := map[bool]int{}
	for changed := range 41 {
		obs := *base
		obs.Cursor = "c2"
		obs.Nodes = append([]browser.NodeRef(nil), base.Nodes...)
		for i := range changed {
			obs.Nodes[i].Disabled = true
		}
		full, _ := json.Marshal(&obs)
		delta, _ := json.Marshal(diff(base, &obs))
		want := float64(len(delta)) < 0.85*float64(len(full))
		_, isDelta := since(base, &obs).(*browser.ObservationDelta)
		if isDelta != want {
			t.Fatalf("%d changed: delta %d B, full %d B: sent a delta = %v", changed, len(delta), len(full), isDelta)
		}
		sides[isDelta]++
	}
	if sides[true] == 0 || sides[false] == 0 {
		t.Fatalf("the cases do not cross the line: %v", sides)
	}
}
