package test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

func TestE2EPersonalLoop(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	if !strings.Contains(strings.Join(s.Client.Welcome().Capabilities, ","), browser.CapPersonalMode) {
		t.Fatal("personal broker did not offer broker.personal-mode.v1")
	}
	tab, target := s.Tab(t, s.Pages.URL("/form"))
	raw, err := s.Call(t, "browser.tabs", map[string]any{"sessionId": "s", "instanceId": s.Instance})
	if err != nil || !strings.Contains(string(raw), tab) {
		t.Fatalf("browser.tabs: %s %v", raw, err)
	}
	if strings.Contains(string(raw), "chrome://") || strings.Contains(string(raw), "chrome-extension://") {
		t.Fatalf("non-HTTP(S) tabs listed: %s", raw)
	}
	l := s.Claim(t, "s", tab)
	if l.Scope != "tab" {
		t.Fatalf("personal claim scope %q, want tab", l.Scope)
	}
	o := s.Observe(t, "s", l.ID)
	if !strings.Contains(strings.Join(o.Text, " "), "DSH demo") {
		t.Fatalf("observation text %q", o.Text)
	}
	fill := s.Act(t, "s", o, l.ID, map[string]any{"kind": "fill", "ref": refOf(t, o, "textbox", "Your name"), "text": "Ada",
		"expected": map[string]any{"kind": "text", "text": "Ada"}})
	if fill.Dispatch == "notDispatched" {
		t.Fatalf("fill: %+v", fill)
	}
	if v := chromium.Eval[string](t, s.Browser, target, "document.querySelector('input').value"); v != "Ada" {
		t.Fatalf("input value %q after fill", v)
	}
	click := s.Act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Greet"),
		"expected": map[string]any{"kind": "text", "text": "Hello, Ada!"}})
	if click.Outcome != "succeeded" || click.Postcondition != "passed" {
		t.Fatalf("click: %+v", click)
	}
	if _, err := s.Call(t, "browser.release", map[string]any{"sessionId": "s", "leaseId": l.ID}); err != nil {
		t.Fatal(err)
	}
}

func TestE2EPressTypeAppend(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, target := s.Tab(t, s.Pages.URL("/keys"))
	l := s.Claim(t, "s", tab)
	o := s.Observe(t, "s", l.ID)
	var box string
	for _, n := range o.Nodes {
		if n.Role == "textbox" && box == "" {
			box = n.ID
		}
	}
	if box == "" {
		t.Fatalf("no text box in %+v", o.Nodes)
	}
	s.Act(t, "s", o, l.ID, map[string]any{"kind": "type", "ref": box, "text": "ab"})
	s.Act(t, "s", o, l.ID, map[string]any{"kind": "append", "ref": box, "text": "cd"})
	if v := chromium.Eval[string](t, s.Browser, target, "document.activeElement.value"); v != "abcd" {
		t.Fatalf("value after type+append: %q", v)
	}
	r := s.Act(t, "s", o, l.ID, map[string]any{"kind": "press", "ref": box, "key": "Enter", "expected": map[string]any{"kind": "text", "text": "Submitted"}})
	if r.Outcome != "succeeded" {
		t.Fatalf("press Enter: %+v\nkeys: %v", r, chromium.Eval[any](t, s.Browser, target, "window.keys"))
	}
}

func TestE2ERestrictedApproval(t *testing.T) {
	t.Parallel()
	s := stack.Start(t)
	tab, _ := s.Tab(t, s.Pages.URL("/counter"))

	// Deny: nothing is granted.
	errc := make(chan error, 1)
	go func() {
		_, err := s.Call(t, "browser.claim", map[string]any{"sessionId": "s", "instanceId": s.Instance, "tab": tab})
		errc <- err
	}()
	win := s.Approve(t, "deny")
	_ = win
	if err := <-errc; !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
		t.Fatalf("denied claim: %v", err)
	}

	// Allow: an exact-origin lease, and a click that changes the page.
	done := make(chan browser.LeaseResult, 1)
	go func() { done <- s.Claim(t, "s", tab) }()
	s.Approve(t, "allow")
	l := <-done
	if l.Scope != "origin" || l.Origin != s.Pages.Origin() {
		t.Fatalf("restricted lease %+v, want origin %s", l, s.Pages.Origin())
	}
	o := s.Observe(t, "s", l.ID)
	r := s.Act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Add one"),
		"expected": map[string]any{"kind": "text", "text": "Clicks: 1"}})
	if r.Outcome != "succeeded" {
		t.Fatalf("click: %+v", r)
	}
}

