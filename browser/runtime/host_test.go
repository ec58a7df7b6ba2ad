package runtime

// The in-process harness: the broker, a browser provider and a client as
// the runtime sees them. The provider and the client are fakes, to reach
// states a real browser can't be put in (a grant that never comes, a node
// that moves, an answer that breaks the contract) and to see exactly what
// the runtime sends; the same flows run against the real broker in test/
// and against real Chromium in the e2e suite.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// testHost is an in-process stand-in for the broker: it holds the
// providers and clients a test connects.
type testHost struct {
	mu        sync.Mutex
	providers []service.Provider
	clients   map[uint64]service.Client
}

func newTestHost() *testHost { return &testHost{clients: make(map[uint64]service.Client)} }

func (h *testHost) add(p service.Provider) {
	h.mu.Lock()
	h.providers = append(h.providers, p)
	h.mu.Unlock()
}

// remove disconnects a provider (the runtime's Gone is the broker's to call).
func (h *testHost) remove(p service.Provider) {
	h.mu.Lock()
	h.providers = slices.DeleteFunc(h.providers, func(q service.Provider) bool { return q == p })
	h.mu.Unlock()
}

func (h *testHost) connect(c service.Client) {
	h.mu.Lock()
	h.clients[c.ConnID()] = c
	h.mu.Unlock()
}

func (h *testHost) Provider(id string) service.Provider {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.providers {
		if p.InstanceID() == id {
			return p
		}
	}
	return nil
}

func (h *testHost) Providers(kind string) []service.Provider {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []service.Provider
	for _, p := range h.providers {
		if p.Kind() == kind {
			out = append(out, p)
		}
	}
	return out
}

func (h *testHost) Client(conn uint64) service.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clients[conn]
}

func (h *testHost) Journal() *journal.Journal { return nil }
func (h *testHost) Logger() *slog.Logger      { return slog.New(slog.DiscardHandler) }

// fakeProvider is a scripted browser provider (a fake: to reach states a
// real browser can't be put in). Its Call decodes the params into the
// types provider.go sends, records the call and answers from the method's
// script; by default the script serves page, as the extension would.
type fakeProvider struct {
	id, kind string
	caps     map[string]bool
	owner    bool // OwnerSurface
	page     *fakePage

	mu         sync.Mutex
	calls      []providerCall
	script     map[string]*reply
	called     chan struct{} // closed and replaced at every call
	violations []string      // params that break the contract
}

// providerCall is one recorded call: the method and its decoded params
// (*grantParams, *leaseParams, *requestParams[axRequest], …).
type providerCall struct {
	Method string
	Params any
}

// reply scripts one provider method.
type reply struct {
	answer func(params any) (any, error) // a value to encode, a json.RawMessage sent verbatim, or an error
	delay  time.Duration
	hold   chan struct{} // calls wait until it is closed
}

// allCaps is what the extension advertises.
func allCaps() []string {
	return append(browser.Required(), browser.CapAXPage, browser.CapFramesList, browser.CapCapture,
		browser.CapFrameRead, browser.CapFrameInput, browser.CapDOMRead, browser.CapInputScroll,
		browser.CapInputWheel, browser.CapInputSelect, browser.CapNavigate)
}

// newFakeProvider returns a browser provider the owner's browser started,
// advertising caps, showing a standard page.
func newFakeProvider(t testing.TB, id string, caps ...string) *fakeProvider {
	p := &fakeProvider{id: id, kind: browser.Kind, caps: map[string]bool{}, owner: true, page: standardPage(),
		script: map[string]*reply{}, called: make(chan struct{})}
	for _, c := range caps {
		p.caps[c] = true
	}
	p.serveDefaults()
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, v := range p.violations {
			t.Errorf("provider %s: %s", id, v)
		}
	})
	return p
}

func (p *fakeProvider) InstanceID() string { return p.id }
func (p *fakeProvider) Kind() string       { return p.kind }
func (p *fakeProvider) Instance() wire.Instance {
	return wire.Instance{ID: p.id, Family: browser.Family, Brand: "Chromium", Version: "140", ProfileLabel: "Default profile"}
}
func (p *fakeProvider) Capable(c string) bool { return p.caps[c] }
func (p *fakeProvider) OwnerSurface() bool    { return p.owner }

// Notify is unused: the browser kind sends its providers no events.
func (p *fakeProvider) Notify(string, any) error { return nil }

