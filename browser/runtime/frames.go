package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
)

// Frame inventory budgets and capability names.
const (
	MaxFrameHandles = 1024
	originSame      = "same-origin"
	originCross     = "cross-origin"
	originOpaque    = "opaque"
	contextKnown    = "known"
	contextUnknown  = "unavailable"
)

// Frames lists the leased tab's frames (metadata only).
func (r *Runtime) Frames(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	return r.onPage(ctx, c, params, browser.CapFramesList, func(ctx context.Context, l *lease.Lease, p *page, prov Provider) (any, error) {
		_, inv, err := r.listFrames(ctx, l, p, prov)
		if err != nil {
			return nil, err
		}
		return inv, nil
	})
}

// inventory validates a provider's frame list and projects it: opaque IDs,
// bare origins, relations to the main document's origin.
func (p *page) inventory(tab string, src *sourceFrames) (*browser.FrameInventory, error) {
	if len(src.Frames) == 0 || len(src.Frames) > browser.MaxFrames+1 {
		return nil, fmt.Errorf("%d frames", len(src.Frames))
	}
	main := src.Frames[0]
	mainOrigin, ok := httpOrigin(src.URL)
	if !ok || main.ParentID != "" || !main.Local || main.FrameID+":"+main.LoaderID != src.DocumentEpoch {
		return nil, errors.New("the first frame is not the main document")
	}
	inv := &browser.FrameInventory{Tab: tab, DocumentEpoch: src.DocumentEpoch, Truncated: src.Truncated, Frames: make([]browser.Frame, 0, len(src.Frames))}
	handles := make(map[string]string, len(src.Frames)) // frame ID -> public ID, of frames that may be parents
	seen := make(map[string]bool, len(src.Frames))
	for i, f := range src.Frames {
		if len(f.FrameID)+1+len(f.LoaderID) > maxEpoch || len(f.ParentID) > maxEpoch || len(f.Origin) > maxOrigin {
			return nil, fmt.Errorf("frame %d: its IDs or origin are too long", i)
		}
		out := browser.Frame{IsMain: i == 0, OriginRelation: originOpaque, ContextStatus: contextUnknown}
		if i > 0 {
			parent, ok := handles[f.ParentID]
			if !ok {
				return nil, fmt.Errorf("frame %d: parent not listed before it", i)
			}
			out.ParentID = parent
		}
		if f.FrameID != "" {
			if seen[f.FrameID] {
				return nil, fmt.Errorf("frame %d: listed twice", i)
			}
			seen[f.FrameID] = true
		}
		out.ID = p.frameHandle(f.FrameID)
		if o, ok := bareOrigin(f.Origin); ok && f.Local {
			out.Origin = o
			out.OriginRelation = originCross
			if o == mainOrigin {
				out.OriginRelation = originSame
			}
		}
		if f.Local && f.FrameID != "" && f.LoaderID != "" {
			out.ContextStatus = contextKnown
			out.DocumentEpoch = f.FrameID + ":" + f.LoaderID
			handles[f.FrameID] = out.ID
		}
		inv.Frames = append(inv.Frames, out)
	}
	// A main document with an opaque origin (a CSP sandbox) is listed as
	// opaque: the inventory says what is, the lease says what is allowed.
	return inv, nil
}

// bareOrigin accepts exactly scheme://host[:port] of HTTP(S).
func bareOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || u.ForceQuery {
		return "", false
	}
	o, ok := httpOrigin(s)
	return o, ok && o == s
}

// frameHandle returns the public ID of a provider frame ID, stable while the
// lease lasts (up to MaxFrameHandles of them); a frame without an ID gets a
// fresh one.
func (p *page) frameHandle(frameID string) string {
	if frameID == "" {
		return "frame-" + randomHex(8)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.frames[frameID]; ok {
		return h
	}
	if len(p.frames) >= MaxFrameHandles {
		clear(p.frames)
	}
	h := "frame-" + randomHex(8)
	p.frames[frameID] = h
	return h
}
