package runtime

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Action limits.
const (
	MaxFences = 10_000
)

// Act performs one action on the leased page with the identity checks of
// PROVIDER.md, then verifies the optional expectation. Each (session,
// requestId) runs at most once: a retry with the same payload gets the
// first result while it is retained and a metadata-only RECOVERY_REQUIRED
// after; a reuse with another payload is REQUEST_ID_CONFLICT.
func (r *Runtime) Act(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	in, err := browser.ParseAct(params)
	if err != nil {
		return nil, r.invalid(err)
	}
	req := in.Request
	if req.Frame != nil && req.Action.Kind != browser.ActClick && !c.Capable(browser.CapFrameInputClient) {
		// The reference acts in frames by click only; fill, type, append and
		// press there are ours, for clients that ask for them.
		return nil, invalid()
	}
	if req.Since != "" && !c.Capable(browser.CapActionDelta) {
		return nil, invalid() // ours, for clients that ask for it
	}
	timeout := browser.DefaultActionTimeout
	if req.TimeoutMs != nil {
		timeout = time.Duration(*req.TimeoutMs) * time.Millisecond
	}
	// since says how to answer, not what to do: a retry that names
	// another baseline is the same action.
	what := req
	what.Since = ""
	idt := r.identify(c, in.SessionID, req.RequestID, what)
	owner := lease.Owner{Conn: c.ConnID(), Session: in.SessionID}
	f, retry, err := r.begin(ctx, idt, owner, req.LeaseID)
	if f == nil {
		return retry, err
	}
	ctx = withLogged(ctx, r.logAction(c, req.Action, -1, idt.durable))
	if req.Since != "" {
		ctx = withReadScope(ctx, readScopeOf(r.baseline(owner, req.LeaseID, req.Since)))
	}
	var res *browser.ActionResult
	if idt.durable {
		res, err = r.actDurable(ctx, owner, idt, req, timeout)
	} else {
		res, err = r.act(ctx, owner, req, timeout)
	}
	r.finish(idt, f, req.LeaseID, res, err)
	if res != nil {
		r.publish(owner, req.LeaseID, res.Observation)
		if req.Since != "" && res.Observation != nil {
			res = r.changeSince(owner, req.LeaseID, req.Since, res)
		}
	}
	return res, err
}

// changeSince answers a result with what changed since the observation the
// client acted on, when that is smaller than the page; else with the whole
// observation, saying why no delta could be given. The retained result
// keeps the whole observation: a retry may come from a client without the
// baseline.
func (r *Runtime) changeSince(owner lease.Owner, leaseID, cursor string, res *browser.ActionResult) *browser.ActionResult {
	out := *res
	obs := *res.Observation
	out.Observation = &obs
	if d, ok := since(r.baseline(owner, leaseID, cursor), &obs).(*browser.ObservationDelta); ok {
		out.Observation, out.Change = nil, d
	}
	return &out
}

// readScope is the read that verifies an action whose result is a change
// since a search (a query observation): the same search, so that the
// change is one of that observation and the read costs what the search
// does, not what reading the page does. A read that finds another
// document reads the whole page instead.
type readScope struct {
	query *browser.Query
	epoch string // the document searched
}

// readScopeOf is the read scope of an action answered with a change since
// base: nil (the whole page) unless base is a search of the document (no
// rootRef). An expected text is then checked with a search for it, the
// page read only when that cannot decide (action.textShown).
func readScopeOf(base *browser.Observation) *readScope {
	if base == nil || base.Scope.Kind != "query" || base.Scope.Query == nil || base.Scope.RootRef != "" {
		return nil
	}
	return &readScope{query: base.Scope.Query, epoch: base.DocumentEpoch}
}

type readScopeKey struct{}

// withReadScope passes an action's read scope down to its verification.
func withReadScope(ctx context.Context, s *readScope) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, readScopeKey{}, s)
}

func readScopeFrom(ctx context.Context) *readScope {
	s, _ := ctx.Value(readScopeKey{}).(*readScope)
	return s
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
	g.begin(l, p, req) // before the intent, synced beside it
	res := reserve()
	g.wait() // every action that may happen is in the log on disk
	if res != nil {
		g.end(res)
		return res, nil
	}
	res = r.perform(ctx, l, p, prov, req, timeout)
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
	if err := p.acquire(ctx.Done()); err != nil {
		return notDispatched(err)
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

type quad [8]float64

// box scrolls the target into view (when scroll is set) and returns its
// first on-screen box once two samples 32 ms apart agree (stable
// geometry). An element that is not rendered is NOT_ACTIONABLE.
//
// probe, when not nil, checks a box: it runs on each sample during the
// wait after it, so that what the action checks at the box (where its
// point lands, the hit test) adds no time of its own; box returns its
// answer (probed) for the box the two samples agree on. The probe of a box
// that moved is dropped.
func (r *Runtime) box(ctx context.Context, prov Provider, l *lease.Lease, t *target, scroll bool, probe func(quad) error) (q quad, probed, err error) {
	call := func(method string, params map[string]any) (json.RawMessage, error) {
		return callCDP(ctx, prov, l, method, params)
	}
	node := map[string]any{"backendNodeId": t.BackendNodeID}
	if scroll {
		if _, err := call("DOM.scrollIntoViewIfNeeded", node); err != nil {
			return quad{}, nil, staleIfGone(err)
		}
	}
	var prev []quad // the last sample, probed
	for {
		raw, err := call("DOM.getContentQuads", node)
		if err != nil {
			return quad{}, nil, staleIfGone(err)
		}
		var sample struct {
			Quads []quad `json:"quads"`
		}
		if err := json.Unmarshal(raw, &sample); err != nil {
			return quad{}, nil, providerErr("cdp DOM.getContentQuads", err)
		}
		if len(sample.Quads) == 0 {
			return quad{}, nil, wire.Err(wire.CodeNotActionable) // not rendered
		}
		first := sample.Quads[0]
		finite := !slices.ContainsFunc(first[:], func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
		if quadsEqual(prev, sample.Quads) {
			if !finite {
				return quad{}, nil, wire.Err(wire.CodeNotActionable)
			}
			return first, probed, nil
		}
		prev = sample.Quads
		done := make(chan error, 1)
		if probe != nil && finite {
			go func() { done <- probe(first) }()
		} else {
			done <- nil
		}
		select {
		case <-time.After(32 * time.Millisecond):
			probed = <-done
		case <-ctx.Done():
			<-done
			return quad{}, nil, wire.Err(wire.CodeDeadlineExceeded)
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

// offset maps (x, y), CSS pixels from the box's top-left corner along its
// top and left edges, to the viewport; ok is false when the point is not
// inside the box.
func offset(q quad, x, y float64) (float64, float64, bool) {
	w := math.Hypot(q[2]-q[0], q[3]-q[1])
	h := math.Hypot(q[6]-q[0], q[7]-q[1])
	if w <= 0 || h <= 0 || x < 0 || y < 0 || x >= w || y >= h {
		return 0, 0, false
	}
	u, v := x/w, y/h
	return q[0] + u*(q[2]-q[0]) + v*(q[6]-q[0]), q[1] + u*(q[3]-q[1]) + v*(q[7]-q[1]), true
}
