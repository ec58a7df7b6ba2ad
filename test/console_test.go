package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// consoleURL is the console page of the extension under test.
var consoleURL = install.ExtensionOrigin(install.PinnedExtensionID) + "console.html"

// openConsole opens the console in a window of its own (so it stays shown
// while agents work in the other window's tabs) and waits until it says it
// is connected.
func openConsole(t *testing.T, s *stack.Stack) target.ID {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.Browser.Ctx, s.Browser.Timeout)
	defer cancel()
	res, err := chromedp.CallBrowser(ctx, target.CreateTarget, target.CreateTargetParams{URL: consoleURL, NewWindow: new(true)})
	if err != nil {
		t.Fatalf("open the console: %v", err)
	}
	waitJS(t, s, res.TargetID, `document.getElementById('connection')?.textContent === 'Connected to the broker.'`, "the console to connect")
	return res.TargetID
}

// waitJS waits until the expression is true in target id.
func waitJS(t *testing.T, s *stack.Stack, id target.ID, expr, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// A window just opened may not have its document yet: an
		// expression that throws there is not true yet.
		ctx, cancel := context.WithTimeout(s.Browser.Ctx, 10*time.Second)
		ok, err := chromium.Evaluate[bool](ctx, s.Browser, id, expr)
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body := chromium.Eval[string](t, s.Browser, id, `document.body?.innerText ?? ''`)
			t.Fatalf("waited 30 s for %s (last: %v)\nthe page says:\n%s\nbroker:\n%s", what, err, body, s.B.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// agent is a client of the broker with its own events.
type agent struct {
	c      *client.Client
	events chan *wire.Envelope
}

func dialAgent(t *testing.T, s *stack.Stack) *agent {
	a := &agent{events: make(chan *wire.Envelope, 64)}
	a.c = s.B.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) { a.events <- ev }})
	return a
}

func (a *agent) call(t *testing.T, method string, params any) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return a.c.Call(ctx, method, params)
}

// agentsShown is the number of agents the console lists.
const agentsShown = `document.querySelectorAll('#agents > li').length`

// answerInConsole waits for the console's only question and clicks button
// ("allow" or "deny") on it.
func answerInConsole(t *testing.T, s *stack.Stack, console target.ID, kind, button string) {
	t.Helper()
	waitJS(t, s, console, `document.querySelectorAll('#questions > li').length === 1 && document.querySelector('#questions h3').textContent.includes(`+jsString(kind)+`)`,
		"a question about "+kind)
	s.Browser.Click(t, console, "#questions > li button."+button)
	waitJS(t, s, console, `document.querySelectorAll('#questions > li').length === 0`, "the question to go")
}

// press sends one key to target id. A key that closes its own window (an
// answer in a question window) is fine.
func press(t *testing.T, s *stack.Stack, id target.ID, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.Browser.TargetCtx(t, id), s.Browser.Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(key)); err != nil && countTargetID(t, s, id) > 0 {
		t.Fatalf("press %q: %v", key, err)
	}
}

func countTargetID(t *testing.T, s *stack.Stack, id target.ID) int {
	n := 0
	for _, info := range s.Browser.Targets(t) {
		if info.TargetID == id {
			n++
		}
	}
	return n
}

// tabTo presses Tab until the element matching selector has the focus: the
// keyboard path to it.
func tabTo(t *testing.T, s *stack.Stack, id target.ID, selector string) {
	t.Helper()
	for range 40 {
		if chromium.Eval[bool](t, s.Browser, id, `document.activeElement === document.querySelector(`+jsString(selector)+`)`) {
			return
		}
		press(t, s, id, kb.Tab)
	}
	t.Fatalf("Tab never reached %s", selector)
}

