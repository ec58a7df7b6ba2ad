package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/dsh-browser/broker/term/agentapi"
)

// Kinds of questions to the owner, in the order they are asked.
const (
	AskClient    = "client"    // a program asks the broker to let it in (see [Session.AskClient])
	AskAdmission = "admission" // a new connection wants to take part at all
	AskJoin      = "join"      // an admitted connection may participate in this shared session
	AskControl   = "control"   // an agent requests the lease
	AskProposal  = "proposal"  // a co-pilot proposal is ready
	AskApproval  = "approval"  // an autopilot command needs approval
	AskExec      = "exec"      // an autopilot Enter waits out its grace
	AskAttention = "attention" // an agent asks the person to look
)

var askOrder = map[string]int{AskClient: 0, AskAdmission: 1, AskJoin: 2, AskControl: 3, AskProposal: 4, AskApproval: 5, AskExec: 6, AskAttention: 7}

// Question is one thing waiting for the owner. Yes and no mean: admit or
// deny (a program, or an agent connection); let participate or not; grant or refuse control; accept or reject
// the proposal; approve or reject the command; run now or cancel; and for
// attention, either acknowledges.
type Question struct {
	Kind  string
	Conn  uint64
	Label string
	Text  string // one line for the owner bar
	id    string
	seq   uint64
}

// Bar is what the owner bar shows.
type Bar struct {
	Session      string
	Shared       bool
	Participants int
	Mode         string
	Controller   string // "you", or the agent holding control
	ProcessAlive bool
	Question     *Question // the first waiting question, if any
	Waiting      int       // questions waiting, the shown one included
}

// Bar returns the owner bar's content.
func (s *Session) Bar() Bar {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := Bar{
		Session: s.id, Shared: s.shared, Participants: len(s.participants),
		Mode: s.mode, Controller: "you", ProcessAlive: s.alive,
	}
	if s.controller != 0 {
		b.Controller = agentName(s.labels[s.controller], s.controller)
	}
	qs := s.questionsLocked()
	b.Waiting = len(qs)
	if len(qs) > 0 {
		b.Question = &qs[0]
	}
	return b
}

// Questions returns everything waiting for the owner, first first.
func (s *Session) Questions() []Question {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.questionsLocked()
}

func agentName(label string, conn uint64) string {
	if label == "" {
		return fmt.Sprintf("agent #%d", conn)
	}
	return fmt.Sprintf("%q #%d", label, conn)
}

func (s *Session) questionsLocked() []Question {
	var qs []Question
	for _, c := range s.clients {
		qs = append(qs, Question{Kind: AskClient, Label: c.label, id: c.id, seq: c.seq,
			Text: c.label + " asks to use the broker"})
	}
	for _, p := range s.peers {
		name := agentName(p.Label, p.Conn)
		switch {
		case p.Admission == "pending" && !s.answered[p.Conn]:
			qs = append(qs, Question{Kind: AskAdmission, Conn: p.Conn, Label: p.Label, seq: p.Conn,
				Text: name + " asks to connect"})
		case p.Admission != "denied" && s.shared && !s.participants[p.Conn] && !s.declined[p.Conn]:
			qs = append(qs, Question{Kind: AskJoin, Conn: p.Conn, Label: p.Label, seq: p.Conn,
				Text: "let " + name + " see and use this terminal?"})
		}
	}
	for _, r := range s.requests {
		if r.state == agentapi.RequestPending {
			t := agentName(r.label, r.conn) + " asks for control"
			if r.reason != nil && *r.reason != "" {
				t += ": " + *r.reason
			}
			if r.command != nil && *r.command != "" {
				t += " [" + *r.command + "]"
			}
			qs = append(qs, Question{Kind: AskControl, Conn: r.conn, Label: r.label, id: r.id, seq: r.seq, Text: t})
		}
	}
	for _, p := range s.proposals {
		if p.state == agentapi.ProposalReady {
			t := agentName(p.label, p.conn) + " proposes: " + p.text() + "⏎"
			if p.intent != "" {
				t += " (" + p.intent + ")"
			}
			qs = append(qs, Question{Kind: AskProposal, Conn: p.conn, Label: p.label, id: p.id, seq: p.seq, Text: t})
		}
	}
	for _, a := range s.approvals {
		if a.state == agentapi.ApprovalPending {
			qs = append(qs, Question{Kind: AskApproval, Conn: a.conn, Label: a.label, id: a.id, seq: a.seq,
				Text: agentName(a.label, a.conn) + " wants to run: " + a.command})
		}
	}
	for _, e := range s.execs {
		if e.state == agentapi.ExecScheduled && e.timer != nil {
			qs = append(qs, Question{Kind: AskExec, Conn: e.conn, Label: e.label, id: e.id, seq: e.seq,
				Text: agentName(e.label, e.conn) + " runs: " + e.command + " (n cancels)"})
		}
	}
	for _, a := range s.attention {
		t := agentName(a.label, a.conn) + " asks for your attention"
		if a.reason != "" {
			t += ": " + a.reason
		}
		qs = append(qs, Question{Kind: AskAttention, Conn: a.conn, Label: a.label, seq: a.seq, Text: t})
	}
	slices.SortFunc(qs, func(a, b Question) int {
		return cmp.Or(cmp.Compare(askOrder[a.Kind], askOrder[b.Kind]), cmp.Compare(a.seq, b.seq))
	})
	return qs
}

