package fetch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/ssrf"
)

// State is a slot's dynamic state, kept in snug_secrets under
// auth:<appId>:<slot>:_connection (never in snug_connections, which is
// synced and must not change on a token refresh).
type State struct {
	Status        string   `json:"status"` // pending, connected, expired or error
	ObtainedAt    int64    `json:"obtainedAt,omitempty"`
	ExpiresIn     int64    `json:"expiresIn,omitempty"` // seconds
	ScopesGranted []string `json:"scopesGranted,omitempty"`
	LastError     string   `json:"lastError,omitempty"`
}

// The OAuth token fields, kept under the slot like credential fields.
const (
	fieldAccessToken  = "access_token"
	fieldRefreshToken = "refresh_token"
	fieldClientID     = "client_id"
	fieldClientSecret = "client_secret"
)

// expiring reports whether an access token obtained at s.ObtainedAt (ms)
// for s.ExpiresIn seconds is within the refresh skew of its end (or of an
// unknown one).
func (s State) expiring(now time.Time) bool {
	if s.ObtainedAt == 0 || s.ExpiresIn == 0 {
		return true
	}
	end := time.UnixMilli(s.ObtainedAt).Add(time.Duration(s.ExpiresIn) * time.Second)
	return !now.Add(conn.RefreshSkewSeconds * time.Second).Before(end)
}

func (e *Executor) secret(ctx context.Context, appID, slot, field string) (string, *Error) {
	v, _, err := e.store.Secret(ctx, conn.CredentialKey(appID, slot, field))
	if err != nil {
		return "", hostError(err)
	}
	return v, nil
}

func (e *Executor) state(ctx context.Context, appID, slot string) (State, *Error) {
	var s State
	text, ferr := e.secret(ctx, appID, slot, conn.StateField)
	if ferr == nil && text != "" {
		json.Unmarshal([]byte(text), &s)
	}
	return s, ferr
}

// accessToken returns a usable OAuth access token for the target's
// connection: the stored one while it is good for more than the refresh
// skew, else a new one (client credentials: minted; authorization code:
// refreshed). force skips the stored one (the 401 retry). It also returns
// the secrets it sent, for the scrub.
func (e *Executor) accessToken(ctx context.Context, t *target, force bool) (string, scrubber, *Error) {
	app, slot := t.appID, t.row.Slot
	clientID, ferr := e.secret(ctx, app, slot, fieldClientID)
	if ferr != nil {
		return "", nil, ferr
	}
	clientSecret, ferr := e.secret(ctx, app, slot, fieldClientSecret)
	if ferr != nil {
		return "", nil, ferr
	}
	st, ferr := e.state(ctx, app, slot)
	if ferr != nil {
		return "", nil, ferr
	}
	token, ferr := e.secret(ctx, app, slot, fieldAccessToken)
	if ferr != nil {
		return "", nil, ferr
	}
	scrub := scrubber{clientSecret, token}
	if !force && st.Status == "connected" && token != "" && !st.expiring(e.opts.Now()) {
		return token, scrub, nil
	}
	if clientID == "" {
		return "", scrub, fail(frame.CodeNetAuthFailed, "the connection has no client id: connect this app first")
	}
	form := url.Values{fieldClientID: {clientID}}
	if clientSecret != "" {
		form.Set(fieldClientSecret, clientSecret)
	}
	endpoint := t.req.Endpoints.TokenURL
	keepRefresh := false
	if t.req.Kind == conn.KindOAuthClientCreds {
		form.Set("grant_type", "client_credentials")
		if len(t.req.Scopes) > 0 {
			form.Set("scope", strings.Join(t.req.Scopes, " "))
		}
	} else {
		refresh, ferr := e.secret(ctx, app, slot, fieldRefreshToken)
		if ferr != nil {
			return "", scrub, ferr
		}
		if refresh == "" {
			if st.Status == "" || st.Status == "pending" {
				return "", scrub, fail(frame.CodeNetAuthFailed, "the connection's sign-in was not completed: connect this app first")
			}
			e.saveState(ctx, app, slot, State{Status: "expired", LastError: "no refresh token: reconnect"})
			return "", scrub, fail(frame.CodeNetAuthFailed, "the connection's sign-in expired and cannot be refreshed: reconnect this app")
		}
		scrub = append(scrub, refresh)
		form.Set("grant_type", "refresh_token")
		form.Set(fieldRefreshToken, refresh)
		if t.req.Endpoints.RefreshURL != "" {
			endpoint = t.req.Endpoints.RefreshURL
		}
		keepRefresh = true
	}
	tok, ferr := e.postForm(ctx, t.row.AllowedHosts(), endpoint, form, scrub)
	if ferr != nil {
		e.saveState(ctx, app, slot, State{Status: "expired", LastError: ferr.Message})
		return "", scrub, ferr
	}
	if err := e.saveTokens(ctx, app, slot, tok, keepRefresh); err != nil {
		return "", scrub, fail(frame.CodeNetAuthFailed, "the connection changed while its token was refreshed")
	}
	return tok.AccessToken, append(scrub, tok.AccessToken, tok.RefreshToken), nil
}

