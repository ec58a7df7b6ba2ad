package fetch

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/userdb"
)

// FlowTimeout is how long an OAuth sign-in may take between its start and
// the provider's redirect back (our choice).
const FlowTimeout = 10 * time.Minute

// flow is an OAuth authorization-code sign-in in progress, kept in
// snug_secrets under auth:_flow:<id> (the PKCE verifier is a secret).
type flow struct {
	AppID       string `json:"appId"`
	Slot        string `json:"slot"`
	Verifier    string `json:"verifier,omitempty"`
	RedirectURI string `json:"redirectUri"`
	Created     int64  `json:"created"` // ms
}

// StartAuthorization begins the sign-in of an approved oauth2_auth_code
// connection, on the user's act in host chrome: it records a flow (the
// PKCE verifier, S256 by default) and returns the provider's authorize URL
// for the user's browser, its state HMAC-signed with auth:_state_hmac. The
// browser comes back to redirectURI (https), which the host passes to
// [Executor.CompleteAuthorization].
func (e *Executor) StartAuthorization(ctx context.Context, appID, slot, redirectURI string) (string, *Error) {
	row, req, ferr := e.authCodeRow(ctx, appID, slot)
	if ferr != nil {
		return "", ferr
	}
	if u, err := url.Parse(redirectURI); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return "", fail(frame.CodeNetInvalidRequest, "the sign-in's redirect address must be an https URL")
	}
	clientID, ferr := e.secret(ctx, appID, slot, fieldClientID)
	if ferr != nil {
		return "", ferr
	}
	if clientID == "" {
		return "", fail(frame.CodeNetAuthFailed, "the connection has no client id: type it in the connect flow first")
	}
	authorize, err := url.Parse(req.Endpoints.AuthorizeURL)
	if err != nil || authorize.Scheme != "https" || !conn.InCeiling(authorize.Hostname(), row.AllowedHosts()) {
		return "", fail(frame.CodeNetAuthFailed, "the connection's authorize endpoint is outside its approved hosts")
	}
	key, ferr := e.stateKey(ctx)
	if ferr != nil {
		return "", ferr
	}
	f := flow{AppID: appID, Slot: slot, RedirectURI: redirectURI, Created: e.opts.Now().UnixMilli()}
	q := authorize.Query()
	for k, v := range req.AuthorizeParams {
		q.Set(k, v)
	}
	q.Set("response_type", "code")
	q.Set("client_id", clientID)
	q.Set("redirect_uri", redirectURI)
	if len(req.Scopes) > 0 {
		q.Set("scope", strings.Join(req.Scopes, " "))
	}
	if req.UsesPKCE() {
		f.Verifier = random(32)
		sum := sha256.Sum256([]byte(f.Verifier))
		q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
		q.Set("code_challenge_method", "S256")
	}
	if ferr := e.sweepFlows(ctx); ferr != nil {
		return "", ferr
	}
	id := random(16)
	q.Set("state", id+"."+sign(key, id))
	data, _ := json.Marshal(f)
	if err := e.store.SetSecret(ctx, conn.FlowKey(id), string(data)); err != nil {
		return "", hostError(err)
	}
	e.saveState(ctx, appID, slot, State{Status: "pending"})
	authorize.RawQuery = q.Encode()
	return authorize.String(), nil
}

// CompleteAuthorization finishes a sign-in with the address the provider
// sent the browser back to: the state must carry a valid signature (checked
// in constant time) of a flow of this app and slot, started less than
// FlowTimeout ago, and is used once; the code is exchanged for tokens at
// the token endpoint (https, inside the ceiling, past the SSRF guard, no
// redirect), with the PKCE verifier, and the tokens are stored under the
// slot, which must still be approved.
func (e *Executor) CompleteAuthorization(ctx context.Context, appID, slot, callback string) *Error {
	cb, err := url.Parse(callback)
	if err != nil {
		return fail(frame.CodeNetAuthFailed, "the sign-in's answer does not parse")
	}
	q := cb.Query()
	id, sig, _ := strings.Cut(q.Get("state"), ".")
	key, ferr := e.stateKey(ctx)
	if ferr != nil {
		return ferr
	}
	if id == "" || !hmac.Equal([]byte(sig), []byte(sign(key, id))) {
		return fail(frame.CodeNetAuthFailed, "the sign-in's state is not one this host issued")
	}
	f, ferr := e.takeFlow(ctx, id)
	if ferr != nil {
		return ferr
	}
	switch {
	case f.AppID != appID || f.Slot != slot:
		return fail(frame.CodeNetAuthFailed, "the sign-in was started for another connection")
	case e.opts.Now().Sub(time.UnixMilli(f.Created)) > FlowTimeout:
		return fail(frame.CodeNetAuthFailed, "the sign-in took too long: start it again")
	case !sameEndpoint(cb, f.RedirectURI):
		return fail(frame.CodeNetAuthFailed, "the sign-in came back to another address")
	}
	if reason := q.Get("error"); reason != "" {
		if d := q.Get("error_description"); d != "" {
			reason = d
		}
		reason = providerError(reason, nil)
		e.saveState(ctx, appID, slot, State{Status: "error", LastError: reason})
		return fail(frame.CodeNetAuthFailed, "the provider refused the sign-in: %s", reason)
	}
	code := q.Get("code")
	if code == "" {
		return fail(frame.CodeNetAuthFailed, "the sign-in's answer has no code")
	}
	row, req, ferr := e.authCodeRow(ctx, appID, slot)
	if ferr != nil {
		return ferr
	}
	clientID, ferr := e.secret(ctx, appID, slot, fieldClientID)
	if ferr != nil {
		return ferr
	}
	clientSecret, ferr := e.secret(ctx, appID, slot, fieldClientSecret)
	if ferr != nil {
		return ferr
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.RedirectURI}, fieldClientID: {clientID}}
	if clientSecret != "" {
		form.Set(fieldClientSecret, clientSecret)
	}
	if f.Verifier != "" {
		form.Set("code_verifier", f.Verifier)
	}
	tok, ferr := e.postForm(ctx, row.AllowedHosts(), req.Endpoints.TokenURL, form, scrubber{clientSecret})
	if ferr != nil {
		e.saveState(ctx, appID, slot, State{Status: "error", LastError: ferr.Message})
		return ferr
	}
	if err := e.saveTokens(ctx, appID, slot, tok, false); err != nil {
		return fail(frame.CodeNetAuthFailed, "the connection changed while signing in")
	}
	return nil
}

