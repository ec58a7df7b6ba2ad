package hub

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/fetch"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/userdb"
	"github.com/dsh-browser/broker/wire"
)

// view is a connection row as the host shows it: the requirement verbatim,
// the hosts an approval would freeze, the staged change and its diff, and
// which fields hold a credential — never a value.
func (h *Hub) view(ctx context.Context, c userdb.Connection) apps.Connection {
	v := apps.Connection{App: c.AppID, Slot: c.Slot, Status: string(c.Status), NeedsReapproval: c.NeedsReapproval(),
		Imported: c.Imported, Provenance: string(c.Provenance), RequirementVersion: c.RequirementVersion,
		Requirement: json.RawMessage(c.RequirementJSON), RequirementText: c.RequirementJSON, AllowedHosts: c.AllowedHosts(), ApprovedAt: c.ApprovedAt,
		RevokedAt: c.RevokedAt, Ceiling: []string{}}
	if v.AllowedHosts == nil {
		v.AllowedHosts = []string{}
	}
	req, err := c.Requirement()
	if err == nil {
		v.Provider, v.Kind, v.Ceiling = req.Provider.Name, string(req.Kind), req.Ceiling()
	}
	if c.PendingJSON != "" {
		v.Pending, v.PendingText = json.RawMessage(c.PendingJSON), c.PendingJSON
		if next, err := conn.ParseString(c.PendingJSON); err == nil {
			v.PendingHosts = next.Ceiling()
			if req != nil {
				for _, d := range conn.Diff(req, next) {
					v.Diff = append(v.Diff, apps.Change{Path: d.Path, Old: d.Old, New: d.New})
				}
			}
		}
	}
	if c.Status != conn.StatusRevoked && req != nil {
		if rows, err := h.db.Connections(ctx, c.AppID); err == nil {
			v.PriorRevocations = priorRevocations(req, c.Slot, rows)
		}
	}
	v.Credentials, _ = h.db.CredentialFields(ctx, c.AppID, c.Slot)
	if text, ok, err := h.db.Secret(ctx, conn.StateKey(c.AppID, c.Slot)); err == nil && ok {
		var st fetch.State // dynamic state: no credential in it
		if json.Unmarshal([]byte(text), &st) == nil {
			v.SignIn, v.SignInError = st.Status, st.LastError
		}
	}
	return v
}

// priorRevocations are the app's revoked connections to the same provider
// (by name, case aside) or to any of the same hosts, under another slot:
// the user revoked them before, and reconnecting shows it, whatever slot
// the new proposal chose.
func priorRevocations(req *conn.Requirement, slot string, rows []userdb.Connection) []apps.Revocation {
	var out []apps.Revocation
	for _, r := range rows {
		if r.Status != conn.StatusRevoked || r.Slot == slot {
			continue
		}
		old, err := r.Requirement()
		if err != nil {
			continue
		}
		same := strings.EqualFold(old.Provider.Name, req.Provider.Name)
		for _, h := range append(old.Ceiling(), r.AllowedHosts()...) {
			same = same || slices.Contains(req.Ceiling(), h)
		}
		if same {
			out = append(out, apps.Revocation{Slot: r.Slot, Provider: old.Provider.Name, RevokedAt: r.RevokedAt})
		}
	}
	return out
}

func (h *Hub) views(ctx context.Context, appID string) ([]apps.Connection, error) {
	rows, err := h.db.Connections(ctx, appID)
	if err != nil {
		return nil, fromDB(err)
	}
	out := make([]apps.Connection, 0, len(rows))
	for _, c := range rows {
		out = append(out, h.view(ctx, c))
	}
	return out, nil
}

// fromConnDB maps a connection writer's refusal to the wire: a refused
// write is POLICY_DENIED (the row's state forbids it), a bad requirement
// INVALID_REQUEST, the slot cap QUEUE_FULL.
func fromConnDB(err error) error {
	switch {
	case errors.Is(err, userdb.ErrWriteRule), errors.Is(err, userdb.ErrRevoked), errors.Is(err, userdb.ErrStaleReview),
		errors.Is(err, userdb.ErrSlotMismatch):
		return wire.Err(wire.CodePolicyDenied)
	case errors.Is(err, userdb.ErrInvalidRequirement):
		return wire.Err(wire.CodeInvalidRequest)
	case errors.Is(err, userdb.ErrSlotCap):
		return wire.Err(wire.CodeQueueFull)
	}
	return fromDB(err)
}

