package fetch_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/fetch"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/ssrf/ssrftest"
	"github.com/dsh-browser/broker/snug/userdb"
)

const key = "sk-live-4eC39HqLyjWDarjtT1zdp7dc"

// connected is a world with the todo connection approved and its provider
// up.
func connected(t testing.TB, opts ...func(*fetch.Options)) (*world, *server) {
	w := newWorld(t, opts...)
	s := w.provider(nil, "api.todo.example")
	w.connect(apiKey("todo", "api.todo.example"), userdb.Credentials{"api_key": key})
	w.db.reads.Store(0)
	return w, s
}

// The happy path: the key is injected, the answer delivered.
func TestGovernedGet(t *testing.T) {
	w, s := connected(t)
	resp, ferr := w.do("GET", "https://api.todo.example/v1/tasks?done=0", map[string]string{"Accept": "application/json"}, nil)
	if ferr != nil || resp.Status != 200 {
		t.Fatalf("%+v %+v", resp, ferr)
	}
	got := s.requests()
	if len(got) != 1 || got[0].Header.Get("X-Api-Key") != key || got[0].Path != "/v1/tasks" || got[0].Query != "done=0" ||
		got[0].Header.Get("Accept") != "application/json" {
		t.Fatalf("the provider saw %+v", got)
	}
	if len(w.asked) != 0 {
		t.Fatal("a GET asked for confirmation")
	}
}

// Gate 1: shape. Every refusal: its code, no fetch, no secret read.
func TestGateShape(t *testing.T) {
	w, _ := connected(t)
	for _, c := range []struct {
		what, method, url string
		body              *string
		headers           map[string]string
		code              string
	}{
		{"TRACE", "TRACE", "https://api.todo.example/", nil, nil, frame.CodeNetInvalidRequest},
		{"lower-case get", "get", "https://api.todo.example/", nil, nil, frame.CodeNetInvalidRequest},
		{"body on GET", "GET", "https://api.todo.example/", str("x"), nil, frame.CodeNetInvalidRequest},
		{"body on HEAD", "HEAD", "https://api.todo.example/", str(""), nil, frame.CodeNetInvalidRequest},
		{"empty url", "GET", "", nil, nil, frame.CodeNetInvalidRequest},
		{"url over 4096", "GET", "https://api.todo.example/" + strings.Repeat("a", 4097-25), nil, nil, frame.CodeNetInvalidRequest},
		{"unparseable", "GET", "https://api.todo.example:x/", nil, nil, frame.CodeNetInvalidRequest},
		{"relative", "GET", "/v1/tasks", nil, nil, frame.CodeNetInvalidRequest},
		{"userinfo", "GET", "https://user:pw@api.todo.example/", nil, nil, frame.CodeNetInvalidRequest},
		{"user only", "GET", "https://api.todo.example@evil.example/", nil, nil, frame.CodeNetInvalidRequest},
		{"bad host", "GET", "https://ex_ample.com/", nil, nil, frame.CodeNetInvalidRequest},
		{"bad port", "GET", "https://api.todo.example:70000/", nil, nil, frame.CodeNetInvalidRequest},
		{"header name", "GET", "https://api.todo.example/", nil, map[string]string{"": "x"}, frame.CodeNetInvalidRequest},
		{"header value CRLF", "GET", "https://api.todo.example/", nil, map[string]string{"X-A": "a\r\nX-Api-Key: b"}, frame.CodeNetInvalidRequest},
		{"header over 4096", "GET", "https://api.todo.example/", nil, map[string]string{"X-A": strings.Repeat("a", 4097)}, frame.CodeNetInvalidRequest},
		{"malformed connection url", "GET", "snug-connection://TODO/x", nil, nil, frame.CodeNetInvalidRequest},
		{"body over 256 KiB", "POST", "https://api.todo.example/", str(strings.Repeat("a", frame.MaxNetRequestBodyBytes+1)), nil, frame.CodeNetSizeExceeded},
		{"body over 256 KiB of UTF-8", "POST", "https://api.todo.example/", str(strings.Repeat("é", frame.MaxNetRequestBodyBytes/2+1)), nil, frame.CodeNetSizeExceeded},
	} {
		resp, ferr := w.do(c.method, c.url, c.headers, c.body)
		w.refused(c.what, c.code, resp, ferr)
	}
	if len(w.asked) != 0 {
		t.Fatal("a refused shape reached the confirm")
	}
	// A body of exactly 256 KiB goes.
	if _, ferr := w.do("POST", "https://api.todo.example/", nil, str(strings.Repeat("a", frame.MaxNetRequestBodyBytes))); ferr != nil {
		t.Fatalf("a body at the cap: %+v", ferr)
	}
}

