package frame

import (
	"errors"
	"strings"
)

// Outcomes of [Parse] and [Instance.Receive] other than an accepted frame.
// Whatever wire answer the rules require has already been decided (Parse:
// [Error.Answer]) or sent (Receive) when they are returned.
var (
	// ErrIgnored: not Snug traffic, an unknown snug:* type (R2), or, on
	// Receive, a host frame coming from the app. It is dropped silently.
	ErrIgnored = errors.New("snug frame ignored")
	// ErrTooLarge: the frame is over its size class (R6).
	ErrTooLarge = errors.New("snug frame over its size class")
	// ErrStale: a request or cancel for an instanceId that is not the
	// instance's current one (R4). It is dropped silently.
	ErrStale = errors.New("snug frame for a stale instanceId")
	// ErrDuplicate: a requestId this instance already accepted (R4). It is
	// refused HOST_ERROR, unless that request is still in flight: then the
	// only answer with its requestId stays the original request's (R3).
	ErrDuplicate = errors.New("snug requestId already used by this instance")
	// ErrBusy: the instance has its cap of requests of this kind in flight;
	// the request is refused HOST_ERROR, retryable.
	ErrBusy = errors.New("snug instance has too many requests in flight")
	// ErrClosed: the instance was closed, or the request already got its
	// terminal answer (by cancel, supersede or an earlier answer). Nothing
	// was sent.
	ErrClosed = errors.New("snug request or instance closed")
)

// Error is a frame that was rejected (not ignored): Code is the R1 answer
// (MALFORMED or UNSUPPORTED_VERSION), or HOST_ERROR for a frame over its
// size class. Type and RequestID are what the raw frame carried, RequestID
// only when it was a plausible id (a string of 1–128 characters).
type Error struct {
	Code      string
	Type      Type   // "" when the frame had no string type
	RequestID string // "" when none could be recovered
	Field     string // the offending member, "" for the whole frame
	Reason    string
	err       error // ErrTooLarge, for errors.Is
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("snug frame")
	if e.Type != "" {
		b.WriteString(" " + string(e.Type))
	}
	b.WriteString(": " + e.Code + ": ")
	if e.Field != "" {
		b.WriteString(e.Field + " ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

func (e *Error) Unwrap() error { return e.err }

// Answer returns the frame that answers the rejected frame on the wire, and
// whether there is one. R1: a rejection is answered only when a requestId
// was recovered, and only for a request type (app-message, db-request,
// net-request, open-url-request); never for anything else, so an app cannot
// make the host reflect frames of its choosing.
//
// The answer is the request type's error shape with Code, retryable false;
// open-url-result, which has none, says refused with Code as its reason.
func (e *Error) Answer() ([]byte, bool) {
	if e.RequestID == "" || e.Type.answerType() == "" {
		return nil, false
	}
	msg := e.Reason
	if e.Field != "" {
		msg = e.Field + " " + msg
	}
	return refusal(e.Type, e.RequestID, ResponseError{Code: e.Code, Message: msg})
}

func malformed(field, reason string) *Error {
	return &Error{Code: CodeMalformed, Field: field, Reason: reason}
}
