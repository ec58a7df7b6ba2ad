package test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/internal/chromium"
	"github.com/dsh-browser/broker/internal/testenv"
	"github.com/dsh-browser/broker/internal/testpages"
	"github.com/dsh-browser/broker/wire"
)

// stack is the whole product on one machine: the broker, real Chromium with
// the unpacked extension, the installed native host, pages on localhost and
// one client.
type stack struct {
	b        *testenv.Broker
	br       *chromium.Browser
	pages    *testpages.Server
	c        *client.Client
	events   chan *wire.Envelope
	instance string
}

func extensionDir(t *testing.T) string {
	dir, err := filepath.Abs("../extension")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func startStack(t *testing.T, brokerArgs ...string) *stack {
	t.Helper()
	chromium.Require(t)
	s := &stack{b: testenv.StartBroker(t, brokerArgs...), pages: testpages.Serve(t), events: make(chan *wire.Envelope, 64)}
	home := testenv.ShortTempDir(t)
	manifestDir := filepath.Join(home, "manifests")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	if out, errOut, code := testenv.Run(t, env, "install", "--browser", "chromium", "--no-service", "--manifest-dir", manifestDir,
		"--runtime-dir", s.b.RuntimeDir, "--nativehost", testenv.Binary(t, "nativehost")); code != 0 {
		t.Fatalf("install: %s%s", out, errOut)
	}
	manifest, err := os.ReadFile(filepath.Join(manifestDir, install.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	s.br = chromium.Launch(t, chromium.Options{
		ExtensionDir: extensionDir(t),
		NativeHosts:  map[string][]byte{install.ManifestName: manifest},
	})
	s.c = s.b.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) { s.events <- ev }})
	s.instance = s.waitInstance(t, "")
	return s
}

// waitInstance waits for a connected browser instance other than not.
func (s *stack) waitInstance(t *testing.T, not string) string {
	t.Helper()
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for id == "" {
		raw, err := s.c.Call(context.Background(), "browser.instances", nil)
		if err != nil {
			t.Fatal(err)
		}
		var list []struct{ ID string }
		json.Unmarshal(raw, &list)
		for _, in := range list {
			if in.ID != not {
				id = in.ID
			}
		}
		if id == "" {
			if time.Now().After(deadline) {
				t.Fatalf("the extension never connected\nbroker:\n%s\nbrowser:\n%s", s.b.Stderr, s.br.StderrTail(40))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return id
}

// tab opens url and returns the tab handle the broker uses for it.
func (s *stack) tab(t *testing.T, url string) (string, target.ID) {
	t.Helper()
	id := s.br.OpenTab(t, url)
	return fmt.Sprintf("%s:%d", s.instance, s.br.TabIDOf(t, id)), id
}

func (s *stack) call(t *testing.T, method string, params any) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return s.c.Call(ctx, method, params)
}

func (s *stack) claim(t *testing.T, session, tab string) browser.LeaseResult {
	t.Helper()
	raw, err := s.call(t, "browser.claim", map[string]any{"sessionId": session, "instanceId": s.instance, "tab": tab})
	if err != nil {
		t.Fatalf("claim: %v\nbroker:\n%s", err, s.b.Stderr)
	}
	var l browser.LeaseResult
	json.Unmarshal(raw, &l)
	return l
}

func (s *stack) observe(t *testing.T, session, leaseID string) browser.Observation {
	t.Helper()
	raw, err := s.call(t, "browser.observe", map[string]any{"sessionId": session, "leaseId": leaseID})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	var o browser.Observation
	json.Unmarshal(raw, &o)
	return o
}

var requestSeq int

func (s *stack) act(t *testing.T, session string, o browser.Observation, leaseID string, action map[string]any) browser.ActionResult {
	t.Helper()
	requestSeq++
	raw, err := s.call(t, "browser.act", map[string]any{"sessionId": session, "request": map[string]any{
		"requestId": fmt.Sprintf("req-%d-%d", time.Now().UnixNano(), requestSeq), "leaseId": leaseID,
		"documentEpoch": o.DocumentEpoch, "action": action,
	}})
	if err != nil {
		t.Fatalf("act %v: %v", action, err)
	}
	var r browser.ActionResult
	json.Unmarshal(raw, &r)
	return r
}

// approve waits for the extension's approval window and clicks a button.
func (s *stack) approve(t *testing.T, button string) *target.Info {
	t.Helper()
	win := s.br.WaitTarget(t, func(i *target.Info) bool {
		return i.Type == "page" && strings.Contains(i.URL, install.PinnedExtensionID+"/approve.html")
	}, 30*time.Second)
	s.br.Click(t, win.TargetID, "#"+button)
	return win
}

func (s *stack) waitRevoked(t *testing.T, leaseID string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-s.events:
			if ev.Event == "browser.lease-revoked" && strings.Contains(string(ev.Value), leaseID) {
				return
			}
		case <-timeout:
			t.Fatalf("no browser.lease-revoked for %s\nbroker:\n%s", leaseID, s.b.Stderr)
		}
	}
}