// Gates 2–3: the grant. A declared-only row, another app, a revoked or an
// imported row, two claimants: each refused before any secret is read.
func TestGateGrant(t *testing.T) {
	w := newWorld(t)
	w.provider(nil, "api.todo.example", "api.other.example", "shared.example")
	// Declared only, though a credential is stored already.
	w.declare(apiKey("todo", "api.todo.example"))
	if err := w.db.SetConnectionCredential(ctx, w.app, "todo", "api_key", key); err != nil {
		t.Fatal(err)
	}
	w.db.reads.Store(0)
	resp, ferr := w.do("GET", "https://api.todo.example/", nil, nil)
	w.refused("declared only", frame.CodeNetNotApproved, resp, ferr)
	if !strings.Contains(ferr.Message, "connect todo API") {
		t.Errorf("the remedy is not named: %s", ferr.Message)
	}

	// Another app's grant is not this app's.
	w.connect(apiKey("other", "api.other.example"), userdb.Credentials{"api_key": key})
	other, _ := w.db.Install(ctx, userdb.AppMeta{DisplayName: "Other"}, "<html></html>")
	w.db.reads.Store(0)
	resp, ferr = w.ex.Do(ctx, other.ID, fetch.Request{URL: "https://api.other.example/", Method: "GET"}, w.confirm)
	w.refused("another app's grant", frame.CodeNetNotApproved, resp, ferr)

	// Revoked.
	w.db.RevokeConnection(ctx, w.app, "other")
	resp, ferr = w.do("GET", "https://api.other.example/", nil, nil)
	w.refused("revoked", frame.CodeNetNotApproved, resp, ferr)

	// Imported (a row that arrived by import: approved status or not).
	w.plant("imp", apiKey("imp", "imported.example"), []string{"imported.example"}, true)
	resp, ferr = w.do("GET", "https://imported.example/", nil, nil)
	w.refused("imported", frame.CodeNetImportedUnapproved, resp, ferr)

	// Two approved rows claim one host: no tie-break, no credential read.
	w.connect(apiKey("one", "shared.example"), userdb.Credentials{"api_key": key})
	w.connect(apiKey("two", "shared.example"), userdb.Credentials{"api_key": key})
	w.db.reads.Store(0)
	resp, ferr = w.do("GET", "https://shared.example/", nil, nil)
	w.refused("ambiguous", frame.CodeNetAmbiguousConnection, resp, ferr)
}

// Gate 4: the ceiling. https only; the host exactly, normalised on both
// sides, port ignored; no suffix tricks.
func TestGateCeiling(t *testing.T) {
	w, s := connected(t)
	for _, c := range []struct{ what, url, code string }{
		{"http", "http://api.todo.example/", frame.CodeNetSchemeBlocked},
		{"http to localhost", "http://localhost/", frame.CodeNetSchemeBlocked},
		{"ftp", "ftp://api.todo.example/", frame.CodeNetSchemeBlocked},
		{"ws", "wss://api.todo.example/", frame.CodeNetSchemeBlocked},
		{"suffix", "https://api.todo.example.evil.example/", frame.CodeNetNotApproved},
		{"prefix", "https://evilapi.todo.example/", frame.CodeNetNotApproved},
		{"parent", "https://todo.example/", frame.CodeNetNotApproved},
		{"sibling", "https://www.todo.example/", frame.CodeNetNotApproved},
		{"off ceiling", "https://evil.example/", frame.CodeNetNotApproved},
	} {
		resp, ferr := w.do("GET", c.url, nil, nil)
		w.refused(c.what, c.code, resp, ferr)
	}
	// Case, a trailing dot and a port do not change the host.
	w.net.Route(s.requests2ip(w)+":8443", s.Addr)
	for _, u := range []string{"https://API.TODO.EXAMPLE/", "https://api.todo.example./", "https://api.todo.example:8443/"} {
		if _, ferr := w.do("GET", u, nil, nil); ferr != nil {
			t.Errorf("%s: %+v", u, ferr)
		}
	}
}

