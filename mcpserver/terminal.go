package mcpserver

// Terminal tools: the person's shared terminals (`broker term`), reached
// as an ordinary agent of the agent socket v2 (RUNTIME/conn.sock, see
// spec/agent-socket-v2.md), the public contract any agent client speaks.
// The server keeps one agent connection, dialed on the first terminal
// tool call and again after it is lost; the person admits it in the bar of
// their terminal, and everything it may do there is theirs to decide.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/term/agentapi"
)

// The terminal tools' arguments.
type (
	TerminalListInput    struct{}
	TerminalSessionInput struct {
		Session string `json:"session,omitempty" jsonschema:"the terminal's session id from terminal_list; omit it for the terminal this connection is bound to"`
	}
	TerminalControlInput struct {
		Session string `json:"session,omitempty" jsonschema:"the terminal's session id from terminal_list; omit it for the terminal this connection is bound to"`
		Reason  string `json:"reason,omitempty" jsonschema:"why you need the terminal, shown to the person"`
		Command string `json:"command,omitempty" jsonschema:"the command you plan to run, shown to the person (a declaration, not a permission)"`
	}
	TerminalTypeInput struct {
		Session string `json:"session,omitempty" jsonschema:"the terminal's session id from terminal_list; omit it for the terminal this connection is bound to"`
		Text    string `json:"text" jsonschema:"printable text to type, without newlines or control characters (at most 4096 bytes); nothing runs until Enter"`
	}
	TerminalKeyInput struct {
		Session string `json:"session,omitempty" jsonschema:"the terminal's session id from terminal_list; omit it for the terminal this connection is bound to"`
		Key     string `json:"key" jsonschema:"a key name: Enter, Tab, Backspace, Escape, Space, Up, Down, Left, Right, Home, End, PageUp, PageDown, Insert, Delete, F1-F12, or Ctrl-A … Ctrl-Z"`
		Intent  string `json:"intent,omitempty" jsonschema:"for Enter: what the command is meant to do, shown to the person (some terminals require it)"`
	}
	TerminalProposalInput struct {
		Session    string `json:"session,omitempty" jsonschema:"the terminal's session id from terminal_list; omit it for the terminal this connection is bound to"`
		ProposalID string `json:"proposalId" jsonschema:"the proposalId from terminal_type or terminal_send_key"`
	}
)

// Timeouts of terminal calls, beyond the agent socket's own waits (the
// person's decisions wait up to a minute).
const (
	terminalReadTimeout   = 30 * time.Second
	terminalDecideTimeout = 90 * time.Second
	// maxAgentLine bounds one line from the agent socket (a snapshot of a
	// very large terminal is well under it).
	maxAgentLine = 16 << 20
)

const terminalSessionNote = " Without session it acts on the terminal this connection is bound to (terminal_list shows it)."

