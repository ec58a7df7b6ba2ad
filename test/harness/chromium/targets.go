package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/extensions"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// The helpers below call t.Fatal, so call them from the test's goroutine.
// Each is bounded by b.Timeout.

// timeout returns a context for one call on the browser.
func (b *Browser) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.Ctx, b.Timeout)
}

// fail fails the test with the browser's recent output.
func (b *Browser) fail(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Fatalf("chromium: "+format+"\nbrowser output (tail):\n%s", append(args, b.StderrTail(4<<10))...)
}

// attach makes a chromedp context on target id, attached before it returns.
// Cancelling it detaches and leaves the target open. On a page that changes
// its DOM meanwhile, chromedp's attach races with itself (see devtools):
// attach once per target, never per poll; poll with Evaluate.
func (b *Browser) attach(id target.ID) (context.Context, context.CancelFunc, error) {
	ctx, cancel := chromedp.NewContext(b.Ctx, chromedp.WithTargetID(id), chromedp.WithDetachOnCancel())
	// The session lives as long as the context of the first Run, so that
	// Run gets ctx itself, bounded by a watchdog.
	if err := b.watchdog(cancel, func() error { return chromedp.Do(ctx) }); err != nil {
		cancel()
		return nil, nil, err
	}
	return ctx, cancel, nil
}

// session returns the context on target id that the helpers share, attaching
// on first use. It lives until the browser closes.
func (b *Browser) session(t testing.TB, id target.ID) context.Context {
	t.Helper()
	b.mu.Lock()
	ctx, ok := b.tabs[id]
	b.mu.Unlock()
	if ok && ctx.Err() == nil {
		return ctx
	}
	ctx, cancel, err := b.attach(id)
	if err != nil {
		b.fail(t, "attach to target %s: %v", id, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tabs == nil {
		cancel()
		b.fail(t, "the browser is closed")
	}
	b.tabs[id] = ctx
	b.cancels = append(b.cancels, cancel)
	return ctx
}

// TargetCtx returns a new chromedp context attached to target id (a page, a
// popup, a service worker…) for the test's own actions. It detaches, leaving
// the target open, when the test ends. Bound each Run on it with a timeout
// derived from it.
//
// A session attached to an extension's service worker keeps the worker
// alive; tests of idle behaviour must not hold one. Attaching to a page
// that changes its DOM is a data race inside chromedp (see devtools): take
// one TargetCtx per target, and poll with Evaluate.
func (b *Browser) TargetCtx(t testing.TB, id target.ID) context.Context {
	t.Helper()
	ctx, cancel, err := b.attach(id)
	if err != nil {
		b.fail(t, "attach to target %s: %v", id, err)
	}
	t.Cleanup(cancel)
	return ctx
}

// OpenTab opens a new foreground tab in the browser's window (a new window
// if none is left), loads url in
// it and waits for the load event. The tab starts at about:blank, so it has
// one history entry before url. Only the foreground tab of a window is
// visible; some CDP calls (Accessibility.queryAXTree, Page.captureScreenshot)
// never answer on a hidden tab.
func (b *Browser) OpenTab(t testing.TB, url string) target.ID {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	create := func(newWindow bool) (target.CreateTargetResult, error) {
		return chromedp.CallBrowser(ctx, target.CreateTarget, target.CreateTargetParams{
			URL:        "about:blank",
			NewWindow:  &newWindow,
			Background: new(false),
		})
	}
	res, err := create(false)
	if err != nil && strings.Contains(err.Error(), "no browser is open") {
		// The last window was closed; a tab needs a window of its own.
		res, err = create(true)
	}
	if err != nil {
		b.fail(t, "Target.createTarget: %v", err)
	}
	b.Navigate(t, res.TargetID, url)
	return res.TargetID
}

// Navigate loads url in target id and waits for the load event.
func (b *Browser) Navigate(t testing.TB, id target.ID, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.session(t, id), b.Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.fail(t, "navigate %s to %s: %v", id, url, err)
	}
}

// CloseTab closes target id.
func (b *Browser) CloseTab(t testing.TB, id target.ID) {
	t.Helper()
	b.mu.Lock()
	delete(b.tabs, id) // its cancel still runs at close; detaching a gone target is harmless
	b.mu.Unlock()
	ctx, cancel := b.timeout()
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: id}); err != nil {
		b.fail(t, "Target.closeTarget %s: %v", id, err)
	}
}

// Targets returns the browser's targets.
func (b *Browser) Targets(t testing.TB) []*target.Info {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		b.fail(t, "Target.getTargets: %v", err)
	}
	return infos
}

