package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

// Page window budgets (browser.readPage).
const (
	// windowNodes is how many AX nodes the broker asks the provider for per
	// window: enough for MaxWindowEntries on any page seen so far (a button
	// is two nodes, its text one more), and the provider's own call and
	// byte budgets end a window early on a sparse page.
	windowNodes = 300
)

// traversal is where a reading stopped: what a continuation stands for. It
// holds node identities only, never page text.
type traversal struct {
	frame   string // the public frame ID, for a reading of a child frame
	epoch   string
	rootRef string
	backend int64    // the root element's backend node, 0 for the document
	after   []string // AX node IDs from the root down to the last node read
	index   int      // of the next window
	expires time.Time
}

// ReadPage reads the leased page window by window, depth-first, past the
// budgets of one observation: each window holds at most 100 entries
// (elements and text) in 16 KiB, and its continuation reads the next. A
// continuation is refused STALE_TARGET when it is unknown, used, expired,
// of another lease or document, or when the page changed along the path to
// where the reading stopped: the client starts over.
func (r *Runtime) ReadPage(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	var in browser.ReadPageParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	var opts browser.ReadPageOptions
	if in.Options != nil {
		opts = *in.Options
	}
	if !bounded(in.SessionID, 1, 256) || !bounded(in.LeaseID, 1, 256) || textLen(opts.RootRef) > 128 || textLen(opts.Continuation) > 128 ||
		(opts.Frame != nil && (!bounded(opts.Frame.FrameID, 1, 128) || !bounded(opts.Frame.DocumentEpoch, 1, 512))) {
		return nil, invalid()
	}
	owner := lease.Owner{Conn: c.ConnID(), Session: in.SessionID}
	return r.withPage(ctx, owner, in.LeaseID, browser.CapAXPage, func(ctx context.Context, l *lease.Lease, p *page, prov Provider) (any, error) {
		tr, err := p.startReading(opts, r.now())
		if err != nil {
			return nil, err
		}
		request := pageRequest{MaxNodes: windowNodes, BackendNodeID: tr.backend, After: tr.after}
		var minter refMinter = p
		if opts.Frame != nil {
			if !prov.Capable(browser.CapFrameRead) {
				return nil, wire.Err(wire.CodeUnsupportedCapability)
			}
			f, err := r.frameTarget(ctx, l, p, prov, opts.Frame)
			if err != nil {
				return nil, err
			}
			request.Frame = f.document()
			minter = p.inFrame(opts.Frame.DocumentEpoch)
		}
		read, err := callAXPage(ctx, prov, l, request)
		if err != nil {
			return nil, err
		}
		if err := r.checkOrigin(l, read.URL); err != nil {
			return nil, err
		}
		if (tr.epoch != "" && read.DocumentEpoch != tr.epoch) || !rootStands(tr, p, read.Nodes) {
			return nil, wire.Err(wire.CodeStaleTarget)
		}
		w := &browser.PageWindow{
			Tab: l.Tab, URL: read.URL, Title: read.Title, DocumentEpoch: read.DocumentEpoch, Nodes: []browser.NodeRef{}, Text: []string{},
			Scope: browser.Scope{Kind: "document"}, Page: browser.PageInfo{Index: tr.index, Incomplete: read.Truncated},
		}
		if tr.frame != "" {
			w.Revision, w.Scope = p.observedFrame(), browser.Scope{Kind: "frame", FrameID: tr.frame}
		} else {
			w.Revision = p.observed(read.DocumentEpoch, read.URL)
		}
		if tr.rootRef != "" {
			w.Scope = browser.Scope{Kind: "subtree", RootRef: tr.rootRef, FrameID: tr.frame}
		}
		next, incomplete := projectWindow(w, minter, tr.after, read)
		w.Page.Incomplete = w.Page.Incomplete || incomplete
		if next != nil {
			token, err := p.keepReading(&traversal{
				frame: tr.frame, epoch: read.DocumentEpoch, rootRef: tr.rootRef, backend: tr.backend, after: next,
				index: tr.index + 1, expires: r.now().Add(browser.ContinuationTTL),
			}, r.now())
			if err != nil {
				return nil, err
			}
			w.Page.Continuation = token
		}
		w.Truncated = w.Page.Continuation != "" || w.Page.Incomplete
		return w, nil
	})
}