func (s *Server) addTerminalTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "terminal_list",
		Title: "List the shared terminals",
		Description: "List the terminals the person shares with you (each is a `broker term` window on their machine) with their session ids, and which one your commands go to. " +
			"The person admits this connection first, in the bar at the bottom of their terminal; this call waits for that up to 45 seconds. " +
			"Start here; then terminal_snapshot to read the screen.",
		InputSchema: inputSchema[TerminalListInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.terminalList)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "terminal_snapshot",
		Title: "Read a shared terminal's screen",
		Description: "Read what the shared terminal shows now: its visible rows of text, the cursor, who has control (you, the person or another agent) and the mode. No scrollback and no raw output. " +
			"Take a fresh snapshot after every command you run and whenever a tool says the terminal changed." + terminalSessionNote,
		InputSchema: inputSchema[TerminalSessionInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.terminalSnapshot)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "terminal_request_control",
		Title: "Ask for control of a terminal",
		Description: "Ask the person for control of the shared terminal before typing; they grant or refuse it in their terminal's bar (this can take up to a minute). Say why (reason) and, when you know it, the command you plan to run. " +
			"The person takes control back at any moment by typing; then request again only if they agree." + terminalSessionNote,
		InputSchema: inputSchema[TerminalControlInput](nil),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: &no, DestructiveHint: &no},
	}, s.terminalRequestControl)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "terminal_release_control",
		Title:       "Give a terminal back",
		Description: "Give control of the shared terminal back to the person. Call it when you are done." + terminalSessionNote,
		InputSchema: inputSchema[TerminalSessionInput](nil),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: &no, DestructiveHint: &no},
	}, s.terminalReleaseControl)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "terminal_type",
		Title: "Type into a terminal",
		Description: "Type text on the terminal's command line while you hold control; no newline is added and nothing runs yet. " +
			"In co-pilot mode the text becomes a proposal the person reads (its proposalId is returned); in autopilot mode it goes to the terminal. " +
			"Then press Enter with terminal_send_key to run it." + terminalSessionNote,
		InputSchema: inputSchema[TerminalTypeInput](nil),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no},
	}, s.terminalType)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "terminal_send_key",
		Title: "Press a key in a terminal",
		Description: "Press one key in the shared terminal while you hold control. Enter runs the command line: in co-pilot mode it waits until the person accepts your proposal (up to a minute), and in autopilot mode the terminal's policy may ask the person or refuse. " +
			"Give intent with Enter: what the command is for, in a few words. The result says whether it executed, was rejected or denied; then take a terminal_snapshot to see the output." + terminalSessionNote,
		InputSchema: inputSchema[TerminalKeyInput](nil),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no},
	}, s.terminalSendKey)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "terminal_interrupt",
		Title:       "Interrupt a terminal's program",
		Description: "Send Ctrl-C to the program running in the shared terminal, while you hold control in autopilot mode (for example to stop a command that hangs). In co-pilot mode propose it instead: terminal_send_key with Ctrl-C." + terminalSessionNote,
		InputSchema: inputSchema[TerminalSessionInput](nil),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no},
	}, s.terminalInterrupt)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "terminal_proposal_state",
		Title: "Check a proposed command",
		Description: "Check a co-pilot proposal of yours: drafting (still being typed), ready (waiting for the person), executed, rejected (by the person) or denied (by policy), with its text as the person sees it. " +
			"Use it when terminal_send_key stopped waiting before the person answered." + terminalSessionNote,
		InputSchema: inputSchema[TerminalProposalInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.terminalProposalState)
}

// withSession adds the session a tool names to a method's params.
func withSession(session string, params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	if session != "" {
		params["session"] = session
	}
	return params
}

