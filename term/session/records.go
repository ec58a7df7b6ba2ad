package session

import (
	"strings"
	"time"

	"github.com/dsh-browser/broker/term/agentapi"
)

// controlRequest is an agent's request for the lease.
type controlRequest struct {
	id, label string
	conn      uint64
	seq       uint64
	reason    *string
	command   *string
	orig      agentapi.OriginalRequest
	state     string
	done      chan struct{} // closed when it stops being pending
}

// proposal is co-pilot input waiting for the owner.
type proposal struct {
	id, label string
	conn      uint64
	seq       uint64
	parts     []part
	size      int
	intent    string
	state     string
	cancelled bool // ended because control was lost, not by the owner's answer
	exec      *execution
	done      chan struct{} // closed when it stops drafting or being ready
}

// part is one typed character or key of a proposal.
type part struct {
	b     []byte
	label string
}

func (p *proposal) input() []byte {
	var b []byte
	for _, pt := range p.parts {
		b = append(b, pt.b...)
	}
	return b
}

// text is the proposal as the owner and the agent read it.
func (p *proposal) text() string {
	var b strings.Builder
	for _, pt := range p.parts {
		b.WriteString(pt.label)
	}
	return b.String()
}

// approval is an autopilot command the policy asks the owner about.
type approval struct {
	id, label string
	conn      uint64
	seq       uint64
	command   string
	intent    string
	state     string
	cancelled bool
	exec      *execution
	done      chan struct{}
}

// execution is an Enter (with a proposal's input before it) on its way to
// the terminal.
type execution struct {
	id, label string
	conn      uint64
	seq       uint64
	command   string
	input     []byte
	state     string
	timer     *time.Timer
	done      chan struct{}
}

// attention is an agent asking the person to look at this tab.
type attention struct {
	conn   uint64
	label  string
	reason string
	seq    uint64
}

// endWorkLocked ends what conn is waiting for here: its pending control
// request expires, its proposals and approvals are rejected (as cancelled:
// nobody answered them), its scheduled executions are cancelled. Unless
// quiet, conn is told of each.
func (s *Session) endWorkLocked(conn uint64, quiet bool) {
	for _, r := range s.requests {
		if r.conn == conn && r.state == agentapi.RequestPending {
			r.state = agentapi.RequestExpired
			close(r.done)
			if !quiet {
				s.emitLocked(conn, agentapi.EventControlRequest, map[string]any{"requestId": r.id, "state": r.state})
			}
		}
	}
	for _, p := range s.proposals {
		if p.conn == conn && (p.state == agentapi.ProposalDrafting || p.state == agentapi.ProposalReady) {
			p.state, p.cancelled = agentapi.ProposalRejected, true
			close(p.done)
			if !quiet {
				s.emitLocked(conn, agentapi.EventProposal, map[string]any{"proposalId": p.id, "state": p.state})
			}
		}
	}
	for _, a := range s.approvals {
		if a.conn == conn && a.state == agentapi.ApprovalPending {
			a.state, a.cancelled = agentapi.ApprovalRejected, true
			close(a.done)
			if !quiet {
				s.emitLocked(conn, agentapi.EventApproval, map[string]any{"approvalId": a.id, "state": a.state})
			}
		}
	}
	for _, e := range s.execs {
		if e.conn == conn && e.state == agentapi.ExecScheduled {
			s.cancelExecLocked(e, quiet)
		}
	}
	s.notifyOwner()
}

func (s *Session) cancelExecLocked(e *execution, quiet bool) {
	e.state = agentapi.ExecCancelled
	if e.timer != nil {
		e.timer.Stop()
	}
	close(e.done)
	if !quiet {
		s.emitLocked(e.conn, agentapi.EventExec, map[string]any{"execId": e.id, "state": e.state})
	}
}

// revokeLocked takes the lease back from the agent holding it.
func (s *Session) revokeLocked(reason string) {
	c := s.controller
	if c == 0 {
		return
	}
	s.controller = 0
	s.revoked[c] = true
	delete(s.typed, c)
	s.endWorkLocked(c, false)
	s.emitLocked(c, agentapi.EventControlRevoked, map[string]any{"reason": reason})
	s.emitLocked(c, agentapi.EventToolsChanged, nil)
	s.notifyOwner()
}

// newExecLocked records an execution of input for conn, scheduled after
// the grace (if any) unless immediate. The caller runs it with
// [Session.runExec] when the grace is zero or immediate is set.
func (s *Session) newExecLocked(conn uint64, label, command string, input []byte, immediate bool) *execution {
	e := &execution{
		id: s.nextID("e"), label: label, conn: conn, seq: s.seq,
		command: command, input: input,
		state: agentapi.ExecScheduled, done: make(chan struct{}),
	}
	s.execs[e.id] = e
	s.remember(conn, kindExec, e.id)
	s.emitLocked(conn, agentapi.EventExec, map[string]any{"execId": e.id, "state": e.state})
	if !immediate && s.cfg.Grace > 0 {
		e.timer = time.AfterFunc(s.cfg.Grace, func() { s.runExec(e) })
	}
	s.notifyOwner()
	return e
}

// immediate reports whether e runs now rather than after a grace.
func (e *execution) immediate() bool { return e.timer == nil }

// runExec writes a scheduled execution to the terminal, unless it was
// cancelled meanwhile.
func (s *Session) runExec(e *execution) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if e.state != agentapi.ExecScheduled {
		s.mu.Unlock()
		return
	}
	if !s.alive {
		s.cancelExecLocked(e, false)
		s.mu.Unlock()
		return
	}
	e.state = agentapi.ExecExecuted
	close(e.done)
	s.emitLocked(e.conn, agentapi.EventExec, map[string]any{"execId": e.id, "state": e.state})
	s.lineDirty = false
	s.mu.Unlock()
	s.notifyOwner()
	if err := s.writePTY(e.input); err != nil {
		s.log.Warn("writing an execution to the terminal failed", "exec", e.id, "err", err)
	}
}
