package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// socketPair returns the two ends of a real Unix stream socket.
func socketPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], conns[1]
}

// rawPeer speaks frames directly, to send what a well-behaved Conn never would.
type rawPeer struct {
	t  testing.TB
	c  net.Conn
	fr *frames.Reader
}

func newRawPeer(t testing.TB, c net.Conn) *rawPeer {
	t.Cleanup(func() { c.Close() })
	return &rawPeer{t: t, c: c, fr: frames.NewReader(c)}
}

func (p *rawPeer) send(env *wire.Envelope) {
	p.t.Helper()
	data, err := wire.Encode(env)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := frames.Write(p.c, data); err != nil {
		p.t.Fatal(err)
	}
}

func (p *rawPeer) request(id, method string) {
	p.send(wire.Request(id, method, nil))
}

// read returns the next envelope, or nil when the connection ended.
func (p *rawPeer) read() *wire.Envelope {
	p.t.Helper()
	p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	data, err := p.fr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, unix.ECONNRESET) {
			return nil
		}
		p.t.Fatalf("read: %v", err)
	}
	env, err := wire.ParseEnvelope(data)
	if err != nil {
		p.t.Fatalf("peer sent an invalid envelope: %v", err)
	}
	return env
}

// handler answers "echo" with its params, blocks "wait" until released or
// cancelled, and counts calls.
type handler struct {
	calls   atomic.Int64
	release chan struct{}
	started chan string
	events  chan *wire.Envelope
}

func newHandler() *handler {
	return &handler{release: make(chan struct{}), started: make(chan string, 100), events: make(chan *wire.Envelope, 100)}
}

func (h *handler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	h.calls.Add(1)
	switch req.Method {
	case "echo":
		return req.Params, nil
	case "wait":
		h.started <- req.ID
		select {
		case <-h.release:
			return "released", nil
		case <-ctx.Done():
			return nil, wire.Err(wire.CodeCancelled)
		}
	case "void":
		return nil, nil
	}
	return nil, wire.Err(wire.CodeInvalidRequest)
}

func (h *handler) Event(ev *wire.Envelope) { h.events <- ev }

// start runs a Conn on one end of a socket pair and returns the other end.
func start(t testing.TB, h rpc.Handler, limits rpc.Limits) (*rpc.Conn, *rawPeer) {
	a, b := socketPair(t)
	c := rpc.New(a, h, limits, nil)
	go c.Run()
	t.Cleanup(func() { c.Close(); <-c.Done() })
	return c, newRawPeer(t, b)
}

func TestRequestResponse(t *testing.T) {
	h := newHandler()
	_, p := start(t, h, rpc.Limits{})
	p.send(wire.Request("1", "echo", json.RawMessage(`{"a":1}`)))
	p.request("2", "void")
	p.request("3", "nope")
	got := map[string]*wire.Envelope{}
	for range 3 {
		env := p.read()
		got[env.ID] = env
	}
	if r := got["1"]; !r.OK || string(r.Value) != `{"a":1}` {
		t.Errorf("echo: %+v", r)
	}
	if r := got["2"]; !r.OK || string(r.Value) != "null" {
		t.Errorf("void result must be an explicit null: %+v", r)
	}
	if r := got["3"]; r.OK || r.Code != wire.CodeInvalidRequest {
		t.Errorf("unknown method: %+v", r)
	}
}

// appended writes itself one way through rpc.JSONAppender and another
// through json.Marshaler, to tell which one a reply used.
type appended struct{}

func (appended) AppendJSON(b []byte) []byte   { return append(b, `{"by":"AppendJSON"}`...) }
func (appended) MarshalJSON() ([]byte, error) { return []byte(`{"by":"MarshalJSON"}`), nil }

type appendHandler struct{}

func (appendHandler) Handle(context.Context, *rpc.Request) (any, error) { return appended{}, nil }
func (appendHandler) Event(*wire.Envelope)                              {}

// TestReplyAppendsJSON: a value that appends its own JSON is answered with
// exactly those bytes, without encoding/json.
func TestReplyAppendsJSON(t *testing.T) {
	_, p := start(t, appendHandler{}, rpc.Limits{})
	p.request("1", "any")
	if r := p.read(); !r.OK || string(r.Value) != `{"by":"AppendJSON"}` {
		t.Fatalf("reply %+v, want the value's AppendJSON", r)
	}
}

