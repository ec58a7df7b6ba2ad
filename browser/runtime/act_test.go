package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// actOn is a leased standard page, observed, ready for actions.
type actOn struct {
	*fixture
	lease browser.LeaseResult
	obs   browser.Observation
}

func newActOn(t *testing.T, cfg Config, caps ...string) *actOn {
	f := newFixture(t, cfg, caps...)
	l := f.claim("s")
	return &actOn{f, l, f.observe("s", l.ID)}
}

// request is an action request on the observed document, with request
// members extra (timeoutMs, …).
func (a *actOn) request(requestID string, action map[string]any, extra ...any) map[string]any {
	req := map[string]any{"requestId": requestID, "leaseId": a.lease.ID, "documentEpoch": a.obs.DocumentEpoch, "action": action}
	for i := 0; i+1 < len(extra); i += 2 {
		req[extra[i].(string)] = extra[i+1]
	}
	return req
}

func (a *actOn) ref(role, name string) string { return refOf(a.t, a.obs.Nodes, role, name) }

// inputs counts the input commands sent.
func (a *actOn) inputs() int {
	return a.p.count(browser.ProviderInputClick) + a.p.count(browser.ProviderInputText) + a.p.count(browser.ProviderInputKey)
}

// expect is an expected-text postcondition.
func expect(text string) map[string]any { return map[string]any{"kind": "text", "text": text} }

func TestActKinds(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	// A click says hello.
	a.p.on(browser.ProviderInputClick, func(any) (any, error) {
		a.p.page.say("Hello, Ada!")
		return map[string]bool{"dispatched": true}, nil
	})
	res := a.act("s", a.request("click", map[string]any{"kind": "click", "ref": a.ref("button", "Greet"), "expected": expect("Hello,   Ada!")}))
	if res.RequestID != "click" || res.Outcome != "succeeded" || res.Dispatch != "observed" || res.Postcondition != "passed" || res.Code != "" ||
		res.Observation == nil || !strings.Contains(strings.Join(res.Observation.Text, "|"), "Hello, Ada!") {
		t.Fatalf("click %+v", res)
	}
	click := a.p.sent(browser.ProviderInputClick)[0].(*requestParams[inputCommand])
	if c := click.Request; c.DocumentEpoch != "F:L1" || c.Target == nil || *c.Target != (inputTarget{4, "button", "Greet"}) || c.X == nil || *c.X != 60 || *c.Y != 25 ||
		c.Text != nil || c.Key != "" || c.Frame != nil || click.Lease.ID != a.lease.ID || click.Lease.Token != a.lease.Token {
		t.Fatalf("input.click sent %+v", click)
	}
	var cdp []string
	for _, c := range a.p.sent(browser.ProviderCDP) {
		cdp = append(cdp, c.(*cdpParams).Method)
	}
	if strings.Join(cdp, ",") != "DOM.scrollIntoViewIfNeeded,DOM.getContentQuads,DOM.getContentQuads" {
		t.Fatalf("cdp sent %v: scroll, then two samples of stable geometry", cdp)
	}

	box := a.ref("textbox", "Your name")
	for i, tc := range []struct {
		action map[string]any
		method string
		want   inputCommand
	}{
		{map[string]any{"kind": "fill", "ref": box, "text": "Ada"}, browser.ProviderInputText, inputCommand{Text: ptr("Ada"), Mode: "replace"}},
		{map[string]any{"kind": "fill", "ref": box, "text": ""}, browser.ProviderInputText, inputCommand{Text: ptr(""), Mode: "replace"}},
		{map[string]any{"kind": "type", "ref": box, "text": "Ada"}, browser.ProviderInputText, inputCommand{Text: ptr("Ada"), Mode: "insert"}},
		// The field holds "Ada" (the type above): append re-checks it.
		{map[string]any{"kind": "append", "ref": box, "text": "!"}, browser.ProviderInputText, inputCommand{Text: ptr("!"), Mode: "append", Prefix: ptr("Ada")}},
		{map[string]any{"kind": "press", "ref": box, "key": "Enter"}, browser.ProviderInputKey, inputCommand{Key: "Enter"}},
		{map[string]any{"kind": "press", "ref": box, "key": "Tab", "shift": true}, browser.ProviderInputKey, inputCommand{Key: "Tab", Shift: true}},
	} {
		name := tc.action["kind"].(string) + " " + tc.method
		before := a.p.count(tc.method)
		res := a.act("s", a.request(fmt.Sprint("kind", i), tc.action))
		// No expectation: a fill or an append is verified by the value it
		// leaves (the reference's rule); a typed text or a key press is
		// observed with nothing to verify.
		verified := tc.action["kind"] == "fill" || tc.action["kind"] == "append"
		if verified && (res.Outcome != "succeeded" || res.Postcondition != "passed") ||
			!verified && (res.Outcome != "unknown" || res.Postcondition != "unverified") ||
			res.Dispatch != "observed" || res.Observation == nil {
			t.Errorf("%s: %+v", name, res)
			continue
		}
		sent := a.p.sent(tc.method)
		if len(sent) != before+1 {
			t.Errorf("%s: %s sent %d times", name, tc.method, len(sent)-before)
			continue
		}
		got := sent[before].(*requestParams[inputCommand]).Request
		tc.want.DocumentEpoch, tc.want.Target = "F:L1", &inputTarget{3, "textbox", "Your name"}
		if !sameCommand(got, tc.want) {
			t.Errorf("%s: sent %+v, want %+v", name, got, tc.want)
		}
	}
	if a.p.count(browser.ProviderInputClick) != 1 {
		t.Fatal("only the click may ask for geometry and click")
	}
}

