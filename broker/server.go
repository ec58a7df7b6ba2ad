// Package broker is the daemon: it listens on the private Unix socket, admits
// and authenticates peers, negotiates capabilities, registers providers and
// routes client requests to the services of the provider kinds it hosts
// (package service).
//
// # Admission
//
// A connection is refused before a byte is read when the broker already holds
// [Config.MaxConnections] sockets, or when the peer runs as another user
// (SO_PEERCRED). Sockets that have not completed a hello have their own,
// smaller cap ([Config.MaxUnauthenticated]): past it, a newcomer evicts the
// oldest unauthenticated socket of the process holding the most of them,
// so one program reopening sockets cannot lock everyone else out. The first
// request must be hello, within [HandshakeTimeout]; a rejected hello may be
// retried inside that window ([MaxHelloAttempts] in all) and gives no
// runtime access. Providers beyond [Config.MaxProviders] are refused with
// QUEUE_FULL; nothing already registered is ever evicted.
//
// With [Config.Admission] set to [AdmissionPrompt] a client whose hello
// succeeds is also pending until the owner allows it in the extension (the
// provider method admission.request; package admission): discovery answers
// ADMISSION_PENDING at once, other requests wait up to [AdmissionWait], and
// a denial is final for that connection (ADMISSION_DENIED), never inherited
// by a later connection with the same label. Providers are never subject
// to it: their authority is the native-messaging allowlist.
//
// # Owner surfaces
//
// Owner questions (admission; claim approvals, which the browser kind puts
// to its own provider) go only to a provider the owner's own software runs:
// its peer process, read with SO_PEERCRED when it connected, is one of
// [Config.OwnerExecutables] (nativehost beside the broker, and the broker
// itself for `broker term`), and its kind shows owner questions. Any other
// provider with the token may serve, but is never asked for consent.
//
// # Locks
//
// Lock order: peer.mu (serializes one peer's hello), then Server.mu. Server.mu
// guards the peer and provider tables and is otherwise a leaf: nothing that
// blocks or calls out runs under it. A peer's welcomed state is immutable
// once published (peer.state), so reading it takes no lock.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/internal/ownersock"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/internal/refusal"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// Defaults from the protocol.
const (
	DefaultMaxConnections     = 64
	DefaultMaxUnauthenticated = 16
	DefaultMaxProviders       = 16
	HandshakeTimeout          = wire.HandshakeTimeout
	// MaxHelloAttempts bounds the requests a peer may send before its
	// welcome (a rejected hello may be retried); past it the connection is
	// closed, so unauthenticated peers cannot fill the transport-ID set.
	MaxHelloAttempts = 4
)

// Config configures a Server. RuntimeDir is required.
type Config struct {
	RuntimeDir string
	StateDir   string       // holds journal.db; empty keeps action fences in memory only
	SocketPath string       // default RUNTIME/broker.sock
	Listener   net.Listener // a socket handed over by systemd; nil to listen on SocketPath

	Admission string // open (default): the token admits a client; prompt: the owner does too

	// Services are the provider kinds the broker hosts, one per kind.
	Services []service.Register
	// OwnerExecutables are the programs whose providers may put questions
	// to the owner (see the package comment). Default: nativehost in the
	// broker's own directory, and the broker itself.
	OwnerExecutables []string

	MaxConnections     int // default 64
	MaxUnauthenticated int // default 16
	MaxProviders       int // default 16
	Limits             rpc.Limits

	Version string // reported by broker.status
	Logger  *slog.Logger
}

