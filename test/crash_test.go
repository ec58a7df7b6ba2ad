package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
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

// groupCrashPoints are the named points of an action's life where
// TestCrashConcurrentActions kills the broker: the runtime's, and the
// journal's group commit (a frame written, not yet synced; a frame
// synced, its writers not yet woken).
var groupCrashPoints = []string{"before-intent", "after-intent", "after-dispatch", "after-outcome", "journal-written", "journal-synced"}

const groupClients = 4

// keyProvider is a scripted provider with one tab per client, each with a
// button, that counts the key presses dispatched to each tab.
type keyProvider struct {
	*scripted
	mu      sync.Mutex
	presses map[string]int // tab → input.key calls
}

func startKeyProvider(t *testing.T, b *testenv.Broker) *keyProvider {
	p := &keyProvider{scripted: startScripted(t, b, "inst"), presses: map[string]int{}}
	var tabs []browser.TabSummary
	for i := range groupClients {
		tabs = append(tabs, browser.TabSummary{ID: fmt.Sprintf("inst:%d", i+1), InstanceID: "inst", URL: pageURL, Title: "Keys"})
	}
	p.on("tabs.list", func(*wire.Envelope) (any, wire.Code) { return tabs, "" })
	p.on("lease.grant", func(*wire.Envelope) (any, wire.Code) {
		return map[string]any{"granted": true, "documentEpoch": "K:1", "url": pageURL, "title": "Keys"}, ""
	})
	p.on("lease.revoke", func(*wire.Envelope) (any, wire.Code) { return map[string]bool{"released": true}, "" })
	p.on("ax.read", func(*wire.Envelope) (any, wire.Code) {
		return map[string]any{"documentEpoch": "K:1", "url": pageURL, "title": "Keys", "nodes": []map[string]any{
			{"backendNodeId": 1, "role": "RootWebArea", "name": "Keys"},
			{"backendNodeId": 2, "role": "button", "name": "Go", "props": map[string]any{"focusable": true}},
		}}, ""
	})
	// dom.read: the button is there, visible and enabled.
	p.on("dom.read", func(*wire.Envelope) (any, wire.Code) {
		return map[string]any{"found": true, "connected": true, "sameDocument": true, "disabledKnown": true,
			"enabledState": true, "visible": true, "tag": "button", "maxLength": -1,
			"scroll": map[string]int{"scrollWidth": 100, "scrollHeight": 30, "clientWidth": 100, "clientHeight": 30}}, ""
	})
	p.on("input.key", func(req *wire.Envelope) (any, wire.Code) {
		var params struct{ Lease struct{ Tab string } }
		json.Unmarshal(req.Params, &params)
		p.mu.Lock()
		p.presses[params.Lease.Tab]++
		p.mu.Unlock()
		return map[string]bool{"dispatched": true}, ""
	})
	return p
}

func (p *keyProvider) count(tab string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.presses[tab]
}

// keyClient is one durable client pressing Enter on its own tab, one
// action after another.
type keyClient struct {
	c       *client.Client
	session string
	tab     string
	lease   string
	ref     string
}

func startKeyClient(t *testing.T, b *testenv.Broker, i int) *keyClient {
	t.Helper()
	k := &keyClient{c: b.Client(t, client.Options{JournalKey: journalKey}), session: fmt.Sprintf("keys-%d", i), tab: fmt.Sprintf("inst:%d", i+1)}
	raw, err := k.c.Call(context.Background(), "browser.claim", map[string]any{"sessionId": k.session, "instanceId": "inst", "tab": k.tab})
	if err != nil {
		t.Fatalf("claim %s: %v", k.tab, err)
	}
	var l browser.LeaseResult
	json.Unmarshal(raw, &l)
	k.lease = l.ID
	k.ref = refOf(t, observe(t, k.c, k.session, l.ID), "button", "Go")
	return k
}

func (k *keyClient) press(requestID string) map[string]any {
	return map[string]any{"sessionId": k.session, "request": map[string]any{
		"requestId": requestID, "leaseId": k.lease, "documentEpoch": "K:1",
		"action": map[string]any{"kind": "press", "ref": k.ref, "key": "Enter"},
	}}
}

func (k *keyClient) act(params map[string]any) (browser.ActionResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := k.c.Call(ctx, "browser.act", params)
	var r browser.ActionResult
	if err == nil {
		json.Unmarshal(raw, &r)
	}
	return r, err
}

// keyRun is what one client saw before the broker died: the answers it
// got, and the request it was waiting on (or about to send).
type keyRun struct {
	done     []map[string]any
	answers  []browser.ActionResult
	inFlight map[string]any
}

