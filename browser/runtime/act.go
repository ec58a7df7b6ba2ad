package runtime

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/internal/failpoint"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Action limits.
const (
	MaxFences = 10_000
)

// validFrame checks a frame action: on the frame's document.
func validFrame(req *browser.ActionRequest) bool {
	f := req.Frame
	return f == nil || (bounded(f.FrameID, 1, 128) && f.DocumentEpoch == req.DocumentEpoch)
}

// validAction checks an action's fields beyond their types.
func validAction(a *browser.Action) bool {
	if !bounded(a.Ref, 1, 128) {
		return false
	}
	textOK := a.Text != nil && textLen(*a.Text) <= browser.MaxActionText
	switch a.Kind {
	case "click":
		if a.Text != nil || a.Key != "" || a.Shift != nil {
			return false
		}
	case "fill", "type", "append":
		if !textOK || a.Key != "" || a.Shift != nil {
			return false
		}
	case "press":
		if a.Text != nil || !browser.NamedKeys[a.Key] {
			return false
		}
	default:
		return false
	}
	if e := a.Expected; e != nil {
		if e.Kind != "text" || !bounded(e.Text, 1, browser.MaxExpectedText) || strings.TrimSpace(e.Text) == "" {
			return false
		}
	}
	return true
}

// Act performs one action on the leased page with the identity checks of
// PROVIDER.md, then verifies the optional expectation. Each (session,
// requestId) runs at most once: a retry with the same payload gets the
// first result while it is retained and a metadata-only RECOVERY_REQUIRED
// after; a reuse with another payload is REQUEST_ID_CONFLICT.
func (r *Runtime) Act(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	var in browser.ActParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	req := in.Request
	if !bounded(in.SessionID, 1, 256) || !bounded(req.RequestID, 1, 128) || strings.HasPrefix(req.RequestID, "batch:") ||
		!bounded(req.LeaseID, 1, 256) || !bounded(req.DocumentEpoch, 1, 512) || !validAction(&req.Action) || !validFrame(&req) {
		return nil, invalid()
	}
	timeout := browser.DefaultActionTimeout
	if req.TimeoutMs != nil {
		if *req.TimeoutMs < 1 || *req.TimeoutMs > int(browser.MaxActionTimeout/time.Millisecond) {
			return nil, invalid()
		}
		timeout = time.Duration(*req.TimeoutMs) * time.Millisecond
	}
	idt := r.identify(c, in.SessionID, req.RequestID, req)
	owner := lease.Owner{Conn: c.ConnID(), Session: in.SessionID}
	f, retry, err := r.begin(ctx, idt, owner, req.LeaseID)
	if f == nil {
		return retry, err
	}
	ctx = withLogged(ctx, r.logAction(c, req.Action, -1))
	var res *browser.ActionResult
	if idt.durable {
		res, err = r.actDurable(ctx, owner, idt, req, timeout)
	} else {
		res, err = r.act(ctx, owner, req, timeout)
	}
	r.finish(idt, f, req.LeaseID, res, err)
	if res != nil {
		r.publish(owner, req.LeaseID, res.Observation)
	}
	return res, err
}

// actDurable runs an action under the journal: intent is durable before the
// provider is asked to dispatch, the outcome is recorded after.
func (r *Runtime) actDurable(ctx context.Context, owner lease.Owner, idt identity, req browser.ActionRequest, timeout time.Duration) (*browser.ActionResult, error) {
	rec, err := r.cfg.Journal.Lookup(idt.key)
	if err != nil {
		return refuse(&browser.ActionResult{RequestID: req.RequestID}, err), nil
	}
	if rec != nil {
		if rec.Hash != idt.hash {
			return nil, wire.Err(wire.CodeRequestIDConflict)
		}
		if cached := r.cachedFor(owner, req.LeaseID, idt.id); cached != nil {
			return cached, nil
		}
		return recovered(req.RequestID, rec), nil
	}
	return r.run(ctx, owner, req, timeout,
		func() *browser.ActionResult { return r.reserve(idt.key, idt.hash, req.Action.Kind, req.RequestID) },
		func(res *browser.ActionResult) { r.settle(idt.key, res) })
}

func (r *Runtime) act(ctx context.Context, owner lease.Owner, req browser.ActionRequest, timeout time.Duration) (*browser.ActionResult, error) {
	return r.run(ctx, owner, req, timeout, func() *browser.ActionResult { return nil }, func(*browser.ActionResult) {})
}