func TestE2EPersonalLoop(t *testing.T) {
	t.Parallel()
	s := startStack(t, "--access-mode=personal")
	if !strings.Contains(strings.Join(s.c.Welcome().Capabilities, ","), wire.CapPersonalMode) {
		t.Fatal("personal broker did not offer broker.personal-mode.v1")
	}
	tab, target := s.tab(t, s.pages.URL("/form"))
	raw, err := s.call(t, "browser.tabs", map[string]any{"sessionId": "s", "instanceId": s.instance})
	if err != nil || !strings.Contains(string(raw), tab) {
		t.Fatalf("browser.tabs: %s %v", raw, err)
	}
	if strings.Contains(string(raw), "chrome://") || strings.Contains(string(raw), "chrome-extension://") {
		t.Fatalf("non-HTTP(S) tabs listed: %s", raw)
	}
	l := s.claim(t, "s", tab)
	if l.Scope != "tab" {
		t.Fatalf("personal claim scope %q, want tab", l.Scope)
	}
	o := s.observe(t, "s", l.ID)
	if !strings.Contains(strings.Join(o.Text, " "), "DSH demo") {
		t.Fatalf("observation text %q", o.Text)
	}
	fill := s.act(t, "s", o, l.ID, map[string]any{"kind": "fill", "ref": refOf(t, o, "textbox", "Your name"), "text": "Ada",
		"expected": map[string]any{"kind": "text", "text": "Ada"}})
	if fill.Dispatch == "notDispatched" {
		t.Fatalf("fill: %+v", fill)
	}
	if v := chromium.Eval[string](t, s.br, target, "document.querySelector('input').value"); v != "Ada" {
		t.Fatalf("input value %q after fill", v)
	}
	click := s.act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Greet"),
		"expected": map[string]any{"kind": "text", "text": "Hello, Ada!"}})
	if click.Outcome != "succeeded" || click.Postcondition != "passed" {
		t.Fatalf("click: %+v", click)
	}
	if _, err := s.call(t, "browser.release", map[string]any{"sessionId": "s", "leaseId": l.ID}); err != nil {
		t.Fatal(err)
	}
}