func TestIncomingInFlightLimit(t *testing.T) {
	h := newHandler()
	_, p := start(t, h, rpc.Limits{})
	for i := range rpc.DefaultMaxInFlight {
		p.request("w"+strconv.Itoa(i), "wait")
	}
	for range rpc.DefaultMaxInFlight {
		<-h.started // all 32 are running at once
	}
	p.request("over", "wait")
	if env := p.read(); env.ID != "over" || env.Code != wire.CodeQueueFull {
		t.Fatalf("33rd request: got %+v, want QUEUE_FULL", env)
	}
	close(h.release)
	for range rpc.DefaultMaxInFlight {
		if env := p.read(); !env.OK {
			t.Fatalf("released request failed: %+v", env)
		}
	}
	if n := h.calls.Load(); n != rpc.DefaultMaxInFlight {
		t.Errorf("handler ran %d times, want %d (the refused one must not run)", n, rpc.DefaultMaxInFlight)
	}
}

func TestOutgoingInFlightLimit(t *testing.T) {
	c, p := start(t, newHandler(), rpc.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range rpc.DefaultMaxInFlight {
		wg.Go(func() { c.Call(ctx, "never", nil) })
	}
	for range rpc.DefaultMaxInFlight {
		if env := p.read(); env.Type != wire.TypeRequest {
			t.Fatalf("want a request, got %+v", env)
		}
	}
	_, err := c.Call(ctx, "never", nil)
	if !errors.Is(err, wire.Err(wire.CodeQueueFull)) {
		t.Fatalf("33rd call: %v, want QUEUE_FULL", err)
	}
	cancel()
	wg.Wait()
}

func TestReusedIDClosesWithoutDispatch(t *testing.T) {
	h := newHandler()
	c, p := start(t, h, rpc.Limits{})
	p.request("same", "void")
	if env := p.read(); !env.OK {
		t.Fatalf("first: %+v", env)
	}
	p.request("same", "void")
	if env := p.read(); env != nil {
		t.Fatalf("reused ID was answered: %+v", env)
	}
	<-c.Done()
	if !errors.Is(c.Err(), rpc.ErrReusedID) {
		t.Errorf("close reason %v, want ErrReusedID", c.Err())
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

func TestSeenIDCapClosesRatherThanEvicts(t *testing.T) {
	h := newHandler()
	c, p := start(t, h, rpc.Limits{})
	const window = 16 // stay under the in-flight limit
	for i := 0; i < rpc.DefaultMaxSeenIDs; i += window {
		for j := i; j < i+window; j++ {
			p.request("id"+strconv.Itoa(j), "void")
		}
		for range window {
			if env := p.read(); env == nil || !env.OK {
				t.Fatalf("request within the cap refused: %+v", env)
			}
		}
	}
	p.request("one-too-many", "void")
	if env := p.read(); env != nil {
		t.Fatalf("request past the cap was answered: %+v", env)
	}
	<-c.Done()
	if !errors.Is(c.Err(), rpc.ErrTooManyIDs) {
		t.Errorf("close reason %v, want ErrTooManyIDs", c.Err())
	}
	if n := h.calls.Load(); n != rpc.DefaultMaxSeenIDs {
		t.Errorf("dispatched %d requests, want exactly %d", n, rpc.DefaultMaxSeenIDs)
	}
}

func TestCancelAbortsHandler(t *testing.T) {
	h := newHandler()
	_, p := start(t, h, rpc.Limits{})
	p.request("slow", "wait")
	<-h.started
	p.send(wire.Cancel("slow"))
	if env := p.read(); env.ID != "slow" || env.Code != wire.CodeCancelled {
		t.Fatalf("got %+v, want CANCELLED", env)
	}
	p.send(wire.Cancel("unknown")) // cancelling nothing is harmless
	p.request("after", "void")
	if env := p.read(); env.ID != "after" || !env.OK {
		t.Fatalf("connection unusable after cancel: %+v", env)
	}
}

func TestCallCancelSendsCancelAndIgnoresLateReply(t *testing.T) {
	c, p := start(t, newHandler(), rpc.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Call(ctx, "slow", nil); errc <- err }()
	req := p.read()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
	if env := p.read(); env.Type != wire.TypeCancel || env.ID != req.ID {
		t.Fatalf("want a cancel for %s, got %+v", req.ID, env)
	}
	p.send(wire.Success(req.ID, json.RawMessage(`"late"`))) // ignored
	go func() {
		req := p.read()
		p.send(wire.Success(req.ID, json.RawMessage(`"fresh"`)))
	}()
	v, err := c.Call(context.Background(), "next", nil)
	if err != nil || string(v) != `"fresh"` {
		t.Fatalf("call after a late reply: %s, %v", v, err)
	}
}

// TestCallWithin: an answer within d is the call's answer; none within d
// ends the call, not before d, with context.DeadlineExceeded and a cancel
// sent, as a context of that deadline would.
func TestCallWithin(t *testing.T) {
	c, p := start(t, newHandler(), rpc.Limits{})
	go func() {
		req := p.read()
		p.send(wire.Success(req.ID, json.RawMessage(`"in time"`)))
	}()
	if v, err := c.CallWithin(context.Background(), 10*time.Second, "quick", nil); err != nil || string(v) != `"in time"` {
		t.Fatalf("answered call: %s, %v", v, err)
	}

	const d = 50 * time.Millisecond
	start := time.Now()
	errc := make(chan error, 1)
	go func() { _, err := c.CallWithin(context.Background(), d, "slow", nil); errc <- err }()
	req := p.read()
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered call: %v", err)
	}
	if waited := time.Since(start); waited < d {
		t.Fatalf("gave up after %v, before %v", waited, d)
	}
	if env := p.read(); env.Type != wire.TypeCancel || env.ID != req.ID {
		t.Fatalf("want a cancel for %s, got %+v", req.ID, env)
	}
	if rpc.CodeOf(context.DeadlineExceeded) != wire.CodeDeadlineExceeded {
		t.Fatal("an expired call is not answered DEADLINE_EXCEEDED")
	}

	// The expired timer, kept for the next call, does not end it.
	go func() {
		req := p.read()
		time.Sleep(d)
		p.send(wire.Success(req.ID, json.RawMessage(`"later"`)))
	}()
	if v, err := c.CallWithin(context.Background(), 10*time.Second, "after", nil); err != nil || string(v) != `"later"` {
		t.Fatalf("call after an expired one: %s, %v", v, err)
	}
}

func TestMalformedEnvelopeClosesAndFailsPendingCalls(t *testing.T) {
	for name, payload := range map[string]string{
		"not an envelope": `{"type":"request","id":"x"}`,
		"unknown field":   `{"type":"cancel","id":"x","extra":1}`,
		"bad frame JSON":  `{"type":`,
	} {
		t.Run(name, func(t *testing.T) {
			c, p := start(t, newHandler(), rpc.Limits{})
			errc := make(chan error, 1)
			go func() { _, err := c.Call(context.Background(), "pending", nil); errc <- err }()
			p.read()
			// Written by hand: frames.Write refuses invalid JSON.
			buf := binary.NativeEndian.AppendUint32(nil, uint32(len(payload)))
			p.c.Write(append(buf, payload...))
			if err := <-errc; !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
				t.Fatalf("pending call: %v, want CONNECTION_LOST", err)
			}
			<-c.Done()
			if p.read() != nil {
				t.Fatal("connection still open")
			}
		})
	}
}

func TestEventsDelivered(t *testing.T) {
	h := newHandler()
	_, p := start(t, h, rpc.Limits{})
	p.send(wire.Event("page.changed", json.RawMessage(`{"n":1}`)))
	select {
	case ev := <-h.events:
		if ev.Event != "page.changed" || string(ev.Value) != `{"n":1}` {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("event not delivered")
	}
}

// TestOutputBudget fills the output queue of a connection whose peer never
// reads. net.Pipe stands in for the socket because it has no kernel buffer:
// that is the only way to hold output queued deterministically.
func TestOutputBudget(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := rpc.New(a, newHandler(), rpc.Limits{}, nil)
	go c.Run()
	defer func() { c.Close(); <-c.Done() }()

	sizes := []int{1_000_000, 1_000_000}
	// Exactly 2 MiB in all, counting each frame's 4-byte header: the budget
	// is bytes queued for the socket.
	sizes = append(sizes, rpc.DefaultMaxBuffered-sizes[0]-sizes[1]-3*frames.HeaderSize)
	for i, size := range sizes {
		if err := c.Notify("e", padTo(t, size)); err != nil {
			t.Fatalf("event %d (%d bytes, total within budget): %v", i, size, err)
		}
	}
	err := c.Notify("e", padTo(t, 64))
	if !errors.Is(err, rpc.ErrSlowConsumer) {
		t.Fatalf("event past the budget: %v, want ErrSlowConsumer", err)
	}
	<-c.Closed()
}

// padTo returns a string value whose event envelope encodes to exactly size bytes.
func padTo(t *testing.T, size int) string {
	empty, _ := wire.Encode(wire.Event("e", json.RawMessage(`""`)))
	n := size - len(empty)
	if n < 0 {
		t.Fatalf("size %d too small", size)
	}
	return strings.Repeat("x", n)
}

func TestHalfClosedPeerGetsItsAnswers(t *testing.T) {
	h := newHandler()
	c, p := start(t, h, rpc.Limits{})
	errc := make(chan error, 1)
	go func() { _, err := c.Call(context.Background(), "never-answered", nil); errc <- err }()
	p.read() // the outgoing call reached the peer
	p.send(wire.Request("1", "echo", json.RawMessage(`{"n":1}`)))
	p.send(wire.Request("2", "void", nil))
	p.c.(*net.UnixConn).CloseWrite()
	got := map[string]bool{}
	for env := p.read(); env != nil; env = p.read() {
		got[env.ID] = env.OK
	}
	if !got["1"] || !got["2"] {
		t.Fatalf("requests read before the half-close were not all answered: %v", got)
	}
	if err := <-errc; !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
		t.Fatalf("pending call to a half-closed peer: %v, want CONNECTION_LOST", err)
	}
	select {
	case <-c.HalfClosed():
	default:
		t.Fatal("HalfClosed not signalled")
	}
	<-c.Done()
}

// orderHandler's "hello" lets another goroutine send an event as soon as
// its reply is queued.
type orderHandler struct {
	*handler
	replied chan struct{}
}

func (h orderHandler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	req.OnReply(func() { close(h.replied) })
	return "welcome", nil
}

func TestOnReplyOrdersLaterFramesAfterTheReply(t *testing.T) {
	for range 50 {
		var c *rpc.Conn
		h := orderHandler{handler: newHandler(), replied: make(chan struct{})}
		a, b := socketPair(t)
		c = rpc.New(a, h, rpc.Limits{}, nil)
		go c.Run()
		go func() { <-h.replied; c.Notify("after", nil) }()
		p := newRawPeer(t, b)
		p.request("1", "hello")
		if first := p.read(); first.Type != wire.TypeResponse {
			t.Fatalf("first frame %+v, want the reply", first)
		}
		if second := p.read(); second.Type != wire.TypeEvent {
			t.Fatalf("second frame %+v, want the event", second)
		}
		c.Close()
		<-c.Done()
	}
}

func TestOrderedIDsGoPastTheSeenCap(t *testing.T) {
	h := newHandler()
	c, p := start(t, h, rpc.Limits{MaxSeenIDs: 100})
	p.request("hello-uuid", "void") // before the switch, IDs are any strings
	if env := p.read(); !env.OK {
		t.Fatalf("first: %+v", env)
	}
	c.OrderIncoming()
	// Three times the cap of remembered IDs, with gaps: nothing is remembered
	// but the highest.
	const window = 16
	n := 0
	for id := 1; id <= 300; id += 3 * window {
		for j := range window {
			p.request(strconv.Itoa(id+3*j), "void")
			n++
		}
		for range window {
			if env := p.read(); env == nil || !env.OK {
				t.Fatalf("increasing ID refused: %+v (%v)", env, c.Err())
			}
		}
	}
	if got := h.calls.Load(); got != int64(n+1) {
		t.Fatalf("dispatched %d, want %d", got, n+1)
	}
	p.request(strconv.Itoa(rpc.MaxOrderedID), "void")
	if env := p.read(); env == nil || !env.OK {
		t.Fatalf("the largest ordered ID refused: %+v", env)
	}
}

func TestOrderedIDsRefuseReuseAndDisorder(t *testing.T) {
	for _, tc := range []struct{ name, first, next string }{
		{"reuse", "5", "5"},
		{"lower", "5", "4"},
		{"an ID from before the switch", "5", "7"}, // 7 was accepted unordered
		{"leading zero", "5", "06"},
		{"not a number", "5", "six"},
		{"negative", "5", "-6"},
		{"past the largest", "5", strconv.FormatUint(rpc.MaxOrderedID+1, 10)},
		{"zero", "", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandler()
			c, p := start(t, h, rpc.Limits{})
			p.request("7", "void")
			p.read()
			c.OrderIncoming()
			want := int64(1)
			if tc.first != "" {
				p.request(tc.first, "void")
				if env := p.read(); env == nil || !env.OK {
					t.Fatalf("first: %+v", env)
				}
				want++
			}
			p.request(tc.next, "void")
			if env := p.read(); env != nil {
				t.Fatalf("%q after %q was answered: %+v", tc.next, tc.first, env)
			}
			<-c.Done()
			if !errors.Is(c.Err(), rpc.ErrIDOutOfOrder) && !errors.Is(c.Err(), rpc.ErrReusedID) {
				t.Errorf("close reason %v", c.Err())
			}
			if got := h.calls.Load(); got != want {
				t.Errorf("dispatched %d, want %d", got, want)
			}
		})
	}
}