// sentTypes are the params each provider method is sent with (provider.go).
var sentTypes = map[string]func() any{
	browser.ProviderTabsList:    func() any { return &struct{}{} },
	browser.ProviderLeaseGrant:  func() any { return &grantParams{} },
	browser.ProviderLeaseRevoke: func() any { return &leaseParams{} },
	browser.ProviderAXRead:      func() any { return &requestParams[axRequest]{} },
	browser.ProviderAXFind:      func() any { return &requestParams[axRequest]{} },
	browser.ProviderAXPage:      func() any { return &requestParams[pageRequest]{} },
	browser.ProviderFramesList:  func() any { return &leaseParams{} },
	browser.ProviderCapture:     func() any { return &leaseParams{} },
	browser.ProviderInputClick:  func() any { return &requestParams[inputCommand]{} },
	browser.ProviderInputText:   func() any { return &requestParams[inputCommand]{} },
	browser.ProviderInputKey:    func() any { return &requestParams[inputCommand]{} },
	browser.ProviderInputWheel:  func() any { return &requestParams[inputCommand]{} },
	browser.ProviderInputScroll: func() any { return &requestParams[inputCommand]{} },
	browser.ProviderInputSelect: func() any { return &requestParams[inputCommand]{} },
	browser.ProviderInputHover:  func() any { return &requestParams[inputCommand]{} },
	browser.ProviderInputDrag:   func() any { return &requestParams[inputCommand]{} },
	browser.ProviderDOMRead:     func() any { return &requestParams[domRequest]{} },
	browser.ProviderDOMHit:      func() any { return &requestParams[hitRequest]{} },
	browser.ProviderNavigate:    func() any { return &requestParams[navigateRequest]{} },
	browser.ProviderCDP:         func() any { return &cdpParams{} },
}

func (p *fakeProvider) CallWithin(ctx context.Context, d time.Duration, method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return p.Call(ctx, method, params)
}