// Client methods: `broker app connections`, scripts.

func (h *Hub) connections(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.ConnectionsParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	return h.views(ctx, a.ID)
}

// declare records a requirement the user gives: a declared row (a change
// to an approved row is staged for re-approval in the tab). It grants
// nothing.
func (h *Hub) declare(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.DeclareParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	req, err := conn.ParseString(p.Requirement)
	if err != nil {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	c, err := h.db.PutDeclaredConnection(ctx, a.ID, p.Requirement, conn.ProvenanceUser, nil)
	if errors.Is(err, userdb.ErrWriteRule) {
		c, err = h.db.StagePendingRequirement(ctx, a.ID, p.Requirement)
	}
	if err != nil {
		return nil, fromConnDB(err)
	}
	h.log.Info("app connection declared", "app", a.ID, "slot", req.Slot, "status", c.Status, "staged", c.NeedsReapproval())
	h.connectionChanged(a.ID, c)
	return h.view(ctx, c), nil
}

// setCredential stores one credential value, read from standard input by
// `broker app connections`. It is never logged and never read back.
func (h *Hub) setCredential(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.CredentialParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	if err := h.db.SetConnectionCredential(ctx, a.ID, p.Slot, p.Field, p.Value); err != nil {
		return nil, fromConnDB(err)
	}
	h.log.Info("app connection credential set", "app", a.ID, "slot", p.Slot, "field", p.Field)
	c, err := h.db.ConnectionRow(ctx, a.ID, p.Slot)
	if err != nil {
		return nil, fromDB(err)
	}
	return h.view(ctx, c), nil
}

// providerRevokeTimeout bounds the revocation at an OAuth provider that a
// revocation here waits for (a variable for tests).
var providerRevokeTimeout = 5 * time.Second

func (h *Hub) revokeClient(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.SlotParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	return h.revoke(ctx, a.ID, p.Slot)
}

// revoke revokes a connection: first at its OAuth provider, while its
// tokens are still here (bounded by providerRevokeTimeout, and logged
// when it fails: the user's revocation on this machine never waits on
// the provider's answer), then here, deleting its secrets.
func (h *Hub) revoke(ctx context.Context, appID, slot string) (any, error) {
	pctx, cancel := context.WithTimeout(ctx, providerRevokeTimeout)
	asked, ferr := h.net.RevokeAtProvider(pctx, appID, slot)
	cancel()
	if ferr != nil {
		h.log.Warn("the provider did not revoke the connection's token; it is deleted here all the same", "app", appID, "slot", slot, "code", ferr.Code, "err", ferr.Message)
	} else if asked {
		h.log.Info("the provider revoked the connection's token", "app", appID, "slot", slot)
	}
	c, err := h.db.RevokeConnection(ctx, appID, slot)
	if err != nil {
		return nil, fromConnDB(err)
	}
	h.log.Info("app connection revoked", "app", appID, "slot", slot)
	h.connectionChanged(appID, c)
	return h.view(ctx, c), nil
}

// Provider methods: the connect flow in a runner tab's host chrome.

// ownRunner returns the runner a provider names, when that provider is the
// owner's own software: only its host chrome may grant.
func (h *Hub) ownRunner(p service.Provider, id string) (*runner, error) {
	if !p.OwnerSurface() {
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	l := h.link(p)
	if l == nil {
		return nil, wire.Err(wire.CodeConnectionLost)
	}
	r := l.runner(id)
	if r == nil {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	return r, nil
}

func (h *Hub) runnerConnections(ctx context.Context, p service.Provider, params json.RawMessage) (any, error) {
	var rp apps.RunnerParams
	if err := decode(params, &rp); err != nil {
		return nil, err
	}
	r, err := h.ownRunner(p, rp.Runner)
	if err != nil {
		return nil, err
	}
	return h.views(ctx, r.appID)
}

// approve is the user's approval, or re-approval, in the tab: of exactly
// the requirement they reviewed, with the credentials they typed.
func (h *Hub) approve(reapprove bool) service.ProviderMethod {
	return func(ctx context.Context, p service.Provider, params json.RawMessage) (any, error) {
		var ap apps.ApproveParams
		if err := decode(params, &ap); err != nil {
			return nil, err
		}
		r, err := h.ownRunner(p, ap.Runner)
		if err != nil {
			return nil, err
		}
		write := h.db.ApproveConnection
		if reapprove {
			write = h.db.ReapproveConnection
		}
		c, err := write(ctx, r.appID, ap.Slot, ap.Reviewed, userdb.Credentials(ap.Credentials))
		if err != nil {
			if errors.Is(err, userdb.ErrInvalid) {
				return nil, wire.Err(wire.CodeInvalidRequest) // a required field left empty
			}
			return nil, fromConnDB(err)
		}
		h.log.Info("app connection approved", "app", r.appID, "slot", ap.Slot, "hosts", c.AllowedHostsJSON, "reapproval", reapprove)
		h.connectionChanged(r.appID, c)
		return h.view(ctx, c), nil
	}
}

func (h *Hub) runnerRevoke(ctx context.Context, p service.Provider, params json.RawMessage) (any, error) {
	var rp apps.RunnerSlotParams
	if err := decode(params, &rp); err != nil {
		return nil, err
	}
	r, err := h.ownRunner(p, rp.Runner)
	if err != nil {
		return nil, err
	}
	return h.revoke(ctx, r.appID, rp.Slot)
}

// authorize starts the OAuth sign-in of an approved authorization-code
// connection, on the user's click in the tab: the page opens the returned
// URL in the user's browser (chrome.identity) and hands back where it
// landed to complete.
func (h *Hub) authorize(ctx context.Context, p service.Provider, params json.RawMessage) (any, error) {
	var ap apps.AuthorizeParams
	if err := decode(params, &ap); err != nil {
		return nil, err
	}
	r, err := h.ownRunner(p, ap.Runner)
	if err != nil {
		return nil, err
	}
	u, ferr := h.net.StartAuthorization(ctx, r.appID, ap.Slot, ap.RedirectURI)
	if ferr != nil {
		return nil, fromFetch(ferr)
	}
	h.log.Info("app connection sign-in started", "app", r.appID, "slot", ap.Slot)
	return apps.AuthorizeResult{URL: u}, nil
}

// complete finishes a sign-in with the address the browser came back to.
func (h *Hub) complete(ctx context.Context, p service.Provider, params json.RawMessage) (any, error) {
	var cp apps.CompleteParams
	if err := decode(params, &cp); err != nil {
		return nil, err
	}
	r, err := h.ownRunner(p, cp.Runner)
	if err != nil {
		return nil, err
	}
	if ferr := h.net.CompleteAuthorization(ctx, r.appID, cp.Slot, cp.Callback); ferr != nil {
		// The code is logged; the words may quote the provider.
		h.log.Info("app connection sign-in failed", "app", r.appID, "slot", cp.Slot, "code", ferr.Code)
		return nil, fromFetch(ferr)
	}
	h.log.Info("app connection signed in", "app", r.appID, "slot", cp.Slot)
	c, err := h.db.ConnectionRow(ctx, r.appID, cp.Slot)
	if err != nil {
		return nil, fromDB(err)
	}
	h.connectionChanged(r.appID, c)
	return h.view(ctx, c), nil
}

// fromFetch maps a sign-in's refusal to the wire: a connection that does
// not sign in so, or a bad redirect address, is INVALID_REQUEST; the rest
// (not approved, a state not ours, the provider's refusal) POLICY_DENIED,
// the provider's words kept in the slot's state for the connect flow.
func fromFetch(ferr *fetch.Error) error {
	switch ferr.Code {
	case frame.CodeNetInvalidRequest:
		return wire.Err(wire.CodeInvalidRequest)
	case frame.CodeHostError:
		return wire.Err(wire.CodeInternalError)
	}
	return wire.Err(wire.CodePolicyDenied)
}

// connectionChanged rings the doorbell of the app's open tabs: a
// connection-event hint naming the slot and its status (R7: references,
// never content), so the app can retry or offer its fallback.
func (h *Hub) connectionChanged(appID string, c userdb.Connection) {
	hint, err := frame.NewHint("connection-event", map[string]frame.HintValue{
		"slot": frame.Ref(c.Slot), "status": frame.Ref(c.Status), "needsReapproval": frame.Flag(c.NeedsReapproval()),
	})
	if err != nil {
		return
	}
	for _, r := range h.runners() {
		if r.appID == appID {
			r.inst.Notify(hint)
		}
	}
}
