package runtime

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/wire"
)

// overseenHost is the test host with the broker's owner side: it counts
// the grant changes the runtime reports and hands out a real activity log.
type overseenHost struct {
	*testHost
	changes atomic.Int32
	log     *activity.Log
}

func (h *overseenHost) GrantsChanged()          { h.changes.Add(1) }
func (h *overseenHost) Activity() *activity.Log { return h.log }

// newOverseen is a fixture whose host is overseen, with a real activity log
// (and a real journal when durable).
func newOverseen(t *testing.T, durable bool) (*actOn, *overseenHost, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, activity.FileName)
	h := &overseenHost{testHost: newTestHost(), log: activity.Open(path, activity.Options{})}
	t.Cleanup(func() { h.log.Close() })
	cfg := Config{}
	if durable {
		j := journal.Open(filepath.Join(dir, "journal.db"), journal.Options{})
		t.Cleanup(func() { j.Close() })
		cfg.Journal = j
	}
	reg, err := Register(cfg)(h)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, h: h.testHost, p: newFakeProvider(t, "inst", allCaps()...), c: newFakeClient(1), clock: &clock{}}
	f.h.add(f.p)
	f.h.connect(f.c)
	f.r = reg.(*Runtime)
	if durable {
		f.c.journalKey = strings.Repeat("ef", 32)
	}
	l := f.claim("s")
	return &actOn{f, l, f.observe("s", l.ID)}, h, path
}

func entries(h *overseenHost) []activity.Entry {
	return h.log.Query(activity.Query{Limit: activity.MaxQuery}).Entries
}

