package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/dsh-browser/broker/term/agentapi"
)

type handler func(s *Session, ctx context.Context, req agentapi.Request) (agentapi.Reply, error)

// methods are the agent methods a session answers, sorted.
var methods = map[string]handler{
	agentapi.MethodAffordances:         (*Session).affordances,
	agentapi.MethodCheckApproval:       (*Session).checkApproval,
	agentapi.MethodControlRequestState: (*Session).controlRequestState,
	agentapi.MethodExecState:           (*Session).execState,
	agentapi.MethodInterrupt:           (*Session).interrupt,
	agentapi.MethodProposalState:       (*Session).proposalState,
	agentapi.MethodReleaseControl:      (*Session).releaseControl,
	agentapi.MethodRequestAttention:    (*Session).requestAttention,
	agentapi.MethodRequestControl:      (*Session).requestControl,
	agentapi.MethodSendKey:             (*Session).sendKey,
	agentapi.MethodSnapshot:            (*Session).snapshot,
	agentapi.MethodStatus:              (*Session).status,
	agentapi.MethodType:                (*Session).typeText,
}

// Call implements [agentapi.Session].
func (s *Session) Call(ctx context.Context, req agentapi.Request) (agentapi.Reply, error) {
	h, ok := methods[req.Method]
	if !ok {
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeUnsupported, "%s is not a session method", req.Method)
	}
	return h(s, ctx, req)
}

// accessLocked checks that the connection participates and that the owner
// does not withhold the method.
func (s *Session) accessLocked(req agentapi.Request) error {
	if !s.shared {
		return agentapi.Unavailable("session " + s.id + " is private")
	}
	if !s.participants[req.Conn] {
		return agentapi.Unavailable(fmt.Sprintf("connection %d does not participate in session %s", req.Conn, s.id))
	}
	if slices.Contains(s.cfg.Masked, req.Method) {
		return agentapi.Errorf(agentapi.CodeMasked, "the owner withholds %s in this session", req.Method)
	}
	if req.Label != "" {
		s.labels[req.Conn] = req.Label
	}
	return nil
}

// mayWriteLocked checks that conn holds the lease of a live program.
func (s *Session) mayWriteLocked(conn uint64) error {
	switch {
	case !s.alive:
		return agentapi.Errorf(agentapi.CodeProcessExited, "the program in this terminal has exited")
	case s.controller == conn:
		return nil
	case s.revoked[conn]:
		return agentapi.Errorf(agentapi.CodeLeaseExpired, "the owner took control back; request_control again")
	}
	return agentapi.Errorf(agentapi.CodeNotController, "this connection does not hold control; call request_control")
}

// pendingLocked refuses autopilot input while conn's earlier Enter, or the
// person's own typing, is unfinished.
func (s *Session) pendingLocked(conn uint64) error {
	for _, a := range s.approvals {
		if a.conn == conn && a.state == agentapi.ApprovalPending {
			return agentapi.Errorf(agentapi.CodeApprovalPending, "approval %s awaits the owner", a.id)
		}
	}
	for _, e := range s.execs {
		if e.conn == conn && e.state == agentapi.ExecScheduled {
			return agentapi.Errorf(agentapi.CodeExecPending, "execution %s is scheduled", e.id)
		}
	}
	if s.lineDirty {
		return agentapi.Errorf(agentapi.CodeInputPending, "the person has unsubmitted input on the line")
	}
	return nil
}

func (s *Session) readyProposalLocked(conn uint64) *proposal {
	for _, p := range s.proposals {
		if p.conn == conn && p.state == agentapi.ProposalReady {
			return p
		}
	}
	return nil
}

func (s *Session) draftLocked(conn uint64) *proposal {
	for _, p := range s.proposals {
		if p.conn == conn && p.state == agentapi.ProposalDrafting {
			return p
		}
	}
	return nil
}

func (s *Session) replyLocked(v any) (agentapi.Reply, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return agentapi.Reply{}, err
	}
	return agentapi.Reply{Result: raw, Generation: s.gen}, nil
}

