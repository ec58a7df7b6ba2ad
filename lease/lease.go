// Package lease owns claims and leases: who controls which tab, under which
// scope and fencing token, and until when.
//
// A claim first reserves its tab (so two claims cannot race for one tab),
// then, once the provider granted it, becomes a live lease. Capacity counts
// live and reserved leases together (64) and pending claims separately (32);
// past either, a claim is refused QUEUE_FULL and nothing existing is
// evicted. A lease belongs to an [Owner]: one client connection and one
// session ID on it. Releasing a session or closing a connection ends its
// leases and cancels its pending claims.
//
// Lock order: Manager.mu is a leaf lock; callbacks run without it.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/dsh-browser/broker/wire"
)

// Defaults from the protocol.
const (
	DefaultMaxLeases  = 64
	DefaultMaxPending = 32
	TTL               = 5 * time.Minute
)

// Scopes a lease may have.
const (
	ScopeOrigin = "origin" // restricted mode: the exact origin approved by the user
	ScopeTab    = "tab"    // personal mode: the tab, whatever HTTP(S) origin it shows
)

// Owner identifies who holds a lease: a client connection and a session on it.
type Owner struct {
	Conn    uint64
	Session string
}

// Lease is a grant of control over one tab. Fields are immutable once the
// lease is live.
type Lease struct {
	ID         string    `json:"id"`
	Tab        string    `json:"tab"`
	InstanceID string    `json:"instanceId"`
	Token      string    `json:"token"`
	Origin     string    `json:"origin"`
	Scope      string    `json:"scope"`
	ExpiresAt  int64     `json:"expiresAt"` // ms since the Unix epoch
	Owner      Owner     `json:"-"`
	Expires    time.Time `json:"-"`
}

// Reason says why a lease ended.
type Reason string

// Reasons a lease ends.
const (
	Released     Reason = "released"
	SessionEnded Reason = "session-released"
	OwnerGone    Reason = "connection-closed"
	ProviderGone Reason = "browser-disconnected"
	Revoked      Reason = "revoked-in-browser"
	Expired      Reason = "expired"
	// Stopped: the owner pressed Stop in the console.
	Stopped Reason = "stopped-by-owner"
)

// Ended is called once for every lease that ends, without the manager's lock.
type Ended func(l *Lease, why Reason)

// Manager holds every claim and lease of the broker.
type Manager struct {
	maxLeases, maxPending int
	onEnd                 Ended

	mu      sync.Mutex
	leases  map[string]*entry // by lease ID, live only
	tabs    map[string]*entry // by tab handle, reserved or live
	pending int
}

type entry struct {
	lease  *Lease
	live   bool
	cancel context.CancelFunc // cancels the pending claim
	timer  *time.Timer        // expiry
}