// TestE2EConsole is the owner's console in real Chromium, as a person uses
// it: it opens from the extension, shows the broker's mode, sees agents
// connect, answers an admission (by keyboard) and claims in place, shows
// each agent's leases with what it may do where and for how long, shows
// each action in the log without the typed text, stops one agent while
// another keeps its lease, and still shows the log after the broker
// restarts. Every control has an accessible name.
func TestE2EConsole(t *testing.T) {
	s := stack.Start(t, "--admission=prompt")
	console := openConsole(t, s)
	waitJS(t, s, console, agentsShown+` === 1`, "the stack's own client listed")
	mode := s.Browser.Text(t, console, "#mode")
	for _, want := range []string{"Restricted", "exact origin", "5 minutes", "Prompt: you admit each program"} {
		if !strings.Contains(mode, want) {
			t.Fatalf("the console's mode does not say %q:\n%s", want, mode)
		}
	}

	// Agent A connects: it is listed, waiting; the owner admits it from the
	// console with the keyboard alone.
	a := dialAgent(t, s)
	waitJS(t, s, console, agentsShown+` === 2`, "agent A listed")
	waitJS(t, s, console, `document.querySelectorAll('#questions > li').length === 1`, "the admission question")
	if q := s.Browser.Text(t, console, "#questions"); !strings.Contains(q, stack.ProcessLabel(os.Getpid())) || !strings.Contains(q, "wants to use this browser") {
		t.Fatalf("the admission question reads:\n%s", q)
	}
	chromium.Eval[bool](t, s.Browser, console, `(document.activeElement?.blur(), true)`)
	tabTo(t, s, console, "#questions > li button.allow")
	press(t, s, console, kb.Enter)
	s.WaitAdmission(t, a.events, "granted")
	waitJS(t, s, console, `[...document.querySelectorAll('#agents > li')].some((li) => li.textContent.includes('admitted by you'))`, "A shown as admitted")
	if n := countTargets(t, s, "/admit.html"); n != 0 {
		t.Fatalf("%d admission windows still open after the answer in the console", n)
	}

	// A claims a tab: the claim is answered in the console too.
	tabA, targetA := s.Tab(t, s.Pages.URL("/form"))
	claimed := make(chan error, 1)
	var leaseA browser.LeaseResult
	go func() {
		raw, err := a.call(t, "browser.claim", map[string]any{"sessionId": "a", "instanceId": s.Instance, "tab": tabA})
		json.Unmarshal(raw, &leaseA)
		claimed <- err
	}()
	answerInConsole(t, s, console, "control a tab", "allow")
	if err := <-claimed; err != nil {
		t.Fatalf("claim allowed in the console: %v", err)
	}
	origin := strings.TrimSuffix(s.Pages.URL("/"), "/")
	waitJS(t, s, console, `document.getElementById('agents').textContent.includes('Tab `+fmt.Sprint(s.Browser.TabIDOf(t, targetA))+` “DSH demo” on `+origin+` (exactly this origin)')`,
		"A's lease in the console")
	agents := s.Browser.Text(t, console, "#agents")
	for _, want := range []string{"read the page, click, type and press keys", "only while it shows " + origin, "left (until"} {
		if !strings.Contains(agents, want) {
			t.Fatalf("the console does not say %q about A's lease:\n%s", want, agents)
		}
	}

	// A acts: each action appears in the log, the typed text only as its
	// length.
	const secret = "hunter2-secret"
	o := observeAs(t, a, "a", leaseA.ID)
	actAs(t, a, "a", leaseA.ID, o, map[string]any{"kind": "fill", "ref": refOf(t, o, "textbox", "Your name"), "text": secret})
	actAs(t, a, "a", leaseA.ID, o, map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Greet"),
		"expected": map[string]any{"kind": "text", "text": "Hello, " + secret + "!"}})
	waitJS(t, s, console, `document.getElementById('log-rows').textContent.includes('fill textbox “Your name” with `+fmt.Sprint(len(secret))+` characters')`, "the fill in the log")
	waitJS(t, s, console, `document.getElementById('log-rows').textContent.includes('click button “Greet”done, and the expected result appeared')`, "the click in the log")
	if body := chromium.Eval[string](t, s.Browser, console, `document.body.innerText`); strings.Contains(body, secret) {
		t.Fatalf("the console shows the typed text:\n%s", body)
	}

	// Agent B: admitted and allowed in the console, by clicks.
	b := dialAgent(t, s)
	answerInConsole(t, s, console, "connect", "allow")
	s.WaitAdmission(t, b.events, "granted")
	tabB, _ := s.Tab(t, s.Pages.URL("/counter"))
	var leaseB browser.LeaseResult
	go func() {
		raw, err := b.call(t, "browser.claim", map[string]any{"sessionId": "b", "instanceId": s.Instance, "tab": tabB})
		json.Unmarshal(raw, &leaseB)
		claimed <- err
	}()
	answerInConsole(t, s, console, "control a tab", "allow")
	if err := <-claimed; err != nil {
		t.Fatalf("B's claim: %v", err)
	}

	// Stop A in the console: A is told, B keeps its lease.
	numberA := fmt.Sprint(s.Browser.TabIDOf(t, targetA))
	chromium.Eval[bool](t, s.Browser, console, `(() => {
		const li = [...document.querySelectorAll('#agents > li')].find((li) => li.textContent.includes('Tab `+numberA+` '));
		li.querySelector('button.stop').dataset.testStop = '1';
		return true;
	})()`)
	if name := chromium.Eval[string](t, s.Browser, console, `document.querySelector('[data-test-stop]').getAttribute('aria-label')`); !strings.HasPrefix(name, "Stop "+stack.ProcessLabel(os.Getpid())+", connection #") {
		t.Fatalf("the Stop button is named %q", name)
	}
	s.Browser.Click(t, console, "[data-test-stop]")
	waitRevoked(t, a.events, leaseA.ID)
	if _, err := a.call(t, "browser.observe", map[string]any{"sessionId": "a", "leaseId": leaseA.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("A's lease after Stop: %v", err)
	}
	if _, err := b.call(t, "browser.validateLease", map[string]any{"sessionId": "b", "leaseId": leaseB.ID}); err != nil {
		t.Fatalf("B lost its lease when A was stopped: %v", err)
	}
	waitJS(t, s, console, `!document.getElementById('agents').textContent.includes('Tab `+numberA+` ')`, "A's lease gone from the console")

	// Every control has an accessible name (the browser's own computation).
	assertNamedControls(t, s, console)

	// The log survives a broker restart: the file holds it, the console
	// shows it again once the extension reconnects, `broker log` too.
	s.B.Stop(t)
	waitJS(t, s, console, `document.getElementById('connection').textContent.startsWith('Not connected')`, "the console to see the broker go")
	s.B.Start(t, "--admission=prompt")
	waitJS(t, s, console, `document.getElementById('connection')?.textContent === 'Connected to the broker.'`, "the console to reconnect")
	waitJS(t, s, console, `document.getElementById('log-rows').textContent.includes('fill textbox “Your name” with `+fmt.Sprint(len(secret))+` characters')`, "the log after the restart")
	out, _, code := testenv.Run(t, nil, "log", "--state-dir", s.B.StateDir)
	if code != 0 || !strings.Contains(out, `fill textbox "Your name" with 14 characters`) || strings.Contains(out, secret) {
		t.Fatalf("broker log after the restart (exit %d):\n%s", code, out)
	}
	data, err := os.ReadFile(filepath.Join(s.B.StateDir, activity.FileName))
	if err != nil || strings.Contains(string(data), secret) || strings.Contains(string(data), "Hello,") {
		t.Fatalf("the activity log file holds page content or the typed text (%v):\n%s", err, data)
	}
}