func ptr[T any](v T) *T { return &v }

func sameCommand(a, b inputCommand) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestActExpectation(t *testing.T) {
	t.Parallel()
	fill := func(a *actOn, id string, text string, timeoutMs int) map[string]any {
		req := a.request(id, map[string]any{"kind": "fill", "ref": a.ref("textbox", "Your name"), "text": "Ada", "expected": expect(text)})
		req["timeoutMs"] = timeoutMs
		return req
	}

	t.Run("failed on a complete page", func(t *testing.T) {
		t.Parallel()
		a := newActOn(t, Config{})
		res := a.act("s", fill(a, "f", "Never shown", 50))
		if res.Outcome != "failed" || res.Postcondition != "failed" || res.Dispatch != "observed" || res.Observation == nil || res.Code != "" {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("unknown on a truncated page", func(t *testing.T) {
		t.Parallel()
		a := newActOn(t, Config{})
		a.p.page.edit(func(pg *fakePage) { pg.truncated = true })
		res := a.act("s", fill(a, "f", "Never shown", 50))
		if res.Outcome != "unknown" || res.Postcondition != "unverified" || res.Dispatch != "observed" || !res.Observation.Truncated {
			t.Fatalf("%+v", res)
		}
		finds := a.p.sent(browser.ProviderAXFind)
		if len(finds) == 0 || finds[0].(*requestParams[axRequest]).Request.Name != "Never shown" {
			t.Fatalf("the name was not searched past the truncated observation: %v", finds)
		}
	})

	t.Run("passed by a name on a truncated page", func(t *testing.T) {
		t.Parallel()
		a := newActOn(t, Config{})
		a.p.page.edit(func(pg *fakePage) { pg.truncated = true })
		if res := a.act("s", fill(a, "f", " Greet ", 5000)); res.Outcome != "succeeded" || res.Postcondition != "passed" {
			t.Fatalf("%+v", res)
		}
	})

	// In a synctest bubble time moves only when every goroutine waits: the
	// page change, not the 100 ms poll, must wake the verification.
	t.Run("passed after the page changed", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			a := newActOn(t, Config{})
			var once sync.Once
			read := a.p.script[browser.ProviderAXRead].answer
			a.p.on(browser.ProviderAXRead, func(params any) (any, error) {
				v, err := read(params)
				if a.inputs() > 0 {
					once.Do(func() { // the first read after the input: the text comes a moment later
						a.p.page.say("Saved")
						data, _ := json.Marshal(map[string]any{"tab": a.lease.Tab, "leaseId": a.lease.ID, "sequence": 1})
						a.r.Event(a.p, browser.ProviderEventPageChanged, data)
					})
				}
				return v, err
			})
			start := time.Now()
			res := a.act("s", fill(a, "f", "Saved", 5000))
			if res.Outcome != "succeeded" || res.Postcondition != "passed" || a.p.count(browser.ProviderAXRead) != 3 || time.Since(start) != 0 {
				t.Fatalf("%+v after %d reads and %v", res, a.p.count(browser.ProviderAXRead), time.Since(start))
			}
		})
	})

	t.Run("dispatched but not observed", func(t *testing.T) {
		t.Parallel()
		a := newActOn(t, Config{})
		a.p.fail(browser.ProviderAXRead, wire.CodeConnectionLost)
		res := a.act("s", fill(a, "f", "Saved", 5000))
		if res.Outcome != "unknown" || res.Dispatch != "dispatched" || res.Postcondition != "unverified" || res.Code != wire.CodeConnectionLost || res.Observation != nil {
			t.Fatalf("%+v", res)
		}
	})
}

func TestActRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		script   func(a *actOn)
		action   func(a *actOn) map[string]any
		outcome  string
		code     wire.Code
		dispatch string
		asked    bool // the provider was asked to dispatch (and refused or failed)
	}{
		// The provider refuses before any input (PROVIDER.md): nothing happened.
		{"the provider finds the target changed", failInput(wire.CodeStaleTarget), click, "failed", wire.CodeStaleTarget, "notDispatched", true},
		{"an overlay would get the click", failInput(wire.CodeNotActionable), click, "failed", wire.CodeNotActionable, "notDispatched", true},
		{"the gate is gone", failInput(wire.CodeLeaseRevoked), click, "cancelled", wire.CodeLeaseRevoked, "notDispatched", true},
		{"the frame is not allowed", failInput(wire.CodePolicyDenied), click, "failed", wire.CodePolicyDenied, "notDispatched", true},
		{"the provider finds the command malformed", failInput(wire.CodeInvalidRequest), click, "failed", wire.CodeInvalidRequest, "notDispatched", true},
		// The provider fails during or after the input: it may have happened.
		{"the dispatch fails midway", failInput(wire.CodeInternalError), click, "unknown", wire.CodeInternalError, "dispatched", true},
		{"the browser goes away", failInput(wire.CodeConnectionLost), click, "unknown", wire.CodeConnectionLost, "dispatched", true},
		{"no answer in time", func(a *actOn) { a.p.delay(browser.ProviderInputClick, time.Minute) }, func(a *actOn) map[string]any {
			req := click(a)
			req["timeoutMs"] = 100
			return req
		}, "unknown", wire.CodeDeadlineExceeded, "dispatched", true},
		// The broker refuses before asking the provider.
		{"a ref of an old document", func(a *actOn) {
			a.p.page.edit(func(pg *fakePage) { pg.epoch = "F:L2" })
			a.observe("s", a.lease.ID)
		}, click, "failed", wire.CodeStaleTarget, "notDispatched", false},
		{"another document epoch", nil, func(a *actOn) map[string]any {
			req := click(a)
			req["documentEpoch"] = "F:L0"
			return req
		}, "failed", wire.CodeStaleTarget, "notDispatched", false},
		{"an unknown ref", nil, func(a *actOn) map[string]any {
			return a.request("x", map[string]any{"kind": "click", "ref": "r-unknown"})
		}, "failed", wire.CodeStaleTarget, "notDispatched", false},
		{"a region", nil, func(a *actOn) map[string]any {
			return a.request("x", map[string]any{"kind": "click", "ref": a.ref("main", "Main area")})
		}, "failed", wire.CodeNotActionable, "notDispatched", false},
		{"an element not rendered", quads(`{"quads":[]}`), click, "failed", wire.CodeNotActionable, "notDispatched", false},
		{"geometry that breaks the contract", quads(`{"quads":"none"}`), click, "failed", wire.CodeInternalError, "notDispatched", false},
		{"a node gone before the scroll", func(a *actOn) { a.p.fail(browser.ProviderCDP, wire.CodeInternalError) }, click, "failed", wire.CodeStaleTarget, "notDispatched", false},
		{"a queue that never frees", func(a *actOn) {
			a.t.Cleanup(a.p.hold(browser.ProviderAXRead))
			go a.r.Observe(context.Background(), a.c, json.RawMessage(`{"sessionId":"s","leaseId":"`+a.lease.ID+`"}`))
			a.p.waitCalls(a.t, browser.ProviderAXRead, 2) // the observation holds the tab's queue
		}, func(a *actOn) map[string]any {
			req := click(a)
			req["timeoutMs"] = 50
			return req
		}, "failed", wire.CodeDeadlineExceeded, "notDispatched", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newActOn(t, Config{})
			if tc.script != nil {
				tc.script(a)
			}
			res := a.act("s", tc.action(a))
			if res.Outcome != tc.outcome || res.Code != tc.code || res.Dispatch != tc.dispatch || res.Postcondition != "unverified" || res.Observation != nil {
				t.Fatalf("%+v, want %s %s %s", res, tc.outcome, tc.code, tc.dispatch)
			}
			if sent := a.inputs(); sent != map[bool]int{true: 1}[tc.asked] {
				t.Fatalf("%d inputs sent", sent)
			}
		})
	}
}

func click(a *actOn) map[string]any {
	return a.request("x", map[string]any{"kind": "click", "ref": a.ref("button", "Greet")})
}

func failInput(code wire.Code) func(a *actOn) {
	return func(a *actOn) { a.p.fail(browser.ProviderInputClick, code) }
}

// quads scripts DOM.getContentQuads to answer data.
func quads(data string) func(a *actOn) {
	return func(a *actOn) {
		a.p.on(browser.ProviderCDP, func(params any) (any, error) {
			if params.(*cdpParams).Method == "DOM.getContentQuads" {
				return json.RawMessage(data), nil
			}
			return map[string]any{}, nil
		})
	}
}