// requests2ip is the public address a server's names resolve to.
func (s *server) requests2ip(w *world) string {
	for n, srv := range w.hosts {
		if srv == s {
			as, _ := w.net.LookupNetIP(ctx, "ip", n)
			return as[0].String()
		}
	}
	return ""
}

// IDNA: a ceiling declared in Unicode matches the punycode request and the
// other way round.
func TestGateCeilingPunycode(t *testing.T) {
	w := newWorld(t)
	w.provider(nil, "api.xn--mnchen-3ya.example", "api.xn--zrich-kva.example")
	w.connect(apiKey("muc", "api.münchen.example"), userdb.Credentials{"api_key": key})
	w.connect(apiKey("zrh", "api.xn--zrich-kva.example"), userdb.Credentials{"api_key": key})
	for _, u := range []string{"https://api.xn--mnchen-3ya.example/", "https://api.münchen.example/", "https://API.MÜNCHEN.example/",
		"https://api.zürich.example/", "https://api.xn--zrich-kva.example/"} {
		if resp, ferr := w.do("GET", u, nil, nil); ferr != nil || resp.Status != 200 {
			t.Errorf("%s: %+v %+v", u, resp, ferr)
		}
	}
}

// Gate 5: the SSRF guard, for ceiling members too, and at dial time on the
// resolved address.
func TestGateSSRF(t *testing.T) {
	w := newWorld(t)
	w.provider(nil, "api.todo.example")
	w.connect(apiKey("lan", "10.0.0.5", "169.254.169.254", "printer.local", "api.todo.example"), userdb.Credentials{"api_key": key})
	w.db.reads.Store(0)
	for _, u := range []string{"https://10.0.0.5/", "https://169.254.169.254/latest/meta-data/", "https://printer.local/",
		"https://0xa.0.0.5/", "https://167772165/"} {
		resp, ferr := w.do("GET", u, nil, nil) // the last three spell a ceiling member otherwise
		w.refused(u, frame.CodeNetSSRFBlocked, resp, ferr)
	}
	// A ceiling name whose DNS answer is private: refused at dial time,
	// nothing sent.
	w.net.Answer("rebind.todo.example", "127.0.0.1")
	w.connect(apiKey("dns", "rebind.todo.example", "priv.todo.example"), userdb.Credentials{"api_key": key})
	w.net.Answer("priv.todo.example", "93.184.216.200", "10.1.1.1")
	for _, u := range []string{"https://rebind.todo.example/", "https://priv.todo.example/"} {
		reads := w.db.reads.Load()
		resp, ferr := w.do("GET", u, nil, nil)
		w.refusedAfter(u, frame.CodeNetSSRFBlocked, resp, ferr, 0, reads+1)
	}
	for _, d := range w.net.Dials() {
		if !strings.HasPrefix(d, "93.184.216.") {
			t.Errorf("dialled %s", d)
		}
	}
}

// DNS rebinding: a name that answers public, then private. Every dial is
// checked on its own answer, so the second connection never happens.
func TestRebindingResolver(t *testing.T) {
	w := newWorld(t)
	s := w.provider(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Connection", "close") // every request dials anew
		rw.Write([]byte("ok"))
	}, "api.todo.example")
	w.connect(apiKey("todo", "api.todo.example"), userdb.Credentials{"api_key": key})
	w.net.Answer("api.todo.example", "127.0.0.1") // queued after the public answer
	if _, ferr := w.do("GET", "https://api.todo.example/a", nil, nil); ferr != nil {
		t.Fatalf("first answer (public): %+v", ferr)
	}
	resp, ferr := w.do("GET", "https://api.todo.example/b", nil, nil)
	if ferr == nil || ferr.Code != frame.CodeNetSSRFBlocked || s.Requests() != 1 {
		t.Fatalf("second answer (loopback): %+v %+v, %d requests", resp, ferr, s.Requests())
	}
}

