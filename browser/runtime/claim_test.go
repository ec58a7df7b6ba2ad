package runtime

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

func TestServiceDescription(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	k := f.r.Kind()
	if k.Name != browser.Kind || !slices.Equal(k.Required, browser.Required()) || !k.OwnerQuestions {
		t.Fatalf("kind %+v", k)
	}
	if err := k.CheckInstance(f.p.Instance()); err != nil {
		t.Fatalf("a chromium instance: %v", err)
	}
	if err := k.CheckInstance(wire.Instance{ID: "x", Family: "firefox"}); err == nil {
		t.Fatal("another family must be refused")
	}
	if slices.Contains(f.r.Offers(), browser.CapPersonalMode) {
		t.Fatal("restricted mode offered personal mode")
	}
	if personal := New(Config{Personal: true}, newTestHost()); !slices.Contains(personal.Offers(), browser.CapPersonalMode) {
		t.Fatal("personal mode not offered in personal mode")
	}
	if f.r.ProviderMethods() != nil {
		t.Fatal("a browser provider may send no requests")
	}
	if f.r.Joined(f.p); len(f.p.methods()) != 0 {
		t.Fatal("a provider that joined was sent a request")
	}

	// The table: every method, read-only and discovery as PROTOCOL.md says.
	readOnly := []string{browser.MethodInstances, browser.MethodTabs, browser.MethodObserve, browser.MethodReadPage,
		browser.MethodFrames, browser.MethodCapture, browser.MethodValidateLease}
	writing := []string{browser.MethodClaim, browser.MethodAct, browser.MethodBatch, browser.MethodRelease, browser.MethodReleaseSession}
	methods := f.r.Methods()
	if len(methods) != len(readOnly)+len(writing) {
		t.Fatalf("%d methods", len(methods))
	}
	for _, name := range append(readOnly, writing...) {
		m, ok := methods[name]
		if !ok || m.Handle == nil || m.Schema == nil {
			t.Errorf("%s: %+v", name, m)
		}
		if m.ReadOnly != slices.Contains(readOnly, name) {
			t.Errorf("%s: ReadOnly %v", name, m.ReadOnly)
		}
		if m.Discovery != (name == browser.MethodInstances || name == browser.MethodTabs) {
			t.Errorf("%s: Discovery %v", name, m.Discovery)
		}
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	h := newTestHost()
	if _, err := Register(Config{Personal: true, AllowOrigins: []string{"https://app.test"}})(h); err == nil {
		t.Fatal("--allow-origin with personal mode must be refused")
	}
	s, err := Register(Config{})(h)
	if err != nil {
		t.Fatal(err)
	}
	r := s.(*Runtime)
	if r.cfg.Journal != nil || r.cfg.Logger == nil {
		t.Fatalf("a host without a journal: journal %v (a typed nil?), logger %v", r.cfg.Journal, r.cfg.Logger)
	}
}

func TestInstances(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	bare := newFakeProvider(t, "bare", browser.Required()...)
	f.h.add(bare)
	other := newFakeProvider(t, "term", allCaps()...)
	other.kind = "terminal"
	f.h.add(other)

	got := must[[]browser.Instance](t, f.r.Instances, f.c, map[string]any{})
	if len(got) != 2 || got[0].ID != "inst" || got[1].ID != "bare" || got[0].Family != "chromium" || got[0].ProfileLabel != "Default profile" {
		t.Fatalf("instances %+v (browsers only, in the order they joined)", got)
	}
	for _, in := range got {
		if len(in.Capabilities) != len(browser.Features) {
			t.Errorf("%s: %d features, want all %d named", in.ID, len(in.Capabilities), len(browser.Features))
		}
		if !in.Capabilities["ax"] {
			t.Errorf("%s: ax must be on every provider", in.ID)
		}
		// Actions need dom.read, which the bare provider lacks.
		for _, feature := range []string{"keyboard", "appendText", "batch"} {
			if in.Capabilities[feature] != (in.ID == "inst") {
				t.Errorf("%s: %s = %v, want it exactly with dom.read", in.ID, feature, in.Capabilities[feature])
			}
		}
	}
	optional := []string{"screenshot", "frameDiscovery", "pageWindows", "sameOriginFrameRead", "sameOriginFrameQuery",
		"sameOriginFrameClick", "sameOriginFramePage"}
	for _, feature := range optional {
		if !got[0].Capabilities[feature] || got[1].Capabilities[feature] {
			t.Errorf("%s: %v with every capability, %v with the required ones", feature, got[0].Capabilities[feature], got[1].Capabilities[feature])
		}
	}
	// Frame reads need frames.list too.
	noList := newFakeProvider(t, "nolist", append(browser.Required(), browser.CapFrameRead, browser.CapFrameInput, browser.CapAXPage)...)
	f.h.add(noList)
	got = must[[]browser.Instance](t, f.r.Instances, f.c, map[string]any{"sessionId": "s"})
	if c := got[2].Capabilities; c["sameOriginFrameRead"] || c["sameOriginFrameClick"] || c["sameOriginFramePage"] || !c["pageWindows"] {
		t.Errorf("without frames.list: %v", c)
	}
	if len(f.p.methods()) != 0 {
		t.Errorf("instances asked the provider: %v", f.p.methods())
	}
}

func TestTabs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	listed := []browser.TabSummary{
		{ID: "inst:1", InstanceID: "inst", URL: "https://app.test/form", Title: "Form"},
		{ID: "inst:2", InstanceID: "inst", URL: "http://localhost:8080/", Title: "Local"},
		{ID: "inst:3", InstanceID: "inst", URL: "chrome://settings", Title: "Settings"},
		{ID: "inst:4", InstanceID: "inst", URL: "file:///etc/passwd", Title: "File"},
		{ID: "inst:5", InstanceID: "inst", URL: "https://user:pw@app.test/", Title: "Credentials"},
		{ID: "other:6", InstanceID: "other", URL: "https://app.test/", Title: "Another instance's"},
		{ID: "", InstanceID: "inst", URL: "https://app.test/", Title: "No ID"},
		{ID: strings.Repeat("t", 257), InstanceID: "inst", URL: "https://app.test/", Title: "Long ID"},
		{ID: "inst:9", InstanceID: "inst", URL: "https://other.test/", Title: "Other origin"},
	}
	f.p.on(browser.ProviderTabsList, func(any) (any, error) { return listed, nil })
	params := map[string]any{"sessionId": "s", "instanceId": "inst"}
	ids := func(tabs []browser.TabSummary) string {
		var out []string
		for _, tab := range tabs {
			out = append(out, tab.ID)
		}
		return strings.Join(out, " ")
	}
	if got := must[[]browser.TabSummary](t, f.r.Tabs, f.c, params); ids(got) != "inst:1 inst:2 inst:9" {
		t.Errorf("tabs %s: want the credential-free HTTP(S) tabs of the instance", ids(got))
	}
	allow := New(Config{AllowOrigins: []string{"https://app.test"}}, f.h)
	if got := must[[]browser.TabSummary](t, allow.Tabs, f.c, params); ids(got) != "inst:1" {
		t.Errorf("allowlisted tabs %s", ids(got))
	}

	f.p.fail(browser.ProviderTabsList, wire.CodeDeadlineExceeded)
	if _, err := invoke[any](t, f.r.Tabs, f.c, params); rpc.CodeOf(err) != wire.CodeDeadlineExceeded {
		t.Errorf("a provider error: %v", err)
	}
	f.p.answerRaw(browser.ProviderTabsList, `{"tabs":[]}`)
	if _, err := invoke[any](t, f.r.Tabs, f.c, params); !errors.Is(err, errProvider) {
		t.Errorf("a malformed tab list: %v, want errProvider", err)
	}
	if _, err := invoke[any](t, f.r.Tabs, f.c, map[string]any{"sessionId": "s", "instanceId": "gone"}); rpc.CodeOf(err) != wire.CodeConnectionLost {
		t.Errorf("an unknown instance: %v", err)
	}
	term := newFakeProvider(t, "term", allCaps()...)
	term.kind = "terminal"
	f.h.add(term)
	if _, err := invoke[any](t, f.r.Tabs, f.c, map[string]any{"sessionId": "s", "instanceId": "term"}); rpc.CodeOf(err) != wire.CodeConnectionLost || term.count(browser.ProviderTabsList) != 0 {
		t.Errorf("a provider of another kind: %v", err)
	}
}

