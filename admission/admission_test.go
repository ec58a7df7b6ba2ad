package admission_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/admission"
)

func TestDiscoveryAnsweredAtOnceWhilePending(t *testing.T) {
	tk := admission.New()
	start := time.Now()
	if err := tk.Await(context.Background(), true); !errors.Is(err, admission.ErrPending) {
		t.Fatalf("discovery while pending: %v, want ErrPending", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("discovery waited %v", d)
	}
}

func TestRequestWaitsForTheAnswer(t *testing.T) {
	for _, allowed := range []bool{true, false} {
		tk := admission.New()
		done := make(chan error, 1)
		go func() { done <- tk.Await(context.Background(), false) }()
		select {
		case err := <-done:
			t.Fatalf("returned before the owner answered: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if !tk.Decide(allowed) {
			t.Fatal("first answer not recorded")
		}
		err := <-done
		if allowed && err != nil || !allowed && !errors.Is(err, admission.ErrDenied) {
			t.Fatalf("allowed=%v: %v", allowed, err)
		}
	}
}

func TestDenialIsFinal(t *testing.T) {
	tk := admission.New()
	tk.Decide(false)
	if tk.Decide(true) {
		t.Fatal("a second answer changed a decided ticket")
	}
	for _, discovery := range []bool{true, false} {
		if err := tk.Await(context.Background(), discovery); !errors.Is(err, admission.ErrDenied) {
			t.Fatalf("discovery=%v after denial: %v", discovery, err)
		}
	}
	if s, _ := tk.State(); s != admission.Denied {
		t.Fatalf("state %q", s)
	}
}

func TestOneQuestionAtATime(t *testing.T) {
	tk := admission.New()
	var wg sync.WaitGroup
	var mu sync.Mutex
	asked := 0
	for range 16 {
		wg.Go(func() {
			if tk.StartAsking() {
				mu.Lock()
				asked++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if asked != 1 {
		t.Fatalf("%d questions started, want 1", asked)
	}
	if _, asking := tk.State(); !asking {
		t.Fatal("not marked asking")
	}
	tk.Unanswered()
	if !tk.StartAsking() {
		t.Fatal("an unanswered question must let the next request ask again")
	}
	tk.Decide(true)
	if tk.StartAsking() {
		t.Fatal("a decided ticket asks no more")
	}
}

func TestAwaitEndsWithContext(t *testing.T) {
	tk := admission.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tk.Await(ctx, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