// TestActLeaseEndsBeforeTheInput: a lease that ends while its action waits
// (for stable geometry, for the tab's queue) gets no input: the broker
// checks the lease right before it asks the provider to dispatch.
func TestActLeaseEndsBeforeTheInput(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	a.p.on(browser.ProviderCDP, func(params any) (any, error) {
		if params.(*cdpParams).Method == "DOM.scrollIntoViewIfNeeded" {
			must[map[string]bool](t, a.r.Release, a.c, map[string]any{"sessionId": "s", "leaseId": a.lease.ID})
			return map[string]any{}, nil
		}
		return map[string]any{"quads": quadOf}, nil
	})
	res := a.act("s", click(a))
	if res.Outcome != "cancelled" || res.Code != wire.CodeLeaseRevoked || res.Dispatch != "notDispatched" || a.inputs() != 0 {
		t.Fatalf("%+v after %d inputs", res, a.inputs())
	}
}

func TestActRetries(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	req := a.request("a1", map[string]any{"kind": "fill", "ref": a.ref("textbox", "Your name"), "text": "Ada"})
	first := a.act("s", req)
	again := a.act("s", req)
	if again.Outcome != first.Outcome || again.Dispatch != first.Dispatch || again.Observation == nil || a.inputs() != 1 {
		t.Fatalf("a retry %+v of %+v: %d inputs", again, first, a.inputs())
	}
	changed := a.request("a1", map[string]any{"kind": "fill", "ref": a.ref("textbox", "Your name"), "text": "Bob"})
	if _, err := invoke[any](t, a.r.Act, a.c, map[string]any{"sessionId": "s", "request": changed}); rpc.CodeOf(err) != wire.CodeRequestIDConflict {
		t.Fatalf("the same requestId with another payload: %v", err)
	}
	// Another session's request ID is another action.
	other := a.claimOther("t")
	a.act("t", map[string]any{"requestId": "a1", "leaseId": other.ID, "documentEpoch": "F:L1",
		"action": map[string]any{"kind": "fill", "ref": refOf(t, a.observe("t", other.ID).Nodes, "textbox", "Your name"), "text": "Ada"}})
	if a.inputs() != 2 {
		t.Fatalf("%d inputs: another session's a1 did not run", a.inputs())
	}

	// Past its retention the result is gone: metadata only, never a second input.
	a.clock.advance(ResultRetention + time.Second)
	rec := a.act("s", req)
	if rec.Code != wire.CodeRecoveryRequired || rec.Outcome != "unknown" || rec.Recovery == nil || rec.Recovery.State != journal.StateSettled ||
		rec.Recovery.PriorOutcome != first.Outcome || rec.Recovery.Dispatch != "dispatched" || rec.Observation != nil || a.inputs() != 2 {
		t.Fatalf("a retry after retention: %+v (%+v)", rec, rec.Recovery)
	}

	// A duplicate while the first runs waits for it and gets its answer.
	texts := a.p.count(browser.ProviderInputText)
	release := a.p.hold(browser.ProviderInputText)
	dup := a.request("a2", map[string]any{"kind": "type", "ref": a.ref("textbox", "Your name"), "text": "x"})
	results := make(chan browser.ActionResult, 2)
	for range 2 {
		go func() {
			res, err := invoke[browser.ActionResult](t, a.r.Act, a.c, map[string]any{"sessionId": "s", "request": dup})
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	a.p.waitCalls(t, browser.ProviderInputText, texts+1)
	release()
	r1, r2 := <-results, <-results
	if r1.Outcome != r2.Outcome || r1.Dispatch != "observed" || r2.Dispatch != "observed" || a.p.count(browser.ProviderInputText) != texts+1 {
		t.Fatalf("concurrent duplicates: %+v and %+v, %d input.text", r1, r2, a.p.count(browser.ProviderInputText))
	}
}

// claimOther leases a second tab of the provider for session.
func (a *actOn) claimOther(session string) browser.LeaseResult {
	a.p.on(browser.ProviderTabsList, func(any) (any, error) {
		return []browser.TabSummary{{ID: "inst:2", InstanceID: "inst", URL: pageURL}}, nil
	})
	return must[browser.LeaseResult](a.t, a.r.Claim, a.c, map[string]any{"sessionId": session, "instanceId": "inst", "tab": "inst:2"})
}

func TestActInFrame(t *testing.T) {
	t.Parallel()
	f, l, frames := frameFixture(t)
	sel := selector(frames[1])
	fo := must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "frame": sel})
	inner := refOf(t, fo.Nodes, "button", "Inner")
	req := func(id, ref string, frame map[string]any, epoch string) map[string]any {
		r := map[string]any{"requestId": id, "leaseId": l.ID, "documentEpoch": epoch, "action": map[string]any{"kind": "click", "ref": ref, "expected": expect("Inside")}}
		if frame != nil {
			r["frame"] = frame
		}
		return r
	}
	res := must[browser.ActionResult](t, f.r.Act, f.c, map[string]any{"sessionId": "s", "request": req("in", inner, sel, "C:LC1")})
	if res.Outcome != "succeeded" || res.Observation == nil || res.Observation.Scope.Kind != "frame" || res.Observation.DocumentEpoch != "C:LC1" {
		t.Fatalf("a click in the frame %+v", res)
	}
	if c := f.p.sent(browser.ProviderInputClick)[0].(*requestParams[inputCommand]).Request; c.Frame == nil || *c.Frame != (frameDocument{"C", "LC1"}) ||
		c.DocumentEpoch != "C:LC1" || c.Target.BackendNodeID != 50 {
		t.Fatalf("input.click sent %+v", c)
	}

	main := f.observe("s", l.ID)
	greet := refOf(t, main.Nodes, "button", "Greet")
	for _, tc := range []struct {
		name string
		req  map[string]any
		code wire.Code
	}{
		{"a frame's ref without the frame", req("a", inner, nil, "C:LC1"), wire.CodeInvalidRequest},
		{"a frame's ref on the main document", req("b", inner, nil, "F:L1"), wire.CodeInvalidRequest},
		{"a main document ref in the frame", req("c", greet, sel, "C:LC1"), wire.CodeStaleTarget},
		{"a frame that is not listed", req("d", inner, map[string]any{"frameId": "frame-0", "documentEpoch": "C:LC1"}, "C:LC1"), wire.CodeStaleTarget},
	} {
		res := must[browser.ActionResult](t, f.r.Act, f.c, map[string]any{"sessionId": "s", "request": tc.req})
		if res.Code != tc.code || res.Dispatch != "notDispatched" {
			t.Errorf("%s: %+v, want %s", tc.name, res, tc.code)
		}
	}
	if f.p.count(browser.ProviderInputClick) != 1 {
		t.Fatalf("%d clicks", f.p.count(browser.ProviderInputClick))
	}

	// A provider without input.frame.v1 is not asked.
	g, l2, frames2 := frameFixture(t, append(browser.Required(), browser.CapFramesList, browser.CapFrameRead)...)
	sel2 := selector(frames2[1])
	fo2 := must[browser.Observation](t, g.r.Observe, g.c, map[string]any{"sessionId": "s", "leaseId": l2.ID, "frame": sel2})
	lists := g.p.count(browser.ProviderFramesList)
	res = must[browser.ActionResult](t, g.r.Act, g.c, map[string]any{"sessionId": "s", "request": map[string]any{"requestId": "x", "leaseId": l2.ID,
		"documentEpoch": "C:LC1", "frame": sel2, "action": map[string]any{"kind": "click", "ref": refOf(t, fo2.Nodes, "button", "Inner")}}})
	if res.Code != wire.CodeUnsupportedCapability || res.Dispatch != "notDispatched" || g.p.count(browser.ProviderFramesList) != lists || g.p.count(browser.ProviderCDP) != 0 {
		t.Fatalf("a frame action without input.frame.v1: %+v", res)
	}
}

