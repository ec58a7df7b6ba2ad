package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// newCounter is a leased, observed page with a button "Add one" that
// counts its clicks and presses in the text "Clicks: N".
func newCounter(t *testing.T, cfg Config) *actOn {
	f := newFixture(t, cfg)
	clicks := 0
	f.p.page.edit(func(pg *fakePage) {
		pg.add("add", "2", axNode{BackendNodeID: 10, Role: "button", Name: "Add one"})
		pg.add("count", "2", axNode{Role: "StaticText", Name: "Clicks: 0"})
	})
	add := func(any) (any, error) {
		f.p.page.edit(func(pg *fakePage) {
			clicks++
			pg.nodes[len(pg.nodes)-1].Name = fmt.Sprint("Clicks: ", clicks)
		})
		return map[string]bool{"dispatched": true}, nil
	}
	f.p.on(browser.ProviderInputClick, add)
	f.p.on(browser.ProviderInputKey, add)
	l := f.claim("s")
	return &actOn{f, l, f.observe("s", l.ID)}
}

// plan is the params of a batch of steps (actions) under approval "ap-ID".
func (a *actOn) plan(requestID string, steps ...map[string]any) map[string]any {
	var list []map[string]any
	for _, st := range steps {
		list = append(list, map[string]any{"action": st})
	}
	return map[string]any{"sessionId": "s", "approvalId": "ap-" + requestID, "request": map[string]any{
		"requestId": requestID, "leaseId": a.lease.ID, "documentEpoch": a.obs.DocumentEpoch, "steps": list}}
}

func (a *actOn) batch(params map[string]any) browser.BatchResult {
	a.t.Helper()
	return must[browser.BatchResult](a.t, a.r.Batch, a.c, params)
}

// press presses Enter on Add one, expecting the count.
func (a *actOn) press(count int) map[string]any {
	return map[string]any{"kind": "press", "ref": a.ref("button", "Add one"), "key": "Enter", "expected": expect(fmt.Sprint("Clicks: ", count))}
}

func statuses(r browser.BatchResult) string {
	var out []string
	for _, s := range r.Steps {
		st := s.Status
		if s.Result != nil {
			st += ":" + s.Result.Outcome
			if s.Result.Code != "" {
				st += ":" + string(s.Result.Code)
			}
		}
		out = append(out, st)
	}
	return strings.Join(out, " ")
}

func (c *fakeClient) approvals() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.asked, ",")
}