func (cfg *Config) validate() error {
	if cfg.RuntimeDir == "" {
		return errors.New("broker: runtime directory not set")
	}
	switch cfg.Admission {
	case "":
		cfg.Admission = AdmissionOpen
	case AdmissionOpen, AdmissionPrompt:
	default:
		return fmt.Errorf("unknown admission mode %q: use open or prompt", cfg.Admission)
	}
	if cfg.SocketPath == "" {
		cfg.SocketPath = filepath.Join(cfg.RuntimeDir, paths.SocketName)
	}
	if len(cfg.SocketPath) > ownersock.MaxPath {
		return fmt.Errorf("socket path %s is %d bytes; Unix sockets allow 107: choose a shorter --runtime-dir", cfg.SocketPath, len(cfg.SocketPath))
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxUnauthenticated <= 0 {
		cfg.MaxUnauthenticated = min(DefaultMaxUnauthenticated, cfg.MaxConnections)
	}
	if cfg.MaxUnauthenticated > cfg.MaxConnections {
		return fmt.Errorf("max unauthenticated sockets (%d) above max connections (%d)", cfg.MaxUnauthenticated, cfg.MaxConnections)
	}
	if cfg.MaxProviders <= 0 {
		cfg.MaxProviders = DefaultMaxProviders
	}
	if cfg.OwnerExecutables == nil {
		if self, err := os.Executable(); err == nil {
			cfg.OwnerExecutables = []string{self, filepath.Join(filepath.Dir(self), "nativehost")}
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Server is a running broker.
type Server struct {
	cfg     Config
	log     *slog.Logger
	journal *journal.Journal // nil without a state directory
	lock    *os.File         // broker.lock, held for the server's life
	token   []byte
	caps    []string
	started time.Time
	shed    rateLimited // warns about shed sockets at most once a minute

	activity *activity.Log // the owner's activity log, nil without a state directory
	owner    ownerEvents   // owner.changed to the consoles
	refusals refusal.Log

	services []service.Service
	kinds    map[string]service.Service // by kind name
	methods  map[string]route           // client methods of every service, and broker.*

	sockets atomic.Int64 // open sockets, authenticated or not
	nextID  atomic.Uint64

	mu             sync.Mutex
	peers          map[*peer]struct{}
	unauth         map[*peer]struct{} // sockets without a successful hello yet
	providers      []*peer            // registration order
	providerJoined chan struct{}      // closed and replaced when a provider registers
	conns          sync.WaitGroup
}

// New prepares the runtime directory and token, takes the runtime
// directory's lock (one broker per directory), opens the journal and binds
// the services, and returns a Server ready to [Server.Serve]. A journal
// that cannot be trusted does not stop the broker: it keeps serving reads
// and refuses actions with JOURNAL_UNAVAILABLE, and says why in the log and
// in broker status.
func New(cfg Config) (*Server, error) {
	if err := ownersock.Supported(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ownersock.EnsurePrivateDir(cfg.RuntimeDir); err != nil {
		return nil, err
	}
	token, err := loadOrCreateToken(paths.Token(cfg.RuntimeDir))
	if err != nil {
		return nil, err
	}
	lock, err := lockFile(filepath.Join(cfg.RuntimeDir, "broker.lock"))
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		refusals: refusal.New(cfg.Logger, false, refusal.EnvBroker),
		lock:     lock,
		token:    token,
		started:  time.Now(),
		kinds:    make(map[string]service.Service),
		peers:    make(map[*peer]struct{}),
		unauth:   make(map[*peer]struct{}),

		providerJoined: make(chan struct{}),
	}
	if cfg.StateDir != "" {
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			lock.Close()
			return nil, fmt.Errorf("create the state directory: %w", err)
		}
		// The token only lets the journal migrate one written before it had
		// a key of its own.
		s.journal = journal.Open(filepath.Join(cfg.StateDir, paths.JournalName), journal.Options{LegacySecret: token, Logger: cfg.Logger})
		if p := s.journal.Err(); p != nil {
			s.log.Error("the action journal is unavailable: actions are refused until it is fixed", "reason", p.Reason, "fix", p.Fix)
		}
		s.activity = activity.Open(filepath.Join(cfg.StateDir, activity.FileName),
			activity.Options{Logger: cfg.Logger, OnChange: func() { s.ownerChanged(topicLog) }})
	}
	if err := s.bind(cfg.Services); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// bind registers each kind's service: its kind, its capabilities and its
// client methods, refusing a kind or a method name registered twice.
func (s *Server) bind(regs []service.Register) error {
	s.methods = brokerMethods()
	s.methods[wire.BrokerConsole] = route{Method: service.Method{Handle: s.openConsole}}
	s.caps = []string{wire.CapOrderedIDs}
	if s.cfg.Admission == AdmissionPrompt {
		s.caps = append(s.caps, wire.CapAdmission)
	}
	for _, reg := range regs {
		svc, err := reg(s)
		if err != nil {
			return err
		}
		kind := svc.Kind().Name
		if _, dup := s.kinds[kind]; dup {
			return fmt.Errorf("broker: provider kind %q registered twice", kind)
		}
		s.kinds[kind] = svc
		s.services = append(s.services, svc)
		for name, m := range svc.Methods() {
			if _, dup := s.methods[name]; dup {
				return fmt.Errorf("broker: method %q registered twice", name)
			}
			params, err := compileParams(name, m.Schema)
			if err != nil {
				return err
			}
			s.methods[name] = route{svc: svc, Method: m, params: params}
		}
		for _, c := range svc.Offers() {
			if !slices.Contains(s.caps, c) {
				s.caps = append(s.caps, c)
			}
		}
	}
	return nil
}

func (s *Server) close() {
	if s.journal != nil {
		s.journal.Close()
	}
	if s.activity != nil {
		s.activity.Close()
	}
	s.lock.Close()
}

// Serve accepts connections until ctx is cancelled, then shuts down: it
// closes the listener, closes every connection (their pending work is
// cancelled) and waits for them and for the services' runners
// (service.Runner). It returns nil after a clean shutdown, and a runner's
// error if one failed.
func (s *Server) Serve(parent context.Context) error {
	defer s.close()
	// A service's Runner that fails stops the broker with its error.
	ctx, stopAll := context.WithCancelCause(parent)
	defer stopAll(nil)
	if s.journal != nil {
		jctx, stop := context.WithCancel(ctx)
		defer stop()
		go s.journal.Run(jctx) // hourly compaction
	}
	if s.activity != nil {
		actx, stop := context.WithCancel(ctx)
		defer stop()
		go s.activity.Run(actx) // drops entries past their age hourly
	}

	ln := s.cfg.Listener
	ownSocket := ln == nil
	if ownSocket {
		var err error
		if ln, err = ownersock.Listen(s.cfg.SocketPath); err != nil {
			return err
		}
	}
	s.log.Info("broker listening", "socket", s.cfg.SocketPath, "admission", s.cfg.Admission, "activated", !ownSocket)
	daemon.SdNotify(false, daemon.SdNotifyReady) // no-op outside systemd

	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	runners := s.startRunners(ctx, stopAll)
	acceptErr := s.acceptLoop(ctx, ln)

	daemon.SdNotify(false, daemon.SdNotifyStopping)
	s.log.Info("broker shutting down")
	ln.Close()
	if ownSocket {
		os.Remove(s.cfg.SocketPath) // we created it; systemd's is left alone
	}
	s.mu.Lock()
	for p := range s.peers {
		p.conn.Close()
	}
	s.mu.Unlock()
	s.conns.Wait()
	stopAll(nil)
	runners.Wait()
	if err := context.Cause(ctx); parent.Err() == nil && err != nil && !errors.Is(err, context.Canceled) {
		return err // a Runner failed
	}
	if parent.Err() != nil {
		return nil
	}
	return acceptErr
}

// startRunners starts the Run of every service that has one (see
// service.Runner). One that fails cancels ctx with its error.
func (s *Server) startRunners(ctx context.Context, fail context.CancelCauseFunc) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, svc := range s.services {
		r, ok := svc.(service.Runner)
		if !ok {
			continue
		}
		kind := svc.Kind().Name
		wg.Go(func() {
			if err := r.Run(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("a provider kind's service failed; stopping", "kind", kind, "err", err)
				fail(fmt.Errorf("the %s service: %w", kind, err))
			}
		})
	}
	return &wg
}

func (s *Server) acceptLoop(ctx context.Context, ln net.Listener) error {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Temporary trouble such as EMFILE: back off, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-ctx.Done():
				return nil
			}
		}
		backoff = 0
		s.admit(c)
	}
}

