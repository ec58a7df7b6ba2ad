package runtime

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
)

// Observation baselines kept for cursors, per the protocol.
const (
	MaxCursors      = 128
	MaxCursorBytes  = 8 << 20
	CursorRetention = 120 * time.Second
	// deltaRatio: a delta is sent only when its JSON is smaller than this
	// share of the full observation's.
	deltaRatio = 0.85
)

type cursorCache struct{ *boundedCache }

func newCursorCache(now func() time.Time) *cursorCache {
	return &cursorCache{newBoundedCache(cacheLimits{MaxCursors, MaxCursorBytes, browser.MaxSnapshotSize, CursorRetention}, now)}
}

// snapshotSize is the length of obs's JSON as the reference measures it
// (UTF-8, no HTML escaping), which browser.MaxSnapshotSize bounds.
func snapshotSize(obs *browser.Observation) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(obs) != nil {
		return math.MaxInt
	}
	return b.Len() - 1 // the newline Encode adds
}

// publish keeps obs as the baseline its cursor names, for owner's lease.
func (r *Runtime) publish(owner lease.Owner, leaseID string, obs *browser.Observation) {
	if obs == nil {
		return
	}
	data, err := json.Marshal(obs)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.cursors.put(obs.Cursor, leaseID, owner, data)
	r.mu.Unlock()
}

// baseline returns the observation a cursor names, or nil when it is
// unknown, expired, or another owner's or lease's: all look the same.
func (r *Runtime) baseline(owner lease.Owner, leaseID, cursor string) *browser.Observation {
	r.mu.Lock()
	v := r.cursors.get(cursor)
	r.mu.Unlock()
	if v == nil || v.leaseID != leaseID || v.owner != owner {
		return nil
	}
	var o browser.Observation
	if json.Unmarshal(v.data, &o) != nil {
		return nil
	}
	return &o
}

// since answers an observation asked with a cursor: a delta against the
// baseline when it is known, of the same document and scope, and smaller;
// else the full observation, saying why a delta could not be given.
func since(base *browser.Observation, obs *browser.Observation) any {
	switch {
	case base == nil:
		obs.ResyncRequired, obs.ResyncReason = true, "cursor-unavailable"
	case base.DocumentEpoch != obs.DocumentEpoch:
		obs.ResyncRequired, obs.ResyncReason = true, "document-changed"
	case !reflect.DeepEqual(base.Scope, obs.Scope):
		obs.ResyncRequired, obs.ResyncReason = true, "scope-changed"
	default:
		d := diff(base, obs)
		full, err1 := json.Marshal(obs)
		delta, err2 := json.Marshal(d)
		if err1 == nil && err2 == nil && float64(len(delta)) < deltaRatio*float64(len(full)) {
			return d
		}
	}
	return obs
}

// diff is the delta from base to obs.
func diff(base, obs *browser.Observation) *browser.ObservationDelta {
	d := &browser.ObservationDelta{
		Format: "delta", Cursor: obs.Cursor, BaseCursor: base.Cursor, Tab: obs.Tab, URL: obs.URL,
		Title: obs.Title, DocumentEpoch: obs.DocumentEpoch, Revision: obs.Revision, Truncated: obs.Truncated,
		Scope: obs.Scope, Nodes: browser.NodesDelta{Upsert: []browser.NodeRef{}, Remove: []string{}},
	}
	was := make(map[string]browser.NodeRef, len(base.Nodes))
	for _, n := range base.Nodes {
		was[n.ID] = n
	}
	now := make(map[string]bool, len(obs.Nodes))
	for _, n := range obs.Nodes {
		now[n.ID] = true
		if b, ok := was[n.ID]; !ok || !reflect.DeepEqual(b, n) {
			d.Nodes.Upsert = append(d.Nodes.Upsert, n)
		}
	}
	var order []string // what applying Remove and Upsert gives
	for _, n := range base.Nodes {
		if now[n.ID] {
			order = append(order, n.ID)
		} else {
			d.Nodes.Remove = append(d.Nodes.Remove, n.ID)
		}
	}
	for _, n := range d.Nodes.Upsert {
		if _, ok := was[n.ID]; !ok {
			order = append(order, n.ID)
		}
	}
	ids := make([]string, len(obs.Nodes))
	for i, n := range obs.Nodes {
		ids[i] = n.ID
	}
	if !slices.Equal(order, ids) {
		d.Nodes.Order = ids
	}

	// One splice: the fragments between the common head and tail.
	a, b := base.Text, obs.Text
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	if head != len(a) || head != len(b) {
		d.Text = &browser.TextSplice{Start: head, DeleteCount: len(a) - head - tail, Insert: slices.Clone(b[head : len(b)-tail])}
	}
	return d
}
