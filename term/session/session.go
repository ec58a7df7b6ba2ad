// Package session is one shared terminal: a program in a PTY, its screen
// grid, and the collaboration state between the person who owns it and the
// agents it is shared with. It implements [agentapi.Session] for the agent
// socket server and offers the owner's actions to the owner's terminal.
//
// # Sharing
//
// A session starts private. Only the owner shares it ([Session.Share]);
// agents then participate one by one as the owner admits them. Every
// revocation (sharing stopped) raises the participation generation, which
// the server checks before writing anything produced under an older one.
//
// # Control
//
// One controller at a time: the person, or one agent holding the lease.
// An agent asks with request_control; unless the session was configured
// with OpenControl the owner grants or refuses it. Any key the owner types
// takes control back ([Session.OwnerInput]); terminal replies
// ([Session.OwnerReport]) do not.
//
// In co-pilot mode the controller's typing accumulates as a proposal that
// the owner sees; Enter makes it ready and nothing reaches the terminal
// until the owner accepts. In autopilot the controller's input goes to the
// terminal, and Enter is judged by the [Policy]: allowed, asked of the
// owner, or denied; an allowed Enter waits out the configured grace, during
// which the owner can cancel it.
//
// # Locks
//
// writeMu serialises writes to the PTY and is taken before mu, which
// guards all other state. outMu is held while a chunk of output is applied
// to the grid and passed to [Config.Output], so that [Session.Quiesce] sees
// the grid exactly as the owner's terminal does; it is taken before mu.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/vt"
)

// Limits.
const (
	// MaxTypeText bounds one type call's text, in bytes.
	MaxTypeText = 4096
	// MaxProposal bounds a co-pilot proposal, in bytes sent to the terminal.
	MaxProposal = 16 << 10
	// MaxRecords bounds the finished requests, proposals, approvals and
	// executions a session remembers per connection and kind, for state
	// polls; the oldest finished one goes first.
	MaxRecords = 64
	// DefaultDecisionWait bounds how long request_control and send_key wait
	// for the owner before answering.
	DefaultDecisionWait = 60 * time.Second
)

// Config configures a session.
type Config struct {
	ID      string   // the session's name on the agent socket, e.g. "t1"
	Title   string   // shown in discovery; default the command's name
	Command []string // default $SHELL, else /bin/sh
	Env     []string // default the current environment; TERM defaults to xterm-256color
	Dir     string
	Rows    int // initial size; default 24×80
	Cols    int

	Mode          string        // agentapi.ModeCopilot (default) or ModeAutopilot
	OpenControl   bool          // grant control requests without asking the owner
	Grace         time.Duration // how long an allowed autopilot Enter waits, cancellable
	Policy        Policy
	RequireIntent bool     // Enter needs send_key's intent
	Masked        []string // agent methods the owner withholds here
	DecisionWait  time.Duration

	// Output receives the program's output, chunk by chunk in order, after
	// the grid has taken it. It must not call back into the session except
	// [Session.DrawState], [Session.Bar] and [Session.Cell]. Nil for a
	// session nobody watches directly.
	Output func([]byte)
	// Tap, if set, rewrites the output passed to Output (see [vt.Tap]);
	// Output then always ends between two sequences.
	Tap    vt.Tap
	Logger *slog.Logger
}