// TestCallIDsIncreaseOnTheWire: concurrent calls reach the peer with
// increasing IDs, as ordered mode requires.
func TestCallIDsIncreaseOnTheWire(t *testing.T) {
	a, b := socketPair(t)
	c := rpc.New(a, newHandler(), rpc.Limits{}, nil)
	go c.Run()
	t.Cleanup(func() { c.Close() })
	p := newRawPeer(t, b)
	var wg sync.WaitGroup
	const callers, each = 16, 50
	for range callers {
		wg.Go(func() {
			for range each {
				c.Call(context.Background(), "void", nil)
			}
		})
	}
	last := uint64(0)
	for range callers * each {
		env := p.read()
		n, ok := rpc.OrderedID(env.ID)
		if !ok || n <= last {
			t.Fatalf("ID %q after %d", env.ID, last)
		}
		last = n
		p.send(wire.Success(env.ID, json.RawMessage("null")))
	}
	wg.Wait()
}

// TestUnexpectedErrorLogged: an error a handler did not turn into a code is
// answered INTERNAL_ERROR, and its cause is logged where that happens.
func TestUnexpectedErrorLogged(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	a, b := socketPair(t)
	srv := rpc.New(a, handlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
		if req.Method == "fine" {
			return "ok", nil
		}
		return nil, errors.New("disk on fire")
	}), rpc.Limits{}, log)
	go srv.Run()
	cli := rpc.New(b, handlerFunc(nil), rpc.Limits{}, nil)
	go cli.Run()
	defer cli.Close()
	defer srv.Close()
	if _, err := cli.Call(context.Background(), "fine", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	_, err := cli.Call(context.Background(), "m", map[string]any{})
	if rpc.CodeOf(err) != wire.CodeInternalError {
		t.Fatalf("err %v, want INTERNAL_ERROR", err)
	}
	srv.Close()
	<-srv.Closed()
	if strings.Count(logBuf.String(), "level=ERROR") != 1 || !strings.Contains(logBuf.String(), "disk on fire") {
		t.Fatalf("log %q: want the cause at error level", logBuf.String())
	}
}

