package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

const agent = 1 // the connection these tests act as

// recorder is a session's sink that keeps what it was told.
type recorder struct {
	mu     sync.Mutex
	events []agentapi.Event
}

func (r *recorder) Event(ev agentapi.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) named(name string) []agentapi.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []agentapi.Event
	for _, e := range r.events {
		if e.Kind == agentapi.EventAgent && e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) lastState() *agentapi.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].Kind == agentapi.EventState {
			return r.events[i].State
		}
	}
	return nil
}

func param(e agentapi.Event, key string) string {
	var m map[string]any
	json.Unmarshal(e.Params, &m)
	s, _ := m[key].(string)
	return s
}

// start runs a shell shared with the test's agent, which holds control.
func start(t *testing.T, cfg session.Config) (*session.Session, *recorder) {
	t.Helper()
	cfg.ID = "t1"
	cfg.OpenControl = true
	s := termtest.Headless(t, nil, cfg)
	rec := &recorder{}
	s.Subscribe(rec)
	s.ShareWith(agent)
	termtest.WaitSessionText(t, s, "$")
	if _, err := call(s, "request_control", nil); err != nil {
		t.Fatal(err)
	}
	return s, rec
}

func call(s *session.Session, method string, params any) (json.RawMessage, error) {
	return callCtx(context.Background(), s, method, params)
}

func callCtx(ctx context.Context, s *session.Session, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	if params != nil {
		raw, _ = json.Marshal(params)
	}
	rep, err := s.Call(ctx, agentapi.Request{Conn: agent, Label: "tester", Method: method, Params: raw})
	return rep.Result, err
}

func wantCode(t *testing.T, code string, s *session.Session, method string, params any) {
	t.Helper()
	res, err := call(s, method, params)
	var ae *agentapi.Error
	if !errors.As(err, &ae) || ae.Code != code {
		t.Fatalf("%s: %s, %v; want %s", method, res, err, code)
	}
}

