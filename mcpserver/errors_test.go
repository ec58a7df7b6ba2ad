package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/wire"
)

func TestHints(t *testing.T) {
	for code, want := range map[wire.Code]string{
		wire.CodeStaleTarget:      "the page changed: call browser_observe again and use the new refs and documentEpoch",
		wire.CodePolicyDenied:     "the user or policy refused: ask the user",
		wire.CodeLeaseRevoked:     "the lease ended (Stop, navigation away, release or expiry): claim the tab again",
		wire.CodeNotActionable:    "the element is covered, hidden or disabled: ",
		wire.CodeRecoveryRequired: "this request may already have run: check the page (observe) before trying again with a new requestId",
		wire.CodeConnectionLost:   "the browser or broker is gone: ",
	} {
		if got := Hint(code); !strings.HasPrefix(got, want) {
			t.Errorf("Hint(%s) = %q, want it to start with %q", code, got, want)
		}
	}
	// Every registry code has something to say.
	for _, code := range wire.Codes {
		if Hint(code) == "" {
			t.Errorf("no hint for %s", code)
		}
	}
	// A capture's refusals have hints of their own; other codes fall back.
	for code, want := range map[wire.Code]string{
		wire.CodeStaleTarget:           "the page kept changing while it was captured: wait a moment and call browser_screenshot again",
		wire.CodeUnsupportedCapability: "this page cannot be captured safely here (it is pinch-zoomed, it reflects or SVG-filters a cross-origin frame, or the browser or extension cannot capture): work from browser_observe",
		wire.CodeQueueFull:             "the screenshot is too large to send",
		wire.CodeLeaseRevoked:          Hint(wire.CodeLeaseRevoked),
	} {
		if got := HintFor("browser.capture", code); !strings.HasPrefix(got, want) {
			t.Errorf("HintFor(browser.capture, %s) = %q, want it to start with %q", code, got, want)
		}
	}
	if got, want := HintFor("browser.observe", wire.CodeStaleTarget), Hint(wire.CodeStaleTarget); got != want {
		t.Errorf("HintFor(browser.observe, STALE_TARGET) = %q, want %q", got, want)
	}
}

func TestToolError(t *testing.T) {
	for _, tc := range []struct {
		method string
		err    error
		want   string
	}{
		{"browser.act", wire.Err(wire.CodeStaleTarget), "STALE_TARGET: the page changed: call browser_observe again and use the new refs and documentEpoch."},
		{"browser.observe", fmt.Errorf("call: %w", wire.Err(wire.CodeLeaseRevoked)), "LEASE_REVOKED: the lease ended (Stop, navigation away, release or expiry): claim the tab again."},
		{"browser.act", wire.Err(wire.CodeJournalFull), "JOURNAL_FULL: the broker's action journal is full"},
		{"browser.act", wire.Err("SOMETHING_NEW"), "SOMETHING_NEW: the broker refused the request"},
		{"browser.act", context.DeadlineExceeded, "DEADLINE_EXCEEDED: it did not finish in time"},
		{"browser.act", errors.New("boom"), "INTERNAL_ERROR: boom"},
		{"browser.list", notRunning(errors.New("connect: no such file")), "the DSH broker is not running or not reachable. Ask the user to start it: `broker serve`, or `systemctl --user start broker.socket` where it is installed as a service; then call this tool again. (connect: no such file)"},
		{"browser.capture", wire.Err(wire.CodeStaleTarget), "STALE_TARGET: the page kept changing while it was captured: wait a moment and call browser_screenshot again."},
		{"browser.capture", context.DeadlineExceeded, "DEADLINE_EXCEEDED: the capture did not finish in time"},
		{"browser.capture", wire.Err(wire.CodeNotActionable), "NOT_ACTIONABLE: the tab is not shown"},
		{"browser.readPage", wire.Err(wire.CodeStaleTarget), "STALE_TARGET: the continuation is used up"},
	} {
		if got := toolError(tc.method, tc.err).Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("toolError(%s, %v) = %q, want it to start with %q", tc.method, tc.err, got, tc.want)
		}
	}
	if toolError("browser.act", nil) != nil {
		t.Error("toolError(nil) is not nil")
	}
}
