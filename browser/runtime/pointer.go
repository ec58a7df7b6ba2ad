package runtime

// Where pointer input lands: a point of the target that a person's click
// there would reach, and what covers it when there is none. And the
// pointer actions past the reference's click: dblclick, hover, clickAt and
// drag.

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// acceptedHits are what the point of a pointer input may hit for the input
// to reach the target as a person's would: the target itself (its
// pseudo-elements too: ::before, ::after, ::marker draw part of it), an
// element inside it (across shadow roots and slots), or a label whose
// control it is (a click there activates it: a styled box over an
// invisible checkbox). Anything else (an overlay, even a transparent one, a
// banner, another control) would get the input: NOT_ACTIONABLE. The
// extension checks the same list again right before the input.
var acceptedHits = []string{"target", "inside", "label"}

// hitFacts is a provider's answer to dom.hit (PROVIDER.md): how the element
// at a point relates to the target, and for an outside one, the element
// that covers it (its tag, and its backend node ID when it is in the
// target's frame or the main frame; never more of another frame).
type hitFacts struct {
	Relation string      `json:"relation"`
	Pseudo   bool        `json:"pseudo"`
	Cover    *coverFacts `json:"cover"`
}

type coverFacts struct {
	BackendNodeID int64  `json:"backendNodeId"`
	Tag           string `json:"tag"`
	FrameID       string `json:"frameId"`
}

// at says where on a target's box a pointer input lands.
type at func(q quad) (x, y float64, ok bool)

// atCentre lands at the centre of the box.
func atCentre(q quad) (float64, float64, bool) {
	x, y := centre(q)
	return x, y, true
}

// point waits until the target is ready and has a stable point to hit
// that an input there would reach: the centre of its box.
func (a *action) point() (float64, float64, error) {
	return a.pointOn(a.target, landing{at: atCentre, scroll: true})
}

// landing says where a pointer input lands on a target: at a point of its
// box, scrolled into view first with scroll; inView checks the point is in
// the viewport (the centre of a box scrolled into view is).
type landing struct {
	at     at
	scroll bool
	inView bool
	nudge  int // with scroll, after a cover: 1 scrolls the box up, -1 down (nudges)
}

// nudges are how a covered target is scrolled on the tries after the first:
// with room below it (it goes up past a bar at the bottom), then with room
// above it (it goes down past a header). After them it is only scrolled
// into view, as on the first try.
var nudges = []int{0, 1, -1}

// pointOn waits, under the deadline, until t is enabled and visible, its
// box is stable, and the point where it lands is one an input would reach
// (dom.hit, when the provider has it). Past the deadline it is
// NOT_ACTIONABLE, and when the last reason was an element covering the
// point, the result names it (CoveredBy). A point off the box or the
// viewport is NOT_ACTIONABLE at once: waiting does not move it.
func (a *action) pointOn(t *target, where landing) (float64, float64, error) {
	var covered *browser.Cover // what covered the point at the last complete check
	defer func() { a.res.CoveredBy = covered }()
	for try := 0; ; try++ {
		if covered != nil && where.scroll && try < len(nudges) {
			// A bar or header over a target that is in view: a person scrolls it
			// clear. The next tries scroll it each another way (nudges), once.
			where.nudge = nudges[try]
		} else {
			where.nudge = 0
		}
		wake := a.p.changes()
		if _, err := a.readyOf(t); err != nil {
			if a.ctx.Err() == nil {
				covered = nil // not ready itself: nothing is in the way
			}
			return 0, 0, err
		}
		a.res.CoveredBy = nil
		x, y, err := a.land(t, where)
		// A check the deadline cut may have named the cover only by its tag
		// (its role and name unread): the last complete check's answer stays.
		if a.ctx.Err() == nil || covered == nil {
			covered = a.res.CoveredBy
		}
		if err == nil {
			return x, y, nil
		}
		if rpc.CodeOf(err) != wire.CodeNotActionable || err == errOffTarget {
			return 0, 0, a.notReady(err)
		}
		if !a.wait(wake, pollInterval) {
			return 0, 0, wire.Err(wire.CodeNotActionable)
		}
	}
}