func result[T any](t *testing.T, s *session.Session, method string, params any) T {
	t.Helper()
	raw, err := call(s, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func autopilot(t *testing.T) session.Config {
	t.Helper()
	sc := termtest.Shell(t)
	sc.Mode = agentapi.ModeAutopilot
	return sc
}

// type's text is at most MaxTypeText bytes of printable characters.
func TestTypeLimits(t *testing.T) {
	s, _ := start(t, autopilot(t))
	if _, err := call(s, "type", map[string]any{"text": strings.Repeat("#", session.MaxTypeText)}); err != nil {
		t.Fatalf("text at the limit: %v", err)
	}
	wantCode(t, "invalid_input", s, "type", map[string]any{"text": strings.Repeat("#", session.MaxTypeText+1)})
	for _, bad := range []string{"ls\n", "ls\r", "a\x03", "\x1b[A", "a\x7f", "\u0085"} {
		wantCode(t, "invalid_input", s, "type", map[string]any{"text": bad})
	}
	wantCode(t, "invalid_input", s, "type", map[string]any{"text": "x", "extra": 1})
	wantCode(t, "invalid_input", s, "send_key", map[string]any{"key": "Hyper-Q"})
}

// A co-pilot proposal is at most MaxProposal bytes.
func TestProposalLimit(t *testing.T) {
	s, _ := start(t, termtest.Shell(t))
	chunk := strings.Repeat("p", session.MaxTypeText)
	for range session.MaxProposal / session.MaxTypeText {
		if _, err := call(s, "type", map[string]any{"text": chunk}); err != nil {
			t.Fatalf("up to the limit: %v", err)
		}
	}
	wantCode(t, "invalid_input", s, "type", map[string]any{"text": "p"})
	// Backspace takes one character back: then one fits again.
	if _, err := call(s, "send_key", map[string]any{"key": "Backspace"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(s, "type", map[string]any{"text": "q"}); err != nil {
		t.Fatalf("after a backspace: %v", err)
	}
}

// A session remembers MaxRecords finished proposals per connection: the
// oldest goes when one more finishes.
func TestRecordsAreBounded(t *testing.T) {
	s, _ := start(t, termtest.Shell(t))
	var ids []string
	for i := range session.MaxRecords + 1 {
		res := result[agentapi.TypeResult](t, s, "type", map[string]any{"text": "x"})
		ids = append(ids, res.ProposalID)
		done := make(chan agentapi.SendKeyResult, 1)
		go func() { done <- result[agentapi.SendKeyResult](t, s, "send_key", map[string]any{"key": "Enter"}) }()
		termtest.WaitQuestion(t, s, session.AskProposal, agent)
		s.Answer(false)
		if r := <-done; r.Result != agentapi.KeyRejected {
			t.Fatalf("proposal %d: %+v", i, r)
		}
		if i == session.MaxRecords-1 {
			if _, err := call(s, "proposal_state", map[string]any{"proposalId": ids[0]}); err != nil {
				t.Fatalf("the first of %d proposals is forgotten: %v", session.MaxRecords, err)
			}
		}
	}
	wantCode(t, "not_found", s, "proposal_state", map[string]any{"proposalId": ids[0]})
	if st := result[agentapi.ProposalState](t, s, "proposal_state", map[string]any{"proposalId": ids[1]}); st.State != agentapi.ProposalRejected {
		t.Fatalf("the second proposal: %+v", st)
	}
}

// An Enter on a line that holds text the snapshot withholds is refused.
func TestEnterOverWithheldTextIsRefused(t *testing.T) {
	for _, mode := range []string{agentapi.ModeAutopilot, agentapi.ModeCopilot} {
		t.Run(mode, func(t *testing.T) {
			sc := termtest.Shell(t)
			sc.Mode = mode
			s, _ := start(t, sc)
			s.OwnerInput([]byte(`PS1=$'\e[8mhidden\e[28m$ '` + "\r"))
			termtest.WaitSessionText(t, s, "      $")
			snap := result[agentapi.Snapshot](t, s, "snapshot", nil)
			if strings.Contains(strings.Join(snap.Screen, "\n"), "hidden$") {
				t.Fatalf("the snapshot shows concealed text:\n%s", strings.Join(snap.Screen, "\n"))
			}
			if _, err := call(s, "request_control", nil); err != nil {
				t.Fatal(err) // the owner's typing took it back
			}
			wantCode(t, "invalid_input", s, "send_key", map[string]any{"key": "Enter"})
		})
	}
}

// Policy: denied commands never run; asked ones wait for the owner; Enter
// needs an intent when the owner requires one.
func TestAutopilotPolicy(t *testing.T) {
	sc := autopilot(t)
	sc.Policy = session.Policy{
		Deny: []*regexp.Regexp{regexp.MustCompile(`rm -rf`)},
		Ask:  []*regexp.Regexp{regexp.MustCompile(`touch`)},
	}
	sc.RequireIntent = true
	s, rec := start(t, sc)
	call(s, "type", map[string]any{"text": "rm -rf /nothing"})
	wantCode(t, "intent_required", s, "send_key", map[string]any{"key": "Enter"})
	if r := result[agentapi.SendKeyResult](t, s, "send_key", map[string]any{"key": "Enter", "intent": "clean"}); r.Result != agentapi.KeyDenied {
		t.Fatalf("a denied command: %+v", r)
	}
	call(s, "send_key", map[string]any{"key": "Ctrl-U"})

	call(s, "type", map[string]any{"text": "touch approved-file"})
	done := make(chan agentapi.SendKeyResult, 1)
	go func() {
		done <- result[agentapi.SendKeyResult](t, s, "send_key", map[string]any{"key": "Enter", "intent": "make a file"})
	}()
	q := termtest.WaitQuestion(t, s, session.AskApproval, agent)
	if !strings.Contains(q.Text, "wants to run: ") || !strings.Contains(q.Text, "touch approved-file") {
		t.Fatalf("approval question %q", q.Text)
	}
	// While it waits, more input is refused.
	wantCode(t, "approval_pending", s, "type", map[string]any{"text": "x"})
	ap := result[agentapi.ApprovalState](t, s, "check_approval", map[string]any{"approvalId": param(rec.named("approval")[0], "approvalId")})
	if ap.State != agentapi.ApprovalPending {
		t.Fatalf("check_approval %+v", ap)
	}
	s.Answer(true)
	if r := <-done; r.Result != agentapi.KeyExecuted || r.ApprovalID == "" || r.ExecID == "" {
		t.Fatalf("an approved command: %+v", r)
	}
	call(s, "type", map[string]any{"text": "ls approved-file"})
	call(s, "send_key", map[string]any{"key": "Enter", "intent": "check"})
	termtest.WaitSessionText(t, s, "\napproved-file\n$")
}

// An allowed autopilot Enter waits out the grace; the owner can cancel it
// in time, or let it run.
func TestGrace(t *testing.T) {
	sc := autopilot(t)
	sc.Grace = time.Hour // only the owner ends it
	s, _ := start(t, sc)
	call(s, "type", map[string]any{"text": "echo graced"})
	done := make(chan agentapi.SendKeyResult, 1)
	go func() { done <- result[agentapi.SendKeyResult](t, s, "send_key", map[string]any{"key": "Enter"}) }()
	termtest.WaitQuestion(t, s, session.AskExec, agent)
	wantCode(t, "exec_pending", s, "send_key", map[string]any{"key": "Tab"})
	s.Answer(false)
	r := <-done
	if r.Result != agentapi.KeyCancelled {
		t.Fatalf("cancelled in its grace: %+v", r)
	}
	if st := result[agentapi.ExecState](t, s, "exec_state", map[string]any{"execId": r.ExecID}); st.State != agentapi.ExecCancelled {
		t.Fatalf("exec state %+v", st)
	}
	go func() { done <- result[agentapi.SendKeyResult](t, s, "send_key", map[string]any{"key": "Enter"}) }()
	termtest.WaitQuestion(t, s, session.AskExec, agent)
	s.Answer(true)
	if r := <-done; r.Result != agentapi.KeyExecuted {
		t.Fatalf("run at once by the owner: %+v", r)
	}
	termtest.WaitSessionText(t, s, "graced\n$")
}

// interrupt sends Ctrl-C in autopilot only; in co-pilot nothing reaches
// the terminal without the owner.
func TestInterrupt(t *testing.T) {
	s, _ := start(t, autopilot(t))
	// The job prints when it is running in the foreground, so the Ctrl-C
	// cannot reach the shell before it.
	call(s, "type", map[string]any{"text": "sh -c 'echo sleeping; exec sleep 100'"})
	call(s, "send_key", map[string]any{"key": "Enter"})
	termtest.WaitSessionText(t, s, "\nsleeping\n")
	if r := result[agentapi.InterruptResult](t, s, "interrupt", nil); !r.Interrupted {
		t.Fatal("not interrupted")
	}
	termtest.WaitSessionText(t, s, "^C\n$")
	s.SetMode(agentapi.ModeCopilot)
	wantCode(t, "wrong_mode", s, "interrupt", nil)
}

// The person's unsubmitted line is not added to by an agent that got
// control back without the owner's word.
func TestInputPending(t *testing.T) {
	s, _ := start(t, autopilot(t))
	s.OwnerInput([]byte("echo half"))
	termtest.WaitSessionText(t, s, "$ echo half")
	if _, err := call(s, "request_control", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "input_pending", s, "type", map[string]any{"text": "x"})
	s.OwnerInput([]byte("\x15")) // typing takes control back, again
	if _, err := call(s, "request_control", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := call(s, "type", map[string]any{"text": "x"}); err != nil {
		t.Fatalf("after the person cleared the line: %v", err)
	}
}

// When the program exits, writes are refused, the surface generation
// moves and the agent loses its lease.
func TestProcessExit(t *testing.T) {
	s, rec := start(t, autopilot(t))
	before := rec.lastState().Surface
	call(s, "type", map[string]any{"text": "exit 3"})
	call(s, "send_key", map[string]any{"key": "Enter"})
	select {
	case <-s.Done():
	case <-time.After(termtest.Timeout):
		t.Fatal("the shell did not exit")
	}
	if s.ExitCode() != 3 {
		t.Fatalf("exit code %d", s.ExitCode())
	}
	st := rec.lastState()
	if st.ProcessAlive || st.Surface == before {
		t.Fatalf("state after exit %+v", st)
	}
	snap := result[agentapi.Snapshot](t, s, "snapshot", nil)
	if snap.ProcessAlive || snap.EffectiveMode != agentapi.ModeObserve || snap.Controller.Kind != "human" {
		t.Fatalf("snapshot after exit %+v", snap)
	}
	wantCode(t, "process_exited", s, "type", map[string]any{"text": "x"})
	wantCode(t, "process_exited", s, "request_control", nil)
	if len(rec.named("control_revoked")) == 0 {
		t.Fatal("no control_revoked event")
	}
}

// Sessions start private; stopping sharing revokes everything at once.
func TestSharingBoundary(t *testing.T) {
	s := termtest.Headless(t, nil, session.Config{ID: "t1", OpenControl: true})
	rec := &recorder{}
	s.Subscribe(rec)
	wantCode(t, "surface_unavailable", s, "snapshot", nil)
	if st := rec.lastState(); st.Shared || st.Generation == 0 {
		t.Fatalf("initial state %+v", st)
	}
	s.ShareWith(agent)
	g := rec.lastState().Generation
	if _, err := call(s, "request_control", nil); err != nil {
		t.Fatal(err)
	}
	s.Share(false)
	st := rec.lastState()
	if st.Shared || len(st.Participants) != 0 || st.Generation <= g {
		t.Fatalf("after sharing stopped %+v", st)
	}
	wantCode(t, "surface_unavailable", s, "snapshot", nil)
	if s.Bar().Controller != "you" {
		t.Fatal("the lease survived the end of sharing")
	}
}

// Control requests: one lease per session, the owner's refusal, a request
// left unanswered, and a retry that changes its command.
func TestControlRequests(t *testing.T) {
	sc := termtest.Shell(t)
	sc.ID = "t1"
	sc.DecisionWait = 300 * time.Millisecond
	s := termtest.Headless(t, nil, sc)
	rec := &recorder{}
	s.Subscribe(rec)
	s.ShareWith(agent)
	s.ShareWith(2)
	wantCode(t, "not_controller", s, "type", map[string]any{"text": "x"})

	refused := make(chan error, 1)
	go func() { _, err := call(s, "request_control", map[string]any{"command": "make"}); refused <- err }()
	termtest.WaitQuestion(t, s, session.AskControl, agent)
	// Another agent is busy-refused while this request waits, and so is a
	// retry naming another command.
	if _, err := s.Call(context.Background(), agentapi.Request{Conn: 2, Method: "request_control"}); codeOf(err) != "busy" {
		t.Fatalf("a second agent's request: %v", err)
	}
	wantCode(t, "invalid_input", s, "request_control", map[string]any{"command": "rm"})
	s.Answer(false)
	if err := <-refused; codeOf(err) != "control_denied" {
		t.Fatalf("refused request: %v", err)
	}

	// Unanswered until the wait ends: expired, and the state says so.
	_, err := call(s, "request_control", nil)
	if codeOf(err) != "control_denied" || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("unanswered request: %v", err)
	}
	evs := rec.named("control_request")
	id := param(evs[len(evs)-1], "requestId")
	st := result[agentapi.ControlRequestState](t, s, "control_request_state", map[string]any{"requestId": id})
	if st.State != agentapi.RequestExpired || st.OriginalRequest.Method != "request_control" {
		t.Fatalf("control_request_state %+v", st)
	}

	// Granted: the other agent is busy-refused while the lease is held.
	go func() { _, err := call(s, "request_control", nil); refused <- err }()
	termtest.WaitQuestion(t, s, session.AskControl, agent)
	s.Answer(true)
	if err := <-refused; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), agentapi.Request{Conn: 2, Method: "request_control"}); codeOf(err) != "busy" {
		t.Fatalf("request while another holds the lease: %v", err)
	}
	if r := result[agentapi.ReleaseResult](t, s, "release_control", nil); !r.Released {
		t.Fatal("not released")
	}
	wantCode(t, "not_controller", s, "send_key", map[string]any{"key": "Enter"})
}

func codeOf(err error) string {
	var ae *agentapi.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// The broker's question about a program is asked in the bar, first of all
// questions; the owner's answer is returned, and a question the broker
// withdraws leaves the bar.
func TestAskClient(t *testing.T) {
	s := termtest.Headless(t, nil, session.Config{ID: "t1"})
	ctx, cancel := context.WithCancel(context.Background())
	withdrawn := make(chan error, 1)
	go func() { _, err := s.AskClient(ctx, "curl (pid 7)\x1b[2J"); withdrawn <- err }()
	if q := termtest.WaitQuestion(t, s, session.AskClient, 0); q.Text != "curl (pid 7)[2J asks to use the broker" {
		t.Fatalf("question %q", q.Text)
	}
	cancel()
	if err := <-withdrawn; !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn question: %v", err)
	}
	if qs := s.Questions(); len(qs) != 0 {
		t.Fatalf("questions after the broker withdrew: %+v", qs)
	}
	answered := make(chan bool, 1)
	go func() { yes, _ := s.AskClient(context.Background(), "mcp (pid 8)"); answered <- yes }()
	termtest.WaitQuestion(t, s, session.AskClient, 0)
	s.Answer(true)
	if !<-answered {
		t.Fatal("the owner's yes was not returned")
	}
}
