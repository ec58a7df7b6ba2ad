package test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// rebootSession is a durable client's view of the scripted page: its
// client (with the journalKey, which a real agent keeps across broker
// restarts), a lease and the button to click.
type rebootSession struct {
	c     *client.Client
	prov  *scripted
	lease string
	epoch string
	ref   string
}

// startRebootSession connects a scripted provider and a durable client to
// b, claims the tab and observes it.
func startRebootSession(t *testing.T, b *testenv.Broker) rebootSession {
	t.Helper()
	prov := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{"DSH demo"}
	standardPage(prov, &epoch, &text)
	c := b.Client(t, client.Options{JournalKey: journalKey})
	l := claimTab(t, c, "reboot")
	o := observe(t, c, "reboot", l.ID)
	return rebootSession{c: c, prov: prov, lease: l.ID, epoch: o.DocumentEpoch, ref: refOf(t, o, "button", "Greet")}
}

// click is the act params of one click on the button with requestID.
func (r rebootSession) click(requestID string) map[string]any {
	return map[string]any{"sessionId": "reboot", "request": map[string]any{
		"requestId": requestID, "leaseId": r.lease, "documentEpoch": r.epoch,
		"action": map[string]any{"kind": "click", "ref": r.ref, "expected": map[string]any{"kind": "text", "text": "Hello, Ada!"}},
	}}
}

func (r rebootSession) act(t *testing.T, params map[string]any) (browser.ActionResult, error) {
	t.Helper()
	raw, err := r.c.Call(context.Background(), "browser.act", params)
	var res browser.ActionResult
	if err == nil {
		json.Unmarshal(raw, &res)
	}
	return res, err
}

func (r rebootSession) clicks() int {
	m := r.prov.methods()
	return len(slices.DeleteFunc(m, func(s string) bool { return s != "input.click" }))
}

// reboot stops the broker (with SIGTERM, unless it already died), deletes
// its runtime directory (token, socket, lock) as a reboot or a logout
// does, and starts it again on the same state directory.
func reboot(t *testing.T, b *testenv.Broker, env ...string) {
	t.Helper()
	b.Stop(t)
	if err := os.RemoveAll(b.RuntimeDir); err != nil {
		t.Fatal(err)
	}
	b.Env = env
	b.Start(t)
}

// TestJournalSurvivesReboot: the journal's integrity key lives with the
// journal, so a new runtime directory (a new auth token) changes nothing:
// actions work after a reboot, and a retry of an action left uncertain by
// a crash still answers RECOVERY_REQUIRED. Real broker processes, real
// SIGKILL (failpoint after-intent), a scripted provider.
func TestJournalSurvivesReboot(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	token := b.Token(t)
	r := startRebootSession(t, b)
	done := r.click("before-reboot")
	if res, err := r.act(t, done); err != nil || res.Outcome != "succeeded" {
		t.Fatalf("act before the reboot: %+v, %v", res, err)
	}

	reboot(t, b)
	if b.Token(t) == token {
		t.Fatal("the new runtime directory has the old token")
	}
	r = startRebootSession(t, b)
	if res, err := r.act(t, r.click("after-reboot")); err != nil || res.Outcome != "succeeded" || res.Code != "" {
		t.Fatalf("act after the reboot: %+v, %v\n%s", res, err, tail(b.Stderr.String()))
	}
	// A retry of the action from before the reboot is still recognized.
	if res, err := r.act(t, done); err != nil || res.Code != wire.CodeRecoveryRequired || res.Recovery == nil ||
		res.Recovery.State != "settled" || res.Recovery.PriorOutcome != "succeeded" {
		t.Fatalf("retry of an action from before the reboot: %+v, %v", res, err)
	}

	// An action whose broker is killed after its intent is recorded, then
	// a reboot: its retry must say it may have happened, and not run.
	reboot(t, b, "DSH_FAILPOINT=after-intent")
	r = startRebootSession(t, b)
	uncertain := r.click("uncertain")
	if _, err := r.act(t, uncertain); !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
		t.Fatalf("act at the failpoint: %v; the broker should have died", err)
	}
	<-b.Exited()
	reboot(t, b)
	r = startRebootSession(t, b)
	res, err := r.act(t, uncertain)
	if err != nil || res.Code != wire.CodeRecoveryRequired || res.Recovery == nil ||
		res.Recovery.State != "reserved" || res.Dispatch != "dispatched" {
		t.Fatalf("retry of an uncertain action after a reboot: %+v, %v\n%s", res, err, tail(b.Stderr.String()))
	}
	if n := r.clicks(); n != 0 {
		t.Fatalf("the retry dispatched %d clicks", n)
	}
	if res, err := r.act(t, r.click("after-crash")); err != nil || res.Outcome != "succeeded" {
		t.Fatalf("act after the crash and reboot: %+v, %v", res, err)
	}
	if moved, _ := filepath.Glob(filepath.Join(b.StateDir, "*.legacy-*")); len(moved) != 0 {
		t.Fatalf("a journal was set aside: %v", moved)
	}
}

// tail is the end of a broker log, for a failure message.
func tail(log string) string {
	if i := strings.LastIndex(log[:max(0, len(log)-3000)], "\n"); i >= 0 {
		return log[i+1:]
	}
	return log
}

// TestJournalLegacySetAside: a journal of the first format, keyed by an
// auth token the broker no longer has, cannot be verified: the broker
// moves it aside, says so in its log and in broker status, and acts with a
// new journal.
func TestJournalLegacySetAside(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	b.Stop(t)
	path := filepath.Join(b.StateDir, "journal.db")
	os.Remove(path)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		tx.CreateBucket([]byte("records"))
		meta, _ := tx.CreateBucket([]byte("meta"))
		meta.Put([]byte("format"), []byte("dsh-journal/1"))
		return meta.Put([]byte("check"), make([]byte, 32)) // the MAC of a token long gone
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	b.Start(t)
	out, _, _ := testenv.Run(t, nil, "status", "--runtime-dir", b.RuntimeDir)
	if !strings.Contains(out, "cannot be verified") || !strings.Contains(out, "journal.db.legacy-") {
		t.Fatalf("broker status does not say the old journal was set aside:\n%s", out)
	}
	if !strings.Contains(b.Stderr.String(), "journal.db.legacy-") {
		t.Fatalf("the log does not say the old journal was set aside:\n%s", b.Stderr)
	}
	r := startRebootSession(t, b)
	if res, err := r.act(t, r.click("after")); err != nil || res.Outcome != "succeeded" {
		t.Fatalf("act with the new journal: %+v, %v", res, err)
	}
}