// TestActDurable runs actions of a client with a journalKey over a real
// journal: a retry from a new connection never dispatches again.
func TestActDurable(t *testing.T) {
	t.Parallel()
	j := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	t.Cleanup(func() { j.Close() })
	a := newActOn(t, Config{Journal: j})
	key := strings.Repeat("ab", 32)
	a.c.journalKey = key
	req := a.request("d1", map[string]any{"kind": "fill", "ref": a.ref("textbox", "Your name"), "text": "Ada"})
	first := a.act("s", req)
	if first.Dispatch != "observed" || a.inputs() != 1 {
		t.Fatalf("%+v", first)
	}
	// The owner's retry: the retained answer.
	res := must[browser.ActionResult](t, a.r.Act, a.c, map[string]any{"sessionId": "s", "request": req})
	if res.Dispatch != "observed" || res.Code != "" || res.Observation == nil || a.inputs() != 1 {
		t.Fatalf("the owner's retry %+v after %d inputs", res, a.inputs())
	}
	// The same key on a new connection (a reconnect, or another program):
	// it does not own the lease, so it learns what happened, not the page.
	again := newFakeClient(2)
	again.journalKey = key
	a.h.connect(again)
	res = must[browser.ActionResult](t, a.r.Act, again, map[string]any{"sessionId": "s", "request": req})
	if res.Code != wire.CodeRecoveryRequired || res.Observation != nil || a.inputs() != 1 {
		t.Fatalf("a retry on a new connection %+v after %d inputs", res, a.inputs())
	}
	changed := a.request("d1", map[string]any{"kind": "fill", "ref": a.ref("textbox", "Your name"), "text": "Bob"})
	if _, err := invoke[any](t, a.r.Act, again, map[string]any{"sessionId": "s", "request": changed}); rpc.CodeOf(err) != wire.CodeRequestIDConflict {
		t.Fatalf("another payload: %v", err)
	}
	// The result is no longer retained: the journal says what happened.
	a.clock.advance(ResultRetention + time.Second)
	res = must[browser.ActionResult](t, a.r.Act, again, map[string]any{"sessionId": "s", "request": req})
	if res.Code != wire.CodeRecoveryRequired || res.Recovery == nil || res.Recovery.State != journal.StateSettled || res.Recovery.Dispatch != "dispatched" || a.inputs() != 1 {
		t.Fatalf("after retention %+v %+v", res, res.Recovery)
	}
	// Intent without an outcome (the broker died after reserving): it may
	// have happened, and is never replayed.
	crashed := a.request("d2", map[string]any{"kind": "fill", "ref": a.ref("textbox", "Your name"), "text": "Ada"})
	var ar browser.ActionRequest
	data, _ := json.Marshal(crashed)
	json.Unmarshal(data, &ar)
	idt := a.r.identify(a.c, "s", "d2", ar)
	if err := j.Reserve(idt.key, idt.hash, "fill"); err != nil {
		t.Fatal(err)
	}
	res = a.act("s", crashed)
	if res.Code != wire.CodeRecoveryRequired || res.Recovery.State != journal.StateReserved || res.Dispatch != "dispatched" || a.inputs() != 1 {
		t.Fatalf("a reserved action %+v %+v", res, res.Recovery)
	}
}