// The corpus: every spelling of a blocked host, planted in a ceiling (a
// state the requirement rules never allow), is refused with no dial, no
// fetch and no secret read. Zero bypasses.
func TestSSRFCorpus(t *testing.T) {
	w := newWorld(t)
	for i, h := range ssrftest.Corpus {
		slot := fmt.Sprintf("c%d", i)
		w.plant(slot, apiKey(slot, "api.todo.example"), []string{h}, false)
		w.db.SetSecret(ctx, conn.CredentialKey(w.app, slot, "api_key"), key)
	}
	w.db.reads.Store(0)
	for _, h := range ssrftest.Corpus {
		host := h
		if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
			host = "[" + h + "]"
		}
		for _, method := range []string{"GET", "POST"} {
			var body *string
			if method == "POST" {
				body = str("{}")
			}
			resp, ferr := w.do(method, "https://"+host+"/x", nil, body)
			if ferr == nil {
				t.Errorf("BYPASS: %s %q was fetched: %+v", method, h, resp)
				continue
			}
			switch ferr.Code {
			case frame.CodeNetSSRFBlocked, frame.CodeNetInvalidRequest, frame.CodeNetNotApproved, frame.CodeNetAmbiguousConnection:
			default:
				t.Errorf("%s %q: %s", method, h, ferr.Code)
			}
		}
	}
	if len(w.asked) != 0 || len(w.net.Dials()) != 0 || w.db.reads.Load() != 0 || len(w.net.Lookups()) != 0 {
		t.Fatalf("the corpus cost %d confirms, dials %v, %d secret reads, lookups %v", len(w.asked), w.net.Dials(), w.db.reads.Load(), w.net.Lookups())
	}
}

// Gate 6: a mutating request is confirmed before any credential is read,
// naming host, method, URL (and body); a denial costs no fetch and no
// secret read; GET and HEAD never ask.
func TestGateConfirm(t *testing.T) {
	w, s := connected(t)
	w.yes = false
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		var body *string
		if m != "DELETE" {
			body = str(`{"title":"milk"}`)
		}
		resp, ferr := w.do(m, "https://api.todo.example/v1/tasks?x=1#frag", nil, body)
		w.refused(m+" denied", frame.CodeNetConfirmDenied, resp, ferr)
	}
	if len(w.asked) != 4 || w.asked[0].Body == nil || *w.asked[0].Body != `{"title":"milk"}` || w.asked[3].Body != nil {
		t.Fatalf("asked %+v", w.asked)
	}
	got := w.asked[0]
	got.Body = nil
	if want := (fetch.Confirm{AppID: w.app, Host: "api.todo.example", Method: "POST", URL: "https://api.todo.example/v1/tasks?x=1"}); got != want {
		t.Fatalf("confirm %+v, want %+v", got, want)
	}
	// No confirm seat at all is a no.
	if _, ferr := w.ex.Do(ctx, w.app, fetch.Request{URL: "https://api.todo.example/", Method: "POST", Body: str("")}, nil); ferr == nil || ferr.Code != frame.CodeNetConfirmDenied {
		t.Fatalf("nil confirm: %+v", ferr)
	}
	w.yes = true
	w.asked = nil
	if _, ferr := w.do("HEAD", "https://api.todo.example/", nil, nil); ferr != nil || len(w.asked) != 0 {
		t.Fatalf("HEAD: %+v, asked %d", ferr, len(w.asked))
	}
	if resp, ferr := w.do("POST", "https://api.todo.example/v1/tasks", nil, str(`{"title":"milk"}`)); ferr != nil || len(w.asked) != 1 {
		t.Fatalf("confirmed POST: %+v %+v", resp, ferr)
	}
	if got := s.requests(); got[len(got)-1].Body != `{"title":"milk"}` || got[len(got)-1].Method != "POST" {
		t.Fatalf("the provider saw %+v", got[len(got)-1])
	}
}

