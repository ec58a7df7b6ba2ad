package browser

import (
	"encoding/json"
	"reflect"
	"slices"
	"time"

	"github.com/dsh-browser/broker/lease"
)

// Observation baselines kept for cursors, per the protocol.
const (
	MaxCursors      = 128
	MaxCursorBytes  = 8 << 20
	MaxSnapshotSize = 96 << 10 // a larger observation is served but not kept
	CursorRetention = 120 * time.Second
	// deltaRatio: a delta is sent only when its JSON is smaller than this
	// share of the full observation's.
	deltaRatio = 0.85
)

// ObservationDelta is browser.observe's answer to a cursor whose baseline
// is still known, when the changes are smaller than the page: apply it to
// the baseline's nodes and text to get the page now.
type ObservationDelta struct {
	Format         string      `json:"format"` // delta
	Cursor         string      `json:"cursor"`
	BaseCursor     string      `json:"baseCursor"`
	ResyncRequired bool        `json:"resyncRequired"` // false
	Tab            string      `json:"tab"`
	URL            string      `json:"url"`
	Title          string      `json:"title"`
	DocumentEpoch  string      `json:"documentEpoch"`
	Revision       int64       `json:"revision"`
	Truncated      bool        `json:"truncated"`
	Scope          Scope       `json:"scope"`
	Nodes          NodesDelta  `json:"nodes"`
	Text           *TextSplice `json:"text,omitempty"`
}

// NodesDelta changes the baseline's nodes: drop those in Remove, replace or
// append those in Upsert (by ID; new ones go at the end in Upsert's order),
// then, when Order is present, put the nodes in that order.
type NodesDelta struct {
	Upsert []NodeRef `json:"upsert"`
	Remove []string  `json:"remove"`
	Order  []string  `json:"order,omitempty"`
}

// TextSplice changes the baseline's text fragments: delete DeleteCount
// fragments at Start and insert Insert there.
type TextSplice struct {
	Start       int      `json:"start"`
	DeleteCount int      `json:"deleteCount"`
	Insert      []string `json:"insert"`
}

type cursorCache struct{ *boundedCache }

func newCursorCache(now func() time.Time) *cursorCache {
	return &cursorCache{newBoundedCache(cacheLimits{MaxCursors, MaxCursorBytes, MaxSnapshotSize, CursorRetention}, now)}
}

// publish keeps obs as the baseline its cursor names, for owner's lease.
func (r *Runtime) publish(owner lease.Owner, leaseID string, obs *Observation) {
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
func (r *Runtime) baseline(owner lease.Owner, leaseID, cursor string) *Observation {
	r.mu.Lock()
	v := r.cursors.get(cursor)
	r.mu.Unlock()
	if v == nil || v.leaseID != leaseID || v.owner != owner {
		return nil
	}
	var o Observation
	if json.Unmarshal(v.data, &o) != nil {
		return nil
	}
	return &o
}

// since answers an observation asked with a cursor: a delta against the
// baseline when it is known, of the same document and scope, and smaller;
// else the full observation, saying why a delta could not be given.
func since(base *Observation, obs *Observation) any {
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
func diff(base, obs *Observation) *ObservationDelta {
	d := &ObservationDelta{
		Format: "delta", Cursor: obs.Cursor, BaseCursor: base.Cursor, Tab: obs.Tab, URL: obs.URL,
		Title: obs.Title, DocumentEpoch: obs.DocumentEpoch, Revision: obs.Revision, Truncated: obs.Truncated,
		Scope: obs.Scope, Nodes: NodesDelta{Upsert: []NodeRef{}, Remove: []string{}},
	}
	was := make(map[string]NodeRef, len(base.Nodes))
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
		d.Text = &TextSplice{Start: head, DeleteCount: len(a) - head - tail, Insert: slices.Clone(b[head : len(b)-tail])}
	}
	return d
}

// Apply returns the nodes and text a delta describes, from its baseline's.
// Clients do this; the broker's tests use it to check every delta.
func (d *ObservationDelta) Apply(nodes []NodeRef, text []string) ([]NodeRef, []string) {
	gone := make(map[string]bool, len(d.Nodes.Remove))
	for _, id := range d.Nodes.Remove {
		gone[id] = true
	}
	up := make(map[string]NodeRef, len(d.Nodes.Upsert))
	for _, n := range d.Nodes.Upsert {
		up[n.ID] = n
	}
	var out []NodeRef
	have := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if gone[n.ID] {
			continue
		}
		if u, ok := up[n.ID]; ok {
			n = u
		}
		have[n.ID] = true
		out = append(out, n)
	}
	for _, n := range d.Nodes.Upsert {
		if !have[n.ID] {
			out = append(out, n)
		}
	}
	if d.Nodes.Order != nil {
		byID := make(map[string]NodeRef, len(out))
		for _, n := range out {
			byID[n.ID] = n
		}
		out = out[:0:0]
		for _, id := range d.Nodes.Order {
			out = append(out, byID[id])
		}
	}
	if d.Text != nil {
		text = slices.Concat(text[:d.Text.Start], d.Text.Insert, text[d.Text.Start+d.Text.DeleteCount:])
	}
	return out, text
}
