package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// deferHandler defers every request and hands its answer and ctx to the
// test.
type deferHandler struct {
	deferred chan deferred
}

type deferred struct {
	req    *rpc.Request
	ctx    context.Context
	answer func(any, error)
}

func newDeferHandler() *deferHandler {
	return &deferHandler{deferred: make(chan deferred, 100)}
}

func (h *deferHandler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if req.Method == "now" {
		return "now", nil
	}
	answer := req.Defer()
	h.deferred <- deferred{req, ctx, answer}
	return "ignored: the request was deferred", nil
}

func (h *deferHandler) Event(*wire.Envelope) {}

func (h *deferHandler) next(t *testing.T) deferred {
	t.Helper()
	select {
	case d := <-h.deferred:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no request reached the handler")
		return deferred{}
	}
}

// TestDeferAnsweredLater: a deferred request is answered by whoever calls
// its answer, from another goroutine, with that value and nothing else;
// a second answer is not sent.
func TestDeferAnsweredLater(t *testing.T) {
	h := newDeferHandler()
	_, p := start(t, h, rpc.Limits{})
	p.request("1", "later")
	d := h.next(t)
	go d.answer("answered later", nil)
	if env := p.read(); env.ID != "1" || !env.OK || string(env.Value) != `"answered later"` {
		t.Fatalf("got %+v, want the value answer was given", env)
	}
	d.answer("twice", nil) // nothing
	p.request("2", "later")
	h.next(t).answer(nil, wire.Err(wire.CodeStaleTarget))
	p.request("3", "now")
	got := map[string]*wire.Envelope{}
	for range 2 {
		env := p.read()
		got[env.ID] = env
	}
	if env := got["2"]; env == nil || env.OK || env.Code != wire.CodeStaleTarget {
		t.Fatalf("an error answered later: %+v", env)
	}
	if env := got["3"]; env == nil || !env.OK {
		t.Fatalf("a request served at once after: %+v", env)
	}
	if d.ctx.Err() == nil {
		t.Fatal("the answered request's ctx is still live")
	}
}

// answerFirst answers its request before its handler returns, as when the
// answer a deferred request waits for comes back at once.
type answerFirst struct{}

func (answerFirst) Handle(_ context.Context, req *rpc.Request) (any, error) {
	req.Defer()("first", nil)
	return "returned", nil
}

func (answerFirst) Event(*wire.Envelope) {}

func TestDeferAnsweredBeforeHandleReturns(t *testing.T) {
	_, p := start(t, answerFirst{}, rpc.Limits{})
	p.request("1", "any")
	p.request("2", "any")
	got := map[string]string{}
	for range 2 {
		env := p.read()
		got[env.ID] = string(env.Value)
	}
	p.request("3", "any") // and nothing was sent between
	if env := p.read(); env.ID != "3" || got["1"] != `"first"` || got["2"] != `"first"` {
		t.Fatalf("got %v then %+v, want each answered once, with the deferred answer", got, env)
	}
}

// TestDeferCancelled: a cancel envelope ends a deferred request's ctx, and
// its answer then (CANCELLED, as a handler gives) is the reply.
func TestDeferCancelled(t *testing.T) {
	h := newDeferHandler()
	_, p := start(t, h, rpc.Limits{})
	p.request("slow", "later")
	d := h.next(t)
	context.AfterFunc(d.ctx, func() { d.answer(nil, d.ctx.Err()) })
	p.send(wire.Cancel("slow"))
	if env := p.read(); env.ID != "slow" || env.Code != wire.CodeCancelled {
		t.Fatalf("got %+v, want CANCELLED", env)
	}
	p.request("after", "now")
	if env := p.read(); env.ID != "after" || !env.OK {
		t.Fatalf("after a cancelled deferred request: %+v", env)
	}
}