// Answer answers the first waiting question (see [Question]).
func (s *Session) Answer(yes bool) {
	var run *execution
	s.mu.Lock()
	qs := s.questionsLocked()
	if len(qs) == 0 {
		s.mu.Unlock()
		return
	}
	q := qs[0]
	switch q.Kind {
	case AskClient:
		s.clients[q.id].answer <- yes
		delete(s.clients, q.id)
	case AskAdmission:
		s.answered[q.Conn] = true
		// The answer carries the state that lists the connection, in one
		// event: a request that waited for the answer must find the
		// session it may use, and an agent told it participates must find
		// itself admitted, even when the events are relayed one by one.
		ev := agentapi.Event{Session: s.id, Kind: agentapi.EventAdmission, Conn: q.Conn, Allowed: yes}
		if yes && s.shared {
			s.participants[q.Conn] = true
			ev.State = s.stateLocked()
		}
		if s.sink != nil {
			s.sink.Event(ev)
		}
	case AskJoin:
		if yes {
			s.participants[q.Conn] = true
			s.emitStateLocked()
		} else {
			s.declined[q.Conn] = true
		}
	case AskControl:
		s.decideControlLocked(s.requests[q.id], yes)
		if yes {
			s.lineDirty = false // granting is the owner's go-ahead on this line
		}
	case AskProposal:
		pr := s.proposals[q.id]
		if yes {
			pr.state = agentapi.ProposalExecuted
			pr.exec = s.newExecLocked(pr.conn, pr.label, pr.text(), append(pr.input(), '\r'), true)
			run = pr.exec
		} else {
			pr.state = agentapi.ProposalRejected
		}
		close(pr.done)
		s.emitLocked(pr.conn, agentapi.EventProposal, map[string]any{"proposalId": pr.id, "state": pr.state})
	case AskApproval:
		a := s.approvals[q.id]
		if yes {
			a.state = agentapi.ApprovalApproved
			a.exec = s.newExecLocked(a.conn, a.label, a.command, []byte{'\r'}, false)
			if a.exec.immediate() {
				run = a.exec
			}
		} else {
			a.state = agentapi.ApprovalRejected
		}
		close(a.done)
		s.emitLocked(a.conn, agentapi.EventApproval, map[string]any{"approvalId": a.id, "state": a.state})
	case AskExec:
		e := s.execs[q.id]
		if yes {
			e.timer.Stop()
			run = e
		} else {
			s.cancelExecLocked(e, false)
		}
	case AskAttention:
		delete(s.attention, q.Conn)
		s.emitLocked(q.Conn, agentapi.EventAttention, map[string]any{"state": "acknowledged"})
	}
	s.mu.Unlock()
	s.notifyOwner()
	if run != nil {
		s.runExec(run)
	}
}

// clientQuestion is a question the broker puts through this terminal's
// bar (AskClient).
type clientQuestion struct {
	id, label string
	seq       uint64
	answer    chan bool // buffered: Answer never waits
}