func TestE2EStaleRefAndOcclusion(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, target := s.Tab(t, s.Pages.URL("/occluded"))
	l := s.Claim(t, "s", tab)
	o := s.Observe(t, "s", l.ID)
	r := s.Act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Hidden target")})
	// A transparent overlay is never clicked through, and the answer names it.
	if r.Code != wire.CodeNotActionable || r.Dispatch != "notDispatched" || r.CoveredBy == nil || *r.CoveredBy != (browser.Cover{Tag: "div"}) {
		t.Fatalf("occluded click: %+v %+v", r, r.CoveredBy)
	}
	if n := chromium.Eval[int](t, s.Browser, target, "window.overlayClicks + window.hiddenClicks"); n != 0 {
		t.Fatalf("occluded click reached the page %d times", n)
	}
	visible := refOf(t, o, "button", "Visible")
	s.Browser.Navigate(t, target, s.Pages.URL("/occluded")) // a new document: the old refs are stale
	stale := s.Act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": visible})
	if stale.Code != wire.CodeStaleTarget || stale.Dispatch != "notDispatched" {
		t.Fatalf("stale ref: %+v", stale)
	}
	if n := chromium.Eval[int](t, s.Browser, target, "window.visibleClicks"); n != 0 {
		t.Fatalf("stale click dispatched %d times", n)
	}
}

func TestE2ECrossOriginEndsRestrictedLease(t *testing.T) {
	t.Parallel()
	s := stack.Start(t)
	tab, target := s.Tab(t, s.Pages.URL("/nav"))
	done := make(chan browser.LeaseResult, 1)
	go func() { done <- s.Claim(t, "s", tab) }()
	s.Approve(t, "allow")
	l := <-done
	s.Browser.Navigate(t, target, s.Pages.Other().URL("/form"))
	s.WaitRevoked(t, l.ID)
	if _, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("observe after leaving the origin: %v", err)
	}
}

func TestE2EStop(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab1, target1 := s.Tab(t, s.Pages.URL("/form"))
	tab2, _ := s.Tab(t, s.Pages.URL("/counter"))
	l1, l2 := s.Claim(t, "s", tab1), s.Claim(t, "s", tab2)
	worker := s.Browser.ServiceWorker(t, install.PinnedExtensionID)
	badge := func() string {
		return chromium.Eval[string](t, s.Browser, worker, fmt.Sprintf("chrome.action.getBadgeText({tabId: %d})", s.Browser.TabIDOf(t, target1)))
	}
	if got := badge(); got != "ON" {
		t.Fatalf("badge on a leased tab: %q, want ON", got)
	}

	popup := s.Browser.OpenTab(t, "chrome-extension://"+install.PinnedExtensionID+"/popup.html")
	// Extension pages are never claimable, even in personal mode.
	popupTab := fmt.Sprintf("%s:%d", s.Instance, s.Browser.TabIDOf(t, popup))
	if _, err := s.Call(t, "browser.claim", map[string]any{"sessionId": "s", "instanceId": s.Instance, "tab": popupTab}); !errors.Is(err, wire.Err(wire.CodeStaleTarget)) {
		t.Fatalf("claim of an extension page: %v, want STALE_TARGET", err)
	}
	s.Browser.Click(t, popup, "#stop")
	s.WaitRevoked(t, l1.ID)
	s.WaitRevoked(t, l2.ID)
	for _, id := range []string{l1.ID, l2.ID} {
		if _, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": id}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
			t.Fatalf("lease %s usable after Stop: %v", id, err)
		}
	}
	if got := badge(); got != "" {
		t.Fatalf("badge after Stop: %q, want none", got)
	}
}