func (p *fakeProvider) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	decoded, problem := p.decode(method, params)
	p.mu.Lock()
	if problem != "" {
		p.violations = append(p.violations, problem)
	}
	p.calls = append(p.calls, providerCall{method, decoded})
	close(p.called)
	p.called = make(chan struct{})
	rp := p.script[method]
	p.mu.Unlock()
	if problem != "" || rp == nil {
		return nil, wire.Err(wire.CodeInvalidRequest) // as the extension answers a method it does not know
	}
	if rp.hold != nil {
		select {
		case <-rp.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if rp.delay > 0 {
		select {
		case <-time.After(rp.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	v, err := rp.answer(decoded)
	if err != nil {
		return nil, err
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(v)
}

// decode decodes params strictly into the method's params type, as they
// would arrive over the wire, and checks every leased request names a lease
// of this instance with its token.
func (p *fakeProvider) decode(method string, params any) (any, string) {
	newParams, ok := sentTypes[method]
	if !ok {
		return params, "sent an unknown method " + method
	}
	data, err := json.Marshal(params)
	if err != nil {
		return params, fmt.Sprintf("%s: %v", method, err)
	}
	v := newParams()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return params, fmt.Sprintf("%s params %s: %v", method, data, err)
	}
	if method != browser.ProviderTabsList {
		var l struct{ Lease *lease.Lease }
		json.Unmarshal(data, &l)
		if l.Lease == nil || l.Lease.ID == "" || l.Lease.Token == "" || l.Lease.InstanceID != p.id {
			return v, fmt.Sprintf("%s without this instance's lease: %s", method, data)
		}
	}
	return v, ""
}

// on scripts a method's answer.
func (p *fakeProvider) on(method string, answer func(params any) (any, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script[method] = &reply{answer: answer}
}

// fail scripts a method to answer code.
func (p *fakeProvider) fail(method string, code wire.Code) {
	p.on(method, func(any) (any, error) { return nil, wire.Err(code) })
}

// answerRaw scripts a method to answer data verbatim.
func (p *fakeProvider) answerRaw(method, data string) {
	p.on(method, func(any) (any, error) { return json.RawMessage(data), nil })
}

// hold makes the method's calls wait (or end with their context) until
// release is called.
func (p *fakeProvider) hold(method string) (release func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.script[method].hold = ch
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// delay makes the method's calls answer after d (or end with their context).
func (p *fakeProvider) delay(method string, d time.Duration) {
	p.mu.Lock()
	p.script[method].delay = d
	p.mu.Unlock()
}

// sent returns the decoded params of every call of method, in order.
func (p *fakeProvider) sent(method string) []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []any
	for _, c := range p.calls {
		if c.Method == method {
			out = append(out, c.Params)
		}
	}
	return out
}

func (p *fakeProvider) count(method string) int { return len(p.sent(method)) }

// methods returns the methods called, in order.
func (p *fakeProvider) methods() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.calls {
		out = append(out, c.Method)
	}
	return out
}

// waitCalls waits until method was called n times (the runtime sends some
// calls, lease.revoke, in the background).
func (p *fakeProvider) waitCalls(t testing.TB, method string, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		p.mu.Lock()
		called := p.called
		p.mu.Unlock()
		if p.count(method) >= n {
			return
		}
		select {
		case <-called:
		case <-deadline:
			t.Fatalf("%s called %d times, want %d", method, p.count(method), n)
		}
	}
}

// revoked returns the IDs of the leases lease.revoke was sent for.
func (p *fakeProvider) revoked() []string {
	var out []string
	for _, params := range p.sent(browser.ProviderLeaseRevoke) {
		out = append(out, params.(*leaseParams).Lease.ID)
	}
	return out
}

// fakePage is what the default script shows: a document and its AX nodes
// in document order, each naming its parent, and same-origin child frames.
type fakePage struct {
	mu         sync.Mutex
	epoch      string // mainFrameId:loaderId
	url, title string
	nodes      []fakeNode
	truncated  bool                   // reads say a budget cut them
	frames     []sourceFrame          // child frames, as frames.list lists them
	docs       map[string]*fakePage   // child frame documents by frame ID
	selects    map[int64]*selectFacts // the options of the page's <select>s, by backend node ID
}

type fakeNode struct {
	axNode
	id, parent string
}

const pageURL = "https://app.test/form"

// standardPage is a form: a main region holding a text box, a button and a
// line of text.
func standardPage() *fakePage {
	pg := &fakePage{epoch: "F:L1", url: pageURL, title: "Form", docs: map[string]*fakePage{}}
	pg.add("1", "", axNode{BackendNodeID: 1, Role: "RootWebArea", Name: "Form"})
	pg.add("2", "1", axNode{BackendNodeID: 2, Role: "main", Name: "Main area"})
	pg.add("3", "2", axNode{BackendNodeID: 3, Role: "textbox", Name: "Your name", Props: axProps{Editable: "plaintext", Focusable: true}})
	pg.add("4", "2", axNode{BackendNodeID: 4, Role: "button", Name: "Greet", Props: axProps{Focusable: true}})
	pg.add("5", "2", axNode{Role: "generic", Ignored: true})
	pg.add("6", "2", axNode{BackendNodeID: 6, Role: "StaticText", Name: "DSH demo"})
	return pg
}

// add appends a node; the caller holds pg.mu or owns pg alone.
func (pg *fakePage) add(id, parent string, n axNode) {
	pg.nodes = append(pg.nodes, fakeNode{n, id, parent})
}

// edit changes the page under its lock.
func (pg *fakePage) edit(f func(pg *fakePage)) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	f(pg)
}

// say adds a line of text to the main region.
func (pg *fakePage) say(text string) {
	pg.edit(func(pg *fakePage) {
		pg.add(fmt.Sprint("s", len(pg.nodes)), "2", axNode{Role: "StaticText", Name: text})
	})
}

func (pg *fakePage) read(match func(axNode) bool) *axRead {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	out := &axRead{DocumentEpoch: pg.epoch, URL: pg.url, Title: pg.title, Truncated: pg.truncated, Nodes: []axNode{}}
	for _, n := range pg.nodes {
		if !n.Ignored && match(n.axNode) {
			a := n.axNode
			a.AXID, a.ParentAXID = n.id, n.parent
			out.Nodes = append(out.Nodes, a)
		}
	}
	return out
}

// window walks the page depth-first as ax.page does: from the root (or the
// node of BackendNodeID) or right after the chain req.After, which must
// still run from the root down through parent and child, else STALE_TARGET.
func (pg *fakePage) window(req pageRequest) (*windowRead, error) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	stale := wire.Err(wire.CodeStaleTarget)
	index := map[string]int{}
	for i, n := range pg.nodes {
		index[n.id] = i
	}
	start := 0
	if req.BackendNodeID != 0 {
		start = slices.IndexFunc(pg.nodes, func(n fakeNode) bool { return n.BackendNodeID == req.BackendNodeID })
		if start < 0 {
			return nil, stale
		}
	}
	root := pg.nodes[start].id
	under := func(i int) bool { // node i is in the reading's subtree
		for id := pg.nodes[i].id; id != ""; id = pg.nodes[index[id]].parent {
			if id == root {
				return true
			}
		}
		return false
	}
	next := start
	if len(req.After) > 0 {
		if req.After[0] != root {
			return nil, stale
		}
		for k, id := range req.After {
			i, ok := index[id]
			if !ok || (k > 0 && pg.nodes[i].parent != req.After[k-1]) {
				return nil, stale
			}
		}
		next = index[req.After[len(req.After)-1]] + 1
	}
	out := &windowRead{DocumentEpoch: pg.epoch, URL: pg.url, Title: pg.title, Nodes: []windowNode{}}
	for i := next; i < len(pg.nodes) && under(i); i++ {
		if len(out.Nodes) == req.MaxNodes {
			last := pg.nodes[i-1].id
			for id := last; id != root; id = pg.nodes[index[id]].parent {
				out.Resume = append([]string{id}, out.Resume...)
			}
			out.Resume = append([]string{root}, out.Resume...)
			break
		}
		n := pg.nodes[i]
		w := n.axNode
		w.AXID, w.ParentAXID = n.id, n.parent
		out.Nodes = append(out.Nodes, windowNode{w})
	}
	return out, nil
}

// frameList lists the main frame and the child frames.
func (pg *fakePage) frameList() *sourceFrames {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	frameID, loaderID, _ := strings.Cut(pg.epoch, ":")
	origin, _ := httpOrigin(pg.url)
	main := sourceFrame{FrameID: frameID, LoaderID: loaderID, Origin: origin, Local: true}
	return &sourceFrames{DocumentEpoch: pg.epoch, URL: pg.url, Frames: append([]sourceFrame{main}, pg.frames...)}
}

// doc returns the document a request names: the page, or a child frame's
// document when it still shows that loader.
func (pg *fakePage) doc(f *frameDocument) (*fakePage, error) {
	if f == nil {
		return pg, nil
	}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	d := pg.docs[f.FrameID]
	if d == nil || d.epoch != f.FrameID+":"+f.LoaderID {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	return d, nil
}

// withChildFrame adds a same-origin child frame "C" showing a document
// with a button "Inner" and the text "Inside".
func (pg *fakePage) withChildFrame() {
	child := &fakePage{epoch: "C:LC1", url: "https://app.test/inner", title: "Inner", docs: map[string]*fakePage{}}
	child.add("1", "", axNode{BackendNodeID: 1, Role: "RootWebArea", Name: "Inner page"})
	child.add("2", "1", axNode{BackendNodeID: 50, Role: "button", Name: "Inner"})
	child.add("3", "1", axNode{BackendNodeID: 51, Role: "StaticText", Name: "Inside"})
	pg.edit(func(pg *fakePage) {
		frameID, _, _ := strings.Cut(pg.epoch, ":")
		pg.frames = append(pg.frames, sourceFrame{FrameID: "C", ParentID: frameID, LoaderID: "LC1", Origin: "https://app.test", Local: true})
		pg.docs["C"] = child
	})
}

// jpegOf returns base64 of n bytes that start like a JPEG.
func jpegOf(n int) string {
	b := make([]byte, n)
	copy(b, []byte{0xFF, 0xD8, 0xFF, 0xE0})
	return base64.StdEncoding.EncodeToString(b)
}

// quadOf is where every element is: a 100×30 box at (10, 10).
var quadOf = []quad{{10, 10, 110, 10, 110, 40, 10, 40}}

// serveDefaults scripts every method to serve p.page as the extension
// would.
func (p *fakeProvider) serveDefaults() {
	pg := p.page
	p.on(browser.ProviderTabsList, func(any) (any, error) {
		pg.mu.Lock()
		defer pg.mu.Unlock()
		return []browser.TabSummary{{ID: p.id + ":1", InstanceID: p.id, URL: pg.url, Title: pg.title}}, nil
	})
	p.on(browser.ProviderLeaseGrant, func(any) (any, error) {
		pg.mu.Lock()
		defer pg.mu.Unlock()
		return grantResult{Granted: true, DocumentEpoch: pg.epoch, URL: pg.url, Title: pg.title}, nil
	})
	p.on(browser.ProviderLeaseRevoke, func(any) (any, error) { return map[string]bool{"released": true}, nil })
	p.on(browser.ProviderAXRead, func(params any) (any, error) {
		d, err := pg.doc(params.(*requestParams[axRequest]).Request.Frame)
		if err != nil {
			return nil, err
		}
		return d.read(func(axNode) bool { return true }), nil
	})
	p.on(browser.ProviderAXFind, func(params any) (any, error) {
		req := params.(*requestParams[axRequest]).Request
		d, err := pg.doc(req.Frame)
		if err != nil {
			return nil, err
		}
		return d.read(func(n axNode) bool { return n.Name == req.Name && (req.Role == "" || n.Role == req.Role) }), nil
	})
	p.on(browser.ProviderAXPage, func(params any) (any, error) {
		req := params.(*requestParams[pageRequest]).Request
		d, err := pg.doc(req.Frame)
		if err != nil {
			return nil, err
		}
		return d.window(req)
	})
	p.on(browser.ProviderFramesList, func(any) (any, error) { return pg.frameList(), nil })
	p.on(browser.ProviderCapture, func(any) (any, error) {
		pg.mu.Lock()
		defer pg.mu.Unlock()
		return sourceScreenshot{DocumentEpoch: pg.epoch, URL: pg.url, CapturedAt: 1700000000000, MimeType: jpegMime, Data: jpegOf(30),
			Viewport:  browser.Viewport{Width: 800, Height: 600, PageY: 40},
			Redaction: browser.Redaction{Policy: redactionPolicy, Frames: 2, Regions: 1}}, nil
	})
	p.on(browser.ProviderCDP, func(params any) (any, error) {
		c := params.(*cdpParams)
		switch c.Method {
		case "DOM.scrollIntoViewIfNeeded":
			return map[string]any{}, nil
		case "DOM.getContentQuads":
			return map[string]any{"quads": quadOf}, nil
		case "Page.getLayoutMetrics":
			return map[string]any{"cssLayoutViewport": map[string]any{"clientWidth": 800, "clientHeight": 600}}, nil
		case "Accessibility.getPartialAXTree":
			id, _ := c.Params.(map[string]any)["backendNodeId"].(float64)
			return pg.axTree(int64(id)), nil
		case "Page.getFrameTree":
			pg.mu.Lock()
			defer pg.mu.Unlock()
			frame, loader, _ := strings.Cut(pg.epoch, ":")
			u, fragment, _ := strings.Cut(pg.url, "#")
			if fragment != "" {
				fragment = "#" + fragment
			}
			return map[string]any{"frameTree": map[string]any{"frame": map[string]any{"id": frame, "loaderId": loader, "url": u, "urlFragment": fragment}}}, nil
		case "Runtime.evaluate":
			return map[string]any{"result": map[string]any{"type": "string", "value": "complete"}}, nil
		}
		return nil, wire.Err(wire.CodeUnsupportedCapability)
	})
	p.on(browser.ProviderDOMRead, func(params any) (any, error) {
		req := params.(*requestParams[domRequest]).Request
		d, err := pg.doc(req.Frame)
		if err != nil {
			return nil, err
		}
		return d.facts(req.BackendNodeID), nil
	})
	for _, m := range []string{browser.ProviderInputClick, browser.ProviderInputKey, browser.ProviderInputHover, browser.ProviderInputDrag} {
		p.on(m, func(any) (any, error) { return map[string]bool{"dispatched": true}, nil })
	}
	// An option is chosen as the extension chooses it: by index, when its
	// label (and value) still match.
	p.on(browser.ProviderInputSelect, func(params any) (any, error) {
		cmd := params.(*requestParams[inputCommand]).Request
		pg.mu.Lock()
		defer pg.mu.Unlock()
		sel := pg.selects[cmd.Target.BackendNodeID]
		if sel == nil || cmd.Option.Index >= len(sel.Options) {
			return nil, wire.Err(wire.CodeUnsupportedCapability)
		}
		o := sel.Options[cmd.Option.Index]
		if o.Label != cmd.Option.Label || (cmd.Option.Value != nil && o.Value != *cmd.Option.Value) {
			return nil, wire.Err(wire.CodeStaleTarget)
		}
		for i := range sel.Options {
			sel.Options[i].Selected = i == cmd.Option.Index
		}
		return map[string]bool{"dispatched": true}, nil
	})
	// Text lands in the field, as typing would: dom.read and ax.read then
	// show it.
	p.on(browser.ProviderInputText, func(params any) (any, error) {
		cmd := params.(*requestParams[inputCommand]).Request
		if cmd.Target != nil && cmd.Text != nil {
			pg.setValue(cmd.Target.BackendNodeID, cmd.Mode, *cmd.Text)
		}
		return map[string]bool{"dispatched": true}, nil
	})
}

// axTree answers Accessibility.getPartialAXTree for a node of the page (or
// of a child frame's document), as Chromium does: the node with its role,
// name and properties.
func (pg *fakePage) axTree(backend int64) map[string]any {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	docs := []*fakePage{pg}
	for _, d := range pg.docs {
		docs = append(docs, d)
	}
	for _, d := range docs {
		if d != pg {
			d.mu.Lock()
		}
		for _, n := range d.nodes {
			if n.BackendNodeID != backend {
				continue
			}
			props := []map[string]any{{"name": "focusable", "value": map[string]any{"value": n.Props.Focusable}}}
			if n.Props.Editable != "" {
				props = append(props, map[string]any{"name": "editable", "value": map[string]any{"value": n.Props.Editable}})
			}
			if n.Props.Disabled {
				props = append(props, map[string]any{"name": "disabled", "value": map[string]any{"value": true}})
			}
			if d != pg {
				d.mu.Unlock()
			}
			return map[string]any{"nodes": []map[string]any{{"backendDOMNodeId": backend, "ignored": n.Ignored,
				"role": map[string]any{"value": n.Role}, "name": map[string]any{"value": n.Name}, "properties": props}}}
		}
		if d != pg {
			d.mu.Unlock()
		}
	}
	return map[string]any{"nodes": []any{}}
}

// setValue applies a text input to a field's value.
func (pg *fakePage) setValue(backend int64, mode, text string) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for i := range pg.nodes {
		n := &pg.nodes[i]
		if n.BackendNodeID != backend || n.Props.Editable == "" {
			continue
		}
		v := ""
		if n.Value != nil && mode != "replace" {
			v = *n.Value
		}
		v += text
		n.Value = &v
	}
}

// facts answers dom.read for a node of the page, as the extension reads a
// plain, visible, enabled element: a text box is an input, anything else a
// button; 0 is the document's scroller.
func (pg *fakePage) facts(backend int64) domFacts {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	scroll := &browser.ScrollPosition{ScrollWidth: 800, ScrollHeight: 600, ClientWidth: 800, ClientHeight: 600}
	if backend == 0 {
		return domFacts{Found: true, Connected: true, SameDocument: true, Document: true, Visible: true, DisabledKnown: true, EnabledState: true, Scroll: scroll}
	}
	for _, n := range pg.nodes {
		if n.BackendNodeID != backend {
			continue
		}
		f := domFacts{Found: true, Connected: true, SameDocument: true, Visible: true, DisabledKnown: true,
			Disabled: n.Props.Disabled, EnabledState: !n.Props.Disabled, Tag: "button", MaxLength: -1, Scroll: scroll}
		if sel := pg.selects[backend]; sel != nil {
			f.Tag, f.Select = "select", &selectFacts{Multiple: sel.Multiple, Options: slices.Clone(sel.Options)}
		}
		if n.Props.Editable != "" {
			f.Tag, f.Type, f.Editable = "input", "text", "input"
			v := ""
			if n.Value != nil {
				v = *n.Value
			}
			f.Value = &v
		}
		return f
	}
	return domFacts{}
}

// fakeClient is a connected client (a fake: the runtime only needs its
// identity, its events and its answers to browser.approveBatchStep).
type fakeClient struct {
	conn       uint64
	label      string
	journalKey string
	caps       []string // what its hello listed

	mu      sync.Mutex
	events  []clientEvent
	asked   []string                                        // approvals asked, "approvalId#index"
	approve func(approvalID string, index int) (any, error) // nil allows every step
}

type clientEvent struct {
	Event string
	Value any
}

func newFakeClient(conn uint64) *fakeClient {
	return &fakeClient{conn: conn, label: fmt.Sprintf("agent (pid %d)", 1000+conn)}
}

func (c *fakeClient) ConnID() uint64          { return c.conn }
func (c *fakeClient) Label() string           { return c.label }
func (c *fakeClient) Capable(cap string) bool { return slices.Contains(c.caps, cap) }
func (c *fakeClient) JournalKey() string      { return c.journalKey }
func (c *fakeClient) Notify(event string, value any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, clientEvent{event, value})
	return nil
}