// decode reads params strictly into v; absent params leave v zero.
func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return agentapi.Errorf(agentapi.CodeInvalidInput, "params: %v", err)
	}
	return nil
}

func (s *Session) controllerLocked(conn uint64) agentapi.Controller {
	if s.controller == 0 {
		return agentapi.Controller{Kind: "human"}
	}
	return agentapi.Controller{Kind: "agent", Conn: s.controller, Name: s.labels[s.controller], You: s.controller == conn}
}

func (s *Session) effectiveModeLocked() string {
	if !s.alive {
		return agentapi.ModeObserve
	}
	return s.mode
}

func (s *Session) snapshot(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	rows, cols := s.screen.Size()
	snap := agentapi.Snapshot{
		SurfaceID:       fmt.Sprintf("%s:%d", s.id, s.surface),
		Generation:      s.gen,
		Revision:        s.screen.Revision(),
		OutputSeq:       s.outputSeq,
		Size:            agentapi.Size{Rows: rows, Cols: cols},
		Screen:          s.screen.Lines(true),
		AlternateScreen: s.screen.AltScreen(),
		Controller:      s.controllerLocked(req.Conn),
		ProcessAlive:    s.alive,
		Mode:            s.mode,
		EffectiveMode:   s.effectiveModeLocked(),
	}
	if r, c, visible := s.screen.Cursor(); visible {
		snap.Cursor = &agentapi.Position{Row: r, Col: c}
	}
	rep, err := s.replyLocked(snap)
	rep.Surface = s.surface
	return rep, err
}

func (s *Session) status(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	ctl := s.controllerLocked(req.Conn)
	mode, eff := s.mode, s.effectiveModeLocked()
	return s.replyLocked(agentapi.StatusResult{
		Session: &s.id, Controller: &ctl, Mode: &mode, EffectiveMode: &eff,
		Shared: true, SurfaceAvailable: s.alive,
	})
}

func (s *Session) affordances(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	tools := []string{agentapi.MethodSnapshot, agentapi.MethodStatus, agentapi.MethodRequestAttention,
		agentapi.MethodCheckApproval, agentapi.MethodControlRequestState, agentapi.MethodProposalState, agentapi.MethodExecState}
	holds := s.controller == req.Conn
	switch {
	case holds:
		tools = append(tools, agentapi.MethodReleaseControl)
		if s.alive {
			tools = append(tools, agentapi.MethodType, agentapi.MethodSendKey)
			if s.mode == agentapi.ModeAutopilot {
				tools = append(tools, agentapi.MethodInterrupt)
			}
		}
	case s.alive && s.controller == 0:
		tools = append(tools, agentapi.MethodRequestControl)
	}
	tools = slices.DeleteFunc(tools, func(m string) bool { return slices.Contains(s.cfg.Masked, m) })
	slices.Sort(tools)
	return s.replyLocked(agentapi.AffordancesResult{Session: &s.id, Tools: tools})
}