// WaitTarget polls the browser's targets until match accepts one, and
// returns it. It fails the test after timeout (b.Timeout if zero).
func (b *Browser) WaitTarget(t testing.TB, match func(*target.Info) bool, timeout time.Duration) *target.Info {
	t.Helper()
	if timeout <= 0 {
		timeout = b.Timeout
	}
	deadline := time.Now().Add(timeout)
	var infos []*target.Info
	for {
		infos = b.Targets(t)
		for _, info := range infos {
			if match(info) {
				return info
			}
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-b.exited:
			b.fail(t, "the browser exited (%v) while waiting for a target", b.cmd.ProcessState)
		case <-time.After(25 * time.Millisecond):
		}
	}
	var list strings.Builder
	for _, info := range infos {
		fmt.Fprintf(&list, "\n  %s %s %s", info.TargetID, info.Type, info.URL)
	}
	b.fail(t, "no matching target within %v; targets:%s", timeout, list.String())
	return nil
}

// ServiceWorker waits for the service worker of extension extensionID to
// be activated with its extension APIs, and returns its target. It does not
// stay attached to it.
//
// The worker's target is listed, and answers evaluations, before that:
// while it is parsed and installing, chrome can be undefined, and
// chrome.runtime.connectNative called then was seen never to answer, every
// later evaluation in the worker hanging behind it.
func (b *Browser) ServiceWorker(t testing.TB, extensionID string) target.ID {
	t.Helper()
	prefix := "chrome-extension://" + extensionID + "/"
	id := b.WaitTarget(t, func(info *target.Info) bool {
		return info.Type == "service_worker" && strings.HasPrefix(info.URL, prefix)
	}, 0).TargetID
	if err := b.workerReady(id); err != nil {
		b.fail(t, "the service worker %s of extension %s: %v", id, extensionID, err)
	}
	return id
}

// workerReady polls, in a session of its own, until worker id is activated
// and has its extension APIs, for up to b.Timeout.
func (b *Browser) workerReady(id target.ID) error {
	const state = `String(globalThis.serviceWorker?.state) + " " + typeof globalThis.chrome?.runtime?.id`
	ctx, cancel := b.timeout()
	defer cancel()
	sid, err := b.devtools.attach(ctx, id)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	defer func() {
		ctx, cancel := b.timeout()
		defer cancel()
		b.devtools.detach(ctx, sid)
	}()
	for {
		var got string
		v, err := b.devtools.evaluate(ctx, sid, state)
		if err == nil {
			got, err = decode[string](v)
		}
		if got == "activated string" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("its state and typeof chrome.runtime.id are %q", got)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not activated with its APIs within %v: %w", b.Timeout, err)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Click clicks the first element matching the CSS selector in target id,
// with real mouse events at the element's centre (so a covering element
// gets the click), once the element is visible and has stopped moving.
// It runs on the harness's own connection: a chromedp session attached
// while the page loads can click a document the page no longer shows
// ("received DOM.documentUpdated when there's no top-level frame"), and
// the click is then lost.
func (b *Browser) Click(t testing.TB, id target.ID, selector string) {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	centre := fmt.Sprintf(`(() => {
		const el = %s;
		if (!el || !el.checkVisibility()) return null;
		el.scrollIntoView({ block: 'nearest', inline: 'nearest' });
		const r = el.getBoundingClientRect();
		return r.width > 0 && r.height > 0 ? [r.left + r.width / 2, r.top + r.height / 2] : null;
	})()`, query(selector))
	var last []float64
	at, err := poll(ctx, b, id, centre, func(at []float64) bool {
		still := len(at) == 2 && slices.Equal(at, last) // at the same place twice in a row
		last = at
		return still
	})
	if err != nil {
		b.fail(t, "click %q in %s: no visible, still element within %v: %v", selector, id, b.Timeout, err)
	}
	sid, err := b.devtools.session(ctx, id)
	if err != nil {
		b.fail(t, "click %q in %s: attach: %v", selector, id, err)
	}
	for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		_, err := call(ctx, b.devtools, sid, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: typ, X: at[0], Y: at[1], Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1,
		})
		if err != nil && b.exists(t, id) {
			b.fail(t, "click %q in %s: %v", selector, id, err)
		} // a click that closed its own page (an approval window's button) is fine
	}
}

// exists reports whether target id is still open.
func (b *Browser) exists(t testing.TB, id target.ID) bool {
	for _, info := range b.Targets(t) {
		if info.TargetID == id {
			return true
		}
	}
	return false
}

// Text returns the visible text (innerText) of the first element matching
// the CSS selector in target id, once the element exists: what it shows
// then, which may be nothing yet. Like Click it reads on the harness's own
// connection (a chromedp session attached while the page loads can look
// for a node of a document the page no longer shows).
func (b *Browser) Text(t testing.TB, id target.ID, selector string) string {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	text, err := poll(ctx, b, id, query(selector)+`?.innerText ?? null`, func(s *string) bool { return s != nil })
	if err != nil {
		b.fail(t, "text of %q in %s: no such element within %v (%v)", selector, id, b.Timeout, err)
	}
	return *text
}

