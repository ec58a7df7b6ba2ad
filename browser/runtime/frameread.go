package runtime

import (
	"context"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
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
	return r.readFrame(ctx, l, p, prov, target, sel, q)
}

// readFrame reads the child frame target (sel names it to the client),
// whose authority the caller checked.
func (r *Runtime) readFrame(ctx context.Context, l *lease.Lease, p *page, prov Provider, target sourceFrame, sel *browser.FrameSelector, q *browser.Query) (*browser.Observation, error) {
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

// frameTarget checks the authority over a child frame on a list of the
// page's frames taken now, and returns the provider's frame.
func (r *Runtime) frameTarget(ctx context.Context, l *lease.Lease, p *page, prov Provider, sel *browser.FrameSelector) (sourceFrame, error) {
	if !prov.Capable(browser.CapFrameRead) || !prov.Capable(browser.CapFramesList) {
		return sourceFrame{}, wire.Err(wire.CodeUnsupportedCapability)
	}
	src, inv, err := r.listFrames(ctx, l, p, prov)
	if err != nil {
		return sourceFrame{}, err
	}
	return frameAuthority(src, inv, sel)
}

// listFrames lists the leased page's frames: the provider's list and its
// projection.
func (r *Runtime) listFrames(ctx context.Context, l *lease.Lease, p *page, prov Provider) (*sourceFrames, *browser.FrameInventory, error) {
	src, err := callFramesList(ctx, prov, l)
	if err != nil {
		return nil, nil, err
	}
	if err := r.checkOrigin(l, src.URL); err != nil {
		return nil, nil, err
	}
	inv, err := p.inventory(l.Tab, src)
	if err != nil {
		return nil, nil, providerErr(browser.ProviderFramesList, err)
	}
	return src, inv, nil
}

// frameAuthority checks, on a list of the page's frames (src, and inv its
// projection), the authority over the child frame sel names. The frame must
// be listed (else STALE_TARGET) and not be the main frame
// (INVALID_REQUEST); it and every frame above it must be of the main
// document's origin and in sight (else POLICY_DENIED); it must still show
// the document sel names (else STALE_TARGET).
func frameAuthority(src *sourceFrames, inv *browser.FrameInventory, sel *browser.FrameSelector) (sourceFrame, error) {
	var none sourceFrame
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

// inlineFrames lists the page's child frames for an observation of its
// document (CapObserveFrames) and reads the same-origin ones, the first
// MaxInlineFrames of them, all under the authority of that one list (the
// provider checks each frame's origins again before and after its read).
// Each read is published as a baseline of its own, for actions in its
// frame. Nil when the frames cannot be listed with page's document.
func (r *Runtime) inlineFrames(ctx context.Context, owner lease.Owner, l *lease.Lease, p *page, prov Provider, page *browser.Observation) []browser.InlineFrame {
	src, inv, err := r.listFrames(ctx, l, p, prov)
	if err != nil || inv.DocumentEpoch != page.DocumentEpoch {
		return nil
	}
	out := make([]browser.InlineFrame, 0, len(inv.Frames)-1)
	read := 0
	for _, f := range inv.Frames[1:] {
		fr := browser.InlineFrame{Frame: f}
		if f.OriginRelation == originSame && f.DocumentEpoch != "" && read < browser.MaxInlineFrames {
			read++
			sel := &browser.FrameSelector{FrameID: f.ID, DocumentEpoch: f.DocumentEpoch}
			target, err := frameAuthority(src, inv, sel)
			if err == nil {
				fr.Observation, err = r.readFrame(ctx, l, p, prov, target, sel, nil)
			}
			if err != nil {
				fr.Code = string(rpc.CodeOf(err))
			} else if boundFrame(&fr) {
				r.publish(owner, l.ID, fr.Observation)
			}
		}
		out = append(out, fr)
	}
	return out
}

// boundFrame keeps a frame's observation within MaxSnapshotSize, as the
// page's own is kept: one past it is dropped, its code QUEUE_FULL. It
// reports whether the observation was kept.
func boundFrame(fr *browser.InlineFrame) bool {
	if snapshotSize(fr.Observation) <= browser.MaxSnapshotSize {
		return true
	}
	fr.Observation, fr.Code = nil, string(wire.CodeQueueFull)
	return false
}
