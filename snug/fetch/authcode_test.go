package fetch_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/fetch"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/userdb"
)

const authCode = `{"slot":"cal","provider":{"name":"Cal"},"kind":"oauth2_auth_code",
	"fields":[{"key":"client_id","label":"Client ID","type":"text"},{"key":"client_secret","label":"Client secret","type":"secret","required":false}],
	"endpoints":{"authorizeUrl":"https://auth.cal.example/authorize?prompt=consent","tokenUrl":"https://auth.cal.example/token"},
	"scopes":["cal.read"],"authorizeParams":{"access_type":"offline"},"declaredApiHosts":["api.cal.example"]}`

const redirectURI = "https://abcdefghijklmnopabcdefghijklmnop.chromiumapp.org/"

// calProvider is an OAuth provider of the authorization-code kind: it
// hands out a code for an authorize request (the browser's part, played by
// the test), exchanges it once for tokens when the PKCE verifier matches
// the challenge, and serves an API that wants the access token.
type calProvider struct {
	mu         sync.Mutex
	challenge  string // of the last authorize request
	codes      map[string]bool
	tokenPOST  []url.Values
	revokePOST []url.Values
	revokeCode int // the revoke endpoint's status (0: 200)
}

func (p *calProvider) handle(rw http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Host == "auth.cal.example" && r.URL.Path == "/revoke" {
		r.ParseForm()
		p.revokePOST = append(p.revokePOST, r.PostForm)
		if p.revokeCode != 0 {
			rw.WriteHeader(p.revokeCode)
			fmt.Fprintf(rw, `{"error":"invalid_request","error_description":"cannot revoke %s"}`, r.PostForm.Get("token"))
		}
		return
	}
	if r.Host == "auth.cal.example" {
		r.ParseForm()
		p.tokenPOST = append(p.tokenPOST, r.PostForm)
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !p.codes[r.PostForm.Get("code")] || base64.RawURLEncoding.EncodeToString(sum[:]) != p.challenge ||
			r.PostForm.Get("redirect_uri") != redirectURI || r.PostForm.Get("client_secret") != "cal-client-secret" {
			rw.WriteHeader(400)
			fmt.Fprintf(rw, `{"error":"invalid_grant","error_description":"bad code %s for secret %s"}`, r.PostForm.Get("code"), r.PostForm.Get("client_secret"))
			return
		}
		delete(p.codes, r.PostForm.Get("code"))
		json.NewEncoder(rw).Encode(map[string]any{"access_token": "cal-access-1", "refresh_token": "cal-refresh-1", "expires_in": 3600})
		return
	}
	if r.Header.Get("Authorization") != "Bearer cal-access-1" {
		rw.WriteHeader(401)
		return
	}
	rw.Write([]byte(`{"events":[]}`))
}

// browse plays the user's browser at the authorize URL: the provider
// remembers the challenge and sends the browser back with a code.
func (p *calProvider) browse(t *testing.T, authorize string) string {
	t.Helper()
	u, err := url.Parse(authorize)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.challenge = q.Get("code_challenge")
	code := fmt.Sprintf("code-%d", len(p.codes)+len(p.tokenPOST))
	if p.codes == nil {
		p.codes = map[string]bool{}
	}
	p.codes[code] = true
	return redirectURI + "?" + url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
}

func (p *calProvider) posts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tokenPOST)
}

func calWorld(t *testing.T) (*world, *calProvider) {
	w := newWorld(t)
	p := &calProvider{}
	w.provider(p.handle, "api.cal.example", "auth.cal.example")
	w.connect(authCode, userdb.Credentials{"client_id": "cal-client", "client_secret": "cal-client-secret"})
	return w, p
}

// The authorization-code sign-in: PKCE S256, a signed state used once,
// the code exchanged at the token endpoint, then requests carry the token.
func TestAuthorizationCode(t *testing.T) {
	w, p := calWorld(t)
	if _, ferr := w.do("GET", "https://api.cal.example/events", nil, nil); ferr == nil || ferr.Code != frame.CodeNetAuthFailed || p.posts() != 0 {
		t.Fatalf("before signing in: %+v", ferr)
	}
	authorize, ferr := w.ex.StartAuthorization(ctx, w.app, "cal", redirectURI)
	if ferr != nil {
		t.Fatal(ferr)
	}
	u, _ := url.Parse(authorize)
	q := u.Query()
	if u.Host != "auth.cal.example" || u.Path != "/authorize" || q.Get("prompt") != "consent" || q.Get("access_type") != "offline" ||
		q.Get("response_type") != "code" || q.Get("client_id") != "cal-client" || q.Get("redirect_uri") != redirectURI ||
		q.Get("scope") != "cal.read" || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 ||
		q.Get("client_secret") != "" || !strings.Contains(q.Get("state"), ".") {
		t.Fatalf("authorize URL %s", authorize)
	}
	callback := p.browse(t, authorize)
	if ferr := w.ex.CompleteAuthorization(ctx, w.app, "cal", callback); ferr != nil {
		t.Fatal(ferr)
	}
	if f := p.tokenPOST[0]; f.Get("grant_type") != "authorization_code" || len(f.Get("code_verifier")) < 43 {
		t.Fatalf("token POST %v", f)
	}
	resp, ferr := w.do("GET", "https://api.cal.example/events", nil, nil)
	if ferr != nil || resp.Status != 200 {
		t.Fatalf("after signing in: %+v %+v", resp, ferr)
	}
	// The flow was used: the same answer again is refused, with no POST.
	if ferr := w.ex.CompleteAuthorization(ctx, w.app, "cal", callback); ferr == nil || ferr.Code != frame.CodeNetAuthFailed || p.posts() != 1 {
		t.Fatalf("replayed: %+v", ferr)
	}
	if _, ok, _ := w.db.Secret(ctx, conn.StateHMACKey); !ok {
		t.Fatal("no state key")
	}
}

