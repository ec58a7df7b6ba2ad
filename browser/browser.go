// Package browser implements the public browser.* methods: tab discovery,
// claims, observation, actions and release. It is the broker's runtime: it
// turns a client's request into bounded, fenced provider commands and builds
// the results, so that every browser quirk is handled once, here, in Go.
//
// The extension (the provider) is thin: it checks the lease token before
// each debugger command, performs bounded AX reads and searches, and
// dispatches input only after re-checking the target's identity and hit
// point (protocol/PROVIDER.md).
package browser

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

// Timeouts for provider work done on a client's behalf.
const (
	ProviderTimeout = 10 * time.Second // reads and single commands
	ApprovalTimeout = 65 * time.Second // a claim the user approves in the browser (the window waits 60 s)
)

// Provider is a connected browser instance.
type Provider interface {
	InstanceID() string
	// Capable reports whether the provider advertised a capability in its
	// hello (an optional provider method).
	Capable(capability string) bool
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// Client is a connected agent client.
type Client interface {
	ConnID() uint64
	// Label says who the client is, for the user's approval window.
	Label() string
	Notify(event string, value any) error
	// Call sends a request to the client (browser.approveBatchStep).
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
	// JournalKey is the client's hello journalKey, or "" for a legacy
	// client, whose actions are fenced for its connection only.
	JournalKey() string
}

// Journal is the durable action fence (package journal).
type Journal interface {
	Lookup(k journal.Key) (*journal.Record, error)
	Reserve(k journal.Key, hash [32]byte, kind string) error
	Settle(k journal.Key, outcome, dispatch string) error
}

// Config configures a Runtime.
type Config struct {
	Personal     bool     // prompt-free same-tab leases of HTTP(S) tabs
	AllowOrigins []string // restricted mode: only these exact origins, when set
	MaxLeases    int
	MaxPending   int
	// Provider returns the connected provider of an instance, or nil.
	Provider func(instanceID string) Provider
	// Client returns a connected client by connection ID, or nil.
	Client func(conn uint64) Client
	// Journal fences actions of clients that send a journalKey across
	// reconnects and restarts; nil keeps every fence in memory.
	Journal Journal
	Now     func() time.Time
	Logger  *slog.Logger
}

// Runtime serves the browser.* methods. Its methods are safe for
// concurrent use.
type Runtime struct {
	cfg    Config
	log    *slog.Logger
	leases *lease.Manager

	mu      sync.Mutex
	pages   map[string]*page  // by lease ID
	fences  map[string]*fence // by action identity (scope + request ID)
	results *resultCache
	cursors *cursorCache // observation baselines by cursor
}

// New returns a Runtime.
func New(cfg Config) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger, pages: make(map[string]*page), fences: make(map[string]*fence)}
	r.results = newResultCache(cfg.Now)
	r.cursors = newCursorCache(cfg.Now)
	r.leases = lease.NewManager(cfg.MaxLeases, cfg.MaxPending, r.leaseEnded)
	return r
}

func (r *Runtime) now() time.Time { return r.cfg.Now() }

// Leases returns a snapshot of the live leases.
func (r *Runtime) Leases() []lease.Lease { return r.leases.Live() }

// decodeParams decodes params strictly into v: unknown fields and trailing
// data are INVALID_REQUEST.
func decodeParams(params json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}

// textLen counts UTF-16 code units, the unit of the reference's bounds.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// bounded reports whether s has min..max UTF-16 units.
func bounded(s string, min, max int) bool {
	n := textLen(s)
	return n >= min && n <= max
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func invalid() error { return wire.Err(wire.CodeInvalidRequest) }

// httpOrigin returns the origin of a credential-free HTTP(S) URL.
func httpOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	return u.Scheme + "://" + u.Host, true
}

func (r *Runtime) allowedOrigin(origin string) bool {
	if r.cfg.Personal || len(r.cfg.AllowOrigins) == 0 {
		return true
	}
	for _, o := range r.cfg.AllowOrigins {
		if o == origin {
			return true
		}
	}
	return false
}

func (r *Runtime) provider(instanceID string) (Provider, error) {
	if p := r.cfg.Provider(instanceID); p != nil {
		return p, nil
	}
	return nil, wire.Err(wire.CodeConnectionLost)
}