// Gate 7: credential-shaped headers the app set never leave; ordinary
// ones do; the injected value wins.
func TestGateStrip(t *testing.T) {
	w, s := connected(t)
	_, ferr := w.do("GET", "https://api.todo.example/", map[string]string{
		"Authorization": "Bearer forged", "Cookie": "a=b", "X-Api-Key": "forged", "x-goog-api-key": "forged",
		"X-Auth-Token": "forged", "X-Access-Token": "forged", "Api-Key": "forged", "Proxy-Authorization": "forged",
		"Accept": "text/plain", "X-Request-Id": "r1", "Host": "evil.example", "Content-Length": "99", "Sec-Fetch-Mode": "cors",
	}, nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	h := s.requests()[0].Header
	for _, name := range []string{"Authorization", "Cookie", "X-Goog-Api-Key", "X-Auth-Token", "X-Access-Token", "Api-Key", "Sec-Fetch-Mode"} {
		if h.Get(name) != "" {
			t.Errorf("%s crossed: %q", name, h.Get(name))
		}
	}
	if h.Get("X-Api-Key") != key || h.Get("Accept") != "text/plain" || h.Get("X-Request-Id") != "r1" {
		t.Errorf("headers %v", h)
	}
}

// Gate 8: injection per kind, and its refusals.
func TestGateInject(t *testing.T) {
	w := newWorld(t)
	s := w.provider(nil, "bearer.example", "basic.example", "none.example", "query.example", "sig.example")
	w.connect(`{"slot":"b","provider":{"name":"B"},"kind":"bearer_token","fields":[{"key":"token","label":"Token","type":"secret"}],"declaredApiHosts":["bearer.example"]}`,
		userdb.Credentials{"token": "tok-bearer-123"})
	w.connect(`{"slot":"basic","provider":{"name":"Basic"},"kind":"basic_auth","fields":[{"key":"user","label":"User","type":"text"},{"key":"pass","label":"Password","type":"password"}],"declaredApiHosts":["basic.example"]}`,
		userdb.Credentials{"user": "ann", "pass": "pw:with:colons"})
	w.connect(`{"slot":"none","provider":{"name":"Open"},"kind":"none","declaredApiHosts":["none.example"]}`, nil)
	w.connect(`{"slot":"q","provider":{"name":"Q"},"kind":"api_key","fields":[{"key":"api_key","label":"Key","type":"secret"}],
		"request":{"queryTemplate":{"key":"{{api_key}}"}},"declaredApiHosts":["query.example"]}`, userdb.Credentials{"api_key": "q+k/ey= 1"})
	w.connect(`{"slot":"sig","provider":{"name":"Sig"},"kind":"api_key","fields":[{"key":"api_key","label":"Key","type":"text"},{"key":"api_secret","label":"Secret","type":"secret"}],
		"request":{"headerTemplate":{"X-Key":"{{api_key}}","X-Ts":"{{timestamp()}}","X-Sig":"{{hmac_sha256(api_secret, request.body)}}"}},"declaredApiHosts":["sig.example"]}`,
		userdb.Credentials{"api_key": "kid", "api_secret": "hmac-secret"})
	for u, check := range map[string]func(seen) bool{
		"https://bearer.example/": func(r seen) bool { return r.Header.Get("Authorization") == "Bearer tok-bearer-123" },
		"https://basic.example/": func(r seen) bool {
			u, p, ok := (&http.Request{Header: r.Header}).BasicAuth()
			return ok && u == "ann" && p == "pw:with:colons"
		},
		"https://none.example/": func(r seen) bool { return r.Header.Get("Authorization") == "" && r.Header.Get("X-Api-Key") == "" },
		"https://query.example/?a=1": func(r seen) bool {
			return strings.Contains(r.Query, "key=q%2Bk%2Fey%3D+1") && strings.Contains(r.Query, "a=1") && r.Header.Get("X-Api-Key") == ""
		},
		"https://sig.example/": func(r seen) bool {
			m := hmac.New(sha256.New, []byte("hmac-secret"))
			return r.Header.Get("X-Key") == "kid" && r.Header.Get("X-Ts") == "1800000000" && r.Header.Get("X-Sig") == hex.EncodeToString(m.Sum(nil))
		},
	} {
		n := len(s.requests())
		if _, ferr := w.do("GET", u, nil, nil); ferr != nil {
			t.Errorf("%s: %+v", u, ferr)
			continue
		}
		if got := s.requests(); len(got) != n+1 || !check(got[n]) {
			t.Errorf("%s: the provider saw %+v", u, got[n:])
		}
	}
	// A missing required credential: NET_AUTH_FAILED, no fetch.
	w.db.SetConnectionCredential(ctx, w.app, "b", "token", "")
	n := w.fetches()
	if _, ferr := w.do("GET", "https://bearer.example/", nil, nil); ferr == nil || ferr.Code != frame.CodeNetAuthFailed || w.fetches() != n {
		t.Fatalf("missing credential: %+v", ferr)
	}
	// A template naming an undeclared field (planted: the rules refuse it
	// at declaration): NET_AUTH_FAILED, no fetch, no value in the words.
	w.plant("typo", `{"slot":"typo","provider":{"name":"T"},"kind":"api_key","fields":[{"key":"api_secret","label":"S","type":"secret"}],
		"request":{"headerTemplate":{"X-Sig":"{{hmac_sha256(api_secrt, request.body)}}"}},"declaredApiHosts":["typo.example"]}`, []string{"typo.example"}, false)
	w.db.SetSecret(ctx, conn.CredentialKey(w.app, "typo", "api_secret"), "typo-secret-value")
	resp, ferr := w.do("GET", "https://typo.example/", nil, nil)
	if ferr == nil || ferr.Code != frame.CodeNetAuthFailed || w.fetches() != n || strings.Contains(ferr.Message, "typo-secret-value") {
		t.Fatalf("typo template: %+v %+v", resp, ferr)
	}
}

// A rotated key is used on the very next request: credentials are read
// again every time.
func TestRotatedKey(t *testing.T) {
	w, s := connected(t)
	w.do("GET", "https://api.todo.example/", nil, nil)
	if err := w.db.SetConnectionCredential(ctx, w.app, "todo", "api_key", "sk-live-ROTATED-key-0001"); err != nil {
		t.Fatal(err)
	}
	w.do("GET", "https://api.todo.example/", nil, nil)
	got := s.requests()
	if got[0].Header.Get("X-Api-Key") != key || got[1].Header.Get("X-Api-Key") != "sk-live-ROTATED-key-0001" {
		t.Fatalf("keys sent: %q, %q", got[0].Header.Get("X-Api-Key"), got[1].Header.Get("X-Api-Key"))
	}
}

// A staged edit is never bound: the executor uses the approved
// requirement and its frozen hosts.
func TestStagedEditIsNotBound(t *testing.T) {
	w, _ := connected(t)
	w.provider(nil, "evil.example")
	if _, err := w.db.StagePendingRequirement(ctx, w.app, apiKey("todo", "api.todo.example", "evil.example")); err != nil {
		t.Fatal(err)
	}
	resp, ferr := w.do("GET", "https://evil.example/", nil, nil)
	w.refused("a host only the staged edit holds", frame.CodeNetNotApproved, resp, ferr)
}

// Gate 9: a redirect is answered, never followed: exactly one fetch, and
// Location is never fetched.
func TestGateRedirect(t *testing.T) {
	for _, code := range []int{301, 302, 303, 307, 308} {
		w := newWorld(t)
		s := w.provider(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/stolen" {
				rw.Write([]byte("followed"))
				return
			}
			http.Redirect(rw, r, "https://api.todo.example/stolen", code)
		}, "api.todo.example")
		w.connect(apiKey("todo", "api.todo.example"), userdb.Credentials{"api_key": key})
		resp, ferr := w.do("GET", "https://api.todo.example/start", nil, nil)
		if ferr == nil || ferr.Code != frame.CodeNetRedirectBlocked || s.Requests() != 1 {
			t.Fatalf("%d: %+v %+v, %d fetches", code, resp, ferr, s.Requests())
		}
		for _, r := range s.requests() {
			if r.Path == "/stolen" {
				t.Fatal("Location was fetched")
			}
		}
	}
}

