package hub_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/hub"
	"github.com/dsh-browser/broker/wire"
)

// env is an in-process broker hosting the hub, with its log.
type env struct {
	t        testing.TB
	dir      string
	stateDir string
	log      *syncBuffer
	stop     func()
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs a broker with the hub over a fresh state directory, or over
// stateDir when given (a restart); opts adjust the hub's config.
func start(t testing.TB, stateDir string, opts ...func(*hub.Config)) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "hub")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if stateDir == "" {
		stateDir = filepath.Join(dir, "state")
	}
	e := &env{t: t, dir: filepath.Join(dir, "run"), stateDir: stateDir, log: &syncBuffer{}}
	log := newTextLogger(e.log)
	var hb *hub.Hub
	srv, err := broker.New(broker.Config{RuntimeDir: e.dir, StateDir: stateDir, Logger: log, Services: []service.Register{
		func(h service.Host) (service.Service, error) {
			cfg := hub.Config{StateDir: stateDir, Logger: log, Requirements: conn.CheckImported}
			for _, o := range opts {
				o(&cfg)
			}
			s, err := hub.Register(cfg)(h)
			hb, _ = s.(*hub.Hub)
			return s, err
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	e.stop = func() { once.Do(func() { cancel(); <-done; hb.Close() }) }
	t.Cleanup(e.stop)
	for range 500 {
		if c, err := net.Dial("unix", filepath.Join(e.dir, paths.SocketName)); err == nil {
			c.Close()
			return e
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("broker did not listen")
	return nil
}

func (e *env) client(opts client.Options) *client.Client {
	e.t.Helper()
	opts.RuntimeDir = e.dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func call[T any](t testing.TB, c *client.Client, method string, params any) T {
	t.Helper()
	var v T
	raw, err := callErr(c, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %s: %v", method, raw, err)
	}
	return v
}

func callErr(c *client.Client, method string, params any) (json.RawMessage, error) {
	// Generous: a protected export derives two keys at 600,000 PBKDF2
	// iterations, slow under -race on a shared machine.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return c.Call(ctx, method, params)
}

// runnerHost is a test stand-in for the extension's snug side: a provider
// that opens "tabs" on request, reassembles what the hub delivers for each
// runner, and sends app frames as the runner page would relay them.
type runnerHost struct {
	t    testing.TB
	conn *rpc.Conn
	hold chan struct{} // when set, deliveries wait until it is closed

	mu     sync.Mutex
	opened []apps.OpenTabParams
	asked  []apps.ConfirmParams                        // questions put to the owner
	answer func(apps.ConfirmParams) apps.ConfirmResult // nil: no

	tabs   map[string]*tab
	seq    map[string]int64
	pieces int // pieces delivered, in all
}

// tab is what one runner received, message by message.
type tab struct {
	mu       sync.Mutex
	asm      []byte
	messages []message
	changed  chan struct{}
}

type message struct {
	kind string
	data []byte
}

func (h *runnerHost) Handle(_ context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case apps.CallOpenTab:
		var p apps.OpenTabParams
		json.Unmarshal(req.Params, &p)
		h.mu.Lock()
		h.opened = append(h.opened, p)
		h.mu.Unlock()
		return apps.OpenTabResult{Tab: 7}, nil
	case apps.CallConfirm:
		var p apps.ConfirmParams
		json.Unmarshal(req.Params, &p)
		h.mu.Lock()
		h.asked = append(h.asked, p)
		answer := h.answer
		h.mu.Unlock()
		if answer == nil {
			return apps.ConfirmResult{}, nil
		}
		return answer(p), nil
	case apps.CallDeliver:
		h.mu.Lock()
		hold := h.hold
		h.mu.Unlock()
		if hold != nil {
			<-hold
		}
		var p apps.DeliverParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			h.t.Errorf("deliver: %v", err)
			return nil, wire.Err(wire.CodeInvalidRequest)
		}
		if len(req.Params) > 1_048_575 {
			h.t.Errorf("a deliver call of %d bytes is over the native-messaging cap", len(req.Params))
		}
		for _, pc := range p.Pieces {
			h.take(pc)
		}
		return map[string]any{}, nil
	}
	return nil, wire.Err(wire.CodeInvalidRequest)
}

func (h *runnerHost) Event(*wire.Envelope) {}

func (h *runnerHost) tab(runner string) *tab {
	h.mu.Lock()
	defer h.mu.Unlock()
	tb := h.tabs[runner]
	if tb == nil {
		tb = &tab{changed: make(chan struct{})}
		h.tabs[runner] = tb
	}
	return tb
}

func (h *runnerHost) take(pc apps.Piece) {
	data, err := base64.StdEncoding.DecodeString(pc.Data)
	if err != nil || len(data) > apps.MaxPieceBytes {
		h.t.Errorf("a piece of %d bytes (%v)", len(data), err)
	}
	h.mu.Lock()
	h.pieces++
	h.mu.Unlock()
	tb := h.tab(pc.Runner)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.asm = append(tb.asm, data...)
	if pc.Last {
		tb.messages = append(tb.messages, message{pc.Kind, tb.asm})
		tb.asm = nil
		close(tb.changed)
		tb.changed = make(chan struct{})
	}
}

// dialRunnerHost connects a snug provider.
func (e *env) dialRunnerHost() *runnerHost {
	e.t.Helper()
	nc, err := net.Dial("unix", filepath.Join(e.dir, paths.SocketName))
	if err != nil {
		e.t.Fatal(err)
	}
	tok, _ := os.ReadFile(paths.Token(e.dir))
	h := &runnerHost{t: e.t, tabs: map[string]*tab{}, seq: map[string]int64{}}
	h.conn = rpc.New(nc, h, rpc.Limits{MaxBuffered: 64 << 20}, nil) // room to send an 8 MiB frame at once
	go h.conn.Run()
	e.t.Cleanup(func() { h.conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = h.conn.Call(ctx, "hello", map[string]any{"bootstrap": 1, "versions": []int{1}, "role": "provider", "kind": apps.Kind,
		"token": string(tok), "capabilities": []string{apps.CapRunner},
		"instance": map[string]any{"id": "snug-test", "family": "chromium", "brand": "test", "version": "1", "profileLabel": "test"}})
	if err != nil {
		e.t.Fatalf("snug provider hello: %v", err)
	}
	return h
}

// attach opens a runner for app and loads its document.
func (h *runnerHost) attach(runner, app string) *tab {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.conn.Call(ctx, apps.ProviderAttach, apps.AttachParams{Runner: runner, App: app}); err != nil {
		h.t.Fatalf("attach: %v", err)
	}
	tb := h.tab(runner)
	tb.wait(h.t, apps.PieceHTML, func([]byte) bool { return true })
	h.conn.Notify(apps.EventLoad, apps.RunnerParams{Runner: runner})
	return tb
}

// send relays one app message to the runner's instance, in pieces.
func (h *runnerHost) send(runner string, msg []byte) {
	h.mu.Lock()
	h.seq[runner]++
	seq := h.seq[runner]
	h.mu.Unlock()
	for part := 0; ; part++ {
		n := min(len(msg), apps.MaxPieceBytes)
		h.conn.Notify(apps.EventFrame, apps.Piece{Runner: runner, Seq: seq, Part: part, Last: n == len(msg),
			Data: base64.StdEncoding.EncodeToString(msg[:n])})
		msg = msg[n:]
		if len(msg) == 0 {
			return
		}
	}
}

func (h *runnerHost) sendJSON(runner string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(runner, b)
}

// wait returns the first message of kind, after those already taken by
// earlier waits, that match accepts.
func (tb *tab) wait(t testing.TB, kind string, match func([]byte) bool) []byte {
	t.Helper()
	deadline := time.After(60 * time.Second) // slow under -race on a shared machine
	for i := 0; ; {
		tb.mu.Lock()
		for ; i < len(tb.messages); i++ {
			m := tb.messages[i]
			if m.kind == kind && match(m.data) {
				tb.messages = append(tb.messages[:i:i], tb.messages[i+1:]...)
				tb.mu.Unlock()
				return m.data
			}
		}
		ch := tb.changed
		tb.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s message came; had %d messages", kind, len(tb.messages))
		}
	}
}

// frameOf waits for a frame of type typ (and requestId id, when given).
func (tb *tab) frameOf(t testing.TB, typ, id string) map[string]any {
	t.Helper()
	var out map[string]any
	tb.wait(t, apps.PieceFrame, func(b []byte) bool {
		var f map[string]any
		json.Unmarshal(b, &f)
		if f["type"] == typ && (id == "" || f["requestId"] == id) {
			out = f
			return true
		}
		return false
	})
	return out
}

// frames returns every frame received so far, without taking them.
func (tb *tab) frames() []map[string]any {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []map[string]any
	for _, m := range tb.messages {
		if m.kind == apps.PieceFrame {
			var f map[string]any
			json.Unmarshal(m.data, &f)
			out = append(out, f)
		}
	}
	return out
}

// ready loads the app and returns its instanceId from host-ready.
func (h *runnerHost) ready(tb *tab) string {
	h.t.Helper()
	f := tb.frameOf(h.t, "snug:host-ready", "")
	id, _ := f["instanceId"].(string)
	if id == "" {
		h.t.Fatalf("host-ready without an instanceId: %v", f)
	}
	return id
}

var reqN int

func nextID() string {
	reqN++
	return fmt.Sprintf("r%d", reqN)
}