func (c *fakeClient) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if method != browser.MethodApproveBatchStep {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	var in struct {
		ApprovalID string `json:"approvalId"`
		Index      int    `json:"index"`
	}
	data, _ := json.Marshal(params)
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	c.mu.Lock()
	c.asked = append(c.asked, fmt.Sprintf("%s#%d", in.ApprovalID, in.Index))
	approve := c.approve
	c.mu.Unlock()
	if approve == nil {
		return json.RawMessage(`{"allowed":true}`), nil
	}
	v, err := approve(in.ApprovalID, in.Index)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// revocations returns the lease IDs of the browser.lease-revoked events the
// client got, checking each names its session and lease only.
func (c *fakeClient) revocations(t testing.TB) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ev := range c.events {
		v, ok := ev.Value.(map[string]string)
		if ev.Event != browser.EventLeaseRevoked || !ok || len(v) != 2 || v["sessionId"] == "" {
			t.Fatalf("event %s %v", ev.Event, ev.Value)
		}
		out = append(out, v["leaseId"])
	}
	return out
}

// fixture is a runtime serving one fake provider ("inst", showing the
// standard page) and one client (connection 1), on a clock the test moves.
type fixture struct {
	t     *testing.T
	r     *Runtime
	h     *testHost
	p     *fakeProvider
	c     *fakeClient
	clock *clock
}