// A forged, foreign or late state fails before any token POST; so does a
// provider's refusal, and a code sent back to another address.
func TestAuthorizationCodeRefusals(t *testing.T) {
	w, p := calWorld(t)
	w.connect(strings.ReplaceAll(strings.ReplaceAll(authCode, `"cal"`, `"cal2"`), "api.cal.example", "api2.cal.example"),
		userdb.Credentials{"client_id": "cal-client"})
	start := func(slot string) string {
		t.Helper()
		a, ferr := w.ex.StartAuthorization(ctx, w.app, slot, redirectURI)
		if ferr != nil {
			t.Fatal(ferr)
		}
		return p.browse(t, a)
	}
	forge := func(cb, from, to string) string { return strings.Replace(cb, from, to, 1) }
	cb := start("cal")
	u, _ := url.Parse(cb)
	state := u.Query().Get("state")
	id, sig, _ := strings.Cut(state, ".")
	other := "1"
	if id[0] == '1' {
		other = "2"
	}
	for _, c := range []struct{ what, slot, callback string }{
		{"forged signature", "cal", forge(cb, url.QueryEscape(state), url.QueryEscape(id+"."+strings.Repeat("A", len(sig))))},
		{"forged id", "cal", forge(cb, url.QueryEscape(state), url.QueryEscape(other+id[1:]+"."+sig))},
		{"no state", "cal", redirectURI + "?code=x"},
		{"another slot", "cal2", cb},
		{"elsewhere", "cal", forge(start("cal"), redirectURI, "https://evil.example/")},
		{"refused", "cal", forge(start("cal"), "code=", "error=access_denied&error_description=the+user+said+no&x=")},
	} {
		ferr := w.ex.CompleteAuthorization(ctx, w.app, c.slot, c.callback)
		if ferr == nil || ferr.Code != frame.CodeNetAuthFailed {
			t.Errorf("%s: %+v", c.what, ferr)
		} else if c.what == "refused" && !strings.Contains(ferr.Message, "the user said no") {
			t.Errorf("refused: %s", ferr.Message)
		}
	}
	late := start("cal")
	w.advance(fetch.FlowTimeout + time.Second)
	if ferr := w.ex.CompleteAuthorization(ctx, w.app, "cal", late); ferr == nil || ferr.Code != frame.CodeNetAuthFailed {
		t.Errorf("late: %+v", ferr)
	}
	if n := p.posts(); n != 0 {
		t.Fatalf("%d token POSTs for refused sign-ins", n)
	}
	// A token endpoint's refusal names no secret it was sent.
	cb = start("cal")
	p.mu.Lock()
	p.codes = nil
	p.mu.Unlock()
	ferr := w.ex.CompleteAuthorization(ctx, w.app, "cal", cb)
	if ferr == nil || ferr.Code != frame.CodeNetAuthFailed || strings.Contains(ferr.Message, "cal-client-secret") || !strings.Contains(ferr.Message, "secret ***") {
		t.Fatalf("token refusal: %+v", ferr)
	}
	// Only an approved authorization-code connection signs in, to an https
	// address.
	w.declare(strings.ReplaceAll(authCode, `"cal"`, `"later"`))
	w.connect(apiKey("todo", "api.todo.example"), userdb.Credentials{"api_key": key})
	for _, c := range []struct{ slot, redirect, code string }{
		{"later", redirectURI, frame.CodeNetNotApproved},
		{"todo", redirectURI, frame.CodeNetInvalidRequest},
		{"cal", "http://abc.chromiumapp.org/", frame.CodeNetInvalidRequest},
	} {
		if _, ferr := w.ex.StartAuthorization(ctx, w.app, c.slot, c.redirect); ferr == nil || ferr.Code != c.code {
			t.Errorf("%+v: %+v", c, ferr)
		}
	}
}

// A sign-in the user never finished is deleted, verifier and all, by the
// next one started after FlowTimeout; one still in time stays.
func TestAbandonedSignInsAreSwept(t *testing.T) {
	w, _ := calWorld(t)
	flows := func() int {
		keys, err := w.db.SecretKeys(ctx, conn.FlowKeyPrefix)
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	start := func() {
		if _, ferr := w.ex.StartAuthorization(ctx, w.app, "cal", redirectURI); ferr != nil {
			t.Fatal(ferr)
		}
	}
	start()
	w.advance(fetch.FlowTimeout)
	start()
	if n := flows(); n != 2 {
		t.Fatalf("%d sign-ins in progress at FlowTimeout, want 2", n)
	}
	w.advance(time.Millisecond)
	start()
	if n := flows(); n != 2 {
		t.Fatalf("%d sign-ins in progress just past FlowTimeout of the first, want 2", n)
	}
	w.advance(fetch.FlowTimeout + time.Millisecond)
	start()
	if n := flows(); n != 1 {
		t.Fatalf("%d sign-ins in progress, want the last one", n)
	}
}
