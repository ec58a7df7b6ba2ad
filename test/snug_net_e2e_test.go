package test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/dsh-browser/broker/browser/runtime"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/fetch"
	"github.com/dsh-browser/broker/snug/hub"
	"github.com/dsh-browser/broker/snug/ssrf/ssrftest"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

const tasksKey = "sk-live-E2E-4eC39HqLyjWDarjtT1zdp7dc"

// taskService is the pretend provider behind api.tasks.example: it keeps
// tasks for whoever presents the key, and records every request.
type taskService struct {
	mu    sync.Mutex
	tasks []string
	seen  []string // "METHOD path key"
}

func (s *taskService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Api-Key"))
	if r.Header.Get("X-Api-Key") != tasksKey {
		w.WriteHeader(401)
		return
	}
	switch r.URL.Path {
	case "/v1/tasks":
		if r.Method == "POST" {
			var t struct{ Title string }
			json.Unmarshal(body, &t)
			s.tasks = append(s.tasks, t.Title)
		}
		list := []map[string]string{}
		for _, t := range s.tasks {
			list = append(list, map[string]string{"title": t})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"`+tasksKey+`"`)
		json.NewEncoder(w).Encode(map[string]any{"tasks": list})
	case "/v1/redirect":
		http.Redirect(w, r, "https://api.tasks.example/v1/tasks", 302)
	case "/v1/big":
		w.Write([]byte(strings.Repeat("a", 1<<20+1)))
	default:
		w.WriteHeader(404)
	}
}

func (s *taskService) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// calService is an OAuth provider of the authorization-code kind: its
// token endpoint takes a code "the-code.<S256 challenge>" with the
// verifier of that challenge, and its API wants the token it issued.
type calService struct {
	tokens atomic.Int64
}

func (c *calService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Host == "auth.tasks.example" {
		r.ParseForm()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if r.URL.Path != "/token" || r.PostForm.Get("code") != "the-code."+base64.RawURLEncoding.EncodeToString(sum[:]) ||
			r.PostForm.Get("client_id") != "cal-client-id" {
			w.WriteHeader(400)
			return
		}
		c.tokens.Add(1)
		fmt.Fprint(w, `{"access_token":"cal-access-token-1","expires_in":3600}`)
		return
	}
	fmt.Fprintf(w, `{"signedIn":%t}`, r.Header.Get("Authorization") == "Bearer cal-access-token-1")
}

// tcpSink counts the TCP connections made to it.
type tcpSink struct {
	addr  string
	conns atomic.Int64
}

func newTCPSink(t *testing.T) *tcpSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &tcpSink{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			c.Close()
		}
	}()
	return s
}

// sinkPort is the port every private address is routed to in the pretend
// Internet: were the guard to let one through, the tcpSink would count it.
const sinkPort = "8443"

// netStack starts the whole product, its broker run in the test's process
// so that the apps' network is a pretend Internet reached through an
// injected resolver and dialer (every gate is the shipped one):
// api.tasks.example (the task service), cal.tasks.example and
// auth.tasks.example (an OAuth provider), files.tasks.example (answering
// 127.0.0.1), down.tasks.example (no route), and the loopback, private and
// metadata addresses on sinkPort, routed to a tcpSink.
func netStack(t *testing.T, svc, oauth http.Handler, trap *tcpSink) *stack.Stack {
	t.Helper()
	ca, err := ssrftest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ssrftest.Serve(ca, []string{"api.tasks.example"}, svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cal, err := ssrftest.Serve(ca, []string{"cal.tasks.example", "auth.tasks.example"}, oauth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cal.Close() })
	n := ssrftest.NewNet()
	n.Route("93.184.216.34:443", srv.Addr)
	n.Route("93.184.216.35:443", cal.Addr)
	for _, a := range []string{"127.0.0.1", "0.0.0.0", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "[::1]",
		"[::ffff:127.0.0.1]", "[fe80::1]", "[fc00::1]", "[64:ff9b::7f00:1]"} {
		n.Route(a+":"+sinkPort, trap.addr)
	}
	for name, addr := range map[string]string{"api.tasks.example": "93.184.216.34", "cal.tasks.example": "93.184.216.35",
		"auth.tasks.example": "93.184.216.35", "files.tasks.example": "127.0.0.1",
		"down.tasks.example": "93.184.216.99", "localhost": "127.0.0.1", "rebind.tasks.example": "127.0.0.1"} {
		n.Answer(name, addr)
	}
	return stack.StartInProcess(t, func(stateDir string) []service.Register {
		snug := hub.Register(hub.Config{StateDir: stateDir, Requirements: conn.CheckImported, Net: fetch.Options{Resolver: n, Dial: n.Dial, RootCAs: ca.Pool}})
		return []service.Register{
			runtime.Register(runtime.Config{}),
			func(h service.Host) (service.Service, error) {
				svc, err := snug(h)
				if hb, ok := svc.(*hub.Hub); ok {
					t.Cleanup(func() { hb.Close() }) // after the broker stops (cleanups run last first)
				}
				return svc, err
			},
		}
	})
}

// waitHost is waitEval in the runner page, saying on failure what its
// dialog shows.
func waitHost(t *testing.T, s *stack.Stack, a *stack.AppTab, expr, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !chromium.Eval[bool](t, s.Browser, a.Runner, expr) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s never held; clicks %s; the dialog (hidden %v) shows:\n%s", what, expr,
				chromium.Eval[string](t, s.Browser, a.Runner, `JSON.stringify(window.clicks ?? null)`),
				chromium.Eval[bool](t, s.Browser, a.Runner, `document.getElementById('dialog').hidden`),
				chromium.Eval[string](t, s.Browser, a.Runner, `document.getElementById('dialog-box').innerText`))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// typeInto types text into an input of the runner page, key by key, as the
// user does.
func typeInto(t *testing.T, s *stack.Stack, id target.ID, selector, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.Browser.TargetCtx(t, id), 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(selector), text)); err != nil {
		t.Fatalf("type into %s: %v", selector, err)
	}
}

// clickArmed waits for a host button to arm, then clicks it.
func clickArmed(t *testing.T, s *stack.Stack, a *stack.AppTab, btn string) {
	t.Helper()
	waitHost(t, s, a, `(() => { const b = document.getElementById('`+btn+`'); return !!b && !b.disabled && !document.getElementById('dialog').hidden })()`, "button "+btn)
	clickHost(t, s, a, btn)
}

// clickHost clicks the runner page's element id with real mouse events at
// its centre, as the user does, and waits until the page saw that click (a
// trusted click on it, window.clicks). A click the page never saw is made
// again, at most twice more: under load, a click dispatched as the dialog
// is redrawn can land before the layout settles. What the click then does
// is the test's to check.
func clickHost(t *testing.T, s *stack.Stack, a *stack.AppTab, id string) {
	t.Helper()
	ctx := s.Browser.TargetCtx(t, a.Runner)
	for try := range 3 {
		seen := chromium.Eval[int](t, s.Browser, a.Runner, `clicks.length`)
		pt := chromium.Eval[[]float64](t, s.Browser, a.Runner, `(() => { const e = document.getElementById('`+id+`');
			e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(cctx, chromedp.MouseClickXY(pt[0], pt[1]))
		cancel()
		if err != nil {
			t.Fatalf("click #%s: %v", id, err)
		}
		for range 60 {
			if chromium.Eval[bool](t, s.Browser, a.Runner, `clicks.slice(`+fmt.Sprint(seen)+`).some(([id, trusted]) => id === '`+id+`' && trusted)`) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("try %d: the page saw no click on #%s (clicks %s)", try+1, id, chromium.Eval[string](t, s.Browser, a.Runner, `JSON.stringify(clicks)`))
	}
	t.Fatalf("the page never saw a click on #%s", id)
}

type tasksState struct {
	Tasks []struct{ Title string } `json:"tasks"`
	Last  json.RawMessage          `json:"last"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Capabilities map[string]bool `json:"capabilities"`
	Opened       *struct {
		Status string `json:"status"`
	} `json:"opened"`
}

func tasksOf(t *testing.T, s *stack.Stack, a *stack.AppTab) (tasksState, string) {
	t.Helper()
	raw := chromium.Eval[string](t, s.Browser, a.Frame, `JSON.stringify(window.tasks.state)`)
	var st tasksState
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		t.Fatalf("tasks state %s: %v", raw, err)
	}
	return st, raw
}

// netFrom sends a net-request from the app and returns the answer frame.
func netFrom(t *testing.T, s *stack.Stack, a *stack.AppTab, method, url, body string, headers map[string]string) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	if body == "" {
		b = []byte("undefined")
	}
	h, _ := json.Marshal(headers)
	if headers == nil {
		h = []byte("undefined")
	}
	raw := chromium.Eval[string](t, s.Browser, a.Frame, fmt.Sprintf(`tasks.net(%q, %q, %s, %s).then((r) => JSON.stringify(r))`, method, url, b, h))
	var f map[string]any
	json.Unmarshal([]byte(raw), &f)
	return f
}

func codeOf(f map[string]any) string {
	e, _ := f["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestSnugConnectedApp is the "done when" in real Chromium: the
// sample app fetches through a connection the user approved in the
// tab's connect flow, with a key the app never sees; a POST is clicked
// through the host's own dialog; each refusal reaches the app as its
// NET_* frame; open-url opens only on the user's click.
func TestSnugConnectedApp(t *testing.T) {
	svc := &taskService{tasks: []string{"water the plants"}}
	trap := newTCPSink(t)
	cal := &calService{}
	s := netStack(t, svc, cal, trap)
	out, errOut, code := app(t, s.B, "", "install", "--sample", "tasks")
	m := regexp.MustCompile(`as ([0-9a-f-]{36})`).FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "proposes a connection to Tasks API (api.tasks.example)") {
		t.Fatalf("install --sample tasks (exit %d): %s%s", code, out, errOut)
	}
	id := m[1]
	a := s.OpenApp(t, id, "document.body.dataset.ready")
	st, _ := tasksOf(t, s, a)
	if !st.Capabilities["net"] || !st.Capabilities["openUrl"] || st.Error == nil || st.Error.Code != "NET_NOT_APPROVED" || len(svc.requests()) != 0 {
		t.Fatalf("before connecting: %+v, provider saw %v", st, svc.requests())
	}

	// The connect flow, in the tab's host chrome. (The clicks the page
	// sees are kept, for a failure to show.)
	chromium.Eval[any](t, s.Browser, a.Runner, `void (window.clicks = [], document.addEventListener('click',
		(e) => clicks.push([e.target.id || e.target.tagName, e.isTrusted, Math.round(performance.now())]), true))`)
	clickHost(t, s, a, "connections-button")
	waitHost(t, s, a, `!!document.getElementById('connect-tasks')`, "the connections list")
	clickHost(t, s, a, "connect-tasks")
	waitHost(t, s, a, `!!document.getElementById('field-api_key')`, "the review")
	review := chromium.Eval[string](t, s.Browser, a.Runner, `document.getElementById('dialog-box').innerText`)
	for _, want := range []string{"Proposed by you", "Tasks API", "https://app.tasks.example/settings/api", "Open Settings, then API.",
		"header X-Api-Key: {{api_key}}", "Hosts (1)", "api.tasks.example", "Approving freezes this list of hosts", "From your account's API page."} {
		if !strings.Contains(review, want) {
			t.Errorf("the review lacks %q:\n%s", want, review)
		}
	}
	if typ := chromium.Eval[string](t, s.Browser, a.Runner, `document.getElementById('field-api_key').type`); typ != "password" {
		t.Errorf("the key field is %s", typ)
	}
	typeInto(t, s, a.Runner, "#field-api_key", tasksKey)
	clickArmed(t, s, a, "approve")
	// The approval rings the app's doorbell; it reads again, with the key
	// the host injects.
	waitEval(t, s, a.Frame, `tasks.state.tasks.length === 1 && tasks.state.error === null`, "the tasks after connecting")
	if got := svc.requests(); len(got) != 1 || got[0] != "GET /v1/tasks "+tasksKey {
		t.Fatalf("the provider saw %v", got)
	}
	if _, raw := tasksOf(t, s, a); strings.Contains(raw, tasksKey) || !strings.Contains(raw, `"etag":"\"***\""`) {
		t.Fatalf("the app's view: %s", raw)
	}

	// A POST: the host's own dialog, clicked through.
	chromium.Eval[any](t, s.Browser, a.Frame, `void tasks.add('buy milk')`)
	waitHost(t, s, a, `!!document.getElementById('confirm-allow')`, "the confirm dialog")
	ask := chromium.Eval[string](t, s.Browser, a.Runner, `document.getElementById('dialog-box').innerText`)
	for _, want := range []string{"Allow this POST request?", "api.tasks.example", "https://api.tasks.example/v1/tasks", `{"title":"buy milk"}`, "Connection", "tasks"} {
		if !strings.Contains(ask, want) {
			t.Errorf("the confirm lacks %q:\n%s", want, ask)
		}
	}
	if n := len(svc.requests()); n != 1 {
		t.Fatalf("%d requests before the user answered", n)
	}
	clickArmed(t, s, a, "confirm-allow")
	waitEval(t, s, a.Frame, `tasks.state.tasks.length === 2`, "the task added")
	// Denied: nothing sent.
	chromium.Eval[any](t, s.Browser, a.Frame, `void tasks.add('eggs')`)
	clickArmed(t, s, a, "confirm-deny")
	waitEval(t, s, a.Frame, `!!(tasks.state.error && tasks.state.error.code === 'NET_CONFIRM_DENIED')`, "the denial")
	for _, r := range svc.requests() {
		if strings.Contains(r, "eggs") {
			t.Fatal("a denied POST was sent")
		}
	}
	before := len(svc.requests())

	// Each refusal reaches the app as its NET_* frame.
	for _, c := range []struct {
		method, url, body string
		headers           map[string]string
		code              string
		fetched           int
	}{
		{"GET", "http://api.tasks.example/v1/tasks", "", nil, "NET_SCHEME_BLOCKED", 0},
		{"GET", "https://evil.example/", "", nil, "NET_NOT_APPROVED", 0},
		{"GET", "https://api.tasks.example.evil.example/", "", nil, "NET_NOT_APPROVED", 0},
		{"GET", "snug-connection://TASKS/v1", "", nil, "NET_INVALID_REQUEST", 0},
		{"GET", "snug-connection://nope/v1", "", nil, "NET_INVALID_REQUEST", 0},
		{"POST", "https://api.tasks.example/v1/tasks", strings.Repeat("é", 131073), nil, "NET_SIZE_EXCEEDED", 0}, // 262,146 bytes of UTF-8
		{"GET", "https://api.tasks.example/v1/redirect", "", nil, "NET_REDIRECT_BLOCKED", 1},
		{"GET", "https://api.tasks.example/v1/big", "", nil, "NET_SIZE_EXCEEDED", 1},
		{"GET", "https://api.tasks.example/v1/tasks", "", map[string]string{"Authorization": "Bearer forged"}, "MALFORMED", 0},
	} {
		n := len(svc.requests())
		f := netFrom(t, s, a, c.method, c.url, c.body, c.headers)
		if codeOf(f) != c.code || len(svc.requests()) != n+c.fetched {
			t.Errorf("%s %s: %v (%d fetches)", c.method, c.url, f, len(svc.requests())-n)
		}
	}
	if got := len(svc.requests()) - before; got != 2 {
		t.Errorf("%d fetches for the refusals", got)
	}

	// A hostile app sends every spelling of a private host, GET and HEAD,
	// to the port the pretend Internet routes to a tcpSink: every one is
	// refused, none asks the user, and the tcpSink sees no connection.
	corpus, _ := json.Marshal(ssrftest.Corpus)
	raw := chromium.Eval[string](t, s.Browser, a.Frame, `(async () => {
		const out = [];
		for (const h of `+string(corpus)+`) {
			const host = h.includes(':') && !h.startsWith('[') ? '[' + h + ']' : h;
			for (const m of ['GET', 'HEAD']) {
				const r = await tasks.net(m, 'https://' + host + ':`+sinkPort+`/x');
				out.push([m + ' ' + h, r.ok ? 'FETCHED' : r.error.code]);
			}
		}
		return JSON.stringify(out);
	})()`)
	var answers [][2]string
	json.Unmarshal([]byte(raw), &answers)
	if len(answers) != 2*len(ssrftest.Corpus) {
		t.Fatalf("%d answers for %d hosts", len(answers), len(ssrftest.Corpus))
	}
	for _, ans := range answers {
		switch ans[1] {
		case "NET_SSRF_BLOCKED", "NET_NOT_APPROVED", "NET_INVALID_REQUEST", "MALFORMED":
		default:
			t.Errorf("BYPASS? %s: %s", ans[0], ans[1])
		}
	}
	if n := trap.conns.Load(); n != 0 {
		t.Fatalf("the tcpSink saw %d connections", n)
	}
	if chromium.Eval[bool](t, s.Browser, a.Runner, `!document.getElementById('dialog').hidden`) {
		t.Fatal("a refused request reached the user's confirm")
	}

	// A second connection, approved the same way, to a name that answers
	// 127.0.0.1 and another with no route: refused at dial time, and a
	// transport failure.
	files := filepath.Join(t.TempDir(), "files.json")
	os.WriteFile(files, []byte(`{"slot":"files","provider":{"name":"Files"},"kind":"bearer_token",
		"fields":[{"key":"token","label":"Token","type":"secret"}],"declaredApiHosts":["files.tasks.example","down.tasks.example"]}`), 0o600)
	mustApp(t, s.B, "connections", id, "--declare", files)
	clickHost(t, s, a, "connections-button")
	waitHost(t, s, a, `!!document.getElementById('connect-files')`, "the files connection")
	clickHost(t, s, a, "connect-files")
	waitHost(t, s, a, `!!document.getElementById('field-token')`, "the files review")
	typeInto(t, s, a.Runner, "#field-token", "files-token-1234")
	clickArmed(t, s, a, "approve")
	waitHost(t, s, a, `!!document.getElementById('revoke-files')`, "files connected")
	if f := netFrom(t, s, a, "GET", "https://files.tasks.example/x", "", nil); codeOf(f) != "NET_SSRF_BLOCKED" {
		t.Errorf("a ceiling name answering 127.0.0.1: %v", f)
	}
	if f := netFrom(t, s, a, "GET", "https://down.tasks.example/x", "", nil); codeOf(f) != "NET_FETCH_FAILED" {
		t.Errorf("no route: %v", f)
	}

	// An OAuth connection signs in from the tab after its approval. The
	// provider's window is the one part played here: chrome.identity's
	// launchWebAuthFlow is replaced in the runner page by the provider's
	// answer (the browser cannot reach a provider); the authorize URL
	// and the redirect address are the page's own.
	calReq := filepath.Join(t.TempDir(), "cal.json")
	os.WriteFile(calReq, []byte(`{"slot":"cal","provider":{"name":"Cal"},"kind":"oauth2_auth_code",
		"fields":[{"key":"client_id","label":"Client ID","type":"text"}],
		"endpoints":{"authorizeUrl":"https://auth.tasks.example/authorize","tokenUrl":"https://auth.tasks.example/token"},
		"scopes":["events.read"],"declaredApiHosts":["cal.tasks.example"]}`), 0o600)
	mustApp(t, s.B, "connections", id, "--declare", calReq)
	// The provider keeps the PKCE challenge in the code it issues, as a
	// stateless provider would.
	chromium.Eval[any](t, s.Browser, a.Runner, `void (chrome.identity.launchWebAuthFlow = async ({ url, interactive }) => {
		window.authorizeURL = url;
		const u = new URL(url), p = u.searchParams;
		if (!interactive) throw new Error('not interactive');
		return p.get('redirect_uri') + '?code=the-code.' + p.get('code_challenge') + '&state=' + encodeURIComponent(p.get('state'));
	})`)
	clickHost(t, s, a, "connections-button")
	waitHost(t, s, a, `!!document.getElementById('connect-cal')`, "the cal connection")
	clickHost(t, s, a, "connect-cal")
	waitHost(t, s, a, `!!document.getElementById('field-client_id')`, "the cal review")
	typeInto(t, s, a.Runner, "#field-client_id", "cal-client-id")
	clickArmed(t, s, a, "approve")
	waitHost(t, s, a, `document.getElementById('dialog-box').innerText.includes('Cal: signed in.')`, "signed in")
	authorize, _ := url.Parse(chromium.Eval[string](t, s.Browser, a.Runner, `window.authorizeURL`))
	redirect := chromium.Eval[string](t, s.Browser, a.Runner, `chrome.identity.getRedirectURL()`)
	if q := authorize.Query(); authorize.Host != "auth.tasks.example" || authorize.Path != "/authorize" || q.Get("code_challenge_method") != "S256" ||
		q.Get("client_id") != "cal-client-id" || q.Get("scope") != "events.read" || q.Get("redirect_uri") != redirect || cal.tokens.Load() != 1 {
		t.Fatalf("authorize URL %s (redirect %s), %d tokens", authorize, redirect, cal.tokens.Load())
	}
	if f := netFrom(t, s, a, "GET", "https://cal.tasks.example/events", "", nil); f["body"] != `{"signedIn":true}` {
		t.Fatalf("the app's request after signing in: %v", f)
	}

	// A credential removed: NET_AUTH_FAILED, nothing sent.
	if out, errOut, code := app(t, s.B, "\n", "connections", id, "--credential", "files.token"); code != 0 {
		t.Fatalf("remove the token (exit %d): %s%s", code, out, errOut)
	}
	if f := netFrom(t, s, a, "GET", "https://down.tasks.example/x", "", nil); codeOf(f) != "NET_AUTH_FAILED" {
		t.Errorf("no credential: %v", f)
	}

	// Revoked in the tab: refused, and the app is told.
	clickArmed(t, s, a, "revoke-tasks")
	waitEval(t, s, a.Frame, `!!(tasks.state.error && tasks.state.error.code === 'NET_NOT_APPROVED')`, "refused after the revocation")

	// open-url: the full URL in the host's dialog; opened on the click.
	chromium.Eval[any](t, s.Browser, a.Frame, `void tasks.open('https://docs.tasks.example/help?topic=keys')`)
	clickArmed(t, s, a, "open-cancel")
	waitEval(t, s, a.Frame, `!!(tasks.state.opened && tasks.state.opened.status === 'declined')`, "declined")
	chromium.Eval[any](t, s.Browser, a.Frame, `void tasks.open('https://docs.tasks.example/help?topic=keys')`)
	waitHost(t, s, a, `document.getElementById('dialog-box').innerText.includes('https://docs.tasks.example/help?topic=keys')`, "the full URL")
	clickArmed(t, s, a, "open-confirm")
	waitEval(t, s, a.Frame, `!!(tasks.state.opened && tasks.state.opened.status === 'opened')`, "opened")
	s.Browser.WaitTarget(t, func(i *target.Info) bool {
		return i.Type == "page" && strings.HasPrefix(i.URL, "https://docs.tasks.example/help")
	}, 20*time.Second)

	if log := s.B.Stderr.String(); strings.Contains(log, tasksKey) || strings.Contains(log, "files-token-1234") || strings.Contains(log, "cal-access-token-1") {
		t.Fatal("a credential is in the broker's log")
	}
}