// admit applies the socket caps and the peer-uid check, before any read.
func (s *Server) admit(c net.Conn) {
	if s.sockets.Add(1) > int64(s.cfg.MaxConnections) {
		s.sockets.Add(-1)
		s.shedding("socket limit reached", "limit", s.cfg.MaxConnections)
		c.Close()
		return
	}
	uid, pid, err := ownersock.PeerCred(c)
	if err != nil || uid != os.Getuid() {
		s.sockets.Add(-1)
		s.refuse("peer is another user", "uid", uid, "pid", pid, "err", err)
		c.Close()
		return
	}
	id := s.nextID.Add(1)
	log := s.log.With("conn", id, "pid", pid)
	p := newPeer(s, c, id, pid, log)
	s.mu.Lock()
	victim := s.makeRoomLocked(p)
	s.peers[p] = struct{}{}
	s.unauth[p] = struct{}{}
	s.mu.Unlock()
	if victim != nil {
		s.shedding("unauthenticated socket limit reached: closed the oldest of the process holding the most",
			"limit", s.cfg.MaxUnauthenticated, "closed_pid", victim.pid, "newcomer_pid", pid)
		s.releaseSocket(victim) // its slot is free now, not when its goroutine ends
		victim.conn.Close()
	}
	s.conns.Add(1)
	go func() {
		defer s.conns.Done()
		defer s.releaseSocket(p)
		p.run()
		s.mu.Lock()
		delete(s.peers, p)
		delete(s.unauth, p)
		s.mu.Unlock()
	}()
}