func TestE2EPressTypeAppend(t *testing.T) {
	t.Parallel()
	s := startStack(t, "--access-mode=personal")
	tab, target := s.tab(t, s.pages.URL("/keys"))
	l := s.claim(t, "s", tab)
	o := s.observe(t, "s", l.ID)
	var box string
	for _, n := range o.Nodes {
		if n.Role == "textbox" && box == "" {
			box = n.ID
		}
	}
	if box == "" {
		t.Fatalf("no text box in %+v", o.Nodes)
	}
	s.act(t, "s", o, l.ID, map[string]any{"kind": "type", "ref": box, "text": "ab"})
	s.act(t, "s", o, l.ID, map[string]any{"kind": "append", "ref": box, "text": "cd"})
	if v := chromium.Eval[string](t, s.br, target, "document.activeElement.value"); v != "abcd" {
		t.Fatalf("value after type+append: %q", v)
	}
	r := s.act(t, "s", o, l.ID, map[string]any{"kind": "press", "ref": box, "key": "Enter", "expected": map[string]any{"kind": "text", "text": "Submitted"}})
	if r.Outcome != "succeeded" {
		t.Fatalf("press Enter: %+v\nkeys: %v", r, chromium.Eval[any](t, s.br, target, "window.keys"))
	}
}

func TestE2ERestrictedApproval(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	tab, _ := s.tab(t, s.pages.URL("/counter"))

	// Deny: nothing is granted.
	errc := make(chan error, 1)
	go func() {
		_, err := s.call(t, "browser.claim", map[string]any{"sessionId": "s", "instanceId": s.instance, "tab": tab})
		errc <- err
	}()
	win := s.approve(t, "deny")
	_ = win
	if err := <-errc; !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
		t.Fatalf("denied claim: %v", err)
	}

	// Allow: an exact-origin lease, and a click that changes the page.
	done := make(chan browser.LeaseResult, 1)
	go func() { done <- s.claim(t, "s", tab) }()
	s.approve(t, "allow")
	l := <-done
	if l.Scope != "origin" || l.Origin != s.pages.Origin() {
		t.Fatalf("restricted lease %+v, want origin %s", l, s.pages.Origin())
	}
	o := s.observe(t, "s", l.ID)
	r := s.act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Add one"),
		"expected": map[string]any{"kind": "text", "text": "Clicks: 1"}})
	if r.Outcome != "succeeded" {
		t.Fatalf("click: %+v", r)
	}
}

func TestE2EStaleRefAndOcclusion(t *testing.T) {
	t.Parallel()
	s := startStack(t, "--access-mode=personal")
	tab, target := s.tab(t, s.pages.URL("/occluded"))
	l := s.claim(t, "s", tab)
	o := s.observe(t, "s", l.ID)
	r := s.act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Hidden target")})
	if r.Code != wire.CodeNotActionable || r.Dispatch != "notDispatched" {
		t.Fatalf("occluded click: %+v", r)
	}
	if n := chromium.Eval[int](t, s.br, target, "window.overlayClicks + window.hiddenClicks"); n != 0 {
		t.Fatalf("occluded click reached the page %d times", n)
	}
	visible := refOf(t, o, "button", "Visible")
	s.br.Navigate(t, target, s.pages.URL("/occluded")) // a new document: the old refs are stale
	stale := s.act(t, "s", o, l.ID, map[string]any{"kind": "click", "ref": visible})
	if stale.Code != wire.CodeStaleTarget || stale.Dispatch != "notDispatched" {
		t.Fatalf("stale ref: %+v", stale)
	}
	if n := chromium.Eval[int](t, s.br, target, "window.visibleClicks"); n != 0 {
		t.Fatalf("stale click dispatched %d times", n)
	}
}

func TestE2ECrossOriginEndsRestrictedLease(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	tab, target := s.tab(t, s.pages.URL("/nav"))
	done := make(chan browser.LeaseResult, 1)
	go func() { done <- s.claim(t, "s", tab) }()
	s.approve(t, "allow")
	l := <-done
	s.br.Navigate(t, target, s.pages.Other().URL("/form"))
	s.waitRevoked(t, l.ID)
	if _, err := s.call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("observe after leaving the origin: %v", err)
	}
}

