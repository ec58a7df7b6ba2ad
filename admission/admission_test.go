package admission_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-browser/broker/admission"
)

func TestDiscoveryIsAnsweredAtOnceWhilePending(t *testing.T) {
	tk := admission.New()
	if err := tk.Await(context.Background(), true); !errors.Is(err, admission.ErrPending) {
		t.Fatalf("discovery while pending: %v, want ErrPending", err)
	}
	if tk.State() != admission.Pending {
		t.Fatalf("state %q", tk.State())
	}
}

// A waiting request is let through the moment the owner allows, and not a
// moment before; the wait ends pending at exactly Wait.
func TestWaitEndsAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := admission.New()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- tk.Await(context.Background(), false) }()
		time.Sleep(admission.Wait - time.Nanosecond)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("answered %v before the limit", err)
		default:
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		select {
		case err := <-done:
			if !errors.Is(err, admission.ErrPending) {
				t.Fatalf("at the limit: %v, want ErrPending", err)
			}
			if got := time.Since(start); got != admission.Wait {
				t.Fatalf("waited %v, want %v", got, admission.Wait)
			}
		default:
			t.Fatal("still waiting at the limit")
		}
	})
}

func TestAllowLetsTheWaiterThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := admission.New()
		done := make(chan error, 1)
		go func() { done <- tk.Await(context.Background(), false) }()
		time.Sleep(time.Second)
		if !tk.Decide(true) {
			t.Fatal("first answer not recorded")
		}
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatalf("after allow: %v", err)
		}
		if err := tk.Await(context.Background(), true); err != nil {
			t.Fatalf("discovery after allow: %v", err)
		}
	})
}

func TestDenialIsFinal(t *testing.T) {
	tk := admission.New()
	done := make(chan error, 1)
	go func() { done <- tk.Await(context.Background(), false) }()
	if !tk.Decide(false) {
		t.Fatal("first answer not recorded")
	}
	if err := <-done; !errors.Is(err, admission.ErrDenied) {
		t.Fatalf("waiter after deny: %v", err)
	}
	if tk.Decide(true) {
		t.Fatal("a second answer overrode the denial")
	}
	for _, discovery := range []bool{true, false} {
		if err := tk.Await(context.Background(), discovery); !errors.Is(err, admission.ErrDenied) {
			t.Fatalf("discovery=%v after deny: %v", discovery, err)
		}
	}
	if tk.State() != admission.Denied {
		t.Fatalf("state %q", tk.State())
	}
}

func TestCancelledWaitReturnsTheContextError(t *testing.T) {
	tk := admission.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tk.Await(ctx, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// Tickets are per connection: a new ticket for the same label starts
// pending whatever an earlier one became.
func TestNewTicketDoesNotInherit(t *testing.T) {
	old := admission.New()
	old.Decide(false)
	if admission.New().State() != admission.Pending {
		t.Fatal("a new ticket is not pending")
	}
}
