// Package agent calls the user's own agent for a Snug app turn: one
// self-contained request (system instructions and the chat envelope), one
// reply text, streamed as it comes.
//
// [OpenAI] talks to an OpenAI-compatible chat-completions endpoint the user
// configured. Its key travels only in the Authorization header of requests
// to that endpoint; it is never in an error, a log line or a frame.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Turn is one app turn.
type Turn struct {
	System string // the system instructions (package snug/contract)
	User   string // the chat envelope (package snug/chat)
	// MaxTokens bounds the reply; 0 leaves it to the agent (a contract's
	// maxOutputTokens narrows it).
	MaxTokens int
}

// Agent answers turns. onDelta, when not nil, receives the reply's text as
// it arrives, in order; the returned text is the whole reply.
type Agent interface {
	Answer(ctx context.Context, t Turn, onDelta func(delta string)) (string, error)
}

// Codes of an [Error]: the Snug wire codes (Part I R5) a failed turn ends
// with.
const (
	CodeNetwork  = "NETWORK_ERROR"
	CodeConflict = "THREAD_CONFLICT"
	CodeHost     = "HOST_ERROR"
)

// Error is a turn that failed: its Snug code, whether a retry may help, and
// a message for the app that holds no secret.
type Error struct {
	Code      string
	Retryable bool
	Message   string
}

func (e *Error) Error() string { return "agent: " + e.Message }

func errorf(code string, retryable bool, format string, args ...any) *Error {
	return &Error{Code: code, Retryable: retryable, Message: fmt.Sprintf(format, args...)}
}

// ErrEndpoint wraps every reason an endpoint URL is refused.
var ErrEndpoint = errors.New("agent endpoint refused")

// CheckEndpoint checks an endpoint URL before it is stored: https, or http
// to this machine only (a local model server), since the key goes with
// every request; no userinfo, query or fragment. It returns the URL of the
// chat-completions resource: the URL itself when it ends in
// /chat/completions, else the URL with that appended (a base like …/v1).
func CheckEndpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("%w: %q is not an absolute URL", ErrEndpoint, raw)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	case u.Scheme == "http":
		return "", fmt.Errorf("%w: plain http only to this machine (127.0.0.1, ::1, localhost); use https for %s", ErrEndpoint, u.Hostname())
	default:
		return "", fmt.Errorf("%w: the scheme must be https (or http to this machine)", ErrEndpoint)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: no user, query or fragment in the URL (the key is read from standard input)", ErrEndpoint)
	}
	path := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(path, "/chat/completions") {
		path += "/chat/completions"
	}
	u.Path, u.RawPath = path, ""
	return u.String(), nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