func (s *Session) requestAttention(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	var p agentapi.ReasonParams
	if err := decode(req.Params, &p); err != nil {
		return agentapi.Reply{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	a := &attention{conn: req.Conn, label: s.labels[req.Conn]}
	if p.Reason != nil {
		a.reason = *p.Reason
	}
	s.seq++
	a.seq = s.seq
	s.attention[req.Conn] = a
	s.notifyOwner()
	return s.replyLocked(agentapi.AttentionResult{Requested: true})
}

// originalRequest checks request_control's params and keeps them as
// submitted, without transport whitespace.
func originalRequest(raw json.RawMessage) (agentapi.ControlParams, agentapi.OriginalRequest, error) {
	var p agentapi.ControlParams
	params := json.RawMessage("{}")
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		var fields map[string]json.RawMessage
		if json.Unmarshal(t, &fields) != nil || t[0] != '{' {
			return p, agentapi.OriginalRequest{}, agentapi.Errorf(agentapi.CodeInvalidInput, "request_control params must be an object")
		}
		for _, k := range []string{"reason", "command"} {
			v, ok := fields[k]
			if !ok || bytes.Equal(v, []byte("null")) {
				continue
			}
			var str string
			if json.Unmarshal(v, &str) != nil {
				return p, agentapi.OriginalRequest{}, agentapi.Errorf(agentapi.CodeInvalidInput, "%s must be a string or null", k)
			}
			if k == "reason" {
				p.Reason = &str
			} else {
				p.Command = &str
			}
		}
		var b bytes.Buffer
		json.Compact(&b, t)
		params = b.Bytes()
	}
	orig := agentapi.OriginalRequest{Method: agentapi.MethodRequestControl, Params: params}
	if whole, _ := json.Marshal(orig); len(whole) > agentapi.MaxOriginalRequest {
		return p, orig, agentapi.Errorf(agentapi.CodeInvalidInput, "the control request is %d bytes; at most %d", len(whole), agentapi.MaxOriginalRequest)
	}
	return p, orig, nil
}

func (s *Session) requestControl(ctx context.Context, req agentapi.Request) (agentapi.Reply, error) {
	p, orig, err := originalRequest(req.Params)
	if err != nil {
		return agentapi.Reply{}, err
	}
	s.mu.Lock()
	if err := s.accessLocked(req); err != nil {
		s.mu.Unlock()
		return agentapi.Reply{}, err
	}
	if !s.alive {
		s.mu.Unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeProcessExited, "the program in this terminal has exited")
	}
	var r *controlRequest
	for _, other := range s.requests {
		if other.state == agentapi.RequestPending {
			r = other
		}
	}
	switch {
	case s.controller == req.Conn:
		rep, err := s.replyLocked(agentapi.ControlResult{Granted: true, RequestID: s.leaseRequestLocked(req.Conn), Session: s.id, OriginalRequest: orig})
		s.mu.Unlock()
		return rep, err
	case s.controller != 0:
		s.mu.Unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeBusy, "another agent holds control of this terminal")
	case r != nil && r.conn != req.Conn:
		s.mu.Unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeBusy, "another agent's control request is waiting for the owner")
	case r != nil && p.Command != nil && r.command != nil && *p.Command != *r.command:
		s.mu.Unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeInvalidInput, "control request %s is pending with a different command", r.id)
	case r == nil:
		r = &controlRequest{
			id: s.nextID("c"), label: s.labels[req.Conn], conn: req.Conn, seq: s.seq,
			reason: p.Reason, command: p.Command, orig: orig,
			state: agentapi.RequestPending, done: make(chan struct{}),
		}
		s.requests[r.id] = r
		s.remember(req.Conn, kindRequest, r.id)
		delete(s.revoked, req.Conn)
		if s.cfg.OpenControl {
			s.decideControlLocked(r, true)
		} else {
			s.emitLocked(req.Conn, agentapi.EventControlRequest, map[string]any{"requestId": r.id, "state": r.state})
			s.notifyOwner()
		}
	}
	s.mu.Unlock()

	timer := time.NewTimer(s.cfg.DecisionWait)
	defer timer.Stop()
	select {
	case <-r.done:
	case <-timer.C:
		s.mu.Lock()
		if r.state == agentapi.RequestPending {
			r.state = agentapi.RequestExpired
			close(r.done)
			s.emitLocked(r.conn, agentapi.EventControlRequest, map[string]any{"requestId": r.id, "state": r.state})
			s.notifyOwner()
		}
		s.mu.Unlock()
	case <-ctx.Done():
		return agentapi.Reply{}, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.state {
	case agentapi.RequestGranted:
		if s.controller != req.Conn {
			return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeLeaseExpired, "control was granted and taken back already")
		}
		return s.replyLocked(agentapi.ControlResult{Granted: true, RequestID: r.id, Session: s.id, OriginalRequest: r.orig})
	case agentapi.RequestExpired:
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeControlDenied, "control request %s expired without the owner's answer", r.id)
	}
	return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeControlDenied, "the owner refused control request %s", r.id)
}

// leaseRequestLocked returns the granted request behind conn's lease.
func (s *Session) leaseRequestLocked(conn uint64) string {
	var best *controlRequest
	for _, r := range s.requests {
		if r.conn == conn && r.state == agentapi.RequestGranted && (best == nil || r.seq > best.seq) {
			best = r
		}
	}
	if best == nil {
		return ""
	}
	return best.id
}

