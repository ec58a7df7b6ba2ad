// Package agentsock is the agent socket v2 server (spec/agent-socket-v2.md)
// for shared terminals: newline-delimited JSON on an owner-only Unix
// socket, one socket for every session.
//
// The server owns connections: line framing, hello and identity, the
// owner's admission ([admission.Ticket]), binding a connection to a
// session, half-close, rate limits, and the boundary check before anything
// is written. Each session ([agentapi.Session]) owns its terminal and
// decides everything about it; the server routes agent methods to it.
//
// # Limits
//
// A line is at most [Config.MaxLine] bytes (default [DefaultMaxLine]); a
// longer one is answered parse and skipped, and the connection stays up.
// Each connection may have [Config.MaxInFlight] requests running or
// queued, and gets [Config.RateBurst] requests at once refilled at
// [Config.RatePerSecond]; beyond either it is answered rate_limited at
// once. A connection that does not read its answers is closed when
// [Config.MaxQueued] bytes wait for it. [Config.MaxConnections] sockets at
// most; more are closed at accept.
//
// # Order and half-close
//
// Reads run as they arrive. Writes (type, send_key, interrupt,
// request_control, request_attention, switch_tab, open_tab) run one at a
// time in arrival order, and only once the server has read everything the
// client sent before them: a client that pipelines requests and closes its
// write side gets its reads answered and every write answered
// connection_closing, without running. At that close, or a disconnect, the
// connection's lease and pending work in every session end at once.
//
// # Boundary
//
// Session results and events carry the participation generation (and
// snapshots the surface generation) they were produced under. Right before
// writing one, the server checks it against the session's current state:
// obsolete results become surface_unavailable and obsolete events are
// dropped, so a revocation also withdraws what was queued.
//
// # Refusals
//
// Private or unauthorised session access is answered with the generic
// surface_unavailable. Refusals are recorded as the broker's are (package
// refusal): their reasons go to [Config.Logger] at debug level, or at warn
// level with CONN_TRACE_REFUSALS=1, DSH_TRACE_REFUSALS=1 or
// [Config.TraceRefusals] — reasons and identifiers only.
package agentsock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-browser/broker/internal/ownersock"
	"github.com/dsh-browser/broker/internal/refusal"
	"github.com/dsh-browser/broker/term/agentapi"
)

// Defaults.
const (
	DefaultMaxConnections = 64
	DefaultMaxInFlight    = 32
	DefaultRateBurst      = 200
	DefaultRatePerSecond  = 100
	DefaultMaxQueued      = 8 << 20
	// MaxLabel bounds hello's name and agentId, in bytes.
	MaxLabel = 128
	// DrainTimeout bounds how long a closing connection's requests may
	// still take (an admission wait is 25 s).
	DrainTimeout = 30 * time.Second
)

// Admission modes.
const (
	AdmissionPrompt = "prompt" // the owner admits each connection (the default)
	AdmissionOpen   = "open"   // every connection is admitted at hello
)

// Config configures a [Server]. SocketPath or Listener is required.
type Config struct {
	SocketPath string       // created with its directory (0700); the socket is 0600
	Listener   net.Listener // instead of SocketPath: a socket already listening

	Admission string // AdmissionPrompt (default) or AdmissionOpen
	Opener    Opener // makes open_tab possible; nil answers it unsupported

	MaxLine        int
	MaxConnections int
	MaxInFlight    int
	RateBurst      int
	RatePerSecond  float64 // 0 means the default; a negative value never refills
	MaxQueued      int

	// TraceRefusals logs each refusal's reason at warn level; it is also
	// on when CONN_TRACE_REFUSALS=1 or DSH_TRACE_REFUSALS=1.
	TraceRefusals bool
	Logger        *slog.Logger
}

// Opener opens a new tab for open_tab: a session attached to the server
// and shared with the connection that asked, whose ID it returns.
type Opener interface {
	Open(ctx context.Context, req OpenRequest) (string, error)
}

// OpenRequest says who asks for a new tab and from where.
type OpenRequest struct {
	Conn   uint64
	Label  string
	From   string // the session the connection is bound to, or ""
	Reason string
}

