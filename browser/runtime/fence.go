package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/lease"

	"github.com/dsh-browser/broker/internal/failpoint"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/wire"
)

// fence is the in-memory identity of one action: concurrent duplicates wait
// for the first execution. For a client without a journalKey it is the only
// fence and lives as long as the connection; for a durable client it is
// dropped when the action completes, the journal holding the identity.
type fence struct {
	hash   [32]byte
	done   chan struct{}
	result *browser.ActionResult // nil when err is set
	err    error
}

// identity says where an action's fence lives: under the client's
// journalKey when it has one (it survives reconnects and broker restarts),
// else under this connection; then the session and request ID.
type identity struct {
	durable bool
	key     journal.Key
	id      string // key.Scope + NUL + key.RequestID: the in-memory fence
	hash    [32]byte
}

func (r *Runtime) identify(c Client, session, requestID string, request any) identity {
	payload, _ := json.Marshal(request) // canonical: fixed field order, no unknown fields
	durable := r.cfg.Journal != nil && c.JournalKey() != ""
	scope := fmt.Sprintf("conn:%d", c.ConnID())
	if durable {
		scope = "key:" + c.JournalKey()
	}
	scope += "\x00" + session
	return identity{
		durable: durable,
		key:     journal.Key{Scope: scope, RequestID: requestID},
		id:      scope + "\x00" + requestID,
		hash:    sha256.Sum256(payload),
	}
}

// begin registers an action. For a duplicate of a running or finished one
// it waits and returns that one's answer with a nil fence: the retained
// result only to the owner of its live lease (answerRetry).
func (r *Runtime) begin(ctx context.Context, idt identity, owner lease.Owner, leaseID string) (*fence, *browser.ActionResult, error) {
	f, first, err := r.enter(idt.id, idt.hash)
	if err != nil || first {
		return f, nil, err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	res, err := r.answerRetry(idt.id, f, owner, leaseID)
	return nil, res, err
}

// finish publishes an action's answer to waiting duplicates and retains a
// fresh result. A durable fence is dropped: the journal holds the identity.
func (r *Runtime) finish(idt identity, f *fence, leaseID string, res *browser.ActionResult, err error) {
	r.mu.Lock()
	f.result, f.err = res, err
	if _, seen := r.results.byID[idt.id]; res != nil && !seen && res.Code != wire.CodeRecoveryRequired {
		r.results.put(idt.id, leaseID, res) // a fresh execution; a cached answer keeps its age
	}
	if idt.durable {
		delete(r.fences, idt.id)
	}
	r.mu.Unlock()
	close(f.done)
}

// enter registers an action identity, or returns the existing fence.
func (r *Runtime) enter(id string, hash [32]byte) (*fence, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.fences[id]; ok {
		if f.hash != hash {
			return nil, false, wire.Err(wire.CodeRequestIDConflict)
		}
		return f, false, nil
	}
	if len(r.fences) >= MaxFences {
		return nil, false, wire.Err(wire.CodeJournalFull)
	}
	f := &fence{hash: hash, done: make(chan struct{})}
	r.fences[id] = f
	return f, true, nil
}

// answerRetry answers a duplicate of a completed in-memory execution: the
// retained result, the same error, or metadata-only RECOVERY_REQUIRED.
func (r *Runtime) answerRetry(id string, f *fence, owner lease.Owner, leaseID string) (*browser.ActionResult, error) {
	if f.err != nil {
		return nil, f.err
	}
	if res := r.cachedFor(owner, leaseID, id); res != nil {
		return res, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return recovered(f.result.RequestID, &journal.Record{
		State: journal.StateSettled, Dispatch: f.result.Dispatch, Outcome: f.result.Outcome, SettledAt: r.now(),
	}), nil
}

// cachedFor returns the retained result of an action, but only to the owner
// of its live lease: the result holds page content (the observation, form
// values), and a journalKey is not a credential for another connection's
// page. Anyone else — a reconnected client, another program with the same
// key — gets nil, and so the metadata-only RECOVERY_REQUIRED.
func (r *Runtime) cachedFor(owner lease.Owner, leaseID, id string) *browser.ActionResult {
	if _, err := r.leases.Get(owner, leaseID); err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results.get(id)
}

// recovered is the metadata-only answer to a retry of an action whose
// result is gone: it says what may have happened and never re-executes.
func recovered(requestID string, rec *journal.Record) *browser.ActionResult {
	// The reference's record says only whether input may have been sent:
	// notDispatched, or dispatched (for an observed input too). Intent
	// without outcome may have dispatched.
	rv := &browser.Recovery{State: rec.State, Dispatch: "dispatched", RecordedAt: rec.ReservedAt.UnixMilli()}
	if rec.State == journal.StateSettled {
		rv.PriorOutcome, rv.RecordedAt = rec.Outcome, rec.SettledAt.UnixMilli()
		if rec.Dispatch == "notDispatched" {
			rv.Dispatch = "notDispatched"
		}
	}
	return &browser.ActionResult{
		RequestID: requestID, Outcome: "unknown", Dispatch: rv.Dispatch, Postcondition: "unverified",
		Code: wire.CodeRecoveryRequired, Recovery: rv,
	}
}

// reserve records an action's intent durably. A non-nil result is the
// answer instead: nothing may be dispatched.
func (r *Runtime) reserve(key journal.Key, hash [32]byte, kind, requestID string) *browser.ActionResult {
	failpoint.Hit("before-intent")
	if err := r.cfg.Journal.Reserve(key, hash, kind); err != nil {
		if dup, ok := errors.AsType[*journal.DuplicateError](err); ok {
			return recovered(requestID, &dup.Record)
		}
		return refuse(&browser.ActionResult{RequestID: requestID}, err)
	}
	failpoint.Hit("after-intent")
	return nil
}

// settle records an action's outcome. If it cannot be recorded the answer
// says so, and an input that may have happened becomes unknown.
func (r *Runtime) settle(key journal.Key, res *browser.ActionResult) {
	if err := r.cfg.Journal.Settle(key, res.Outcome, res.Dispatch); err != nil {
		r.log.Error("cannot record an action's outcome", "err", err)
		if res.Dispatch != "notDispatched" {
			res.Outcome = "unknown"
		}
		res.Code = wire.CodeJournalUnavailable
	}
	failpoint.Hit("after-outcome")
}