func TestE2EBrowserKilledAndBrokerRestarted(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, _ := s.Tab(t, s.Pages.URL("/form"))
	l := s.Claim(t, "s", tab)

	// The broker restarts: the extension comes back as a new instance, and
	// the old lease is not restored.
	old := s.Instance
	s.B.Stop(t)
	s.B.Start(t, "--access-mode=personal")
	s.Client = s.B.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) { s.Events <- ev }})
	s.Instance = s.WaitInstance(t, old)
	if s.Instance == old {
		t.Fatal("reconnection reused the old instance ID")
	}
	if _, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("old lease after broker restart: %v", err)
	}
	tab, _ = s.Tab(t, s.Pages.URL("/counter"))
	l = s.Claim(t, "s", tab)

	// The browser is killed: the client learns its lease is gone, the broker
	// keeps serving.
	other := s.B.Client(t, testenv.ClientOptions())
	s.Browser.Kill()
	s.WaitRevoked(t, l.ID)
	raw, err := other.Call(context.Background(), "browser.instances", nil)
	if err != nil || string(raw) != "[]" {
		t.Fatalf("instances after the browser died: %s %v", raw, err)
	}
}

func TestE2EBigPageBoundedReadAndQuery(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, target := s.Tab(t, s.Pages.URL("/big"))
	l := s.Claim(t, "s", tab)
	start := time.Now()
	o := s.Observe(t, "s", l.ID)
	took := time.Since(start)
	if !o.Truncated || len(o.Nodes) > browser.MaxControls+browser.MaxRegions {
		t.Fatalf("observation of a 2,000-element page: truncated=%v with %d nodes", o.Truncated, len(o.Nodes))
	}
	t.Logf("bounded observation of /big: %d nodes, %d text fragments in %v", len(o.Nodes), len(o.Text), took)

	raw, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"role": "button", "name": "Target"}})
	if err != nil {
		t.Fatal(err)
	}
	var q browser.Observation
	json.Unmarshal(raw, &q)
	if q.Scope.Kind != "query" || len(q.Nodes) != 1 || q.Nodes[0].Name != "Target" {
		t.Fatalf("query for the last button: %+v", q)
	}
	// The text it changes to lies past the truncated observation: the
	// expectation is still checked, by an exact-name search.
	r := s.Act(t, "s", q, l.ID, map[string]any{"kind": "click", "ref": q.Nodes[0].ID, "expected": map[string]any{"kind": "text", "text": "Target clicked"}})
	if r.Outcome != "succeeded" || r.Postcondition != "passed" {
		t.Fatalf("click on the queried button: %+v", r)
	}
	if n := chromium.Eval[int](t, s.Browser, target, "window.targetClicks"); n != 1 {
		t.Fatalf("target clicked %d times, want 1", n)
	}
	// The same click on the page loaded again, answered with the change
	// since the search, as broker mcp asks: the expected text is found by a
	// search for it, and the answer is the search (its change, or itself
	// when smaller), under 1 KB: the page answered whole was 12.5 KB.
	s.Act(t, "s", q, l.ID, map[string]any{"kind": "navigate", "url": s.Pages.URL("/big")})
	raw, _ = s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"role": "button", "name": "Target"}})
	json.Unmarshal(raw, &q)
	raw, err = s.Call(t, "browser.act", map[string]any{"sessionId": "s", "request": map[string]any{
		"requestId": "since-search", "leaseId": l.ID, "documentEpoch": q.DocumentEpoch, "since": q.Cursor,
		"action": map[string]any{"kind": "click", "ref": q.Nodes[0].ID, "expected": map[string]any{"kind": "text", "text": "Target clicked"}},
	}})
	var since browser.ActionResult
	json.Unmarshal(raw, &since)
	scope := ""
	if since.Change != nil {
		scope = since.Change.Scope.Kind
	} else if since.Observation != nil {
		scope = since.Observation.Scope.Kind // the search whole, when that is smaller than its change
	}
	if err != nil || since.Outcome != "succeeded" || scope != "query" || len(raw) > 1024 {
		t.Fatalf("click since the search (%d B): %s %v", len(raw), raw, err)
	}
	if n := chromium.Eval[int](t, s.Browser, target, "window.targetClicks"); n != 1 {
		t.Fatalf("target clicked %d times on the page loaded again, want 1", n)
	}
	// Text that never appears, on a page too big to read whole: the broker
	// cannot say it is absent, so the click is unverified, not failed.
	raw, _ = s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"role": "button", "name": "Item 1"}})
	json.Unmarshal(raw, &q)
	raw, err = s.Call(t, "browser.act", map[string]any{"sessionId": "s", "request": map[string]any{
		"requestId": "unseen", "leaseId": l.ID, "documentEpoch": q.DocumentEpoch, "timeoutMs": 1500,
		"action": map[string]any{"kind": "click", "ref": q.Nodes[0].ID, "expected": map[string]any{"kind": "text", "text": "No such text anywhere"}},
	}})
	var unseen browser.ActionResult
	json.Unmarshal(raw, &unseen)
	if err != nil || unseen.Outcome != "unknown" || unseen.Postcondition != "unverified" {
		t.Fatalf("expectation beyond a truncated page: %+v %v", unseen, err)
	}
	raw, _ = s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"name": "No such thing"}})
	json.Unmarshal(raw, &q)
	if len(q.Nodes) != 0 {
		t.Fatalf("query for a missing name matched %+v", q.Nodes)
	}
}

