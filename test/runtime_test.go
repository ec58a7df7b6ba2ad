package test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// scripted is a provider peer answering the broker's commands from a
// script. It stands in for the extension to reach states a real browser is
// hard to put in (a node that moves, a grant that never comes); the same
// flows run against real Chromium in the e2e suite.
type scripted struct {
	t     *testing.T
	peer  *testenv.Peer
	mu    sync.Mutex
	calls []*wire.Envelope
	reply map[string]func(req *wire.Envelope) (any, wire.Code)
}

func startScripted(t *testing.T, b *testenv.Broker, id string) *scripted {
	s := &scripted{t: t, peer: provider(t, b, id), reply: map[string]func(*wire.Envelope) (any, wire.Code){}}
	go s.serve()
	return s
}

func (s *scripted) on(method string, f func(req *wire.Envelope) (any, wire.Code)) {
	s.mu.Lock()
	s.reply[method] = f
	s.mu.Unlock()
}

func (s *scripted) methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, c.Method)
	}
	return out
}

func (s *scripted) event(name string, value any) {
	data, _ := json.Marshal(value)
	env, _ := wire.Encode(wire.Event(name, data))
	s.peer.Send(string(env))
}

// reply1 answers one request; the connection may already be closed by the
// test's cleanup (the broker revokes leases as clients leave), which is fine.
func (s *scripted) reply1(env []byte) {
	frames.Write(s.peer.Conn, env)
}

func (s *scripted) serve() {
	for {
		s.peer.Conn.SetReadDeadline(time.Time{})
		data, err := s.peer.ReadFrame()
		if err != nil {
			return
		}
		req, err := wire.ParseEnvelope(data)
		if err != nil || req.Type != wire.TypeRequest {
			continue
		}
		s.mu.Lock()
		s.calls = append(s.calls, req)
		f := s.reply[req.Method]
		s.mu.Unlock()
		go func() {
			if f == nil {
				env, _ := wire.Encode(wire.Failure(req.ID, wire.CodeUnsupportedCapability))
				s.reply1(env)
				return
			}
			v, code := f(req)
			var env []byte
			if code != "" {
				env, _ = wire.Encode(wire.Failure(req.ID, code))
			} else {
				data, _ := json.Marshal(v)
				env, _ = wire.Encode(wire.Success(req.ID, data))
			}
			s.reply1(env)
		}()
	}
}

const pageURL = "https://app.test/form"

