package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

func actOnce(t *testing.T, c *client.Client, a clickAttempt) browser.ActionResult {
	t.Helper()
	raw, err := c.Call(context.Background(), "browser.act", a.params)
	if err != nil {
		t.Fatalf("act: %v", err)
	}
	var r browser.ActionResult
	json.Unmarshal(raw, &r)
	return r
}

func TestDurableRetryAndConflict(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tabTarget := s.Browser.OpenTab(t, s.Pages.URL("/counter"))
	c := durableClient(t, s)
	a := prepareClick(t, s, c, tabTarget, "durable-1")
	first := actOnce(t, c, a)
	if first.Outcome != "succeeded" {
		t.Fatalf("first: %+v", first)
	}
	again := actOnce(t, c, a)
	if again.Outcome != "succeeded" || again.Code != "" || again.Observation == nil {
		t.Fatalf("retry while the result is retained must return it: %+v", again)
	}
	// Another connection with the same journalKey and session (the client
	// after a reconnect, or another program that knows the key) does not
	// own the lease: nothing re-runs, and it learns what happened but not
	// the page (metadata-only RECOVERY_REQUIRED, no observation).
	other := durableClient(t, s)
	if r := actOnce(t, other, a); r.Code != wire.CodeRecoveryRequired || r.Observation != nil ||
		r.Recovery == nil || r.Recovery.PriorOutcome != "succeeded" {
		t.Fatalf("retry from another connection: %+v, want metadata-only RECOVERY_REQUIRED", r)
	}
	if n := clicks(t, s, tabTarget); n != 1 {
		t.Fatalf("page counted %d clicks, want 1", n)
	}
	changed := a.params["request"].(map[string]any)
	changed["timeoutMs"] = 5000
	if _, err := c.Call(context.Background(), "browser.act", a.params); !isCode(err, wire.CodeRequestIDConflict) {
		t.Fatalf("same requestId, other payload: %v", err)
	}
}

func isCode(err error, code wire.Code) bool { return err != nil && client.IsCode(err, code) }

// breakJournal stops the broker, damages its journal and starts it again.
func breakJournal(t *testing.T, s *stack.Stack, damage func(path string)) {
	t.Helper()
	s.B.Stop(t)
	damage(filepath.Join(s.B.StateDir, "journal.db"))
	restart(t, s)
}

func TestJournalFailsClosed(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(path string){
		"truncated mid-record": func(path string) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		},
		"edited by hand": func(path string) {
			data, _ := os.ReadFile(path)
			i := bytes.Index(data, []byte(`"kind":"click"`))
			if i < 0 {
				t.Fatal("no record found in the journal file")
			}
			data[i+9] = 'X' // "click" → "cXick"
			os.WriteFile(path, data, 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := stack.Start(t, "--access-mode=personal")
			tabTarget := s.Browser.OpenTab(t, s.Pages.URL("/counter"))
			c := durableClient(t, s)
			if r := actOnce(t, c, prepareClick(t, s, c, tabTarget, "before-damage")); r.Outcome != "succeeded" {
				t.Fatalf("first action: %+v", r)
			}
			breakJournal(t, s, damage)
			c = durableClient(t, s)
			a := prepareClick(t, s, c, tabTarget, "after-damage") // reads keep working
			r := actOnce(t, c, a)
			if r.Code != wire.CodeJournalUnavailable || r.Dispatch != "notDispatched" {
				t.Fatalf("action on a damaged journal: %+v", r)
			}
			if n := clicks(t, s, tabTarget); n != 0 {
				t.Fatalf("page counted %d clicks on a damaged journal", n)
			}
			out, _, _ := testenv.Run(t, nil, "status", "--runtime-dir", s.B.RuntimeDir)
			if !strings.Contains(out, "UNAVAILABLE") || !strings.Contains(out, "broker journal reset") {
				t.Fatalf("broker status does not explain the journal problem:\n%s", out)
			}
			if !strings.Contains(s.B.Stderr.String(), "journal reset") {
				t.Fatalf("the log does not name the fix:\n%s", s.B.Stderr)
			}

			// The fix the broker names: stop it, reset (the old file is moved
			// aside, never deleted), start again.
			s.B.Stop(t)
			out, errOut, code := testenv.Run(t, nil, "journal", "reset", "--state-dir", s.B.StateDir)
			if code != 0 || !strings.Contains(out, "moved") {
				t.Fatalf("reset: %d %s %s", code, out, errOut)
			}
			moved, _ := filepath.Glob(filepath.Join(s.B.StateDir, "journal.db.broken-*"))
			if len(moved) != 1 {
				t.Fatalf("the old journal was not kept aside: %v", moved)
			}
			restart(t, s)
			c = durableClient(t, s)
			if r := actOnce(t, c, prepareClick(t, s, c, tabTarget, "after-reset")); r.Outcome != "succeeded" {
				t.Fatalf("action after reset: %+v", r)
			}
		})
	}
}

