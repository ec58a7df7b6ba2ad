package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/browser/runtime"
	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// browser.tabs's edges while the provider works on its list, over the
// broker's real socket: the provider's answer, the client's cancel, either
// side leaving, the in-flight limit. They hold any change to how the
// broker waits for the provider (run J in BENCHMARKS.md tried one) to
// what a handler blocked in the provider call gives.

// heldProvider is a browser provider whose tabs.list answers only when the
// test releases it, and which reports each request that was cancelled.
type heldProvider struct {
	conn      *rpc.Conn
	asked     chan string // the ID of each tabs.list
	release   chan struct{}
	cancelled chan string
}

const heldTabs = `[{"id":"inst:1","instanceId":"inst","url":"https://a.test/","title":"A"},` +
	`{"id":"inst:2","instanceId":"inst","url":"chrome://settings","title":"Settings"}]`

func (p *heldProvider) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if req.Method != browser.ProviderTabsList {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	p.asked <- req.ID
	select {
	case <-p.release:
		return json.RawMessage(heldTabs), nil
	case <-ctx.Done():
		p.cancelled <- req.ID
		return nil, ctx.Err()
	}
}

func (*heldProvider) Event(*wire.Envelope) {}

func dialHeldProvider(t *testing.T, dir string) *heldProvider {
	t.Helper()
	nc, err := net.Dial("unix", filepath.Join(dir, paths.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	p := &heldProvider{asked: make(chan string, 100), release: make(chan struct{}), cancelled: make(chan string, 100)}
	p.conn = rpc.New(nc, p, rpc.Limits{}, nil)
	go p.conn.Run()
	t.Cleanup(func() { p.conn.Close(); <-p.conn.Done() })
	tok, _ := os.ReadFile(paths.Token(dir))
	hello := map[string]any{"bootstrap": 1, "versions": []int{1}, "role": "provider", "token": string(tok),
		"capabilities": browser.Required(), "instance": map[string]any{"id": "inst", "family": browser.Family,
			"brand": "test", "version": "1", "profileLabel": "Test"}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.conn.Call(ctx, "hello", hello); err != nil {
		t.Fatalf("provider hello: %v", err)
	}
	return p
}

// wait returns the next value of ch, failing the test after 5 s.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

// rawClient is a client connection speaking frames, to send cancels and
// read every answer as the broker wrote it.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	fr *frames.Reader
}

func dialRawClient(t *testing.T, dir string) *rawClient {
	t.Helper()
	nc, err := net.Dial("unix", filepath.Join(dir, paths.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &rawClient{t: t, c: nc, fr: frames.NewReader(nc)}
	tok, _ := os.ReadFile(paths.Token(dir))
	hello, _ := json.Marshal(map[string]any{"bootstrap": 1, "versions": []int{1}, "role": "client", "token": string(tok)})
	c.send(wire.Request("hello", "hello", hello))
	if env := c.read(); env == nil || !env.OK {
		t.Fatalf("client hello: %+v", env)
	}
	return c
}

func (c *rawClient) send(env *wire.Envelope) {
	c.t.Helper()
	data, err := wire.Encode(env)
	if err == nil {
		err = frames.Write(c.c, data)
	}
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) tabs(id string) {
	c.send(wire.Request(id, browser.MethodTabs, json.RawMessage(`{"sessionId":"s","instanceId":"inst"}`)))
}

// read returns the next envelope, or nil once the broker closed.
func (c *rawClient) read() *wire.Envelope {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	data, err := c.fr.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	env, err := wire.ParseEnvelope(data)
	if err != nil {
		c.t.Fatal(err)
	}
	return env
}

// TestTabsAnsweredFromTheProvidersAnswer: the provider's list comes back
// filtered, as the client asked it, once the provider answers.
func TestTabsAnsweredFromTheProvidersAnswer(t *testing.T) {
	dir, _ := start(t)
	p := dialHeldProvider(t, dir)
	c := dialRawClient(t, dir)
	c.tabs("1")
	wait(t, p.asked, "tabs.list")
	close(p.release)
	env := c.read()
	if want := `[{"id":"inst:1","instanceId":"inst","url":"https://a.test/","title":"A"}]`; env.ID != "1" || !env.OK || string(env.Value) != want {
		t.Fatalf("got %+v (%s), want %s", env, env.Value, want)
	}
	c.send(wire.Request("2", browser.MethodTabs, json.RawMessage(`{"sessionId":"s","instanceId":"inst","x":1}`)))
	if env := c.read(); env.ID != "2" || env.Code != wire.CodeInvalidRequest {
		t.Fatalf("params past the schema: %+v, want INVALID_REQUEST", env)
	}
	c.send(wire.Request("3", browser.MethodTabs, json.RawMessage(`{"sessionId":"s","instanceId":"gone"}`)))
	if env := c.read(); env.ID != "3" || env.Code != wire.CodeConnectionLost {
		t.Fatalf("no such instance: %+v, want CONNECTION_LOST", env)
	}
}

// TestTabsCancelledWhileTheProviderWorks: the client's cancel reaches the
// provider as a cancel of its tabs.list, and the client gets CANCELLED.
func TestTabsCancelledWhileTheProviderWorks(t *testing.T) {
	dir, _ := start(t)
	p := dialHeldProvider(t, dir)
	c := dialRawClient(t, dir)
	c.tabs("1")
	id := wait(t, p.asked, "tabs.list")
	c.send(wire.Cancel("1"))
	if got := wait(t, p.cancelled, "cancel at the provider"); got != id {
		t.Fatalf("cancelled %s, want %s", got, id)
	}
	if env := c.read(); env.ID != "1" || env.Code != wire.CodeCancelled {
		t.Fatalf("got %+v, want CANCELLED", env)
	}
}

// TestTabsGiveUpOnASilentProvider: a provider that never answers its
// tabs.list is given runtime.ProviderTimeout (10 s): no answer comes
// before it, DEADLINE_EXCEEDED comes at it, and the provider is asked to
// cancel. It waits the 10 s out.
func TestTabsGiveUpOnASilentProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the provider timeout")
	}
	dir, _ := start(t)
	p := dialHeldProvider(t, dir)
	c := dialRawClient(t, dir)
	began := time.Now()
	c.tabs("1")
	id := wait(t, p.asked, "tabs.list")
	c.c.SetReadDeadline(began.Add(runtime.ProviderTimeout - 300*time.Millisecond))
	if data, err := c.fr.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("answered %.1f s after the call, before the provider timeout: %s, %v", time.Since(began).Seconds(), data, err)
	}
	c.c.SetReadDeadline(began.Add(runtime.ProviderTimeout + 2*time.Second))
	data, err := c.fr.Read()
	if err != nil {
		t.Fatalf("no answer by %v after the call: %v", runtime.ProviderTimeout+2*time.Second, err)
	}
	env, err := wire.ParseEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	if env.ID != "1" || env.Code != wire.CodeDeadlineExceeded {
		t.Fatalf("got %+v, want DEADLINE_EXCEEDED", env)
	}
	if got := wait(t, p.cancelled, "cancel at the provider"); got != id {
		t.Fatalf("cancelled %s, want %s", got, id)
	}
}

// TestTabsWhenTheProviderLeaves: a provider that disconnects while the
// client waits for its list answers the client CONNECTION_LOST.
func TestTabsWhenTheProviderLeaves(t *testing.T) {
	dir, _ := start(t)
	p := dialHeldProvider(t, dir)
	c := dialRawClient(t, dir)
	c.tabs("1")
	wait(t, p.asked, "tabs.list")
	p.conn.Close()
	if env := c.read(); env.ID != "1" || env.Code != wire.CodeConnectionLost {
		t.Fatalf("got %+v, want CONNECTION_LOST", env)
	}
}

// TestTabsWhenTheClientLeaves: a client that disconnects while its list is
// on the way leaves the broker and the provider serving the next client.
func TestTabsWhenTheClientLeaves(t *testing.T) {
	dir, _ := start(t)
	p := dialHeldProvider(t, dir)
	c := dialRawClient(t, dir)
	c.tabs("1")
	wait(t, p.asked, "tabs.list")
	c.c.Close()
	time.Sleep(10 * time.Millisecond) // the broker reads the close
	close(p.release)                  // the answer goes to nobody
	next := dialRawClient(t, dir)
	next.tabs("1")
	if env := next.read(); env.ID != "1" || !env.OK || !strings.Contains(string(env.Value), "inst:1") {
		t.Fatalf("the next client: %+v", env)
	}
}

// TestTabsInFlightLimit: requests waiting on the provider count against the
// client connection's in-flight limit: at the limit every one reaches the
// provider, one past it is answered QUEUE_FULL at once, and the others
// are answered when the provider is.
func TestTabsInFlightLimit(t *testing.T) {
	dir, _ := start(t)
	p := dialHeldProvider(t, dir)
	c := dialRawClient(t, dir)
	for i := range rpc.DefaultMaxInFlight {
		c.tabs(strconv.Itoa(i))
	}
	for range rpc.DefaultMaxInFlight {
		wait(t, p.asked, "tabs.list")
	}
	c.tabs("over")
	if env := c.read(); env.ID != "over" || env.Code != wire.CodeQueueFull {
		t.Fatalf("one past the limit: %+v, want QUEUE_FULL", env)
	}
	close(p.release)
	for range rpc.DefaultMaxInFlight {
		if env := c.read(); !env.OK {
			t.Fatalf("released: %+v", env)
		}
	}
}