// TestE2EBrokerCallSession is the acceptance path: with nothing but
// `broker call`, list tabs, claim one, observe it and click a button that
// changes the page.
func TestE2EBrokerCallSession(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	_, target := s.Tab(t, s.Pages.URL("/counter"))

	cmd := exec.Command(testenv.Binary(t, "broker"), "call", "--runtime-dir", s.B.RuntimeDir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(line string, v any) {
		t.Helper()
		fmt.Fprintln(stdin, line)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "event ") {
				continue
			}
			if strings.HasPrefix(lines.Text(), "error ") {
				t.Fatalf("%s: %s\n%s", line, lines.Text(), stderr.String())
			}
			if err := json.Unmarshal(lines.Bytes(), v); err != nil {
				t.Fatalf("%s: %q: %v", line, lines.Text(), err)
			}
			return
		}
		t.Fatalf("%s: broker call ended\n%s", line, stderr.String())
	}
	var instances []struct{ ID string }
	send("browser.instances", &instances)
	var tabs []browser.TabSummary
	send(fmt.Sprintf(`browser.tabs {"sessionId":"cli","instanceId":%q}`, instances[0].ID), &tabs)
	var l browser.LeaseResult
	send(fmt.Sprintf(`browser.claim {"sessionId":"cli","instanceId":%q,"tab":%q}`, instances[0].ID, tabs[0].ID), &l)
	var o browser.Observation
	send(fmt.Sprintf(`browser.observe {"sessionId":"cli","leaseId":%q}`, l.ID), &o)
	var r browser.ActionResult
	send(fmt.Sprintf(`browser.act {"sessionId":"cli","request":{"requestId":"1","leaseId":%q,"documentEpoch":%q,"action":{"kind":"click","ref":%q,"expected":{"kind":"text","text":"Clicks: 1"}}}}`,
		l.ID, o.DocumentEpoch, refOf(t, o, "button", "Add one")), &r)
	if r.Outcome != "succeeded" {
		t.Fatalf("click through broker call: %+v", r)
	}
	if n := chromium.Eval[int](t, s.Browser, target, "window.clicks"); n != 1 {
		t.Fatalf("page saw %d clicks", n)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("broker call session: %v\n%s", err, stderr.String())
	}
}