// TestDeferNeverAnsweredEndsWithTheConnection: closing the connection
// ends a request deferred and never answered: its ctx ends, Run returns,
// and a late answer does nothing.
func TestDeferNeverAnsweredEndsWithTheConnection(t *testing.T) {
	h := newDeferHandler()
	c, p := start(t, h, rpc.Limits{})
	p.request("1", "later")
	d := h.next(t)
	c.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return while a request was deferred")
	}
	if d.ctx.Err() == nil {
		t.Fatal("the deferred request's ctx is still live")
	}
	d.answer("too late", nil) // nothing, and no panic
	if env := p.read(); env != nil {
		t.Fatalf("answered after the close: %+v", env)
	}
}

// TestDeferPeerClosed: a peer that closes its connection while a request
// is deferred is a peer that half-closed, as for a handler still running:
// the answer is still written (and lost), then the connection ends.
func TestDeferPeerClosed(t *testing.T) {
	h := newDeferHandler()
	c, p := start(t, h, rpc.Limits{})
	p.request("1", "later")
	d := h.next(t)
	p.c.Close()
	<-c.HalfClosed()
	select {
	case <-c.Done():
		t.Fatal("Run returned before the deferred request was answered")
	case <-time.After(20 * time.Millisecond):
	}
	d.answer("to nobody", nil)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return once the deferred request was answered")
	}
}

// TestDeferredAnswerToHalfClosedPeer: a peer that closed its write side
// still gets the answer to a request deferred before, as to any request
// it sent before.
func TestDeferredAnswerToHalfClosedPeer(t *testing.T) {
	h := newDeferHandler()
	c, p := start(t, h, rpc.Limits{})
	p.request("1", "later")
	d := h.next(t)
	p.c.(*net.UnixConn).CloseWrite()
	<-c.HalfClosed()
	d.answer("after the half-close", nil)
	if env := p.read(); env == nil || env.ID != "1" || !env.OK {
		t.Fatalf("got %+v, want the deferred answer", env)
	}
	<-c.Done()
}

// TestDeferredCountInFlight: deferred requests count against MaxInFlight
// until answered: at the limit every one is taken, one past it is QUEUE_FULL,
// and answering one makes room for the next.
func TestDeferredCountInFlight(t *testing.T) {
	const limit = 4
	h := newDeferHandler()
	_, p := start(t, h, rpc.Limits{MaxInFlight: limit})
	var answers []func(any, error)
	for i := range limit {
		p.request(strconv.Itoa(i), "later")
		answers = append(answers, h.next(t).answer)
	}
	p.request("over", "later")
	if env := p.read(); env.ID != "over" || env.Code != wire.CodeQueueFull {
		t.Fatalf("one past the limit: %+v, want QUEUE_FULL", env)
	}
	answers[0]("done", nil)
	if env := p.read(); env.ID != "0" || !env.OK {
		t.Fatalf("got %+v", env)
	}
	p.request("room", "now")
	if env := p.read(); env.ID != "room" || !env.OK {
		t.Fatalf("after an answer made room: %+v", env)
	}
}

// outcome is what a Go call's done received, and how often it ran.
type outcome struct {
	value json.RawMessage
	err   error
}

// goCall makes a Go call and returns the channel its outcome arrives on;
// done running twice fails the test.
func goCall(t *testing.T, c *rpc.Conn, ctx context.Context, d time.Duration) <-chan outcome {
	t.Helper()
	out := make(chan outcome, 2)
	var runs atomic.Int32
	err := c.Go(ctx, d, "m", nil, func(v json.RawMessage, err error) {
		if runs.Add(1) > 1 {
			t.Error("done ran twice")
		}
		out <- outcome{v, err}
	})
	if err != nil {
		t.Fatalf("Go: %v", err)
	}
	return out
}

func wait(t *testing.T, out <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("done did not run")
		return outcome{}
	}
}

