package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// eventClient dials a client whose events arrive on the returned channel.
func eventClient(t *testing.T, b *testenv.Broker) (*client.Client, chan *wire.Envelope) {
	t.Helper()
	events := make(chan *wire.Envelope, 16)
	c := b.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) { events <- ev }})
	return c, events
}

// callErr runs one call with a generous bound and returns its error.
func callErr(c *client.Client, method string, params any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.Call(ctx, method, params)
	return err
}

// admissionQuestion reads the provider's next request, which must be
// admission.request, and returns it with its connection.
func admissionQuestion(t *testing.T, prov *testenv.Peer) (*wire.Envelope, broker.AdmissionConnection) {
	t.Helper()
	req := prov.Read()
	if req == nil || req.Type != wire.TypeRequest || req.Method != "admission.request" {
		t.Fatalf("provider got %+v, want admission.request", req)
	}
	var p struct {
		Connection broker.AdmissionConnection `json:"connection"`
	}
	dec := json.NewDecoder(bytes.NewReader(req.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.Connection.ID == "" || p.Connection.Label == "" {
		t.Fatalf("admission.request params %s: %v", req.Params, err)
	}
	return req, p.Connection
}

func answer(t *testing.T, prov *testenv.Peer, id string, value string) {
	t.Helper()
	env, err := wire.Encode(wire.Success(id, json.RawMessage(value)))
	if err != nil {
		t.Fatal(err)
	}
	prov.Send(string(env))
}

func waitAdmissionEvent(t *testing.T, events chan *wire.Envelope, state string) {
	t.Helper()
	select {
	case ev := <-events:
		if ev.Event != "broker.admission" || string(ev.Value) != `{"state":"`+state+`"}` {
			t.Fatalf("event %s %s, want broker.admission {state:%q}", ev.Event, ev.Value, state)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no broker.admission %s event", state)
	}
}

func hasCap(c *client.Client, name string) bool {
	return slices.Contains(c.Welcome().Capabilities, name)
}

// TestAdmissionPromptRawProvider drives owner admission against a raw
// provider standing in for the extension: the question, the capability,
// discovery answered at once, a waiting call let through by Allow, the
// event, a final Deny, and a new connection asked again.
func TestAdmissionPromptRawProvider(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t, "--admission=prompt")
	prov := provider(t, b, "inst") // a provider is never itself asked about
	label := stack.ProcessLabel(os.Getpid())

	a, aEvents := eventClient(t, b)
	if !hasCap(a, wire.CapAdmission) {
		t.Fatalf("welcome %v lacks %s", a.Welcome().Capabilities, wire.CapAdmission)
	}
	q, conn := admissionQuestion(t, prov)
	if conn.Label != label {
		t.Fatalf("asked about %q, want the client's label %q", conn.Label, label)
	}
	for _, m := range []string{"browser.instances", "broker.status"} {
		start := time.Now()
		if err := callErr(a, m, nil); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) || time.Since(start) > 2*time.Second {
			t.Fatalf("%s while pending: %v after %v, want ADMISSION_PENDING at once", m, err, time.Since(start))
		}
	}
	if err := callErr(a, "browser.tabs", map[string]any{"sessionId": "s", "instanceId": "inst"}); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) {
		t.Fatalf("browser.tabs while pending: %v", err)
	}
	// A real call waits for the owner, and runs once allowed.
	done := make(chan error, 1)
	go func() { done <- callErr(a, "browser.releaseSession", map[string]any{"sessionId": "s"}) }()
	select {
	case err := <-done:
		t.Fatalf("a pending connection's call did not wait: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	answer(t, prov, q.ID, `{"allowed":true}`)
	if err := <-done; err != nil {
		t.Fatalf("call after Allow: %v", err)
	}
	waitAdmissionEvent(t, aEvents, "granted")
	if err := callErr(a, "browser.instances", nil); err != nil {
		t.Fatalf("discovery after Allow: %v", err)
	}

	// Deny is final for that connection, whatever the method.
	d, dEvents := eventClient(t, b)
	q, conn2 := admissionQuestion(t, prov)
	if conn2.ID == conn.ID || conn2.Label != label {
		t.Fatalf("second connection asked as %+v, first was %+v", conn2, conn)
	}
	answer(t, prov, q.ID, `{"allowed":false}`)
	waitAdmissionEvent(t, dEvents, "denied")
	for _, m := range []string{"browser.instances", "broker.status", "browser.releaseSession", "browser.observe", "no.such.method"} {
		start := time.Now()
		if err := callErr(d, m, map[string]any{"sessionId": "s"}); !errors.Is(err, wire.Err(wire.CodeAdmissionDenied)) || time.Since(start) > 2*time.Second {
			t.Fatalf("%s after Deny: %v after %v, want ADMISSION_DENIED at once", m, err, time.Since(start))
		}
	}

	// The same label on a new connection inherits nothing: it is asked again.
	e, _ := eventClient(t, b)
	_, conn3 := admissionQuestion(t, prov)
	if conn3.Label != label || conn3.ID == conn2.ID {
		t.Fatalf("third connection asked as %+v", conn3)
	}
	if err := callErr(e, "browser.instances", nil); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) {
		t.Fatalf("new connection with a denied label: %v, want ADMISSION_PENDING", err)
	}
	// broker.status (from the admitted client) lists it as pending.
	raw, err := a.Call(context.Background(), "broker.status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st broker.Status
	json.Unmarshal(raw, &st)
	if st.Admission != "prompt" || len(st.Pending) != 1 || st.Pending[0].Label != label || !st.Pending[0].Asking {
		t.Fatalf("status admission %q pending %+v, want the third connection", st.Admission, st.Pending)
	}
	// It leaves: its question is withdrawn.
	e.Close()
	if env := prov.Read(); env == nil || env.Type != wire.TypeCancel {
		t.Fatalf("provider got %+v, want the question cancelled", env)
	}
}

// TestAdmissionUnansweredStaysPending: a question the provider does not
// answer (an extension without admission.request answers INVALID_REQUEST or
// UNSUPPORTED_CAPABILITY) leaves the connection pending, and its next
// request asks again; a call waits 25 s for an answer, then gets
// ADMISSION_PENDING.
func TestAdmissionUnansweredStaysPending(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t, "--admission=prompt")
	c := b.Client(t, testenv.ClientOptions()) // no browser yet: the question waits for one
	if err := callErr(c, "browser.instances", nil); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) {
		t.Fatalf("discovery with no browser: %v", err)
	}
	prov := provider(t, b, "inst")
	q, _ := admissionQuestion(t, prov)
	fail := func(id string, code wire.Code) {
		env, _ := wire.Encode(wire.Failure(id, code))
		prov.Send(string(env))
	}
	poke := func() {
		if err := callErr(c, "browser.instances", nil); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) {
			t.Fatalf("discovery while unanswered: %v, want ADMISSION_PENDING", err)
		}
	}
	fail(q.ID, wire.CodeInvalidRequest)
	q = nextQuestion(t, prov, poke)
	fail(q.ID, wire.CodeUnsupportedCapability)
	q = nextQuestion(t, prov, poke)

	// The question stays with the provider: a call waits for it, then gives up.
	start := time.Now()
	err := callErr(c, "browser.releaseSession", map[string]any{"sessionId": "s"})
	if took := time.Since(start); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) || took < broker.AdmissionWait-time.Second || took > broker.AdmissionWait+5*time.Second {
		t.Fatalf("unanswered: %v after %v, want ADMISSION_PENDING after %v", err, took, broker.AdmissionWait)
	}
	answer(t, prov, q.ID, `{"allowed":true}`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := callErr(c, "browser.instances", nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a late Allow: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nextQuestion pokes the broker until the provider receives the next
// admission.request.
func nextQuestion(t *testing.T, prov *testenv.Peer, poke func()) *wire.Envelope {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		poke()
		prov.Conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		data, err := prov.ReadFrame()
		if err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				continue
			}
			t.Fatalf("provider read: %v", err)
		}
		env, err := wire.ParseEnvelope(data)
		if err != nil || env.Type != wire.TypeRequest || env.Method != "admission.request" {
			t.Fatalf("provider got %s, want admission.request", data)
		}
		return env
	}
	t.Fatal("the broker never asked again")
	return nil
}

