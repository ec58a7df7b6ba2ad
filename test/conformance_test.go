package test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// The client hello and the welcome of browser-protocol-v1.md, section
// "Authenticated hello", verbatim: what a client written for the reference
// broker sends, and what it expects back.
const (
	specFullClientHello = `{
  "bootstrap":1,"versions":[1],"role":"client","token":"<private IPC token>",
  "journalKey":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "requiredCapabilities":["runtime.v1","runtime.personal-tab-scope.v1","observe.query.v1","journal.recovery.v1","runtime.check.v1","runtime.wheel.v1","runtime.radio.v1","runtime.capture-publication.v1","runtime.contenteditable-fill.v1","runtime.append.v1","runtime.element-state.v1","runtime.batch.v1","runtime.page.v1","runtime.frames.v1","observe.frame.v1","runtime.frame-click.v1","observe.frame-query.v1","observe.frame-subtree.v1","observe.frame-page.v1"]
}`
	specFullWelcome = `{
  "version":1,"connectionEpoch":"opaque-new-connection",
  "capabilities":["runtime.v1","runtime.personal-tab-scope.v1","observe.query.v1","journal.recovery.v1","provider.ax-read.v1","provider.ax-find.v1","runtime.check.v1","runtime.wheel.v1","runtime.radio.v1","runtime.capture-publication.v1","runtime.contenteditable-fill.v1","runtime.append.v1","runtime.element-state.v1","runtime.batch.v1","runtime.page.v1","runtime.frames.v1","observe.frame.v1","runtime.frame-click.v1","observe.frame-query.v1","observe.frame-subtree.v1","observe.frame-page.v1"]
}`
)

// specHello returns the spec's client hello with the broker's token in
// place of its placeholder, and a random journalKey: the spec's "aaaa…" is
// a placeholder too, which the broker refuses as a key (PROTOCOL.md).
func specHello(t *testing.T, b *testenv.Broker) map[string]any {
	t.Helper()
	var h map[string]any
	if err := json.Unmarshal([]byte(specFullClientHello), &h); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	h["token"], h["journalKey"] = b.Token(t), hex.EncodeToString(key)
	return h
}

// TestSpecClientHelloWelcomed: a client built from the reference's
// contract connects with the spec's full hello, and the welcome offers
// every capability it requires and every one of the spec's welcome.
func TestSpecClientHelloWelcomed(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	p := b.DialPeer(t)
	h := specHello(t, b)
	r := p.Call("hello", h)
	if !r.OK {
		t.Fatalf("the spec's client hello was refused %s", r.Code)
	}
	w, err := wire.ParseWelcome(r.Value)
	if err != nil {
		t.Fatal(err)
	}
	var required []string
	for _, c := range h["requiredCapabilities"].([]any) {
		required = append(required, c.(string))
	}
	if len(required) != 19 || w.Version != 1 {
		t.Fatalf("%d required capabilities, welcome version %d", len(required), w.Version)
	}
	if m := wire.Missing(required, w.Capabilities); len(m) > 0 {
		t.Fatalf("the welcome lacks %v", m)
	}
	spec, err := wire.ParseWelcome([]byte(specFullWelcome))
	if err != nil {
		t.Fatal(err)
	}
	if m := wire.Missing(spec.Capabilities, w.Capabilities); len(m) > 0 {
		t.Fatalf("the welcome lacks %v of the spec's", m)
	}

	// Then as the reference's adapter goes on: sessionId with every call.
	if r := p.Call("browser.instances", map[string]any{"sessionId": "dsh-session"}); !r.OK || string(r.Value) != "[]" {
		t.Fatalf("browser.instances {sessionId}: %+v", r)
	}
	// The reference acts in a frame by click only: a fill there is
	// INVALID_REQUEST for its clients, while a click goes on to the lease
	// (unknown here: LEASE_REVOKED).
	frameAct := func(p *testenv.Peer, action map[string]any) wire.Code {
		r := p.Call("browser.act", map[string]any{"sessionId": "dsh-session", "request": map[string]any{
			"requestId": "r1", "leaseId": "no-such-lease", "documentEpoch": "C:L", "action": action,
			"frame": map[string]any{"frameId": "frame-1", "documentEpoch": "C:L"}}})
		return r.Code
	}
	fill := map[string]any{"kind": "fill", "ref": "r1", "text": "x"}
	if code := frameAct(p, fill); code != wire.CodeInvalidRequest {
		t.Fatalf("a frame fill from a reference client: %s, want INVALID_REQUEST", code)
	}
	if code := frameAct(p, map[string]any{"kind": "click", "ref": "r1"}); code != wire.CodeLeaseRevoked {
		t.Fatalf("a frame click from a reference client: %s, want LEASE_REVOKED", code)
	}
	// A client that lists broker.frame-input.v1 may fill there.
	ours := b.DialPeer(t)
	h = specHello(t, b)
	h["capabilities"] = []string{browser.CapFrameInputClient}
	if r := ours.Call("hello", h); !r.OK {
		t.Fatalf("hello with broker.frame-input.v1: %s", r.Code)
	}
	if code := frameAct(ours, fill); code != wire.CodeLeaseRevoked {
		t.Fatalf("a frame fill from a client that asks for it: %s, want LEASE_REVOKED", code)
	}
}

