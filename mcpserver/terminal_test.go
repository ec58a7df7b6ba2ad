package mcpserver_test

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/mcpserver"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// An MCP host drives a shared terminal through broker mcp's terminal
// tools, beside the browser tools of the same server: the person admits
// the server in the session's bar, grants it control and accepts its
// co-pilot command; the model reads the output in a snapshot.
func TestTerminalTools(t *testing.T) {
	srv, path := termtest.StartServer(t, agentsock.Config{}) // the owner admits
	s := termtest.Headless(t, srv, session.Config{ID: "t1", Title: "bash"})
	s.Share(true)
	termtest.WaitSessionText(t, s, "$")
	h := connect(t, mcpserver.New(mcpserver.Options{RuntimeDir: t.TempDir(), AgentSocket: path,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}), false)

	list, err := h.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	required := map[string][]string{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		raw, _ := json.Marshal(tool.InputSchema)
		var sch struct{ Required []string }
		json.Unmarshal(raw, &sch)
		required[tool.Name] = sch.Required
	}
	for _, want := range []string{"browser_list", "terminal_list", "terminal_snapshot", "terminal_request_control", "terminal_release_control",
		"terminal_type", "terminal_send_key", "terminal_interrupt", "terminal_proposal_state"} {
		if !slices.Contains(names, want) {
			t.Errorf("no tool %s among %v", want, names)
		}
	}
	for name, want := range map[string][]string{"terminal_type": {"text"}, "terminal_send_key": {"key"}, "terminal_proposal_state": {"proposalId"}, "terminal_snapshot": nil} {
		if !slices.Equal(required[name], want) {
			t.Errorf("%s requires %v, want %v", name, required[name], want)
		}
	}

	// The first call waits for the person's admission.
	listed := make(chan string, 1)
	go func() { out, _ := h.call("terminal_list", nil, false); listed <- out }()
	q := firstQuestion(t, s, session.AskAdmission)
	if q.Label != "test-host" {
		t.Fatalf("the person is asked about %q, want the MCP host's name", q.Label)
	}
	s.Answer(true)
	if out := <-listed; !strings.Contains(out, `session=t1 "bash" mode=copilot (bound`) {
		t.Fatalf("terminal_list:\n%s", out)
	}
	out, _ := h.call("terminal_snapshot", nil, false)
	if !strings.Contains(out, "surface=t1:") || !strings.Contains(out, "control=the person") || !strings.Contains(out, "--- screen ---\n$") {
		t.Fatalf("terminal_snapshot:\n%s", out)
	}

	granted := make(chan string, 1)
	go func() {
		out, _ := h.call("terminal_request_control", map[string]any{"reason": "check the date", "command": "date"}, false)
		granted <- out
	}()
	if q := termtest.WaitQuestion(t, s, session.AskControl, q.Conn); !strings.Contains(q.Text, "check the date [date]") {
		t.Fatalf("control question %q", q.Text)
	}
	s.Answer(true)
	if out := <-granted; !strings.Contains(out, "Control of session=t1 granted") {
		t.Fatalf("terminal_request_control: %s", out)
	}

	out, _ = h.call("terminal_type", map[string]any{"text": "echo mcp-$((6*7))"}, false)
	proposal := regexp.MustCompile(`proposalId=(\S+)`).FindStringSubmatch(out)
	if proposal == nil {
		t.Fatalf("terminal_type: %s", out)
	}
	sent := make(chan string, 1)
	go func() {
		out, _ := h.call("terminal_send_key", map[string]any{"key": "Enter", "intent": "print a number"}, false)
		sent <- out
	}()
	if q := termtest.WaitQuestion(t, s, session.AskProposal, q.Conn); !strings.Contains(q.Text, "echo mcp-$((6*7))⏎ (print a number)") {
		t.Fatalf("proposal question %q", q.Text)
	}
	s.Answer(true)
	if out := <-sent; !strings.HasPrefix(out, "Executed: proposalId="+proposal[1]) {
		t.Fatalf("terminal_send_key: %s", out)
	}
	termtest.WaitSessionText(t, s, "mcp-42")
	out, _ = h.call("terminal_snapshot", map[string]any{"session": "t1"}, false)
	if !strings.Contains(out, "\nmcp-42\n") || !strings.Contains(out, "control=you") {
		t.Fatalf("snapshot after the command:\n%s", out)
	}
	out, _ = h.call("terminal_proposal_state", map[string]any{"proposalId": proposal[1]}, false)
	if !strings.Contains(out, "state=executed") || !strings.Contains(out, "text: echo mcp-$((6*7))") {
		t.Fatalf("terminal_proposal_state: %s", out)
	}
	// Co-pilot: even Ctrl-C goes through the person.
	if out, _ := h.call("terminal_interrupt", nil, true); !strings.HasPrefix(out, agentapi.CodeWrongMode+": ") {
		t.Fatalf("terminal_interrupt in co-pilot: %s", out)
	}
	if out, _ := h.call("terminal_release_control", nil, false); !strings.Contains(out, "given back") {
		t.Fatalf("terminal_release_control: %s", out)
	}
	// A refusal keeps the spec's code and says what to do.
	if out, _ := h.call("terminal_type", map[string]any{"text": "ls"}, true); !strings.HasPrefix(out, agentapi.CodeNotController+": ") ||
		!strings.Contains(out, "call terminal_request_control first") {
		t.Fatalf("typing without control: %s", out)
	}
	// The person stops sharing: the generic answer, and the way back.
	s.Share(false)
	if out, _ := h.call("terminal_snapshot", nil, true); !strings.HasPrefix(out, agentapi.CodeSurfaceUnavailable+": ") ||
		!strings.Contains(out, "share it again") {
		t.Fatalf("snapshot after sharing stopped: %s", out)
	}
}

// Without an agent socket the terminal tools say how to get one.
func TestTerminalToolsWithoutBroker(t *testing.T) {
	h := connect(t, mcpserver.New(mcpserver.Options{RuntimeDir: t.TempDir(), AgentSocket: filepath.Join(t.TempDir(), "conn.sock")}), false)
	for _, name := range []string{"terminal_list", "terminal_snapshot"} {
		out, res := h.call(name, nil, true)
		if !res.IsError || !strings.Contains(out, "broker serve") || !strings.Contains(out, "broker term") {
			t.Errorf("%s: %s", name, out)
		}
	}
}

// RenderSnapshot leaves trailing blank rows out and says so.
func TestRenderSnapshot(t *testing.T) {
	got := mcpserver.RenderSnapshot(&agentapi.Snapshot{SurfaceID: "t1:2", Size: agentapi.Size{Rows: 4, Cols: 20},
		Cursor: &agentapi.Position{Row: 1, Col: 2}, Screen: []string{"$ ls", "$ ", "", ""},
		Controller: agentapi.Controller{Kind: "agent", Conn: 3, Name: "other"}, EffectiveMode: "copilot", ProcessAlive: true})
	want := "surface=t1:2 4×20 cursor=row 2 col 3 control=another agent (other) mode=copilot\n--- screen ---\n$ ls\n$ \n--- end (2 rows below blank) ---\n"
	if got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// firstQuestion waits until the first question to the owner of s is of
// kind, about any connection, and returns it.
func firstQuestion(t *testing.T, s *session.Session, kind string) session.Question {
	t.Helper()
	deadline := time.Now().Add(termtest.Timeout)
	for {
		if qs := s.Questions(); len(qs) > 0 && qs[0].Kind == kind {
			return qs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s question; questions: %+v", kind, s.Questions())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
