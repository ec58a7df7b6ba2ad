package fetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/ssrf"
	"github.com/dsh-browser/broker/snug/userdb"
)

// target is a request past gates 1–5: where it goes and under which grant.
type target struct {
	appID  string
	method string
	url    *url.URL // the app's URL, host canonical, no fragment
	host   string   // canonical
	body   *string
	row    userdb.Connection
	req    *conn.Requirement
	slot   string // set on the snug-connection:// path only
}

// Do runs one request of app appID through the ten gates and answers it:
// a *Response (any status) or an *Error. confirm asks the user about a
// mutating request.
func (e *Executor) Do(ctx context.Context, appID string, r Request, confirm ConfirmFunc) (*Response, *Error) {
	t, ferr := e.admit(ctx, appID, r)
	if ferr != nil {
		return nil, ferr
	}
	// Gate 6: the user confirms a mutating request before any credential
	// is read.
	if frame.IsMutating(t.method) {
		c := Confirm{AppID: appID, Host: t.host, Method: t.method, URL: t.url.String(), Body: t.body, Slot: t.slot}
		if confirm == nil || !confirm(ctx, c) {
			return nil, fail(frame.CodeNetConfirmDenied, "the user declined this %s request", t.method)
		}
	}
	// Gate 7: the app's credential-shaped headers go.
	headers := map[string]string{}
	for name, v := range r.Headers {
		if !credentialShaped(name) && !forbidden(name) {
			headers[name] = v
		}
	}
	resp, used, ferr := e.send(ctx, t, headers, false)
	if ferr == nil && resp.Status == http.StatusUnauthorized && t.req.Kind.OAuth() && used {
		// An OAuth 401: one refresh and one retry. Static kinds deliver
		// their 401 as it is.
		if again, _, err := e.send(ctx, t, headers, true); err == nil {
			return again, nil
		}
	}
	return resp, ferr
}

