package termsvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/term/termsvc"
	"github.com/dsh-browser/broker/test/harness/termtest"
	"github.com/dsh-browser/broker/wire"
)

// daemon is an in-process broker hosting the terminal kind, with its
// runtime directory and agent socket.
type daemon struct {
	dir, agentSocket string
	stop             func() error
}

// startBroker runs a broker with the terminal kind in dir (a fresh one if
// ""). With owner false no process is an owner executable, so the test's
// own providers are not owner surfaces.
func startBroker(t testing.TB, dir string, owner bool, admission ...string) *daemon {
	return startBrokerWith(t, dir, owner, agentsock.Config{}, admission...)
}

// startBrokerWith is startBroker with the agent socket's settings.
func startBrokerWith(t testing.TB, dir string, owner bool, sock agentsock.Config, admission ...string) *daemon {
	t.Helper()
	if dir == "" {
		d, err := os.MkdirTemp("", "ts")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	d := &daemon{dir: dir, agentSocket: filepath.Join(dir, paths.AgentSocketName)}
	sock.SocketPath = d.agentSocket
	cfg := broker.Config{RuntimeDir: dir, Services: []service.Register{
		termsvc.Register(termsvc.Config{Socket: sock}),
	}}
	if len(admission) > 0 {
		cfg.Admission = admission[0]
	}
	if !owner {
		cfg.OwnerExecutables = []string{filepath.Join(dir, "no-such-program")}
	}
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	stopped := false
	d.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { d.stop() })
	deadline := time.Now().Add(termtest.Timeout)
	for {
		_, err1 := os.Stat(filepath.Join(dir, paths.SocketName))
		c, err2 := net.Dial("unix", d.agentSocket)
		if err2 == nil {
			c.Close()
		}
		if err1 == nil && err2 == nil {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker's sockets did not appear")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// linked starts a shell and links it to the broker in dir, as `broker
// term` does; it waits until the link is up and returns the session.
func linked(t testing.TB, dir, name string) (*session.Session, chan string) {
	t.Helper()
	s := termtest.Headless(t, nil, session.Config{ID: "local"})
	changes := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		termsvc.Link(ctx, s, termsvc.LinkConfig{RuntimeDir: dir, Name: name, Retry: 200 * time.Millisecond,
			OnChange: func(id string) { changes <- id }})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitChange(t, changes, func(id string) bool { return id != "" })
	return s, changes
}

func waitChange(t testing.TB, changes chan string, ok func(string) bool) string {
	t.Helper()
	for {
		select {
		case id := <-changes:
			if ok(id) {
				return id
			}
		case <-time.After(termtest.Timeout):
			t.Fatal("the link did not change as expected")
		}
	}
}

// The whole agent path through the relay: admission asked in the owner's
// session and answered there, discovery, snapshot, control, a co-pilot
// proposal accepted by the owner, and the broker's status.
func TestRelay(t *testing.T) {
	d := startBroker(t, "", true)
	s, _ := linked(t, d.dir, "")
	if s.ID() != "t1" {
		t.Fatalf("the broker named the session %q, want t1", s.ID())
	}
	termtest.WaitSessionText(t, s, "$")

	a := termtest.Dial(t, d.agentSocket)
	hello := a.Hello("relayed")
	if hello["admission"] != "pending" {
		t.Fatalf("hello %v: want admission pending (the owner admits)", hello)
	}
	conn := termtest.ConnOf(hello)
	a.WantCode("admission_pending", "sessions", nil)
	s.Share(true)
	if q := termtest.WaitQuestion(t, s, session.AskAdmission, conn); !strings.Contains(q.Text, `"relayed"`) {
		t.Fatalf("admission question %q", q.Text)
	}
	s.Answer(true)
	a.WaitEvent("tools_changed", func(m termtest.Msg) bool { return strings.Contains(string(m.Params), `"session":"t1"`) })

	var sessions agentapi.SessionsResult
	a.Must("sessions", nil, &sessions)
	if sessions.Count != 1 || sessions.Sessions[0].ID != "t1" || !sessions.Sessions[0].Bound {
		t.Fatalf("sessions %+v", sessions)
	}
	snap := termtest.Result[agentapi.Snapshot](t, a.Call("snapshot", nil))
	if !strings.HasPrefix(snap.SurfaceID, "t1:") || snap.Size.Rows != 24 {
		t.Fatalf("snapshot %+v", snap)
	}

	req := a.Request("request_control", map[string]any{"reason": "build"})
	termtest.WaitQuestion(t, s, session.AskControl, conn)
	s.Answer(true)
	ctl := termtest.Result[agentapi.ControlResult](t, a.Response(req))
	if !ctl.Granted || ctl.Session != "t1" {
		t.Fatalf("control %+v", ctl)
	}
	typed := termtest.Result[agentapi.TypeResult](t, a.Call("type", map[string]any{"text": "echo relayed-$((6*7))"}))
	enter := a.Request("send_key", map[string]any{"key": "Enter", "intent": "print"})
	termtest.WaitQuestion(t, s, session.AskProposal, conn)
	if a.Answered(enter) {
		t.Fatal("Enter returned before the owner accepted")
	}
	s.Answer(true)
	res := termtest.Result[agentapi.SendKeyResult](t, a.Response(enter))
	if res.Result != agentapi.KeyExecuted || res.ProposalID != typed.ProposalID {
		t.Fatalf("send_key %+v", res)
	}
	termtest.WaitSessionText(t, s, "relayed-42")
	a.WaitEvent("proposal", func(m termtest.Msg) bool {
		return strings.Contains(string(m.Params), `"executed"`) && strings.Contains(string(m.Params), `"session":"t1"`)
	})
	// A session error keeps its code and message through the relay.
	if m := a.WantCode("not_found", "proposal_state", map[string]any{"proposalId": "t1.p999"}); m.Error.Message == "" {
		t.Fatal("the relayed error lost its message")
	}

	c, err := client.Dial(context.Background(), client.Options{RuntimeDir: d.dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.Call(context.Background(), "broker.status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Providers map[string]int
		Services  map[string]termsvc.Status
	}
	json.Unmarshal(raw, &st)
	ts := st.Services["terminal"]
	if st.Providers["terminal"] != 1 || ts.AgentSocket != d.agentSocket || len(ts.Sessions) != 1 ||
		ts.Sessions[0].ID != "t1" || !ts.Sessions[0].Shared || ts.Sessions[0].Participants != 1 || !ts.Sessions[0].OwnerSurface {
		t.Fatalf("status %s", raw)
	}
}

// Several terminals are several tabs: each gets a free name, the one asked
// for when no other has it.
func TestTabNames(t *testing.T) {
	d := startBroker(t, "", true)
	one, _ := linked(t, d.dir, "")
	two, _ := linked(t, d.dir, "")
	named, _ := linked(t, d.dir, "build")
	clash, _ := linked(t, d.dir, "build")
	got := []string{one.ID(), two.ID(), named.ID(), clash.ID()}
	if strings.Join(got, " ") != "t1 t2 build t3" {
		t.Fatalf("session names %v", got)
	}
	// A name is at most MaxName bytes of letters, digits, _ and -.
	if _, err := dialRaw(t, d.dir, strings.Repeat("n", termsvc.MaxName)); err != nil {
		t.Fatalf("a name at the limit: %v", err)
	}
	for _, bad := range []string{strings.Repeat("n", termsvc.MaxName+1), "two words", "-x", "t\x1b"} {
		if _, err := dialRaw(t, d.dir, bad); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("name %q: %v, want INVALID_REQUEST", bad, err)
		}
	}
}

// When the broker goes, agents lose the session at once and the terminal
// is private; when a broker is back in the same runtime directory, the
// terminal registers again by itself.
func TestBrokerGoesAndComesBack(t *testing.T) {
	d := startBroker(t, "", true)
	s, changes := linked(t, d.dir, "")
	a := termtest.Dial(t, d.agentSocket)
	conn := termtest.ConnOf(a.Hello("first"))
	termtest.Admit(t, s, a, conn)
	id := a.Request("request_control", nil)
	termtest.WaitQuestion(t, s, session.AskControl, conn)
	s.Answer(true)
	termtest.Result[agentapi.ControlResult](t, a.Response(id))
	if s.Bar().Controller == "you" {
		t.Fatal("the agent does not hold control")
	}

	if err := d.stop(); err != nil {
		t.Fatalf("broker stopped with %v", err)
	}
	a.WaitClosed()
	waitChange(t, changes, func(id string) bool { return id == "" })
	if b := s.Bar(); b.Controller != "you" || b.Participants != 0 {
		t.Fatalf("after the broker left: %+v", b)
	}

	d2 := startBroker(t, d.dir, true)
	waitChange(t, changes, func(id string) bool { return id == "t1" })
	b := termtest.Dial(t, d2.agentSocket)
	conn = termtest.ConnOf(b.Hello("second"))
	termtest.Admit(t, s, b, conn)
	termtest.Result[agentapi.Snapshot](t, b.Call("snapshot", nil))
}

// rawProvider is a program that holds the token and registers a terminal
// provider itself, speaking the relay by hand.
type rawProvider struct {
	conn  *rpc.Conn
	peers chan []agentapi.Peer
}

func (p *rawProvider) Handle(context.Context, *rpc.Request) (any, error) {
	return termsvc.CallResult{Error: agentapi.Errorf(agentapi.CodeNotAvailable, "raw")}, nil
}

func (p *rawProvider) Event(ev *wire.Envelope) {
	var pp termsvc.PeersParams
	if ev.Event == termsvc.EventPeers && json.Unmarshal(ev.Value, &pp) == nil {
		p.peers <- pp.Peers
	}
}

func dialRaw(t *testing.T, dir, name string) (*rawProvider, error) {
	t.Helper()
	nc, err := net.Dial("unix", filepath.Join(dir, paths.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(paths.Token(dir))
	p := &rawProvider{peers: make(chan []agentapi.Peer, 64)}
	p.conn = rpc.New(nc, p, rpc.Limits{}, nil)
	go p.conn.Run()
	t.Cleanup(func() { p.conn.Close() })
	ctx := context.Background()
	if _, err := p.conn.Call(ctx, "hello", wire.Hello{Bootstrap: 1, Versions: []int{1}, Role: wire.RoleProvider, Token: string(tok),
		Capabilities: []string{termsvc.CapSession}, Kind: termsvc.Kind,
		Instance: &wire.Instance{ID: "raw-" + name, Family: termsvc.Family, Brand: "raw", Version: "1", ProfileLabel: "raw"}}); err != nil {
		t.Fatal(err)
	}
	_, err = p.conn.Call(ctx, termsvc.MethodAttach, termsvc.AttachParams{Name: name})
	return p, err
}

// An admission answer counts only from an owner surface: a program that
// holds the token and registers a terminal cannot admit an agent, however
// it words its events; the same events from an owner surface do admit.
// Such a provider is not even told of pending connections.
func TestOnlyAnOwnerSurfaceAdmits(t *testing.T) {
	for _, owner := range []bool{false, true} {
		t.Run(map[bool]string{false: "token only", true: "owner surface"}[owner], func(t *testing.T) {
			d := startBroker(t, "", owner)
			p, err := dialRaw(t, d.dir, "raw")
			if err != nil {
				t.Fatal(err)
			}
			a := termtest.Dial(t, d.agentSocket)
			conn := termtest.ConnOf(a.Hello("victim"))
			// Told of the pending connection only as an owner surface.
			told := false
			for deadline := time.After(time.Second); !told; {
				select {
				case peers := <-p.peers:
					for _, peer := range peers {
						told = told || (peer.Conn == conn && peer.Admission == "pending")
					}
					continue
				case <-deadline:
				}
				break
			}
			if told != owner {
				t.Fatalf("told of the pending connection: %v", told)
			}
			forge := func(ev agentapi.Event) {
				if err := p.conn.Notify(termsvc.EventSession, ev); err != nil {
					t.Fatal(err)
				}
			}
			forge(agentapi.Event{Session: "raw", Kind: agentapi.EventAdmission, Conn: conn, Allowed: true})
			forge(agentapi.Event{Kind: agentapi.EventState, State: &agentapi.State{ID: "raw", Shared: true,
				Participants: []uint64{conn}, Generation: 1, Surface: 1, Mode: agentapi.ModeCopilot, ProcessAlive: true}})
			if !owner {
				// The answer was dropped: the connection is still pending,
				// and its calls still wait for the owner.
				time.Sleep(200 * time.Millisecond)
				a.WantCode("admission_pending", "sessions", nil)
				return
			}
			a.WaitEvent("tools_changed", func(m termtest.Msg) bool { return strings.Contains(string(m.Params), `"session":"raw"`) })
			var sessions agentapi.SessionsResult
			a.Must("sessions", nil, &sessions)
			if sessions.Count != 1 || sessions.Sessions[0].ID != "raw" {
				t.Fatalf("sessions %+v", sessions)
			}
		})
	}
}

// Under --admission=prompt the broker asks an owner surface about each new
// client; a terminal is one, and the owner answers in its bar.
func TestBrokerAsksTheOwnerInTheBar(t *testing.T) {
	d := startBroker(t, "", true, broker.AdmissionPrompt)
	s, _ := linked(t, d.dir, "")
	for _, allow := range []bool{true, false} {
		dialed := make(chan error, 1)
		go func() {
			c, err := client.Dial(context.Background(), client.Options{RuntimeDir: d.dir, AdmissionWait: termtest.Timeout})
			if err == nil {
				c.Close()
			}
			dialed <- err
		}()
		q := termtest.WaitQuestion(t, s, session.AskClient, 0)
		if !strings.Contains(q.Text, "asks to use the broker") || !strings.Contains(q.Label, "(pid ") {
			t.Fatalf("question %+v", q)
		}
		s.Answer(allow)
		err := <-dialed
		if allow != (err == nil) || (!allow && !client.IsCode(err, wire.CodeAdmissionDenied)) {
			t.Fatalf("answered %v: dial %v", allow, err)
		}
		if qs := s.Questions(); len(qs) != 0 {
			t.Fatalf("questions left: %+v", qs)
		}
	}
}