func (cfg *Config) defaults() error {
	if cfg.SocketPath == "" && cfg.Listener == nil {
		return errors.New("agentsock: no socket path")
	}
	switch cfg.Admission {
	case "":
		cfg.Admission = AdmissionPrompt
	case AdmissionPrompt, AdmissionOpen:
	default:
		return fmt.Errorf("agentsock: unknown admission mode %q (prompt or open)", cfg.Admission)
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = DefaultRateBurst
	}
	if cfg.RatePerSecond == 0 {
		cfg.RatePerSecond = DefaultRatePerSecond
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Server is the agent socket server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	nextConn atomic.Uint64
	sockets  atomic.Int64
	refusals refusal.Log

	peersDirty chan struct{}

	// mu guards the fields below. Lock order: a session's lock, then mu,
	// then a conn's mu. Session methods are never called with mu held.
	mu       sync.Mutex
	conns    map[uint64]*conn
	sessions map[string]*view
	order    []string // attach order: the tabs' order
	attended string
	wg       sync.WaitGroup
}

// view is what the server knows of a session: its latest state.
type view struct {
	sess  agentapi.Session
	state *agentapi.State
}

// New returns a server; call [Server.Serve] to accept connections.
func New(cfg Config) (*Server, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		refusals:   refusal.New(cfg.Logger.With("socket", "agent"), cfg.TraceRefusals, refusal.EnvBroker, refusal.EnvAgent),
		peersDirty: make(chan struct{}, 1),
		conns:      map[uint64]*conn{},
		sessions:   map[string]*view{},
	}, nil
}

// Serve accepts connections until ctx is done, then closes every
// connection and returns nil.
func (s *Server) Serve(ctx context.Context) error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = listen(s.cfg.SocketPath); err != nil {
			return err
		}
		defer os.Remove(s.cfg.SocketPath)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	go s.pushPeers(ctx)
	var backoff time.Duration
accept:
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			// Temporary trouble such as EMFILE: back off, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("agent socket: accept failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-ctx.Done():
				break accept
			}
		}
		backoff = 0
		s.admit(nc)
	}
	ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.cancelRead() // nothing waits any more, not even for admission
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// admit applies the socket cap and the peer-uid check before any read.
func (s *Server) admit(nc net.Conn) {
	if s.sockets.Add(1) > int64(s.cfg.MaxConnections) {
		s.sockets.Add(-1)
		s.refuse("connection limit reached", "limit", s.cfg.MaxConnections)
		nc.Close()
		return
	}
	if _, unix := nc.(*net.UnixConn); unix {
		if uid, pid, err := ownersock.PeerCred(nc); err != nil || uid != os.Getuid() {
			s.sockets.Add(-1)
			s.refuse("peer is another user", "uid", uid, "pid", pid, "err", err)
			nc.Close()
			return
		}
	}
	c := newConn(s, s.nextConn.Add(1), nc)
	s.mu.Lock()
	s.conns[c.id] = c
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.sockets.Add(-1)
		c.run()
		s.mu.Lock()
		delete(s.conns, c.id)
		s.mu.Unlock()
		s.signalPeers()
	}()
}

// refuse records a refusal (package refusal): the wire carries only a
// generic answer.
func (s *Server) refuse(reason string, kv ...any) { s.refusals.Refuse(reason, kv...) }

// Attach adds a session (a tab). The session just attached counts as the
// one the person attends, until the person uses another.
func (s *Server) Attach(sess agentapi.Session) error {
	id := sess.ID()
	s.mu.Lock()
	if _, dup := s.sessions[id]; dup || id == "" {
		s.mu.Unlock()
		return fmt.Errorf("agentsock: session ID %q is empty or taken", id)
	}
	s.sessions[id] = &view{sess: sess}
	s.order = append(s.order, id)
	s.attended = id
	s.mu.Unlock()
	sess.Subscribe(s)
	s.signalPeers()
	return nil
}

// Detach removes a session that went away without reporting its end (its
// provider vanished).
func (s *Server) Detach(id string) {
	s.Event(agentapi.Event{Session: id, Kind: agentapi.EventClosed})
}