// run performs one action. reserve runs once the lease is known to be live,
// right before anything is sent to the provider; a non-nil result from it is
// returned without dispatching. settle runs with the final result.
func (r *Runtime) run(ctx context.Context, owner lease.Owner, req browser.ActionRequest, timeout time.Duration,
	reserve func() *browser.ActionResult, settle func(*browser.ActionResult)) (*browser.ActionResult, error) {
	l, p, prov, err := r.leased(owner, req.LeaseID)
	if err != nil {
		return nil, err
	}
	g := loggedFrom(ctx)
	g.begin(l, p, req) // before the intent: the log knows what the journal knows
	if res := reserve(); res != nil {
		g.end(res)
		return res, nil
	}
	res := r.perform(ctx, l, p, prov, req, timeout)
	settle(res)
	g.end(res)
	return res, nil
}

// perform resolves the target, dispatches through the provider's fenced
// input seam and verifies. It always returns a result saying what happened.
func (r *Runtime) perform(ctx context.Context, l *lease.Lease, p *page, prov Provider, req browser.ActionRequest, timeout time.Duration) *browser.ActionResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &browser.ActionResult{RequestID: req.RequestID}
	notDispatched := func(err error) *browser.ActionResult { return refuse(res, err) }
	if !p.acquire(ctx.Done()) {
		return notDispatched(wire.Err(wire.CodeDeadlineExceeded))
	}
	defer p.release()
	return r.performHeld(ctx, l, p, prov, req, res)
}

// refuse fills res for an action refused before any input was sent.
func refuse(res *browser.ActionResult, err error) *browser.ActionResult {
	res.Dispatch, res.Postcondition, res.Code = "notDispatched", "unverified", rpc.CodeOf(err)
	switch res.Code {
	case wire.CodeCancelled, wire.CodeUserStopped, wire.CodeLeaseRevoked:
		res.Outcome = "cancelled"
	default:
		res.Outcome = "failed"
	}
	return res
}

// performHeld is perform for a caller that holds the tab's queue slot (a
// batch holds one slot for all its steps).
func (r *Runtime) performHeld(ctx context.Context, l *lease.Lease, p *page, prov Provider, req browser.ActionRequest, res *browser.ActionResult) *browser.ActionResult {
	notDispatched := func(err error) *browser.ActionResult { return refuse(res, err) }
	var frame *sourceFrame
	if req.Frame != nil {
		if !prov.Capable(browser.CapFrameInput) {
			return notDispatched(wire.Err(wire.CodeUnsupportedCapability))
		}
		f, err := r.frameTarget(ctx, l, p, prov, req.Frame)
		if err != nil {
			return notDispatched(err)
		}
		frame = &f
	}
	t := p.resolve(req.Action.Ref, req.DocumentEpoch, frame != nil)
	if t == nil {
		if frame == nil && p.frameRef(req.Action.Ref) {
			return notDispatched(wire.Err(wire.CodeInvalidRequest)) // a frame's element: the request must name the frame
		}
		return notDispatched(wire.Err(wire.CodeStaleTarget))
	}
	if t.region {
		return notDispatched(wire.Err(wire.CodeNotActionable))
	}
	command := inputCommand{
		DocumentEpoch: req.DocumentEpoch,
		Target:        inputTarget{BackendNodeID: t.BackendNodeID, Role: t.Role, Name: t.Name},
	}
	if frame != nil {
		command.Frame = frame.document()
	}
	var method string
	switch a := req.Action; a.Kind {
	case "click":
		x, y, err := r.clickPoint(ctx, prov, l, t)
		if err != nil {
			return notDispatched(err)
		}
		method, command.X, command.Y = browser.ProviderInputClick, &x, &y
	case "fill", "type", "append":
		mode := map[string]string{"fill": "replace", "type": "insert", "append": "append"}[a.Kind]
		method, command.Text, command.Mode = browser.ProviderInputText, a.Text, mode
	case "press":
		method, command.Key = browser.ProviderInputKey, a.Key
		command.Shift = a.Shift != nil && *a.Shift
	}
	// The lease may have ended while the action waited (for the tab's queue,
	// stable geometry or a batch step's approval): no input under it.
	if _, err := r.leases.Get(l.Owner, l.ID); err != nil {
		return notDispatched(err)
	}
	if err := callInput(ctx, prov, method, l, command); err != nil {
		switch rpc.CodeOf(err) {
		case wire.CodeStaleTarget, wire.CodeNotActionable, wire.CodeLeaseRevoked, wire.CodePolicyDenied, wire.CodeInvalidRequest:
			return notDispatched(err) // refused before any input (PROVIDER.md)
		}
		// The input may or may not have happened: say so, never retry.
		res.Outcome, res.Dispatch, res.Postcondition, res.Code = "unknown", "dispatched", "unverified", rpc.CodeOf(err)
		return res
	}
	failpoint.Hit("after-dispatch")
	res.Dispatch = "dispatched"
	look := func(q *browser.Query) (*browser.Observation, error) { return r.observe(ctx, l, p, q) }
	if req.Frame != nil {
		// Verified in the frame only: the action's scope.
		look = func(q *browser.Query) (*browser.Observation, error) {
			return r.observeFrame(ctx, l, p, prov, req.Frame, q)
		}
	}
	r.verify(ctx, p, look, req.Action.Expected, res)
	return res
}