// Session is one shared terminal. Create it with [Start].
type Session struct {
	cfg  Config
	id   string
	log  *slog.Logger
	pty  *os.File
	cmd  *exec.Cmd
	done chan struct{} // closed when the program has exited and its output is read

	outMu   sync.Mutex
	writeMu sync.Mutex

	changed chan struct{} // the owner bar may have changed

	mu           sync.Mutex
	screen       *vt.Screen
	outputSeq    uint64
	sink         agentapi.Sink
	shared       bool
	participants map[uint64]bool
	declined     map[uint64]bool // answered "no" to joining while this sharing lasts
	answered     map[uint64]bool // admission answered here; the server's list may lag
	peers        []agentapi.Peer
	labels       map[uint64]string
	gen, surface uint64
	mode         string
	alive        bool
	exitCode     int
	controller   uint64 // 0: the person
	revoked      map[uint64]bool
	seq          uint64
	requests     map[string]*controlRequest
	proposals    map[string]*proposal
	approvals    map[string]*approval
	execs        map[string]*execution
	history      map[historyKey][]string
	attention    map[uint64]*attention
	clients      map[string]*clientQuestion
	lineDirty    bool // the person typed on the current line and has not submitted it
	// typed is what each agent typed in autopilot since its last Enter,
	// while that is all there is to know of its line; nil once a key made
	// the line unknown (see trackKeyLocked).
	typed        map[uint64][]rune
	lastAttended time.Time
	closed       bool
}

type historyKey struct {
	conn uint64
	kind byte
}

// Start runs the command in a new PTY and returns its session.
func Start(cfg Config) (*Session, error) {
	if cfg.ID == "" {
		return nil, errors.New("session: no ID")
	}
	if len(cfg.Command) == 0 {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		cfg.Command = []string{sh}
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if !hasVar(cfg.Env, "TERM") {
		cfg.Env = append(cfg.Env, "TERM=xterm-256color")
	}
	if cfg.Rows <= 0 || cfg.Cols <= 0 {
		cfg.Rows, cfg.Cols = 24, 80
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = agentapi.ModeCopilot
	case agentapi.ModeCopilot, agentapi.ModeAutopilot:
	default:
		return nil, fmt.Errorf("session: unknown mode %q (copilot or autopilot)", cfg.Mode)
	}
	if cfg.Title == "" {
		cfg.Title = filepath.Base(cfg.Command[0])
	}
	if cfg.DecisionWait <= 0 {
		cfg.DecisionWait = DefaultDecisionWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = cfg.Env
	cmd.Dir = cfg.Dir
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: uint16(cfg.Rows), Cols: uint16(cfg.Cols)})
	if err != nil {
		return nil, fmt.Errorf("session: start %s: %w", cfg.Command[0], err)
	}
	s := &Session{
		cfg:          cfg,
		id:           cfg.ID,
		log:          cfg.Logger.With("session", cfg.ID),
		pty:          f,
		cmd:          cmd,
		done:         make(chan struct{}),
		changed:      make(chan struct{}, 1),
		screen:       vt.New(cfg.Rows, cfg.Cols),
		participants: map[uint64]bool{},
		declined:     map[uint64]bool{},
		answered:     map[uint64]bool{},
		labels:       map[uint64]string{},
		gen:          1,
		surface:      1,
		mode:         cfg.Mode,
		alive:        true,
		revoked:      map[uint64]bool{},
		requests:     map[string]*controlRequest{},
		proposals:    map[string]*proposal{},
		approvals:    map[string]*approval{},
		execs:        map[string]*execution{},
		history:      map[historyKey][]string{},
		attention:    map[uint64]*attention{},
		clients:      map[string]*clientQuestion{},
		typed:        map[uint64][]rune{},
	}
	read := make(chan struct{})
	go s.readLoop(read)
	go s.wait(read)
	return s, nil
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// Dir returns the program's working directory ("" for the current one).
func (s *Session) Dir() string { return s.cfg.Dir }

// ID returns the session's name on the agent socket.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// SetID renames the session: a broker names the sessions it relays (so
// that two windows are two tabs), and a session that registers again
// after the broker restarted may get another name. Do it before
// [Session.Subscribe]; the owner bar shows the new name.
func (s *Session) SetID(id string) {
	s.mu.Lock()
	s.id = id
	s.mu.Unlock()
	s.notifyOwner()
}

// Done is closed when the program has exited and its output is read.
func (s *Session) Done() <-chan struct{} { return s.done }

// ExitCode returns the program's exit status once [Session.Done] is closed
// (128+signal when a signal ended it).
func (s *Session) ExitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitCode
}

