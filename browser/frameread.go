package browser

import (
	"context"
	"encoding/json"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

// CapFrameRead is the provider capability to read a child frame's document
// (ax.read with a frame).
const CapFrameRead = "ax.read-frame.v1"

// FrameSelector names a child frame and the document the client saw in it,
// from browser.frames.
type FrameSelector struct {
	FrameID       string `json:"frameId"`
	DocumentEpoch string `json:"documentEpoch"`
}

// observeFrame reads a same-origin child frame's document, or its literal
// matches of a query (a bounded walk of the frame). The frame must be
// listed now (else STALE_TARGET) and not be the main frame
// (INVALID_REQUEST); it and every frame above it must be of the main
// document's origin and in sight (else POLICY_DENIED); it must still show
// the document the client names (else STALE_TARGET). The provider checks
// the origins again before and after its read. Refs it hands out are for reading: frame
// actions are not implemented (UNSUPPORTED_CAPABILITY).
func (r *Runtime) observeFrame(ctx context.Context, l *lease.Lease, p *page, prov Provider, sel *FrameSelector, q *Query) (*Observation, error) {
	if !prov.Capable(CapFrameRead) || !prov.Capable(CapFramesList) {
		return nil, wire.Err(wire.CodeUnsupportedCapability)
	}
	raw, err := prov.Call(ctx, "frames.list", map[string]any{"lease": l})
	if err != nil {
		return nil, err
	}
	var src sourceFrames
	if err := json.Unmarshal(raw, &src); err != nil {
		return nil, errInternal()
	}
	if err := r.checkOrigin(l, src.URL); err != nil {
		return nil, err
	}
	inv, err := p.inventory(l.Tab, &src)
	if err != nil {
		return nil, errInternal()
	}
	byID := make(map[string]int, len(inv.Frames))
	for i, f := range inv.Frames {
		byID[f.ID] = i
	}
	i, ok := byID[sel.FrameID]
	switch {
	case !ok:
		return nil, wire.Err(wire.CodeStaleTarget)
	case inv.Frames[i].IsMain:
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	for j := i; ; j = byID[inv.Frames[j].ParentID] {
		f := inv.Frames[j]
		if f.OriginRelation != originSame || f.ContextStatus != contextKnown {
			return nil, wire.Err(wire.CodePolicyDenied)
		}
		if f.IsMain {
			break
		}
	}
	if inv.Frames[i].DocumentEpoch != sel.DocumentEpoch {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	target := src.Frames[i]
	method, request := "ax.read", map[string]any{"frame": map[string]string{"frameId": target.FrameID, "loaderId": target.LoaderID}}
	if q != nil {
		method, request["name"] = "ax.find", q.Name
		if q.Role != "" {
			request["role"] = q.Role
		}
	}
	raw, err = prov.Call(ctx, method, map[string]any{"lease": l, "request": request})
	if err != nil {
		return nil, err
	}
	var read axRead
	if err := json.Unmarshal(raw, &read); err != nil {
		return nil, errInternal()
	}
	if read.DocumentEpoch != sel.DocumentEpoch {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	obs := &Observation{
		Format: "full", Cursor: randomCursor(), Tab: l.Tab, URL: read.URL, Title: read.Title,
		DocumentEpoch: read.DocumentEpoch, Revision: p.observedFrame(), Nodes: []NodeRef{}, Text: []string{},
		Truncated: read.Truncated, Scope: Scope{Kind: "frame", FrameID: sel.FrameID},
	}
	if q != nil {
		obs.Scope = Scope{Kind: "query", Query: q, FrameID: sel.FrameID}
	}
	project(obs, p.inFrame(read.DocumentEpoch), read.Nodes, q != nil)
	return obs, nil
}