// errOffTarget: the requested point is not on the element's box, or not in
// the viewport.
var errOffTarget = wire.Err(wire.CodeNotActionable)

// land reads t's box once and checks the point where lands on it: during
// the box's stability wait (box's probe), its answer standing for the box.
func (a *action) land(t *target, where landing) (float64, float64, error) {
	if where.scroll && where.nudge != 0 {
		if err := a.nudge(t, where.nudge); err != nil {
			return 0, 0, err
		}
	}
	var cover *browser.Cover // what covers the point of the last box probed
	probe := func(q quad) error {
		cover = nil
		x, y, ok := where.at(q)
		if !ok {
			return errOffTarget
		}
		if where.inView {
			if in, err := a.inViewport(x, y); err != nil || !in {
				if err == nil {
					err = errOffTarget
				}
				return err
			}
		}
		var err error
		cover, err = a.hits(t, x, y)
		return err
	}
	q, probed, err := a.r.box(a.ctx, a.prov, a.l, t, where.scroll && where.nudge == 0, probe)
	if err != nil {
		return 0, 0, err
	}
	if probed != nil {
		a.res.CoveredBy = cover
		return 0, 0, probed
	}
	x, y, _ := where.at(q)
	return x, y, nil
}

// nudge scrolls t into view with half the viewport's height of room below
// it (dir 1) or above it (dir -1): DOM.scrollIntoViewIfNeeded centres that
// taller rectangle, so the box ends a quarter of the way from the top or
// the bottom.
func (a *action) nudge(t *target, dir int) error {
	q, _, err := a.r.box(a.ctx, a.prov, a.l, t, false, nil)
	if err != nil {
		return err
	}
	_, height, err := a.viewport()
	if err != nil {
		return err
	}
	w, h := math.Hypot(q[2]-q[0], q[3]-q[1]), math.Hypot(q[6]-q[0], q[7]-q[1])
	room := math.Round(height / 2)
	rect := map[string]any{"x": 0, "y": 0, "width": math.Round(w), "height": math.Round(h) + room}
	if dir < 0 {
		rect["y"] = -room
	}
	if _, err = callCDP(a.ctx, a.prov, a.l, "DOM.scrollIntoViewIfNeeded", map[string]any{"backendNodeId": t.BackendNodeID, "rect": rect}); err != nil {
		return staleIfGone(err)
	}
	return nil
}