// Changed receives a value when what the owner bar shows may have changed.
func (s *Session) Changed() <-chan struct{} { return s.changed }

func (s *Session) notifyOwner() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// readLoop applies the program's output to the grid and passes it on.
func (s *Session) readLoop(read chan<- struct{}) {
	defer close(read)
	buf := make([]byte, 32<<10)
	var tapped []byte // what the tap passes on, reused
	for {
		n, err := s.pty.Read(buf)
		if n > 0 {
			s.outMu.Lock()
			s.mu.Lock()
			out := buf[:n]
			if s.cfg.Tap != nil {
				tapped = s.screen.WriteTap(buf[:n], s.cfg.Tap, tapped[:0])
				out = tapped
			} else {
				s.screen.Write(buf[:n])
			}
			s.outputSeq += uint64(n)
			s.mu.Unlock()
			if s.cfg.Output != nil {
				s.cfg.Output(out)
			}
			s.outMu.Unlock()
		}
		if err != nil {
			return // EIO once the program and everything it started let go of the PTY
		}
	}
}

// wait records the program's exit once its output is read. A program that
// left children holding the PTY gets a moment for its last output, then the
// PTY is closed.
func (s *Session) wait(read <-chan struct{}) {
	err := s.cmd.Wait()
	select {
	case <-read:
	case <-time.After(500 * time.Millisecond):
		s.pty.Close()
		<-read
	}
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	s.mu.Lock()
	s.exitCode = code
	s.alive = false
	s.surface++
	s.revokeLocked("process_exited")
	for c := range s.participants {
		s.endWorkLocked(c, false)
		s.emitLocked(c, agentapi.EventToolsChanged, nil)
	}
	s.emitStateLocked()
	s.mu.Unlock()
	s.log.Info("program exited", "code", code)
	s.notifyOwner()
	close(s.done)
}

// Close ends the program (SIGHUP, as a closing terminal does, then SIGKILL
// after a moment), waits for it, and reports the session closed.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	s.mu.Unlock()
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGHUP)
	}
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.pty.Close()
	s.mu.Lock()
	if s.sink != nil {
		s.sink.Event(agentapi.Event{Session: s.id, Kind: agentapi.EventClosed})
	}
	s.mu.Unlock()
}

// Resize changes the terminal's size; the program gets SIGWINCH.
func (s *Session) Resize(rows, cols int) error {
	s.mu.Lock()
	s.screen.Resize(rows, cols)
	s.mu.Unlock()
	return pty.Setsize(s.pty, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)})
}

// DrawState returns the grid's drawing state. From [Config.Output] it is
// exactly the state the owner's terminal is in; elsewhere use
// [Session.Quiesce].
func (s *Session) DrawState() vt.DrawState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.screen.DrawState()
}

// Quiesce runs f while no output is being applied or passed on, with the
// grid's drawing state: what f writes to the owner's terminal lands
// between two chunks of the program's output.
func (s *Session) Quiesce(f func(vt.DrawState)) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	f(s.DrawState())
}

// Cell returns one cell of the grid, for repainting the owner's terminal.
func (s *Session) Cell(row, col int) vt.Cell {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.screen.Cell(row, col)
}

// Screen returns the grid's rows as a snapshot shows them.
func (s *Session) Screen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.screen.Lines(true)
}