// NewManager returns a Manager; onEnd may be nil.
func NewManager(maxLeases, maxPending int, onEnd Ended) *Manager {
	if maxLeases <= 0 {
		maxLeases = DefaultMaxLeases
	}
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	if onEnd == nil {
		onEnd = func(*Lease, Reason) {}
	}
	return &Manager{
		maxLeases: maxLeases, maxPending: maxPending, onEnd: onEnd,
		leases: make(map[string]*entry),
		tabs:   make(map[string]*entry),
	}
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Claim is a pending claim holding a reservation on its tab.
type Claim struct {
	m     *Manager
	e     *entry
	Lease *Lease // the lease to grant: ID, token, owner, tab, scope filled
	Ctx   context.Context
}

// Reserve starts a claim of tab for owner: it fails LEASE_BUSY when the tab
// is leased or being claimed, QUEUE_FULL at capacity. The returned claim's
// Ctx is cancelled when the owner's session or connection ends. Call Commit
// or Abort exactly once.
func (m *Manager) Reserve(ctx context.Context, owner Owner, instanceID, tab, origin, scope string) (*Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, busy := m.tabs[tab]; busy {
		return nil, wire.Err(wire.CodeLeaseBusy)
	}
	if len(m.tabs) >= m.maxLeases || m.pending >= m.maxPending {
		return nil, wire.Err(wire.CodeQueueFull)
	}
	cctx, cancel := context.WithCancel(ctx)
	l := &Lease{
		ID: randomID(), Tab: tab, InstanceID: instanceID, Token: randomID(),
		Origin: origin, Scope: scope, Owner: owner,
	}
	e := &entry{lease: l, cancel: cancel}
	m.tabs[tab] = e
	m.pending++
	return &Claim{m: m, e: e, Lease: l, Ctx: cctx}, nil
}

// SetExpiry fixes the lease's expiry before it is sent to the provider.
func (c *Claim) SetExpiry(t time.Time) {
	c.Lease.Expires = t
	c.Lease.ExpiresAt = t.UnixMilli()
}

// Commit makes the claim's lease live. It fails LEASE_REVOKED when the claim
// was cancelled meanwhile (session released, connection closed).
func (c *Claim) Commit() (*Lease, error) {
	m := c.m
	m.mu.Lock()
	m.pending--
	if c.Ctx.Err() != nil || m.tabs[c.Lease.Tab] != c.e {
		m.drop(c.e)
		m.mu.Unlock()
		c.e.cancel()
		return nil, wire.Err(wire.CodeLeaseRevoked)
	}
	c.e.live = true
	m.leases[c.Lease.ID] = c.e
	if d := time.Until(c.Lease.Expires); !c.Lease.Expires.IsZero() {
		id := c.Lease.ID
		c.e.timer = time.AfterFunc(max(d, 0), func() { m.end(id, Expired) })
	}
	m.mu.Unlock()
	return c.Lease, nil
}

// Abort gives up the claim and frees its tab.
func (c *Claim) Abort() {
	m := c.m
	m.mu.Lock()
	m.pending--
	m.drop(c.e)
	m.mu.Unlock()
	c.e.cancel()
}

// drop forgets an entry; m.mu must be held.
func (m *Manager) drop(e *entry) {
	if m.tabs[e.lease.Tab] == e {
		delete(m.tabs, e.lease.Tab)
	}
	if e.live {
		delete(m.leases, e.lease.ID)
	}
	if e.timer != nil {
		e.timer.Stop()
	}
}

// Get returns owner's live lease id, or LEASE_REVOKED when it is unknown,
// expired or another owner's.
func (m *Manager) Get(owner Owner, id string) (*Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.leases[id]
	if !ok || e.lease.Owner != owner || time.Now().After(e.lease.Expires) {
		return nil, wire.Err(wire.CodeLeaseRevoked)
	}
	return e.lease, nil
}

// Release ends owner's lease id. An unknown lease is a no-op; another
// owner's is LEASE_REVOKED.
func (m *Manager) Release(owner Owner, id string) error {
	m.mu.Lock()
	e, ok := m.leases[id]
	if ok && e.lease.Owner != owner {
		m.mu.Unlock()
		return wire.Err(wire.CodeLeaseRevoked)
	}
	m.mu.Unlock()
	if ok {
		m.end(id, Released)
	}
	return nil
}

// end ends a live lease once, then reports it.
func (m *Manager) end(id string, why Reason) {
	m.mu.Lock()
	e, ok := m.leases[id]
	if ok {
		m.drop(e)
	}
	m.mu.Unlock()
	if ok {
		e.cancel()
		m.onEnd(e.lease, why)
	}
}

// End ends a live lease for a reason outside the owner's control (the
// browser revoked it, its provider left).
func (m *Manager) End(id string, why Reason) { m.end(id, why) }

// EndWhere ends every live lease and cancels every pending claim for which
// match is true.
func (m *Manager) EndWhere(match func(*Lease) bool, why Reason) {
	m.mu.Lock()
	var live []string
	var claims []*entry
	for _, e := range m.tabs {
		if !match(e.lease) {
			continue
		}
		if e.live {
			live = append(live, e.lease.ID)
		} else {
			claims = append(claims, e)
		}
	}
	m.mu.Unlock()
	for _, e := range claims {
		e.cancel() // the claimer sees LEASE_REVOKED at Commit
	}
	for _, id := range live {
		m.end(id, why)
	}
}

// ReleaseSession ends the owner's leases and cancels its pending claims.
func (m *Manager) ReleaseSession(owner Owner, why Reason) {
	m.EndWhere(func(l *Lease) bool { return l.Owner == owner }, why)
}

// ReleaseConn ends every lease and claim of a client connection.
func (m *Manager) ReleaseConn(conn uint64) {
	m.EndWhere(func(l *Lease) bool { return l.Owner.Conn == conn }, OwnerGone)
}

// Live returns a snapshot of the live leases.
func (m *Manager) Live() []Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Lease, 0, len(m.leases))
	for _, e := range m.leases {
		out = append(out, *e.lease)
	}
	return out
}