// standardPage scripts a tab with a text box, a button, a region and text.
func standardPage(s *scripted, epoch *string, text *[]string) {
	var mu sync.Mutex
	s.on("tabs.list", func(*wire.Envelope) (any, wire.Code) {
		return []browser.TabSummary{{ID: "inst:1", InstanceID: "inst", URL: pageURL, Title: "Form"}}, ""
	})
	s.on("lease.grant", func(*wire.Envelope) (any, wire.Code) {
		return map[string]any{"granted": true, "documentEpoch": *epoch, "url": pageURL, "title": "Form"}, ""
	})
	s.on("lease.revoke", func(*wire.Envelope) (any, wire.Code) { return map[string]bool{"released": true}, "" })
	s.on("ax.read", func(*wire.Envelope) (any, wire.Code) {
		mu.Lock()
		defer mu.Unlock()
		nodes := []map[string]any{
			{"backendNodeId": 1, "role": "RootWebArea", "name": "Form"},
			{"backendNodeId": 2, "role": "main", "name": "Main area"},
			{"backendNodeId": 3, "role": "textbox", "name": "Your name", "value": "", "props": map[string]any{"editable": "plaintext", "focusable": true}},
			{"backendNodeId": 4, "role": "button", "name": "Greet", "props": map[string]any{"focusable": true}},
			{"backendNodeId": 5, "role": "generic", "name": "", "ignored": true},
		}
		for i, t := range *text {
			nodes = append(nodes, map[string]any{"backendNodeId": 100 + i, "role": "StaticText", "name": t})
		}
		return map[string]any{"documentEpoch": *epoch, "url": pageURL, "title": "Form", "nodes": nodes}, ""
	})
	s.on("cdp", func(req *wire.Envelope) (any, wire.Code) {
		var p struct{ Method string }
		json.Unmarshal(req.Params, &p)
		switch p.Method {
		case "DOM.scrollIntoViewIfNeeded":
			return map[string]any{}, ""
		case "DOM.getContentQuads":
			return map[string]any{"quads": [][]float64{{10, 10, 110, 10, 110, 40, 10, 40}}}, ""
		}
		return nil, wire.CodeUnsupportedCapability
	})
	// dom.read: the text box (3) holds what input.text last put there;
	// every element is visible and enabled.
	value := ""
	s.on("dom.read", func(req *wire.Envelope) (any, wire.Code) {
		var p struct {
			Request struct {
				DocumentEpoch string `json:"documentEpoch"`
				BackendNodeID int    `json:"backendNodeId"`
			} `json:"request"`
		}
		json.Unmarshal(req.Params, &p)
		mu.Lock()
		defer mu.Unlock()
		if p.Request.DocumentEpoch != *epoch {
			return nil, wire.CodeStaleTarget
		}
		facts := map[string]any{"found": true, "connected": true, "sameDocument": true, "disabled": false, "disabledKnown": true,
			"enabledState": true, "visible": true, "maxLength": -1,
			"scroll": map[string]int{"x": 0, "y": 0, "scrollWidth": 100, "scrollHeight": 30, "clientWidth": 100, "clientHeight": 30}}
		if p.Request.BackendNodeID == 3 {
			facts["tag"], facts["type"], facts["editable"], facts["value"] = "input", "text", "input", value
		}
		return facts, ""
	})
	ok := func(*wire.Envelope) (any, wire.Code) { return map[string]bool{"dispatched": true}, "" }
	s.on("input.click", func(req *wire.Envelope) (any, wire.Code) {
		mu.Lock()
		*text = append(*text, "Hello, Ada!")
		mu.Unlock()
		return ok(req)
	})
	s.on("input.text", func(req *wire.Envelope) (any, wire.Code) {
		var p struct {
			Request struct{ Text string } `json:"request"`
		}
		json.Unmarshal(req.Params, &p)
		mu.Lock()
		value = p.Request.Text
		mu.Unlock()
		return ok(req)
	})
	s.on("input.key", ok)
}

func claimTab(t *testing.T, c *client.Client, session string) browser.LeaseResult {
	t.Helper()
	raw, err := c.Call(context.Background(), "browser.claim", map[string]any{"sessionId": session, "instanceId": "inst", "tab": "inst:1"})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	var l browser.LeaseResult
	json.Unmarshal(raw, &l)
	return l
}

func observe(t *testing.T, c *client.Client, session, leaseID string) browser.Observation {
	t.Helper()
	raw, err := c.Call(context.Background(), "browser.observe", map[string]any{"sessionId": session, "leaseId": leaseID})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	var o browser.Observation
	json.Unmarshal(raw, &o)
	return o
}

func refOf(t *testing.T, o browser.Observation, role, name string) string {
	t.Helper()
	for _, n := range o.Nodes {
		if n.Role == role && n.Name == name {
			return n.ID
		}
	}
	t.Fatalf("no %s %q in %+v", role, name, o.Nodes)
	return ""
}

func act(t *testing.T, c *client.Client, session string, req map[string]any) browser.ActionResult {
	t.Helper()
	raw, err := c.Call(context.Background(), "browser.act", map[string]any{"sessionId": session, "request": req})
	if err != nil {
		t.Fatalf("act: %v", err)
	}
	var r browser.ActionResult
	json.Unmarshal(raw, &r)
	return r
}