// decideControlLocked answers a pending control request.
func (s *Session) decideControlLocked(r *controlRequest, grant bool) {
	if r.state != agentapi.RequestPending {
		return
	}
	if grant && (s.controller != 0 || !s.alive) {
		grant = false
	}
	r.state = agentapi.RequestDenied
	if grant {
		r.state = agentapi.RequestGranted
		s.controller = r.conn
		delete(s.revoked, r.conn)
	}
	close(r.done)
	s.emitLocked(r.conn, agentapi.EventControlRequest, map[string]any{"requestId": r.id, "state": r.state})
	if grant {
		s.emitLocked(r.conn, agentapi.EventToolsChanged, nil)
	}
	s.notifyOwner()
}

func (s *Session) releaseControl(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	held := s.controller == req.Conn
	if held {
		s.controller = 0
		s.emitLocked(req.Conn, agentapi.EventToolsChanged, nil)
	}
	s.endWorkLocked(req.Conn, false)
	return s.replyLocked(agentapi.ReleaseResult{Released: held})
}

// checkText refuses text that is not plain printable characters.
func checkText(text string) error {
	if len(text) > MaxTypeText {
		return agentapi.Errorf(agentapi.CodeInvalidInput, "text is %d bytes; type at most %d at a time", len(text), MaxTypeText)
	}
	if !utf8.ValidString(text) {
		return agentapi.Errorf(agentapi.CodeInvalidInput, "text is not UTF-8")
	}
	for _, r := range text {
		switch {
		case r == '\n' || r == '\r':
			return agentapi.Errorf(agentapi.CodeInvalidInput, "type sends no newline: use send_key Enter")
		case r < 0x20 || r == 0x7F || r >= 0x80 && r < 0xA0:
			return agentapi.Errorf(agentapi.CodeInvalidInput, "text holds control character %U: use send_key", r)
		}
	}
	return nil
}

func (s *Session) typeText(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	var p agentapi.TypeParams
	if err := decode(req.Params, &p); err != nil {
		return agentapi.Reply{}, err
	}
	if err := checkText(p.Text); err != nil {
		return agentapi.Reply{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if err := s.accessLocked(req); err != nil {
		s.mu.Unlock()
		return agentapi.Reply{}, err
	}
	if err := s.mayWriteLocked(req.Conn); err != nil {
		s.mu.Unlock()
		return agentapi.Reply{}, err
	}
	n := utf8.RuneCountInString(p.Text)
	if s.mode == agentapi.ModeCopilot {
		defer s.mu.Unlock()
		if pr := s.readyProposalLocked(req.Conn); pr != nil {
			return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeProposalPending, "proposal %s awaits the owner", pr.id)
		}
		pr, err := s.extendDraftLocked(req.Conn, textParts(p.Text), false)
		if err != nil {
			return agentapi.Reply{}, err
		}
		return s.replyLocked(agentapi.TypeResult{Typed: n, ProposalID: pr.id})
	}
	if err := s.pendingLocked(req.Conn); err != nil {
		s.mu.Unlock()
		return agentapi.Reply{}, err
	}
	if t, ok := s.typed[req.Conn]; !ok || t != nil {
		s.typed[req.Conn] = append(t, []rune(p.Text)...)
	}
	rep, err := s.replyLocked(agentapi.TypeResult{Typed: n})
	s.mu.Unlock()
	if err != nil {
		return rep, err
	}
	if err := s.writePTY([]byte(p.Text)); err != nil {
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeProcessExited, "writing to the terminal failed: %v", err)
	}
	return rep, nil
}

