package journal

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/dsh-browser/broker/wire"
)

// Sentinels, matched with errors.Is.
var (
	// ErrInUse is returned by [Reset] when a running broker holds the
	// journal's file lock.
	ErrInUse = errors.New("journal: the journal is in use by a running broker")

	// ErrNoJournal is returned by [Reset] when there is no file to move aside.
	ErrNoJournal = errors.New("journal: no journal file")

	// errMAC is a record whose MAC does not match: it was changed outside
	// the broker, or written with another secret.
	errMAC = errors.New("record MAC mismatch")
)

// Fixes offered in a [Problem]. The service name is install.ServiceUnit's.
const (
	fixReset   = "stop the broker (systemctl --user stop broker.service), then run: broker journal reset"
	fixRestart = "restart the broker (systemctl --user restart broker.service)"
	fixDisk    = "free disk space, then restart the broker (systemctl --user restart broker.service)"
	fixOther   = "stop the other broker (systemctl --user stop broker.service), or give this one its own --runtime-dir"
)

// Problem says why the journal is unavailable. While a Journal has a
// Problem it refuses every Lookup, Reserve and Settle with
// JOURNAL_UNAVAILABLE; the rest of the broker keeps serving.
type Problem struct {
	// Reason is one human sentence saying what is wrong.
	Reason string `json:"reason"`
	// Fix is what the user runs to recover, usually "broker journal reset"
	// after stopping the broker.
	Fix string `json:"fix"`
	// Cause is the underlying error, if any (for logs and errors.Is).
	Cause error `json:"-"`
}

func (p *Problem) Error() string {
	if p.Cause != nil {
		return "journal unavailable: " + p.Reason + ": " + p.Cause.Error()
	}
	return "journal unavailable: " + p.Reason
}

// Unwrap returns the cause.
func (p *Problem) Unwrap() error { return p.Cause }

// unavailable is the error Lookup, Reserve and Settle return while p holds:
// it matches wire.Err(wire.CodeJournalUnavailable), and errors.AsType
// finds the *Problem.
func unavailable(p *Problem) error {
	return fmt.Errorf("%w: %w", wire.Err(wire.CodeJournalUnavailable), p)
}

// DuplicateError is returned by [Journal.Reserve] when the key already has a
// record with the same payload hash: the request is a retry, and Record
// says what is known of the first attempt. It is never a failure of the
// journal.
type DuplicateError struct {
	Record Record
}

func (e *DuplicateError) Error() string {
	return "journal: request already recorded (" + e.Record.State + ")"
}

// internalf is an invariant violation by the caller (INTERNAL_ERROR).
func internalf(format string, args ...any) error {
	return fmt.Errorf("%w: journal: %s", wire.Err(wire.CodeInternalError), fmt.Sprintf(format, args...))
}

// isDiskFull reports whether err says the disk or the user's quota is full.
func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