// TestGo: a Go call ends with the peer's answer, a value or a code, as
// CallWithin's would.
func TestGo(t *testing.T) {
	c, p := start(t, newHandler(), rpc.Limits{})
	out := goCall(t, c, context.Background(), 10*time.Second)
	req := p.read()
	if req.Type != wire.TypeRequest || req.Method != "m" || string(req.Params) != "{}" {
		t.Fatalf("request %+v", req)
	}
	p.send(wire.Success(req.ID, json.RawMessage(`"v"`)))
	if o := wait(t, out); o.err != nil || string(o.value) != `"v"` {
		t.Fatalf("done got %s, %v", o.value, o.err)
	}
	out = goCall(t, c, context.Background(), 0)
	p.send(wire.Failure(p.read().ID, wire.CodeStaleTarget))
	if o := wait(t, out); rpc.CodeOf(o.err) != wire.CodeStaleTarget {
		t.Fatalf("done got %v, want STALE_TARGET", o.err)
	}
}

// TestGoDeadline: a Go call with no answer within d ends, not before d,
// with context.DeadlineExceeded (DEADLINE_EXCEEDED, as CallWithin's), a
// cancel sent, and the late answer ignored.
func TestGoDeadline(t *testing.T) {
	c, p := start(t, newHandler(), rpc.Limits{})
	const d = 50 * time.Millisecond
	begun := time.Now()
	out := goCall(t, c, context.Background(), d)
	req := p.read()
	o := wait(t, out)
	if !errors.Is(o.err, context.DeadlineExceeded) || rpc.CodeOf(o.err) != wire.CodeDeadlineExceeded {
		t.Fatalf("done got %v, want context.DeadlineExceeded", o.err)
	}
	if waited := time.Since(begun); waited < d {
		t.Fatalf("gave up after %v, before %v", waited, d)
	}
	if env := p.read(); env.Type != wire.TypeCancel || env.ID != req.ID {
		t.Fatalf("want a cancel for %s, got %+v", req.ID, env)
	}
	p.send(wire.Success(req.ID, json.RawMessage(`"late"`))) // ignored
	out = goCall(t, c, context.Background(), d)
	p.send(wire.Success(p.read().ID, json.RawMessage(`"next"`)))
	if o := wait(t, out); string(o.value) != `"next"` {
		t.Fatalf("the next call got %s, %v", o.value, o.err)
	}
}

// TestGoContext: a Go call whose ctx ends first ends with ctx.Err() and
// sends a cancel.
func TestGoContext(t *testing.T) {
	c, p := start(t, newHandler(), rpc.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	out := goCall(t, c, ctx, 10*time.Second)
	req := p.read()
	cancel()
	if o := wait(t, out); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("done got %v, want context.Canceled", o.err)
	}
	if env := p.read(); env.Type != wire.TypeCancel || env.ID != req.ID {
		t.Fatalf("want a cancel for %s, got %+v", req.ID, env)
	}
}

// TestGoConnectionLost: Go calls pending when the peer closes, or
// half-closes, end CONNECTION_LOST; on a closed connection Go fails at
// once and done never runs.
func TestGoConnectionLost(t *testing.T) {
	for _, how := range []string{"close", "half-close"} {
		t.Run(how, func(t *testing.T) {
			c, p := start(t, newHandler(), rpc.Limits{})
			out := goCall(t, c, context.Background(), 10*time.Second)
			p.read()
			if how == "close" {
				p.c.Close()
			} else {
				p.c.(*net.UnixConn).CloseWrite()
			}
			if o := wait(t, out); rpc.CodeOf(o.err) != wire.CodeConnectionLost {
				t.Fatalf("done got %v, want CONNECTION_LOST", o.err)
			}
			<-c.Done()
			err := c.Go(context.Background(), 0, "m", nil, func(json.RawMessage, error) { t.Error("done ran") })
			if rpc.CodeOf(err) != wire.CodeConnectionLost {
				t.Fatalf("Go on a closed connection: %v", err)
			}
		})
	}
}

