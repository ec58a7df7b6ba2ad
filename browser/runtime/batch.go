package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Batch runs 1–8 explicit steps on one leased page under one deadline and
// one tab-queue slot. Before each step the owning client approves it through
// browser.approveBatchStep; only {"allowed":true} continues. Any step that
// does not succeed with a passed postcondition, and any change of document
// before the last step, ends the plan. With a journalKey the plan's intent
// is durable before its first step and each step has its own intent; a
// retry never resumes a plan.
func (r *Runtime) Batch(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	in, err := browser.ParseBatch(params)
	if err != nil {
		return nil, r.invalid(err)
	}
	req := in.Request
	timeout := browser.DefaultBatchTimeout
	if req.TimeoutMs != nil {
		timeout = time.Duration(*req.TimeoutMs) * time.Millisecond
	}
	idt := r.identify(c, in.SessionID, req.RequestID, req)
	owner := lease.Owner{Conn: c.ConnID(), Session: in.SessionID}
	f, retry, err := r.begin(ctx, idt, owner, req.LeaseID)
	if f == nil {
		if retry != nil {
			return batchRecovered(retry, len(req.Steps)), nil
		}
		return nil, err
	}
	b := &batch{r: r, c: c, req: req, approvalID: in.ApprovalID, idt: idt, owner: owner}
	res, err := b.run(ctx, timeout)
	var plan *browser.ActionResult
	if res != nil {
		plan = &res.ActionResult
	}
	r.finish(idt, f, req.LeaseID, plan, err)
	if err != nil {
		return nil, err
	}
	r.publish(b.owner, req.LeaseID, res.Observation)
	return res, nil
}

func batchRecovered(ar *browser.ActionResult, steps int) *browser.BatchResult {
	return &browser.BatchResult{ActionResult: *ar, TotalSteps: steps}
}

type batch struct {
	r          *Runtime
	c          Client
	req        browser.BatchRequest
	approvalID string
	idt        identity
	owner      lease.Owner
}

// childID is the reserved request ID of step i: deterministic, so a retry
// of the plan finds its children's fences.
func (b *batch) childID(i int) string {
	sum := sha256.Sum256([]byte(b.req.RequestID))
	return "batch:" + hex.EncodeToString(sum[:]) + ":" + strconv.Itoa(i)
}

func (b *batch) run(ctx context.Context, timeout time.Duration) (*browser.BatchResult, error) {
	r, req := b.r, b.req
	out := &browser.BatchResult{ActionResult: browser.ActionResult{RequestID: req.RequestID}, TotalSteps: len(req.Steps)}
	if b.idt.durable {
		rec, err := r.cfg.Journal.Lookup(b.idt.key)
		if err != nil {
			refuse(&out.ActionResult, err)
			return out, nil
		}
		if rec != nil {
			if rec.Hash != b.idt.hash {
				return nil, wire.Err(wire.CodeRequestIDConflict)
			}
			if cached := r.cachedFor(b.owner, req.LeaseID, b.idt.id); cached != nil { // the first answer, while it is retained, to its lease's owner
				return batchRecovered(cached, len(req.Steps)), nil
			}
			return batchRecovered(recovered(req.RequestID, rec), len(req.Steps)), nil
		}
	}
	l, p, prov, err := r.leased(b.owner, req.LeaseID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.acquire(ctx.Done()); err != nil {
		refuse(&out.ActionResult, err)
		return out, nil
	}
	defer p.release()

	if b.idt.durable {
		if answer := r.reserve(b.idt.key, b.idt.hash, "batch", req.RequestID); answer != nil {
			return batchRecovered(answer, len(req.Steps)), nil
		}
	}

	out.Outcome, out.Dispatch, out.Postcondition = "succeeded", "notDispatched", "passed"
	stopped := -1
	for i, st := range req.Steps {
		step := b.step(ctx, l, p, prov, i, st)
		out.Steps = append(out.Steps, browser.StepReport{Index: i, Status: "attempted", Result: step})
		if step.Dispatch != "notDispatched" {
			out.Dispatch = "dispatched"
		}
		out.Observation = step.Observation
		ok := step.Outcome == "succeeded" && step.Postcondition == "passed" && step.Recovery == nil
		if ok && i < len(req.Steps)-1 && (step.Observation == nil || step.Observation.DocumentEpoch != req.DocumentEpoch) {
			// A non-final step changed the document: the next steps' refs
			// would be stale, and it is not what the plan was approved for.
			out.Outcome, out.Postcondition, out.Code = "unknown", "unverified", wire.CodeStaleTarget
			stopped = i
			break
		}
		if !ok {
			out.Outcome, out.Postcondition, out.Code = step.Outcome, step.Postcondition, step.Code
			if step.Outcome == "succeeded" { // succeeded but unverified
				out.Outcome = "unknown"
			}
			stopped = i
			break
		}
	}
	if stopped >= 0 {
		for i := stopped + 1; i < len(req.Steps); i++ {
			out.Steps = append(out.Steps, browser.StepReport{Index: i, Status: "notRun"})
		}
	}
	if out.Dispatch == "dispatched" && out.Observation != nil {
		out.Dispatch = "observed"
	}
	for i := range out.Steps {
		if res := out.Steps[i].Result; res != nil {
			res.Observation = nil // only the last attempted step's observation, on the plan
		}
	}
	if b.idt.durable {
		r.settle(b.idt.key, &out.ActionResult)
	}
	return out, nil
}

// step asks the client to approve step i, then runs it as a child action
// with its own fence, under the plan's queue slot and deadline. Each step
// is an entry of the activity log, a refused one too.
func (b *batch) step(ctx context.Context, l *lease.Lease, p *page, prov Provider, i int, st browser.BatchStep) (res *browser.ActionResult) {
	r := b.r
	child := browser.ActionRequest{RequestID: b.childID(i), LeaseID: b.req.LeaseID, DocumentEpoch: b.req.DocumentEpoch, Action: st.Action, TimeoutMs: st.TimeoutMs}
	res = &browser.ActionResult{RequestID: child.RequestID}
	g := r.logAction(b.c, st.Action, i, b.idt.durable)
	g.begin(l, p, child) // before the step's intent is journaled
	defer func() { g.end(res) }()
	if _, err := r.leases.Get(b.owner, b.req.LeaseID); err != nil {
		return refuse(res, err)
	}
	if err := ctx.Err(); err != nil {
		return refuse(res, err)
	}
	raw, err := b.c.Call(ctx, browser.MethodApproveBatchStep, map[string]any{"approvalId": b.approvalID, "index": i})
	var answer struct {
		Allowed bool `json:"allowed"`
	}
	if err != nil || json.Unmarshal(raw, &answer) != nil || !answer.Allowed {
		if err != nil && rpc.CodeOf(err) == wire.CodeCancelled {
			return refuse(res, err)
		}
		return refuse(res, wire.Err(wire.CodePolicyDenied))
	}
	sctx := ctx
	if st.TimeoutMs != nil {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, time.Duration(*st.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	if !b.idt.durable {
		return r.performHeld(sctx, l, p, prov, child, res)
	}
	payload, _ := json.Marshal(child)
	key := journal.Key{Scope: b.idt.key.Scope, RequestID: child.RequestID}
	if answer := r.reserve(key, sha256.Sum256(payload), st.Action.Kind, child.RequestID); answer != nil {
		return answer
	}
	g.wait() // the log's begin, synced beside the intent
	res = r.performHeld(sctx, l, p, prov, child, res)
	r.settle(key, res)
	return res
}
