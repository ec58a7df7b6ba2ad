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
}

func TestToolError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{wire.Err(wire.CodeStaleTarget), "STALE_TARGET: the page changed: call browser_observe again and use the new refs and documentEpoch."},
		{fmt.Errorf("call: %w", wire.Err(wire.CodeLeaseRevoked)), "LEASE_REVOKED: the lease ended (Stop, navigation away, release or expiry): claim the tab again."},
		{wire.Err(wire.CodeJournalFull), "JOURNAL_FULL: the broker's action journal is full"},
		{wire.Err("SOMETHING_NEW"), "SOMETHING_NEW: the broker refused the request"},
		{context.DeadlineExceeded, "DEADLINE_EXCEEDED: it did not finish in time"},
		{errors.New("boom"), "INTERNAL_ERROR: boom"},
		{notRunning(errors.New("connect: no such file")), "the DSH broker is not running or not reachable. Ask the user to start it: `broker serve`, or `systemctl --user start broker.socket` where it is installed as a service; then call this tool again. (connect: no such file)"},
	} {
		if got := toolError(tc.err).Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("toolError(%v) = %q, want it to start with %q", tc.err, got, tc.want)
		}
	}
	if toolError(nil) != nil {
		t.Error("toolError(nil) is not nil")
	}
}
