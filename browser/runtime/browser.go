// Package runtime is the browser kind's service: it implements the public
// browser.* methods (package browser is their vocabulary) — tab discovery,
// claims, observation, actions, batches, page windows, frames, capture and
// release. It turns a client's request into bounded, fenced provider
// commands and builds the results, so that every browser quirk is handled
// once, here, in Go.
//
// The extension (the provider) is thin: it checks the lease token before
// each debugger command, performs bounded AX reads and searches, and
// dispatches input only after re-checking the target's identity and hit
// point (protocol/PROVIDER.md).
package runtime

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// Timeouts for provider work done on a client's behalf.
const (
	ProviderTimeout = 10 * time.Second // reads and single commands
	// ApprovalTimeout bounds a claim the user approves in the browser.
	ApprovalTimeout = browser.ApprovalTimeout
)

// Provider and Client are the broker's peers as the runtime sees them.
type (
	Provider = service.Provider
	Client   = service.Client
)

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
	// Journal fences actions of clients that send a journalKey across
	// reconnects and restarts; nil keeps every fence in memory.
	Journal Journal
	// Activity is the owner's activity log: one entry per action; nil
	// logs nothing.
	Activity ActivityLog
	Now      func() time.Time
	Logger   *slog.Logger
}

// Runtime serves the browser.* methods. Its methods are safe for
// concurrent use.
type Runtime struct {
	cfg      Config
	host     service.Host
	overseer service.Overseer // the owner's console, when the host has one
	log      *slog.Logger
	leases   *lease.Manager

	mu      sync.Mutex
	pages   map[string]*page  // by lease ID
	fences  map[string]*fence // by action identity (scope + request ID)
	results *resultCache
	cursors *cursorCache // observation baselines by cursor
}

// New returns a Runtime serving the browser providers of host.
func New(cfg Config, host service.Host) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Runtime{cfg: cfg, host: host, log: cfg.Logger, pages: make(map[string]*page), fences: make(map[string]*fence)}
	r.overseer, _ = host.(service.Overseer)
	r.results = newResultCache(cfg.Now)
	r.cursors = newCursorCache(cfg.Now)
	r.leases = lease.NewManager(cfg.MaxLeases, cfg.MaxPending, r.leaseEnded)
	return r
}

func (r *Runtime) now() time.Time { return r.cfg.Now() }

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

// invalid logs why params were refused (at debug level) and refuses them.
func (r *Runtime) invalid(err error) error {
	r.log.Debug("params refused", "err", err)
	return invalid()
}

// httpOrigin returns the origin of a credential-free HTTP(S) URL.
func httpOrigin(raw string) (string, bool) {
	if origin, ok := plainHTTPOrigin(raw); ok {
		return origin, true
	}
	u, ok := httpURL(raw)
	if !ok {
		return "", false
	}
	return u.Scheme + "://" + u.Host, true
}

// httpURL parses a credential-free HTTP(S) URL.
func httpURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	return u, err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// plainHTTPOrigin returns the origin of raw when raw has the plain shape
// of most tabs' URLs: "http://" or "https://", a host of ASCII letters,
// digits, dots and hyphens, then nothing or "/", "?" or "#" followed by
// no control character and no "%". Such a URL is one url.Parse takes
// (nothing in it can be a bad escape, a port, user information or an
// invalid host), with that scheme and host, so httpURL would say yes with
// this origin. Anything else is not known here (ok false). A browser.tabs
// round trip parsed every tab's URL: five url.Parse calls, 5 of its 73
// allocations.
func plainHTTPOrigin(raw string) (origin string, ok bool) {
	rest, found := strings.CutPrefix(raw, "https://")
	if !found {
		if rest, found = strings.CutPrefix(raw, "http://"); !found {
			return "", false
		}
	}
	host := 0
	for host < len(rest) && hostByte(rest[host]) {
		host++
	}
	if host == 0 || host < len(rest) && !strings.ContainsRune("/?#", rune(rest[host])) {
		return "", false
	}
	for i := host; i < len(rest); i++ {
		if c := rest[i]; c < 0x20 || c == 0x7f || c == '%' {
			return "", false
		}
	}
	return raw[:len(raw)-len(rest)+host], true
}

// hostByte reports whether c is an ASCII letter, digit, dot or hyphen.
func hostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-'
}

// allowedURL reports whether raw is a credential-free HTTP(S) URL of an
// allowed origin.
func (r *Runtime) allowedURL(raw string) bool {
	origin, ok := httpOrigin(raw)
	return ok && r.allowedOrigin(origin)
}

// anyOrigin reports whether every origin is allowed: in personal mode, or
// with no allowlist.
func (r *Runtime) anyOrigin() bool { return r.cfg.Personal || len(r.cfg.AllowOrigins) == 0 }

func (r *Runtime) allowedOrigin(origin string) bool {
	if r.anyOrigin() {
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
	if p := r.host.Provider(instanceID); p != nil && p.Kind() == browser.Kind {
		return p, nil
	}
	return nil, wire.Err(wire.CodeConnectionLost)
}
