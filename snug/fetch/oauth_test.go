package fetch_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/userdb"
)

// oauthProvider is an OAuth provider: a token endpoint minting numbered
// tokens, and an API accepting the current one. It logs the order of the
// calls ("token", "api").
type oauthProvider struct {
	mu      sync.Mutex
	minted  int
	current string
	calls   []string
	forms   []map[string]string
	reject  bool // the API refuses every token
	refresh string
}

func (p *oauthProvider) handle(rw http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Host == "auth.oauth.example" {
		p.calls = append(p.calls, "token")
		r.ParseForm()
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		p.forms = append(p.forms, form)
		if form["client_secret"] != "cs-secret-value" {
			rw.WriteHeader(401)
			fmt.Fprintf(rw, `{"error":"invalid_client","error_description":"client_secret %s is wrong"}`, form["client_secret"])
			return
		}
		p.minted++
		p.current = fmt.Sprintf("at-%d-token", p.minted)
		json.NewEncoder(rw).Encode(map[string]any{"access_token": p.current, "expires_in": 3600, "token_type": "Bearer", "refresh_token": p.refresh})
		return
	}
	p.calls = append(p.calls, "api")
	if p.reject || r.Header.Get("Authorization") != "Bearer "+p.current {
		rw.WriteHeader(401)
		rw.Write([]byte(`{"error":"unauthorized"}`))
		return
	}
	rw.Write([]byte(`{"ok":true,"auth":"` + r.Header.Get("Authorization") + `"}`))
}

func (p *oauthProvider) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.Join(p.calls, ",")
	p.calls = nil
	return s
}

const clientCreds = `{"slot":"cc","provider":{"name":"CC"},"kind":"oauth2_client_creds",
	"fields":[{"key":"client_id","label":"Client ID","type":"text"},{"key":"client_secret","label":"Client secret","type":"secret"}],
	"endpoints":{"tokenUrl":"https://auth.oauth.example/token"},"scopes":["tasks.read","tasks.write"],"declaredApiHosts":["api.oauth.example"]}`

func oauthWorld(t *testing.T, secret string) (*world, *oauthProvider) {
	w := newWorld(t)
	p := &oauthProvider{}
	w.provider(p.handle, "api.oauth.example", "auth.oauth.example")
	w.connect(clientCreds, userdb.Credentials{"client_id": "cid", "client_secret": secret})
	return w, p
}

// Client credentials: minted on first use, reused, refreshed 60 s before
// expiry; the token POST carries the scopes.
func TestOAuthClientCredentials(t *testing.T) {
	w, p := oauthWorld(t, "cs-secret-value")
	resp, ferr := w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	if ferr != nil || resp.Status != 200 || p.log() != "token,api" {
		t.Fatalf("first: %+v %+v", resp, ferr)
	}
	if f := p.forms[0]; f["grant_type"] != "client_credentials" || f["client_id"] != "cid" || f["scope"] != "tasks.read tasks.write" {
		t.Fatalf("token form %v", f)
	}
	if strings.Contains(resp.Body, "at-1-token") {
		t.Fatalf("the token crossed: %s", resp.Body)
	}
	w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	if got := p.log(); got != "api" {
		t.Fatalf("second: %s", got)
	}
	w.advance(3600*time.Second - 61*time.Second)
	w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	if got := p.log(); got != "api" {
		t.Fatalf("61 s before expiry: %s", got)
	}
	w.advance(2 * time.Second)
	w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	if got := p.log(); got != "token,api" {
		t.Fatalf("59 s before expiry: %s", got)
	}
}

// An OAuth 401: exactly one refresh and one retry (api → token → api). A
// 401 that persists is delivered as it is.
func TestOAuth401RefreshAndRetry(t *testing.T) {
	w, p := oauthWorld(t, "cs-secret-value")
	w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	p.log()
	p.mu.Lock()
	p.current = "revoked-by-provider"
	p.mu.Unlock()
	resp, ferr := w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	if ferr != nil || resp.Status != 200 || p.log() != "api,token,api" {
		t.Fatalf("retry: %+v %+v", resp, ferr)
	}
	p.reject = true
	resp, ferr = w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	if ferr != nil || resp.Status != 401 || p.log() != "api,token,api" {
		t.Fatalf("a persisting 401: %+v %+v", resp, ferr)
	}
}

// A static kind's 401 is delivered: one fetch, no retry.
func TestStatic401IsDelivered(t *testing.T) {
	w := newWorld(t)
	s := w.provider(func(rw http.ResponseWriter, r *http.Request) { rw.WriteHeader(401) }, "api.todo.example")
	w.connect(apiKey("todo", "api.todo.example"), userdb.Credentials{"api_key": key})
	resp, ferr := w.do("GET", "https://api.todo.example/", nil, nil)
	if ferr != nil || resp.Status != 401 || s.Requests() != 1 {
		t.Fatalf("%+v %+v, %d fetches", resp, ferr, s.Requests())
	}
}

// A token endpoint's refusal is NET_AUTH_FAILED with the provider's words,
// scrubbed of what was sent.
func TestOAuthTokenRefused(t *testing.T) {
	w, p := oauthWorld(t, "cs-wrong-secret-1")
	resp, ferr := w.do("GET", "https://api.oauth.example/tasks", nil, nil)
	if ferr == nil || ferr.Code != frame.CodeNetAuthFailed || p.log() != "token" {
		t.Fatalf("%+v %+v", resp, ferr)
	}
	if strings.Contains(ferr.Message, "cs-wrong-secret-1") || !strings.Contains(ferr.Message, "client_secret *** is wrong") {
		t.Fatalf("message %q", ferr.Message)
	}
}

// A token that arrives after a revocation is not stored.
func TestTokenAfterRevocationIsDropped(t *testing.T) {
	w, _ := oauthWorld(t, "cs-secret-value")
	if _, err := w.db.RevokeConnection(ctx, w.app, "cc"); err != nil {
		t.Fatal(err)
	}
	if err := w.db.SetConnectionSecrets(ctx, w.app, "cc", map[string]string{"access_token": "late"}); err == nil {
		t.Fatal("a token was stored under a revoked slot")
	}
}