// TestE2EApprovalWindow: the claim window says what the agent may do, for
// how long and how to take it back; it is an extension window; Deny has
// the focus, so Enter denies.
func TestE2EApprovalWindow(t *testing.T) {
	s := stack.Start(t)
	tab, _ := s.Tab(t, s.Pages.URL("/form"))
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(t, "browser.claim", map[string]any{"sessionId": "s", "instanceId": s.Instance, "tab": tab})
		done <- err
	}()
	win := s.Browser.WaitTarget(t, func(i *target.Info) bool {
		return i.Type == "page" && strings.HasPrefix(i.URL, install.ExtensionOrigin(install.PinnedExtensionID)+"approve.html")
	}, 30*time.Second)
	waitJS(t, s, win.TargetID, `!document.getElementById('ask').hidden`, "the question shown")
	text := s.Browser.Text(t, win.TargetID, "body")
	origin := strings.TrimSuffix(s.Pages.URL("/"), "/")
	for _, want := range []string{"DSH Browser Broker", "not to a web page", stack.ProcessLabel(os.Getpid()), "DSH demo", origin,
		"click, type and press keys", "only while it shows " + origin, "Up to 5 minutes", "Stop", "close the tab", "leave the site"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the approval window does not say %q:\n%s", want, text)
		}
	}
	if title := chromium.Eval[string](t, s.Browser, win.TargetID, `document.title`); !strings.Contains(title, "DSH Browser Broker") {
		t.Fatalf("window title %q", title)
	}
	if f := chromium.Eval[string](t, s.Browser, win.TargetID, `document.activeElement.id`); f != "deny" {
		t.Fatalf("the focus is on %q, want deny", f)
	}
	assertNamedControls(t, s, win.TargetID)
	press(t, s, win.TargetID, kb.Enter)
	if err := <-done; !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
		t.Fatalf("Enter in the approval window: claim %v, want POLICY_DENIED", err)
	}
}

