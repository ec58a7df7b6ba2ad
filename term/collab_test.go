package term_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// owner starts a shared shell with one agent in it holding control.
func controlled(t *testing.T, sc session.Config) (*termtest.Owner, *termtest.Agent) {
	t.Helper()
	srv, path := termtest.StartServer(t, agentsock.Config{})
	o := termtest.StartOwner(t, termtest.OwnerConfig{Session: sc, Server: srv})
	o.WaitText("$")
	a := termtest.Dial(t, path)
	termtest.Join(t, o, a, "helper")
	id := a.Request("request_control", map[string]any{"reason": "run the tests", "command": "make test"})
	o.WaitBar("asks for control: run the tests [make test]")
	o.Action('y')
	res := termtest.Result[agentapi.ControlResult](t, a.Response(id))
	if !res.Granted || string(res.OriginalRequest.Params) != `{"command":"make test","reason":"run the tests"}` {
		t.Fatalf("control result %+v", res)
	}
	o.WaitBar(`control: "helper" #`)
	return o, a
}

// In co-pilot the agent's typing is a proposal the owner reads, and its
// Enter waits until the owner accepts; nothing reaches the shell before.
func TestCopilotEnterWaitsForTheOwner(t *testing.T) {
	o, a := controlled(t, termtest.Shell(t))
	typed := termtest.Result[agentapi.TypeResult](t, a.Call("type", map[string]any{"text": "echo copilot-$((6*7))"}))
	if typed.ProposalID == "" || typed.Typed != len("echo copilot-$((6*7))") {
		t.Fatalf("type result %+v", typed)
	}
	enter := a.Request("send_key", map[string]any{"key": "Enter", "intent": "print a number"})
	o.WaitBar("proposes: echo copilot-$((6*7))⏎")
	for _, row := range o.Screen()[:23] {
		if strings.Contains(row, "copilot") {
			t.Fatalf("the proposal reached the shell before the owner accepted it:\n%s", strings.Join(o.Screen(), "\n"))
		}
	}
	if a.Answered(enter) {
		t.Fatal("send_key Enter returned before the owner answered")
	}
	st := termtest.Result[agentapi.ProposalState](t, a.Call("proposal_state", map[string]any{"proposalId": typed.ProposalID}))
	if st.State != agentapi.ProposalReady || st.Text != "echo copilot-$((6*7))" {
		t.Fatalf("proposal state %+v", st)
	}
	o.Action('y')
	res := termtest.Result[agentapi.SendKeyResult](t, a.Response(enter))
	if res.Result != agentapi.KeyExecuted || res.ProposalID != typed.ProposalID || res.ExecID == "" {
		t.Fatalf("send_key result %+v", res)
	}
	o.WaitText("copilot-42\n$")
	termtest.SameScreen(t, o, a)
	ex := termtest.Result[agentapi.ExecState](t, a.Call("exec_state", map[string]any{"execId": res.ExecID}))
	if ex.State != agentapi.ExecExecuted {
		t.Fatalf("exec state %+v", ex)
	}
	a.WaitEvent("proposal", func(m termtest.Msg) bool { return strings.Contains(string(m.Params), `"executed"`) })

	// A rejected proposal never runs.
	a.Must("type", map[string]any{"text": "echo never-run"}, nil)
	enter = a.Request("send_key", map[string]any{"key": "Enter"})
	o.WaitBar("proposes: echo never-run")
	o.Action('n')
	if r := termtest.Result[agentapi.SendKeyResult](t, a.Response(enter)); r.Result != agentapi.KeyRejected {
		t.Fatalf("rejected proposal: %+v", r)
	}
	o.Type("echo owner-still-here\r")
	o.WaitText("owner-still-here\n$")
	if strings.Contains(strings.Join(o.Screen(), "\n"), "never-run") {
		t.Fatal("a rejected proposal reached the shell")
	}
}

// In autopilot the controller's input goes straight to the shell; the
// moment the person types, control is theirs again.
func TestOwnerTypingTakesControlBack(t *testing.T) {
	sc := termtest.Shell(t)
	sc.Mode = agentapi.ModeAutopilot
	o, a := controlled(t, sc)
	a.Must("type", map[string]any{"text": "echo auto-$((2+3))"}, nil)
	o.WaitText("$ echo auto-$((2+3))")
	res := termtest.Result[agentapi.SendKeyResult](t, a.Call("send_key", map[string]any{"key": "Enter"}))
	if res.Result != agentapi.KeyExecuted {
		t.Fatalf("send_key %+v", res)
	}
	o.WaitText("auto-5\n$")

	o.Type("x")
	ev := a.WaitEvent("control_revoked", nil)
	if !strings.Contains(string(ev.Params), `"owner_input"`) || !strings.Contains(string(ev.Params), `"session":"t1"`) {
		t.Fatalf("revocation event %s", ev.Raw)
	}
	a.WantCode("lease_expired", "type", map[string]any{"text": "y"})
	a.WantCode("lease_expired", "send_key", map[string]any{"key": "Enter"})
	st := termtest.Result[agentapi.StatusResult](t, a.Call("status", nil))
	if st.Controller == nil || st.Controller.Kind != "human" || !st.Attended || !st.Shared || !st.SurfaceAvailable {
		t.Fatalf("status %+v", st)
	}
	o.WaitBar("control: you")
	o.Type("\x15") // the person clears the line again
	termtest.SameScreen(t, o, a)
}

