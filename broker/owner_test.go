package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	browserruntime "github.com/dsh-browser/broker/browser/runtime"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// startOwned runs an in-process broker in personal mode with a state
// directory. owners are its owner executables: the test binary itself makes
// every provider of this process an owner surface, none makes none.
func startOwned(t *testing.T, owners []string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "own")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := broker.New(broker.Config{RuntimeDir: filepath.Join(dir, "run"), StateDir: filepath.Join(dir, "state"),
		OwnerExecutables: owners, Version: "test",
		Services: []service.Register{browserruntime.Register(browserruntime.Config{Personal: true})}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	run := filepath.Join(dir, "run")
	for range 500 {
		if c, err := net.Dial("unix", filepath.Join(run, paths.SocketName)); err == nil {
			c.Close()
			return run
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("broker did not listen")
	return ""
}

func self(t *testing.T) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe}
}

// consoleProvider is a browser provider standing in for the extension (a
// fake, to see exactly what the broker sends the owner's console): one
// HTTP(S) tab, grants without asking, and every event and console.open
// recorded.
type consoleProvider struct {
	conn *rpc.Conn
	id   string

	mu      sync.Mutex
	events  []string // owner.changed topics, joined
	opened  int
	revoked []string
	changed chan struct{} // closed and replaced at every event
}

func (p *consoleProvider) Handle(_ context.Context, req *rpc.Request) (any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch req.Method {
	case browser.ProviderTabsList:
		return []browser.TabSummary{{ID: p.id + ":1", InstanceID: p.id, URL: "https://app.test/", Title: "App"},
			{ID: p.id + ":2", InstanceID: p.id, URL: "https://other.test/", Title: "Other"}}, nil
	case browser.ProviderLeaseGrant:
		return map[string]any{"granted": true, "documentEpoch": "F:L", "url": "https://app.test/", "title": "App"}, nil
	case browser.ProviderLeaseRevoke:
		var v struct{ Lease struct{ ID string } }
		json.Unmarshal(req.Params, &v)
		p.revoked = append(p.revoked, v.Lease.ID)
		return map[string]bool{"released": true}, nil
	case wire.ConsoleOpen:
		p.opened++
		return map[string]bool{"opened": true}, nil
	}
	return nil, wire.Err(wire.CodeInvalidRequest)
}

func (p *consoleProvider) Event(ev *wire.Envelope) {
	var v struct{ Topics []string }
	json.Unmarshal(ev.Value, &v)
	p.mu.Lock()
	p.events = append(p.events, ev.Event+" "+strings.Join(v.Topics, ","))
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// waitTopic waits for an owner.changed event naming topic.
func (p *consoleProvider) waitTopic(t *testing.T, topic string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		p.mu.Lock()
		for i, ev := range p.events {
			if strings.HasPrefix(ev, wire.OwnerChanged+" ") && slices.Contains(strings.Split(strings.TrimPrefix(ev, wire.OwnerChanged+" "), ","), topic) {
				p.events = p.events[i+1:]
				p.mu.Unlock()
				return
			}
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no owner.changed naming %q", topic)
		}
	}
}

func dialConsole(t *testing.T, dir, id string, caps ...string) *consoleProvider {
	t.Helper()
	nc, err := net.Dial("unix", filepath.Join(dir, paths.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(paths.Token(dir))
	p := &consoleProvider{id: id, changed: make(chan struct{})}
	p.conn = rpc.New(nc, p, rpc.Limits{}, nil)
	go p.conn.Run()
	t.Cleanup(func() { p.conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hello := map[string]any{"bootstrap": 1, "versions": []int{1}, "role": "provider", "token": string(tok),
		"capabilities": append(browser.Required(), caps...),
		"instance":     map[string]any{"id": id, "family": "chromium", "brand": "test", "version": "1", "profileLabel": "p"}}
	if _, err := p.conn.Call(ctx, "hello", hello); err != nil {
		t.Fatalf("provider hello: %v", err)
	}
	return p
}

func (p *consoleProvider) call(t *testing.T, method string, params any, v any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := p.conn.Call(ctx, method, params)
	if err == nil && v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s answered %s: %v", method, raw, err)
		}
	}
	return err
}

// TestOwnerMethodsOnlyForOwnerSurfaces: a provider that merely holds the
// token may serve, but the owner's methods are refused POLICY_DENIED, it is
// told nothing, and a client cannot call them at all.
func TestOwnerMethodsOnlyForOwnerSurfaces(t *testing.T) {
	dir := startOwned(t, []string{})
	p := dialConsole(t, dir, "impostor", wire.CapOwnerConsole)
	for _, m := range []string{wire.OwnerState, wire.OwnerStop, wire.OwnerLog} {
		if err := p.call(t, m, map[string]any{}, nil); !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
			t.Errorf("%s from a token holder: %v, want POLICY_DENIED", m, err)
		}
	}
	c, err := client.Dial(context.Background(), client.Options{RuntimeDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range []string{wire.OwnerState, wire.OwnerStop, wire.OwnerLog} {
		if _, err := c.Call(context.Background(), m, map[string]any{}); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("%s from a client: %v, want INVALID_REQUEST", m, err)
		}
	}
	// It is never asked to open the console either.
	raw, err := c.Call(context.Background(), wire.BrokerConsole, map[string]any{})
	if err != nil || string(raw) != `{"opened":false}` {
		t.Fatalf("broker.console with no owner surface: %s %v", raw, err)
	}
	time.Sleep(200 * time.Millisecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.events) != 0 || p.opened != 0 {
		t.Fatalf("the token holder was told %v, opened %d", p.events, p.opened)
	}
}

// TestOwnerConsole drives the console's view of the broker from an owner
// surface: a client appears with its label and admission, its lease
// appears under it, Stop ends it (the client is told, the browser drops
// it) while another client keeps its own, the activity log answers, and
// broker.console asks the browser to show the console. Each change comes
// as an owner.changed event naming its topic.
func TestOwnerConsole(t *testing.T) {
	dir := startOwned(t, self(t))
	p := dialConsole(t, dir, "owner", wire.CapOwnerConsole)
	quiet := dialConsole(t, dir, "plain") // an owner surface without the console: told nothing

	revoked := make(chan string, 4)
	dial := func() *client.Client {
		c, err := client.Dial(context.Background(), client.Options{RuntimeDir: dir, OnEvent: func(ev *wire.Envelope) {
			if ev.Event == browser.EventLeaseRevoked {
				revoked <- string(ev.Value)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a := dial()
	p.waitTopic(t, "clients")
	var st broker.OwnerState
	if err := p.call(t, wire.OwnerState, map[string]any{}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Admission != "open" || st.Version != "test" || len(st.Clients) != 1 || st.Log == nil || st.Log.Problem != nil || st.Journal == nil {
		t.Fatalf("state %+v", st)
	}
	ca := st.Clients[0]
	if ca.PID != os.Getpid() || !strings.HasSuffix(ca.Label, "(pid "+strconv.Itoa(os.Getpid())+")") || ca.Admission != "token" ||
		ca.AdmittedAt == nil || ca.ConnectedAt.IsZero() || len(ca.Grants) != 0 {
		t.Fatalf("client %+v", ca)
	}
	var bst browser.Status
	if err := json.Unmarshal(st.Services[browser.Kind], &bst); err != nil || bst.AccessMode != browser.AccessPersonal {
		t.Fatalf("browser section %s: %v", st.Services[browser.Kind], err)
	}

	claim := func(c *client.Client, session, tab string) browser.LeaseResult {
		t.Helper()
		raw, err := c.Call(context.Background(), browser.MethodClaim, map[string]any{"sessionId": session, "instanceId": "owner", "tab": tab})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		var l browser.LeaseResult
		json.Unmarshal(raw, &l)
		return l
	}
	la := claim(a, "a", "owner:1")
	p.waitTopic(t, "grants")
	b := dial()
	lb := claim(b, "b", "owner:2")
	p.call(t, wire.OwnerState, map[string]any{}, &st)
	if len(st.Clients) != 2 || len(st.Clients[0].Grants) != 1 || len(st.Clients[1].Grants) != 1 {
		t.Fatalf("clients %+v", st.Clients)
	}
	if g := st.Clients[0].Grants[0]; g.ID != la.ID || g.Tab != "owner:1" || g.Origin != "https://app.test" || g.Scope != "tab" ||
		g.Kind != browser.Kind || time.Until(g.ExpiresAt) < 4*time.Minute {
		t.Fatalf("grant %+v", g)
	}

	// Stop one: A loses its lease, B keeps its own.
	var stopped map[string]int
	if err := p.call(t, wire.OwnerStop, map[string]any{"conn": ca.Conn}, &stopped); err != nil || stopped["stopped"] != 1 {
		t.Fatalf("owner.stop: %v %v", stopped, err)
	}
	select {
	case v := <-revoked:
		if !strings.Contains(v, la.ID) {
			t.Fatalf("revoked %s, want %s", v, la.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stopped client was not told")
	}
	p.waitTopic(t, "grants")
	p.call(t, wire.OwnerState, map[string]any{}, &st)
	if len(st.Clients[0].Grants) != 0 || len(st.Clients[1].Grants) != 1 || st.Clients[1].Grants[0].ID != lb.ID {
		t.Fatalf("after Stop: %+v", st.Clients)
	}
	if _, err := a.Call(context.Background(), browser.MethodObserve, map[string]any{"sessionId": "a", "leaseId": la.ID}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatalf("the stopped lease: %v", err)
	}
	// Stop all.
	if err := p.call(t, wire.OwnerStop, map[string]any{}, &stopped); err != nil || stopped["stopped"] != 1 {
		t.Fatalf("owner.stop all: %v %v", stopped, err)
	}
	if err := p.call(t, wire.OwnerStop, map[string]any{"conn": "one"}, nil); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
		t.Fatalf("owner.stop with a bad conn: %v", err)
	}

	// The log answers (the actions themselves are the runtime's and the
	// end-to-end tests').
	var page activity.Page
	if err := p.call(t, wire.OwnerLog, map[string]any{"limit": 10}, &page); err != nil || page.Epoch == "" || page.Entries == nil {
		t.Fatalf("owner.log: %+v %v", page, err)
	}
	for _, bad := range []map[string]any{{"limit": activity.MaxQuery + 1}, {"limit": -1}, {"what": 1}} {
		if err := p.call(t, wire.OwnerLog, bad, nil); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("owner.log %v: %v", bad, err)
		}
	}

	// broker.console: the console-showing browser is asked.
	raw, err := a.Call(context.Background(), wire.BrokerConsole, map[string]any{})
	if err != nil || string(raw) != `{"opened":true}` {
		t.Fatalf("broker.console: %s %v", raw, err)
	}
	// A client leaving is a change too.
	b.Close()
	p.waitTopic(t, "clients")
	p.mu.Lock()
	opened := p.opened
	p.mu.Unlock()
	quiet.mu.Lock()
	defer quiet.mu.Unlock()
	if opened != 1 || len(quiet.events) != 0 || quiet.opened != 0 {
		t.Fatalf("opened %d; the provider without the console was told %v, opened %d", opened, quiet.events, quiet.opened)
	}
}