func TestClaimObserveAct(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	s := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{"DSH demo"}
	standardPage(s, &epoch, &text)
	c := b.Client(t, testenv.ClientOptions())

	l := claimTab(t, c, "s1")
	if l.Scope != "origin" || l.Origin != "https://app.test" || l.Token == "" {
		t.Fatalf("restricted claim: %+v", l)
	}
	o := observe(t, c, "s1", l.ID)
	if o.DocumentEpoch != "F:L1" || len(o.Nodes) != 3 || strings.Join(o.Text, "|") != "DSH demo" {
		t.Fatalf("observation: %+v", o)
	}
	if o.Nodes[0].Kind != "region" || !o.Nodes[1].Editable {
		t.Fatalf("projection: %+v", o.Nodes)
	}
	again := observe(t, c, "s1", l.ID)
	if refOf(t, again, "button", "Greet") != refOf(t, o, "button", "Greet") {
		t.Fatal("refs must be stable for the same element in the same document")
	}

	// A fill is verified by the value it leaves.
	fill := act(t, c, "s1", map[string]any{"requestId": "a1", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "fill", "ref": refOf(t, o, "textbox", "Your name"), "text": "Ada"}})
	if fill.Dispatch != "observed" || fill.Postcondition != "passed" || fill.Outcome != "succeeded" {
		t.Fatalf("fill: %+v", fill)
	}
	click := act(t, c, "s1", map[string]any{"requestId": "a2", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Greet"), "expected": map[string]any{"kind": "text", "text": "Hello,   Ada!"}}})
	if click.Outcome != "succeeded" || click.Postcondition != "passed" || click.Observation == nil {
		t.Fatalf("click: %+v", click)
	}
	var clicks int
	for _, m := range s.methods() {
		if m == "input.click" {
			clicks++
		}
	}
	// The same request again returns the same answer without a second click.
	dup := act(t, c, "s1", map[string]any{"requestId": "a2", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Greet"), "expected": map[string]any{"kind": "text", "text": "Hello,   Ada!"}}})
	if dup.Outcome != "succeeded" {
		t.Fatalf("duplicate: %+v", dup)
	}
	var after int
	for _, m := range s.methods() {
		if m == "input.click" {
			after++
		}
	}
	if clicks != 1 || after != 1 {
		t.Fatalf("clicks dispatched: %d then %d, want exactly 1", clicks, after)
	}
	_, err := c.Call(context.Background(), "browser.act", map[string]any{"sessionId": "s1", "request": map[string]any{
		"requestId": "a2", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch, "action": map[string]any{"kind": "press", "ref": refOf(t, o, "button", "Greet"), "key": "Enter"}}})
	if !errors.Is(err, wire.Err(wire.CodeRequestIDConflict)) {
		t.Fatalf("same requestId, other payload: %v", err)
	}

	// A new document makes old refs stale: nothing is dispatched.
	epoch = "F:L2"
	observe(t, c, "s1", l.ID)
	stale := act(t, c, "s1", map[string]any{"requestId": "a3", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Greet")}})
	if stale.Code != wire.CodeStaleTarget || stale.Dispatch != "notDispatched" || stale.Outcome != "failed" {
		t.Fatalf("stale ref: %+v", stale)
	}
	region := act(t, c, "s1", map[string]any{"requestId": "a4", "leaseId": l.ID, "documentEpoch": "F:L2",
		"action": map[string]any{"kind": "click", "ref": refOf(t, observe(t, c, "s1", l.ID), "main", "Main area")}})
	if region.Code != wire.CodeNotActionable || region.Dispatch != "notDispatched" {
		t.Fatalf("click on a region: %+v", region)
	}
}

func TestActValidation(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	s := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{}
	standardPage(s, &epoch, &text)
	c := b.Client(t, testenv.ClientOptions())
	l := claimTab(t, c, "s1")
	ref := refOf(t, observe(t, c, "s1", l.ID), "button", "Greet")
	base := func(action map[string]any) map[string]any {
		return map[string]any{"requestId": "v", "leaseId": l.ID, "documentEpoch": "F:L1", "action": action}
	}
	long := strings.Repeat("x", browser.MaxActionText+1)
	for name, req := range map[string]map[string]any{
		"unknown kind":       base(map[string]any{"kind": "tap", "ref": ref}),
		"unknown key":        base(map[string]any{"kind": "press", "ref": ref, "key": "F13"}),
		"click with text":    base(map[string]any{"kind": "click", "ref": ref, "text": "x"}),
		"fill without text":  base(map[string]any{"kind": "fill", "ref": ref}),
		"fill over 10,000":   base(map[string]any{"kind": "fill", "ref": ref, "text": long}),
		"unknown action key": base(map[string]any{"kind": "click", "ref": ref, "force": true}),
		"reserved batch id":  {"requestId": "batch:1", "leaseId": l.ID, "documentEpoch": "F:L1", "action": map[string]any{"kind": "click", "ref": ref}},
		"timeout 30001":      {"requestId": "v", "leaseId": l.ID, "documentEpoch": "F:L1", "timeoutMs": 30001, "action": map[string]any{"kind": "click", "ref": ref}},
		"blank expectation":  base(map[string]any{"kind": "click", "ref": ref, "expected": map[string]any{"kind": "text", "text": "  "}}),
	} {
		_, err := c.Call(context.Background(), "browser.act", map[string]any{"sessionId": "s1", "request": req})
		if !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("%s: %v, want INVALID_REQUEST", name, err)
		}
	}
	box := refOf(t, observe(t, c, "s1", l.ID), "textbox", "Your name")
	ok := act(t, c, "s1", map[string]any{"requestId": "ok", "leaseId": l.ID, "documentEpoch": "F:L1", "timeoutMs": 30000,
		"action": map[string]any{"kind": "fill", "ref": box, "text": strings.Repeat("x", browser.MaxActionText)}})
	if ok.Dispatch == "notDispatched" {
		t.Fatalf("limits at their value must pass: %+v", ok)
	}
}

func TestLeaseEndsAndOwnership(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	s := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{}
	standardPage(s, &epoch, &text)
	events := make(chan *wire.Envelope, 8)
	c := b.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) { events <- ev }})
	other := b.Client(t, testenv.ClientOptions())

	l := claimTab(t, c, "s1")
	if _, err := other.Call(context.Background(), "browser.observe", map[string]any{"sessionId": "s1", "leaseId": l.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("another connection with the same session ID used the lease: %v", err)
	}
	if _, err := other.Call(context.Background(), "browser.claim", map[string]any{"sessionId": "x", "instanceId": "inst", "tab": "inst:1"}); !errors.Is(err, wire.Err(wire.CodeLeaseBusy)) {
		t.Fatalf("claim of a leased tab: %v", err)
	}

	// The browser revokes it (Stop): the owner hears of it, the lease is gone.
	s.event("lease.revoked", map[string]string{"leaseId": l.ID})
	select {
	case ev := <-events:
		if ev.Event != "browser.lease-revoked" || !strings.Contains(string(ev.Value), l.ID) || strings.Contains(string(ev.Value), l.Token) {
			t.Fatalf("event %s %s", ev.Event, ev.Value)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no browser.lease-revoked event")
	}
	if _, err := c.Call(context.Background(), "browser.observe", map[string]any{"sessionId": "s1", "leaseId": l.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("revoked lease still usable: %v", err)
	}

	// Release and session release.
	l2 := claimTab(t, c, "s1")
	if raw, err := c.Call(context.Background(), "browser.releaseSession", map[string]any{"sessionId": "s1"}); err != nil || string(raw) != `{"released":true}` {
		t.Fatalf("releaseSession: %s %v", raw, err)
	}
	if _, err := c.Call(context.Background(), "browser.observe", map[string]any{"sessionId": "s1", "leaseId": l2.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("lease survived releaseSession: %v", err)
	}
	waitFor(t, func() bool {
		n := 0
		for _, m := range s.methods() {
			if m == "lease.revoke" {
				n++
			}
		}
		return n == 1 // only for the released lease: the browser ended the first itself
	})

	// The browser goes away: leases end, clients are told, others keep working.
	l3 := claimTab(t, c, "s2")
	for len(events) > 0 {
		<-events
	}
	s.peer.Conn.Close()
	select {
	case ev := <-events:
		if !strings.Contains(string(ev.Value), l3.ID) {
			t.Fatalf("event for the wrong lease: %s", ev.Value)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event when the browser went away")
	}
	if _, err := other.Call(context.Background(), "browser.instances", nil); err != nil {
		t.Fatal(err)
	}
}

func TestClaimDeniedOrCancelled(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	s := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{}
	standardPage(s, &epoch, &text)
	c := b.Client(t, testenv.ClientOptions())
	s.on("lease.grant", func(*wire.Envelope) (any, wire.Code) { return nil, wire.CodePolicyDenied })
	if _, err := c.Call(context.Background(), "browser.claim", map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1"}); !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
		t.Fatalf("denied claim: %v", err)
	}
	// The tab is free again after a denial.
	granted := make(chan struct{})
	s.on("lease.grant", func(*wire.Envelope) (any, wire.Code) { <-granted; return nil, wire.CodePolicyDenied })
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "browser.claim", map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1"})
		errc <- err
	}()
	waitFor(t, func() bool { return strings.Count(strings.Join(s.methods(), ","), "lease.grant") == 2 })
	if _, err := c.Call(context.Background(), "browser.releaseSession", map[string]any{"sessionId": "s"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
			t.Fatalf("pending claim after releaseSession: %v, want LEASE_REVOKED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("releaseSession did not cancel the pending claim")
	}
	close(granted)
	if _, err := c.Call(context.Background(), "browser.claim", map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:9"}); !errors.Is(err, wire.Err(wire.CodeStaleTarget)) {
		t.Fatalf("claim of an unknown tab: %v", err)
	}
}

// TestHalfClosedClient pipelines requests and closes its write side: the
// reads are answered, the claim (which would act) is refused with
// CONNECTION_LOST and never reaches the browser. (A writing request the
// broker has already started before it reads the EOF is cancelled, not
// undone: what was dispatched stays dispatched.)
func TestHalfClosedClient(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	s := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{}
	standardPage(s, &epoch, &text)
	// The broker may start a pipelined request before it reads the EOF that
	// follows it; a slow tab list makes sure the claim is still on its way
	// to the browser when the half-close is seen, so it must stop there.
	s.on("tabs.list", func(*wire.Envelope) (any, wire.Code) {
		time.Sleep(200 * time.Millisecond)
		return []browser.TabSummary{{ID: "inst:1", InstanceID: "inst", URL: pageURL, Title: "Form"}}, ""
	})
	p := b.DialPeer(t)
	if r := p.Call("hello", testenv.ClientHello(b.Token(t))); !r.OK {
		t.Fatal(r.Code)
	}
	ids := map[string]string{
		p.Request("browser.instances", map[string]any{}):                                                    "instances",
		p.Request("browser.tabs", map[string]any{"sessionId": "s", "instanceId": "inst"}):                   "tabs",
		p.Request("browser.claim", map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1"}): "claim",
		p.Request("broker.status", map[string]any{}):                                                        "status",
	}
	p.Conn.(*net.UnixConn).CloseWrite()
	answers := map[string]*wire.Envelope{}
	for env := p.Read(); env != nil; env = p.Read() {
		answers[ids[env.ID]] = env
	}
	for _, name := range []string{"instances", "tabs", "status"} {
		if a := answers[name]; a == nil || !a.OK {
			t.Errorf("%s after half-close: %+v\n%s", name, a, b.Stderr)
		}
	}
	if a := answers["claim"]; a == nil || a.Code != wire.CodeConnectionLost {
		t.Errorf("claim after half-close: %+v, want CONNECTION_LOST", a)
	}
	for _, m := range s.methods() {
		if m == "lease.grant" {
			t.Fatal("a half-closed client's claim reached the browser")
		}
	}
}
