package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// approver answers browser.approveBatchStep and records what it was asked.
type approver struct {
	mu    sync.Mutex
	asked []string
	deny  map[int]bool
}

func (a *approver) answer(_ context.Context, method string, params json.RawMessage) (any, error) {
	if method != "browser.approveBatchStep" {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	var p struct {
		ApprovalID string `json:"approvalId"`
		Index      int    `json:"index"`
	}
	json.Unmarshal(params, &p)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, fmt.Sprintf("%s#%d", p.ApprovalID, p.Index))
	return map[string]bool{"allowed": !a.deny[p.Index]}, nil
}

func (a *approver) log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.asked, ",")
}

type batchSetup struct {
	c      *client.Client
	lease  browser.LeaseResult
	obs    browser.Observation
	target target.ID
}

func setupBatch(t *testing.T, s *stack.Stack, path string, a *approver, journalKey string) batchSetup {
	t.Helper()
	c := s.B.Client(t, client.Options{JournalKey: journalKey, OnRequest: a.answer})
	id := s.Browser.OpenTab(t, s.Pages.URL(path))
	tab := fmt.Sprintf("%s:%d", s.Instance, s.Browser.TabIDOf(t, id))
	raw, err := c.Call(context.Background(), "browser.claim", map[string]any{"sessionId": "b", "instanceId": s.Instance, "tab": tab})
	if err != nil {
		t.Fatal(err)
	}
	var l browser.LeaseResult
	json.Unmarshal(raw, &l)
	raw, err = c.Call(context.Background(), "browser.observe", map[string]any{"sessionId": "b", "leaseId": l.ID})
	if err != nil {
		t.Fatal(err)
	}
	var o browser.Observation
	json.Unmarshal(raw, &o)
	return batchSetup{c: c, lease: l, obs: o, target: id}
}

func (b batchSetup) params(requestID string, steps ...map[string]any) map[string]any {
	var list []map[string]any
	for _, a := range steps {
		list = append(list, map[string]any{"action": a})
	}
	return map[string]any{"sessionId": "b", "approvalId": "ap-" + requestID, "request": map[string]any{
		"requestId": requestID, "leaseId": b.lease.ID, "documentEpoch": b.obs.DocumentEpoch, "steps": list,
	}}
}

func runBatch(t *testing.T, c *client.Client, params map[string]any) browser.BatchResult {
	t.Helper()
	raw, err := c.Call(context.Background(), "browser.batch", params)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	var r browser.BatchResult
	json.Unmarshal(raw, &r)
	return r
}