func (s *Server) terminalList(ctx context.Context, req *mcp.CallToolRequest, _ TerminalListInput) (*mcp.CallToolResult, any, error) {
	var res agentapi.SessionsResult
	err := s.terms.call(ctx, req.Session, terminalReadTimeout, agentapi.MethodSessions, nil, &res)
	if ae, ok := errors.AsType[*agentapi.Error](err); ok && ae.Code == agentapi.CodeAdmissionPending {
		// Discovery is answered at once while the person has not
		// answered: wait for their answer, as a first call may.
		err = s.terms.awaitAdmission(ctx, req.Session, &res)
	}
	if err != nil {
		return nil, nil, terminalError(agentapi.MethodSessions, err)
	}
	if res.Count == 0 {
		return text("No terminal is shared with this connection yet. Ask the person to run `broker term`, share it (Ctrl-] then s) and let you in (Ctrl-] then y when its bar asks), then call terminal_list again."), nil, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s shared with you:\n", plural(res.Count, "terminal", "terminals"))
	for _, si := range res.Sessions {
		fmt.Fprintf(&b, "- session=%s %q mode=%s", si.ID, si.Title, si.Mode)
		if si.Bound {
			b.WriteString(" (bound: tools without session act here)")
		}
		if si.Attended {
			b.WriteString(" (the person is using it)")
		}
		b.WriteByte('\n')
	}
	b.WriteString("Next: terminal_snapshot to read the screen; terminal_request_control before typing.\n")
	return text(b.String()), nil, nil
}

func (s *Server) terminalSnapshot(ctx context.Context, req *mcp.CallToolRequest, in TerminalSessionInput) (*mcp.CallToolResult, any, error) {
	var snap agentapi.Snapshot
	if err := s.terms.call(ctx, req.Session, terminalReadTimeout, agentapi.MethodSnapshot, withSession(in.Session, nil), &snap); err != nil {
		return nil, nil, terminalError(agentapi.MethodSnapshot, err)
	}
	return text(RenderSnapshot(&snap)), nil, nil
}

// RenderSnapshot writes a terminal snapshot for a model: one line of
// state, then the screen's rows as they are (trailing blank rows left
// out).
func RenderSnapshot(snap *agentapi.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "surface=%s %d×%d", snap.SurfaceID, snap.Size.Rows, snap.Size.Cols)
	if snap.Cursor != nil {
		fmt.Fprintf(&b, " cursor=row %d col %d", snap.Cursor.Row+1, snap.Cursor.Col+1)
	}
	fmt.Fprintf(&b, " control=%s mode=%s", controllerText(snap.Controller), snap.EffectiveMode)
	if snap.AlternateScreen {
		b.WriteString(" (a full-screen program is showing)")
	}
	if !snap.ProcessAlive {
		b.WriteString(" (the program has exited)")
	}
	rows := snap.Screen
	for len(rows) > 0 && strings.TrimSpace(rows[len(rows)-1]) == "" {
		rows = rows[:len(rows)-1]
	}
	b.WriteString("\n--- screen ---\n")
	for _, r := range rows {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	if blank := len(snap.Screen) - len(rows); blank > 0 {
		fmt.Fprintf(&b, "--- end (%s below blank) ---\n", plural(blank, "row", "rows"))
	} else {
		b.WriteString("--- end ---\n")
	}
	return b.String()
}

func controllerText(c agentapi.Controller) string {
	switch {
	case c.You:
		return "you"
	case c.Kind == "agent" && c.Name != "":
		return "another agent (" + c.Name + ")"
	case c.Kind == "agent":
		return "another agent"
	}
	return "the person"
}

func (s *Server) terminalRequestControl(ctx context.Context, req *mcp.CallToolRequest, in TerminalControlInput) (*mcp.CallToolResult, any, error) {
	params := map[string]any{}
	if in.Reason != "" {
		params["reason"] = in.Reason
	}
	if in.Command != "" {
		params["command"] = in.Command
	}
	var res agentapi.ControlResult
	if err := s.terms.call(ctx, req.Session, terminalDecideTimeout, agentapi.MethodRequestControl, withSession(in.Session, params), &res); err != nil {
		return nil, nil, terminalError(agentapi.MethodRequestControl, err)
	}
	return text(fmt.Sprintf("Control of session=%s granted (requestId=%s). In co-pilot mode what you type is a proposal the person reads, and Enter waits for them to accept it; in autopilot mode your input goes to the terminal. "+
		"The person takes control back by typing. Next: terminal_type, then terminal_send_key with Enter.", res.Session, res.RequestID)), nil, nil
}

func (s *Server) terminalReleaseControl(ctx context.Context, req *mcp.CallToolRequest, in TerminalSessionInput) (*mcp.CallToolResult, any, error) {
	var res agentapi.ReleaseResult
	if err := s.terms.call(ctx, req.Session, terminalReadTimeout, agentapi.MethodReleaseControl, withSession(in.Session, nil), &res); err != nil {
		return nil, nil, terminalError(agentapi.MethodReleaseControl, err)
	}
	if !res.Released {
		return text("You did not hold control; nothing to give back."), nil, nil
	}
	return text("Control given back to the person."), nil, nil
}

func (s *Server) terminalType(ctx context.Context, req *mcp.CallToolRequest, in TerminalTypeInput) (*mcp.CallToolResult, any, error) {
	var res agentapi.TypeResult
	if err := s.terms.call(ctx, req.Session, terminalReadTimeout, agentapi.MethodType, withSession(in.Session, map[string]any{"text": in.Text}), &res); err != nil {
		return nil, nil, terminalError(agentapi.MethodType, err)
	}
	if res.ProposalID != "" {
		return text(fmt.Sprintf("Typed %d bytes into proposalId=%s (co-pilot: the person reads it; nothing runs yet). Next: terminal_send_key with Enter and an intent to propose it.", res.Typed, res.ProposalID)), nil, nil
	}
	return text(fmt.Sprintf("Typed %d bytes on the command line (nothing runs yet). Next: terminal_send_key with Enter to run it.", res.Typed)), nil, nil
}

func (s *Server) terminalSendKey(ctx context.Context, req *mcp.CallToolRequest, in TerminalKeyInput) (*mcp.CallToolResult, any, error) {
	params := map[string]any{"key": in.Key}
	if in.Intent != "" {
		params["intent"] = in.Intent
	}
	var res agentapi.SendKeyResult
	if err := s.terms.call(ctx, req.Session, terminalDecideTimeout, agentapi.MethodSendKey, withSession(in.Session, params), &res); err != nil {
		return nil, nil, terminalError(agentapi.MethodSendKey, err)
	}
	return text(renderKeyResult(in.Key, &res)), nil, nil
}

func renderKeyResult(key string, res *agentapi.SendKeyResult) string {
	ids := ""
	for _, kv := range [][2]string{{"proposalId", res.ProposalID}, {"execId", res.ExecID}, {"approvalId", res.ApprovalID}} {
		if kv[1] != "" {
			ids += " " + kv[0] + "=" + kv[1]
		}
	}
	switch res.Result {
	case agentapi.KeyExecuted:
		return "Executed:" + ids + ". The command reached the terminal; take a terminal_snapshot to see its output."
	case agentapi.KeyRejected:
		return "Rejected by the person:" + ids + ". It did not run. Ask them what they want instead."
	case agentapi.KeyDenied:
		return "Denied by the terminal's policy:" + ids + ". It did not run and will not; do not retry it."
	case agentapi.KeyCancelled:
		return "Cancelled:" + ids + ". The person took over or the wait ended; it did not run. Take a terminal_snapshot before anything else."
	}
	if res.State != "" {
		return fmt.Sprintf("Still waiting for the person (state %s):%s. Nothing ran yet; check later with terminal_proposal_state.", res.State, ids)
	}
	return fmt.Sprintf("Sent %s%s.", key, ids)
}

func (s *Server) terminalInterrupt(ctx context.Context, req *mcp.CallToolRequest, in TerminalSessionInput) (*mcp.CallToolResult, any, error) {
	var res agentapi.InterruptResult
	if err := s.terms.call(ctx, req.Session, terminalReadTimeout, agentapi.MethodInterrupt, withSession(in.Session, nil), &res); err != nil {
		return nil, nil, terminalError(agentapi.MethodInterrupt, err)
	}
	return text("Sent Ctrl-C to the program. Take a terminal_snapshot to see what it did."), nil, nil
}

func (s *Server) terminalProposalState(ctx context.Context, req *mcp.CallToolRequest, in TerminalProposalInput) (*mcp.CallToolResult, any, error) {
	var res agentapi.ProposalState
	if err := s.terms.call(ctx, req.Session, terminalReadTimeout, agentapi.MethodProposalState, withSession(in.Session, map[string]any{"proposalId": in.ProposalID}), &res); err != nil {
		return nil, nil, terminalError(agentapi.MethodProposalState, err)
	}
	meaning := map[string]string{
		agentapi.ProposalDrafting: "still being typed; press Enter with terminal_send_key to propose it",
		agentapi.ProposalReady:    "waiting for the person to accept or reject it",
		agentapi.ProposalExecuted: "the person accepted it and it ran; take a terminal_snapshot",
		agentapi.ProposalRejected: "the person rejected it; it did not run",
		agentapi.ProposalDenied:   "the terminal's policy refused it; it did not run",
	}[res.State]
	return text(fmt.Sprintf("proposalId=%s state=%s: %s.\ntext: %s", res.ProposalID, res.State, meaning, res.Text)), nil, nil
}

// terminalHints say what a model should do after each agent socket error.
var terminalHints = map[string]string{
	agentapi.CodeAdmissionPending:   "the person has not let this connection in yet: ask them to answer y in the bar of their `broker term` (Ctrl-] then y), then call the tool again",
	agentapi.CodeAdmissionDenied:    "the person refused this connection: do not retry; ask them",
	agentapi.CodeSurfaceUnavailable: "the terminal is not shared with you (any more): ask the person to share it again (Ctrl-] then s), then call terminal_list and take a fresh snapshot; do not assume anything ran",
	agentapi.CodeNotAvailable:       "no terminal is shared with you yet: ask the person to share one (Ctrl-] then s in `broker term`), then call terminal_list",
	agentapi.CodeBusy:               "another agent has control of this terminal: wait, or ask the person",
	agentapi.CodeNotController:      "you do not have control: call terminal_request_control first",
	agentapi.CodeLeaseExpired:       "the person took control back: take a terminal_snapshot, and request control again only if they agree",
	agentapi.CodeControlDenied:      "the person refused you control (or did not answer in time): ask them",
	agentapi.CodeProcessExited:      "the program in this terminal has exited: ask the person to open another terminal",
	agentapi.CodeInvalidInput:       "the arguments were refused: text must be printable without newlines or control characters (use terminal_send_key for keys), and keys are names like Enter, Tab, Up or Ctrl-C",
	agentapi.CodeIntentRequired:     "this terminal requires an intent with Enter: call terminal_send_key again with intent saying what the command is for",
	agentapi.CodeInputPending:       "the person has typed on the command line and not finished: wait, take a snapshot, or ask them",
	agentapi.CodeProposalPending:    "your proposal waits for the person: check it with terminal_proposal_state before typing more",
	agentapi.CodeApprovalPending:    "your command waits for the person's approval: wait, then take a snapshot",
	agentapi.CodeExecPending:        "your command is scheduled to run: wait, then take a snapshot",
	agentapi.CodeRateLimited:        "too many requests: slow down and try again in a moment",
	agentapi.CodeMasked:             "the person does not allow this here",
	agentapi.CodeWrongMode:          "that is not possible in this terminal's current mode: take a snapshot to see the mode",
	agentapi.CodeNotFound:           "no such id for this connection: use the ids the tools returned",
	agentapi.CodeConnectionClosing:  "the connection to the terminals closed: call the tool again",
}

// terminalError turns the error of an agent socket call into the error a
// tool returns: the spec's code and message, and what to do next.
func terminalError(method string, err error) error {
	if ae, ok := errors.AsType[*agentapi.Error](err); ok {
		h, known := terminalHints[ae.Code]
		if !known {
			h = "the terminal refused " + method + ": take a terminal_snapshot, and ask the person if it keeps happening"
		}
		return fmt.Errorf("%s: %s; %s.", ae.Code, ae.Message, h)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the terminal did not answer %s in time: take a terminal_snapshot to see where things are", method)
	}
	return err
}

// terminals is the server's agent connection to the shared terminals.
type terminals struct {
	s      *Server
	dialMu sync.Mutex // serialises dialing; lock order: dialMu, then mu
	mu     sync.Mutex
	conn   *agentConn
}

// socket returns the agent socket's path.
func (t *terminals) socket() string {
	return paths.AgentSocket(t.s.opts.AgentSocket, paths.RuntimeDir(t.s.opts.RuntimeDir))
}

// agent returns the live agent connection, dialing it if there is none.
func (t *terminals) agent(ctx context.Context, ss *mcp.ServerSession) (*agentConn, error) {
	t.dialMu.Lock()
	defer t.dialMu.Unlock()
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		select {
		case <-c.closed:
			t.s.log.Info("the agent socket connection was lost; dialing again")
		default:
			return c, nil
		}
	}
	name := "broker mcp"
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			name = p.ClientInfo.Name
		}
	}
	path := t.socket()
	c, err := dialAgent(ctx, path, name)
	if err != nil {
		t.s.log.Warn("cannot reach the agent socket", "socket", path, "err", err)
		return nil, fmt.Errorf("the shared terminals are not reachable at %s: ask the person to start the broker (`broker serve`, or `systemctl --user start broker.socket`) and to run `broker term` in their terminal, then call this tool again (%v)", path, err)
	}
	t.s.log.Info("connected to the agent socket", "socket", path, "conn", c.id, "admission", c.admission)
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, nil
}