// A connection the owner refuses gets admission_denied for everything; a
// new connection with the same label is asked about afresh.
func TestDeniedAgentIsDeniedEverything(t *testing.T) {
	srv, path := termtest.StartServer(t, agentsock.Config{})
	o := termtest.StartOwner(t, termtest.OwnerConfig{Session: termtest.Shell(t), Server: srv})
	o.WaitText("$")
	o.Action('s')
	o.WaitBar("shared with 0")

	a := termtest.Dial(t, path)
	hello := a.Hello("intruder")
	if hello["admission"] != "pending" || hello["session"] != nil || hello["mode"] != nil {
		t.Fatalf("pending hello %v", hello)
	}
	for _, m := range []string{"sessions", "list_tabs", "affordances", "navigation_affordances", "status"} {
		a.WantCode("admission_pending", m, nil) // discovery is answered at once
	}
	waiting := a.Request("snapshot", nil) // waits for the owner
	o.WaitBar(`"intruder" #1 asks to connect`)
	o.Action('n')
	if m := a.Response(waiting); m.Code() != "admission_denied" {
		t.Fatalf("the waiting snapshot got %s", m.Raw)
	}
	a.WaitEvent("tools_changed", nil)
	for _, m := range []string{"hello", "sessions", "snapshot", "status", "request_control", "type", "no_such_method"} {
		a.WantCode("admission_denied", m, map[string]any{"kind": "agent"})
	}
	o.WaitBar("| ^] menu") // nothing waits for the owner any more

	again := termtest.Dial(t, path)
	if h := again.Hello("intruder"); h["admission"] != "pending" {
		t.Fatalf("a new connection with the same label inherited %v", h["admission"])
	}
	o.WaitBar(`"intruder" #2 asks to connect`)
}

// A disconnected agent loses its lease and its pending proposal at once.
func TestDisconnectedAgentsProposalDisappears(t *testing.T) {
	o, a := controlled(t, termtest.Shell(t))
	a.Must("type", map[string]any{"text": "echo left-behind"}, nil)
	a.Request("send_key", map[string]any{"key": "Enter"})
	o.WaitBar("proposes: echo left-behind")
	a.Close()
	o.WaitScreen("the proposal to go", func(rows []string) bool {
		bar := rows[len(rows)-1]
		return !strings.Contains(bar, "left-behind") && strings.Contains(bar, "control: you")
	})
	if qs := o.Session().Questions(); len(qs) != 0 {
		t.Fatalf("questions left: %+v", qs)
	}
	o.Action('y') // nothing to accept: nothing may run
	o.Type("echo done\r")
	o.WaitText("done\n$")
	if strings.Contains(strings.Join(o.Screen()[:23], "\n"), "left-behind") {
		t.Fatal("the departed agent's proposal ran")
	}
}

// When the owner has not answered by the end of send_key's wait, the
// proposal stays ready: more input is refused until the owner answers, and
// an acceptance then still runs it, reported by events.
func TestProposalOutlivesTheWait(t *testing.T) {
	sc := termtest.Shell(t)
	sc.DecisionWait = 200 * time.Millisecond
	o, a := controlled(t, sc)
	a.Must("type", map[string]any{"text": "echo late-$((1+1))"}, nil)
	res := termtest.Result[agentapi.SendKeyResult](t, a.Call("send_key", map[string]any{"key": "Enter"}))
	if res.Result != agentapi.KeySent || res.State != agentapi.ProposalReady || res.ProposalID == "" {
		t.Fatalf("send_key after the wait: %+v", res)
	}
	a.WantCode("proposal_pending", "type", map[string]any{"text": "more"})
	a.WantCode("proposal_pending", "send_key", map[string]any{"key": "Tab"})
	o.WaitBar("proposes: echo late-$((1+1))")
	o.Action('y')
	o.WaitText("late-2\n$")
	a.WaitEvent("exec", func(m termtest.Msg) bool { return strings.Contains(string(m.Params), `"executed"`) })
	st := termtest.Result[agentapi.ProposalState](t, a.Call("proposal_state", map[string]any{"proposalId": res.ProposalID}))
	if st.State != agentapi.ProposalExecuted {
		t.Fatalf("proposal %+v", st)
	}
}
