// Package admission is the owner's standing decision on one connection:
// pending until the owner answers, then granted or denied for good.
//
// It is the agent socket spec's admission model, shared by every socket the
// broker serves (the v1 client socket under --admission=prompt, and the
// agent socket of shared terminals): discovery requests of a pending
// connection are answered at once, any other request waits up to [Wait] for
// the owner, and a denial is final for that connection. A ticket belongs to
// one connection; nothing about it is ever inherited by a later connection
// with the same label.
//
// The package holds state only. Who asks the owner, and how, is the
// caller's: [Ticket.StartAsking] says whether a question should be put now.
package admission

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Wait bounds how long a pending connection's non-discovery request waits
// for the owner's answer.
const Wait = 25 * time.Second

// ProviderMethod is the request the broker sends an owner surface (the
// extension) to ask the owner about a v1 client connection.
const ProviderMethod = "admission.request"

// State is a connection's admission state, as status reports and events
// name it.
type State string

// States.
const (
	Pending State = "pending"
	Granted State = "granted"
	Denied  State = "denied"
)

// Errors returned by [Ticket.Await]; callers map them to their protocol's
// codes (ADMISSION_PENDING / ADMISSION_DENIED, admission_pending /
// admission_denied).
var (
	// ErrPending means the owner has not answered (yet): at once for a
	// discovery request, after [Wait] for any other.
	ErrPending = errors.New("admission: waiting for the owner")
	// ErrDenied means the owner refused the connection. It is final.
	ErrDenied = errors.New("admission: the owner refused this connection")
)

// Ticket is one connection's standing with the owner. Its methods are safe
// for concurrent use.
type Ticket struct {
	since time.Time

	mu      sync.Mutex
	state   State
	asking  bool          // a question is with the owner (or waiting for a way to ask)
	decided chan struct{} // closed when the owner answers
}

// New returns a pending ticket.
func New() *Ticket {
	return &Ticket{since: time.Now(), state: Pending, decided: make(chan struct{})}
}

// Since returns when the connection started waiting.
func (t *Ticket) Since() time.Time { return t.since }

// State returns the state and whether the owner is being asked now.
func (t *Ticket) State() (State, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state, t.asking
}

// StartAsking reports whether the caller should put a question to the owner
// now: true only for a pending ticket with no question under way, which it
// then marks as asking. The caller must end the question with
// [Ticket.Decide] or [Ticket.Unanswered].
func (t *Ticket) StartAsking() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Pending || t.asking {
		return false
	}
	t.asking = true
	return true
}

// Unanswered ends a question that got no answer (no owner surface to ask,
// the surface went away, a malformed answer): the ticket stays pending and
// the next request asks again.
func (t *Ticket) Unanswered() {
	t.mu.Lock()
	t.asking = false
	t.mu.Unlock()
}

// Decide records the owner's answer. Only the first answer counts; it
// reports whether this one did.
func (t *Ticket) Decide(allowed bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.asking = false
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

// Decided returns a channel closed when the owner answers.
func (t *Ticket) Decided() <-chan struct{} { return t.decided }

// Await lets a request through once the connection is granted. A denied
// connection gets [ErrDenied]. A pending one gets [ErrPending] at once for
// a discovery request; any other request waits up to [Wait] for the answer
// (then [ErrPending]), or until ctx ends (ctx.Err()).
func (t *Ticket) Await(ctx context.Context, discovery bool) error {
	switch s, _ := t.State(); s {
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
		if s, _ := t.State(); s == Granted {
			return nil
		}
		return ErrDenied
	case <-timer.C:
		return ErrPending
	case <-ctx.Done():
		return ctx.Err()
	}
}
