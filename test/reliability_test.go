package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// reliabilityRounds is how many kill-and-restart rounds run; set
// DSH_RELIABILITY_ROUNDS for a longer run.
func reliabilityRounds() int {
	if n, err := strconv.Atoi(os.Getenv("DSH_RELIABILITY_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 4
}

// TestKillRestartLoopWithBrowser kills the broker with SIGKILL right after
// a click was dispatched, round after round, with real Chromium and the
// extension attached, and every other round wipes the runtime directory
// (token, socket, lock) as a reboot does. After each restart: the extension
// reconnects as a new instance; the old lease never comes back; the
// uncertain click is never replayed (the page counts exactly one) and its
// retry says so truthfully; and the broker serves new work.
func TestKillRestartLoopWithBrowser(t *testing.T) {
	s := stack.Start(t, "--access-mode=personal")
	tabTarget := s.Browser.OpenTab(t, s.Pages.URL("/counter"))
	for round := range reliabilityRounds() {
		wipe := round%2 == 1
		restart(t, s, "DSH_FAILPOINT=after-dispatch")
		c := durableClient(t, s)
		id := fmt.Sprintf("loop-%d-%d", round, time.Now().UnixNano())
		a := prepareClick(t, s, c, tabTarget, id)
		lease := a.params["request"].(map[string]any)["leaseId"]
		if _, err := c.Call(context.Background(), "browser.act", a.params); !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
			t.Fatalf("round %d: act answered %v; the broker should have died", round, err)
		}
		select {
		case <-s.B.Exited():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the broker did not die at the failpoint", round)
		}
		if wipe {
			if err := os.RemoveAll(s.B.RuntimeDir); err != nil {
				t.Fatal(err)
			}
		}
		old := s.Instance
		restart(t, s)
		if s.Instance == old {
			t.Fatalf("round %d: the extension kept its instance across a restart", round)
		}
		c = durableClient(t, s)
		// The old lease is gone for good.
		if _, err := c.Call(context.Background(), "browser.observe", map[string]any{"sessionId": "crash", "leaseId": lease}); !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
			t.Fatalf("round %d (wiped %v): the old lease answered %v, want LEASE_REVOKED", round, wipe, err)
		}
		// The uncertain click: said to have maybe happened, never replayed.
		for range 2 {
			r := actOnce(t, c, a)
			if r.Code != wire.CodeRecoveryRequired || r.Recovery == nil || r.Recovery.State != "reserved" || r.Dispatch != "dispatched" {
				t.Fatalf("round %d (wiped %v): retry answered %+v, want RECOVERY_REQUIRED reserved/dispatched", round, wipe, r)
			}
		}
		if n := clicks(t, s, tabTarget); n != 1 {
			t.Fatalf("round %d (wiped %v): the page counted %d clicks, want exactly 1", round, wipe, n)
		}
		// And new work goes through.
		b := prepareClick(t, s, c, tabTarget, id+"-after")
		if r := actOnce(t, c, b); r.Outcome != "succeeded" {
			t.Fatalf("round %d (wiped %v): a new click after the restart: %+v", round, wipe, r)
		}
	}
}