// authCodeRow is the approved oauth2_auth_code connection of app and slot.
func (e *Executor) authCodeRow(ctx context.Context, appID, slot string) (userdb.Connection, *conn.Requirement, *Error) {
	rows, err := e.store.Connections(ctx, appID)
	if err != nil {
		return userdb.Connection{}, nil, hostError(err)
	}
	i := slices.IndexFunc(rows, func(c userdb.Connection) bool { return c.Slot == slot })
	if i < 0 || rows[i].Status != conn.StatusApproved || rows[i].Imported {
		return userdb.Connection{}, nil, fail(frame.CodeNetNotApproved, "approve the connection before signing in")
	}
	req, err := rows[i].Requirement()
	if err != nil || req.Kind != conn.KindOAuthAuthCode {
		return userdb.Connection{}, nil, fail(frame.CodeNetInvalidRequest, "the connection does not sign in with OAuth")
	}
	return rows[i], req, nil
}

// stateKey is auth:_state_hmac, made on first use (32 random bytes).
func (e *Executor) stateKey(ctx context.Context) (string, *Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key, ok, err := e.store.Secret(ctx, conn.StateHMACKey)
	if err != nil {
		return "", hostError(err)
	}
	if ok && key != "" {
		return key, nil
	}
	key = random(32)
	if err := e.store.SetSecret(ctx, conn.StateHMACKey, key); err != nil {
		return "", hostError(err)
	}
	return key, nil
}

// takeFlow reads a flow and deletes it: a state is used once.
func (e *Executor) takeFlow(ctx context.Context, id string) (flow, *Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var f flow
	text, ok, err := e.store.Secret(ctx, conn.FlowKey(id))
	if err != nil {
		return f, hostError(err)
	}
	if !ok || json.Unmarshal([]byte(text), &f) != nil {
		return f, fail(frame.CodeNetAuthFailed, "the sign-in is unknown or was used already: start it again")
	}
	if err := e.store.SetSecret(ctx, conn.FlowKey(id), ""); err != nil {
		return f, hostError(err)
	}
	return f, nil
}

// sweepFlows deletes the sign-ins that were started more than FlowTimeout
// ago and never completed (the user closed the provider's window): they
// can no longer complete, and each holds a PKCE verifier.
func (e *Executor) sweepFlows(ctx context.Context) *Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys, err := e.store.SecretKeys(ctx, conn.FlowKeyPrefix)
	if err != nil {
		return hostError(err)
	}
	for _, k := range keys {
		text, ok, err := e.store.Secret(ctx, k)
		if err != nil {
			return hostError(err)
		}
		var f flow
		if ok && json.Unmarshal([]byte(text), &f) == nil && e.opts.Now().Sub(time.UnixMilli(f.Created)) <= FlowTimeout {
			continue
		}
		if err := e.store.SetSecret(ctx, k, ""); err != nil {
			return hostError(err)
		}
	}
	return nil
}

// sameEndpoint reports whether the browser came back to redirectURI:
// scheme, host and path equal.
func sameEndpoint(cb *url.URL, redirectURI string) bool {
	r, err := url.Parse(redirectURI)
	return err == nil && cb.Scheme == r.Scheme && strings.EqualFold(cb.Host, r.Host) && cb.EscapedPath() == r.EscapedPath()
}

func sign(key, id string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// random is n random bytes, as hex.
func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