func TestClaim(t *testing.T) {
	t.Parallel()
	t.Run("restricted", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Config{})
		before := time.Now()
		l := f.claim("s1")
		if l.Scope != lease.ScopeOrigin || l.Origin != "https://app.test" || l.Tab != "inst:1" || l.InstanceID != "inst" ||
			l.Token == "" || l.ID == "" || l.Owner != `["1","s1"]` {
			t.Fatalf("lease %+v", l)
		}
		if exp := time.UnixMilli(l.ExpiresAt); exp.Before(before.Add(lease.TTL).Truncate(time.Millisecond)) || exp.After(time.Now().Add(lease.TTL)) {
			t.Errorf("expires at %v, want 5 minutes from now", exp)
		}
		grants := f.p.sent(browser.ProviderLeaseGrant)
		if len(grants) != 1 {
			t.Fatalf("%d grants", len(grants))
		}
		g := grants[0].(*grantParams)
		if g.Client.Label != f.c.label || g.Lease.ID != l.ID || g.Lease.Token != l.Token || g.Lease.Scope != lease.ScopeOrigin ||
			g.Lease.Origin != l.Origin || g.Lease.ExpiresAt != l.ExpiresAt || g.Lease.Tab != l.Tab {
			t.Errorf("grant sent %+v %+v", g.Lease, g.Client)
		}
		if _, err := invoke[any](t, f.r.Claim, newFakeClient(2), map[string]any{"sessionId": "x", "instanceId": "inst", "tab": "inst:1"}); rpc.CodeOf(err) != wire.CodeLeaseBusy {
			t.Errorf("a claim of a leased tab: %v, want LEASE_BUSY", err)
		}
	})

	t.Run("personal", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Config{Personal: true})
		f.p.owner = false // personal mode asks no one
		l := f.claim("s")
		if l.Scope != lease.ScopeTab || l.Origin != "https://app.test" {
			t.Fatalf("personal lease %+v", l)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		t.Parallel()
		params := map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1"}
		for _, tc := range []struct {
			name    string
			cfg     Config
			script  func(p *fakeProvider)
			want    wire.Code
			granted bool // lease.grant was sent
		}{
			{"restricted mode on a provider the owner did not start", Config{}, func(p *fakeProvider) { p.owner = false }, wire.CodePolicyDenied, false},
			{"an origin off the allowlist", Config{AllowOrigins: []string{"https://other.test"}}, nil, wire.CodeStaleTarget, false},
			{"a tab not listed", Config{}, func(p *fakeProvider) {
				p.on(browser.ProviderTabsList, func(any) (any, error) { return []browser.TabSummary{}, nil })
			}, wire.CodeStaleTarget, false},
			{"a tab that is not HTTP(S)", Config{Personal: true}, func(p *fakeProvider) { p.page.url = "chrome://newtab" }, wire.CodeStaleTarget, false},
			{"the tab list fails", Config{}, func(p *fakeProvider) { p.fail(browser.ProviderTabsList, wire.CodeInternalError) }, wire.CodeInternalError, false},
			{"the owner denies", Config{}, func(p *fakeProvider) { p.fail(browser.ProviderLeaseGrant, wire.CodePolicyDenied) }, wire.CodePolicyDenied, true},
			{"the tab is gated already", Config{}, func(p *fakeProvider) { p.fail(browser.ProviderLeaseGrant, wire.CodeLeaseBusy) }, wire.CodeLeaseBusy, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := newFixture(t, tc.cfg)
				if tc.script != nil {
					tc.script(f.p)
				}
				if _, err := invoke[any](t, f.r.Claim, f.c, params); rpc.CodeOf(err) != tc.want {
					t.Fatalf("%v, want %s", err, tc.want)
				}
				if got := f.p.count(browser.ProviderLeaseGrant); got != map[bool]int{true: 1}[tc.granted] {
					t.Fatalf("lease.grant sent %d times", got)
				}
				if len(f.r.leases.Live()) != 0 {
					t.Fatal("a refused claim left a lease")
				}
				if tc.granted { // the tab was reserved for the grant: it is free again
					f.p.serveDefaults()
					f.claim("s")
				}
			})
		}
	})

	t.Run("a grant that breaks the contract", func(t *testing.T) {
		t.Parallel()
		for name, answer := range map[string]string{
			"not granted":       `{"granted":false,"documentEpoch":"F:L1"}`,
			"no document epoch": `{"granted":true}`,
			"not an object":     `["granted"]`,
		} {
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, Config{})
				f.p.answerRaw(browser.ProviderLeaseGrant, answer)
				if _, err := invoke[any](t, f.r.Claim, f.c, map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1"}); !errors.Is(err, errProvider) {
					t.Fatalf("%v, want errProvider", err)
				}
				// Whatever the provider gated is revoked, and the tab is free.
				f.p.waitCalls(t, browser.ProviderLeaseRevoke, 1)
				grant := f.p.sent(browser.ProviderLeaseGrant)[0].(*grantParams)
				if revoked := f.p.sent(browser.ProviderLeaseRevoke)[0].(*leaseParams); revoked.Lease.ID != grant.Lease.ID {
					t.Fatalf("revoked %s, granted %s", revoked.Lease.ID, grant.Lease.ID)
				}
				f.p.serveDefaults()
				f.claim("s")
			})
		}
	})

	t.Run("a pending claim ends with its session", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Config{})
		release := f.p.hold(browser.ProviderLeaseGrant)
		defer release()
		errc := make(chan error, 1)
		go func() {
			_, err := invoke[any](t, f.r.Claim, f.c, map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1"})
			errc <- err
		}()
		f.p.waitCalls(t, browser.ProviderLeaseGrant, 1)
		if _, err := invoke[any](t, f.r.Claim, newFakeClient(2), map[string]any{"sessionId": "x", "instanceId": "inst", "tab": "inst:1"}); rpc.CodeOf(err) != wire.CodeLeaseBusy {
			t.Errorf("a claim of a tab being claimed: %v, want LEASE_BUSY", err)
		}
		must[map[string]bool](t, f.r.ReleaseSession, f.c, map[string]any{"sessionId": "s"})
		if err := <-errc; rpc.CodeOf(err) != wire.CodeLeaseRevoked {
			t.Fatalf("the pending claim: %v, want LEASE_REVOKED", err)
		}
		release()
		f.claim("s") // the tab is free
	})
}

func TestReleaseAndLeaseEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	other := newFakeClient(2)
	f.h.connect(other)
	session := map[string]any{"sessionId": "s"}

	// Release: the owner is told, the provider drops the gate.
	l := f.claim("s")
	if _, err := invoke[any](t, f.r.Release, other, map[string]any{"sessionId": "s", "leaseId": l.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("release by another connection: %v, want LEASE_REVOKED", err)
	}
	if got := must[map[string]bool](t, f.r.Release, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID}); !got["released"] {
		t.Fatalf("release: %v", got)
	}
	if _, err := invoke[any](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("a released lease: %v", err)
	}
	f.p.waitCalls(t, browser.ProviderLeaseRevoke, 1)
	if got := f.c.revocations(t); !slices.Equal(got, []string{l.ID}) || len(other.revocations(t)) != 0 {
		t.Fatalf("events: owner %v, other %v", got, other.revocations(t))
	}
	if got := must[map[string]bool](t, f.r.Release, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID}); !got["released"] {
		t.Fatal("releasing an ended lease is a no-op")
	}

	// ReleaseSession: that session's leases only.
	mine := f.claim("s")
	f.p.page.edit(func(pg *fakePage) { pg.url = "https://app.test/b" })
	f.p.on(browser.ProviderTabsList, func(any) (any, error) {
		return []browser.TabSummary{{ID: "inst:2", InstanceID: "inst", URL: "https://app.test/b"}}, nil
	})
	theirs := must[browser.LeaseResult](t, f.r.Claim, f.c, map[string]any{"sessionId": "t", "instanceId": "inst", "tab": "inst:2"})
	must[map[string]bool](t, f.r.ReleaseSession, f.c, session)
	if _, err := invoke[any](t, f.r.ValidateLease, f.c, map[string]any{"sessionId": "s", "leaseId": mine.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("a lease of the released session: %v", err)
	}
	must[map[string]bool](t, f.r.ValidateLease, f.c, map[string]any{"sessionId": "t", "leaseId": theirs.ID})
	f.p.waitCalls(t, browser.ProviderLeaseRevoke, 2)

	// ClientGone: no one to tell (even were the host still to know the
	// connection), the provider drops the gate.
	f.r.ClientGone(f.c.conn)
	f.p.waitCalls(t, browser.ProviderLeaseRevoke, 3)
	if got := f.c.revocations(t); !slices.Equal(got, []string{l.ID, mine.ID}) {
		t.Fatalf("events after the client left: %v", got)
	}
	if len(f.r.leases.Live()) != 0 {
		t.Fatal("a lease outlived its connection")
	}
}