// TestActJournalFaults: a journal that cannot take the intent refuses the
// action before any input; one that cannot record the outcome makes an
// input that may have happened unknown; reads keep working.
func TestActJournalFaults(t *testing.T) {
	t.Parallel()
	j := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{MaxEntries: 1})
	t.Cleanup(func() { j.Close() })
	a := newActOn(t, Config{Journal: j})
	a.c.journalKey = strings.Repeat("ef", 32)
	fill := func(id string) map[string]any {
		return a.request(id, map[string]any{"kind": "fill", "ref": a.ref("textbox", "Your name"), "text": "Ada"})
	}
	a.act("s", fill("j1"))
	if res := a.act("s", fill("j2")); res.Code != wire.CodeJournalFull || res.Dispatch != "notDispatched" || res.Outcome != "failed" || a.inputs() != 1 {
		t.Fatalf("a full journal: %+v after %d inputs", res, a.inputs())
	}

	// The journal fails between the intent and the outcome.
	k := newActOn(t, Config{Journal: journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})})
	k.c.journalKey = a.c.journalKey
	k.p.on(browser.ProviderInputText, func(any) (any, error) {
		k.r.cfg.Journal.(*journal.Journal).Close()
		return map[string]bool{"dispatched": true}, nil
	})
	res := k.act("s", k.request("j1", map[string]any{"kind": "fill", "ref": k.ref("textbox", "Your name"), "text": "Ada"}))
	if res.Code != wire.CodeJournalUnavailable || res.Outcome != "unknown" || res.Dispatch != "observed" || k.inputs() != 1 {
		t.Fatalf("an outcome that cannot be recorded: %+v", res)
	}
	res = k.act("s", k.request("j2", map[string]any{"kind": "fill", "ref": k.ref("textbox", "Your name"), "text": "Ada"}))
	if res.Code != wire.CodeJournalUnavailable || res.Dispatch != "notDispatched" || k.inputs() != 1 {
		t.Fatalf("an unavailable journal: %+v after %d inputs", res, k.inputs())
	}
	k.observe("s", k.lease.ID)
}