// admit runs gates 1–5, which read no credential.
func (e *Executor) admit(ctx context.Context, appID string, r Request) (*target, *Error) {
	// Gate 1: shape.
	if !slices.Contains(frame.NetMethods[:], r.Method) {
		return nil, fail(frame.CodeNetInvalidRequest, "method must be one of %s", strings.Join(frame.NetMethods[:], ", "))
	}
	if n := utf8.RuneCountInString(r.URL); n < 1 || n > frame.MaxNetURLChars {
		return nil, fail(frame.CodeNetInvalidRequest, "url must be 1 to %d characters", frame.MaxNetURLChars)
	}
	for name, v := range r.Headers {
		if n := utf8.RuneCountInString(name); n < 1 || n > frame.MaxHeaderNameChars || utf8.RuneCountInString(v) > frame.MaxHeaderValueChars {
			return nil, fail(frame.CodeNetInvalidRequest, "a header name or value is out of bounds")
		}
		if !validHeader(name, v) {
			return nil, fail(frame.CodeNetInvalidRequest, "a header name or value holds characters HTTP does not allow")
		}
	}
	if r.Body != nil && (r.Method == "GET" || r.Method == "HEAD") {
		return nil, fail(frame.CodeNetInvalidRequest, "a %s request has no body", r.Method)
	}
	if r.Body != nil && len(*r.Body) > frame.MaxNetRequestBodyBytes {
		return nil, fail(frame.CodeNetSizeExceeded, "the request body is over %d bytes", frame.MaxNetRequestBodyBytes)
	}
	raw := r.URL
	var rows []userdb.Connection
	slot := ""
	// Resolution of snug-connection://slot/path: the slot names one of the
	// app's connections, whose ceiling must be one host. It grants
	// nothing: every gate below runs on the resolved URL. From here on a
	// refusal on this path names no host.
	if cu, ok, malformed := conn.ParseConnectionURL(raw); malformed {
		return nil, fail(frame.CodeNetInvalidRequest, "a connection address is snug-connection://<slot>/<path>")
	} else if ok {
		var err error
		if rows, err = e.store.Connections(ctx, appID); err != nil {
			return nil, hostError(err)
		}
		i := slices.IndexFunc(rows, func(c userdb.Connection) bool { return c.Slot == cu.Slot })
		switch {
		case i < 0:
			return nil, fail(frame.CodeNetInvalidRequest, "this app declares no connection %q", cu.Slot)
		case rows[i].Imported:
			return nil, fail(frame.CodeNetImportedUnapproved, "the %q connection arrived by import: approve it again before the app can use it", cu.Slot)
		case rows[i].Status != conn.StatusApproved:
			return nil, fail(frame.CodeNetNotApproved, "the %q connection is not approved: connect it first", cu.Slot)
		case len(rows[i].AllowedHosts()) != 1:
			return nil, fail(frame.CodeNetAmbiguousConnection, "the %q connection does not resolve to exactly one host", cu.Slot)
		}
		base := &url.URL{Scheme: "https", Host: rows[i].AllowedHosts()[0], Path: "/"}
		ref, err := url.Parse(cu.PathAndQuery)
		if err != nil || ref.Scheme != "" || ref.Host != "" || ref.User != nil {
			return nil, fail(frame.CodeNetInvalidRequest, "the connection address's path does not parse")
		}
		raw = base.ResolveReference(ref).String()
		slot = cu.Slot
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return nil, fail(frame.CodeNetInvalidRequest, "url does not parse as an absolute URL")
	}
	if u.User != nil {
		return nil, fail(frame.CodeNetInvalidRequest, "a url with a username or password is not allowed")
	}
	host, err := ssrf.CanonicalHost(u.Hostname())
	if err != nil {
		return nil, fail(frame.CodeNetInvalidRequest, "url has an invalid host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fail(frame.CodeNetInvalidRequest, "url has an invalid port")
		}
	}
	if slot != "" && !conn.InCeiling(host, rows[slices.IndexFunc(rows, func(c userdb.Connection) bool { return c.Slot == slot })].AllowedHosts()) {
		return nil, fail(frame.CodeNetInvalidRequest, "the connection address's path did not resolve cleanly")
	}
	// What is checked is what is sent: the canonical host, no fragment.
	u.Host = joinHostPort(host, u.Port())
	u.Fragment, u.RawFragment = "", ""
	// Gate 4, its scheme half: https only, no exception.
	if u.Scheme != "https" {
		return nil, fail(frame.CodeNetSchemeBlocked, "only https requests are allowed")
	}
	// Gates 2 and 3, and 4's host half: the one approved connection of
	// this app (the host's binding) whose frozen ceiling holds the host.
	if rows == nil {
		if rows, err = e.store.Connections(ctx, appID); err != nil {
			return nil, hostError(err)
		}
	}
	label := "'" + host + "'"
	if slot != "" {
		label = "the " + strconv.Quote(slot) + " connection's host"
	}
	row, ferr := route(rows, host, label)
	if ferr != nil {
		return nil, ferr
	}
	req, err := row.Requirement()
	if err != nil {
		return nil, fail(frame.CodeNetAuthFailed, "the connection's stored requirement is unreadable: reconnect it")
	}
	// Gate 5: the SSRF guard, ceiling members included.
	if ssrf.BlockedHost(host) {
		if slot != "" {
			return nil, fail(frame.CodeNetSSRFBlocked, "this connection resolves to an address on your own machine or network, which the net capability never reaches")
		}
		return nil, fail(frame.CodeNetSSRFBlocked, "host '%s' is a private, loopback or local target", host)
	}
	return &target{appID: appID, method: r.Method, url: u, host: host, body: r.Body, row: row, req: req, slot: slot}, nil
}

