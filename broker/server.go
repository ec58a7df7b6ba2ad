// Package broker is the daemon: it listens on the private Unix socket, admits
// and authenticates peers, negotiates capabilities, registers providers and
// routes client requests.
//
// # Admission
//
// A connection is refused before a byte is read when the broker already holds
// [Config.MaxConnections] sockets (authenticated or not) or when the peer
// runs as another user (SO_PEERCRED). The first request must be hello, within
// [HandshakeTimeout]; a rejected hello may be retried inside that same window
// and gives no runtime access. Providers beyond [Config.MaxProviders] are
// refused with QUEUE_FULL; nothing already registered is ever evicted.
//
// With [Config.Admission] set to [AdmissionPrompt] a client whose hello
// succeeds is also pending until the owner allows it in the extension (the
// provider method admission.request): discovery answers ADMISSION_PENDING at
// once, other requests wait up to [AdmissionWait], and a denial is final for
// that connection (ADMISSION_DENIED), never inherited by a later connection
// with the same label. Providers are never subject to it: their authority is
// the native-messaging allowlist.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Defaults from the protocol.
const (
	DefaultMaxConnections = 64
	DefaultMaxProviders   = 16
	HandshakeTimeout      = 3 * time.Second
)

// Access modes.
const (
	AccessRestricted = "restricted"
	AccessPersonal   = "personal"
)

// Config configures a Server. RuntimeDir is required.
type Config struct {
	RuntimeDir string
	StateDir   string       // holds journal.db; empty keeps action fences in memory only
	SocketPath string       // default RUNTIME/broker.sock
	Listener   net.Listener // a socket handed over by systemd; nil to listen on SocketPath

	AccessMode   string   // restricted (default) or personal
	AllowOrigins []string // restricted mode only
	Admission    string   // open (default): the token admits a client; prompt: the owner does too

	MaxConnections int // default 64
	MaxProviders   int // default 16
	Limits         rpc.Limits

	Version string // reported by broker.status
	Logger  *slog.Logger
}

func (cfg *Config) validate() error {
	if cfg.RuntimeDir == "" {
		return errors.New("broker: runtime directory not set")
	}
	switch cfg.AccessMode {
	case "":
		cfg.AccessMode = AccessRestricted
	case AccessRestricted:
	case AccessPersonal:
		if len(cfg.AllowOrigins) > 0 {
			return errors.New("--allow-origin applies to restricted mode only; personal mode allows every HTTP(S) tab")
		}
	default:
		return fmt.Errorf("unknown access mode %q: use restricted or personal", cfg.AccessMode)
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
	if len(cfg.SocketPath) > 107 {
		return fmt.Errorf("socket path %s is %d bytes; Unix sockets allow 107: choose a shorter --runtime-dir", cfg.SocketPath, len(cfg.SocketPath))
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxProviders <= 0 {
		cfg.MaxProviders = DefaultMaxProviders
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
	rt      *browser.Runtime
	journal *journal.Journal // nil without a state directory
	lock    *os.File         // broker.lock, held for the server's life
	token   []byte
	caps    []string
	started time.Time

	sockets atomic.Int64 // open sockets, authenticated or not
	nextID  atomic.Uint64

	mu             sync.Mutex
	peers          map[*peer]struct{}
	providers      []*peer       // registration order
	providerJoined chan struct{} // closed and replaced when a provider registers
	conns          sync.WaitGroup
}

// New prepares the runtime directory and token, takes the runtime
// directory's lock (one broker per directory) and opens the journal, and
// returns a Server ready to [Server.Serve]. A journal that cannot be trusted
// does not stop the broker: it keeps serving reads and refuses actions with
// JOURNAL_UNAVAILABLE, and says why in the log and in broker status.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ensurePrivateDir(cfg.RuntimeDir); err != nil {
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
	caps := wire.BrokerCapabilities()
	if cfg.AccessMode == AccessPersonal {
		caps = append(caps, wire.CapPersonalMode)
	}
	if cfg.Admission == AdmissionPrompt {
		caps = append(caps, wire.CapAdmission)
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		lock:    lock,
		token:   token,
		caps:    caps,
		started: time.Now(),
		peers:   make(map[*peer]struct{}),

		providerJoined: make(chan struct{}),
	}
	rc := browser.Config{
		Personal:     cfg.AccessMode == AccessPersonal,
		AllowOrigins: cfg.AllowOrigins,
		Provider:     s.providerFor,
		Client:       s.clientFor,
		Logger:       cfg.Logger,
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
		rc.Journal = s.journal
	}
	s.rt = browser.New(rc)
	return s, nil
}

// Serve accepts connections until ctx is cancelled, then shuts down: it
// closes the listener, closes every connection (their pending work is
// cancelled) and waits for them. It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context) error {
	defer s.lock.Close()
	if s.journal != nil {
		defer s.journal.Close()
		jctx, stop := context.WithCancel(ctx)
		defer stop()
		go s.journal.Run(jctx) // hourly compaction
	}

	ln := s.cfg.Listener
	ownSocket := ln == nil
	if ownSocket {
		var err error
		if ln, err = listenUnix(s.cfg.SocketPath); err != nil {
			return err
		}
	}
	s.log.Info("broker listening", "socket", s.cfg.SocketPath, "access", s.cfg.AccessMode, "admission", s.cfg.Admission, "activated", !ownSocket)
	daemon.SdNotify(false, daemon.SdNotifyReady) // no-op outside systemd

	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
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
	if ctx.Err() != nil {
		return nil
	}
	return acceptErr
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

// admit applies the socket cap and the peer-uid check, before any read.
func (s *Server) admit(c net.Conn) {
	if s.sockets.Add(1) > int64(s.cfg.MaxConnections) {
		s.sockets.Add(-1)
		s.refuse("socket limit reached", "limit", s.cfg.MaxConnections)
		c.Close()
		return
	}
	uid, pid, err := peerCred(c)
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
	s.peers[p] = struct{}{}
	s.mu.Unlock()
	s.conns.Add(1)
	go func() {
		defer s.conns.Done()
		defer s.sockets.Add(-1)
		p.run()
		s.mu.Lock()
		delete(s.peers, p)
		s.mu.Unlock()
	}()
}

// refuse logs a refused connection or request. Refusals are generic on the
// wire; their reasons go to the log at debug level, or to stderr when
// DSH_TRACE_REFUSALS=1.
func (s *Server) refuse(reason string, args ...any) {
	if os.Getenv("DSH_TRACE_REFUSALS") == "1" {
		s.log.Warn("refused: "+reason, args...)
		return
	}
	s.log.Debug("refused: "+reason, args...)
}