func TestClientGoneForgetsItsFences(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	o := f.observe("s", l.ID)
	req := map[string]any{"requestId": "a1", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "fill", "ref": refOf(t, o.Nodes, "textbox", "Your name"), "text": "Ada"}}
	f.act("s", req)
	otherConn := newFakeClient(12) // conn:12 shares conn:1's prefix as a string
	f.h.connect(otherConn)
	f.r.fences["conn:12\x00s\x00a1"] = &fence{}
	f.r.ClientGone(f.c.conn)
	if len(f.r.fences) != 1 || f.r.results.order.Len() != 0 {
		t.Fatalf("fences left %d (want only conn 12's), results %d", len(f.r.fences), f.r.results.order.Len())
	}
}

// TestProviderEndsLeases runs in a synctest bubble: synctest.Wait lets the
// lease.revoke calls the runtime sends in the background land, so that one
// that should not be sent is seen missing.
func TestProviderEndsLeases(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testProviderEndsLeases)
}

func testProviderEndsLeases(t *testing.T) {
	f := newFixture(t, Config{})
	second := newFakeProvider(t, "inst2", allCaps()...)
	f.h.add(second)
	claimOn := func(p *fakeProvider, session string) browser.LeaseResult {
		return must[browser.LeaseResult](t, f.r.Claim, f.c, map[string]any{"sessionId": session, "instanceId": p.id, "tab": p.id + ":1"})
	}
	event := func(p *fakeProvider, name string, v any) {
		data, _ := json.Marshal(v)
		f.r.Event(p, name, data)
	}
	l1 := claimOn(f.p, "s")
	l2 := claimOn(second, "s")

	// A revocation naming another instance's lease, or malformed: ignored.
	event(second, browser.ProviderEventLeaseRevoked, map[string]string{"leaseId": l1.ID})
	f.r.Event(f.p, browser.ProviderEventLeaseRevoked, json.RawMessage(`{"leaseId":`))
	event(f.p, "lease.unknown", map[string]string{"leaseId": l1.ID})
	must[map[string]bool](t, f.r.ValidateLease, f.c, map[string]any{"sessionId": "s", "leaseId": l1.ID})

	// page.changed wakes whoever waits on the page; another instance's is ignored.
	p := f.r.page(l1.ID)
	wake := p.changes()
	event(second, browser.ProviderEventPageChanged, map[string]any{"tab": l1.Tab, "leaseId": l1.ID, "sequence": 1})
	f.r.Event(f.p, browser.ProviderEventPageChanged, json.RawMessage(`[]`))
	select {
	case <-wake:
		t.Fatal("another instance's page.changed woke the page")
	default:
	}
	event(f.p, browser.ProviderEventPageChanged, map[string]any{"tab": l1.Tab, "leaseId": l1.ID, "sequence": 2})
	select {
	case <-wake:
	default:
		t.Fatal("page.changed did not wake the page")
	}

	// The browser revokes l1 (Stop): the owner is told, the provider is not
	// asked to revoke what it ended.
	event(f.p, browser.ProviderEventLeaseRevoked, map[string]string{"leaseId": l1.ID})
	if _, err := invoke[any](t, f.r.ValidateLease, f.c, map[string]any{"sessionId": "s", "leaseId": l1.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("a lease the browser revoked: %v", err)
	}
	if got := f.c.revocations(t); !slices.Equal(got, []string{l1.ID}) {
		t.Fatalf("events %v", got)
	}
	if synctest.Wait(); len(f.p.revoked()) != 0 {
		t.Fatalf("lease.revoke sent for %v, which the browser revoked itself", f.p.revoked())
	}

	// The second browser leaves: its leases end, the owner is told, no one
	// is asked to revoke (even were the host still to know the provider).
	f.r.Gone(second)
	f.h.remove(second)
	if got := f.c.revocations(t); !slices.Equal(got, []string{l1.ID, l2.ID}) {
		t.Fatalf("events %v", got)
	}
	if synctest.Wait(); len(second.revoked()) != 0 {
		t.Fatalf("lease.revoke sent to a browser that left, for %v", second.revoked())
	}
	// A lease the client releases is revoked at the provider.
	l3 := claimOn(f.p, "s")
	must[map[string]bool](t, f.r.Release, f.c, map[string]any{"sessionId": "s", "leaseId": l3.ID})
	if synctest.Wait(); !slices.Equal(f.p.revoked(), []string{l3.ID}) {
		t.Fatalf("lease.revoke sent for %v, want the released lease %s", f.p.revoked(), l3.ID)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{AllowOrigins: []string{"https://app.test"}})
	l := f.claim("s")
	data, _ := json.Marshal(f.r.Status())
	var st browser.Status
	json.Unmarshal(data, &st)
	if st.AccessMode != browser.AccessRestricted || len(st.AllowOrigins) != 1 || len(st.Instances) != 1 || len(st.Leases) != 1 ||
		st.Leases[0].ID != l.ID || st.Leases[0].Origin != l.Origin {
		t.Fatalf("status %s", data)
	}
	if strings.Contains(string(data), l.Token) {
		t.Fatal("the status shows a lease token")
	}
	if st := New(Config{Personal: true}, f.h).Status().(*browser.Status); st.AccessMode != browser.AccessPersonal {
		t.Fatalf("personal status %+v", st)
	}
}