// TestSpecPlaceholderKeyRefused: the spec's example journalKey is a
// placeholder; sent as is, the hello is refused (PROTOCOL.md).
func TestSpecPlaceholderKeyRefused(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	h := specHello(t, b)
	var spec map[string]any
	json.Unmarshal([]byte(specFullClientHello), &spec)
	h["journalKey"] = spec["journalKey"]
	if r := b.DialPeer(t).Call("hello", h); r.OK || r.Code != wire.CodePolicyDenied {
		t.Fatalf("the placeholder key: %+v", r)
	}
}

// TestTabQueueFull: 16 operations hold or wait for one tab; the 17th is
// QUEUE_FULL at once, the others complete.
func TestTabQueueFull(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	s := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{}
	standardPage(s, &epoch, &text)
	c := b.Client(t, testenv.ClientOptions())
	l := claimTab(t, c, "s1")
	// Reads now wait until the test lets them go.
	gate, entered := make(chan struct{}), make(chan struct{}, 64)
	s.on("ax.read", func(*wire.Envelope) (any, wire.Code) {
		entered <- struct{}{}
		<-gate
		return map[string]any{"documentEpoch": epoch, "url": pageURL, "title": "Form", "nodes": []any{}}, ""
	})
	var wg sync.WaitGroup
	codes := make(chan error, 16)
	observe := func() error {
		_, err := c.Call(t.Context(), "browser.observe", map[string]any{"sessionId": "s1", "leaseId": l.ID})
		return err
	}
	wg.Go(func() { codes <- observe() })
	<-entered // one holds the tab
	for range 15 {
		wg.Go(func() { codes <- observe() })
	}
	// The queue's depth is not visible from outside: give the 15 a second
	// to reach it (a local socket takes far less).
	time.Sleep(time.Second)
	if err := observe(); rpc.CodeOf(err) != wire.CodeQueueFull {
		t.Fatalf("the 17th operation on the tab: %v, want QUEUE_FULL", err)
	}
	close(gate)
	wg.Wait()
	close(codes)
	for err := range codes {
		if err != nil {
			t.Fatalf("a queued operation: %v", err)
		}
	}
}

// keysIn fails unless every key of v (a JSON object) is one of allowed and
// every one of required is there: the shapes of the reference's type sheet.
func keysIn(t *testing.T, what string, v map[string]any, required []string, optional ...string) {
	t.Helper()
	for _, k := range required {
		if _, ok := v[k]; !ok {
			t.Errorf("%s lacks %s: %v", what, k, v)
		}
	}
	for k := range v {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			t.Errorf("%s has %s, which the reference's %s has not: %v", what, k, what, v)
		}
	}
}

// checkResult holds an action result to the reference's ActionResult and
// FullObservation shapes.
func checkResult(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var r map[string]any
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	keysIn(t, "ActionResult", r, []string{"requestId", "outcome", "dispatch", "postcondition"}, "code", "observation", "scroll", "recovery")
	if o, ok := r["observation"].(map[string]any); ok {
		keysIn(t, "FullObservation", o, []string{"tab", "url", "title", "documentEpoch", "revision", "nodes", "text", "truncated", "scope",
			"format", "cursor", "resyncRequired"}, "resyncReason")
		for _, n := range o["nodes"].([]any) {
			keysIn(t, "NodeRef", n.(map[string]any), []string{"id", "role", "name"}, "disabled", "checked", "editable", "value", "kind")
		}
	}
	if e, ok := r["scroll"].(map[string]any); ok {
		keysIn(t, "ScrollEvidence", e, []string{"target", "requested", "before", "after", "moved"})
		for _, p := range []string{"before", "after"} {
			keysIn(t, "ScrollPosition", e[p].(map[string]any), []string{"x", "y", "scrollWidth", "scrollHeight", "clientWidth", "clientHeight"})
		}
	}
	return r
}