func clickExpect(ref, text string) map[string]any {
	return map[string]any{"kind": "click", "ref": ref, "expected": map[string]any{"kind": "text", "text": text}}
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

func TestBatch(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")

	t.Run("all steps approved and verified", func(t *testing.T) {
		a := &approver{}
		b := setupBatch(t, s, "/counter", a, "")
		add := refOf(t, b.obs, "button", "Add one")
		r := runBatch(t, b.c, b.params("ok", clickExpect(add, "Clicks: 1"), clickExpect(add, "Clicks: 2")))
		if r.Outcome != "succeeded" || r.TotalSteps != 2 || statuses(r) != "attempted:succeeded attempted:succeeded" || r.Observation == nil {
			t.Fatalf("batch: %+v (%s)", r.ActionResult, statuses(r))
		}
		if a.log() != "ap-ok#0,ap-ok#1" {
			t.Fatalf("approvals asked: %s", a.log())
		}
		if n := clicks(t, s, b.target); n != 2 {
			t.Fatalf("page counted %d clicks", n)
		}
		if again := runBatch(t, b.c, b.params("ok", clickExpect(add, "Clicks: 1"), clickExpect(add, "Clicks: 2"))); clicks(t, s, b.target) != 2 || again.Outcome != "succeeded" {
			t.Fatalf("a retried batch ran again: %+v", again)
		}
	})

	t.Run("the whole vocabulary in a plan, navigate last", func(t *testing.T) {
		a := &approver{}
		b := setupBatch(t, s, "/fields", a, "")
		r := runBatch(t, b.c, b.params("form",
			map[string]any{"kind": "fill", "ref": refOf(t, b.obs, "textbox", "City"), "text": "Rome"},
			map[string]any{"kind": "select", "ref": refOf(t, b.obs, "combobox", "Color"), "option": "Green"},
			map[string]any{"kind": "scroll", "deltaX": 0, "deltaY": 100},
			clickExpect(refOf(t, b.obs, "button", "Send"), "Sent: Rome / g"),
			map[string]any{"kind": "navigate", "url": s.Pages.URL("/counter")}))
		if r.Outcome != "succeeded" || statuses(r) != "attempted:succeeded attempted:succeeded attempted:succeeded attempted:succeeded attempted:succeeded" {
			t.Fatalf("batch: %+v (%s)", r.ActionResult, statuses(r))
		}
		if r.Observation == nil || r.Observation.URL != s.Pages.URL("/counter") || a.log() != "ap-form#0,ap-form#1,ap-form#2,ap-form#3,ap-form#4" {
			t.Fatalf("the plan ended on %+v after approvals %s", r.Observation, a.log())
		}
	})

	t.Run("a denied step ends the plan", func(t *testing.T) {
		a := &approver{deny: map[int]bool{1: true}}
		b := setupBatch(t, s, "/counter", a, "")
		add := refOf(t, b.obs, "button", "Add one")
		r := runBatch(t, b.c, b.params("deny", clickExpect(add, "Clicks: 1"), clickExpect(add, "Clicks: 2"), clickExpect(add, "Clicks: 3")))
		if r.Code != wire.CodePolicyDenied || statuses(r) != "attempted:succeeded attempted:failed:POLICY_DENIED notRun" {
			t.Fatalf("batch: %+v (%s)", r.ActionResult, statuses(r))
		}
		if n := clicks(t, s, b.target); n != 1 {
			t.Fatalf("page counted %d clicks", n)
		}
	})

	t.Run("an unverified step ends the plan", func(t *testing.T) {
		b := setupBatch(t, s, "/counter", &approver{}, "")
		add := refOf(t, b.obs, "button", "Add one")
		r := runBatch(t, b.c, b.params("unverified", map[string]any{"kind": "click", "ref": add}, clickExpect(add, "Clicks: 2")))
		if r.Outcome != "unknown" || statuses(r) != "attempted:unknown notRun" {
			t.Fatalf("batch: %+v (%s)", r.ActionResult, statuses(r))
		}
	})

	t.Run("a new document before the last step ends the plan", func(t *testing.T) {
		b := setupBatch(t, s, "/form", &approver{}, "")
		link := refOf(t, b.obs, "link", "Go to the counter")
		r := runBatch(t, b.c, b.params("navigates", clickExpect(link, "Clicks: 0"), clickExpect(link, "never")))
		if r.Code != wire.CodeStaleTarget || r.Outcome != "unknown" || statuses(r) != "attempted:succeeded notRun" {
			t.Fatalf("batch: %+v (%s)", r.ActionResult, statuses(r))
		}
	})

	t.Run("limits", func(t *testing.T) {
		b := setupBatch(t, s, "/counter", &approver{}, "")
		add := refOf(t, b.obs, "button", "Add one")
		steps := func(n int) []map[string]any {
			var out []map[string]any
			for i := range n {
				out = append(out, clickExpect(add, fmt.Sprint("Clicks: ", i+1)))
			}
			return out
		}
		if r := runBatch(t, b.c, b.params("eight", steps(8)...)); r.Outcome != "succeeded" || r.TotalSteps != 8 {
			t.Fatalf("8 steps: %+v (%s)", r.ActionResult, statuses(r))
		}
		for name, p := range map[string]map[string]any{
			"no steps":        b.params("none"),
			"nine steps":      b.params("nine", steps(9)...),
			"reserved prefix": b.params("batch:x", steps(1)...),
		} {
			if _, err := b.c.Call(context.Background(), "browser.batch", p); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
				t.Errorf("%s: %v, want INVALID_REQUEST", name, err)
			}
		}
		p := b.params("slow", steps(1)...)
		p["request"].(map[string]any)["timeoutMs"] = 30001
		if _, err := b.c.Call(context.Background(), "browser.batch", p); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("timeout 30001: %v", err)
		}
	})
}

// TestBatchCrashNeverResumes kills the broker at each point of a two-step
// batch's life; a retry after restart answers RECOVERY_REQUIRED without
// steps and never runs a step again or resumes the plan.
func TestBatchCrashNeverResumes(t *testing.T) {
	s := stack.Start(t, "--access-mode=personal")
	points := []string{"after-intent", "after-intent:2", "after-dispatch", "after-dispatch:2", "after-outcome", "after-outcome:3"}
	for trial := range crashTrials(t) {
		for _, point := range points {
			restart(t, s, "DSH_FAILPOINT="+point)
			a := &approver{}
			b := setupBatch(t, s, "/counter", a, journalKey)
			add := refOf(t, b.obs, "button", "Add one")
			params := b.params(fmt.Sprintf("crash-%s-%d-%d", point, trial, time.Now().UnixNano()), clickExpect(add, "Clicks: 1"), clickExpect(add, "Clicks: 2"))
			// Every wait is bounded: a broker that hangs instead of dying
			// fails here with its log, not at the package's timeout.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := b.c.Call(ctx, "browser.batch", params)
			cancel()
			if !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
				t.Fatalf("%s: batch answered %v; the broker should have died\nbroker:\n%s", point, err, s.B.Stderr)
			}
			select {
			case <-s.B.Exited():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: broker still running\nbroker:\n%s", point, s.B.Stderr)
			}
			before := clicks(t, s, b.target)
			restart(t, s)
			c := s.B.Client(t, client.Options{JournalKey: journalKey, OnRequest: a.answer})
			ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
			raw, err := c.Call(ctx, "browser.batch", params)
			cancel()
			if err != nil {
				t.Fatalf("%s: retry: %v\nbroker:\n%s", point, err, s.B.Stderr)
			}
			var r browser.BatchResult
			json.Unmarshal(raw, &r)
			if after := clicks(t, s, b.target); after != before {
				t.Fatalf("%s: %d clicks before the retry, %d after: a step ran again", point, before, after)
			}
			truthful := r.Code == wire.CodeRecoveryRequired && len(r.Steps) == 0 && r.Recovery != nil &&
				!(before > 0 && r.Dispatch == "notDispatched") && // input happened: never deny it
				!(r.Recovery.PriorOutcome == "succeeded" && before != 2) // a success means both clicks
			if !truthful {
				t.Fatalf("%s: retry answered %s with %d clicks on the page", point, raw, before)
			}
		}
	}
}
