package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/browser"
)

// maxInlineFrames bounds the same-origin child frames browser_observe
// reads into its outline; the rest are listed, to read with frame.
const maxInlineFrames = 4

// inlineFrame is a same-origin child frame read into an outline.
type inlineFrame struct {
	frame browser.Frame
	obs   *browser.Observation // nil when it could not be read
	code  string               // why not
}

// selector is what browser_act needs to act in the frame.
func (f *inlineFrame) selector() *browser.FrameSelector {
	return &browser.FrameSelector{FrameID: f.frame.ID, DocumentEpoch: f.obs.DocumentEpoch}
}

// observeFrames reads the leased page's same-origin child frames (at most
// maxInlineFrames) when inv, listed beside the observation of the page,
// shows the same document: a button in an iframe is then found, and acted
// on, like one of the page. Frames of another origin are listed only.
func (s *Server) observeFrames(ctx context.Context, ss *mcp.ServerSession, se *session, leaseID string, page *browser.Observation, inv *browser.FrameInventory) []*inlineFrame {
	frames := childFrames(page, inv)
	for _, fr := range frames {
		if fr.code != "" || fr.frame.OriginRelation != "same-origin" || fr.frame.DocumentEpoch == "" {
			continue
		}
		var o browser.Observation
		err := s.call(ctx, ss, readTimeout, "browser.observe", map[string]any{"sessionId": se.id, "leaseId": leaseID,
			"frame": browser.FrameSelector{FrameID: fr.frame.ID, DocumentEpoch: fr.frame.DocumentEpoch}}, &o)
		if err != nil {
			fr.code = strings.SplitN(err.Error(), ":", 2)[0]
			continue
		}
		fr.obs = &o
	}
	return frames
}

// childFrames lists inv's child frames when it is of page's document; the
// same-origin ones past the first maxInlineFrames are marked not to read.
func childFrames(page *browser.Observation, inv *browser.FrameInventory) []*inlineFrame {
	if inv == nil || inv.DocumentEpoch != page.DocumentEpoch {
		return nil
	}
	var out []*inlineFrame
	readable := 0
	for _, f := range inv.Frames {
		if f.IsMain {
			continue
		}
		fr := &inlineFrame{frame: f}
		out = append(out, fr)
		if f.OriginRelation != "same-origin" || f.DocumentEpoch == "" {
			continue
		}
		if readable == maxInlineFrames {
			fr.code = "more frames than an outline reads"
			continue
		}
		readable++
	}
	return out
}

// writeFrames writes the child frames after the page's outline: each
// same-origin frame's elements, whose refs act directly in browser_act,
// and one line for every other frame.
func writeFrames(b *strings.Builder, frames []*inlineFrame) {
	for _, f := range frames {
		origin := f.frame.Origin
		if origin == "" {
			origin = "(origin unknown)"
		}
		switch {
		case f.obs != nil:
			fmt.Fprintf(b, "frame %s %s (same origin; its refs act directly):\n", f.frame.ID, origin)
			for i := range f.obs.Nodes {
				b.WriteString("  ")
				writeNode(b, &f.obs.Nodes[i])
			}
			if len(f.obs.Nodes) == 0 {
				b.WriteString("  (no controls)\n")
			}
			names := nameSet(f.obs.Nodes)
			for _, t := range f.obs.Text {
				if t = collapse(t); t != "" && !names[t] {
					b.WriteString("  text: " + t + "\n")
				}
			}
			if f.obs.Truncated {
				fmt.Fprintf(b, "  (truncated: read it whole with browser_observe frame={frameId:%q, documentEpoch:%q})\n", f.frame.ID, f.obs.DocumentEpoch)
			}
		case f.frame.OriginRelation == "same-origin":
			why := f.code
			if why == "" {
				why = "no document yet"
			}
			fmt.Fprintf(b, "frame %s %s (same origin, not read: %s)\n", f.frame.ID, origin, why)
		default:
			fmt.Fprintf(b, "frame %s %s (%s: another site's content, not readable)\n", f.frame.ID, origin, f.frame.OriginRelation)
		}
	}
}

// frameOf returns the inline frame whose outline listed ref, when the
// agent acts on the page it saw (epoch is the page's documentEpoch).
func (pi *pageInfo) frameOf(ref, epoch string) *inlineFrame {
	if pi.obs == nil || pi.obs.DocumentEpoch != epoch {
		return nil
	}
	for _, f := range pi.frames {
		if f.obs == nil {
			continue
		}
		for i := range f.obs.Nodes {
			if f.obs.Nodes[i].ID == ref {
				return f
			}
		}
	}
	return nil
}

// frame returns the inline frame sel names, when it is the document read.
func (pi *pageInfo) frame(sel *browser.FrameSelector) *inlineFrame {
	for _, f := range pi.frames {
		if f.obs != nil && f.frame.ID == sel.FrameID && f.obs.DocumentEpoch == sel.DocumentEpoch {
			return f
		}
	}
	return nil
}

// rememberFrames records the child frames read with the page's last
// observation.
func (se *session) rememberFrames(leaseID string, frames []*inlineFrame) {
	se.mu.Lock()
	defer se.mu.Unlock()
	if pi := se.pages[leaseID]; pi != nil {
		pi.frames = frames
	}
}

// rememberFrame records a child frame's observation after an action in it.
func (se *session) rememberFrame(leaseID, frameID string, o *browser.Observation) {
	if o == nil {
		return
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	pi := se.pages[leaseID]
	if pi == nil {
		return
	}
	for i, f := range pi.frames {
		if f.frame.ID == frameID {
			pi.frames[i] = &inlineFrame{frame: f.frame, obs: o}
		}
	}
}