// TestE2EPastTenThousandRequests: with transport.ordered-ids.v1 negotiated
// on both connections, more than 10,000 requests pass from a client through
// the broker to the extension without either connection closing (each
// would close at 10,000 remembered IDs otherwise, and every lease with it).
func TestE2EPastTenThousandRequests(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	if !slices.Contains(s.Client.Welcome().Capabilities, wire.CapOrderedIDs) {
		t.Fatal("the broker did not offer ordered IDs")
	}
	tab, _ := s.Tab(t, s.Pages.URL("/counter"))
	l := s.Claim(t, "s", tab)
	const total, window = rpc.DefaultMaxSeenIDs + 100, 16
	var failed atomic.Int64
	for i := 0; i < total; i += window {
		var wg sync.WaitGroup
		for range window {
			wg.Go(func() {
				if _, err := s.Call(t, "browser.tabs", map[string]any{"sessionId": "s", "instanceId": s.Instance}); err != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if failed.Load() > 0 {
			t.Fatalf("a call failed after about %d requests\nbroker:\n%s", i, s.B.Stderr)
		}
	}
	// The same browser instance (its connection never closed) and the lease
	// still stand.
	if _, err := s.Call(t, "browser.validateLease", map[string]any{"sessionId": "s", "leaseId": l.ID}); err != nil {
		t.Fatalf("the lease ended: %v", err)
	}
	raw, err := s.Call(t, "browser.instances", map[string]any{})
	if err != nil || !strings.Contains(string(raw), s.Instance) {
		t.Fatalf("instances %s %v, want %s still connected", raw, err, s.Instance)
	}
}

func TestE2EObservationDeltas(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, target := s.Tab(t, s.Pages.URL("/big"))
	l := s.Claim(t, "s", tab)
	observe := func(params map[string]any) (map[string]json.RawMessage, json.RawMessage) {
		t.Helper()
		params["sessionId"], params["leaseId"] = "s", l.ID
		raw, err := s.Call(t, "browser.observe", params)
		if err != nil {
			t.Fatalf("observe %v: %v", params, err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(raw, &m)
		return m, raw
	}
	base := s.Observe(t, "s", l.ID)

	// The page changes by itself, outside the lease: one button renamed.
	chromium.Eval[any](t, s.Browser, target, "document.getElementById('item-2').textContent = 'Item two'")
	m, raw := observe(map[string]any{"cursor": base.Cursor})
	if string(m["format"]) != `"delta"` {
		t.Fatalf("after one change, a cursor gets %s", raw)
	}
	var d browser.ObservationDelta
	json.Unmarshal(raw, &d)
	nodes, text := d.Apply(base.Nodes, base.Text)
	full := s.Observe(t, "s", l.ID)
	if fmt.Sprint(nodes) != fmt.Sprint(full.Nodes) || fmt.Sprint(text) != fmt.Sprint(full.Text) || !slices.Contains(text, "Item two") {
		t.Fatalf("the delta applied to its baseline gives\n%v %q\nthe page is\n%v %q", nodes, text, full.Nodes, full.Text)
	}
	if d.BaseCursor != base.Cursor || d.Cursor == "" || d.Cursor == base.Cursor {
		t.Errorf("cursors: base %s, delta %s -> %s", base.Cursor, d.BaseCursor, d.Cursor)
	}
	if len(raw)*2 > len(mustJSON(t, full)) {
		t.Errorf("the delta is %d bytes, the full observation %d", len(raw), len(mustJSON(t, full)))
	}

	// An action's observation publishes a cursor too.
	res := s.Act(t, "s", full, l.ID, map[string]any{"kind": "click", "ref": refOf(t, full, "button", "Item 3")})
	if res.Observation == nil {
		t.Fatalf("act: %+v", res)
	}
	if m, raw := observe(map[string]any{"cursor": res.Observation.Cursor}); string(m["resyncRequired"]) != "false" {
		t.Errorf("the cursor of an action's observation: %s", raw)
	}

	// Cursors that cannot give a delta say why.
	otherTab, _ := s.Tab(t, s.Pages.URL("/form"))
	other := s.Claim(t, "s", otherTab)
	foreign := s.Observe(t, "s", other.ID).Cursor
	for _, tc := range []struct {
		params map[string]any
		reason string
	}{
		{map[string]any{"cursor": "c-unknown"}, "cursor-unavailable"},
		{map[string]any{"cursor": foreign}, "cursor-unavailable"}, // another lease's
		{map[string]any{"cursor": full.Cursor, "query": map[string]any{"name": "Target"}}, "scope-changed"},
	} {
		m, raw := observe(tc.params)
		if string(m["format"]) != `"full"` || string(m["resyncReason"]) != `"`+tc.reason+`"` {
			t.Errorf("%v: %s, want full with %s", tc.params, raw, tc.reason)
		}
	}
	s.Browser.Navigate(t, target, s.Pages.URL("/big"))
	if m, raw := observe(map[string]any{"cursor": full.Cursor}); string(m["resyncReason"]) != `"document-changed"` {
		t.Errorf("after a reload: %s, want document-changed", raw)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
