package runtime

import (
	"context"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

// observeFrame reads a same-origin child frame's document, or its literal
// matches of a query (a bounded walk of the frame), under frameTarget's
// authority; the provider checks the origins again before and after its
// read. Its refs can be clicked with a frame action (ActionRequest.Frame).
func (r *Runtime) observeFrame(ctx context.Context, l *lease.Lease, p *page, prov Provider, sel *browser.FrameSelector, q *browser.Query) (*browser.Observation, error) {
	target, err := r.frameTarget(ctx, l, p, prov, sel)
	if err != nil {
		return nil, err
	}
	read, err := r.readAX(ctx, prov, l, q, target.document())
	if err != nil {
		return nil, err
	}
	if read.DocumentEpoch != sel.DocumentEpoch {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	obs := &browser.Observation{
		Format: "full", Cursor: randomCursor(), Tab: l.Tab, URL: read.URL, Title: read.Title,
		DocumentEpoch: read.DocumentEpoch, Revision: p.observedFrame(), Nodes: []browser.NodeRef{}, Text: []string{},
		Truncated: read.Truncated, Scope: browser.Scope{Kind: "frame", FrameID: sel.FrameID},
	}
	if q != nil {
		obs.Scope = browser.Scope{Kind: "query", Query: q, FrameID: sel.FrameID}
	}
	read.show(obs, p.inFrame(read.DocumentEpoch))
	return obs, nil
}

// frameTarget checks the authority over a child frame and returns the
// provider's frame. The frame must be listed now (else STALE_TARGET) and
// not be the main frame (INVALID_REQUEST); it and every frame above it must
// be of the main document's origin and in sight (else POLICY_DENIED); it
// must still show the document the client names (else STALE_TARGET).
func (r *Runtime) frameTarget(ctx context.Context, l *lease.Lease, p *page, prov Provider, sel *browser.FrameSelector) (sourceFrame, error) {
	var none sourceFrame
	if !prov.Capable(browser.CapFrameRead) || !prov.Capable(browser.CapFramesList) {
		return none, wire.Err(wire.CodeUnsupportedCapability)
	}
	src, err := callFramesList(ctx, prov, l)
	if err != nil {
		return none, err
	}
	if err := r.checkOrigin(l, src.URL); err != nil {
		return none, err
	}
	inv, err := p.inventory(l.Tab, src)
	if err != nil {
		return none, providerErr(browser.ProviderFramesList, err)
	}
	byID := make(map[string]int, len(inv.Frames))
	for i, f := range inv.Frames {
		byID[f.ID] = i
	}
	i, ok := byID[sel.FrameID]
	switch {
	case !ok:
		return none, wire.Err(wire.CodeStaleTarget)
	case inv.Frames[i].IsMain:
		return none, wire.Err(wire.CodeInvalidRequest)
	}
	for j := i; ; j = byID[inv.Frames[j].ParentID] {
		f := inv.Frames[j]
		if f.OriginRelation != originSame || f.ContextStatus != contextKnown {
			return none, wire.Err(wire.CodePolicyDenied)
		}
		if f.IsMain {
			break
		}
	}
	if inv.Frames[i].DocumentEpoch != sel.DocumentEpoch {
		return none, wire.Err(wire.CodeStaleTarget)
	}
	return src.Frames[i], nil
}