// tokenResponse is an OAuth token endpoint's answer.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	TokenType    string `json:"token_type"`
}

func (e *Executor) saveTokens(ctx context.Context, app, slot string, tok tokenResponse, keepRefresh bool) error {
	st := State{Status: "connected", ObtainedAt: e.opts.Now().UnixMilli(), ExpiresIn: tok.ExpiresIn}
	if st.ExpiresIn <= 0 {
		st.ExpiresIn = 3600
	}
	if tok.Scope != "" {
		st.ScopesGranted = strings.Fields(tok.Scope)
	}
	stateJSON, _ := json.Marshal(st)
	values := map[string]string{fieldAccessToken: tok.AccessToken, conn.StateField: string(stateJSON)}
	if tok.RefreshToken != "" || !keepRefresh {
		values[fieldRefreshToken] = tok.RefreshToken // a provider that does not rotate keeps the old one
	}
	return e.store.SetConnectionSecrets(ctx, app, slot, values)
}

func (e *Executor) saveState(ctx context.Context, app, slot string, st State) {
	data, _ := json.Marshal(st)
	e.store.SetConnectionSecrets(ctx, app, slot, map[string]string{conn.StateField: string(data)})
}

// postForm makes one credential-bearing POST to an OAuth token endpoint
// and reads the tokens it answers.
func (e *Executor) postForm(ctx context.Context, ceiling []string, endpoint string, form url.Values, scrub scrubber) (tokenResponse, *Error) {
	var tok tokenResponse
	data, ferr := e.post(ctx, ceiling, "token", endpoint, form, scrub)
	if ferr != nil {
		return tok, ferr
	}
	if json.Unmarshal(data, &tok) != nil || tok.AccessToken == "" {
		return tok, fail(frame.CodeNetAuthFailed, "the token endpoint's answer has no access_token")
	}
	return tok, nil
}

// post makes one credential-bearing POST to the connection's OAuth
// endpoint named what: https, inside the connection's ceiling, past the
// SSRF guard, no redirect, the answer capped, and answers a 2xx body.
// Failures are NET_AUTH_FAILED with the provider's own words, at most 160
// characters, scrubbed of what was sent.
func (e *Executor) post(ctx context.Context, ceiling []string, what, endpoint string, form url.Values, scrub scrubber) ([]byte, *Error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" {
		return nil, fail(frame.CodeNetAuthFailed, "the connection's %s endpoint is not an https URL", what)
	}
	host, err := ssrf.CanonicalHost(u.Hostname())
	if err != nil || !conn.InCeiling(host, ceiling) {
		return nil, fail(frame.CodeNetAuthFailed, "the connection's %s endpoint is outside its approved hosts", what)
	}
	if ssrf.BlockedHost(host) {
		return nil, fail(frame.CodeNetSSRFBlocked, "the connection's %s endpoint is a private, loopback or local target", what)
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	for _, k := range []string{"code", "code_verifier", "token"} {
		if v := form.Get(k); v != "" {
			scrub = append(scrub, v)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fail(frame.CodeNetAuthFailed, "the %s request cannot be made", what)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		t := &target{host: host}
		ferr := e.transportError(ctx, t, err, scrub)
		if ferr.Code == frame.CodeNetFetchFailed {
			ferr.Code, ferr.Message = frame.CodeNetAuthFailed, "the "+what+" endpoint could not be reached: "+strings.TrimPrefix(ferr.Message, "the request failed: ")
		}
		return nil, ferr
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, frame.MaxNetResponseBodyBytes+1))
	if err != nil || len(data) > frame.MaxNetResponseBodyBytes {
		return nil, fail(frame.CodeNetAuthFailed, "the %s endpoint's answer could not be read", what)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fail(frame.CodeNetAuthFailed, "the %s endpoint answered with a redirect, which is never followed", what)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fail(frame.CodeNetAuthFailed, "the %s endpoint refused (%d): %s", what, resp.StatusCode, providerError(string(data), scrub))
	}
	return data, nil
}

// providerError is a provider's error text fit to show a person (§14.3):
// scrubbed, then the error_description or error (or message) of a JSON
// error envelope, else the start of the text when it is not markup;
// scrubbed again (decoding JSON can rebuild an escaped secret); at most
// 160 characters.
func providerError(body string, scrub scrubber) string {
	body = scrub.apply(body)
	var env map[string]any
	text := ""
	if json.Unmarshal([]byte(body), &env) == nil {
		for _, k := range []string{"error_description", "error", "message"} {
			if s, ok := env[k].(string); ok && s != "" {
				text = s
				break
			}
			if m, ok := env[k].(map[string]any); ok {
				if s, ok := m["message"].(string); ok {
					text = s
					break
				}
			}
		}
	} else if t := strings.TrimSpace(body); !strings.HasPrefix(t, "<") {
		text = t
	}
	text = scrub.apply(strings.Join(strings.Fields(text), " "))
	if text == "" {
		return "no reason given"
	}
	return frame.Clip(text, conn.ProviderErrorChars)
}
