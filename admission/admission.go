// Package admission is one connection's standing with the owner: pending
// until the owner answers, then granted or denied for good.
//
// A [Ticket] belongs to one connection and never to its label, so a later
// connection that calls itself by the same name starts pending again. While
// a ticket is pending, discovery requests are answered [ErrPending] at once
// and every other request waits up to [Wait] for the owner's answer, so the
// first real request succeeds right after the owner allows it. A denial is
// final: every later request gets [ErrDenied].
package admission

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Wait bounds how long a pending connection's non-discovery request waits
// for the owner's answer before it is answered [ErrPending].
const Wait = 25 * time.Second

// Errors returned by [Ticket.Await].
var (
	// ErrPending is returned while the owner has not answered: at once for
	// discovery, after [Wait] for anything else.
	ErrPending = errors.New("admission: the owner has not answered yet")
	// ErrDenied is returned for every request of a connection the owner
	// refused; the refusal is final for that connection.
	ErrDenied = errors.New("admission: the owner refused this connection")
)

// State is a ticket's standing, named as the wire names it.
type State string

// The states of a ticket. Pending moves once to Granted or Denied.
const (
	Pending State = "pending"
	Granted State = "granted"
	Denied  State = "denied"
)

// Ticket is one connection's admission. Its methods are safe for concurrent
// use.
type Ticket struct {
	since time.Time

	mu      sync.Mutex
	state   State
	decided chan struct{} // closed when the owner answers
}

// New returns a pending ticket.
func New() *Ticket {
	return &Ticket{since: time.Now(), state: Pending, decided: make(chan struct{})}
}

// State returns the ticket's current standing.
func (t *Ticket) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// Since returns when the ticket was created (when the connection asked).
func (t *Ticket) Since() time.Time { return t.since }

// Decide records the owner's answer. Only the first answer counts: it
// reports whether this one did.
func (t *Ticket) Decide(allowed bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Pending {
		return false
	}
	t.state = Denied
	if allowed {
		t.state = Granted
	}
	close(t.decided)
	return true
}

// Await lets a request through once the connection is admitted. A denied
// ticket returns [ErrDenied]. A pending one returns [ErrPending] at once for
// a discovery request; any other request waits up to [Wait] for the answer
// (then [ErrPending]) or until ctx is done (then ctx's error).
func (t *Ticket) Await(ctx context.Context, discovery bool) error {
	switch t.State() {
	case Granted:
		return nil
	case Denied:
		return ErrDenied
	}
	if discovery {
		return ErrPending
	}
	timer := time.NewTimer(Wait)
	defer timer.Stop()
	select {
	case <-t.decided:
		if t.State() == Granted {
			return nil
		}
		return ErrDenied
	case <-timer.C:
		return ErrPending
	case <-ctx.Done():
		return ctx.Err()
	}
}