func TestBatch(t *testing.T) {
	t.Parallel()
	t.Run("every step approved and verified", func(t *testing.T) {
		t.Parallel()
		a := newCounter(t, Config{})
		click := map[string]any{"kind": "click", "ref": a.ref("button", "Add one"), "expected": expect("Clicks: 1")}
		params := a.plan("ok", click, a.press(2))
		r := a.batch(params)
		if r.RequestID != "ok" || r.Outcome != "succeeded" || r.Dispatch != "observed" || r.Postcondition != "passed" || r.TotalSteps != 2 ||
			statuses(r) != "attempted:succeeded attempted:succeeded" || r.Observation == nil || !strings.Contains(strings.Join(r.Observation.Text, "|"), "Clicks: 2") {
			t.Fatalf("batch %+v (%s)", r.ActionResult, statuses(r))
		}
		sum := sha256.Sum256([]byte("ok"))
		for i, st := range r.Steps {
			if st.Index != i || st.Result.Observation != nil || st.Result.RequestID != fmt.Sprintf("batch:%s:%d", hex.EncodeToString(sum[:]), i) {
				t.Errorf("step %d: %+v", i, st)
			}
		}
		if a.c.approvals() != "ap-ok#0,ap-ok#1" || a.inputs() != 2 {
			t.Fatalf("approvals %s, %d inputs", a.c.approvals(), a.inputs())
		}
		// The whole plan runs once: a retry answers without running or asking.
		again := a.batch(params)
		if again.Outcome != "succeeded" || again.TotalSteps != 2 || a.inputs() != 2 || a.c.approvals() != "ap-ok#0,ap-ok#1" {
			t.Fatalf("a retried plan %+v: %d inputs, approvals %s", again.ActionResult, a.inputs(), a.c.approvals())
		}
		if _, err := invoke[any](t, a.r.Batch, a.c, a.plan("ok", click)); rpc.CodeOf(err) != wire.CodeRequestIDConflict {
			t.Fatalf("the same requestId with another plan: %v", err)
		}
	})

	t.Run("eight steps", func(t *testing.T) {
		t.Parallel()
		a := newCounter(t, Config{})
		var steps []map[string]any
		for i := range browser.MaxBatchSteps {
			steps = append(steps, a.press(i+1))
		}
		if r := a.batch(a.plan("eight", steps...)); r.Outcome != "succeeded" || r.TotalSteps != 8 || len(r.Steps) != 8 || a.inputs() != 8 {
			t.Fatalf("8 steps: %+v (%s)", r.ActionResult, statuses(r))
		}
	})

	for _, tc := range []struct {
		name    string
		approve func(id string, i int) (any, error)
		want    string
		code    wire.Code
		outcome string
		inputs  int
	}{
		{"a denied step ends the plan", deny(1, map[string]bool{"allowed": false}),
			"attempted:succeeded attempted:failed:POLICY_DENIED notRun", wire.CodePolicyDenied, "failed", 1},
		{"an answer that is not an approval", deny(0, "yes"),
			"attempted:failed:POLICY_DENIED notRun notRun", wire.CodePolicyDenied, "failed", 0},
		{"an approval that fails", deny(0, wire.Err(wire.CodeDeadlineExceeded)),
			"attempted:failed:POLICY_DENIED notRun notRun", wire.CodePolicyDenied, "failed", 0},
		{"an approval cancelled", deny(2, wire.Err(wire.CodeCancelled)),
			"attempted:succeeded attempted:succeeded attempted:cancelled:CANCELLED", wire.CodeCancelled, "cancelled", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newCounter(t, Config{})
			a.c.approve = tc.approve
			r := a.batch(a.plan("p", a.press(1), a.press(2), a.press(3)))
			if statuses(r) != tc.want || r.Code != tc.code || r.Outcome != tc.outcome || a.inputs() != tc.inputs {
				t.Fatalf("%+v (%s) after %d inputs", r.ActionResult, statuses(r), a.inputs())
			}
			// The plan may have dispatched; its observation is the refused
			// step's: none.
			if wantDispatch := map[bool]string{true: "dispatched", false: "notDispatched"}[tc.inputs > 0]; r.Dispatch != wantDispatch || r.Observation != nil {
				t.Fatalf("plan dispatch %s, want %s, observation %v", r.Dispatch, wantDispatch, r.Observation)
			}
		})
	}

	t.Run("an unverified step ends the plan", func(t *testing.T) {
		t.Parallel()
		a := newCounter(t, Config{})
		r := a.batch(a.plan("p", map[string]any{"kind": "press", "ref": a.ref("button", "Add one"), "key": "Enter"}, a.press(2)))
		if r.Outcome != "unknown" || r.Postcondition != "unverified" || statuses(r) != "attempted:unknown notRun" || a.inputs() != 1 {
			t.Fatalf("%+v (%s)", r.ActionResult, statuses(r))
		}
	})

	t.Run("a failed step ends the plan", func(t *testing.T) {
		t.Parallel()
		a := newCounter(t, Config{})
		wrong := map[string]any{"action": a.press(7), "timeoutMs": 50}
		params := a.plan("p")
		params["request"].(map[string]any)["steps"] = []any{wrong, map[string]any{"action": a.press(2)}}
		r := a.batch(params)
		if r.Outcome != "failed" || r.Postcondition != "failed" || statuses(r) != "attempted:failed notRun" {
			t.Fatalf("%+v (%s)", r.ActionResult, statuses(r))
		}
	})

	t.Run("a new document before the last step ends the plan", func(t *testing.T) {
		t.Parallel()
		a := newCounter(t, Config{})
		a.p.on(browser.ProviderInputKey, func(any) (any, error) {
			a.p.page.edit(func(pg *fakePage) { pg.epoch = "F:L2"; pg.nodes[len(pg.nodes)-1].Name = "Clicks: 1" })
			return map[string]bool{"dispatched": true}, nil
		})
		r := a.batch(a.plan("p", a.press(1), a.press(2)))
		if r.Code != wire.CodeStaleTarget || r.Outcome != "unknown" || statuses(r) != "attempted:succeeded notRun" || a.inputs() != 1 {
			t.Fatalf("%+v (%s)", r.ActionResult, statuses(r))
		}
	})

	t.Run("the lease ends while the owner decides", func(t *testing.T) {
		t.Parallel()
		a := newCounter(t, Config{})
		a.c.approve = func(_ string, i int) (any, error) {
			if i == 1 {
				must[map[string]bool](t, a.r.Release, a.c, map[string]any{"sessionId": "s", "leaseId": a.lease.ID})
			}
			return map[string]bool{"allowed": true}, nil
		}
		r := a.batch(a.plan("p", a.press(1), a.press(2), a.press(3)))
		if statuses(r) != "attempted:succeeded attempted:cancelled:LEASE_REVOKED notRun" || r.Outcome != "cancelled" || a.inputs() != 1 {
			t.Fatalf("%+v (%s) after %d inputs", r.ActionResult, statuses(r), a.inputs())
		}
	})

	t.Run("the lease and the browser", func(t *testing.T) {
		t.Parallel()
		a := newCounter(t, Config{})
		other := newFakeClient(2)
		if _, err := invoke[any](t, a.r.Batch, other, a.plan("p", a.press(1))); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
			t.Fatalf("another connection's lease: %v", err)
		}
		a.h.remove(a.p)
		if _, err := invoke[any](t, a.r.Batch, a.c, a.plan("q", a.press(1))); rpc.CodeOf(err) != wire.CodeConnectionLost {
			t.Fatalf("a gone browser: %v", err)
		}
		if a.inputs() != 0 || a.c.approvals() != "" {
			t.Fatalf("%d inputs, approvals %q", a.inputs(), a.c.approvals())
		}
	})
}