// TestCrashConcurrentActions kills the broker with SIGKILL at each named
// point, at a random hit while four durable clients act concurrently (so
// the journal's writes are grouped), restarts it, retries every request
// each client sent, and checks each answer against the key presses the
// provider saw on that client's tab: nothing dispatched twice, a retry
// never dispatches, a completed action's retry says what it said, and the
// action in flight is answered truthfully (no record: nothing was sent;
// reserved: it may have been; settled: as recorded).
func TestCrashConcurrentActions(t *testing.T) {
	t.Parallel()
	trials := crashTrials(t)
	var b *testenv.Broker
	checked := 0
	inFlight := map[string]int{} // what the retries of actions in flight found
	for trial := range trials {
		if trial%25 == 0 { // a fresh state directory now and then, so the journal never fills
			if b != nil {
				b.Stop(t)
			}
			b = testenv.StartBroker(t)
		}
		for _, point := range groupCrashPoints {
			hit := 1 + rand.IntN(3*groupClients)
			b.Stop(t)
			b.Env = []string{fmt.Sprintf("DSH_FAILPOINT=%s:%d", point, hit)}
			b.Start(t)
			prov := startKeyProvider(t, b)
			runs := make([]keyRun, groupClients)
			clients := make([]*keyClient, groupClients)
			for i := range clients {
				clients[i] = startKeyClient(t, b, i)
			}
			var wg sync.WaitGroup
			for i, k := range clients {
				wg.Go(func() {
					for n := 0; n < 200; n++ { // the failpoint comes long before
						params := k.press(fmt.Sprintf("%d-%s-%d", trial, point, n))
						r, err := k.act(params)
						if err != nil {
							runs[i].inFlight = params
							return
						}
						runs[i].done = append(runs[i].done, params)
						runs[i].answers = append(runs[i].answers, r)
					}
				})
			}
			wg.Wait()
			select {
			case <-b.Exited():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s:%d: the broker is still running", point, hit)
			}
			counts := make([]int, groupClients)
			for i, k := range clients {
				counts[i] = prov.count(k.tab)
				k.c.Close()
			}

			b.Env = nil
			b.Start(t)
			prov2 := startKeyProvider(t, b)
			for i := range clients {
				k := startKeyClient(t, b, i)
				checked += len(runs[i].done) + 1
				inFlight[checkKeyRun(t, fmt.Sprintf("%s:%d client %d", point, hit, i), k, runs[i], counts[i])]++
				if n := prov2.count(k.tab); n != 0 {
					t.Fatalf("%s:%d client %d: retries dispatched %d presses", point, hit, i, n)
				}
			}
		}
	}
	t.Logf("%d SIGKILL trials across %d crash points, %d concurrent clients: %d retries, no double dispatch, every answer truthful; actions in flight found %v",
		trials*len(groupCrashPoints), len(groupCrashPoints), groupClients, checked, inFlight)
}

// checkKeyRun retries every request of run with k (the same client after
// the restart) and checks the answers against presses, what the provider
// saw on k's tab before the crash. It returns what the retry of the
// action in flight found: "no record", "reserved" or "settled".
func checkKeyRun(t *testing.T, who string, k *keyClient, run keyRun, presses int) string {
	t.Helper()
	sent := 0 // presses the answers say were dispatched
	for i, params := range run.done {
		was := run.answers[i]
		r, err := k.act(params)
		// A recovery says dispatched or notDispatched, as the reference
		// types it: an observed action was dispatched.
		wantDispatch := was.Dispatch
		if wantDispatch == "observed" {
			wantDispatch = "dispatched"
		}
		if err != nil || r.Code != wire.CodeRecoveryRequired || r.Recovery == nil || r.Recovery.State != "settled" ||
			r.Recovery.PriorOutcome != was.Outcome || r.Dispatch != wantDispatch {
			t.Fatalf("%s: retry of a completed action (%+v) answered %+v, %v", who, was, r, err)
		}
		if was.Dispatch != "notDispatched" {
			sent++
		}
	}
	if run.inFlight == nil {
		t.Fatalf("%s: the client saw no error, yet the broker died", who)
	}
	r, err := k.act(run.inFlight)
	extra := presses - sent // the action in flight: 0 or 1
	found := "no record"
	if r.Recovery != nil {
		found = r.Recovery.State
	}
	switch {
	case extra < 0 || extra > 1:
		t.Fatalf("%s: %d presses for %d dispatched answers and one in flight", who, presses, sent)
	case err != nil:
		// No record: the intent was never durable, so nothing was sent
		// (the lease died with the broker).
		if !client.IsCode(err, wire.CodeLeaseRevoked) || extra != 0 {
			t.Fatalf("%s: retry in flight: %v with %d presses beyond the answers; want LEASE_REVOKED and none", who, err, extra)
		}
	case r.Code != wire.CodeRecoveryRequired || r.Recovery == nil:
		t.Fatalf("%s: retry in flight answered %+v; want RECOVERY_REQUIRED", who, r)
	case r.Recovery.State == "reserved":
		if r.Dispatch != "dispatched" { // "it may have happened", true whether it did or not
			t.Fatalf("%s: reserved but %+v", who, r)
		}
	case r.Recovery.State == "settled":
		if (r.Recovery.Dispatch == "notDispatched") != (extra == 0) {
			t.Fatalf("%s: recorded dispatch %q, but %d presses beyond the answers", who, r.Recovery.Dispatch, extra)
		}
	default:
		t.Fatalf("%s: retry in flight answered %+v", who, r)
	}
	return found
}