// TestGoInFlightLimit: Go calls count against the outgoing limit with
// CallWithin's: at the limit every one is sent, one past it fails
// QUEUE_FULL without running done.
func TestGoInFlightLimit(t *testing.T) {
	const limit = 4
	c, p := start(t, newHandler(), rpc.Limits{MaxInFlight: limit})
	var outs []<-chan outcome
	for range limit {
		outs = append(outs, goCall(t, c, context.Background(), 0))
		p.read()
	}
	err := c.Go(context.Background(), 0, "m", nil, func(json.RawMessage, error) { t.Error("done ran") })
	if rpc.CodeOf(err) != wire.CodeQueueFull {
		t.Fatalf("one past the limit: %v, want QUEUE_FULL", err)
	}
	if _, err := c.Call(context.Background(), "m", nil); rpc.CodeOf(err) != wire.CodeQueueFull {
		t.Fatalf("a Call past the limit: %v, want QUEUE_FULL", err)
	}
	c.Close()
	for _, out := range outs {
		if o := wait(t, out); rpc.CodeOf(o.err) != wire.CodeConnectionLost {
			t.Fatalf("done got %v, want CONNECTION_LOST", o.err)
		}
	}
}

// relayHandler answers each request with a provider's answer to the same
// method: it defers the request, and the provider call's done answers it,
// on the provider connection's reader goroutine.
type relayHandler struct {
	provider *rpc.Conn
	d        time.Duration
}

func (h relayHandler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	answer := req.Defer()
	err := h.provider.Go(ctx, h.d, req.Method, nil, func(v json.RawMessage, err error) { answer(v, err) })
	if err != nil {
		answer(nil, err)
	}
	return nil, nil
}

func (relayHandler) Event(*wire.Envelope) {}

// startRelay runs a client-facing Conn whose requests are relayed through a
// provider Conn, and returns the raw client and the raw provider.
func startRelay(t *testing.T, d time.Duration) (client, provider *rawPeer) {
	toProvider, providerEnd := socketPair(t)
	prov := rpc.New(toProvider, newHandler(), rpc.Limits{}, nil)
	go prov.Run()
	t.Cleanup(func() { prov.Close(); <-prov.Done() })
	_, client = start(t, relayHandler{prov, d}, rpc.Limits{})
	return client, newRawPeer(t, providerEnd)
}

// TestDeferredRelay: a request deferred on a Go call to another peer gets
// that peer's answer; a client's cancel reaches the other peer as a cancel
// and comes back CANCELLED; the call's deadline comes back
// DEADLINE_EXCEEDED; the other peer's connection closing comes back
// CONNECTION_LOST.
func TestDeferredRelay(t *testing.T) {
	client, provider := startRelay(t, 10*time.Second)
	client.request("1", "list")
	req := provider.read()
	provider.send(wire.Success(req.ID, json.RawMessage(`[1,2,3]`)))
	if env := client.read(); env.ID != "1" || string(env.Value) != `[1,2,3]` {
		t.Fatalf("relayed answer %+v", env)
	}

	client.request("2", "slow")
	req = provider.read()
	client.send(wire.Cancel("2"))
	if env := provider.read(); env.Type != wire.TypeCancel || env.ID != req.ID {
		t.Fatalf("want the cancel relayed, got %+v", env)
	}
	if env := client.read(); env.ID != "2" || env.Code != wire.CodeCancelled {
		t.Fatalf("cancelled: %+v, want CANCELLED", env)
	}

	client, provider = startRelay(t, 50*time.Millisecond)
	client.request("3", "slow")
	provider.read()
	if env := client.read(); env.ID != "3" || env.Code != wire.CodeDeadlineExceeded {
		t.Fatalf("past the deadline: %+v, want DEADLINE_EXCEEDED", env)
	}

	client, provider = startRelay(t, 10*time.Second)
	client.request("4", "slow")
	provider.read()
	provider.c.Close()
	if env := client.read(); env.ID != "4" || env.Code != wire.CodeConnectionLost {
		t.Fatalf("provider gone: %+v, want CONNECTION_LOST", env)
	}
	client.request("5", "any")
	if env := client.read(); env.ID != "5" || env.Code != wire.CodeConnectionLost {
		t.Fatalf("after the provider left: %+v, want CONNECTION_LOST", env)
	}
}
