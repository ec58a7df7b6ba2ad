package test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// observeWith calls browser.observe with extra params on p's lease.
func (p *page) observeWith(params map[string]any) (browser.Observation, json.RawMessage, error) {
	p.t.Helper()
	params["sessionId"], params["leaseId"] = "s", p.lease.ID
	raw, err := p.s.Call(p.t, "browser.observe", params)
	var o browser.Observation
	json.Unmarshal(raw, &o)
	return o, raw, err
}

func names(o browser.Observation) []string {
	var out []string
	for _, n := range o.Nodes {
		out = append(out, n.Role+":"+n.Name)
	}
	return out
}

// TestE2EObserveSubtree: rootRef reads one region (or element) only, a
// query with rootRef searches only there, and a root that is gone, renamed
// or of another document is STALE_TARGET, never a wider read.
func TestE2EObserveSubtree(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/controls")
	size := p.ref("group", "Size")

	o, raw, err := p.observeWith(map[string]any{"rootRef": size})
	if err != nil {
		t.Fatal(err)
	}
	if o.Scope != (browser.Scope{Kind: "subtree", RootRef: size}) || o.Truncated ||
		!slices.Equal(names(o), []string{"group:Size", "radio:Small", "radio:Large"}) || !slices.Contains(o.Text, "Size") || slices.Contains(o.Text, "Controls") {
		t.Fatalf("subtree of the Size group: %s", raw)
	}
	// Refs are the document's: the same element has the same ref.
	if o.Nodes[2].ID != p.ref("radio", "Large") {
		t.Fatal("a subtree read minted another ref for the same element")
	}
	// A query scoped under the region finds what is in it, only.
	q, raw, err := p.observeWith(map[string]any{"rootRef": size, "query": map[string]any{"name": "Large", "role": "radio"}})
	if err != nil || len(q.Nodes) != 1 || q.Nodes[0].ID != p.ref("radio", "Large") || q.Scope.Kind != "query" || q.Scope.RootRef != size {
		t.Fatalf("query under the region: %s %v", raw, err)
	}
	if q, raw, err := p.observeWith(map[string]any{"rootRef": size, "query": map[string]any{"name": "Newsletter"}}); err != nil || len(q.Nodes) != 0 {
		t.Fatalf("a query under the region found an element outside it: %s %v", raw, err)
	}
	// Cursors: the same scope gives a delta or says nothing changed; a
	// document cursor with rootRef is another scope.
	d, raw, err := p.observeWith(map[string]any{"rootRef": size, "cursor": o.Cursor})
	if err != nil || d.ResyncRequired {
		t.Fatalf("a subtree cursor in the same scope: %s %v", raw, err)
	}
	if d, raw, _ := p.observeWith(map[string]any{"rootRef": size, "cursor": p.obs.Cursor}); d.ResyncReason != "scope-changed" {
		t.Fatalf("a document cursor with rootRef: %s", raw)
	}
	// Renamed, removed, or of another document: STALE_TARGET.
	chromium.Eval[any](t, s.Browser, p.target, "document.querySelector('legend').textContent = 'Dimensions'")
	if _, _, err := p.observeWith(map[string]any{"rootRef": size}); rpc.CodeOf(err) != wire.CodeStaleTarget {
		t.Fatalf("a renamed root: %v, want STALE_TARGET", err)
	}
	p.observe()
	dims := p.ref("group", "Dimensions")
	chromium.Eval[any](t, s.Browser, p.target, "document.querySelector('fieldset').remove()")
	if _, _, err := p.observeWith(map[string]any{"rootRef": dims, "query": map[string]any{"name": "Large"}}); rpc.CodeOf(err) != wire.CodeStaleTarget {
		t.Fatalf("a removed root: %v, want STALE_TARGET", err)
	}
	for _, ref := range []string{"r-unknown", p.ref("button", "Hide")} {
		if ref != "r-unknown" {
			s.Browser.Navigate(t, p.target, s.Pages.URL("/controls"))
		}
		if _, _, err := p.observeWith(map[string]any{"rootRef": ref}); rpc.CodeOf(err) != wire.CodeStaleTarget {
			t.Fatalf("root %s: %v, want STALE_TARGET", ref, err)
		}
	}
}