// route picks the grant by host: the one approved, not imported, row whose
// frozen ceiling holds it. Never the first row, never a guess.
func route(rows []userdb.Connection, host, label string) (userdb.Connection, *Error) {
	var matches []userdb.Connection
	for _, c := range rows {
		if c.Status == conn.StatusApproved && conn.InCeiling(host, c.AllowedHosts()) {
			matches = append(matches, c)
		}
	}
	for _, c := range matches {
		if c.Imported {
			return c, fail(frame.CodeNetImportedUnapproved, "this connection arrived by import: approve it again before the app can use it")
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
	default:
		var slots []string
		for _, c := range matches {
			slots = append(slots, c.Slot)
		}
		return userdb.Connection{}, fail(frame.CodeNetAmbiguousConnection, "approved connections %s all claim %s: refusing to guess which credential to send",
			strings.Join(slots, ", "), label)
	}
	// Nothing approved covers it. A declared or imported row that would
	// cover it names the remedy; the app's URL never chooses the words.
	for _, c := range rows {
		req, err := c.Requirement()
		if err != nil || c.Status == conn.StatusApproved || !conn.InCeiling(host, req.Ceiling()) {
			continue
		}
		if c.Imported {
			return c, fail(frame.CodeNetImportedUnapproved, "this connection arrived by import: approve it again before the app can use it")
		}
		return c, fail(frame.CodeNetNotApproved, "no approved connection covers this request: connect %s to continue", req.Provider.Name)
	}
	return userdb.Connection{}, fail(frame.CodeNetNotApproved, "no approved connection covers this request")
}

// send runs gates 8–10 once: inject (refresh first when force), fetch,
// read. used reports whether credentials were injected.
func (e *Executor) send(ctx context.Context, t *target, appHeaders map[string]string, force bool) (*Response, bool, *Error) {
	inj, ferr := e.inject(ctx, t, force)
	if ferr != nil {
		return nil, false, ferr
	}
	out := *t.url
	if len(inj.query) > 0 {
		q := out.Query()
		for k, v := range inj.query {
			q.Set(k, v)
		}
		out.RawQuery = q.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	var body io.Reader
	if t.body != nil {
		body = strings.NewReader(*t.body)
	}
	hr, err := http.NewRequestWithContext(ctx, t.method, out.String(), body)
	if err != nil {
		return nil, false, fail(frame.CodeNetInvalidRequest, "the request cannot be made")
	}
	for k, v := range appHeaders {
		hr.Header.Set(k, v)
	}
	for k, v := range inj.headers { // injected values win over the app's
		hr.Header.Set(k, v)
	}
	scrub := inj.scrub
	resp, err := e.client.Do(hr)
	if err != nil {
		return nil, false, e.transportError(ctx, t, err, scrub)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, false, fail(frame.CodeNetRedirectBlocked, "the server answered with a redirect (%d), which is never followed", resp.StatusCode)
	}
	// Gate 10: capped while reading; a partial body never leaves.
	data, err := io.ReadAll(io.LimitReader(resp.Body, frame.MaxNetResponseBodyBytes+1))
	if err != nil {
		return nil, false, e.transportError(ctx, t, err, scrub)
	}
	if len(data) > frame.MaxNetResponseBodyBytes {
		return nil, false, fail(frame.CodeNetSizeExceeded, "the response is over the %d-byte cap and was discarded", frame.MaxNetResponseBodyBytes)
	}
	clean := scrub.compile()
	headers := map[string]string{}
	for name, vs := range resp.Header {
		if frame.IsWhitelistedResponseHeader(name) {
			headers[strings.ToLower(name)] = clean(strings.Join(vs, ", "))
		}
	}
	text := string(bytes.ToValidUTF8(data, []byte("\uFFFD")))
	return &Response{Status: resp.StatusCode, Headers: headers, Body: clean(text)}, inj.used, nil
}

// transportError is NET_FETCH_FAILED (retryable), or NET_SSRF_BLOCKED when
// the guarded dialer refused the resolved address. The text is scrubbed
// of injected values, and on the snug-connection:// path of the resolved
// host.
func (e *Executor) transportError(ctx context.Context, t *target, err error, scrub scrubber) *Error {
	if errors.Is(err, ssrf.ErrBlocked) {
		if t.slot != "" {
			return fail(frame.CodeNetSSRFBlocked, "this connection resolves to an address on your own machine or network, which the net capability never reaches")
		}
		return fail(frame.CodeNetSSRFBlocked, "host '%s' resolves to a private, loopback or local address", t.host)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: frame.CodeNetFetchFailed, Message: "the server did not answer within " + e.opts.Timeout.String(), Retryable: true}
	}
	// The url.Error's own text embeds the (credentialed) URL: use its cause.
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if t.slot != "" {
		// The transport's words name the resolved host or its address,
		// which the app never learns on this path.
		return &Error{Code: frame.CodeNetFetchFailed, Message: "the request failed: the connection's server could not be reached", Retryable: true}
	}
	return &Error{Code: frame.CodeNetFetchFailed, Message: "the request failed: " + scrub.apply(err.Error()), Retryable: true}
}

func hostError(err error) *Error {
	return &Error{Code: frame.CodeHostError, Message: "the host could not read the app's connections", Retryable: true}
}

func joinHostPort(host, port string) string {
	if port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

// credentialShaped is gate 7's test: STRIP_HEADERS, and names like an API
// key or an x-…auth/token header.
func credentialShaped(name string) bool {
	lower := strings.ToLower(name)
	return frame.IsCredentialHeader(lower) || apiKeyName(lower) ||
		(strings.HasPrefix(lower, "x-") && (strings.Contains(lower[2:], "auth") || strings.Contains(lower[2:], "token")))
}

func apiKeyName(lower string) bool {
	for _, s := range []string{"apikey", "api-key", "api_key"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// forbidden are the request headers a browser's fetch never lets a page
// set; the transport writes them itself.
func forbidden(name string) bool {
	lower := strings.ToLower(name)
	switch lower {
	case "accept-charset", "accept-encoding", "access-control-request-headers", "access-control-request-method",
		"connection", "content-length", "cookie2", "date", "dnt", "expect", "host", "keep-alive", "origin",
		"referer", "te", "trailer", "transfer-encoding", "upgrade", "via":
		return true
	}
	return strings.HasPrefix(lower, "proxy-") || strings.HasPrefix(lower, "sec-")
}

// validHeader reports whether a header is one HTTP can carry: a token
// name, a value without control characters but tab.
func validHeader(name, value string) bool {
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	for _, c := range []byte(value) {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