// Event implements [agentapi.Sink]. It never blocks and never calls a
// session.
func (s *Server) Event(ev agentapi.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.sessions[ev.Session]
	if v == nil {
		return
	}
	switch ev.Kind {
	case agentapi.EventState:
		s.setStateLocked(ev.Session, v, ev.State)()
	case agentapi.EventAgent:
		if c := s.conns[ev.Conn]; c != nil {
			c.eventRaw(ev.Name, ev.Params, &boundary{session: ev.Session, gen: ev.Generation})
		}
	case agentapi.EventAdmission:
		// The state that lists an admitted connection comes with the
		// answer and is applied first: a request released by the answer
		// finds its session.
		// Its tools_changed goes out once the connection is admitted: an
		// agent that asks at once must not be answered admission_pending.
		tell := func() {}
		if ev.State != nil {
			tell = s.setStateLocked(ev.Session, v, ev.State)
		}
		if c := s.conns[ev.Conn]; c != nil && c.admit(ev.Allowed) {
			if !ev.Allowed {
				s.refuse("the owner denied the connection", "conn", c.id)
			}
			tell()
			c.event(agentapi.EventToolsChanged, map[string]any{}, nil)
			s.signalPeers()
		} else {
			tell()
		}
	case agentapi.EventAttended:
		s.attended = ev.Session
	case agentapi.EventClosed:
		delete(s.sessions, ev.Session)
		s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == ev.Session })
		if s.attended == ev.Session {
			s.attended = ""
			if n := len(s.order); n > 0 {
				s.attended = s.order[n-1]
			}
		}
		for _, c := range s.conns {
			if v.state.Participates(c.id) {
				c.event(agentapi.EventToolsChanged, map[string]any{}, nil)
			}
		}
	}
}

// setStateLocked records a session's new state; tell tells each
// connection whose participation changed.
func (s *Server) setStateLocked(id string, v *view, st *agentapi.State) (tell func()) {
	old := v.state
	v.state = st
	var told []func()
	for _, c := range s.conns {
		was, is := old.Participates(c.id), st.Participates(c.id)
		switch {
		case was && !is:
			told = append(told, func() { c.event(agentapi.EventToolsChanged, map[string]any{}, nil) })
		case !was && is:
			c.mu.Lock()
			if c.bound == "" {
				c.bound = id
			}
			c.mu.Unlock()
			told = append(told, func() { c.event(agentapi.EventToolsChanged, map[string]any{"session": id}, nil) })
		}
	}
	return func() {
		for _, f := range told {
			f()
		}
	}
}

// boundary is what a session result or event was produced under.
type boundary struct {
	session      string
	gen, surface uint64
}

// current reports whether something produced under b may still be written
// to conn: the session is there, conn participates, and neither
// generation moved past b.
func (s *Server) current(conn uint64, b *boundary) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.sessions[b.session]
	if v == nil || !v.state.Participates(conn) {
		return false
	}
	return b.gen >= v.state.Generation && (b.surface == 0 || b.surface >= v.state.Surface)
}

func (s *Server) signalPeers() {
	select {
	case s.peersDirty <- struct{}{}:
	default:
	}
}

// pushPeers tells every session which connections exist, one update at a
// time so that none overtakes a newer one.
func (s *Server) pushPeers(ctx context.Context) {
	for {
		select {
		case <-s.peersDirty:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		peers := make([]agentapi.Peer, 0, len(s.conns))
		for _, c := range s.conns {
			if p, ok := c.peer(); ok {
				peers = append(peers, p)
			}
		}
		slices.SortFunc(peers, func(a, b agentapi.Peer) int { return int(a.Conn) - int(b.Conn) })
		sessions := make([]agentapi.Session, 0, len(s.sessions))
		for _, id := range s.order {
			sessions = append(sessions, s.sessions[id].sess)
		}
		s.mu.Unlock()
		for _, sess := range sessions {
			sess.Peers(peers)
		}
	}
}

// participating returns the states of the sessions conn participates in,
// in tab order.
func (s *Server) participating(conn uint64) []*agentapi.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*agentapi.State
	for _, id := range s.order {
		if st := s.sessions[id].state; st.Participates(conn) {
			out = append(out, st)
		}
	}
	return out
}

// lookup returns a session's view and whether conn participates in it.
func (s *Server) lookup(id string, conn uint64) (*view, *agentapi.State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.sessions[id]
	if v == nil {
		return nil, nil, false
	}
	return v, v.state, v.state.Participates(conn)
}

// others returns every session but one.
func (s *Server) others(except string) []agentapi.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []agentapi.Session
	for _, id := range s.order {
		if id != except {
			out = append(out, s.sessions[id].sess)
		}
	}
	return out
}

func (s *Server) attendedSession() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attended
}