// Gate 9: a transport failure and the timeout are NET_FETCH_FAILED,
// retryable; neither says the credential.
func TestGateFetchFailed(t *testing.T) {
	w := newWorld(t, func(o *fetch.Options) { o.Timeout = 300 * time.Millisecond })
	w.provider(func(rw http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) }, "slow.example")
	w.net.Answer("down.example", "93.184.216.251") // no route: the dial fails
	w.connect(`{"slot":"q","provider":{"name":"Q"},"kind":"api_key","fields":[{"key":"api_key","label":"Key","type":"secret"}],
		"request":{"queryTemplate":{"key":"{{api_key}}"}},"declaredApiHosts":["down.example","slow.example"]}`, userdb.Credentials{"api_key": key})
	resp, ferr := w.do("GET", "https://down.example/x", nil, nil)
	if ferr == nil || ferr.Code != frame.CodeNetFetchFailed || !ferr.Retryable || strings.Contains(ferr.Message, key) || strings.Contains(ferr.Message, "key=") {
		t.Fatalf("down: %+v %+v", resp, ferr)
	}
	resp, ferr = w.do("GET", "https://slow.example/x", nil, nil)
	if ferr == nil || ferr.Code != frame.CodeNetFetchFailed || !ferr.Retryable || !strings.Contains(ferr.Message, "did not answer within 300ms") {
		t.Fatalf("slow: %+v %+v", resp, ferr)
	}
}