// TestActChangeSince: a client that lists broker.action-delta.v1 and names
// the observation it acted on gets what changed since, which applied to
// that observation gives the page now; a cursor the runtime no longer
// knows gets the whole page and why; a client that did not ask cannot.
func TestActChangeSince(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	for i := range 30 { // a page big enough that one change is worth a delta
		a.p.page.edit(func(pg *fakePage) {
			pg.add(fmt.Sprint("b", i), "2", axNode{BackendNodeID: int64(100 + i), Role: "button", Name: fmt.Sprint("Item ", i)})
		})
	}
	a.obs = a.observe("s", a.lease.ID)
	a.p.on(browser.ProviderInputClick, func(any) (any, error) {
		a.p.page.say("Hello, Ada!")
		return map[string]bool{"dispatched": true}, nil
	})
	click := func(id, since string) (browser.ActionResult, error) {
		req := a.request(id, map[string]any{"kind": "click", "ref": a.ref("button", "Greet")})
		if since != "" {
			req["since"] = since
		}
		return invoke[browser.ActionResult](t, a.r.Act, a.c, map[string]any{"sessionId": "s", "request": req})
	}

	if _, err := click("unasked", a.obs.Cursor); rpc.CodeOf(err) != wire.CodeInvalidRequest {
		t.Fatalf("since from a client that did not list the capability: %v", err)
	}
	if a.p.count(browser.ProviderInputClick) != 0 {
		t.Fatal("a refused request clicked")
	}

	a.c.caps = []string{browser.CapActionDelta}
	res, err := click("delta", a.obs.Cursor)
	if err != nil || res.Outcome != "unknown" || res.Dispatch != "observed" || res.Observation != nil || res.Change == nil {
		t.Fatalf("click since the observation acted on: %+v, %v", res, err)
	}
	nodes, text := res.Change.Apply(a.obs.Nodes, a.obs.Text)
	now := a.observe("s", a.lease.ID)
	if fmt.Sprint(nodes) != fmt.Sprint(now.Nodes) || fmt.Sprint(text) != fmt.Sprint(now.Text) || !slices.Contains(text, "Hello, Ada!") {
		t.Fatalf("the change applied to the observation gives\n%v %q\nthe page is\n%v %q", nodes, text, now.Nodes, now.Text)
	}
	if res.Change.BaseCursor != a.obs.Cursor || res.Change.Cursor == "" {
		t.Fatalf("change cursors %s -> %s, acted on %s", res.Change.BaseCursor, res.Change.Cursor, a.obs.Cursor)
	}
	// The change's cursor is a baseline too: the next observe may ask since.
	if d := must[map[string]any](t, a.r.Observe, a.c, map[string]any{"sessionId": "s", "leaseId": a.lease.ID, "cursor": res.Change.Cursor}); d["resyncRequired"] != false {
		t.Fatalf("observe since the change's cursor: %v", d)
	}
	full, _ := json.Marshal(now)
	delta, _ := json.Marshal(res.Change)
	if len(delta)*4 > len(full) {
		t.Errorf("one new line of text: a change of %d bytes against a page of %d", len(delta), len(full))
	}

	res, err = click("unknown", "c-unknown")
	if err != nil || res.Change != nil || res.Observation == nil || !res.Observation.ResyncRequired || res.Observation.ResyncReason != "cursor-unavailable" {
		t.Fatalf("since a cursor the runtime does not know: %+v, %v", res, err)
	}
	// A retry gets the result kept for it, whole, whatever baseline it
	// names: since is not part of what the action is.
	res, err = click("delta", res.Observation.Cursor)
	if err != nil || res.Observation == nil || a.p.count(browser.ProviderInputClick) != 2 {
		t.Fatalf("retry: %+v, %v (%d clicks)", res, err, a.p.count(browser.ProviderInputClick))
	}
}

// TestNavigateLandsWhereItLands: without an expectation, a navigation that
// loads a document succeeds once that document (its loader) is current and
// ready, wherever a redirect or the page's router took it, and its
// observation says where; one within the document is verified by its URL.
// An expectation of the URL asked for still fails elsewhere.
func TestNavigateLandsWhereItLands(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	pg := a.p.page
	landing, loader := "https://app.test/welcome#/", "L2"
	a.p.on(browser.ProviderNavigate, func(params any) (any, error) {
		asked := params.(*requestParams[navigateRequest]).Request.URL
		pg.mu.Lock()
		defer pg.mu.Unlock()
		pg.url = landing
		if loader != "" {
			pg.epoch = "F:" + loader
		}
		return navigation{URL: asked, LoaderID: loader}, nil
	})
	navigate := func(id, url string, expected map[string]any) browser.ActionResult {
		action := map[string]any{"kind": "navigate", "url": url}
		if expected != nil {
			action["expected"] = expected
		}
		return a.act("s", a.request(id, action, "timeoutMs", 300))
	}

	// A redirect, and a router that adds "#/": the page loaded is the result.
	res := navigate("n1", "https://app.test/home", nil)
	if res.Outcome != "succeeded" || res.Postcondition != "passed" || res.Observation == nil || res.Observation.URL != landing {
		t.Fatalf("a navigation that landed elsewhere: %+v", res)
	}
	a.obs = *res.Observation

	// The URL asked for, expected: failed, as the reference has it.
	loader = "L3"
	res = navigate("n2", "https://app.test/home", map[string]any{"kind": "url", "url": "https://app.test/home"})
	if res.Outcome != "failed" || res.Postcondition != "failed" {
		t.Fatalf("an expected URL that never came: %+v", res)
	}
	a.obs = *res.Observation

	// Within the document (no new loader): the tab must show the URL.
	loader, landing = "", "https://app.test/welcome#top"
	if res = navigate("n3", "https://app.test/welcome#top", nil); res.Outcome != "succeeded" {
		t.Fatalf("a navigation to a fragment: %+v", res)
	}
	a.obs = *res.Observation
	landing = "https://app.test/welcome#elsewhere"
	if res = navigate("n4", "https://app.test/welcome#top", nil); res.Outcome != "failed" || res.Postcondition != "failed" {
		t.Fatalf("a navigation to a fragment that the tab does not show: %+v", res)
	}
}

