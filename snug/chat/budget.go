package chat

import (
	"sync"
	"time"

	"github.com/dsh-browser/broker/snug/frame"
)

// MaxParseFailures (MAX_PARSE_FAILURES) is how many agent replies in a row
// may fail to parse before the host stops calling the agent for the app
// until the user resets it (R6).
const MaxParseFailures = 3

// ThreadConflictBackoff (THREAD_CONFLICT_BACKOFF_MS) are the waits before
// the retries of a turn that failed THREAD_CONFLICT, retryable (R6).
var ThreadConflictBackoff = [...]time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond}

// Budget is an app's parse-failure budget (R6): its consecutive terminal
// reply parse failures. After MaxParseFailures the budget is exhausted and
// stays so until the user's explicit [Budget.Reset]; a re-announce, a
// reload or a new instance does not reset it. Key it by the host's own
// identity of the app, never by the app-claimed appId. The zero value is a
// full budget; a Budget is safe for concurrent use.
type Budget struct {
	mu       sync.Mutex
	failures int
}

// Exhausted reports whether the agent may no longer be called for the app:
// an app-message is then answered [ExhaustedError] at once.
func (b *Budget) Exhausted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures >= MaxParseFailures
}

// Remaining is how many more consecutive parse failures the budget allows.
func (b *Budget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(0, MaxParseFailures-b.failures)
}

// Fail records a reply that did not parse and returns the error that ends
// its app-message: PARSE_FAILED with the reply's rawExcerpt and
// attemptsRemaining, retryable while attempts remain.
func (b *Budget) Fail(err *ReplyError) frame.ResponseError {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	left := max(0, MaxParseFailures-b.failures)
	return frame.ResponseError{
		Code:              frame.CodeParseFailed,
		Message:           "the agent reply was not a parseable JSON object",
		RawExcerpt:        err.RawExcerpt,
		AttemptsRemaining: &left,
		Retryable:         left > 0,
	}
}

// Succeed records a reply that parsed: failures count only in a row.
func (b *Budget) Succeed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
}

// Reset is the user's explicit reset: the full budget again.
func (b *Budget) Reset() { b.Succeed() }

// ExhaustedError is the answer to an app-message while the budget is
// exhausted: PARSE_FAILED, no attempts remaining, not retryable.
func ExhaustedError() frame.ResponseError {
	zero := 0
	return frame.ResponseError{
		Code:              frame.CodeParseFailed,
		Message:           "the parse-failure budget is exhausted: the user must reset the app",
		AttemptsRemaining: &zero,
	}
}