// handlerFunc serves every request with a function (nil: no requests).
type handlerFunc func(ctx context.Context, req *rpc.Request) (any, error)

func (f handlerFunc) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if f == nil {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	return f(ctx, req)
}
func (handlerFunc) Event(*wire.Envelope) {}

// TestSocketWritesNeverBlock: on a socket a sender writes its own frame
// when nothing is queued, without ever waiting. Against a peer that stops
// reading, the socket fills, the rest queues, and past the budget a send
// fails ErrSlowConsumer instead of blocking; frames that did go out arrive
// whole and in order, a partial write's tail included.
func TestSocketWritesNeverBlock(t *testing.T) {
	a, b := socketPair(t)
	c := rpc.New(a, newHandler(), rpc.Limits{}, nil)
	go c.Run()
	defer func() { c.Close(); <-c.Done() }()
	sent := 0
	var err error
	for sent < 1000 {
		done := make(chan error, 1)
		n := sent
		go func() { done <- c.Notify("e", map[string]any{"n": n, "pad": strings.Repeat("x", 50_000)}) }()
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("send %d blocked on a peer that is not reading", sent)
		}
		if err != nil {
			break
		}
		sent++
	}
	if !errors.Is(err, rpc.ErrSlowConsumer) {
		t.Fatalf("after %d sends: %v, want ErrSlowConsumer", sent, err)
	}
	// What was sent before the budget ran out arrives whole and in order.
	fr := frames.NewReader(b)
	for i := 0; ; i++ {
		b.SetReadDeadline(time.Now().Add(2 * time.Second))
		data, err := fr.Read()
		if err != nil {
			if i == 0 {
				t.Fatalf("nothing arrived: %v", err)
			}
			break
		}
		env, perr := wire.ParseEnvelope(data)
		var v struct{ N int }
		if perr != nil || json.Unmarshal(env.Value, &v) != nil || v.N != i {
			t.Fatalf("frame %d: %v %s", i, perr, data)
		}
	}
}