// writePTY writes to the program. Callers hold writeMu.
func (s *Session) writePTY(b []byte) error {
	for len(b) > 0 {
		n, err := s.pty.Write(b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// Subscribe implements [agentapi.Session].
func (s *Session) Subscribe(sink agentapi.Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sink = sink
	s.emitStateLocked()
}

func (s *Session) stateLocked() *agentapi.State {
	st := &agentapi.State{
		ID: s.id, Title: s.cfg.Title, Shared: s.shared,
		Participants: []uint64{},
		Generation:   s.gen, Surface: s.surface,
		Masked: s.cfg.Masked, Mode: s.mode, ProcessAlive: s.alive,
	}
	for c := range s.participants {
		st.Participants = append(st.Participants, c)
	}
	return st
}

func (s *Session) emitStateLocked() {
	if s.sink != nil {
		s.sink.Event(agentapi.Event{Session: s.id, Kind: agentapi.EventState, State: s.stateLocked()})
	}
}

// emitLocked sends an event to one connection, tagged with the session and
// the current participation generation.
func (s *Session) emitLocked(conn uint64, name string, params map[string]any) {
	if s.sink == nil {
		return
	}
	if params == nil {
		params = map[string]any{}
	}
	params["session"] = s.id
	raw, _ := json.Marshal(params)
	s.sink.Event(agentapi.Event{Session: s.id, Kind: agentapi.EventAgent, Conn: conn, Generation: s.gen, Name: name, Params: raw})
}

// Peers implements [agentapi.Session]. Connections that are gone stop
// participating; that needs no new generation, as nothing can reach them.
func (s *Session) Peers(peers []agentapi.Peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers = peers
	live := map[uint64]bool{}
	for _, p := range peers {
		live[p.Conn] = true
		s.labels[p.Conn] = p.Label
		if p.Admission != "pending" {
			delete(s.answered, p.Conn)
		}
	}
	changed := false
	for c := range s.participants {
		if !live[c] {
			delete(s.participants, c)
			changed = true
		}
	}
	for _, m := range []map[uint64]bool{s.declined, s.answered, s.revoked} {
		for c := range m {
			if !live[c] {
				delete(m, c)
			}
		}
	}
	for c := range s.labels {
		if !live[c] {
			delete(s.labels, c)
		}
	}
	if changed {
		s.emitStateLocked()
	}
	s.notifyOwner()
}

func (s *Session) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s.%s%d", s.id, prefix, s.seq)
}

// remember records a new record's ID for conn and forgets the oldest
// finished one of its kind beyond [MaxRecords].
func (s *Session) remember(conn uint64, kind byte, id string) {
	k := historyKey{conn, kind}
	ids := append(s.history[k], id)
	if len(ids) > MaxRecords {
		for i, old := range ids {
			if s.finished(kind, old) {
				s.forget(kind, old)
				ids = append(ids[:i], ids[i+1:]...)
				break
			}
		}
	}
	s.history[k] = ids
}

const (
	kindRequest  byte = 'c'
	kindProposal byte = 'p'
	kindApproval byte = 'a'
	kindExec     byte = 'e'
)

func (s *Session) finished(kind byte, id string) bool {
	switch kind {
	case kindRequest:
		return s.requests[id].state != agentapi.RequestPending
	case kindProposal:
		st := s.proposals[id].state
		return st != agentapi.ProposalDrafting && st != agentapi.ProposalReady
	case kindApproval:
		return s.approvals[id].state != agentapi.ApprovalPending
	case kindExec:
		return s.execs[id].state != agentapi.ExecScheduled
	}
	return true
}

func (s *Session) forget(kind byte, id string) {
	switch kind {
	case kindRequest:
		delete(s.requests, id)
	case kindProposal:
		delete(s.proposals, id)
	case kindApproval:
		delete(s.approvals, id)
	case kindExec:
		delete(s.execs, id)
	}
}

// Release implements [agentapi.Session]: the connection left this tab or
// disconnected. What it held and was waiting for ends now, and its records
// are forgotten.
func (s *Session) Release(conn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controller == conn {
		s.controller = 0
	}
	s.endWorkLocked(conn, true)
	delete(s.revoked, conn)
	delete(s.typed, conn)
	delete(s.attention, conn)
	for k, ids := range s.history {
		if k.conn == conn {
			for _, id := range ids {
				s.forget(k.kind, id)
			}
			delete(s.history, k)
		}
	}
	s.notifyOwner()
}