// newFixture starts a fixture; a nil caps is everything the extension
// advertises.
func newFixture(t *testing.T, cfg Config, caps ...string) *fixture {
	if caps == nil {
		caps = allCaps()
	}
	f := &fixture{t: t, h: newTestHost(), p: newFakeProvider(t, "inst", caps...), c: newFakeClient(1), clock: &clock{t: time.Unix(1_700_000_000, 0)}}
	f.h.add(f.p)
	f.h.connect(f.c)
	if cfg.Now == nil {
		cfg.Now = f.clock.now
	}
	f.r = New(cfg, f.h)
	return f
}

// clock is the runtime's Config.Now: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// method is a client method of the Runtime.
type method func(context.Context, Client, json.RawMessage) (any, error)

// invoke runs a method as the broker does: params encoded as JSON (a
// json.RawMessage as is), the value decoded from JSON into T as the client
// would.
func invoke[T any](t testing.TB, m method, c Client, params any) (T, error) {
	t.Helper()
	var got T
	data, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if data, err = json.Marshal(params); err != nil {
			t.Fatal(err)
		}
	}
	v, err := m(context.Background(), c, data)
	if err != nil {
		return got, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("the value does not encode: %v", err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the value %s does not decode as %T: %v", out, got, err)
	}
	return got, nil
}

