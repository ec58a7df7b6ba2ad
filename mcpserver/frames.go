package mcpserver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-browser/broker/browser"
)

// frameSelector is what browser_act needs to act in an inline frame.
func frameSelector(f *browser.InlineFrame) *browser.FrameSelector {
	return &browser.FrameSelector{FrameID: f.ID, DocumentEpoch: f.Observation.DocumentEpoch}
}

// writeFrames writes the child frames after the page's outline: each
// same-origin frame's elements, whose refs act directly in browser_act,
// and one line for every other frame.
func writeFrames(b *strings.Builder, frames []browser.InlineFrame) {
	for i := range frames {
		f := &frames[i]
		origin := f.Origin
		if origin == "" {
			origin = "(origin unknown)"
		}
		switch {
		case f.Observation != nil:
			o := f.Observation
			fmt.Fprintf(b, "frame %s %s (same origin; its refs act directly):\n", f.ID, origin)
			for i := range o.Nodes {
				b.WriteString("  ")
				writeNode(b, &o.Nodes[i])
			}
			if len(o.Nodes) == 0 {
				b.WriteString("  (no controls)\n")
			}
			names := nameSet(o.Nodes)
			for _, t := range o.Text {
				if t = collapse(t); t != "" && !names[t] {
					b.WriteString("  text: " + t + "\n")
				}
			}
			if o.Truncated {
				fmt.Fprintf(b, "  (truncated: read it whole with browser_observe frame={frameId:%q, documentEpoch:%q})\n", f.ID, o.DocumentEpoch)
			}
		case f.OriginRelation == "same-origin":
			why := f.Code
			switch {
			case why != "":
			case f.DocumentEpoch == "":
				why = "no document yet"
			default:
				why = fmt.Sprintf("more frames than an outline reads; read it with browser_observe frame={frameId:%q, documentEpoch:%q}", f.ID, f.DocumentEpoch)
			}
			fmt.Fprintf(b, "frame %s %s (same origin, not read: %s)\n", f.ID, origin, why)
		default:
			fmt.Fprintf(b, "frame %s %s (%s: another site's content, not readable)\n", f.ID, origin, f.OriginRelation)
		}
	}
}

// actingOn returns what an action on ref (in the frame sel names, when
// given) acts from, as the session last saw it: the inline frame whose
// outline listed ref, or that sel names, with its observation; else, for
// an action without sel, the page's last whole observation.
func (se *session) actingOn(leaseID, ref, epoch string, sel *browser.FrameSelector) (before *browser.Observation, frame *browser.InlineFrame) {
	se.mu.Lock()
	defer se.mu.Unlock()
	pi := se.pages[leaseID]
	if pi == nil {
		return nil, nil
	}
	for i := range pi.frames {
		f := pi.frames[i]
		if f.Observation == nil {
			continue
		}
		mine := sel == nil && pi.obs != nil && pi.obs.DocumentEpoch == epoch && slices.ContainsFunc(f.Observation.Nodes, func(n browser.NodeRef) bool { return n.ID == ref })
		named := sel != nil && f.ID == sel.FrameID && f.Observation.DocumentEpoch == sel.DocumentEpoch
		if mine || named {
			return f.Observation, &f
		}
	}
	if sel != nil {
		return nil, nil
	}
	return pi.obs, nil
}

// rememberFrames records the child frames read with the page's last
// observation.
func (se *session) rememberFrames(leaseID string, frames []browser.InlineFrame) {
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
	for i := range pi.frames {
		if pi.frames[i].ID == frameID {
			pi.frames[i].Observation, pi.frames[i].Code = o, ""
		}
	}
}
