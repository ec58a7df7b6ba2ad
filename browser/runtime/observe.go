package runtime

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

var controlRoles = func() map[string]bool {
	m := make(map[string]bool, len(browser.ControlRoles))
	for _, r := range browser.ControlRoles {
		m[r] = true
	}
	return m
}()

var regionRoles = map[string]bool{
	"region": true, "form": true, "group": true, "dialog": true, "alertdialog": true,
	"main": true, "navigation": true, "search": true, "complementary": true, "banner": true,
	"contentinfo": true, "table": true, "list": true, "tabpanel": true,
}

var checkableRoles = map[string]bool{
	"checkbox": true, "switch": true, "radio": true, "menuitemcheckbox": true, "menuitemradio": true,
}

// Observe reads the leased page: the whole document within the budgets, or
// the literal matches of a query. With the cursor of an earlier observation
// of the same document and scope it answers a delta when that is smaller
// (cursors.go).
func (r *Runtime) Observe(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	in, err := browser.ParseObserve(params)
	if err != nil {
		return nil, r.invalid(err)
	}
	owner := lease.Owner{Conn: c.ConnID(), Session: in.SessionID}
	l, p, prov, err := r.leased(owner, in.LeaseID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ProviderTimeout)
	defer cancel()
	if err := p.acquire(ctx.Done()); err != nil {
		return nil, err
	}
	defer p.release()
	var obs *browser.Observation
	switch {
	case in.RootRef != "":
		obs, err = r.observeSubtree(ctx, l, p, prov, in.Frame, in.RootRef, in.Query)
	case in.Frame != nil:
		obs, err = r.observeFrame(ctx, l, p, prov, in.Frame, in.Query)
	default:
		obs, err = r.observe(ctx, l, p, in.Query)
	}
	if err != nil {
		return nil, err
	}
	whole := in.RootRef == "" && in.Frame == nil && in.Query == nil
	hasFrames := obs.FrameOwners == nil || *obs.FrameOwners > 0
	if !c.Capable(browser.CapObserveFrameOwners) {
		obs.FrameOwners = nil // ours: the reference's observation has no such field
	}
	if snapshotSize(obs) > browser.MaxSnapshotSize {
		return nil, wire.Err(wire.CodeQueueFull)
	}
	var base *browser.Observation
	if in.Cursor != "" {
		base = r.baseline(owner, l.ID, in.Cursor)
	}
	r.publish(owner, l.ID, obs)
	// The frames come after the page is kept as a baseline: a baseline is
	// of one document, and each frame's observation is a baseline itself.
	if whole && in.Cursor == "" && hasFrames && c.Capable(browser.CapObserveFrames) &&
		prov.Capable(browser.CapFrameRead) && prov.Capable(browser.CapFramesList) {
		obs.Frames = r.inlineFrames(ctx, owner, l, p, prov, obs)
	}
	if in.Cursor == "" {
		return obs, nil
	}
	return since(base, obs), nil
}

// observe reads and projects the page. The caller holds the page's queue.
func (r *Runtime) observe(ctx context.Context, l *lease.Lease, p *page, q *browser.Query) (*browser.Observation, error) {
	prov, err := r.provider(l.InstanceID)
	if err != nil {
		return nil, err
	}
	read, err := r.readAX(ctx, prov, l, q, nil)
	if err != nil {
		return nil, err
	}
	if err := r.checkOrigin(l, read.URL); err != nil {
		return nil, err
	}
	obs := &browser.Observation{
		Format: "full", Cursor: randomCursor(), Tab: l.Tab, URL: read.URL, Title: read.Title,
		DocumentEpoch: read.DocumentEpoch, Revision: p.observed(read.DocumentEpoch, read.URL),
		Nodes: []browser.NodeRef{}, Text: []string{}, Truncated: read.Truncated, Scope: browser.Scope{Kind: "document"},
	}
	if q != nil {
		obs.Scope = browser.Scope{Kind: "query", Query: q}
	} else if read.FrameOwners != nil && *read.FrameOwners >= 0 {
		obs.FrameOwners = read.FrameOwners
	}
	read.show(obs, p)
	return obs, nil
}

