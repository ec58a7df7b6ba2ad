// Package fetch is the Snug connected-fetch executor (spec Part III §14):
// the one seat in the broker that both reads an app's credentials and
// fetches. An app asks, through a snug:net-request frame, for a request to
// a URL; the executor decides, in the normative order, whether it may go
// and with which credential, makes it, and says what came back:
//
//  1. shape — method, URL, headers and body within their bounds
//     (NET_INVALID_REQUEST; a body over 256 KiB, NET_SIZE_EXCEEDED); a
//     snug-connection://slot/path address is resolved here (§15), which
//     grants nothing;
//  2. binding — the app is the one the host bound the runner to, never a
//     field of the request;
//  3. grant — exactly one approved, not imported, connection of the app
//     whose frozen ceiling holds the host (NET_NOT_APPROVED,
//     NET_IMPORTED_UNAPPROVED, NET_AMBIGUOUS_CONNECTION);
//  4. ceiling — https only (NET_SCHEME_BLOCKED); the host matched exactly,
//     after IDNA and numeric normalisation on both sides, port ignored;
//  5. SSRF guard — loopback, private, link-local, metadata and the local
//     names are refused even inside a ceiling (NET_SSRF_BLOCKED), and again
//     at dial time on every resolved address (package ssrf);
//  6. confirm — POST, PUT, PATCH and DELETE need the user's yes, naming
//     host, method and URL, before any credential is read
//     (NET_CONFIRM_DENIED);
//  7. strip — credential-shaped headers the app set are removed;
//  8. inject — the credential goes where the connection's kind and
//     templates say (NET_AUTH_FAILED when one is missing or a template
//     is broken);
//  9. fetch — redirects are never followed (NET_REDIRECT_BLOCKED); a
//     transport failure or the timeout is NET_FETCH_FAILED (retryable);
//  10. read — the body is capped at 1 MiB while reading
//     (NET_SIZE_EXCEEDED), the values this request injected are scrubbed,
//     raw and percent-encoded, from the body and the headers, and only
//     whitelisted headers cross.
//
// Gates 1–6 read no credential. Credentials are read from the store on
// every request, never cached, and appear in no answer, error or log line
// the executor makes. No option relaxes a gate.
package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/dsh-browser/broker/snug/ssrf"
	"github.com/dsh-browser/broker/snug/userdb"
)

// Timeout is the host's choice of how long one request may take, read
// included (the reference's 15 s).
const Timeout = 15 * time.Second

// Store is what the executor reads and writes: the app's connection rows
// and snug_secrets. *userdb.DB is one.
type Store interface {
	Connections(ctx context.Context, appID string) ([]userdb.Connection, error)
	Secret(ctx context.Context, key string) (string, bool, error)
	SetSecret(ctx context.Context, key, value string) error
	// SecretKeys lists the keys under a prefix (the sign-ins in progress).
	SecretKeys(ctx context.Context, prefix string) ([]string, error)
	// SetConnectionSecrets writes under an approved slot only (tokens,
	// state), so a token arriving after a revocation is never stored.
	SetConnectionSecrets(ctx context.Context, appID, slot string, values map[string]string) error
}

// Options are the executor's seams. The zero value is the real network:
// the system resolver, a plain dialer, the system's roots.
type Options struct {
	// Resolver and Dial are what the guarded dialer uses (tests inject a
	// pretend Internet, package ssrf/ssrftest). The SSRF decision is made
	// on what Resolver answers, at dial time, whatever they are.
	Resolver ssrf.Resolver
	Dial     ssrf.DialFunc
	// RootCAs verifies servers (nil: the system's roots).
	RootCAs *x509.CertPool
	// Timeout bounds a request (default Timeout).
	Timeout time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Executor runs governed requests. It is safe for concurrent use.
type Executor struct {
	store  Store
	opts   Options
	client *http.Client
	mu     sync.Mutex // makes the state key once, and takes a sign-in flow once
}

// New returns an executor over store.
func New(store Store, opts Options) *Executor {
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		opts.Dial = d.DialContext
	}
	if opts.Timeout <= 0 {
		opts.Timeout = Timeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	guard := &ssrf.Dialer{Resolver: opts.Resolver, Dial: opts.Dial}
	transport := &http.Transport{
		Proxy:               nil, // never a proxy from the environment: the guard must see the real peer
		DialContext:         guard.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Executor{store: store, opts: opts, client: &http.Client{
		Transport: transport,
		// Gate 9: a redirect is answered, never followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Request is what an app asked for: a net-request frame's fields.
type Request struct {
	URL     string
	Method  string
	Headers map[string]string
	Body    *string // nil: none
}

// Response is a delivered answer: any status, non-2xx included.
type Response struct {
	Status  int
	Headers map[string]string // whitelisted, scrubbed, lower-case names
	Body    string            // scrubbed
}

// Error is a refusal or failure, with its NET_* code. Its message names no
// credential, no credentialed URL and, on the snug-connection:// path, no
// resolved host.
type Error struct {
	Code      string
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func fail(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Confirm is what the user is asked before a mutating request: the app,
// and the host, method and URL the request goes to (on the
// snug-connection:// path, the resolved ones, with the slot), and the
// body. It is shown by the host, never to the app.
type Confirm struct {
	AppID  string
	Host   string
	Method string
	URL    string
	Body   *string
	Slot   string // only on the snug-connection:// path
}

// ConfirmFunc asks the user and reports their yes. A nil ConfirmFunc is a
// no.
type ConfirmFunc func(ctx context.Context, c Confirm) bool