// TestE2EReferenceClient drives forms, navigation, scrolling and
// checkboxes with every expectation kind as a client built from the
// reference's contract does: the spec's full hello on a raw connection,
// sessionId on every call, only the reference's fields, and every answer
// held to the reference's shapes.
func TestE2EReferenceClient(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	_, tgt := s.Tab(t, s.Pages.URL("/fields"))
	p := s.B.DialPeer(t)
	if r := p.Call("hello", specHello(t, s.B)); !r.OK {
		t.Fatalf("hello: %s", r.Code)
	}
	const session = "dsh-reference-session"
	call := func(method string, params map[string]any) json.RawMessage {
		t.Helper()
		params["sessionId"] = session
		r := p.Call(method, params)
		if !r.OK {
			t.Fatalf("%s %v: %s", method, params, r.Code)
		}
		return r.Value
	}
	var instances []map[string]any
	json.Unmarshal(call("browser.instances", map[string]any{}), &instances)
	if len(instances) != 1 {
		t.Fatalf("instances %v", instances)
	}
	keysIn(t, "BrowserInstance", instances[0], []string{"id", "family", "brand", "version", "profileLabel", "capabilities"})
	for _, f := range []string{"setChecked", "wheel", "domScroll", "stateExpectations", "tabScopedNavigation", "sameOriginFrameSubtree"} {
		if instances[0]["capabilities"].(map[string]any)[f] != true {
			t.Errorf("instance capability %s is not true", f)
		}
	}
	var tabs []map[string]any
	json.Unmarshal(call("browser.tabs", map[string]any{"instanceId": s.Instance}), &tabs)
	var tab string
	for _, tb := range tabs {
		keysIn(t, "TabSummary", tb, []string{"id", "instanceId", "url", "title"})
		if tb["url"] == s.Pages.URL("/fields") {
			tab = tb["id"].(string)
		}
	}
	var l browser.LeaseResult
	json.Unmarshal(call("browser.claim", map[string]any{"instanceId": s.Instance, "tab": tab}), &l)
	var o browser.Observation
	observe := func() {
		json.Unmarshal(call("browser.observe", map[string]any{"leaseId": l.ID}), &o)
	}
	observe()
	n := 0
	act := func(action map[string]any) map[string]any {
		t.Helper()
		n++
		r := checkResult(t, call("browser.act", map[string]any{"request": map[string]any{
			"requestId": "ref-" + strconv.Itoa(n), "leaseId": l.ID, "documentEpoch": o.DocumentEpoch, "action": action}}))
		if r["outcome"] != "succeeded" || r["postcondition"] != "passed" {
			t.Fatalf("%v: %v", action, r)
		}
		if obs, ok := r["observation"].(map[string]any); ok {
			raw, _ := json.Marshal(obs)
			json.Unmarshal(raw, &o)
		}
		return r
	}
	act(map[string]any{"kind": "fill", "ref": refOf(t, o, "textbox", "City"), "text": "Oslo", "expected": map[string]any{"kind": "value", "value": "Oslo"}})
	act(map[string]any{"kind": "append", "ref": refOf(t, o, "textbox", "City"), "text": " Sentrum"})
	act(map[string]any{"kind": "press", "ref": refOf(t, o, "textbox", "City"), "key": "Tab", "shift": true,
		"expected": map[string]any{"kind": "state", "ref": refOf(t, o, "button", "Send"), "state": "enabled"}})
	act(map[string]any{"kind": "scroll", "deltaX": 0, "deltaY": 120})
	act(map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Send"), "expected": map[string]any{"kind": "text", "text": "Sent: Oslo Sentrum / r"}})
	act(map[string]any{"kind": "navigate", "url": s.Pages.URL("/controls")})
	act(map[string]any{"kind": "check", "ref": refOf(t, o, "checkbox", "Newsletter"), "checked": true,
		"expected": map[string]any{"kind": "url", "url": s.Pages.URL("/controls")}})
	act(map[string]any{"kind": "wheel", "ref": refOf(t, o, "group", "Size"), "deltaX": 0, "deltaY": 40,
		"expected": map[string]any{"kind": "state", "ref": refOf(t, o, "radio", "Small"), "state": "checked"}})
	act(map[string]any{"kind": "check", "ref": refOf(t, o, "radio", "Large"), "checked": true, "expected": map[string]any{"kind": "text", "text": "Controls"}})
	if !chromium.Eval[bool](t, s.Browser, tgt, "document.getElementById('news').checked && document.getElementById('large').checked") {
		t.Fatal("the page does not show what the actions said")
	}
	// Release: the event browser.lease-revoked {sessionId, leaseId}, and
	// {released:true}.
	id := p.Request("browser.release", map[string]any{"sessionId": session, "leaseId": l.ID})
	var revoked, released map[string]any
	for released == nil {
		env := p.Read()
		switch {
		case env == nil:
			t.Fatal("the connection closed")
		case env.Type == wire.TypeEvent && env.Event == browser.EventLeaseRevoked:
			json.Unmarshal(env.Value, &revoked)
		case env.Type == wire.TypeResponse && env.ID == id:
			json.Unmarshal(env.Value, &released)
		}
	}
	keysIn(t, "browser.lease-revoked", revoked, []string{"sessionId", "leaseId"})
	if released["released"] != true || revoked["leaseId"] != l.ID || revoked["sessionId"] != session {
		t.Fatalf("release: %v, event %v", released, revoked)
	}
}