// extendDraftLocked adds parts to conn's drafting proposal, starting one
// if needed; backspace takes back the last part instead.
func (s *Session) extendDraftLocked(conn uint64, parts []part, backspace bool) (*proposal, error) {
	pr := s.draftLocked(conn)
	if pr == nil {
		pr = &proposal{
			id: s.nextID("p"), label: s.labels[conn], conn: conn, seq: s.seq,
			state: agentapi.ProposalDrafting, done: make(chan struct{}),
		}
		s.proposals[pr.id] = pr
		s.remember(conn, kindProposal, pr.id)
		s.emitLocked(conn, agentapi.EventProposal, map[string]any{"proposalId": pr.id, "state": pr.state})
	}
	if backspace && len(pr.parts) > 0 {
		last := pr.parts[len(pr.parts)-1]
		pr.parts = pr.parts[:len(pr.parts)-1]
		pr.size -= len(last.b)
		s.notifyOwner()
		return pr, nil
	}
	size := pr.size
	for _, pt := range parts {
		size += len(pt.b)
	}
	if size > MaxProposal {
		return nil, agentapi.Errorf(agentapi.CodeInvalidInput, "the proposal would exceed %d bytes", MaxProposal)
	}
	pr.parts = append(pr.parts, parts...)
	pr.size = size
	s.notifyOwner()
	return pr, nil
}

// textParts splits typed text into one part per character, so that a
// Backspace takes back one character.
func textParts(text string) []part {
	parts := make([]part, 0, len(text))
	for _, r := range text {
		parts = append(parts, part{b: []byte(string(r)), label: string(r)})
	}
	return parts
}

func (s *Session) sendKey(ctx context.Context, req agentapi.Request) (agentapi.Reply, error) {
	var p agentapi.SendKeyParams
	if err := decode(req.Params, &p); err != nil {
		return agentapi.Reply{}, err
	}
	s.writeMu.Lock()
	s.mu.Lock()
	unlock := func() { s.mu.Unlock(); s.writeMu.Unlock() }
	if err := s.accessLocked(req); err != nil {
		unlock()
		return agentapi.Reply{}, err
	}
	key, ok := keyBytes(p.Key, s.screen.AppCursorKeys())
	if !ok {
		unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeInvalidInput, "unknown key %q", p.Key)
	}
	if err := s.mayWriteLocked(req.Conn); err != nil {
		unlock()
		return agentapi.Reply{}, err
	}
	enter := isEnter(p.Key)
	intent := ""
	if p.Intent != nil {
		intent = *p.Intent
	}
	if enter && s.cfg.RequireIntent && intent == "" {
		unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeIntentRequired, "this terminal's policy requires an intent with Enter")
	}
	if s.mode == agentapi.ModeCopilot {
		if pr := s.readyProposalLocked(req.Conn); pr != nil {
			unlock()
			return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeProposalPending, "proposal %s awaits the owner", pr.id)
		}
		if !enter {
			pr, err := s.extendDraftLocked(req.Conn, []part{{b: key, label: keyLabel(p.Key)}}, key[0] == 0x7f)
			if err != nil {
				unlock()
				return agentapi.Reply{}, err
			}
			rep, err := s.replyLocked(agentapi.SendKeyResult{Result: agentapi.KeySent, ProposalID: pr.id})
			unlock()
			return rep, err
		}
		pr, err := s.proposeLocked(req.Conn, intent)
		unlock()
		if err != nil {
			return agentapi.Reply{}, err
		}
		return s.awaitProposal(ctx, pr)
	}

	if err := s.pendingLocked(req.Conn); err != nil {
		unlock()
		return agentapi.Reply{}, err
	}
	if !enter {
		s.trackKeyLocked(req.Conn, key)
		rep, err := s.replyLocked(agentapi.SendKeyResult{Result: agentapi.KeySent})
		s.mu.Unlock()
		defer s.writeMu.Unlock()
		if err := s.writePTY(key); err != nil {
			return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeProcessExited, "writing to the terminal failed: %v", err)
		}
		return rep, err
	}
	row, _, _ := s.screen.Cursor()
	if s.screen.Withholds(row) {
		unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeInvalidInput, "the line holds text the snapshot withholds; Enter is refused")
	}
	// Judge what the agent typed when that is all it did to the line: the
	// screen may not show it yet, and may still show the line before.
	// Otherwise (history, completion, an empty line) judge the screen's.
	line := s.screen.Line(row, true)
	if typed := string(s.typed[req.Conn]); typed != "" {
		line = typed
	}
	delete(s.typed, req.Conn)
	switch s.cfg.Policy.judge(line) {
	case deny:
		rep, err := s.replyLocked(agentapi.SendKeyResult{Result: agentapi.KeyDenied})
		unlock()
		return rep, err
	case ask:
		a := &approval{
			id: s.nextID("a"), label: s.labels[req.Conn], conn: req.Conn, seq: s.seq,
			command: line, intent: intent, state: agentapi.ApprovalPending, done: make(chan struct{}),
		}
		s.approvals[a.id] = a
		s.remember(req.Conn, kindApproval, a.id)
		s.emitLocked(req.Conn, agentapi.EventApproval, map[string]any{"approvalId": a.id, "state": a.state})
		s.notifyOwner()
		unlock()
		return s.awaitApproval(ctx, a)
	}
	e := s.newExecLocked(req.Conn, s.labels[req.Conn], line, []byte{'\r'}, false)
	unlock()
	if e.immediate() {
		s.runExec(e)
	}
	return s.awaitExec(ctx, e, agentapi.SendKeyResult{})
}