// call sends one agent socket request and decodes its result into out.
// An error answer is an *agentapi.Error.
func (t *terminals) call(ctx context.Context, ss *mcp.ServerSession, timeout time.Duration, method string, params map[string]any, out any) error {
	c, err := t.agent(ctx, ss)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := c.call(ctx, method, params)
	if err != nil {
		t.s.log.Debug("terminal call refused", "method", method, "err", err)
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("unexpected answer to %s from the agent socket: %v", method, err)
	}
	return nil
}

// awaitAdmission waits up to admissionWait for the person to answer about
// this connection, then lists the sessions into out.
func (t *terminals) awaitAdmission(ctx context.Context, ss *mcp.ServerSession, out *agentapi.SessionsResult) error {
	c, err := t.agent(ctx, ss)
	if err != nil {
		return err
	}
	t.s.log.Info("waiting for the person to admit this connection in their terminal's bar", "wait", admissionWait)
	deadline := time.NewTimer(admissionWait)
	defer deadline.Stop()
	for {
		changed := c.changes()
		err := t.call(ctx, ss, terminalReadTimeout, agentapi.MethodSessions, nil, out)
		if ae, ok := errors.AsType[*agentapi.Error](err); !ok || ae.Code != agentapi.CodeAdmissionPending {
			return err
		}
		select {
		case <-changed:
		case <-c.closed:
			return agentapi.Errorf(agentapi.CodeConnectionClosing, "the agent socket closed the connection")
		case <-deadline.C:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (t *terminals) close() {
	t.mu.Lock()
	c := t.conn
	t.conn = nil
	t.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// agentConn is one connection to the agent socket: newline-delimited
// JSON, requests answered by id, events without one.
type agentConn struct {
	nc        net.Conn
	id        uint64 // the conn hello reported
	admission string // hello's admission

	wmu    sync.Mutex // one line at a time
	closed chan struct{}

	mu      sync.Mutex
	next    int
	pending map[string]chan agentLine
	changed chan struct{} // closed and replaced on tools_changed
}

// agentLine is one line from the agent socket.
type agentLine struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *agentapi.Error `json:"error"`
	Event  string          `json:"event"`
}

// dialAgent connects to the agent socket at path and says hello as an
// agent named name.
func dialAgent(ctx context.Context, path, name string) (*agentConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	c := &agentConn{nc: nc, closed: make(chan struct{}), pending: map[string]chan agentLine{}, changed: make(chan struct{})}
	go c.read()
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := c.call(hctx, agentapi.MethodHello, map[string]any{"kind": "agent", "name": name})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	var h agentapi.HelloPending
	if err := json.Unmarshal(raw, &h); err != nil || h.ProtocolVersion != agentapi.ProtocolVersion {
		nc.Close()
		return nil, fmt.Errorf("hello answered %s: not the agent socket v2", raw)
	}
	c.id, c.admission = h.Conn, h.Admission
	return c, nil
}

func (c *agentConn) read() {
	defer close(c.closed)
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		line, err := readLine(r, maxAgentLine)
		if err != nil {
			c.nc.Close()
			return
		}
		var m agentLine
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Event != "" {
			if m.Event == agentapi.EventToolsChanged {
				c.mu.Lock()
				close(c.changed)
				c.changed = make(chan struct{})
				c.mu.Unlock()
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// readLine reads one line of at most max bytes, its newline included, and
// returns it without the newline.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("a line from the agent socket is over %d bytes", max)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// changes returns a channel closed at the next tools_changed.
func (c *agentConn) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// call sends one request and waits for its answer.
func (c *agentConn) call(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	ch := make(chan agentLine, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	line, err := json.Marshal(map[string]any{"id": c.next, "method": method, "params": withSession("", params)})
	if err != nil {
		forget()
		return nil, err
	}
	c.wmu.Lock()
	_, err = c.nc.Write(append(line, '\n'))
	c.wmu.Unlock()
	if err != nil {
		forget()
		return nil, agentapi.Errorf(agentapi.CodeConnectionClosing, "the agent socket connection is closed")
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-c.closed:
		forget()
		return nil, agentapi.Errorf(agentapi.CodeConnectionClosing, "the agent socket closed the connection")
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}
