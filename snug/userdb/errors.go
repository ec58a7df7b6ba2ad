package userdb

import (
	"errors"
	"fmt"
)

// Error codes. The wire's error code is an open string (Snug R5); these are
// the reference hub's names (spec Appendix A lists USERDB_TOO_LARGE; the
// others are the reference's userdb codes, kept so apps and tools written
// against it see the same words).
const (
	CodeTooLarge    = "USERDB_TOO_LARGE"    // a write would take the file past its cap
	CodeInvalidName = "USERDB_INVALID_NAME" // an app object's name breaks the naming rule
	CodeNotFound    = "USERDB_NOT_FOUND"    // no such app or version
	CodeClosed      = "USERDB_CLOSED"       // the DB was closed
	CodeInvalid     = "USERDB_INVALID"      // bad caller input (our choice: the reference throws untyped)
	CodeReplaced    = "USERDB_REPLACED"     // an import replaced the data a runtime was working on
)

// Error is a failure with a spec code. Sentinels below are *Error values;
// wrapped errors match them with errors.Is, and [Code] reads the code.
type Error struct {
	Code string
	msg  string
}

func (e *Error) Error() string { return "userdb: " + e.msg }

// Sentinels, matched with errors.Is.
var (
	// ErrTooLarge: the write was rolled back whole because the file would
	// have grown past its cap (MaxBytes unless Options.MaxBytes says less).
	ErrTooLarge = &Error{CodeTooLarge, "the user database would exceed its size cap"}
	// ErrInvalidName: an app created an object whose name breaks the
	// naming rule or uses a reserved prefix; nothing was persisted and the
	// app's previous at-rest state is kept.
	ErrInvalidName = &Error{CodeInvalidName, "invalid app object name"}
	// ErrNotFound: no such app, or no such version of it.
	ErrNotFound = &Error{CodeNotFound, "not found"}
	// ErrClosed: the DB was closed.
	ErrClosed = &Error{CodeClosed, "the user database is closed"}
	// ErrInvalid: bad input from the caller (metadata too long, empty HTML…).
	ErrInvalid = &Error{CodeInvalid, "invalid input"}
	// ErrReplaced: an import replaced the user database after this runtime
	// was materialised; its changes were not written back.
	ErrReplaced = &Error{CodeReplaced, "the user database was replaced by an import; the change was not saved"}
)

// Errors of Open. They carry no wire code: they are the daemon's problem,
// not an app's.
var (
	// ErrUnsupported: the file is stamped with a newer schema version than
	// this hub knows. It was left untouched. See [UnsupportedError].
	ErrUnsupported = errors.New("userdb: the user database is from a newer version of Snug")
	// ErrCorrupt: the file is neither SQLite nor SNUGENC1. A copy of its
	// bytes was kept; see [CorruptError] and [OpenFresh].
	ErrCorrupt = errors.New("userdb: the user database is not a database")
	// ErrProtected: the file is a SNUGENC1 protected file. It is never
	// quarantined or overwritten; opening one needs its passphrase, which
	// this hub does not support yet.
	ErrProtected = errors.New("userdb: the user database is protected with a passphrase")
	// ErrInUse: another process holds the file's lock.
	ErrInUse = errors.New("userdb: the user database is in use by another broker")
	// ErrUnsafeFile: the file or its directory breaks the private-file
	// rules (symbolic link, not a regular file, another owner, readable by
	// others, more than one hard link).
	ErrUnsafeFile = errors.New("userdb: unsafe user database file")
)

// UnsupportedError is returned (matching [ErrUnsupported]) for a file
// stamped newer than [SchemaVersion].
type UnsupportedError struct{ Found int }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("userdb: the user database is schema v%d; this broker supports up to v%d: upgrade the broker, do not overwrite the file", e.Found, SchemaVersion)
}

// Unwrap makes errors.Is(err, ErrUnsupported) hold.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// CorruptError is returned (matching [ErrCorrupt]) for a file whose bytes
// are neither SQLite nor SNUGENC1. Quarantine names the private copy of its
// bytes; the file itself is left in place until [OpenFresh].
type CorruptError struct{ Path, Quarantine string }

func (e *CorruptError) Error() string {
	return fmt.Sprintf("userdb: %s is not a database; its bytes were copied to %s; a new one is made only on request (OpenFresh)", e.Path, e.Quarantine)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Code returns the spec code of err ("" if it has none).
func Code(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ""
}

// errorf wraps a sentinel with detail: errors.Is matches the sentinel.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
