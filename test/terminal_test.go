package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/termsvc"
	"github.com/dsh-browser/broker/test/harness/termtest"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// agentSocket waits until the broker's agent socket accepts connections
// and returns its path.
func agentSocket(t *testing.T, b *testenv.Broker) string {
	t.Helper()
	path := filepath.Join(b.RuntimeDir, paths.AgentSocketName)
	deadline := time.Now().Add(termtest.Timeout)
	for {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return path
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent socket %s did not accept connections\n%s", path, b.Stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startTerm runs `broker term` on a fresh terminal, with a shell, using
// the runtime directory dir.
func startTerm(t *testing.T, dir string, args ...string) *termtest.Process {
	t.Helper()
	sh := termtest.Shell(t)
	full := append(append([]string{"term", "--runtime-dir", dir}, args...), "--")
	return termtest.StartProcess(t, termtest.NewTerminal(t, 24, 80), testenv.Binary(t, "broker"), sh.Env, sh.Dir,
		append(full, sh.Command...)...)
}

// The whole story with real processes: a person runs `broker term` beside
// the broker daemon, shares it, admits an agent that speaks the agent
// socket v2 protocol on RUNTIME/conn.sock, grants it control, watches it
// propose a command, accepts it with a key, and takes control back by
// typing.
func TestSharedTerminalEndToEnd(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	sock := agentSocket(t, b)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent socket mode %v %v", fi.Mode(), err)
	}
	p := startTerm(t, b.RuntimeDir)
	p.WaitBar("t1 | private | copilot | control: you")
	p.WaitText("$")

	// The agent, as the spec writes it: hello is the first message.
	a := termtest.Dial(t, sock)
	a.Send(`{"id":"h","method":"hello","params":{"kind":"agent","name":"my-agent"}}`)
	var hello map[string]any
	if m := a.Response(`"h"`); json.Unmarshal(m.Result, &hello) != nil || hello["admission"] != "pending" ||
		hello["protocolVersion"] != float64(2) || hello["kind"] != "agent" || hello["session"] != nil {
		t.Fatalf("hello: %s", m.Raw)
	}
	a.WantCode("admission_pending", "sessions", nil)

	// The person shares the terminal and admits the agent from the bar.
	p.Action('s')
	p.WaitBar(fmt.Sprintf(`"my-agent" #%d asks to connect`, termtest.ConnOf(hello)))
	p.Action('y')
	a.WaitEvent("tools_changed", func(m termtest.Msg) bool { return strings.Contains(string(m.Params), `"session":"t1"`) })
	p.WaitBar("t1 | shared with 1")
	var sessions agentapi.SessionsResult
	a.Must("sessions", nil, &sessions)
	if sessions.Count != 1 || sessions.Sessions[0].ID != "t1" || !sessions.Sessions[0].Bound {
		t.Fatalf("sessions %+v", sessions)
	}
	sameScreen(t, p, a)
	if out, errOut, code := testenv.Run(t, nil, "status", "--runtime-dir", b.RuntimeDir); code != 0 ||
		!strings.Contains(out, "1 (t1 shared with 1); agents connect to "+sock) {
		t.Fatalf("broker status (exit %d):\n%s%s", code, out, errOut)
	}

	// Control, granted by the person.
	req := a.Request("request_control", map[string]any{"reason": "run a check", "command": "echo e2e"})
	p.WaitBar("asks for control: run a check [echo e2e]")
	p.Action('y')
	ctl := termtest.Result[agentapi.ControlResult](t, a.Response(req))
	if !ctl.Granted || ctl.Session != "t1" {
		t.Fatalf("request_control %+v", ctl)
	}
	p.WaitBar(`control: "my-agent" #`)

	// Co-pilot: the agent's command is a proposal; Enter waits for the
	// person's key.
	typed := termtest.Result[agentapi.TypeResult](t, a.Call("type", map[string]any{"text": "echo e2e-$((6*7))"}))
	enter := a.Request("send_key", map[string]any{"key": "Enter", "intent": "print a number"})
	p.WaitBar("proposes: echo e2e-$((6*7))⏎ (print a number)")
	if screen := p.Screen(); a.Answered(enter) || strings.Contains(strings.Join(screen[:len(screen)-1], "\n"), "e2e") {
		t.Fatal("the proposal ran before the person accepted it")
	}
	p.Action('y')
	res := termtest.Result[agentapi.SendKeyResult](t, a.Response(enter))
	if res.Result != agentapi.KeyExecuted || res.ProposalID != typed.ProposalID {
		t.Fatalf("send_key %+v", res)
	}
	p.WaitText("e2e-42\n$")
	if snap := sameScreen(t, p, a); !slices.ContainsFunc(snap.Screen, func(r string) bool { return r == "e2e-42" }) {
		t.Fatalf("the snapshot does not show the command's output: %q", snap.Screen)
	}

	// The person types: control is theirs again, and the agent is told.
	p.Type("echo mine\r")
	a.WaitEvent("control_revoked", func(m termtest.Msg) bool { return strings.Contains(string(m.Params), `"session":"t1"`) })
	p.WaitBar("control: you")
	a.WantCode("lease_expired", "type", map[string]any{"text": "more"})
	p.WaitText("mine\n$")

	// The terminal ends: agents see it go.
	p.Type("exit\r")
	if code := p.Wait(); code != 0 {
		t.Fatalf("broker term exited %d", code)
	}
	deadline := time.Now().Add(termtest.Timeout)
	for {
		a.Must("sessions", nil, &sessions)
		if sessions.Count == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session outlived broker term: %+v", sessions)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameScreen waits until the agent's snapshot equals what the person sees
// less the bar, and returns it.
func sameScreen(t *testing.T, p *termtest.Process, a *termtest.Agent) agentapi.Snapshot {
	t.Helper()
	deadline := time.Now().Add(termtest.Timeout)
	for {
		snap := termtest.Result[agentapi.Snapshot](t, a.Call("snapshot", nil))
		screen := p.Screen()
		if slices.Equal(snap.Screen, screen[:len(screen)-1]) {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot never matched the screen.\nsnapshot:\n%s\nscreen:\n%s",
				strings.Join(snap.Screen, "\n"), strings.Join(screen, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// `broker term` started before any broker is a plain terminal; it
// registers as soon as a broker runs in its runtime directory.
func TestBrokerTermWaitsForTheBroker(t *testing.T) {
	t.Parallel()
	root := testenv.ShortTempDir(t)
	b := &testenv.Broker{RuntimeDir: filepath.Join(root, "run"), StateDir: filepath.Join(root, "state"), Stderr: &testenv.SyncBuffer{}}
	b.Socket = filepath.Join(b.RuntimeDir, paths.SocketName)
	p := startTerm(t, b.RuntimeDir, "--id", "work")
	p.WaitBar("local | private")
	p.Type("echo alone-$((2+2))\r")
	p.WaitText("alone-4\n$")

	b.Start(t)
	p.WaitBar("work | private")
	a := termtest.Dial(t, agentSocket(t, b))
	termtest.ConnOf(a.Hello("late"))
	p.Action('s')
	p.WaitBar("asks to connect")
	p.Action('y')
	a.WaitEvent("tools_changed", func(m termtest.Msg) bool { return strings.Contains(string(m.Params), `"session":"work"`) })

	// The broker goes: the terminal goes on, local again.
	b.Stop(t)
	p.WaitBar("local | shared with 0")
	p.Type("echo still-$((3+3))\r")
	p.WaitText("still-6\n$")
}

// A program that holds the token may register a terminal, but it cannot
// admit an agent: its admission answers are dropped, and the agent waits
// for the owner.
func TestTerminalProviderWithTheTokenCannotAdmit(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	sock := agentSocket(t, b)
	nc, err := net.Dial("unix", b.Socket)
	if err != nil {
		t.Fatal(err)
	}
	prov := rpc.New(nc, refuseAll{}, rpc.Limits{}, nil)
	go prov.Run()
	defer prov.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := prov.Call(ctx, "hello", wire.Hello{Bootstrap: 1, Versions: []int{1}, Role: wire.RoleProvider, Token: b.Token(t),
		Capabilities: []string{termsvc.CapSession}, Kind: termsvc.Kind,
		Instance: &wire.Instance{ID: "impostor", Family: termsvc.Family, Brand: "impostor", Version: "1", ProfileLabel: "x"}}); err != nil {
		t.Fatalf("hello: %v", err)
	}
	if _, err := prov.Call(ctx, termsvc.MethodAttach, termsvc.AttachParams{}); err != nil {
		t.Fatalf("attach: %v", err)
	}

	a := termtest.Dial(t, sock)
	conn := termtest.ConnOf(a.Hello("victim"))
	prov.Notify(termsvc.EventSession, agentapi.Event{Kind: agentapi.EventAdmission, Conn: conn, Allowed: true})
	prov.Notify(termsvc.EventSession, agentapi.Event{Kind: agentapi.EventState, State: &agentapi.State{Shared: true,
		Participants: []uint64{conn}, Generation: 1, Surface: 1, Mode: agentapi.ModeCopilot, ProcessAlive: true}})
	// The broker read the answer and dropped it, saying why (the test's
	// broker traces refusals); the state after it is read too, and the
	// agent is still waiting for the owner.
	deadline := time.Now().Add(termtest.Timeout)
	for !strings.Contains(b.Stderr.String(), "refused: admission answer from a terminal that is not an owner surface") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal traced:\n%s", b.Stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	prov.Call(ctx, termsvc.MethodAttach, termsvc.AttachParams{}) // answered after both events are read
	a.WantCode("admission_pending", "sessions", nil)
}

// One MCP configuration gives an agent the terminals too: `broker mcp`
// (driven by the Go MCP SDK's client over stdio, as a host runs it) lists
// and reads the terminal a person shares with `broker term`, after the
// person admits it in the bar.
func TestMCPReachesSharedTerminals(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	agentSocket(t, b)
	p := startTerm(t, b.RuntimeDir)
	p.WaitBar("t1 | private")
	p.Action('s')
	p.WaitBar("t1 | shared with 0")

	cmd := exec.Command(testenv.Binary(t, "broker"), "mcp", "--runtime-dir", b.RuntimeDir)
	cmd.Stderr = &testenv.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*termtest.Timeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError {
			t.Fatalf("%s: %s\nbroker mcp: %s", name, text, cmd.Stderr)
		}
		return text
	}
	listed := make(chan string, 1)
	go func() { listed <- call("terminal_list", nil) }()
	p.WaitBar(`"e2e-host" #`)
	p.Action('y')
	if out := <-listed; !strings.Contains(out, "session=t1") {
		t.Fatalf("terminal_list: %s", out)
	}
	p.Type("echo seen-by-mcp\r")
	p.WaitText("seen-by-mcp\n$")
	if out := call("terminal_snapshot", nil); !strings.Contains(out, "\nseen-by-mcp\n") {
		t.Fatalf("terminal_snapshot: %s", out)
	}
}

// refuseAll is a provider handler that answers nothing.
type refuseAll struct{}

func (refuseAll) Handle(context.Context, *rpc.Request) (any, error) {
	return nil, wire.Err(wire.CodeInvalidRequest)
}
func (refuseAll) Event(*wire.Envelope) {}
