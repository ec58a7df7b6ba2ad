package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

const journalKey = "6a6f75726e616c2d6b65792d666f722d63726173682d74657374732d30303031"

// durableClient connects with a journalKey, so its actions are fenced in the
// journal across broker restarts.
func durableClient(t *testing.T, s *stack.Stack) *client.Client {
	t.Helper()
	return s.B.Client(t, client.Options{JournalKey: journalKey})
}

// crashTrials is how many SIGKILL trials run per crash point; set
// DSH_CRASH_TRIALS for a longer run (BENCHMARKS.md records one).
func crashTrials(t *testing.T) int {
	if n, err := strconv.Atoi(os.Getenv("DSH_CRASH_TRIALS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 1
	}
	return 4
}

type clickAttempt struct {
	params map[string]any
	target target.ID
}

// prepareClick claims a fresh /counter page and returns the act params for
// one click on "Add one".
func prepareClick(t *testing.T, s *stack.Stack, c *client.Client, tabTarget target.ID, requestID string) clickAttempt {
	t.Helper()
	s.Browser.Navigate(t, tabTarget, s.Pages.URL("/counter"))
	tab := fmt.Sprintf("%s:%d", s.Instance, s.Browser.TabIDOf(t, tabTarget))
	raw, err := c.Call(context.Background(), "browser.claim", map[string]any{"sessionId": "crash", "instanceId": s.Instance, "tab": tab})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	var l browser.LeaseResult
	json.Unmarshal(raw, &l)
	raw, err = c.Call(context.Background(), "browser.observe", map[string]any{"sessionId": "crash", "leaseId": l.ID})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	var o browser.Observation
	json.Unmarshal(raw, &o)
	return clickAttempt{target: tabTarget, params: map[string]any{"sessionId": "crash", "request": map[string]any{
		"requestId": requestID, "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Add one"), "expected": map[string]any{"kind": "text", "text": "Clicks: 1"}},
	}}}
}

func clicks(t *testing.T, s *stack.Stack, id target.ID) int {
	return chromium.Eval[int](t, s.Browser, id, "window.clicks")
}

// restart starts the broker again with env and waits for the extension to
// reconnect as a new instance.
func restart(t *testing.T, s *stack.Stack, env ...string) {
	t.Helper()
	old := s.Instance
	s.B.Stop(t) // a no-op after a crash
	s.B.Env = env
	s.B.Start(t, "--access-mode=personal")
	s.Client = s.B.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) {}})
	s.Instance = s.WaitInstance(t, old)
}

// TestCrashNeverDispatchesTwice kills the broker with SIGKILL at each point
// of an action's life, restarts it, retries the exact request, and checks
// against the page's own click counter that nothing was dispatched twice and
// that the answer after the restart is truthful.
func TestCrashNeverDispatchesTwice(t *testing.T) {
	s := stack.Start(t, "--access-mode=personal")
	tabTarget := s.Browser.OpenTab(t, s.Pages.URL("/counter"))
	points := []string{"before-intent", "after-intent", "after-dispatch", "after-outcome"}
	trials := crashTrials(t)
	for trial := range trials {
		for _, point := range points {
			restart(t, s, "DSH_FAILPOINT="+point)
			c := durableClient(t, s)
			id := fmt.Sprintf("crash-%s-%d-%d", point, trial, time.Now().UnixNano())
			a := prepareClick(t, s, c, tabTarget, id)

			_, err := c.Call(context.Background(), "browser.act", a.params)
			if !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
				t.Fatalf("%s: act answered %v; the broker should have died", point, err)
			}
			select {
			case <-s.B.Exited():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: broker still running", point)
			}
			before := clicks(t, s, a.target)

			restart(t, s)
			c = durableClient(t, s)
			for retry := range 2 {
				raw, err := c.Call(context.Background(), "browser.act", a.params)
				after := clicks(t, s, a.target)
				if after != before {
					t.Fatalf("%s retry %d: the page counted %d clicks before and %d after: input replayed", point, retry, before, after)
				}
				checkTruthful(t, point, before, raw, err)
			}
		}
	}
	t.Logf("%d SIGKILL trials across %d crash points: no double dispatch, every answer truthful", trials*len(points), len(points))
}

// checkTruthful checks the answer to a retry after a crash against what the
// page saw (clicks: 0 or 1).
func checkTruthful(t *testing.T, point string, clicks int, raw json.RawMessage, err error) {
	t.Helper()
	if point == "before-intent" {
		// Nothing was recorded and the lease died with the broker: the
		// action is unknown to it and the page saw nothing.
		if !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) || clicks != 0 {
			t.Fatalf("%s: retry %s %v with %d clicks; want LEASE_REVOKED and 0 clicks", point, raw, err, clicks)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: retry failed: %v", point, err)
	}
	var r browser.ActionResult
	json.Unmarshal(raw, &r)
	if r.Code != wire.CodeRecoveryRequired || r.Recovery == nil || r.Outcome != "unknown" {
		t.Fatalf("%s: retry answered %s; want metadata-only RECOVERY_REQUIRED", point, raw)
	}
	switch point {
	case "after-intent", "after-dispatch":
		// Intent without outcome: the broker must say it may have happened.
		if r.Recovery.State != "reserved" || r.Dispatch != "dispatched" {
			t.Fatalf("%s: %s does not say the input may have happened", point, raw)
		}
		if point == "after-dispatch" && clicks != 1 {
			t.Fatalf("%s: the page saw %d clicks, want 1", point, clicks)
		}
		if point == "after-intent" && clicks != 0 {
			t.Fatalf("%s: the page saw %d clicks before any dispatch", point, clicks)
		}
	case "after-outcome":
		if r.Recovery.State != "settled" || r.Recovery.PriorOutcome != "succeeded" || clicks != 1 {
			t.Fatalf("%s: %s with %d clicks; want the settled success and 1 click", point, raw, clicks)
		}
	}
	if strings.Contains(string(raw), `"observation"`) {
		t.Fatalf("%s: a recovery answer carries page data: %s", point, raw)
	}
}