// viewport returns the layout viewport's size in CSS pixels.
func (a *action) viewport() (float64, float64, error) {
	raw, err := callCDP(a.ctx, a.prov, a.l, "Page.getLayoutMetrics", map[string]any{})
	if err != nil {
		return 0, 0, err
	}
	var m struct {
		View struct {
			ClientWidth  float64 `json:"clientWidth"`
			ClientHeight float64 `json:"clientHeight"`
		} `json:"cssLayoutViewport"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, 0, providerErr("cdp Page.getLayoutMetrics", err)
	}
	return m.View.ClientWidth, m.View.ClientHeight, nil
}

// inViewport reports whether (x, y) is in the layout viewport.
func (a *action) inViewport(x, y float64) (bool, error) {
	w, h, err := a.viewport()
	return x >= 0 && y >= 0 && x < w && y < h, err
}

// hits checks with dom.hit that an input at (x, y) would reach t. When it
// would not, it answers NOT_ACTIONABLE and what covers the point, for the
// result to name. A provider without dom.hit.v1 is not asked: its own
// check at dispatch decides.
func (a *action) hits(t *target, x, y float64) (*browser.Cover, error) {
	if !a.prov.Capable(browser.CapDOMHit) {
		return nil, nil
	}
	req := hitRequest{DocumentEpoch: a.req.DocumentEpoch, BackendNodeID: t.BackendNodeID, X: x, Y: y}
	if a.frame != nil {
		req.Frame = a.frame.document()
	}
	h, err := callDOMHit(a.ctx, a.prov, a.l, req)
	if err != nil {
		return nil, err
	}
	if slices.Contains(acceptedHits, h.Relation) {
		return nil, nil
	}
	return a.cover(h.Cover), wire.Err(wire.CodeNotActionable)
}

// cover describes what covers a target, for the agent to deal with it: an
// element of the document acted in (or of the main document, over a child
// frame acted in) by its tag and its accessibility role and name, with a
// ref when an observation would give it one; the content of any other
// frame only as "iframe", never read.
func (a *action) cover(c *coverFacts) *browser.Cover {
	if c == nil {
		return &browser.Cover{Tag: "element"}
	}
	mainFrame, _, _ := strings.Cut(a.p.currentEpoch(), ":")
	var minter refMinter
	switch {
	case a.frame != nil && c.FrameID == a.frame.FrameID:
		minter = a.p.inFrame(a.req.DocumentEpoch)
	case c.FrameID == mainFrame && c.FrameID != "":
		minter = a.p
	default:
		return &browser.Cover{Tag: "iframe"}
	}
	out := &browser.Cover{Tag: tagName(c.Tag)}
	if c.BackendNodeID <= 0 {
		return out
	}
	n, err := a.r.axNodeOf(a.ctx, a.prov, a.l, c.BackendNodeID)
	if err != nil || n == nil || n.Ignored {
		return out
	}
	if n.Role != "generic" && n.Role != "none" {
		out.Role = n.Role
	}
	out.Name = cut(strings.TrimSpace(n.Name), browser.MaxCoverName)
	if e, ok := entryOf(*n, false); ok && e.el != nil {
		out.Ref = minter.ref(e.el.target())
	}
	return out
}

// tagName is an element name as a cover reports it: lower case letters,
// digits and hyphens, at most 64 of them; anything else is "element".
func tagName(s string) string {
	s = strings.ToLower(s)
	if s == "" || len(s) > 64 || strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}) >= 0 {
		return "element"
	}
	return s
}

// cut shortens s to at most n UTF-16 units, on a character boundary.
func cut(s string, n int) string {
	units := 0
	for i, r := range s {
		if r > 0xFFFF {
			units += 2
		} else {
			units++
		}
		if units > n {
			return s[:i]
		}
	}
	return s
}

// axNodeOf reads the accessibility node of a backend node, or nil when it
// has none.
func (r *Runtime) axNodeOf(ctx context.Context, prov Provider, l *lease.Lease, backendNodeID int64) (*axNode, error) {
	raw, err := callCDP(ctx, prov, l, "Accessibility.getPartialAXTree", map[string]any{"backendNodeId": backendNodeID, "fetchRelatives": false})
	if err != nil {
		return nil, staleIfGone(err)
	}
	var tree struct {
		Nodes []struct {
			BackendNodeID int64 `json:"backendDOMNodeId"`
			Ignored       bool  `json:"ignored"`
			Role          struct {
				Value string `json:"value"`
			} `json:"role"`
			Name struct {
				Value string `json:"value"`
			} `json:"name"`
			Properties []struct {
				Name  string `json:"name"`
				Value struct {
					Value any `json:"value"`
				} `json:"value"`
			} `json:"properties"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, providerErr("cdp Accessibility.getPartialAXTree", err)
	}
	for _, n := range tree.Nodes {
		if n.BackendNodeID != backendNodeID {
			continue
		}
		out := &axNode{BackendNodeID: n.BackendNodeID, Role: n.Role.Value, Name: n.Name.Value, Ignored: n.Ignored}
		for _, p := range n.Properties {
			switch v := p.Value.Value.(type) {
			case bool:
				switch p.Name {
				case "disabled":
					out.Props.Disabled = v
				case "focusable":
					out.Props.Focusable = v
				case "hidden":
					out.Props.Hidden = v
				case "checked":
					out.Props.Checked = map[bool]string{true: "true", false: "false"}[v]
				}
			case string:
				switch p.Name {
				case "checked":
					out.Props.Checked = v
				case "editable":
					out.Props.Editable = v
				}
			}
		}
		return out, nil
	}
	return nil, nil
}