// bigHandler answers "echo" with its params and "big" with a string whose
// response envelope is one byte over the frame limit.
type bigHandler struct{}

func (bigHandler) Handle(_ context.Context, req *rpc.Request) (any, error) {
	if req.Method == "big" {
		head, _ := wire.Encode(wire.Success(req.ID, json.RawMessage(`""`)))
		return strings.Repeat("x", frames.MaxPayload+1-len(head)), nil
	}
	return req.Params, nil
}

func (bigHandler) Event(*wire.Envelope) {}

// TestFrameLimit: a call whose request fits the frame limit exactly goes
// through, one a byte longer fails QUEUE_FULL without harming the
// connection, and a response past the limit is answered QUEUE_FULL.
func TestFrameLimit(t *testing.T) {
	a, b := socketPair(t)
	server := rpc.New(a, bigHandler{}, rpc.Limits{}, nil)
	client := rpc.New(b, newHandler(), rpc.Limits{}, nil)
	for _, c := range []*rpc.Conn{server, client} {
		go c.Run()
		t.Cleanup(func() { c.Close(); <-c.Done() })
	}
	// params {"p":"xx…"} sized so that the request envelope is n bytes.
	params := func(n int) json.RawMessage {
		head, _ := wire.Encode(wire.Request("1", "echo", json.RawMessage(`{"p":""}`)))
		return json.RawMessage(`{"p":"` + strings.Repeat("x", n-len(head)) + `"}`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := client.Call(ctx, "echo", params(frames.MaxPayload)); err != nil || len(got) != len(params(frames.MaxPayload)) {
		t.Fatalf("a request at the limit: %d bytes, %v", len(got), err)
	}
	// The next call's ID is "2", as long as "1".
	if _, err := client.Call(ctx, "echo", params(frames.MaxPayload+1)); rpc.CodeOf(err) != wire.CodeQueueFull {
		t.Fatalf("a request one byte past the limit: %v, want QUEUE_FULL", err)
	}
	if _, err := client.Call(ctx, "big", nil); rpc.CodeOf(err) != wire.CodeQueueFull {
		t.Fatalf("a response past the limit: %v, want QUEUE_FULL", err)
	}
	if got, err := client.Call(ctx, "echo", json.RawMessage(`{"still":"open"}`)); err != nil || string(got) != `{"still":"open"}` {
		t.Fatalf("after refusals: %s, %v", got, err)
	}
}

// TestIdleHandlersBounded: after a burst of concurrent requests, a
// connection keeps only a few handler goroutines waiting for the next
// one, they serve it, and none is left once the connection closes.
func TestIdleHandlersBounded(t *testing.T) {
	settle := func(want func(int) bool) int {
		deadline := time.Now().Add(5 * time.Second)
		n := runtime.NumGoroutine()
		for !want(n) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			n = runtime.NumGoroutine()
		}
		return n
	}
	before := runtime.NumGoroutine()
	h := newHandler()
	a, b := socketPair(t)
	c := rpc.New(a, h, rpc.Limits{}, nil)
	go c.Run()
	p := newRawPeer(t, b)
	const burst = 20
	for i := range burst {
		p.request(strconv.Itoa(i), "wait")
	}
	for range burst {
		<-h.started
	}
	// All twenty started before any was released: they ran at once.
	close(h.release)
	for range burst {
		if env := p.read(); !env.OK {
			t.Fatalf("got %+v", env)
		}
	}
	// Run's reader and writer, and at most 4 handlers waiting.
	if n := settle(func(n int) bool { return n <= before+2+4 }); n > before+2+4 {
		t.Fatalf("%d goroutines after %d requests ran at once (before: %d)", n, burst, before)
	}
	p.request("again", "void")
	if env := p.read(); env.ID != "again" || !env.OK {
		t.Fatalf("after the burst: %+v", env)
	}
	c.Close()
	<-c.Done()
	if n := settle(func(n int) bool { return n <= before }); n > before {
		t.Fatalf("%d goroutines left after close (before: %d)", n, before)
	}
}