// trackKeyLocked follows what an autopilot key does to the agent's typed
// line: Backspace takes a character back, Ctrl-C and Ctrl-U clear it.
func (s *Session) trackKeyLocked(conn uint64, key []byte) {
	t, ok := s.typed[conn]
	switch {
	case ok && t == nil: // unknown until the next Enter
	case len(key) == 1 && (key[0] == 0x7f || key[0] == 0x08):
		if len(t) > 0 {
			s.typed[conn] = t[:len(t)-1]
		}
	case len(key) == 1 && (key[0] == 0x03 || key[0] == 0x15):
		delete(s.typed, conn)
	default: // Tab, history, cursor moves: only the screen tells the line now
		s.typed[conn] = nil
	}
}

// proposeLocked makes conn's draft (or an empty one) ready for the owner,
// or denies it by policy.
func (s *Session) proposeLocked(conn uint64, intent string) (*proposal, error) {
	row, _, _ := s.screen.Cursor()
	if s.screen.Withholds(row) {
		return nil, agentapi.Errorf(agentapi.CodeInvalidInput, "the line holds text the snapshot withholds; Enter is refused")
	}
	pr, err := s.extendDraftLocked(conn, nil, false)
	if err != nil {
		return nil, err
	}
	pr.intent = intent
	if s.cfg.Policy.judge(s.screen.Line(row, true)+pr.text()) == deny {
		pr.state = agentapi.ProposalDenied
	} else {
		pr.state = agentapi.ProposalReady
	}
	if pr.state == agentapi.ProposalDenied {
		close(pr.done)
	}
	s.emitLocked(conn, agentapi.EventProposal, map[string]any{"proposalId": pr.id, "state": pr.state})
	s.notifyOwner()
	return pr, nil
}

// awaitProposal waits for the owner's answer to a ready proposal, then for
// its execution.
func (s *Session) awaitProposal(ctx context.Context, pr *proposal) (agentapi.Reply, error) {
	timer := time.NewTimer(s.cfg.DecisionWait)
	defer timer.Stop()
	select {
	case <-pr.done:
	case <-timer.C:
	case <-ctx.Done():
		return agentapi.Reply{}, ctx.Err()
	}
	s.mu.Lock()
	res := agentapi.SendKeyResult{ProposalID: pr.id}
	e := pr.exec
	switch pr.state {
	case agentapi.ProposalReady:
		res.Result, res.State = agentapi.KeySent, pr.state
	case agentapi.ProposalDenied:
		res.Result = agentapi.KeyDenied
	case agentapi.ProposalRejected:
		res.Result = agentapi.KeyRejected
		if pr.cancelled {
			res.Result = agentapi.KeyCancelled
		}
	}
	if e == nil {
		defer s.mu.Unlock()
		return s.replyLocked(res)
	}
	s.mu.Unlock()
	return s.awaitExec(ctx, e, res)
}