// assertNamedControls checks, in the browser's accessibility tree, that
// every button and select of the page has a name.
func assertNamedControls(t *testing.T, s *stack.Stack, id target.ID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.Browser.TargetCtx(t, id), s.Browser.Timeout)
	defer cancel()
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("the accessibility tree: %v", err)
	}
	tree := res.Nodes
	controls := 0
	for _, n := range tree {
		if n.Ignored || n.Role == nil {
			continue
		}
		role := string(n.Role.Value)
		if role != `"button"` && role != `"combobox"` {
			continue
		}
		controls++
		if n.Name == nil || strings.Trim(string(n.Name.Value), `"`) == "" {
			t.Fatalf("a %s without an accessible name: %+v", role, n)
		}
	}
	if controls == 0 {
		t.Fatal("no control found in the accessibility tree")
	}
}

func countTargets(t *testing.T, s *stack.Stack, page string) int {
	n := 0
	for _, info := range s.Browser.Targets(t) {
		if strings.Contains(info.URL, install.PinnedExtensionID+page) {
			n++
		}
	}
	return n
}

func waitRevoked(t *testing.T, events chan *wire.Envelope, leaseID string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Event == browser.EventLeaseRevoked && strings.Contains(string(ev.Value), leaseID) {
				return
			}
		case <-timeout:
			t.Fatalf("no browser.lease-revoked for %s", leaseID)
		}
	}
}

func observeAs(t *testing.T, a *agent, session, leaseID string) browser.Observation {
	t.Helper()
	raw, err := a.call(t, "browser.observe", map[string]any{"sessionId": session, "leaseId": leaseID})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	var o browser.Observation
	json.Unmarshal(raw, &o)
	return o
}

func actAs(t *testing.T, a *agent, session, leaseID string, o browser.Observation, action map[string]any) browser.ActionResult {
	t.Helper()
	raw, err := a.call(t, "browser.act", map[string]any{"sessionId": session, "request": map[string]any{
		"requestId": fmt.Sprintf("r-%d", time.Now().UnixNano()), "leaseId": leaseID, "documentEpoch": o.DocumentEpoch, "action": action}})
	if err != nil {
		t.Fatalf("act %v: %v", action, err)
	}
	var r browser.ActionResult
	json.Unmarshal(raw, &r)
	return r
}