// verify observes the page after an action and checks the expectation,
// re-reading on every page change until the deadline.
func (r *Runtime) verify(ctx context.Context, p *page, look func(*browser.Query) (*browser.Observation, error), want *browser.Expected, res *browser.ActionResult) {
	res.Outcome, res.Postcondition = "unknown", "unverified"
	// notSeen is the answer when the deadline ends the wait: the text is
	// absent from a complete observation (failed), or could be in the part
	// a truncated one left out (unverified).
	notSeen := func() {
		if res.Observation != nil && !res.Observation.Truncated {
			res.Outcome, res.Postcondition = "failed", "failed"
		}
	}
	for {
		wake := p.changes()
		obs, err := look(nil)
		if err != nil {
			if want != nil && ctx.Err() != nil {
				notSeen()
			}
			if res.Observation == nil {
				res.Code = rpc.CodeOf(err)
			}
			return
		}
		res.Observation, res.Dispatch = obs, "observed"
		if want == nil {
			return
		}
		if containsText(obs.Text, want.Text) || (obs.Truncated && named(look, want.Text)) {
			res.Outcome, res.Postcondition = "succeeded", "passed"
			return
		}
		select {
		case <-wake:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			notSeen()
			return
		}
	}
}

// named looks for the expected text beyond a truncated observation: an
// element whose accessible name is exactly that text (a bounded, literal
// search, like a query observation).
func named(look func(*browser.Query) (*browser.Observation, error), text string) bool {
	name := collapse(text)
	if !bounded(name, 1, browser.MaxNameLength) {
		return false
	}
	q, err := look(&browser.Query{Name: name})
	return err == nil && len(q.Nodes) > 0
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func containsText(fragments []string, want string) bool {
	return strings.Contains(collapse(strings.Join(fragments, " ")), collapse(want))
}

type quad [8]float64

// clickPoint scrolls the target into view and returns the centre of its
// first on-screen box once two samples 32 ms apart agree (stable geometry).
func (r *Runtime) clickPoint(ctx context.Context, prov Provider, l *lease.Lease, t *target) (float64, float64, error) {
	call := func(method string, params map[string]any) (json.RawMessage, error) {
		return callCDP(ctx, prov, l, method, params)
	}
	node := map[string]any{"backendNodeId": t.BackendNodeID}
	if _, err := call("DOM.scrollIntoViewIfNeeded", node); err != nil {
		return 0, 0, staleIfGone(err)
	}
	var prev []quad
	for {
		raw, err := call("DOM.getContentQuads", node)
		if err != nil {
			return 0, 0, staleIfGone(err)
		}
		var q struct {
			Quads []quad `json:"quads"`
		}
		if err := json.Unmarshal(raw, &q); err != nil {
			return 0, 0, providerErr("cdp DOM.getContentQuads", err)
		}
		if len(q.Quads) == 0 {
			return 0, 0, wire.Err(wire.CodeNotActionable) // not rendered
		}
		if quadsEqual(prev, q.Quads) {
			x, y := centre(q.Quads[0])
			if math.IsNaN(x) || math.IsNaN(y) {
				return 0, 0, wire.Err(wire.CodeNotActionable)
			}
			return x, y, nil
		}
		prev = q.Quads
		select {
		case <-time.After(32 * time.Millisecond):
		case <-ctx.Done():
			return 0, 0, wire.Err(wire.CodeDeadlineExceeded)
		}
	}
}

// staleIfGone maps a provider error on a node lookup: a node that no longer
// exists is a stale target.
func staleIfGone(err error) error {
	if rpc.CodeOf(err) == wire.CodeInternalError {
		return wire.Err(wire.CodeStaleTarget)
	}
	return err
}

func quadsEqual(a, b []quad) bool {
	if len(a) != len(b) || a == nil {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func centre(q quad) (float64, float64) {
	return (q[0] + q[2] + q[4] + q[6]) / 4, (q[1] + q[3] + q[5] + q[7]) / 4
}
