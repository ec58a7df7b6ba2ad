package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/service"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

// Claim asks the provider for a lease on a tab. In restricted mode the user
// approves it in the extension's window and the lease is scoped to the tab's
// exact origin; in personal mode an HTTP(S) tab is leased without a prompt,
// scoped to the tab.
func (r *Runtime) Claim(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	var in browser.ClaimParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	if !bounded(in.SessionID, 1, 256) || !bounded(in.InstanceID, 1, 256) || !bounded(in.Tab, 1, 256) {
		return nil, invalid()
	}
	prov, err := r.provider(in.InstanceID)
	if err != nil {
		return nil, err
	}
	if !r.cfg.Personal && !prov.OwnerSurface() {
		// Restricted mode asks the owner to approve the claim in the
		// browser; a provider the owner's browser did not start cannot
		// give that consent.
		r.log.Warn("claim refused: the browser instance is not the owner's own (see PROTOCOL.md, threat model)", "instance", in.InstanceID)
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	tabs, err := r.listTabs(ctx, in.InstanceID)
	if err != nil {
		return nil, err
	}
	var tab *browser.TabSummary
	for i := range tabs {
		if tabs[i].ID == in.Tab {
			tab = &tabs[i]
		}
	}
	if tab == nil {
		return nil, wire.Err(wire.CodeStaleTarget) // gone, not HTTP(S), or not allowed
	}
	origin, _ := httpOrigin(tab.URL)
	scope, wait := lease.ScopeOrigin, ApprovalTimeout
	if r.cfg.Personal {
		scope, wait = lease.ScopeTab, ProviderTimeout
	}

	owner := lease.Owner{Conn: c.ConnID(), Session: in.SessionID}
	claim, err := r.leases.Reserve(ctx, owner, in.InstanceID, in.Tab, origin, scope)
	if err != nil {
		return nil, err
	}
	claim.SetExpiry(time.Now().Add(lease.TTL))
	gctx, cancel := context.WithTimeout(claim.Ctx, wait)
	defer cancel()
	g, err := callLeaseGrant(gctx, prov, claim.Lease, c.Label())
	if errors.Is(err, errProvider) {
		claim.Abort()
		r.revokeAtProvider(prov, claim.Lease)
		return nil, err
	}
	if err != nil {
		released := claim.Ctx.Err() != nil && ctx.Err() == nil // the session ended meanwhile
		claim.Abort()
		if released {
			return nil, wire.Err(wire.CodeLeaseRevoked)
		}
		return nil, err
	}
	r.mu.Lock()
	r.pages[claim.Lease.ID] = newPage(claim.Lease, g.DocumentEpoch)
	r.mu.Unlock()
	l, err := claim.Commit()
	if err != nil {
		r.dropPage(claim.Lease.ID)
		r.revokeAtProvider(prov, claim.Lease)
		return nil, err
	}
	r.log.Info("lease granted", "lease", l.ID, "tab", l.Tab, "origin", l.Origin, "scope", l.Scope, "client", c.Label())
	r.grantsChanged()
	return &browser.LeaseResult{
		ID: l.ID, Owner: fmt.Sprintf("[%q,%q]", fmt.Sprint(owner.Conn), owner.Session), Tab: l.Tab,
		InstanceID: l.InstanceID, Token: l.Token, Origin: l.Origin, Scope: l.Scope, ExpiresAt: l.ExpiresAt,
	}, nil
}

// revokeAtProvider tells the provider to drop a lease's gate, in the
// background: the caller has already stopped using it.
func (r *Runtime) revokeAtProvider(prov Provider, l *lease.Lease) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := callLeaseRevoke(ctx, prov, l); err != nil {
			r.log.Debug("lease.revoke failed", "lease", l.ID, "err", err)
		}
	}()
}

// leaseEnded runs once for every lease that ends: it forgets the page,
// tells the owner (unless its connection is gone) and the provider (unless
// the provider ended it or is gone).
func (r *Runtime) leaseEnded(l *lease.Lease, why lease.Reason) {
	r.dropPage(l.ID)
	r.mu.Lock()
	r.results.purgeLease(l.ID)
	r.cursors.purgeLease(l.ID)
	r.mu.Unlock()
	r.log.Info("lease ended", "lease", l.ID, "tab", l.Tab, "why", why)
	r.grantsChanged()
	if why != lease.OwnerGone {
		if c := r.host.Client(l.Owner.Conn); c != nil {
			c.Notify(browser.EventLeaseRevoked, map[string]string{"sessionId": l.Owner.Session, "leaseId": l.ID})
		}
	}
	if why != lease.Revoked && why != lease.ProviderGone {
		if prov := r.host.Provider(l.InstanceID); prov != nil {
			r.revokeAtProvider(prov, l)
		}
	}
}

// Release ends one of the caller's leases; an unknown lease is a no-op.
func (r *Runtime) Release(_ context.Context, c Client, params json.RawMessage) (any, error) {
	var in browser.ReleaseParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	if !bounded(in.SessionID, 1, 256) || !bounded(in.LeaseID, 1, 256) {
		return nil, invalid()
	}
	if err := r.leases.Release(lease.Owner{Conn: c.ConnID(), Session: in.SessionID}, in.LeaseID); err != nil {
		return nil, err
	}
	return map[string]bool{"released": true}, nil
}

// ReleaseSession ends the session's leases and cancels its pending claims.
func (r *Runtime) ReleaseSession(_ context.Context, c Client, params json.RawMessage) (any, error) {
	var in browser.SessionParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	if !bounded(in.SessionID, 1, 256) {
		return nil, invalid()
	}
	r.leases.ReleaseSession(lease.Owner{Conn: c.ConnID(), Session: in.SessionID}, lease.SessionEnded)
	return map[string]bool{"released": true}, nil
}

// ClientGone ends every lease and claim of a closed client connection and
// forgets its connection-local action fences.
func (r *Runtime) ClientGone(conn uint64) {
	r.leases.ReleaseConn(conn)
	prefix := fmt.Sprintf("conn:%d\x00", conn)
	r.mu.Lock()
	for id := range r.fences {
		if strings.HasPrefix(id, prefix) {
			delete(r.fences, id)
			r.results.remove(id)
		}
	}
	r.mu.Unlock()
}

// Event handles an event from a browser provider. Events name leases; one
// naming another instance's lease is ignored.
func (r *Runtime) Event(prov service.Provider, event string, value json.RawMessage) {
	instanceID := prov.InstanceID()
	switch event {
	case browser.ProviderEventLeaseRevoked:
		var v struct {
			LeaseID string `json:"leaseId"`
		}
		if json.Unmarshal(value, &v) != nil {
			return
		}
		r.leases.EndWhere(func(l *lease.Lease) bool { return l.ID == v.LeaseID && l.InstanceID == instanceID }, lease.Revoked)
	case browser.ProviderEventPageChanged:
		var v struct {
			Tab      string `json:"tab"`
			LeaseID  string `json:"leaseId"`
			Sequence int64  `json:"sequence"`
		}
		if json.Unmarshal(value, &v) != nil {
			return
		}
		r.mu.Lock()
		p := r.pages[v.LeaseID]
		r.mu.Unlock()
		if p != nil && p.lease.InstanceID == instanceID {
			p.changed()
		}
	}
}