// startReading returns where a window starts: a new reading, or the one a
// continuation names (which is used up).
func (p *page) startReading(opts browser.ReadPageOptions, now time.Time) (*traversal, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// The document read: the main one, or the child frame's.
	frame, epoch := "", p.epoch
	if f := opts.Frame; f != nil {
		frame, epoch = f.FrameID, f.DocumentEpoch
	}
	if opts.Continuation != "" {
		tr, ok := p.traversals[opts.Continuation]
		delete(p.traversals, opts.Continuation)
		if !ok || now.After(tr.expires) || tr.rootRef != opts.RootRef || tr.frame != frame || tr.epoch != epoch {
			return nil, wire.Err(wire.CodeStaleTarget)
		}
		return tr, nil
	}
	tr := &traversal{frame: frame, rootRef: opts.RootRef}
	if frame != "" {
		tr.epoch = epoch // a frame's window must come from the document the client names
	}
	if opts.RootRef != "" {
		t, ok := p.refs[opts.RootRef]
		if !ok || t.epoch != epoch || (frame != "") != (t.frameEpoch != "") {
			return nil, wire.Err(wire.CodeStaleTarget)
		}
		tr.backend = t.BackendNodeID
	}
	return tr, nil
}

// keepReading stores a traversal and returns its continuation. Expired
// traversals go first; past MaxTraversals live ones it is QUEUE_FULL, and
// none is evicted.
func (p *page) keepReading(tr *traversal, now time.Time) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, t := range p.traversals {
		if now.After(t.expires) {
			delete(p.traversals, k)
		}
	}
	if len(p.traversals) >= browser.MaxTraversals {
		return "", wire.Err(wire.CodeQueueFull)
	}
	token := "p" + randomHex(16)
	p.traversals[token] = tr
	return token, nil
}

// rootStands checks a subtree reading's first window: its first node is the
// element the root ref was minted for, with the same role and name.
func rootStands(tr *traversal, p *page, nodes []windowNode) bool {
	if tr.rootRef == "" || tr.after != nil {
		return true
	}
	p.mu.Lock()
	t := p.refs[tr.rootRef]
	p.mu.Unlock()
	return t != nil && len(nodes) > 0 && !nodes[0].Ignored && nodes[0].BackendNodeID == t.BackendNodeID &&
		nodes[0].Role == t.Role && nodes[0].Name == t.Name
}

// projectWindow adds the window's entries to w within the window budgets.
// It returns the chain to resume after (nil when the reading is done) and
// whether entries were dropped. A window cut by the budgets resumes right
// before its first entry that did not fit, so nothing is skipped or read
// twice.
func projectWindow(w *browser.PageWindow, p refMinter, after []string, read *windowRead) (next []string, incomplete bool) {
	entries, regions, bytes := 0, 0, 0
	nodes := make([]axNode, len(read.Nodes))
	for i, n := range read.Nodes {
		nodes[i] = n.axNode
	}
	clickable := clickableNames(nodes)
	for i, n := range read.Nodes {
		e, ok := entryOf(n.axNode, false)
		if name, c := clickable[i]; c {
			e, ok = clickableEntry(n.axNode, name), true
		}
		if !ok {
			continue
		}
		if e.dropped {
			incomplete = true
			continue
		}
		size := len(e.text) + 8
		if e.el != nil {
			size = e.size
		}
		if entries >= browser.MaxWindowEntries || bytes+size > browser.MaxWindowBytes || (e.region() && regions >= browser.MaxWindowRegions) {
			if i == 0 {
				return chainTo(after, read.Nodes, read.Nodes[0].AXID), true // cannot fit any window: skip it
			}
			return chainTo(after, read.Nodes, read.Nodes[i-1].AXID), incomplete
		}
		entries++
		bytes += size
		if e.el == nil {
			w.Text = append(w.Text, e.text)
			continue
		}
		if e.region() {
			regions++
		}
		e.el.Ref.ID = p.ref(e.el.target())
		w.Nodes = append(w.Nodes, e.el.Ref)
	}
	if len(read.Resume) > 0 {
		return read.Resume, incomplete
	}
	return nil, incomplete
}

// chainTo returns the AX IDs from the reading's root down to node id, from
// the parents the window names and the chain it resumed after.
func chainTo(after []string, nodes []windowNode, id string) []string {
	parent := make(map[string]string, len(nodes)+len(after))
	for i := 1; i < len(after); i++ {
		parent[after[i]] = after[i-1]
	}
	for _, n := range nodes {
		if n.ParentAXID != "" {
			parent[n.AXID] = n.ParentAXID
		}
	}
	chain := []string{id}
	for cur := id; len(chain) <= 64; {
		up, ok := parent[cur]
		if !ok {
			break
		}
		chain = append(chain, up)
		cur = up
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}