// TestActChangeSinceSearch: an action answered with a change since a
// search (a query observation) is verified by that search, not by reading
// the page, and its change is one of the search: applied to it, it gives
// the search now. An expected text is searched for, the page read only
// when the search cannot decide; a click that leaves the document has the
// page read whole as before.
func TestActChangeSinceSearch(t *testing.T) {
	t.Parallel()
	a := newActOn(t, Config{})
	a.c.caps = []string{browser.CapActionDelta}
	search := func() browser.Observation {
		return must[browser.Observation](t, a.r.Observe, a.c, map[string]any{"sessionId": "s", "leaseId": a.lease.ID,
			"query": map[string]any{"name": "Greet", "role": "button"}})
	}
	q := search()
	ref := refOf(t, q.Nodes, "button", "Greet")
	a.p.on(browser.ProviderInputClick, func(any) (any, error) {
		a.p.page.edit(func(pg *fakePage) {
			for i := range pg.nodes {
				if pg.nodes[i].Name == "Greet" {
					pg.nodes[i].Name = "Greeted"
				}
			}
		})
		return map[string]bool{"dispatched": true}, nil
	})
	click := func(id string, base browser.Observation, extra ...any) browser.ActionResult {
		t.Helper()
		req := a.request(id, map[string]any{"kind": "click", "ref": ref}, append([]any{"since", base.Cursor}, extra...)...)
		return must[browser.ActionResult](t, a.r.Act, a.c, map[string]any{"sessionId": "s", "request": req})
	}
	reads, finds := a.p.count(browser.ProviderAXRead), a.p.count(browser.ProviderAXFind)
	res := click("search", q)
	if res.Outcome != "unknown" || res.Dispatch != "observed" {
		t.Fatalf("click: %+v", res)
	}
	if got := a.p.count(browser.ProviderAXRead) - reads; got != 0 {
		t.Fatalf("the page was read %d times to verify a click since a search", got)
	}
	if got := a.p.count(browser.ProviderAXFind) - finds; got != 1 {
		t.Fatalf("the search ran %d times, want once", got)
	}
	now := res.Observation
	if res.Change != nil {
		nodes, text := res.Change.Apply(q.Nodes, q.Text)
		now = &browser.Observation{Nodes: nodes, Text: text, Scope: res.Change.Scope}
	}
	if now == nil || now.Scope.Kind != "query" || len(now.Nodes) != 0 || now.ResyncRequired {
		t.Fatalf("the search after the click: %+v (change %+v)", now, res.Change)
	}

	// An expected text is searched for as a name: a text node of exactly
	// that text passes without reading the page, and the answer is still
	// the search's change.
	textClick := func(id, text string, extra ...any) (browser.ActionResult, int) {
		t.Helper()
		a.p.page.edit(func(pg *fakePage) { pg.nodes[3].Name = "Greet" })
		q := search()
		reads := a.p.count(browser.ProviderAXRead)
		action := map[string]any{"kind": "click", "ref": ref, "expected": expect(text)}
		res := click(id, q, append([]any{"action", action}, extra...)...)
		if res.Observation != nil && res.Observation.Scope.Kind != "query" || res.Change != nil && res.Change.Scope.Kind != "query" {
			t.Fatalf("a click expecting %q since a search is answered with another scope: %+v", text, res)
		}
		return res, a.p.count(browser.ProviderAXRead) - reads
	}
	if res, reads := textClick("text", "DSH demo"); res.Outcome != "succeeded" || reads != 0 {
		t.Fatalf("a click expecting a text node's text since a search: %+v after %d page reads", res, reads)
	}
	// Part of a text, or only a control's name: the page is read and
	// decides, as it does for a click answered with the page.
	if res, reads := textClick("part", "DSH"); res.Outcome != "succeeded" || reads != 1 {
		t.Fatalf("a click expecting part of a text since a search: %+v after %d page reads", res, reads)
	}
	if res, reads := textClick("control", "Your name", "timeoutMs", 300); res.Outcome != "failed" || res.Postcondition != "failed" || reads == 0 {
		t.Fatalf("a click expecting a control's name, on a page read whole: %+v after %d page reads", res, reads)
	}
	a.p.page.edit(func(pg *fakePage) { pg.truncated = true })
	if res, _ := textClick("control-truncated", "Your name"); res.Outcome != "succeeded" {
		t.Fatalf("a click expecting a control's name, beyond a truncated page: %+v", res)
	}
	if res, _ := textClick("absent", "Nowhere", "timeoutMs", 300); res.Outcome != "unknown" || res.Postcondition != "unverified" {
		t.Fatalf("a click expecting an absent text, on a truncated page: %+v", res)
	}
	a.p.page.edit(func(pg *fakePage) { pg.truncated = false })

	// A click that loads another document shows the new page whole.
	a.p.page.edit(func(pg *fakePage) { pg.nodes[3].Name = "Greet" })
	q = search()
	a.p.on(browser.ProviderInputClick, func(any) (any, error) {
		a.p.page.edit(func(pg *fakePage) { pg.epoch = "F:L2" })
		return map[string]bool{"dispatched": true}, nil
	})
	res = click("navigates", q)
	if res.Observation == nil || res.Observation.Scope.Kind != "document" || res.Observation.ResyncReason != "document-changed" {
		t.Fatalf("a click that left the document: %+v", res)
	}
}
