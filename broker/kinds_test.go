package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	browserruntime "github.com/dsh-browser/broker/browser/runtime"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// echoKind is a second provider kind, a test stand-in: its providers
// answer echo.say, and its one client method echo.ping asks one of them.
// Nothing of the browser kind knows it exists.
type echoKind struct {
	host service.Host

	mu     sync.Mutex
	events []string
	gone   []string
}

const capEcho = "echo.v1"

func (e *echoKind) Kind() service.Kind {
	return service.Kind{Name: "echo", Required: []string{capEcho}}
}
func (e *echoKind) Offers() []string { return []string{"echo.ping.v1"} }
func (e *echoKind) Methods() map[string]service.Method {
	return map[string]service.Method{
		"echo.ping": {Handle: e.ping, ReadOnly: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":16}},"required":["text"],"additionalProperties":false}`)},
	}
}
func (e *echoKind) ProviderMethods() map[string]service.ProviderMethod {
	return map[string]service.ProviderMethod{
		"echo.report": func(_ context.Context, p service.Provider, params json.RawMessage) (any, error) {
			return map[string]string{"heard": p.InstanceID()}, nil
		},
	}
}
func (e *echoKind) Joined(service.Provider) {}
func (e *echoKind) Gone(p service.Provider) {
	e.mu.Lock()
	e.gone = append(e.gone, p.InstanceID())
	e.mu.Unlock()
}
func (e *echoKind) Event(p service.Provider, event string, value json.RawMessage) {
	e.mu.Lock()
	e.events = append(e.events, p.InstanceID()+" "+event)
	e.mu.Unlock()
}
func (e *echoKind) ClientGone(uint64) {}
func (e *echoKind) Status() any {
	return map[string]int{"providers": len(e.host.Providers("echo"))}
}

func (e *echoKind) ping(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	provs := e.host.Providers("echo")
	if len(provs) == 0 {
		return nil, wire.Err(wire.CodeConnectionLost)
	}
	return provs[0].Call(ctx, "echo.say", params)
}

// start runs an in-process broker hosting the browser kind and the echo
// kind, and returns its runtime directory and the echo service.
func start(t *testing.T) (string, *echoKind) {
	t.Helper()
	dir, err := os.MkdirTemp("", "kinds")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	echo := &echoKind{}
	srv, err := broker.New(broker.Config{RuntimeDir: dir, Services: []service.Register{
		browserruntime.Register(browserruntime.Config{Personal: true}),
		func(h service.Host) (service.Service, error) { echo.host = h; return echo, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for range 500 {
		if c, err := net.Dial("unix", filepath.Join(dir, paths.SocketName)); err == nil {
			c.Close()
			return dir, echo
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("broker did not listen")
	return "", nil
}

// providerConn is a provider peer answering echo.say.
type providerConn struct{ conn *rpc.Conn }

func (providerConn) Handle(_ context.Context, req *rpc.Request) (any, error) {
	if req.Method != "echo.say" {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	var p struct{ Text string }
	json.Unmarshal(req.Params, &p)
	return map[string]string{"echo": p.Text}, nil
}
func (providerConn) Event(*wire.Envelope) {}

// dialProvider connects a provider with the given hello (the token is
// filled in) and returns its connection and the hello's error.
func dialProvider(t *testing.T, dir string, hello map[string]any) (*rpc.Conn, error) {
	t.Helper()
	nc, err := net.Dial("unix", filepath.Join(dir, paths.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(paths.Token(dir))
	hello["token"] = string(tok)
	pc := &providerConn{}
	pc.conn = rpc.New(nc, pc, rpc.Limits{}, nil)
	go pc.conn.Run()
	t.Cleanup(func() { pc.conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pc.conn.Call(ctx, "hello", hello)
	return pc.conn, err
}

func echoHello(id string, caps ...string) map[string]any {
	return map[string]any{"bootstrap": 1, "versions": []int{1}, "role": "provider", "kind": "echo",
		"capabilities": caps, "instance": map[string]any{"id": id, "family": "test", "brand": "echo",
			"version": "1", "profileLabel": "echo"}}
}

// TestSecondKindBesideTheBrowser proves the seam: a provider kind the
// browser code knows nothing of registers, serves its own namespace, sends
// requests and events to its own service only, and the browser path is
// untouched.
func TestSecondKindBesideTheBrowser(t *testing.T) {
	dir, echo := start(t)
	ctx := context.Background()

	// Refused: an unknown kind, the kind without its required capability,
	// a browser whose instance is not a browser's.
	for name, h := range map[string]map[string]any{
		"unknown kind":       func() map[string]any { h := echoHello("x", capEcho); h["kind"] = "nope"; return h }(),
		"missing capability": echoHello("y"),
		"browser, not chromium": func() map[string]any {
			h := echoHello("z", browser.Required()...)
			h["kind"] = "browser"
			return h
		}(),
	} {
		if _, err := dialProvider(t, dir, h); !errors.Is(err, wire.Err(wire.CodeProtocolMismatch)) {
			t.Errorf("%s: %v, want PROTOCOL_MISMATCH", name, err)
		}
	}

	prov, err := dialProvider(t, dir, echoHello("echo-1", capEcho))
	if err != nil {
		t.Fatalf("echo provider: %v", err)
	}
	c, err := client.Dial(ctx, client.Options{RuntimeDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !slices.Contains(c.Welcome().Capabilities, "echo.ping.v1") || !slices.Contains(c.Welcome().Capabilities, browser.CapRuntime) {
		t.Fatalf("welcome %v: want both kinds' capabilities", c.Welcome().Capabilities)
	}
	raw, err := c.Call(ctx, "echo.ping", map[string]string{"text": "hi"})
	if err != nil || string(raw) != `{"echo":"hi"}` {
		t.Fatalf("echo.ping: %s %v", raw, err)
	}
	// The kind's params schema is checked at the boundary.
	if _, err := c.Call(ctx, "echo.ping", map[string]string{"text": "far too long for sixteen"}); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
		t.Fatalf("echo.ping past its schema: %v", err)
	}
	// The browser kind lists no echo provider as a browser.
	raw, err = c.Call(ctx, browser.MethodInstances, map[string]any{})
	if err != nil || string(raw) != `[]` {
		t.Fatalf("browser.instances with only an echo provider: %s %v", raw, err)
	}
	// The provider may send its kind's requests, not a client method.
	raw, err = prov.Call(ctx, "echo.report", map[string]any{})
	if err != nil || string(raw) != `{"heard":"echo-1"}` {
		t.Fatalf("echo.report: %s %v", raw, err)
	}
	if _, err := prov.Call(ctx, browser.MethodTabs, map[string]any{}); !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
		t.Fatalf("a provider calling a client method: %v", err)
	}
	// Events reach its service; status has its section.
	prov.Notify("echo.heard", map[string]string{"x": "y"})
	raw, err = c.Call(ctx, "broker.status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st broker.Status
	json.Unmarshal(raw, &st)
	if string(st.Services["echo"]) != `{"providers":1}` || st.Providers["echo"] != 1 || st.Providers["browser"] != 0 {
		t.Fatalf("status services %s providers %v", st.Services["echo"], st.Providers)
	}
	prov.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		echo.mu.Lock()
		events, gone := append([]string(nil), echo.events...), append([]string(nil), echo.gone...)
		echo.mu.Unlock()
		if len(gone) == 1 {
			if len(events) != 1 || events[0] != "echo-1 echo.heard" || gone[0] != "echo-1" {
				t.Fatalf("events %v, gone %v", events, gone)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Gone never called (events %v)", events)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKindsAndMethodsRegisteredOnce: a kind or a method name registered
// twice stops the broker at start.
func TestKindsAndMethodsRegisteredOnce(t *testing.T) {
	dir := t.TempDir()
	twice := func(h service.Host) (service.Service, error) { return &echoKind{host: h}, nil }
	for name, regs := range map[string][]service.Register{
		"kind twice": {twice, twice},
		"method twice": {browserruntime.Register(browserruntime.Config{}), func(h service.Host) (service.Service, error) {
			return &renamed{echoKind{host: h}}, nil
		}},
	} {
		sub := filepath.Join(dir, name)
		if _, err := broker.New(broker.Config{RuntimeDir: sub, Services: regs}); err == nil {
			t.Errorf("%s: broker started", name)
		}
	}
}

// renamed is the echo kind under another name, claiming a browser method.
type renamed struct{ echoKind }

func (r *renamed) Kind() service.Kind { return service.Kind{Name: "renamed"} }
func (r *renamed) Methods() map[string]service.Method {
	return map[string]service.Method{browser.MethodTabs: {Handle: r.ping}}
}

// runnerKind is a kind with work of its own (service.Runner), a test
// stand-in: it runs until the broker stops, or fails with err.
type runnerKind struct {
	echoKind
	err     error
	stopped chan struct{}
}

func (r *runnerKind) Kind() service.Kind { return service.Kind{Name: "runner"} }
func (r *runnerKind) Methods() map[string]service.Method {
	return nil
}
func (r *runnerKind) Run(ctx context.Context) error {
	defer close(r.stopped)
	if r.err != nil {
		return r.err
	}
	<-ctx.Done()
	return nil
}

// A service's Runner runs for the broker's life: it is stopped with the
// broker, and one that fails stops the broker with its error.
func TestServiceRunner(t *testing.T) {
	for _, fail := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "run")
		r := &runnerKind{stopped: make(chan struct{})}
		if fail {
			r.err = errors.New("cannot serve its socket")
		}
		srv, err := broker.New(broker.Config{RuntimeDir: dir, Services: []service.Register{
			func(h service.Host) (service.Service, error) { r.host = h; return r, nil },
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		if !fail {
			select {
			case <-r.stopped:
				t.Fatal("the runner stopped before the broker")
			case <-time.After(100 * time.Millisecond):
			}
			cancel()
		}
		select {
		case err := <-done:
			if fail != (err != nil) || (fail && !errors.Is(err, r.err)) {
				t.Fatalf("fail %v: Serve returned %v", fail, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("fail %v: the broker did not stop", fail)
		}
		select {
		case <-r.stopped:
		default:
			t.Fatal("Serve returned before the runner")
		}
		cancel()
	}
}
