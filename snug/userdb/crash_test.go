package userdb_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/userdb"
)

const (
	crashChildEnv = "SNUGDB_CRASH_CHILD" // path of the user file; app id in SNUGDB_CRASH_APP
	crashRows     = 300
)

// TestCrashChild is the process the crash tests kill: it rewrites every row
// of the app's table in one write-back after another, forever.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run by the crash tests only")
	}
	db, err := userdb.Open(path, userdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := tryRun(db, os.Getenv("SNUGDB_CRASH_APP"), "UPDATE g SET gen = gen + 1, pad = randomblob(4096)"); err != nil {
			t.Fatal(err)
		}
	}
}

// crashSetup makes a user file with one app whose table g holds crashRows
// rows of generation 0.
func crashSetup(t *testing.T) (path, appID string) {
	t.Helper()
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Crash")
	run(t, db, app.ID, "CREATE TABLE g (id INTEGER PRIMARY KEY, gen INTEGER, pad BLOB)",
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO g (gen, pad) SELECT 0, randomblob(4096) FROM n")
	db.Close()
	return path, app.ID
}

func startChild(t *testing.T, path, appID string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, crashChildEnv+"="+path, "SNUGDB_CRASH_APP="+appID)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// checkGenerations reopens the file and checks it is whole and holds one
// committed generation: every row rewritten together, or none.
func checkGenerations(t *testing.T, path, appID string) int64 {
	t.Helper()
	db := mustReopen(t, path)
	defer db.Close()
	rows := run(t, db, appID, "SELECT count(*), min(gen), max(gen) FROM g")
	n, lo, hi := rows[0][0].(int64), rows[0][1].(int64), rows[0][2].(int64)
	if n != crashRows || lo != hi {
		t.Fatalf("after the crash: %d rows, generations %d..%d: a write-back was torn", n, lo, hi)
	}
	db.Close()
	if ok := queryStrings(t, raw(t, path), "PRAGMA integrity_check"); len(ok) != 1 || ok[0] != "ok" {
		t.Fatalf("integrity_check: %v", ok)
	}
	return lo
}

// TestSIGKILLBeforeCommitKeepsThePreviousState kills the writer with
// SIGKILL inside its third write-back, after every page was written and
// before COMMIT, then reopens the file.
func TestSIGKILLBeforeCommitKeepsThePreviousState(t *testing.T) {
	path, appID := crashSetup(t)
	cmd := startChild(t, path, appID, "DSH_FAILPOINT=userdb-before-commit:3")
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed: %v", err)
	}
	if _, err := os.Stat(path + "-journal"); err != nil {
		t.Fatalf("no hot journal after the kill: %v", err)
	}
	if gen := checkGenerations(t, path, appID); gen != 2 {
		t.Fatalf("generation %d after the kill in the third write-back, want 2", gen)
	}
}

// TestSIGKILLAtRandomTimesNeverTearsAWriteBack kills the writer at random
// moments of its loop.
func TestSIGKILLAtRandomTimesNeverTearsAWriteBack(t *testing.T) {
	trials := 5
	if testing.Short() {
		trials = 2
	}
	path, appID := crashSetup(t)
	var gen int64
	for range trials {
		cmd := startChild(t, path, appID)
		// Kill at a random moment once the loop is running: after the file's
		// change counter (header bytes 24–27) has moved.
		start := changeCounter(t, path)
		for deadline := time.Now().Add(time.Minute); changeCounter(t, path) == start; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the writer never committed")
			}
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		gen = checkGenerations(t, path, appID)
	}
	t.Logf("%d kills, generation %d at the end", trials, gen)
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 0 {
		t.Fatalf("quarantined after a crash: %v", m)
	}
}

func changeCounter(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4)
	f.ReadAt(b, 24)
	return string(b)
}