// Gate 10: the 1 MiB cap while reading: cap−1 and cap delivered, cap+1
// refused with no partial body.
func TestGateBodyCap(t *testing.T) {
	w, s := connected(t)
	for _, c := range []struct {
		n  int
		ok bool
	}{{frame.MaxNetResponseBodyBytes - 1, true}, {frame.MaxNetResponseBodyBytes, true}, {frame.MaxNetResponseBodyBytes + 1, false}, {8 << 20, false}} {
		s.handler = func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "text/plain")
			rw.Write([]byte(strings.Repeat("a", c.n)))
		}
		resp, ferr := w.do("GET", "https://api.todo.example/", nil, nil)
		if c.ok && (ferr != nil || len(resp.Body) != c.n) {
			t.Errorf("%d bytes: %v", c.n, ferr)
		}
		if !c.ok && (ferr == nil || ferr.Code != frame.CodeNetSizeExceeded || resp != nil) {
			t.Errorf("%d bytes: %+v", c.n, ferr)
		}
	}
}

// Gate 10: the scrub and the whitelist. A provider reflecting the key in
// its body and headers sends back ***; non-whitelisted headers never
// cross; a 404 is delivered.
func TestGateScrubAndWhitelist(t *testing.T) {
	w, s := connected(t)
	s.handler = func(rw http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("X-Api-Key")
		h := rw.Header()
		h.Set("ETag", `W/"`+k+`"`)
		h.Set("Cache-Control", "private, key="+k)
		h.Set("X-Ratelimit-Remaining", "42; "+k)
		h.Set("Link", `<https://api.todo.example/next?key=`+strings.ReplaceAll(k, "-", "%2D")+`>; rel="next"`)
		h.Set("Set-Cookie", "session="+k)
		h.Set("Server", "leaky/1.0 "+k)
		h.Set("X-Powered-By", "php")
		h.Set("WWW-Authenticate", "Bearer realm="+k)
		h.Set("Content-Type", "application/json")
		rw.WriteHeader(404)
		json.NewEncoder(rw).Encode(map[string]string{"echo": k, "encoded": strings.ReplaceAll(k, "-", "%2D"), "b64": "c2stbGl2ZQ=="})
	}
	resp, ferr := w.do("GET", "https://api.todo.example/debug/echo", nil, nil)
	if ferr != nil || resp.Status != 404 {
		t.Fatalf("a 404 is a delivery: %+v %+v", resp, ferr)
	}
	all, _ := json.Marshal(resp)
	if strings.Contains(string(all), key) || strings.Contains(string(all), strings.ReplaceAll(key, "-", "%2D")) {
		t.Fatalf("the key crossed: %s", all)
	}
	for _, h := range []string{"etag", "cache-control", "x-ratelimit-remaining", "link", "content-type"} {
		if resp.Headers[h] == "" {
			t.Errorf("whitelisted %s missing", h)
		}
	}
	if resp.Headers["etag"] != `W/"***"` {
		t.Errorf("etag %q", resp.Headers["etag"])
	}
	for h := range resp.Headers {
		if !frame.IsWhitelistedResponseHeader(h) || h != strings.ToLower(h) {
			t.Errorf("header %s crossed", h)
		}
	}
	if !strings.Contains(resp.Body, `"echo":"***"`) || !strings.Contains(resp.Body, "c2stbGl2ZQ==") {
		t.Errorf("body %s", resp.Body)
	}
}
