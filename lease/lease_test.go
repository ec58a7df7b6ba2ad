package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

var alice = lease.Owner{Conn: 1, Session: "a"}

func claim(t *testing.T, m *lease.Manager, owner lease.Owner, tab string) *lease.Claim {
	t.Helper()
	c, err := m.Reserve(context.Background(), owner, "inst", tab, "https://x.test", lease.ScopeOrigin)
	if err != nil {
		t.Fatalf("reserve %s: %v", tab, err)
	}
	c.SetExpiry(time.Now().Add(lease.TTL))
	return c
}

func grant(t *testing.T, m *lease.Manager, owner lease.Owner, tab string) *lease.Lease {
	t.Helper()
	l, err := claim(t, m, owner, tab).Commit()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func isCode(err error, c wire.Code) bool { return errors.Is(err, wire.Err(c)) }

func TestLeaseCapacity(t *testing.T) {
	m := lease.NewManager(0, 0, nil)
	for i := range lease.DefaultMaxLeases {
		grant(t, m, alice, fmt.Sprint("tab", i))
	}
	_, err := m.Reserve(context.Background(), alice, "inst", "one-more", "https://x.test", lease.ScopeOrigin)
	if !isCode(err, wire.CodeQueueFull) {
		t.Fatalf("65th lease: %v, want QUEUE_FULL", err)
	}
	if n := len(m.Live()); n != lease.DefaultMaxLeases {
		t.Fatalf("%d live leases after refusal, want %d (nothing evicted)", n, lease.DefaultMaxLeases)
	}
}

func TestPendingClaimCapacity(t *testing.T) {
	m := lease.NewManager(0, 0, nil)
	var claims []*lease.Claim
	for i := range lease.DefaultMaxPending {
		claims = append(claims, claim(t, m, alice, fmt.Sprint("tab", i)))
	}
	_, err := m.Reserve(context.Background(), alice, "inst", "one-more", "https://x.test", lease.ScopeOrigin)
	if !isCode(err, wire.CodeQueueFull) {
		t.Fatalf("33rd pending claim: %v, want QUEUE_FULL", err)
	}
	claims[0].Abort()
	claim(t, m, alice, "now-fits")
}

func TestTabBusy(t *testing.T) {
	m := lease.NewManager(0, 0, nil)
	c := claim(t, m, alice, "tab")
	if _, err := m.Reserve(context.Background(), lease.Owner{Conn: 2}, "inst", "tab", "https://x.test", lease.ScopeOrigin); !isCode(err, wire.CodeLeaseBusy) {
		t.Fatalf("claim of a tab being claimed: %v, want LEASE_BUSY", err)
	}
	c.Commit()
	if _, err := m.Reserve(context.Background(), alice, "inst", "tab", "https://x.test", lease.ScopeOrigin); !isCode(err, wire.CodeLeaseBusy) {
		t.Fatalf("claim of a leased tab: %v, want LEASE_BUSY", err)
	}
}

func TestOwnership(t *testing.T) {
	var mu sync.Mutex
	var ended []lease.Reason
	m := lease.NewManager(0, 0, func(l *lease.Lease, why lease.Reason) { mu.Lock(); ended = append(ended, why); mu.Unlock() })
	l := grant(t, m, alice, "tab")
	bob := lease.Owner{Conn: 1, Session: "b"} // same connection, other session: another owner
	if _, err := m.Get(bob, l.ID); !isCode(err, wire.CodeLeaseRevoked) {
		t.Fatalf("other session reading the lease: %v", err)
	}
	if err := m.Release(bob, l.ID); !isCode(err, wire.CodeLeaseRevoked) {
		t.Fatalf("other session releasing: %v", err)
	}
	if err := m.Release(alice, "unknown"); err != nil {
		t.Fatalf("releasing an unknown lease must be a no-op: %v", err)
	}
	if err := m.Release(alice, l.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(alice, l.ID); !isCode(err, wire.CodeLeaseRevoked) {
		t.Fatal("released lease still usable")
	}
	m.Release(alice, l.ID) // twice: still one end
	if len(ended) != 1 || ended[0] != lease.Released {
		t.Fatalf("ends reported: %v", ended)
	}
}

func TestSessionReleaseCancelsClaimsAndLeases(t *testing.T) {
	m := lease.NewManager(0, 0, nil)
	live := grant(t, m, alice, "t1")
	pending := claim(t, m, alice, "t2")
	other := grant(t, m, lease.Owner{Conn: 1, Session: "b"}, "t3")
	m.ReleaseSession(alice, lease.SessionEnded)
	if pending.Ctx.Err() == nil {
		t.Fatal("pending claim not cancelled")
	}
	if _, err := pending.Commit(); !isCode(err, wire.CodeLeaseRevoked) {
		t.Fatalf("commit after session release: %v, want LEASE_REVOKED", err)
	}
	if _, err := m.Get(alice, live.ID); err == nil {
		t.Fatal("session lease survived release")
	}
	if _, err := m.Get(lease.Owner{Conn: 1, Session: "b"}, other.ID); err != nil {
		t.Fatal("another session's lease was released")
	}
	grant(t, m, alice, "t2") // the tab is free again
	m.ReleaseConn(1)
	if n := len(m.Live()); n != 0 {
		t.Fatalf("%d leases after the connection closed", n)
	}
}

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan lease.Reason, 1)
		m := lease.NewManager(0, 0, func(l *lease.Lease, why lease.Reason) { ended <- why })
		l := grant(t, m, alice, "tab")
		time.Sleep(lease.TTL - time.Second)
		if _, err := m.Get(alice, l.ID); err != nil {
			t.Fatal("lease ended early")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if why := <-ended; why != lease.Expired {
			t.Fatalf("ended with %s", why)
		}
		if _, err := m.Get(alice, l.ID); !isCode(err, wire.CodeLeaseRevoked) {
			t.Fatal("expired lease usable")
		}
	})
}