// makeRoomLocked returns the unauthenticated peer to close so that p can
// wait for its hello, or nil when there is room. The victim is the oldest
// socket of the process holding the most unauthenticated sockets, and only
// if that process holds more than p's: a newcomer never evicts an equal.
// It is removed from the table at once.
func (s *Server) makeRoomLocked(p *peer) *peer {
	if len(s.unauth) < s.cfg.MaxUnauthenticated {
		return nil
	}
	count := make(map[int]int)
	for q := range s.unauth {
		count[q.pid]++
	}
	var victim *peer
	for q := range s.unauth {
		if victim == nil || count[q.pid] > count[victim.pid] ||
			(count[q.pid] == count[victim.pid] && q.id < victim.id) {
			victim = q
		}
	}
	if count[victim.pid] <= count[p.pid] {
		victim = nil
		// No fair victim: the newcomer is the one over its share.
		for q := range s.unauth {
			if q.pid == p.pid && (victim == nil || q.id < victim.id) {
				victim = q
			}
		}
	}
	if victim != nil {
		delete(s.unauth, victim)
	}
	return victim
}

// releaseSocket gives p's socket slot back, once.
func (s *Server) releaseSocket(p *peer) {
	if p.released.CompareAndSwap(false, true) {
		s.sockets.Add(-1)
	}
}

// authenticated moves p out of the unauthenticated table once welcomed.
func (s *Server) authenticated(p *peer) {
	s.mu.Lock()
	delete(s.unauth, p)
	s.mu.Unlock()
}

// refuse logs a refused connection or request (package refusal): generic
// on the wire, its reason at debug level, or at warn level with
// DSH_TRACE_REFUSALS=1.
func (s *Server) refuse(reason string, args ...any) { s.refusals.Refuse(reason, args...) }

// shedding logs sockets closed to protect the caps: at warn level (the
// owner should know the broker is under pressure), at most once a minute
// with the count since the last line.
func (s *Server) shedding(reason string, args ...any) {
	s.refuse(reason, args...)
	if n, ok := s.shed.allow(time.Now(), time.Minute); ok {
		s.log.Warn("shedding sockets: "+reason, append(args, "shed_since_last_warning", n)...)
	}
}

// rateLimited counts events and allows one report per interval.
type rateLimited struct {
	mu    sync.Mutex
	last  time.Time
	count int
}

func (r *rateLimited) allow(now time.Time, every time.Duration) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if !r.last.IsZero() && now.Sub(r.last) < every {
		return 0, false
	}
	n := r.count
	r.last, r.count = now, 0
	return n, true
}