// TestE2EObserveFrameSubtree: rootRef in a same-origin child frame
// (observe.frame-subtree.v1), alone and with a query.
func TestE2EObserveFrameSubtree(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/frames")
	var nested browser.Frame
	inv := frameList(t, s, p.lease.ID)
	for _, f := range inv.Frames {
		if f.OriginRelation == "same-origin" && !f.IsMain && f.ContextStatus == "known" {
			o, _, err := p.observeWith(map[string]any{"frame": map[string]any{"frameId": f.ID, "documentEpoch": f.DocumentEpoch}})
			if err == nil && strings.Contains(strings.Join(o.Text, " "), "Nested page") {
				nested, p.obs = f, o
			}
		}
	}
	if nested.ID == "" {
		t.Fatalf("no nested frame in %+v", inv.Frames)
	}
	frame := map[string]any{"frameId": nested.ID, "documentEpoch": nested.DocumentEpoch}
	button := p.ref("button", "Nested button")
	o, raw, err := p.observeWith(map[string]any{"frame": frame, "rootRef": button})
	if err != nil || o.Scope != (browser.Scope{Kind: "subtree", RootRef: button, FrameID: nested.ID}) || o.DocumentEpoch != nested.DocumentEpoch ||
		!slices.Equal(names(o), []string{"button:Nested button"}) || slices.Contains(o.Text, "Nested page") {
		t.Fatalf("subtree in the frame: %s %v", raw, err)
	}
	q, raw, err := p.observeWith(map[string]any{"frame": frame, "rootRef": button, "query": map[string]any{"name": "Nested note"}})
	if err != nil || len(q.Nodes) != 0 || q.Scope.Kind != "query" || q.Scope.RootRef != button || q.Scope.FrameID != nested.ID {
		t.Fatalf("a query under the button found what is beside it: %s %v", raw, err)
	}
	q, raw, err = p.observeWith(map[string]any{"frame": frame, "rootRef": button, "query": map[string]any{"name": "Nested button", "role": "button"}})
	if err != nil || len(q.Nodes) != 1 || q.Nodes[0].ID != button {
		t.Fatalf("a query under the button: %s %v", raw, err)
	}
	// A frame's ref is not a root of the main document, and a main ref is
	// not one of the frame.
	if _, _, err := p.observeWith(map[string]any{"rootRef": button}); rpc.CodeOf(err) != wire.CodeStaleTarget {
		t.Fatalf("a frame's ref as the main document's root: %v", err)
	}
	main := s.Observe(t, "s", p.lease.ID)
	if len(main.Nodes) > 0 {
		if _, _, err := p.observeWith(map[string]any{"frame": frame, "rootRef": main.Nodes[0].ID}); rpc.CodeOf(err) != wire.CodeStaleTarget {
			t.Fatalf("a main ref as the frame's root: %v", err)
		}
	}
}

// TestE2EObserveTitle: an observation names the tab's title as Chrome
// shows it, also once the page renames itself (the extension keeps it from
// chrome.tabs.onUpdated and no longer asks the tab on every read).
func TestE2EObserveTitle(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, target := s.Tab(t, s.Pages.URL("/counter"))
	l := s.Claim(t, "s", tab)
	want := chromium.Eval[string](t, s.Browser, target, "document.title")
	if o := s.Observe(t, "s", l.ID); o.Title != want || want == "" {
		t.Fatalf("observed title %q, the page's %q", o.Title, want)
	}
	chromium.Eval[any](t, s.Browser, target, "document.title = 'Renamed: é'")
	deadline := time.Now().Add(5 * time.Second)
	for {
		o := s.Observe(t, "s", l.ID)
		if o.Title == "Renamed: é" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the page renamed itself, observations still say %q", o.Title)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReaderObjectNamesItsDocument holds in real Chromium what a read in a
// kept world relies on instead of a frame tree asked after it
// (extension/lib/pageread.js proof): a call on an object of a document's
// isolated world runs in that document, and fails once the tab shows
// another document, whether the navigation stays in its renderer (the
// same site) or moves to another (another site). The observations between
// name the document the tab shows, its URL as the reader saw it.
func TestReaderObjectNamesItsDocument(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/counter")
	tab := s.Browser.TabIDOf(t, p.target)
	worker := s.Browser.ServiceWorker(t, install.PinnedExtensionID)
	// made makes, in a world of the tab's document, a function that answers
	// the document's URL, and answers its object ID.
	made := func() string {
		t.Helper()
		return chromium.Eval[string](t, s.Browser, worker, fmt.Sprintf(`(async () => {
			const t = { tabId: %d };
			const { frameTree } = await chrome.debugger.sendCommand(t, 'Page.getFrameTree');
			const world = await chrome.debugger.sendCommand(t, 'Page.createIsolatedWorld', { frameId: frameTree.frame.id, worldName: 'dsh-proof-test' });
			const r = await chrome.debugger.sendCommand(t, 'Runtime.evaluate', { expression: 'globalThis.url ??= () => location.href', contextId: world.executionContextId });
			return r.result.objectId;
		})()`, tab))
	}
	// call calls it on its object: the URL, or the error.
	call := func(objectID string) string {
		t.Helper()
		return chromium.Eval[string](t, s.Browser, worker, fmt.Sprintf(`chrome.debugger.sendCommand({ tabId: %d }, 'Runtime.callFunctionOn', {
			objectId: %q, functionDeclaration: 'function () { return this(); }', returnByValue: true,
		}).then((r) => r.result.value, (e) => 'error: ' + e.message)`, tab, objectID))
	}
	observed := func(want string) {
		t.Helper()
		for range 2 { // the first read after a navigation makes the world, the next uses it
			if got := p.observe().URL; got != want {
				t.Fatalf("observed %s, want %s", got, want)
			}
		}
	}

	counter := made()
	if got := call(counter); got != s.Pages.URL("/counter") {
		t.Fatalf("a call in the document's world answered %q", got)
	}
	s.Browser.Navigate(t, p.target, s.Pages.URL("/form"))
	if got := call(counter); !strings.HasPrefix(got, "error: ") {
		t.Fatalf("after a navigation within the site, a call on the old document's object answered %q", got)
	}
	observed(s.Pages.URL("/form"))
	form := made()
	s.Browser.Navigate(t, p.target, s.Pages.LocalhostURL("/form"))
	if got := call(form); !strings.HasPrefix(got, "error: ") {
		t.Fatalf("after a navigation to another site, a call on the old document's object answered %q", got)
	}
	observed(s.Pages.LocalhostURL("/form"))
	// A URL that changes within the document is the reader's to tell.
	eval[any](p, `history.pushState({}, '', '/form/pushed#here')`)
	observed(s.Pages.LocalhostURL("/form/pushed#here"))
}