// TestDiskFullBeforeIntent puts the state directory on a tiny tmpfs and
// fills it: the intent cannot be written, so nothing may be dispatched.
func TestDiskFullBeforeIntent(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tabTarget := s.Browser.OpenTab(t, s.Pages.URL("/counter"))
	s.B.Stop(t)
	os.RemoveAll(s.B.StateDir)
	os.MkdirAll(s.B.StateDir, 0o700)
	// Room for the journal's 1 MiB log, which is written in full when it is
	// made: intents go there until it fills, then to the database, which
	// cannot grow.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", s.B.StateDir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(s.B.StateDir, syscall.MNT_DETACH) })
	restart(t, s)
	filler, _ := os.Create(filepath.Join(s.B.StateDir, "filler"))
	buf := make([]byte, 4096)
	for {
		if _, err := filler.Write(buf); err != nil {
			break
		}
	}
	filler.Close()

	// Record intents until the disk runs out: actions on a stale document
	// reserve their intent and then dispatch nothing, which is cheap.
	c := durableClient(t, s)
	a := prepareClick(t, s, c, tabTarget, "unused")
	req := a.params["request"].(map[string]any)
	epoch := req["documentEpoch"]
	req["documentEpoch"] = "stale:epoch"
	full := false
	for i := 0; i < 5000 && !full; i++ {
		req["requestId"] = fmt.Sprint("fill-", i)
		r := actOnce(t, c, a)
		switch r.Code {
		case wire.CodeStaleTarget:
		case wire.CodeJournalUnavailable:
			full = true
		default:
			t.Fatalf("filler action %d: %+v", i, r)
		}
	}
	if !full {
		t.Fatal("the journal never ran out of space on a full disk")
	}
	req["documentEpoch"], req["requestId"] = epoch, fmt.Sprint("full-", time.Now().UnixNano())
	r := actOnce(t, c, a)
	if r.Code != wire.CodeJournalUnavailable || r.Dispatch != "notDispatched" {
		t.Fatalf("action on a full disk: %+v", r)
	}
	if n := clicks(t, s, tabTarget); n != 0 {
		t.Fatalf("page counted %d clicks though no intent could be recorded", n)
	}
	out, _, _ := testenv.Run(t, nil, "status", "--runtime-dir", s.B.RuntimeDir)
	if !strings.Contains(out, "disk is full") {
		t.Fatalf("broker status does not say the disk is full:\n%s", out)
	}
	// Reads keep working.
	lease := req["leaseId"]
	if _, err := c.Call(context.Background(), "browser.observe", map[string]any{"sessionId": "crash", "leaseId": lease}); err != nil {
		t.Fatalf("observe on a full disk: %v", err)
	}
	// Nothing recorded before the disk filled is lost: with room again and
	// a restart, the journal opens clean and still knows the first action.
	os.Remove(filepath.Join(s.B.StateDir, "filler"))
	restart(t, s)
	out, _, _ = testenv.Run(t, nil, "status", "--runtime-dir", s.B.RuntimeDir)
	if strings.Contains(out, "UNAVAILABLE") {
		t.Fatalf("the journal is still unavailable after the disk had room again:\n%s", out)
	}
	c = durableClient(t, s)
	req["documentEpoch"], req["requestId"] = "stale:epoch", "fill-0"
	if r := actOnce(t, c, a); r.Code != wire.CodeRecoveryRequired || r.Recovery == nil || r.Recovery.State != "settled" {
		t.Fatalf("retry of an action recorded before the disk filled: %+v, want its settled record", r)
	}
}

// TestBrowserKilledMidAction kills Chromium while an action waits for its
// expectation: the answer says the input was dispatched and its effect is
// unknown, the journal records that, and the broker keeps serving.
func TestBrowserKilledMidAction(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tabTarget := s.Browser.OpenTab(t, s.Pages.URL("/counter"))
	c := durableClient(t, s)
	a := prepareClick(t, s, c, tabTarget, "killed-mid-action")
	req := a.params["request"].(map[string]any)
	req["action"].(map[string]any)["expected"] = map[string]any{"kind": "text", "text": "Clicks: 99"} // never true
	done := make(chan browser.ActionResult, 1)
	go func() { done <- actOnce(t, c, a) }()
	time.Sleep(1500 * time.Millisecond)
	s.Browser.Kill()
	select {
	case r := <-done:
		if r.Dispatch == "notDispatched" || r.Outcome == "succeeded" {
			t.Fatalf("action interrupted by the browser's death: %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the action never returned after the browser died")
	}
	if r := actOnce(t, c, a); r.Dispatch == "notDispatched" {
		t.Fatalf("retry after the browser died must not claim nothing happened: %+v", r)
	}
	if _, err := s.B.Client(t, testenv.ClientOptions()).Call(context.Background(), "browser.instances", nil); err != nil {
		t.Fatalf("broker stopped serving: %v", err)
	}
}
