package activity_test

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-browser/broker/activity"
)

const crashEnv = "ACTIVITY_CRASH_WRITER"

// TestCrashWriter is the child of TestSIGKILLLeavesTheLogReadable: it
// writes entries as fast as it can (the bound is small, so rewrites happen
// all the time) until it is killed.
func TestCrashWriter(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("the child of TestSIGKILLLeavesTheLogReadable")
	}
	l := activity.Open(path, activity.Options{MaxEntries: 20})
	if st := l.Status(); st.Problem != nil {
		t.Fatal(st.Problem)
	}
	os.Stdout.WriteString("ready\n")
	for i := 0; ; i++ {
		id := l.Begin(fill("writer", i))
		l.End(id, "succeeded", "observed", "")
	}
}

// TestSIGKILLLeavesTheLogReadable kills a real writer process with SIGKILL
// at random moments — mid-append, mid-rewrite — and opens what it left:
// every time the log opens cleanly (no damaged line, nothing moved aside),
// within its bound, each entry finished or interrupted.
func TestSIGKILLLeavesTheLogReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), activity.FileName)
	seen := uint64(0)
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the writer did not start: %q %v", round, line, err)
		}
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()

		l := activity.Open(path, activity.Options{MaxEntries: 20})
		st := l.Status()
		if st.Problem != nil || st.MovedAside != "" {
			t.Fatalf("round %d: after SIGKILL: %+v", round, st)
		}
		got := all(l)
		if len(got) == 0 || len(got) > 21 { // the bound, and the one running when killed
			t.Fatalf("round %d: %d entries", round, len(got))
		}
		for _, e := range got {
			if e.State != activity.StateDone && e.State != activity.StateInterrupted {
				t.Fatalf("round %d: entry %+v neither finished nor interrupted", round, e)
			}
		}
		if got[0].ID <= seen {
			t.Fatalf("round %d: the newest entry %d is not newer than the last round's %d", round, got[0].ID, seen)
		}
		seen = got[0].ID
		l.Close()
		if entries, damaged, err := activity.ReadFile(path); err != nil || damaged != 0 || len(entries) != len(got) {
			t.Fatalf("round %d: ReadFile %d entries, %d damaged, %v", round, len(entries), damaged, err)
		}
	}
}