// TestAdmissionOpenByDefault: without the flag a client with the token is
// admitted, no provider is asked, and the capability is not offered.
func TestAdmissionOpenByDefault(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	prov := provider(t, b, "inst")
	c := b.Client(t, testenv.ClientOptions())
	if hasCap(c, wire.CapAdmission) {
		t.Fatalf("an open broker offered %s", wire.CapAdmission)
	}
	raw, err := c.Call(context.Background(), "broker.status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st broker.Status
	json.Unmarshal(raw, &st)
	if st.Admission != "open" || len(st.Pending) != 0 {
		t.Fatalf("status admission %q pending %+v", st.Admission, st.Pending)
	}
	prov.Conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := prov.ReadFrame(); err == nil {
		t.Fatal("an open broker sent the provider something (an admission question?)")
	}
	if _, _, code := testenv.Run(t, nil, "serve", "--runtime-dir", testenv.ShortTempDir(t), "--admission=maybe"); code == 0 {
		t.Fatal("serve accepted --admission=maybe")
	}
}

// TestE2EAdmissionPrompt is owner admission with the real extension: a new
// client is pending, its claim waits until the owner clicks Allow in the
// admission window; another is denied for good; a third connection with the
// same label is asked again.
func TestE2EAdmissionPrompt(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal", "--admission=prompt") // admits its own client
	if !hasCap(s.Client, wire.CapAdmission) {
		t.Fatalf("welcome %v lacks %s", s.Client.Welcome().Capabilities, wire.CapAdmission)
	}
	label := stack.ProcessLabel(os.Getpid())
	tab, _ := s.Tab(t, s.Pages.URL("/form"))

	// A: pending; discovery answers at once.
	a, aEvents := eventClient(t, s.B)
	start := time.Now()
	if err := callErr(a, "browser.instances", nil); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) || time.Since(start) > 2*time.Second {
		t.Fatalf("browser.instances while pending: %v after %v", err, time.Since(start))
	}

	// `broker status` is a client too: the owner admits it, and it lists A.
	cli := exec.Command(testenv.Binary(t, "broker"), "status", "--runtime-dir", s.B.RuntimeDir)
	var out, errOut bytes.Buffer
	cli.Stdout, cli.Stderr = &out, &errOut
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	s.Admit(t, stack.ProcessLabel(cli.Process.Pid), "allow")
	if err := cli.Wait(); err != nil {
		t.Fatalf("broker status: %v\n%s%s", err, out.String(), errOut.String())
	}
	t.Logf("broker status, admitted by the owner:\n%s%s", errOut.String(), out.String())
	if !strings.Contains(out.String(), "admission") || !strings.Contains(out.String(), "PENDING") || !strings.Contains(out.String(), label) {
		t.Fatalf("broker status does not show the pending connection:\n%s", out.String())
	}

	// `broker call` waits to be admitted the same way, then answers.
	call := exec.Command(testenv.Binary(t, "broker"), "call", "--runtime-dir", s.B.RuntimeDir, "browser.instances")
	var callOut, callErrOut bytes.Buffer
	call.Stdout, call.Stderr = &callOut, &callErrOut
	if err := call.Start(); err != nil {
		t.Fatal(err)
	}
	s.Admit(t, stack.ProcessLabel(call.Process.Pid), "allow")
	if err := call.Wait(); err != nil || !strings.Contains(callOut.String(), s.Instance) || !strings.Contains(callErrOut.String(), "click Allow") {
		t.Fatalf("broker call under admission: %v\n%s%s", err, callOut.String(), callErrOut.String())
	}

	// A's claim waits for the owner; Allow lets it through.
	type claimed struct {
		raw json.RawMessage
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		raw, err := a.Call(ctx, "browser.claim", map[string]any{"sessionId": "a", "instanceId": s.Instance, "tab": tab})
		done <- claimed{raw, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("claim of a pending connection did not wait: %s %v", r.raw, r.err)
	case <-time.After(500 * time.Millisecond):
	}
	win := s.Admit(t, label, "allow")
	r := <-done
	if r.err != nil {
		t.Fatalf("claim after Allow: %v\nbroker:\n%s", r.err, s.B.Stderr)
	}
	var l browser.LeaseResult
	json.Unmarshal(r.raw, &l)
	if l.Scope != "tab" || l.Tab != tab {
		t.Fatalf("lease %+v", l)
	}
	s.WaitAdmission(t, aEvents, "granted")
	waitClosed(t, s, win.TargetID)
	if err := callErr(a, "browser.release", map[string]any{"sessionId": "a", "leaseId": l.ID}); err != nil {
		t.Fatal(err)
	}

	// B: Deny is final for the connection.
	b, bEvents := eventClient(t, s.B)
	bDone := make(chan error, 1)
	go func() {
		bDone <- callErr(b, "browser.claim", map[string]any{"sessionId": "b", "instanceId": s.Instance, "tab": tab})
	}()
	s.Admit(t, label, "deny")
	if err := <-bDone; !errors.Is(err, wire.Err(wire.CodeAdmissionDenied)) {
		t.Fatalf("claim after Deny: %v", err)
	}
	s.WaitAdmission(t, bEvents, "denied")
	for _, m := range []string{"browser.instances", "broker.status", "browser.tabs", "browser.claim"} {
		if err := callErr(b, m, map[string]any{"sessionId": "b", "instanceId": s.Instance, "tab": tab}); !errors.Is(err, wire.Err(wire.CodeAdmissionDenied)) {
			t.Fatalf("%s after Deny: %v", m, err)
		}
	}

	// C: the same label on a new connection is asked again, not denied.
	c, cEvents := eventClient(t, s.B)
	if err := callErr(c, "browser.instances", nil); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) {
		t.Fatalf("a new connection with a denied label: %v, want ADMISSION_PENDING", err)
	}
	s.Admit(t, label, "allow")
	s.WaitAdmission(t, cEvents, "granted")
	if err := callErr(c, "browser.instances", nil); err != nil {
		t.Fatalf("third connection after Allow: %v", err)
	}
}