func TestE2EStop(t *testing.T) {
	t.Parallel()
	s := startStack(t, "--access-mode=personal")
	tab1, _ := s.tab(t, s.pages.URL("/form"))
	tab2, _ := s.tab(t, s.pages.URL("/counter"))
	l1, l2 := s.claim(t, "s", tab1), s.claim(t, "s", tab2)
	popup := s.br.OpenTab(t, "chrome-extension://"+install.PinnedExtensionID+"/popup.html")
	s.br.Click(t, popup, "#stop")
	s.waitRevoked(t, l1.ID)
	s.waitRevoked(t, l2.ID)
	for _, id := range []string{l1.ID, l2.ID} {
		if _, err := s.call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": id}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
			t.Fatalf("lease %s usable after Stop: %v", id, err)
		}
	}
}

func TestE2EBrowserKilledAndBrokerRestarted(t *testing.T) {
	t.Parallel()
	s := startStack(t, "--access-mode=personal")
	tab, _ := s.tab(t, s.pages.URL("/form"))
	l := s.claim(t, "s", tab)

	// The broker restarts: the extension comes back as a new instance, and
	// the old lease is not restored.
	old := s.instance
	s.b.Stop(t)
	s.b.Start(t, "--access-mode=personal")
	s.c = s.b.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) { s.events <- ev }})
	s.instance = s.waitInstance(t, old)
	if s.instance == old {
		t.Fatal("reconnection reused the old instance ID")
	}
	if _, err := s.call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("old lease after broker restart: %v", err)
	}
	tab, _ = s.tab(t, s.pages.URL("/counter"))
	l = s.claim(t, "s", tab)

	// The browser is killed: the client learns its lease is gone, the broker
	// keeps serving.
	other := s.b.Client(t, testenv.ClientOptions())
	s.br.Kill()
	s.waitRevoked(t, l.ID)
	raw, err := other.Call(context.Background(), "browser.instances", nil)
	if err != nil || string(raw) != "[]" {
		t.Fatalf("instances after the browser died: %s %v", raw, err)
	}
}

func TestE2EBigPageBoundedReadAndQuery(t *testing.T) {
	t.Parallel()
	s := startStack(t, "--access-mode=personal")
	tab, target := s.tab(t, s.pages.URL("/big"))
	l := s.claim(t, "s", tab)
	start := time.Now()
	o := s.observe(t, "s", l.ID)
	took := time.Since(start)
	if !o.Truncated || len(o.Nodes) > browser.MaxControls+browser.MaxRegions {
		t.Fatalf("observation of a 2,000-element page: truncated=%v with %d nodes", o.Truncated, len(o.Nodes))
	}
	t.Logf("bounded observation of /big: %d nodes, %d text fragments in %v", len(o.Nodes), len(o.Text), took)

	raw, err := s.call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"role": "button", "name": "Target"}})
	if err != nil {
		t.Fatal(err)
	}
	var q browser.Observation
	json.Unmarshal(raw, &q)
	if q.Scope.Kind != "query" || len(q.Nodes) != 1 || q.Nodes[0].Name != "Target" {
		t.Fatalf("query for the last button: %+v", q)
	}
	r := s.act(t, "s", q, l.ID, map[string]any{"kind": "click", "ref": q.Nodes[0].ID})
	if r.Dispatch == "notDispatched" {
		t.Fatalf("click on the queried button: %+v", r)
	}
	if n := chromium.Eval[int](t, s.br, target, "window.targetClicks"); n != 1 {
		t.Fatalf("target clicked %d times, want 1", n)
	}
	raw, _ = s.call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"name": "No such thing"}})
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
	s := startStack(t, "--access-mode=personal")
	_, target := s.tab(t, s.pages.URL("/counter"))

	cmd := exec.Command(testenv.Binary(t, "broker"), "call", "--runtime-dir", s.b.RuntimeDir)
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
	if n := chromium.Eval[int](t, s.br, target, "window.clicks"); n != 1 {
		t.Fatalf("page saw %d clicks", n)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("broker call session: %v\n%s", err, stderr.String())
	}
}