// observeSubtree reads only the element rootRef names and what is inside
// it (with q: its literal matches there), in the main document or in the
// child frame sel names (under frameTarget's authority). The root is a ref
// of that document whose role and name still stand, checked before and
// after the read: one unknown, of another document, replaced or renamed is
// STALE_TARGET — never a wider read.
func (r *Runtime) observeSubtree(ctx context.Context, l *lease.Lease, p *page, prov Provider, sel *browser.FrameSelector, rootRef string, q *browser.Query) (*browser.Observation, error) {
	epoch, req := p.currentEpoch(), axRequest{}
	var minter refMinter = p
	if sel != nil {
		f, err := r.frameTarget(ctx, l, p, prov, sel)
		if err != nil {
			return nil, err
		}
		epoch, req.Frame, minter = sel.DocumentEpoch, f.document(), p.inFrame(sel.DocumentEpoch)
	}
	root := p.resolve(rootRef, epoch, sel != nil)
	if root == nil {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	if _, err := r.identity(ctx, prov, l, root); err != nil {
		return nil, err
	}
	req.BackendNodeID = root.BackendNodeID
	if q != nil {
		req.Name, req.Role = q.Name, q.Role
	}
	read, err := callAX(ctx, prov, l, req)
	if err != nil {
		return nil, err
	}
	if sel == nil {
		if err := r.checkOrigin(l, read.URL); err != nil {
			return nil, err
		}
	}
	if read.DocumentEpoch != epoch {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	if _, err := r.identity(ctx, prov, l, root); err != nil {
		return nil, err
	}
	obs := &browser.Observation{
		Format: "full", Cursor: randomCursor(), Tab: l.Tab, URL: read.URL, Title: read.Title, DocumentEpoch: read.DocumentEpoch,
		Nodes: []browser.NodeRef{}, Text: []string{}, Truncated: read.Truncated,
		Scope: browser.Scope{Kind: "subtree", RootRef: rootRef},
	}
	if q != nil {
		obs.Scope = browser.Scope{Kind: "query", Query: q, RootRef: rootRef}
	}
	if sel != nil {
		obs.Revision, obs.Scope.FrameID = p.observedFrame(), sel.FrameID
	} else {
		obs.Revision = p.observed(read.DocumentEpoch, read.URL)
	}
	read.show(obs, minter)
	return obs, nil
}

// readAX asks the provider for the page's AX nodes (ax.read), or for the
// literal matches of q (ax.find), and projects them; frame names a child
// frame's document.
func (r *Runtime) readAX(ctx context.Context, prov Provider, l *lease.Lease, q *browser.Query, frame *frameDocument) (*Projection, error) {
	req := axRequest{Frame: frame}
	if q != nil {
		req.Name, req.Role = q.Name, q.Role
	}
	return callAX(ctx, prov, l, req)
}

// checkOrigin ends an origin-scoped lease whose tab now shows another
// origin: its authority was for the origin the user approved.
func (r *Runtime) checkOrigin(l *lease.Lease, pageURL string) error {
	origin, ok := httpOrigin(pageURL)
	if l.Scope == lease.ScopeTab && ok {
		return nil
	}
	if !ok || origin != l.Origin {
		r.leases.End(l.ID, lease.Revoked)
		return wire.Err(wire.CodeLeaseRevoked)
	}
	return nil
}

// entry is what one AX node contributes to an observation: a text
// fragment, or an element (a control or a named region).
type entry struct {
	text    string   // a text fragment, when el is nil
	el      *Element // an element
	size    int      // the element's share of the node budget
	dropped bool     // an element that cannot be shown (its name is too long): the observation is truncated
}

func (e *entry) region() bool { return e.el != nil && e.el.Ref.Kind == "region" }

// Element is one element of a projection: the ref a client sees (its ID
// minted per lease when an observation shows it), and what the ref stands
// for — the DOM node and the accessible name the read gave it (a
// clickable element's ref shows a name of its own, Ref.Name).
type Element struct {
	Ref           browser.NodeRef
	BackendNodeID int64
	AXName        string
}

// target is the identity e's ref stands for: an action checks it again
// (role and accessible name) before it acts.
func (e *Element) target() target {
	return target{BackendNodeID: e.BackendNodeID, Role: e.Ref.Role, Name: e.AXName, editable: e.Ref.Editable, region: e.Ref.Kind == "region"}
}

// entryOf classifies one AX node; ok is false for nodes that are neither
// text nor an element. For a query every match is an element, whatever its
// role.
func entryOf(n axNode, query bool) (e entry, ok bool) {
	if n.Ignored || n.Props.Hidden {
		return e, false
	}
	name := strings.TrimSpace(n.Name)
	if n.Role == "StaticText" && !query {
		return entry{text: name}, name != ""
	}
	editable := n.Props.Editable != ""
	region := regionRoles[n.Role]
	if !query && !controlRoles[n.Role] && !(n.Props.Focusable && editable) && !(region && name != "") {
		return e, false
	}
	if textLen(n.Name) > browser.MaxNameLength || n.BackendNodeID <= 0 {
		return entry{dropped: true}, true
	}
	ref := browser.NodeRef{Role: n.Role, Name: n.Name, Disabled: n.Props.Disabled, Editable: editable}
	if checkableRoles[n.Role] {
		switch n.Props.Checked {
		case "true":
			ref.Checked = true
		case "mixed":
			ref.Checked = "mixed"
		default:
			ref.Checked = false
		}
	}
	if n.Value != nil && textLen(*n.Value) <= browser.MaxValueLength && !region {
		ref.Value = n.Value
	}
	if region && !controlRoles[n.Role] {
		ref.Kind = "region"
	}
	size := len(n.Name) + 64
	if ref.Value != nil {
		size += len(*ref.Value)
	}
	return entry{el: &Element{Ref: ref, BackendNodeID: n.BackendNodeID, AXName: n.Name}, size: size}, true
}

// maxClickableName bounds the name a clickable element gets from its title
// or text, in UTF-16 units: its words are what a person reads on it, not
// all of its text.
const maxClickableName = 100

// clickableNames names the elements of a read that the page made
// clickable itself (a click listener, a cursor:pointer area, a tab stop:
// Props.Clickable) but that have no role a ref is given for: a generic div
// or span, a table cell, an image, an unnamed group (a draggable card). Each is named by its accessible name,
// else its title (the description), else the text inside it, cut at
// maxClickableName. One with a control or a field inside gets none: those
// are what a person clicks. It returns the names by index in nodes.
func clickableNames(nodes []axNode) map[int]string {
	index := make(map[string]int, len(nodes))
	candidates := map[int]bool{}
	for i, n := range nodes {
		if n.AXID != "" {
			index[n.AXID] = i
		}
		region := regionRoles[n.Role] && strings.TrimSpace(n.Name) != "" // a named region has its ref already
		if n.Props.Clickable && !n.Ignored && !n.Props.Hidden && n.BackendNodeID > 0 && n.Role != "StaticText" &&
			!controlRoles[n.Role] && !region && !(n.Props.Focusable && n.Props.Editable != "") {
			candidates[i] = true
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	words := map[int][]string{}
	wordBytes := map[int]int{}
	blocked := map[int]bool{}
	for _, n := range nodes {
		control := controlRoles[n.Role] || (n.Props.Focusable && n.Props.Editable != "")
		text := n.Role == "StaticText" && !n.Ignored && !n.Props.Hidden
		if !control && !text {
			continue
		}
		for id, steps := n.ParentAXID, 0; id != "" && steps < 64; steps++ {
			a, ok := index[id]
			if !ok {
				break
			}
			switch {
			case !candidates[a]:
			case control:
				blocked[a] = true
			case wordBytes[a] <= 4*maxClickableName:
				words[a] = append(words[a], n.Name)
				wordBytes[a] += len(n.Name) + 1
			}
			id = nodes[a].ParentAXID
		}
	}
	out := make(map[int]string, len(candidates))
	for i := range candidates {
		if blocked[i] {
			continue
		}
		name := collapse(nodes[i].Name)
		if name == "" {
			name = collapse(nodes[i].Description)
		}
		if name == "" {
			name = collapse(strings.Join(words[i], " "))
		}
		out[i] = strings.TrimSpace(cut(name, maxClickableName))
	}
	return out
}

// clickableEntry is the entry of an element clickableNames named: its ref
// shows that name, its identity stays the accessibility tree's.
func clickableEntry(n axNode, name string) entry {
	ref := browser.NodeRef{Role: n.Role, Name: name, Disabled: n.Props.Disabled}
	return entry{el: &Element{Ref: ref, BackendNodeID: n.BackendNodeID, AXName: n.Name}, size: len(name) + 64}
}

// Projection is what an observation shows of a provider's answer to
// ax.read or ax.find: the document read, and its elements and text
// fragments, each in page order, within the budgets.
type Projection struct {
	DocumentEpoch string
	URL           string
	Title         string
	FrameOwners   *int // of the document a whole read read, when the provider could tell
	Elements      []Element
	Text          []string
	Truncated     bool // the answer says so, or a name too long or the budgets left something out
}

// Project decodes a provider's answer to ax.read or ax.find (PROVIDER.md;
// for ax.find, query) and keeps what an observation shows of it. Every
// observation of a document, a frame or a subtree goes through it
// (callAX). It is exported so that test/bench holds the in-page read
// (extension/lib/pagereader.js) to Chromium's accessibility tree by what
// this very code makes of both, not by a copy of it.
func Project(answer []byte, query bool) (*Projection, error) {
	var read axRead
	if err := json.Unmarshal(answer, &read); err != nil {
		return nil, err
	}
	p := project(read.Nodes, query)
	p.DocumentEpoch, p.URL, p.Title, p.FrameOwners = read.DocumentEpoch, read.URL, read.Title, read.FrameOwners
	p.Truncated = p.Truncated || read.Truncated
	return p, nil
}

// project keeps what an observation shows of nodes within the budgets.
func project(nodes []axNode, query bool) *Projection {
	out := &Projection{}
	controls, regions, nodeBytes, textBytes := 0, 0, 0, 0
	var clickable map[int]string
	if !query {
		clickable = clickableNames(nodes)
	}
	for i, n := range nodes {
		e, ok := entryOf(n, query)
		if name, c := clickable[i]; c {
			e, ok = clickableEntry(n, name), true
		}
		switch {
		case !ok:
			continue
		case e.dropped:
			out.Truncated = true
			continue
		case e.el == nil:
			if len(out.Text) >= browser.MaxTextFragment || textBytes+len(e.text) > browser.MaxTextBytes {
				out.Truncated = true
				continue
			}
			textBytes += len(e.text)
			out.Text = append(out.Text, e.text)
			continue
		}
		if (e.region() && regions >= browser.MaxRegions) || (!e.region() && controls >= browser.MaxControls) || nodeBytes+e.size > browser.MaxNodeBytes {
			out.Truncated = true
			continue
		}
		nodeBytes += e.size
		if e.region() {
			regions++
		} else {
			controls++
		}
		out.Elements = append(out.Elements, *e.el)
	}
	return out
}

// show puts the elements and text into obs, each element's ref minted by
// m.
func (p *Projection) show(obs *browser.Observation, m refMinter) {
	for i := range p.Elements {
		ref := p.Elements[i].Ref
		ref.ID = m.ref(p.Elements[i].target())
		obs.Nodes = append(obs.Nodes, ref)
	}
	obs.Text = append(obs.Text, p.Text...)
}

func randomCursor() string { return "c" + randomHex(8) }