// TestE2EAdmissionOpenByDefault: without --admission a client with the token
// is admitted at once and no admission window opens.
func TestE2EAdmissionOpenByDefault(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	c := s.B.Client(t, testenv.ClientOptions())
	if hasCap(c, wire.CapAdmission) {
		t.Fatalf("an open broker offered %s", wire.CapAdmission)
	}
	if err := callErr(c, "browser.instances", nil); err != nil {
		t.Fatal(err)
	}
	tab, _ := s.Tab(t, s.Pages.URL("/form"))
	if err := callErr(c, "browser.claim", map[string]any{"sessionId": "c", "instanceId": s.Instance, "tab": tab}); err != nil {
		t.Fatal(err)
	}
	for _, info := range s.Browser.Targets(t) {
		if strings.Contains(info.URL, install.PinnedExtensionID+"/admit.html") {
			t.Fatalf("an admission window opened without --admission=prompt: %s", info.URL)
		}
	}
}

// waitClosed waits until the extension has closed an answered window.
func waitClosed(t *testing.T, s *stack.Stack, id target.ID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		open := false
		for _, info := range s.Browser.Targets(t) {
			open = open || info.TargetID == id
		}
		if !open {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the admission window stayed open after its answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOnlyTheOwnersBrowserIsAsked: a program that merely holds the token
// can register as a provider, but is never put the owner's questions: not
// admission (it could admit its own client or deny everyone else's), not a
// claim approval. Only a provider that connected through nativehost (the
// owner's browser) is asked.
func TestOnlyTheOwnersBrowserIsAsked(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t, "--admission=prompt")
	impostor := b.DialPeer(t)
	if r := impostor.Call("hello", testenv.ProviderHello(b.Token(t), "impostor")); !r.OK {
		t.Fatalf("a token holder may still serve as a provider: %s", r.Code)
	}
	a, aEvents := eventClient(t, b)
	// The impostor hears nothing; the client stays pending.
	impostor.Conn.SetReadDeadline(time.Now().Add(time.Second))
	if data, err := impostor.ReadFrame(); err == nil {
		t.Fatalf("the token holder was sent %s", data)
	}
	if err := callErr(a, "broker.status", nil); !errors.Is(err, wire.Err(wire.CodeAdmissionPending)) {
		t.Fatalf("status with only an impostor: %v, want ADMISSION_PENDING", err)
	}
	// The owner's browser connects: it is asked, and its answer counts.
	owner := provider(t, b, "owner")
	q, _ := admissionQuestion(t, owner)
	answer(t, owner, q.ID, `{"allowed":true}`)
	waitAdmissionEvent(t, aEvents, "granted")
	// A claim in restricted mode is the owner's consent too: refused on the
	// impostor's "browser" without asking it.
	_, err := a.Call(context.Background(), "browser.claim", map[string]any{"sessionId": "s", "instanceId": "impostor", "tab": "impostor:1"})
	if !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
		t.Fatalf("claim on the impostor: %v, want POLICY_DENIED", err)
	}
	impostor.Conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if data, err := impostor.ReadFrame(); err == nil {
		t.Fatalf("the impostor was asked %s", data)
	}
}

// TestAdmissionCodesOnlyForClientsThatKnowThem: a client that did not list
// broker.admission.v1 (a reference client) gets POLICY_DENIED, the nearest
// code of the reference's registry, instead of ADMISSION_PENDING.
func TestAdmissionCodesOnlyForClientsThatKnowThem(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t, "--admission=prompt")
	p := b.DialPeer(t)
	if r := p.Call("hello", testenv.ClientHello(b.Token(t))); !r.OK {
		t.Fatal(r.Code)
	}
	if r := p.Call("browser.instances", map[string]any{}); r.OK || r.Code != wire.CodePolicyDenied {
		t.Fatalf("pending reference client: %+v, want POLICY_DENIED", r)
	}
	q := b.DialPeer(t)
	h := testenv.ClientHello(b.Token(t))
	h["capabilities"] = []string{wire.CapAdmission}
	if r := q.Call("hello", h); !r.OK {
		t.Fatal(r.Code)
	}
	if r := q.Call("browser.instances", map[string]any{}); r.OK || r.Code != wire.CodeAdmissionPending {
		t.Fatalf("pending client that knows admission: %+v, want ADMISSION_PENDING", r)
	}
}