// awaitApproval waits for the owner's answer to a command approval, then
// for its execution.
func (s *Session) awaitApproval(ctx context.Context, a *approval) (agentapi.Reply, error) {
	timer := time.NewTimer(s.cfg.DecisionWait)
	defer timer.Stop()
	select {
	case <-a.done:
	case <-timer.C:
	case <-ctx.Done():
		return agentapi.Reply{}, ctx.Err()
	}
	s.mu.Lock()
	res := agentapi.SendKeyResult{ApprovalID: a.id}
	e := a.exec
	switch a.state {
	case agentapi.ApprovalPending:
		res.Result, res.State = agentapi.KeySent, a.state
	case agentapi.ApprovalRejected:
		res.Result = agentapi.KeyRejected
		if a.cancelled {
			res.Result = agentapi.KeyCancelled
		}
	}
	if e == nil {
		defer s.mu.Unlock()
		return s.replyLocked(res)
	}
	s.mu.Unlock()
	return s.awaitExec(ctx, e, res)
}

// awaitExec waits out an execution's grace and reports how it ended.
func (s *Session) awaitExec(ctx context.Context, e *execution, res agentapi.SendKeyResult) (agentapi.Reply, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		return agentapi.Reply{}, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res.ExecID = e.id
	res.Result = agentapi.KeyExecuted
	if e.state == agentapi.ExecCancelled {
		res.Result = agentapi.KeyCancelled
	}
	return s.replyLocked(res)
}

func (s *Session) interrupt(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if err := s.accessLocked(req); err != nil {
		s.mu.Unlock()
		return agentapi.Reply{}, err
	}
	if err := s.mayWriteLocked(req.Conn); err != nil {
		s.mu.Unlock()
		return agentapi.Reply{}, err
	}
	if s.mode != agentapi.ModeAutopilot {
		s.mu.Unlock()
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeWrongMode, "in co-pilot nothing reaches the terminal without the owner: propose Ctrl-C with send_key")
	}
	for _, e := range s.execs {
		if e.conn == req.Conn && e.state == agentapi.ExecScheduled {
			s.cancelExecLocked(e, false)
		}
	}
	rep, err := s.replyLocked(agentapi.InterruptResult{Interrupted: true})
	s.mu.Unlock()
	if err := s.writePTY([]byte{0x03}); err != nil {
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeProcessExited, "writing to the terminal failed: %v", err)
	}
	return rep, err
}

func (s *Session) checkApproval(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	var p agentapi.IDParams
	if err := decode(req.Params, &p); err != nil {
		return agentapi.Reply{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	a, ok := s.approvals[p.ApprovalID]
	if !ok || a.conn != req.Conn {
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeNotFound, "no approval %q of this connection here", p.ApprovalID)
	}
	return s.replyLocked(agentapi.ApprovalState{ApprovalID: a.id, State: a.state, Command: a.command})
}

func (s *Session) controlRequestState(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	var p agentapi.IDParams
	if err := decode(req.Params, &p); err != nil {
		return agentapi.Reply{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	r, ok := s.requests[p.RequestID]
	if !ok || r.conn != req.Conn {
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeNotFound, "no control request %q of this connection here", p.RequestID)
	}
	return s.replyLocked(agentapi.ControlRequestState{RequestID: r.id, State: r.state, OriginalRequest: r.orig})
}

func (s *Session) proposalState(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	var p agentapi.IDParams
	if err := decode(req.Params, &p); err != nil {
		return agentapi.Reply{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	pr, ok := s.proposals[p.ProposalID]
	if !ok || pr.conn != req.Conn {
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeNotFound, "no proposal %q of this connection here", p.ProposalID)
	}
	return s.replyLocked(agentapi.ProposalState{ProposalID: pr.id, State: pr.state, Text: pr.text()})
}

func (s *Session) execState(_ context.Context, req agentapi.Request) (agentapi.Reply, error) {
	var p agentapi.IDParams
	if err := decode(req.Params, &p); err != nil {
		return agentapi.Reply{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.accessLocked(req); err != nil {
		return agentapi.Reply{}, err
	}
	e, ok := s.execs[p.ExecID]
	if !ok || e.conn != req.Conn {
		return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeNotFound, "no execution %q of this connection here", p.ExecID)
	}
	return s.replyLocked(agentapi.ExecState{ExecID: e.id, State: e.state})
}