// query is the JavaScript expression of the first element matching the
// CSS selector.
func query(selector string) string {
	sel, _ := json.Marshal(selector)
	return fmt.Sprintf("document.querySelector(%s)", sel)
}

// Eval evaluates the JavaScript expression in target id (a page or a
// worker), awaits it if it is a promise, and decodes the result into T.
// (Go methods cannot have type parameters, so this is a function.) It
// attaches to the target on first use and stays attached, so a service
// worker once evaluated in is kept alive.
func Eval[T any](t testing.TB, b *Browser, id target.ID, expr string) T {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	v, err := Evaluate[T](ctx, b, id, expr)
	if err != nil {
		b.fail(t, "evaluate %q in %s: %v", expr, id, err)
	}
	return v
}

// WaitEval polls the JavaScript expression in target id until it is true,
// and fails the test after timeout (b.Timeout if zero) with its last value
// or error. Errors meanwhile (the target not ready yet) do not end the wait.
func (b *Browser) WaitEval(t testing.TB, id target.ID, expr string, timeout time.Duration) {
	t.Helper()
	if timeout <= 0 {
		timeout = b.Timeout
	}
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	if _, err := poll(ctx, b, id, expr, func(ok bool) bool { return ok }); err != nil {
		b.fail(t, "%s never held in %s within %v: %v", expr, id, timeout, err)
	}
}

// poll evaluates expr in target id every 25 ms until done accepts its value,
// and returns that value. An evaluation that errs (the target not ready
// yet) is tried again. When ctx ends or the browser exits, it returns the
// last value and why it stopped.
func poll[T any](ctx context.Context, b *Browser, id target.ID, expr string, done func(T) bool) (T, error) {
	for {
		v, err := Evaluate[T](ctx, b, id, expr)
		if err == nil && done(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%w; the last value was %v", ctx.Err(), v)
			}
			return v, err
		case <-b.exited:
			return v, fmt.Errorf("the browser exited (%v)", b.cmd.ProcessState)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// harness is a small extension of the test harness, loaded on first use.
// Its service worker has the "debugger" permission, whose
// chrome.debugger.getTargets() maps DevTools target IDs to chrome.tabs IDs.
type harness struct {
	id     string    // extension ID
	worker target.ID // its service worker
}

const harnessManifest = `{
  "manifest_version": 3,
  "name": "DSH test harness",
  "description": "Maps DevTools targets to tab IDs for the tests. Not part of the product.",
  "version": "1.0",
  "background": { "service_worker": "sw.js" },
  "permissions": ["debugger"]
}
`

const harnessWorker = `// The test harness evaluates chrome.debugger.getTargets() here over CDP.
// It holds a DevTools session on this worker, which keeps the worker alive.
`

// harnessWorker loads the harness extension once (Extensions.loadUnpacked,
// which needs no flag) and returns its service worker target.
func (b *Browser) harnessWorker(t testing.TB) target.ID {
	t.Helper()
	b.mu.Lock()
	h := b.harness
	b.mu.Unlock()
	if h != nil {
		return h.worker
	}
	dir := filepath.Join(b.root, "harness-extension")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"manifest.json": harnessManifest, "sw.js": harnessWorker} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := b.timeout()
	defer cancel()
	res, err := chromedp.CallBrowser(ctx, extensions.LoadUnpacked, extensions.LoadUnpackedParams{Path: dir})
	if err != nil {
		b.fail(t, "load the harness extension: %v", err)
	}
	h = &harness{id: res.ID}
	h.worker = b.ServiceWorker(t, h.id)
	// Evaluating attaches for good, which keeps the worker alive.
	b.WaitEval(t, h.worker, `typeof chrome.debugger.getTargets === "function"`, 0)
	b.mu.Lock()
	b.harness = h
	b.mu.Unlock()
	return h.worker
}

// TabIDOf returns the chrome.tabs ID of page target id: the tab ID that the
// extension under test sees. CDP has no such field, so this asks
// chrome.debugger.getTargets() (whose id is the DevTools target ID) in the
// service worker of a small harness extension, loaded on first use. It
// neither attaches to nor wakes the extension under test.
func (b *Browser) TabIDOf(t testing.TB, id target.ID) int {
	t.Helper()
	worker := b.harnessWorker(t)
	q, _ := json.Marshal(string(id))
	n := Eval[int](t, b, worker, `chrome.debugger.getTargets().then((ts) => {
		const x = ts.find((t) => t.id === `+string(q)+`);
		return x === undefined ? -2 : (x.tabId ?? -1);
	})`)
	switch n {
	case -2:
		b.fail(t, "chrome.debugger.getTargets does not list target %s", id)
	case -1:
		b.fail(t, "target %s is not a tab", id)
	}
	return n
}