// AskClient asks the owner, in the bar, whether the program label may use
// the broker (the broker's --admission=prompt: the broker asks an owner
// surface, and this terminal is one). It returns the answer, or an error
// when ctx ends (the broker withdrew the question) or the session ended
// first.
func (s *Session) AskClient(ctx context.Context, label string) (bool, error) {
	q := &clientQuestion{label: cleanText(label), answer: make(chan bool, 1)}
	s.mu.Lock()
	s.seq++
	q.seq = s.seq
	q.id = fmt.Sprintf("client%d", q.seq)
	s.clients[q.id] = q
	s.mu.Unlock()
	s.notifyOwner()
	defer func() {
		s.mu.Lock()
		delete(s.clients, q.id)
		s.mu.Unlock()
		s.notifyOwner()
	}()
	select {
	case yes := <-q.answer:
		return yes, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-s.done:
		return false, errors.New("session: the terminal ended before the owner answered")
	}
}

// cleanText keeps a label printable for the bar.
func cleanText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// OwnerInput writes what the person typed to the program. It takes control
// back from an agent and acknowledges attention requests.
func (s *Session) OwnerInput(p []byte) error {
	s.mu.Lock()
	s.revokeLocked("owner_input")
	if !s.screen.AltScreen() {
		for _, b := range p {
			switch b {
			case '\r', '\n', 0x03, 0x15: // submitted, interrupted or cleared
				s.lineDirty = false
			default:
				s.lineDirty = true
			}
		}
	}
	for c := range s.attention {
		delete(s.attention, c)
		s.emitLocked(c, agentapi.EventAttention, map[string]any{"state": "acknowledged"})
	}
	if s.sink != nil && time.Since(s.lastAttended) > time.Second {
		s.lastAttended = time.Now()
		s.sink.Event(agentapi.Event{Session: s.id, Kind: agentapi.EventAttended})
	}
	s.mu.Unlock()
	s.notifyOwner()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.writePTY(p)
}

// OwnerReport passes the owner's terminal's replies to queries (cursor
// position, device attributes, colours) to the program. They are not the
// person typing and leave control where it is.
func (s *Session) OwnerReport(p []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.writePTY(p)
}

// Share starts or stops sharing. Starting asks the owner about each
// admitted connection; stopping revokes every participant at once: the
// lease, everything pending, and anything not yet written to them.
func (s *Session) Share(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shared == on {
		return
	}
	if !on {
		s.revokeLocked("sharing_stopped")
		for c := range s.participants {
			s.endWorkLocked(c, true)
		}
		for _, r := range s.requests {
			if r.state == agentapi.RequestPending {
				s.decideControlLocked(r, false)
			}
		}
		clear(s.attention)
		clear(s.participants)
	}
	clear(s.declined)
	s.shared = on
	s.gen++
	s.emitStateLocked()
	s.notifyOwner()
}

// ShareWith shares the session with one connection, as the owner's
// selection: a host opening a tab for an agent (open_tab) uses it.
func (s *Session) ShareWith(conn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shared {
		s.shared = true
		s.gen++
	}
	s.participants[conn] = true
	delete(s.declined, conn)
	s.emitStateLocked()
	s.notifyOwner()
}

// SetMode switches between co-pilot and autopilot. What agents were
// drafting or waiting for ends; the lease stays.
func (s *Session) SetMode(mode string) error {
	if mode != agentapi.ModeCopilot && mode != agentapi.ModeAutopilot {
		return fmt.Errorf("session: unknown mode %q", mode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == mode {
		return nil
	}
	s.mode = mode
	for c := range s.participants {
		s.endWorkLocked(c, false)
		s.emitLocked(c, agentapi.EventModeChanged, map[string]any{"mode": s.mode, "effectiveMode": s.effectiveModeLocked()})
		s.emitLocked(c, agentapi.EventToolsChanged, nil)
	}
	s.emitStateLocked()
	s.notifyOwner()
	return nil
}

// ToggleMode switches to the other mode.
func (s *Session) ToggleMode() {
	s.mu.Lock()
	m := agentapi.ModeAutopilot
	if s.mode == agentapi.ModeAutopilot {
		m = agentapi.ModeCopilot
	}
	s.mu.Unlock()
	s.SetMode(m)
}

// TakeControl takes the lease back from the agent holding it.
func (s *Session) TakeControl() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revokeLocked("owner_took_control")
}