// TestActivityLogged: each action is one entry — agent, tab, origin,
// kind, target, typed text as its length — and no typed text reaches the
// log or its file.
func TestActivityLogged(t *testing.T) {
	t.Parallel()
	a, h, path := newOverseen(t, false)
	const secret = "correct horse battery staple"
	box, greet := a.ref("textbox", "Your name"), a.ref("button", "Greet")
	fill := a.request("f", map[string]any{"kind": "fill", "ref": box, "text": secret, "expected": expect("never shown")})
	fill["timeoutMs"] = 300
	a.act("s", fill)
	a.act("s", a.request("k", map[string]any{"kind": "press", "ref": greet, "key": "Enter"}))
	a.act("s", a.request("c", map[string]any{"kind": "click", "ref": "r-unknown"}))
	got := entries(h)
	if len(got) != 3 {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	stale, press, filled := got[0], got[1], got[2]
	if fill := filled; fill.Agent != a.c.label || fill.Conn != 1 || fill.Tab != a.lease.Tab || fill.Origin != "https://app.test" || fill.Kind != "fill" ||
		fill.Role != "textbox" || fill.Name != "Your name" || fill.TextLength == nil || *fill.TextLength != len(secret) || fill.Step != nil ||
		fill.State != activity.StateDone || fill.Dispatch != "observed" {
		t.Fatalf("fill entry %+v", filled)
	}
	if press.Kind != "press" || press.Key != "Enter" || press.Role != "button" || press.Name != "Greet" || press.TextLength != nil || press.Outcome != "unknown" {
		t.Fatalf("press entry %+v", press)
	}
	if stale.Kind != "click" || stale.Role != "" || stale.Outcome != "failed" || stale.Dispatch != "notDispatched" || stale.Code != string(wire.CodeStaleTarget) {
		t.Fatalf("stale click entry %+v", stale)
	}
	data, _ := os.ReadFile(path)
	for _, s := range []string{secret, "horse", "never shown", "r-unknown", `"f"`} {
		if bytes.Contains(data, []byte(s)) {
			t.Fatalf("the activity log holds %q:\n%s", s, data)
		}
	}
}

// TestActivityLoggedBatchSteps: every attempted step is an entry with its
// index; a step the client did not approve is one too, refused.
func TestActivityLoggedBatchSteps(t *testing.T) {
	t.Parallel()
	a, h, _ := newOverseen(t, false)
	greet := a.ref("button", "Greet")
	a.c.approve = deny(1, map[string]bool{"allowed": false})
	press := map[string]any{"kind": "press", "ref": greet, "key": "Enter", "expected": expect("DSH demo")}
	r := a.batch(a.plan("b", press, press, press))
	if statuses(r) != "attempted:succeeded attempted:failed:POLICY_DENIED notRun" {
		t.Fatalf("%s", statuses(r))
	}
	got := entries(h)
	if len(got) != 2 || got[1].Step == nil || *got[1].Step != 0 || got[1].Outcome != "succeeded" || got[1].Key != "Enter" || got[1].Name != "Greet" {
		t.Fatalf("first step's entry: %+v", got)
	}
	if d := got[0]; d.Step == nil || *d.Step != 1 || d.Dispatch != "notDispatched" || d.Code != string(wire.CodePolicyDenied) {
		t.Fatalf("the refused step's entry %+v", d)
	}
}

// TestActivityAgreesWithTheJournal: for a durable action the log's outcome
// and dispatch are the journal's, the uncertain case included (an input
// whose dispatch failed midway).
func TestActivityAgreesWithTheJournal(t *testing.T) {
	t.Parallel()
	a, h, _ := newOverseen(t, true)
	box := a.ref("textbox", "Your name")
	j := a.r.cfg.Journal.(*journal.Journal)
	check := func(requestID string) {
		t.Helper()
		rec, err := j.Lookup(a.r.identify(a.c, "s", requestID, nil).key)
		if err != nil || rec == nil {
			t.Fatalf("%s: journal %+v %v", requestID, rec, err)
		}
		e := entries(h)[0]
		if e.Outcome != rec.Outcome || e.Dispatch != rec.Dispatch {
			t.Fatalf("%s: log says %s/%s, journal %s/%s", requestID, e.Outcome, e.Dispatch, rec.Outcome, rec.Dispatch)
		}
	}
	a.act("s", a.request("ok", map[string]any{"kind": "fill", "ref": box, "text": "Ada"}))
	check("ok")
	a.p.fail(browser.ProviderInputText, wire.CodeInternalError) // failed midway: it may have happened
	res := a.act("s", a.request("midway", map[string]any{"kind": "fill", "ref": box, "text": "Ada"}))
	if res.Outcome != "unknown" || res.Dispatch != "dispatched" {
		t.Fatalf("%+v", res)
	}
	check("midway")
}

// TestOwnerStop: Stop ends one client's leases (the client and the
// extension are told), while another client keeps its own; Stop(0) ends
// every lease. Grants lists them, and each change is reported.
func TestOwnerStop(t *testing.T) {
	t.Parallel()
	a, h, _ := newOverseen(t, false)
	other := newFakeClient(2)
	a.h.connect(other)
	a.p.on(browser.ProviderTabsList, func(any) (any, error) { // a second tab
		return []browser.TabSummary{{ID: "inst:2", InstanceID: "inst", URL: pageURL}}, nil
	})
	ol := must[browser.LeaseResult](t, a.r.Claim, other, map[string]any{"sessionId": "o", "instanceId": "inst", "tab": "inst:2"})
	grants := a.r.Grants()
	if len(grants) != 2 || grants[0].Conn != 1 || grants[1].Conn != 2 || grants[0].Kind != browser.Kind || grants[1].ID != ol.ID ||
		grants[0].Origin != "https://app.test" || grants[0].Scope != "origin" || grants[0].ExpiresAt.IsZero() {
		t.Fatalf("grants %+v", grants)
	}
	before := h.changes.Load()
	if n := a.r.Stop(1); n != 1 {
		t.Fatalf("Stop(1) ended %d leases", n)
	}
	if got := a.c.revocations(t); len(got) != 1 || got[0] != a.lease.ID {
		t.Fatalf("client 1 told %v", got)
	}
	a.p.waitCalls(t, browser.ProviderLeaseRevoke, 1)
	if got := a.r.Grants(); len(got) != 1 || got[0].ID != ol.ID {
		t.Fatalf("after Stop(1): %+v", got)
	}
	if len(other.revocations(t)) != 0 {
		t.Fatal("the other client lost its lease")
	}
	if _, err := invoke[any](t, a.r.Observe, a.c, map[string]any{"sessionId": "s", "leaseId": a.lease.ID}); err == nil {
		t.Fatal("the stopped lease still reads")
	}
	if n := a.r.Stop(0); n != 1 || len(a.r.Grants()) != 0 {
		t.Fatalf("Stop(0) ended %d", n)
	}
	if h.changes.Load() != before+2 {
		t.Fatalf("%d changes reported, want 2", h.changes.Load()-before)
	}
}