// pointerCommand is the command of a pointer input at (x, y), a point of
// the target that dom.hit accepted: the extension checks the same accepted
// hits right before the input.
func (a *action) pointerCommand(x, y float64) inputCommand {
	cmd := a.command()
	cmd.X, cmd.Y = &x, &y
	if a.prov.Capable(browser.CapDOMHit) {
		cmd.Accept = acceptedHits
	}
	return cmd
}

// pointer sends one pointer input at (x, y) and verifies it as a click is.
func (a *action) pointer(method string, x, y float64, fill func(cmd *inputCommand)) *browser.ActionResult {
	cmd := a.pointerCommand(x, y)
	if fill != nil {
		fill(&cmd)
	}
	if res := a.send(method, cmd); res != nil {
		return res
	}
	return a.verify(nil)
}

// dblclick double-clicks the centre of the target: two press/release
// pairs, the second with a click count of 2, as a person's double-click.
func (a *action) dblclick() *browser.ActionResult {
	x, y, err := a.point()
	if err != nil {
		return a.refuse(err)
	}
	return a.pointer(browser.ProviderInputClick, x, y, func(cmd *inputCommand) { cmd.Count = 2 })
}

// hover moves the pointer onto the centre of the target. No button is
// pressed; menus and tooltips that open on hover open.
func (a *action) hover() *browser.ActionResult {
	x, y, err := a.point()
	if err != nil {
		return a.refuse(err)
	}
	return a.pointer(browser.ProviderInputHover, x, y, nil)
}

// clickAt clicks a point of the target's box given in the element's own
// CSS pixels from its top-left corner (a canvas, an SVG, a map): the
// point must be on the box and in the viewport, and hit the target.
func (a *action) clickAt() *browser.ActionResult {
	ox, oy := float64(*a.a.X), float64(*a.a.Y)
	at := func(q quad) (float64, float64, bool) { return offset(q, ox, oy) }
	x, y, err := a.pointOn(a.target, landing{at: at, scroll: true, inView: true})
	if err != nil {
		return a.refuse(err)
	}
	return a.pointer(browser.ProviderInputClick, x, y, nil)
}

// drag presses on the centre of the target, moves to the centre of toRef
// (an element of the same document, which must also be in view, without
// scrolling, and hit there) or by the offset (the end in the viewport), and
// releases there.
func (a *action) drag() *browser.ActionResult {
	var to *target
	if a.a.ToRef != "" {
		if to = a.p.resolve(a.a.ToRef, a.req.DocumentEpoch, a.frame != nil); to == nil || to.region {
			if to == nil {
				return a.refuse(wire.Err(wire.CodeStaleTarget))
			}
			return a.refuse(wire.Err(wire.CodeNotActionable))
		}
		if _, err := a.identity(to); err != nil {
			return a.refuse(err)
		}
	}
	x, y, err := a.point()
	if err != nil {
		return a.refuse(err)
	}
	var toX, toY float64
	if to != nil {
		// The source stays where point() scrolled it: the drop target must be
		// in view with it.
		if toX, toY, err = a.pointOn(to, landing{at: atCentre, inView: true}); err != nil {
			return a.refuse(err)
		}
	} else {
		toX, toY = x+float64(*a.a.DeltaX), y+float64(*a.a.DeltaY)
		in, err := a.inViewport(toX, toY)
		if err == nil && !in {
			err = wire.Err(wire.CodeNotActionable)
		}
		if err != nil {
			return a.refuse(err)
		}
	}
	return a.pointer(browser.ProviderInputDrag, x, y, func(cmd *inputCommand) {
		cmd.ToX, cmd.ToY = &toX, &toY
		if to != nil {
			cmd.To = &inputTarget{BackendNodeID: to.BackendNodeID, Role: to.Role, Name: to.Name}
		}
	})
}
