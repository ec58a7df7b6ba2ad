package fetch_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/fetch"
	"github.com/dsh-browser/broker/snug/ssrf/ssrftest"
	"github.com/dsh-browser/broker/snug/userdb"
)

var ctx = context.Background()

// counting is the real user database with its secret reads counted: the
// spec's "zero secret reads" is asserted on this.
type counting struct {
	*userdb.DB
	reads atomic.Int64
}

func (c *counting) Secret(ctx context.Context, key string) (string, bool, error) {
	c.reads.Add(1)
	return c.DB.Secret(ctx, key)
}

// seen is one request a test server received.
type seen struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   string
}

// server is a pretend provider: a TLS server on loopback that the
// executor reaches through the pretend Internet under a public name.
type server struct {
	*ssrftest.Server
	mu      sync.Mutex
	got     []seen
	handler http.HandlerFunc
}

func (s *server) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

// world is one test's database, app, pretend Internet, providers and
// executor.
type world struct {
	t     testing.TB
	db    *counting
	path  string
	app   string
	net   *ssrftest.Net
	ca    *ssrftest.CA
	ex    *fetch.Executor
	hosts map[string]*server // by name
	asked []fetch.Confirm
	yes   bool
	mu    sync.Mutex
	now   time.Time
}

// publicIP hands each provider name a public-looking address of its own.
var publicIP atomic.Int64

func newWorld(t testing.TB, opts ...func(*fetch.Options)) *world {
	t.Helper()
	path := filepath.Join(t.TempDir(), userdb.FileName)
	db, err := userdb.Open(path, userdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	app, err := db.Install(ctx, userdb.AppMeta{DisplayName: "Todo"}, "<html>todo</html>")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ssrftest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, db: &counting{DB: db}, path: path, app: app.ID, net: ssrftest.NewNet(), ca: ca,
		hosts: map[string]*server{}, yes: true, now: time.Unix(1_800_000_000, 0)}
	o := fetch.Options{Resolver: w.net, Dial: w.net.Dial, RootCAs: ca.Pool, Now: w.clock}
	for _, f := range opts {
		f(&o)
	}
	w.ex = fetch.New(w.db, o)
	return w
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

// provider starts a server for names (resolving to a fresh public address,
// port 443 routed to it); h answers (nil: an echo of the request as JSON).
func (w *world) provider(h http.HandlerFunc, names ...string) *server {
	w.t.Helper()
	s := &server{handler: h}
	srv, err := ssrftest.Serve(w.ca, names, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(body)})
		hd := s.handler
		s.mu.Unlock()
		if hd == nil {
			json.NewEncoder(rw).Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body)})
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		hd(rw, r)
	}))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { srv.Close() })
	s.Server = srv
	ip := fmt.Sprintf("93.184.216.%d", publicIP.Add(1)%250+1)
	for _, n := range names {
		w.net.Answer(n, ip)
		w.hosts[n] = s
	}
	w.net.Route(ip+":443", srv.Addr)
	return s
}

// declare puts a requirement (JSON text) as a declared row.
func (w *world) declare(text string) userdb.Connection {
	w.t.Helper()
	c, err := w.db.PutDeclaredConnection(ctx, w.app, text, conn.ProvenanceUser, nil)
	if err != nil {
		w.t.Fatalf("declare: %v", err)
	}
	return c
}

// connect declares and approves a requirement with creds.
func (w *world) connect(text string, creds userdb.Credentials) userdb.Connection {
	w.t.Helper()
	c := w.declare(text)
	a, err := w.db.ApproveConnection(ctx, w.app, c.Slot, c.RequirementJSON, creds)
	if err != nil {
		w.t.Fatalf("approve: %v", err)
	}
	return a
}

// plant writes an approved row directly, bypassing the requirement's
// rules: a state only a hostile or foreign file could hold, to show the
// executor's own gates refuse it.
func (w *world) plant(slot, requirement string, hosts []string, imported bool) {
	w.t.Helper()
	r, err := sql.Open("sqlite", "file:"+w.path)
	if err != nil {
		w.t.Fatal(err)
	}
	defer r.Close()
	hostsJSON, _ := json.Marshal(hosts)
	imp := 0
	if imported {
		imp = 1
	}
	if _, err := r.Exec(`INSERT INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance, status,
		imported, allowed_hosts, approved_at, created_at, updated_at) VALUES (?, ?, ?, 1, 'user', 'approved', ?, ?, 'x', 'x', 'x')`,
		w.app, slot, requirement, imp, string(hostsJSON)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) confirm(_ context.Context, c fetch.Confirm) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = append(w.asked, c)
	return w.yes
}

// do runs a request of the world's app.
func (w *world) do(method, url string, headers map[string]string, body *string) (*fetch.Response, *fetch.Error) {
	return w.ex.Do(ctx, w.app, fetch.Request{URL: url, Method: method, Headers: headers, Body: body}, w.confirm)
}

// fetches counts the requests every provider served.
func (w *world) fetches() int {
	n := 0
	seenServer := map[*server]bool{}
	for _, s := range w.hosts {
		if !seenServer[s] {
			seenServer[s] = true
			n += int(s.Requests())
		}
	}
	return n
}

// refused asserts a refusal with code, and that it cost no fetch, no dial
// and no secret read.
func (w *world) refused(what, code string, resp *fetch.Response, ferr *fetch.Error) {
	w.t.Helper()
	w.refusedAfter(what, code, resp, ferr, 0, 0)
}

// refusedAfter asserts a refusal with code after exactly fetches fetches
// and at most reads secret reads in all, and no dial beyond the fetches.
func (w *world) refusedAfter(what, code string, resp *fetch.Response, ferr *fetch.Error, fetches int, reads int64) {
	w.t.Helper()
	if ferr == nil || ferr.Code != code {
		w.t.Errorf("%s: %+v %+v, want %s", what, resp, ferr, code)
		return
	}
	if n := w.fetches(); n != fetches {
		w.t.Errorf("%s: %d fetches, want %d", what, n, fetches)
	}
	if n := w.db.reads.Load(); n > reads {
		w.t.Errorf("%s: %d secret reads, want %d at most", what, n, reads)
	}
	if fetches == 0 && len(w.net.Dials()) != 0 {
		w.t.Errorf("%s: dialled %v", what, w.net.Dials())
	}
}

func str(s string) *string { return &s }

// apiKey is an api_key requirement for slot on hosts (the first is its
// API host), injecting X-Api-Key.
func apiKey(slot string, hosts ...string) string {
	return fmt.Sprintf(`{"slot":%q,"provider":{"name":"%s API"},"kind":"api_key",
		"fields":[{"key":"api_key","label":"API key","type":"secret"}],
		"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"declaredApiHosts":["%s"]}`, slot, slot, strings.Join(hosts, `","`))
}