// must is invoke for a call that must succeed.
func must[T any](t testing.TB, m method, c Client, params any) T {
	t.Helper()
	v, err := invoke[T](t, m, c, params)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return v
}

// claim leases the provider's tab for session.
func (f *fixture) claim(session string) browser.LeaseResult {
	f.t.Helper()
	return must[browser.LeaseResult](f.t, f.r.Claim, f.c, map[string]any{"sessionId": session, "instanceId": f.p.id, "tab": f.p.id + ":1"})
}

// observe reads the leased page in full.
func (f *fixture) observe(session, leaseID string) browser.Observation {
	f.t.Helper()
	return must[browser.Observation](f.t, f.r.Observe, f.c, map[string]any{"sessionId": session, "leaseId": leaseID})
}

// act runs browser.act for session; request is the request object.
func (f *fixture) act(session string, request map[string]any) browser.ActionResult {
	f.t.Helper()
	return must[browser.ActionResult](f.t, f.r.Act, f.c, map[string]any{"sessionId": session, "request": request})
}

// refOf finds the ref of the node with role and name.
func refOf(t testing.TB, nodes []browser.NodeRef, role, name string) string {
	t.Helper()
	for _, n := range nodes {
		if n.Role == role && n.Name == name {
			return n.ID
		}
	}
	t.Fatalf("no %s %q in %+v", role, name, nodes)
	return ""
}
