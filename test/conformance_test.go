package test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
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
