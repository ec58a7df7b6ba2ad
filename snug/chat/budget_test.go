package chat_test

import (
	"sync"
	"testing"

	"github.com/dsh-browser/broker/snug/chat"
	"github.com/dsh-browser/broker/snug/frame"
)

// TestBudget: three consecutive parse failures exhaust the budget until the
// user's reset (R6); a parsed reply in between starts the count again.
func TestBudget(t *testing.T) {
	var b chat.Budget
	fail := &chat.ReplyError{RawExcerpt: "oops"}
	for i, want := range []struct {
		left      int
		retryable bool
	}{{2, true}, {1, true}, {0, false}} {
		if b.Exhausted() {
			t.Fatalf("exhausted after %d failures", i)
		}
		e := b.Fail(fail)
		if e.Code != frame.CodeParseFailed || e.RawExcerpt != "oops" || *e.AttemptsRemaining != want.left || e.Retryable != want.retryable {
			t.Errorf("failure %d: %+v, want attemptsRemaining %d retryable %v", i+1, e, want.left, want.retryable)
		}
		if b.Remaining() != want.left {
			t.Errorf("Remaining() = %d after %d failures", b.Remaining(), i+1)
		}
	}
	if !b.Exhausted() {
		t.Fatal("not exhausted after 3 failures")
	}
	if e := b.Fail(fail); *e.AttemptsRemaining != 0 || e.Retryable {
		t.Errorf("a fourth failure: %+v", e)
	}
	b.Reset()
	if b.Exhausted() || b.Remaining() != chat.MaxParseFailures {
		t.Error("Reset did not restore the budget")
	}
	b.Fail(fail)
	b.Fail(fail)
	b.Succeed()
	b.Fail(fail)
	b.Fail(fail)
	if b.Exhausted() {
		t.Error("failures separated by a success exhausted the budget")
	}
}

// TestExhaustedError: the immediate answer while exhausted, which must be a
// valid terminal app-response error.
func TestExhaustedError(t *testing.T) {
	e := chat.ExhaustedError()
	if e.Code != frame.CodeParseFailed || e.Retryable || e.AttemptsRemaining == nil || *e.AttemptsRemaining != 0 {
		t.Errorf("ExhaustedError() = %+v", e)
	}
	if _, err := frame.Encode(&frame.AppResponse{RequestID: "r1", Error: &e}); err != nil {
		t.Errorf("it does not encode: %v", err)
	}
	var b chat.Budget
	f := b.Fail(&chat.ReplyError{RawExcerpt: "x"})
	if _, err := frame.Encode(&frame.AppResponse{RequestID: "r1", Error: &f}); err != nil {
		t.Errorf("a PARSE_FAILED does not encode: %v", err)
	}
}

func TestBudgetConcurrent(t *testing.T) {
	var b chat.Budget
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Fail(&chat.ReplyError{})
				b.Exhausted()
				b.Succeed()
			}
		})
	}
	wg.Wait()
}
