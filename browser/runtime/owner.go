package runtime

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"unicode/utf8"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/service"
)

// What the owner's console sees of the browser kind: the leases (as
// service.Grant), Stop, and one activity entry per action.

// ActivityLog is the owner's activity log (package activity).
type ActivityLog interface {
	BeginSyncing(activity.Action) (uint64, <-chan struct{}) // synced beside a journal intent
	BeginUnsynced(activity.Action) uint64                   // an action fenced in memory only
	End(id uint64, outcome, dispatch, code string) error
}

// Grants lists the live leases for the owner's console.
func (r *Runtime) Grants() []service.Grant {
	live := r.leases.Live()
	out := make([]service.Grant, 0, len(live))
	for _, l := range live {
		origin := l.Origin
		if p := r.page(l.ID); p != nil {
			origin = p.origin(&l)
		}
		out = append(out, service.Grant{Kind: browser.Kind, ID: l.ID, Conn: l.Owner.Conn, Tab: l.Tab, Origin: origin,
			Scope: l.Scope, ExpiresAt: l.Expires.UTC()})
	}
	slices.SortFunc(out, func(a, b service.Grant) int {
		return cmp.Or(cmp.Compare(a.Conn, b.Conn), a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Stop ends every lease of client connection conn (of every client when
// conn is 0) and cancels its pending claims, which closes their approval
// windows; the clients get browser.lease-revoked, the extension drops the
// gates. It returns how many leases ended.
func (r *Runtime) Stop(conn uint64) int {
	n := 0
	for _, l := range r.leases.Live() {
		if conn == 0 || l.Owner.Conn == conn {
			n++
		}
	}
	r.leases.EndWhere(func(l *lease.Lease) bool { return conn == 0 || l.Owner.Conn == conn }, lease.Stopped)
	if n > 0 {
		r.log.Info("the owner stopped a client's leases", "conn", conn, "leases", n)
	}
	return n
}

// grantsChanged tells the owner's console that a lease began or ended.
func (r *Runtime) grantsChanged() {
	if r.overseer != nil {
		r.overseer.GrantsChanged()
	}
}

// logged is one action's entry in the activity log; a nil *logged logs
// nothing (no log configured).
type logged struct {
	log     ActivityLog
	warn    *slog.Logger
	act     activity.Action
	durable bool            // the journal will hold the action's intent
	id      uint64          // set by begin
	synced  <-chan struct{} // closed once the begin record is on disk
}

// logAction prepares the entry of an action client c asked for: step is a
// batch step's index or -1; durable says the journal will hold its intent.
// Typed text is counted, never kept.
func (r *Runtime) logAction(c Client, a browser.Action, step int, durable bool) *logged {
	if r.cfg.Activity == nil {
		return nil
	}
	act := activity.Action{Agent: c.Label(), Conn: c.ConnID(), Kind: a.Kind, Step: step, TextLength: -1, Key: a.Key}
	if a.Text != nil {
		act.TextLength = utf8.RuneCountInString(*a.Text)
	}
	return &logged{log: r.cfg.Activity, warn: r.log, act: act, durable: durable}
}

// begin records the action on its lease's tab and the page's origin, with
// its target's role and name as the client observed them. Call it once the
// lease is known to be live and before the action's intent is journaled,
// and wait before dispatching: a durable action's entry is synced while
// the journal syncs its intent (one disk sync's time for both), and the
// action waits for both, so every action that may have happened is in the
// log; an action fenced in memory does not wait for the disk (after a
// crash of the machine neither is known).
func (g *logged) begin(l *lease.Lease, p *page, req browser.ActionRequest) {
	if g == nil {
		return
	}
	g.act.Tab, g.act.Origin = l.Tab, p.origin(l)
	if t := p.resolve(req.Action.Ref, req.DocumentEpoch, req.Frame != nil); t != nil {
		g.act.Role, g.act.Name = t.Role, t.Name
	}
	if g.durable {
		g.id, g.synced = g.log.BeginSyncing(g.act)
	} else {
		g.id = g.log.BeginUnsynced(g.act)
	}
}

// wait returns once the entry's begin record is on disk (at once for an
// action fenced in memory).
func (g *logged) wait() {
	if g != nil && g.synced != nil {
		<-g.synced
	}
}

// end records the action's final result (after the journal's outcome).
func (g *logged) end(res *browser.ActionResult) {
	if g == nil || g.id == 0 || res == nil {
		return
	}
	if err := g.log.End(g.id, res.Outcome, res.Dispatch, string(res.Code)); err != nil {
		g.warn.Error("an action's result does not fit the activity log", "err", err)
	}
}

type loggedKey struct{}

// withLogged passes an action's entry down to run.
func withLogged(ctx context.Context, g *logged) context.Context {
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, loggedKey{}, g)
}

func loggedFrom(ctx context.Context) *logged {
	g, _ := ctx.Value(loggedKey{}).(*logged)
	return g
}
