package hub_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/hub"
	"github.com/dsh-browser/broker/snug/ssrf/ssrftest"
	"github.com/dsh-browser/broker/wire"
)

const todoKey = "sk-live-HUB-4eC39HqLyjWDarjtT1zdp7dc"

const todoRequirement = `{"slot":"todo","provider":{"name":"Todo Cloud"},"kind":"api_key",
	"fields":[{"key":"api_key","label":"API key","type":"secret"}],
	"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"declaredApiHosts":["api.todo.example"]}`

// netEnv is a broker whose hub reaches a pretend provider at
// api.todo.example through the injected resolver and dialer.
type netEnv struct {
	*env
	c       *client.Client
	app     string
	h       *runnerHost
	tb      *tab
	inst    string
	fetches atomic.Int64
	keys    chan string
}

func startNet(t testing.TB) *netEnv {
	t.Helper()
	ca, err := ssrftest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	n := ssrftest.NewNet()
	ne := &netEnv{keys: make(chan string, 16)}
	srv, err := ssrftest.Serve(ca, []string{"api.todo.example"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ne.fetches.Add(1)
		ne.keys <- r.Header.Get("X-Api-Key")
		w.Header().Set("ETag", `"`+r.Header.Get("X-Api-Key")+`"`)
		w.Header().Set("Set-Cookie", "s=1")
		fmt.Fprintf(w, `{"method":%q,"path":%q,"echo":%q}`, r.Method, r.URL.Path, r.Header.Get("X-Api-Key"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	n.Answer("api.todo.example", "93.184.216.34")
	n.Route("93.184.216.34:443", srv.Addr)
	ne.env = start(t, "", func(c *hub.Config) { c.Net.Resolver, c.Net.Dial, c.Net.RootCAs = n, n.Dial, ca.Pool })
	ne.c = ne.client(client.Options{})
	ne.app = install(t, ne.c, notes, nil).App.ID
	ne.h = ne.dialRunnerHost()
	ne.tb = ne.h.attach("tab", ne.app)
	ne.inst = ne.h.ready(ne.tb)
	return ne
}

// connect declares the todo requirement and approves it in the tab, as
// the connect flow does.
func (ne *netEnv) connect(t testing.TB) apps.Connection {
	t.Helper()
	d := call[apps.Connection](t, ne.c, apps.MethodConnectionDeclare, apps.DeclareParams{App: ne.app, Requirement: todoRequirement})
	if d.Status != "declared" || d.Credentials["api_key"] {
		t.Fatalf("declared: %+v", d)
	}
	ctx := t.Context()
	raw, err := ne.h.conn.Call(ctx, apps.ProviderApprove, apps.ApproveParams{Runner: "tab", Slot: "todo",
		Reviewed: string(d.Requirement), Credentials: map[string]string{"api_key": todoKey}})
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	if strings.Contains(string(raw), todoKey) {
		t.Fatal("the approval's answer carries the credential")
	}
	var a apps.Connection
	json.Unmarshal(raw, &a)
	if a.Status != "approved" || !a.Credentials["api_key"] || strings.Join(a.AllowedHosts, ",") != "api.todo.example" {
		t.Fatalf("approved: %s", raw)
	}
	return a
}

func (ne *netEnv) net(t testing.TB, id, method, url, body string) map[string]any {
	t.Helper()
	f := map[string]any{"v": 1, "type": "snug:net-request", "requestId": id, "instanceId": ne.inst, "url": url, "method": method}
	if body != "" {
		f["body"] = body
	}
	ne.h.sendJSON("tab", f)
	return ne.tb.frameOf(t, "snug:net-response", id)
}

// The whole seat: declared is refused, approved fetches with the key the
// app never sees, a POST is asked in the tab and the answer decides.
func TestNetThroughTheHub(t *testing.T) {
	ne := startNet(t)
	if got := ne.net(t, "n0", "GET", "https://api.todo.example/tasks", ""); errCode(got) != "NET_NOT_APPROVED" || ne.fetches.Load() != 0 {
		t.Fatalf("before connecting: %v", got)
	}
	ne.connect(t)
	// The declaration and the approval rang the app's doorbell.
	for _, status := range []string{"declared", "approved"} {
		ev := ne.tb.frameOf(t, "snug:host-event", "")
		if ev["event"] != "connection-event" || fmt.Sprint(ev["data"]) != "map[needsReapproval:false slot:todo status:"+status+"]" {
			t.Fatalf("hint %v", ev)
		}
	}
	got := ne.net(t, "n1", "GET", "https://api.todo.example/tasks", "")
	if got["ok"] != true || got["status"] != float64(200) || <-ne.keys != todoKey {
		t.Fatalf("GET: %v", got)
	}
	all, _ := json.Marshal(got)
	if strings.Contains(string(all), todoKey) {
		t.Fatalf("the key reached the app: %s", all)
	}
	if h, _ := got["headers"].(map[string]any); h["etag"] != `"***"` || h["set-cookie"] != nil {
		t.Fatalf("headers %v", h)
	}

	// POST: asked in the tab, with everything the user decides on.
	got = ne.net(t, "n2", "POST", "https://api.todo.example/tasks", `{"title":"milk"}`)
	if errCode(got) != "NET_CONFIRM_DENIED" || ne.fetches.Load() != 1 {
		t.Fatalf("denied POST: %v", got)
	}
	ne.h.mu.Lock()
	q := ne.h.asked[0]
	ne.h.answer = func(apps.ConfirmParams) apps.ConfirmResult { return apps.ConfirmResult{Allowed: true} }
	ne.h.mu.Unlock()
	if q.Kind != apps.ConfirmNet || q.Runner != "tab" || q.Host != "api.todo.example" || q.Method != "POST" ||
		q.URL != "https://api.todo.example/tasks" || q.Body == nil || *q.Body != `{"title":"milk"}` || q.App != "Reading & notes" {
		t.Fatalf("the question: %+v", q)
	}
	if got = ne.net(t, "n3", "POST", "https://api.todo.example/tasks", `{"title":"milk"}`); got["status"] != float64(200) {
		t.Fatalf("allowed POST: %v", got)
	}

	// A credential header makes the frame malformed: the handler never runs.
	ne.h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:net-request", "requestId": "n4", "instanceId": ne.inst,
		"url": "https://api.todo.example/", "method": "GET", "headers": map[string]string{"Authorization": "Bearer x"}})
	if got := ne.tb.frameOf(t, "snug:net-response", "n4"); errCode(got) != "MALFORMED" || ne.fetches.Load() != 2 {
		t.Fatalf("a credential header: %v", got)
	}

	// Revoked in the tab: refused again, and the key is gone.
	if _, err := ne.h.conn.Call(t.Context(), apps.ProviderRevoke, apps.RunnerSlotParams{Runner: "tab", Slot: "todo"}); err != nil {
		t.Fatal(err)
	}
	if got := ne.net(t, "n5", "GET", "https://api.todo.example/tasks", ""); errCode(got) != "NET_NOT_APPROVED" {
		t.Fatalf("after revoking: %v", got)
	}
	list := call[[]apps.Connection](t, ne.c, apps.MethodConnections, apps.ConnectionsParams{App: ne.app})
	if len(list) != 1 || list[0].Status != "revoked" || list[0].Credentials["api_key"] {
		t.Fatalf("after revoking: %+v", list)
	}
	// Reconnecting under another slot shows the earlier revocation (keyed
	// by provider and host, not slot); an unrelated provider does not.
	again := call[apps.Connection](t, ne.c, apps.MethodConnectionDeclare, apps.DeclareParams{App: ne.app,
		Requirement: strings.Replace(todoRequirement, `"slot":"todo"`, `"slot":"todo-again"`, 1)})
	if len(again.PriorRevocations) != 1 || again.PriorRevocations[0].Slot != "todo" || again.PriorRevocations[0].RevokedAt == "" {
		t.Fatalf("reconnecting: %+v", again.PriorRevocations)
	}
	unrelated := strings.NewReplacer(`"slot":"todo"`, `"slot":"mail"`, "Todo Cloud", "Mail", "api.todo.example", "api.mail.example").Replace(todoRequirement)
	if m := call[apps.Connection](t, ne.c, apps.MethodConnectionDeclare, apps.DeclareParams{App: ne.app, Requirement: unrelated}); len(m.PriorRevocations) != 0 {
		t.Fatalf("unrelated: %+v", m.PriorRevocations)
	}
	if strings.Contains(ne.log.String(), todoKey) {
		t.Fatal("the key is in the broker's log")
	}
}

// open-url: the full URL in the tab's question; opened or declined as the
// user says; refused when nobody could be asked.
func TestOpenURL(t *testing.T) {
	ne := startNet(t)
	open := func(id, url string) map[string]any {
		ne.h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:open-url-request", "requestId": id, "instanceId": ne.inst, "url": url})
		return ne.tb.frameOf(t, "snug:open-url-result", id)
	}
	if got := open("o1", "https://example.com/a?b=c#d"); got["status"] != "declined" {
		t.Fatalf("declined: %v", got)
	}
	ne.h.mu.Lock()
	ne.h.answer = func(q apps.ConfirmParams) apps.ConfirmResult { return apps.ConfirmResult{Status: "opened"} }
	ne.h.mu.Unlock()
	if got := open("o2", "https://example.com/a?b=c#d"); got["status"] != "opened" {
		t.Fatalf("opened: %v", got)
	}
	ne.h.mu.Lock()
	q := ne.h.asked[1]
	ne.h.mu.Unlock()
	if q.Kind != apps.ConfirmOpenURL || q.URL != "https://example.com/a?b=c#d" || q.Runner != "tab" {
		t.Fatalf("question %+v", q)
	}
	// The strict frame: http, userinfo, an unknown key are refused before
	// anyone is asked.
	for i, f := range []map[string]any{
		{"url": "http://example.com/"}, {"url": "https://u:p@example.com/"}, {"url": "https://example.com/", "target": "_blank"},
	} {
		id := fmt.Sprintf("bad%d", i)
		msg := map[string]any{"v": 1, "type": "snug:open-url-request", "requestId": id, "instanceId": ne.inst}
		for k, v := range f {
			msg[k] = v
		}
		ne.h.sendJSON("tab", msg)
		if got := ne.tb.frameOf(t, "snug:open-url-result", id); got["status"] != "refused" {
			t.Errorf("%v: %v", f, got)
		}
	}
	ne.h.mu.Lock()
	defer ne.h.mu.Unlock()
	if len(ne.h.asked) != 2 {
		t.Fatalf("asked %d times", len(ne.h.asked))
	}
}

// Running app code can never propose a connection: no frame creates a
// snug_connections row, and the app's SQL cannot reach the hub's tables.
func TestAppsCannotProposeConnections(t *testing.T) {
	ne := startNet(t)
	for i, f := range []map[string]any{
		{"type": "snug:app-announce", "appId": "x", "displayName": "x", "connection": json.RawMessage(todoRequirement)},
		{"type": "snug:app-event", "event": "connection_requirement", "data": json.RawMessage(todoRequirement)},
		{"type": "snug:db-request", "requestId": "d1", "instanceId": ne.inst, "op": "exec",
			"sql": "INSERT INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance, status, created_at, updated_at) VALUES ('a','b','{}',1,'user','approved','x','x')"},
		{"type": "snug:db-request", "requestId": "d2", "instanceId": ne.inst, "op": "kvSet", "key": "snug_connections", "value": json.RawMessage(todoRequirement)},
		{"type": "snug:net-request", "requestId": "d3", "instanceId": ne.inst, "url": "https://api.todo.example/", "method": "GET", "appId": ne.app},
	} {
		f["v"] = 1
		ne.h.sendJSON("tab", f)
		_ = i
	}
	ne.tb.frameOf(t, "snug:db-response", "d2")
	if list := call[[]apps.Connection](t, ne.c, apps.MethodConnections, apps.ConnectionsParams{App: ne.app}); len(list) != 0 {
		t.Fatalf("an app frame made a connection: %+v", list)
	}
}

// The connect flow is the tab's, for its own app, with exactly the
// requirement the user reviewed.
func TestConnectFlowRules(t *testing.T) {
	ne := startNet(t)
	ctx := t.Context()
	d := call[apps.Connection](t, ne.c, apps.MethodConnectionDeclare, apps.DeclareParams{App: ne.app, Requirement: todoRequirement})
	for name, p := range map[string]apps.ApproveParams{
		"another runner":    {Runner: "nope", Slot: "todo", Reviewed: string(d.Requirement), Credentials: map[string]string{"api_key": "k"}},
		"stale review":      {Runner: "tab", Slot: "todo", Reviewed: `{"slot":"todo"}`, Credentials: map[string]string{"api_key": "k"}},
		"missing field":     {Runner: "tab", Slot: "todo", Reviewed: string(d.Requirement)},
		"undeclared field":  {Runner: "tab", Slot: "todo", Reviewed: string(d.Requirement), Credentials: map[string]string{"api_key": "k", "x": "y"}},
		"no such slot":      {Runner: "tab", Slot: "none", Reviewed: string(d.Requirement), Credentials: map[string]string{"api_key": "k"}},
		"reapprove nothing": {Runner: "tab", Slot: "todo", Reviewed: string(d.Requirement)},
	} {
		method := apps.ProviderApprove
		if strings.HasPrefix(name, "reapprove") {
			method = apps.ProviderReapprove
		}
		if _, err := ne.h.conn.Call(ctx, method, p); err == nil {
			t.Errorf("%s: approved", name)
		}
	}
	if list := call[[]apps.Connection](t, ne.c, apps.MethodConnections, apps.ConnectionsParams{App: ne.app}); list[0].Status != "declared" {
		t.Fatalf("%+v", list)
	}
	// A change to the approved row is staged, with its diff, and grants
	// nothing until re-approved.
	ne.connect(t)
	wider := strings.Replace(todoRequirement, `["api.todo.example"]`, `["api.todo.example","evil.example"]`, 1)
	s := call[apps.Connection](t, ne.c, apps.MethodConnectionDeclare, apps.DeclareParams{App: ne.app, Requirement: wider})
	if !s.NeedsReapproval || strings.Join(s.AllowedHosts, ",") != "api.todo.example" || len(s.Diff) != 1 ||
		s.Diff[0].Path != "declaredApiHosts[1]" || s.Diff[0].New != `"evil.example"` {
		t.Fatalf("staged: %+v", s)
	}
	raw, err := ne.h.conn.Call(ctx, apps.ProviderReapprove, apps.ApproveParams{Runner: "tab", Slot: "todo", Reviewed: string(s.Pending)})
	if err != nil {
		t.Fatal(err)
	}
	var r apps.Connection
	json.Unmarshal(raw, &r)
	if r.NeedsReapproval || strings.Join(r.AllowedHosts, ",") != "api.todo.example,evil.example" || r.RequirementVersion != 2 {
		t.Fatalf("re-approved: %s", raw)
	}
	// The slot cap, from the command line.
	for i := range 7 {
		call[apps.Connection](t, ne.c, apps.MethodConnectionDeclare, apps.DeclareParams{App: ne.app,
			Requirement: strings.Replace(todoRequirement, `"slot":"todo"`, fmt.Sprintf(`"slot":"s%d"`, i), 1)})
	}
	if _, err := callErr(ne.c, apps.MethodConnectionDeclare, apps.DeclareParams{App: ne.app,
		Requirement: strings.Replace(todoRequirement, `"slot":"todo"`, `"slot":"ninth"`, 1)}); !errors.Is(err, wire.Err(wire.CodeQueueFull)) {
		t.Fatalf("the ninth slot: %v", err)
	}
}

// An authorization-code connection signs in from the tab: the page gets
// the provider's authorize URL (PKCE S256, a signed state), the browser
// comes back with a code, and the hub exchanges it; the connection then
// reads as signed in, and the app's requests carry the token. A forged
// state signs nothing in.
func TestOAuthSignInInTheTab(t *testing.T) {
	ca, err := ssrftest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	var challenge, revoked atomic.Value
	var stuck atomic.Bool // the provider's revocation endpoint never answers
	srv, err := ssrftest.Serve(ca, []string{"api.cal.example", "auth.cal.example"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "auth.cal.example" && r.URL.Path == "/revoke" {
			r.ParseForm()
			revoked.Store(r.PostForm.Encode())
			if stuck.Load() {
				<-r.Context().Done()
			}
			return
		}
		if r.Host == "auth.cal.example" {
			r.ParseForm()
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if r.PostForm.Get("code") != "the-code" || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge.Load() {
				w.WriteHeader(400)
				return
			}
			fmt.Fprint(w, `{"access_token":"cal-token-1","expires_in":3600}`)
			return
		}
		fmt.Fprintf(w, `{"auth":%t}`, r.Header.Get("Authorization") == "Bearer cal-token-1")
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	n := ssrftest.NewNet()
	n.Answer("api.cal.example", "93.184.216.40")
	n.Answer("auth.cal.example", "93.184.216.40")
	n.Route("93.184.216.40:443", srv.Addr)
	e := start(t, "", func(c *hub.Config) { c.Net.Resolver, c.Net.Dial, c.Net.RootCAs = n, n.Dial, ca.Pool })
	c := e.client(client.Options{})
	appID := install(t, c, notes, nil).App.ID
	h := e.dialRunnerHost()
	tb := h.attach("tab", appID)
	inst := h.ready(tb)
	ctx := t.Context()
	const redirect = "https://abcdefghijklmnopabcdefghijklmnop.chromiumapp.org/"
	// authorize declares and approves a slot's connection, and returns the
	// state of its authorize URL; complete comes back with a code for it.
	authorize := func(slot string) string {
		d := call[apps.Connection](t, c, apps.MethodConnectionDeclare, apps.DeclareParams{App: appID, Requirement: `{"slot":"` + slot + `","provider":{"name":"Cal"},
		"kind":"oauth2_auth_code","fields":[{"key":"client_id","label":"Client ID","type":"text"}],
		"endpoints":{"authorizeUrl":"https://auth.cal.example/authorize","tokenUrl":"https://auth.cal.example/token",
		"revokeUrl":"https://auth.cal.example/revoke"},"declaredApiHosts":["api.cal.example"]}`})
		if _, err := h.conn.Call(ctx, apps.ProviderApprove, apps.ApproveParams{Runner: "tab", Slot: slot, Reviewed: string(d.Requirement),
			Credentials: map[string]string{"client_id": "cal-client"}}); err != nil {
			t.Fatal(err)
		}
		raw, err := h.conn.Call(ctx, apps.ProviderAuthorize, apps.AuthorizeParams{Runner: "tab", Slot: slot, RedirectURI: redirect})
		if err != nil {
			t.Fatal(err)
		}
		var ar apps.AuthorizeResult
		json.Unmarshal(raw, &ar)
		u, _ := url.Parse(ar.URL)
		challenge.Store(u.Query().Get("code_challenge"))
		if u.Host != "auth.cal.example" || u.Query().Get("code_challenge_method") != "S256" {
			t.Fatalf("authorize URL %s", ar.URL)
		}
		return u.Query().Get("state")
	}
	complete := func(slot, state string) (json.RawMessage, error) {
		return h.conn.Call(ctx, apps.ProviderComplete, apps.CompleteParams{Runner: "tab", Slot: slot,
			Callback: redirect + "?code=the-code&state=" + url.QueryEscape(state)})
	}
	state := authorize("cal")
	if _, err := complete("cal", state+"x"); err == nil {
		t.Fatal("a forged state signed in")
	}
	raw, err := complete("cal", state)
	if err != nil {
		t.Fatal(err)
	}
	var v apps.Connection
	json.Unmarshal(raw, &v)
	if v.SignIn != "connected" || strings.Contains(string(raw), "cal-token-1") {
		t.Fatalf("signed in: %s", raw)
	}
	h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:net-request", "requestId": "c1", "instanceId": inst, "url": "https://api.cal.example/events", "method": "GET"})
	if got := tb.frameOf(t, "snug:net-response", "c1"); got["body"] != `{"auth":true}` {
		t.Fatalf("the app's request: %v", got)
	}

	// Revoked in the tab: the token is revoked at the provider first, then
	// deleted here.
	raw, err = h.conn.Call(ctx, apps.ProviderRevoke, apps.RunnerSlotParams{Runner: "tab", Slot: "cal"})
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &v)
	if want := "client_id=cal-client&token=cal-token-1&token_type_hint=access_token"; v.Status != "revoked" || revoked.Load() != want {
		t.Fatalf("revoked %s; the provider was sent %v, want %s", raw, revoked.Load(), want)
	}
	if strings.Contains(e.log.String(), "cal-token-1") || strings.Contains(e.log.String(), "the-code") {
		t.Fatal("a token or the code is in the log")
	}

	// A provider that never answers the revocation does not hold up the
	// user's: past providerRevokeTimeout (lowered here) the connection is
	// revoked here all the same, and the log says the provider did not.
	if _, err := complete("cal2", authorize("cal2")); err != nil {
		t.Fatal(err)
	}
	stuck.Store(true)
	const bound = 300 * time.Millisecond
	defer hub.SetProviderRevokeTimeout(bound)()
	start := time.Now()
	raw, err = h.conn.Call(ctx, apps.ProviderRevoke, apps.RunnerSlotParams{Runner: "tab", Slot: "cal2"})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &v)
	if v.Status != "revoked" || took < bound || took > bound+4*time.Second {
		t.Fatalf("revoked %s after %v with the provider stuck, want revoked after about %v", raw, took, bound)
	}
	if !strings.Contains(e.log.String(), "the provider did not revoke the connection's token") {
		t.Fatalf("the log does not say the provider did not revoke:\n%s", e.log.String())
	}
}