// deny answers approval index i with v (a value, or an error), allowing
// the steps before it.
func deny(i int, v any) func(string, int) (any, error) {
	return func(_ string, index int) (any, error) {
		switch {
		case index < i:
			return map[string]bool{"allowed": true}, nil
		case index > i:
			panic("asked past the step that stopped the plan")
		}
		if err, ok := v.(error); ok {
			return nil, err
		}
		return v, nil
	}
}

// TestBatchDurable runs a plan of a client with a journalKey over a real
// journal: each step and the plan are journaled, and a retry past the
// plan's retention is metadata only, without steps.
func TestBatchDurable(t *testing.T) {
	t.Parallel()
	j := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	t.Cleanup(func() { j.Close() })
	a := newCounter(t, Config{Journal: j})
	a.c.journalKey = strings.Repeat("cd", 32)
	params := a.plan("d", a.press(1), a.press(2))
	if r := a.batch(params); r.Outcome != "succeeded" || a.inputs() != 2 {
		t.Fatalf("%+v (%s)", r.ActionResult, statuses(r))
	}
	for i := range 2 {
		sum := sha256.Sum256([]byte("d"))
		rec, err := j.Lookup(journal.Key{Scope: "key:" + a.c.journalKey + "\x00s", RequestID: fmt.Sprintf("batch:%s:%d", hex.EncodeToString(sum[:]), i)})
		if err != nil || rec == nil || rec.State != journal.StateSettled || rec.Outcome != "succeeded" {
			t.Fatalf("step %d journaled as %+v %v", i, rec, err)
		}
	}
	// A retry while the plan's result is retained gets it.
	if again := a.batch(params); again.Outcome != "succeeded" || again.Code != "" || again.Recovery != nil || a.inputs() != 2 {
		t.Fatalf("a retry within retention %+v", again.ActionResult)
	}
	a.clock.advance(ResultRetention + time.Second)
	r := a.batch(params)
	if r.Code != wire.CodeRecoveryRequired || r.Recovery == nil || r.Recovery.PriorOutcome != "succeeded" || len(r.Steps) != 0 || r.TotalSteps != 2 || a.inputs() != 2 {
		t.Fatalf("a retry past retention %+v", r)
	}
}
