package journal_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/wire"
)

var secret = []byte(strings.Repeat("5e", 32))

const scope = "journal-key-7f3a\x00session-9c1d"

func key(id string) journal.Key { return journal.Key{Scope: scope, RequestID: id} }

func hashOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func isCode(err error, c wire.Code) bool { return errors.Is(err, wire.Err(c)) }

// clock is a settable Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// journalPath is a fresh journal path in a private temp directory.
func journalPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "action-journal.db")
}

// MustOpen opens a journal that must be available, closed at cleanup.
func MustOpen(t testing.TB, path string, opts journal.Options) *journal.Journal {
	t.Helper()
	j := journal.Open(path, opts)
	if p := j.Err(); p != nil {
		t.Fatalf("open %s: %v (fix: %s)", path, p, p.Fix)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func mustReserve(t testing.TB, j *journal.Journal, id, payload string) {
	t.Helper()
	if err := j.Reserve(key(id), hashOf(payload), "click"); err != nil {
		t.Fatalf("reserve %s: %v", id, err)
	}
}

func mustSettle(t testing.TB, j *journal.Journal, id, outcome, dispatch string) {
	t.Helper()
	if err := j.Settle(key(id), outcome, dispatch); err != nil {
		t.Fatalf("settle %s: %v", id, err)
	}
}

func mustLookup(t testing.TB, j *journal.Journal, id string) *journal.Record {
	t.Helper()
	rec, err := j.Lookup(key(id))
	if err != nil {
		t.Fatalf("lookup %s: %v", id, err)
	}
	return rec
}

func TestMain(m *testing.M) {
	switch mode := os.Getenv("JOURNAL_TEST_CHILD"); mode {
	case "":
	case "group":
		os.Exit(groupChild(os.Getenv("JOURNAL_TEST_PATH"), os.Getenv("JOURNAL_TEST_PREFIX")))
	default:
		os.Exit(child(mode, os.Getenv("JOURNAL_TEST_PATH"), os.Getenv("JOURNAL_TEST_PREFIX")))
	}
	os.Exit(m.Run())
}

// child is the broker stand-in of the crash tests. It prints a line after
// each write returned, so every printed line is an acknowledged write.
func child(mode, path, prefix string) int {
	j := journal.Open(path, journal.Options{})
	if p := j.Err(); p != nil {
		fmt.Println("error", p)
		return 1
	}
	switch mode {
	case "hold":
		fmt.Println("open")
		time.Sleep(time.Minute)
	case "reserve":
		if err := j.Reserve(key(prefix), hashOf(prefix), "click"); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("reserved", prefix)
		time.Sleep(time.Minute)
	case "churn":
		for i := 0; ; i++ {
			id := fmt.Sprintf("%s-%d", prefix, i)
			if err := j.Reserve(key(id), hashOf(id), "click"); err != nil {
				fmt.Println("error", err)
				return 1
			}
			fmt.Println("reserved", id)
			if i%2 == 0 {
				if err := j.Settle(key(id), journal.OutcomeSucceeded, journal.DispatchObserved); err != nil {
					fmt.Println("error", err)
					return 1
				}
				fmt.Println("settled", id)
			}
		}
	}
	return 0
}

// startChild runs this test binary as a child in mode on path and returns
// it with a scanner over its output.
func startChild(t *testing.T, mode, path, prefix string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "JOURNAL_TEST_CHILD="+mode, "JOURNAL_TEST_PATH="+path, "JOURNAL_TEST_PREFIX="+prefix)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

func TestRoundTrip(t *testing.T) {
	clk := newClock()
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{Now: clk.Now})
	if rec := mustLookup(t, j, "r1"); rec != nil {
		t.Fatalf("lookup before reserve: %+v", rec)
	}
	mustReserve(t, j, "r1", "payload")
	want := journal.Record{Hash: hashOf("payload"), Kind: "click", State: journal.StateReserved,
		Dispatch: journal.DispatchUnknown, ReservedAt: clk.Now()}
	if rec := mustLookup(t, j, "r1"); rec == nil || *rec != want {
		t.Fatalf("after reserve: %+v, want %+v", rec, want)
	}
	if st := j.Status(); st.Entries != 1 || st.Reserved != 1 || st.Problem != nil || st.Path != path {
		t.Fatalf("status after reserve: %+v", st)
	}
	clk.Advance(time.Second)
	mustSettle(t, j, "r1", journal.OutcomeSucceeded, journal.DispatchObserved)
	want.State, want.Outcome, want.Dispatch, want.SettledAt = journal.StateSettled, journal.OutcomeSucceeded, journal.DispatchObserved, clk.Now()
	if rec := mustLookup(t, j, "r1"); rec == nil || *rec != want {
		t.Fatalf("after settle: %+v, want %+v", rec, want)
	}
	if st := j.Status(); st.Entries != 1 || st.Reserved != 0 {
		t.Fatalf("status after settle: %+v", st)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if !isCode(func() error { _, err := j.Lookup(key("r1")); return err }(), wire.CodeJournalUnavailable) {
		t.Fatal("lookup after Close is not JOURNAL_UNAVAILABLE")
	}
	j = MustOpen(t, path, journal.Options{Now: clk.Now})
	if rec := mustLookup(t, j, "r1"); rec == nil || *rec != want {
		t.Fatalf("after reopen: %+v, want %+v", rec, want)
	}
}

func TestReopenKeepsFences(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	for _, id := range []string{"a", "b", "c"} {
		mustReserve(t, j, id, id)
	}
	mustSettle(t, j, "b", journal.OutcomeFailed, journal.DispatchNotDispatched)
	j.Close()

	j = MustOpen(t, path, journal.Options{})
	if st := j.Status(); st.Entries != 3 || st.Reserved != 2 {
		t.Fatalf("status after reopen: %+v, want 3 entries, 2 reserved", st)
	}
	for id, state := range map[string]string{"a": journal.StateReserved, "b": journal.StateSettled, "c": journal.StateReserved} {
		if rec := mustLookup(t, j, id); rec == nil || rec.State != state {
			t.Errorf("%s after reopen: %+v, want %s", id, rec, state)
		}
	}
}

// TestCrashAfterReserve kills a broker stand-in with SIGKILL right after
// Reserve returned: the reservation must be there, still uncertain.
func TestCrashAfterReserve(t *testing.T) {
	path := journalPath(t)
	cmd, out := startChild(t, "reserve", path, "req-1")
	if !out.Scan() || out.Text() != "reserved req-1" {
		t.Fatalf("child said %q, %v", out.Text(), out.Err())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	j := MustOpen(t, path, journal.Options{})
	rec := mustLookup(t, j, "req-1")
	if rec == nil || rec.State != journal.StateReserved || rec.Dispatch != journal.DispatchUnknown || rec.Hash != hashOf("req-1") {
		t.Fatalf("after SIGKILL: %+v, want the reservation", rec)
	}
}

// TestCrashDuringWrites SIGKILLs a stand-in that reserves and settles as
// fast as it can, so the kill lands in the middle of writes. After each
// crash the journal must open clean (records verified, bbolt check passed)
// and hold every write the child saw acknowledged. Three rounds share the
// file, so each reopens what the previous crash left.
func TestCrashDuringWrites(t *testing.T) {
	path := journalPath(t)
	acked := map[string]string{} // id → the last acknowledged state
	for round := range 3 {
		cmd, out := startChild(t, "churn", path, fmt.Sprint("round", round))
		lines := 0
		for out.Scan() {
			verb, id, _ := strings.Cut(out.Text(), " ")
			switch verb {
			case "reserved":
				acked[id] = journal.StateReserved
			case "settled":
				acked[id] = journal.StateSettled
			default:
				t.Fatalf("child: %s", out.Text())
			}
			if lines++; lines == 40+round*13 {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		cmd.Wait()

		j := MustOpen(t, path, journal.Options{})
		for id, state := range acked {
			rec := mustLookup(t, j, id)
			switch {
			case rec == nil:
				t.Fatalf("round %d: acknowledged %s %s is gone", round, state, id)
			case state == journal.StateSettled && rec.State != journal.StateSettled:
				t.Fatalf("round %d: acknowledged settle of %s lost: %+v", round, id, rec)
			}
		}
		j.Close()
	}
	t.Logf("%d acknowledged actions survived 3 SIGKILLs", len(acked))
}

func TestDuplicateAndConflict(t *testing.T) {
	j := MustOpen(t, journalPath(t), journal.Options{})
	mustReserve(t, j, "r", "p")

	err := j.Reserve(key("r"), hashOf("p"), "click")
	dup, ok := errors.AsType[*journal.DuplicateError](err)
	if !ok || dup.Record.State != journal.StateReserved || dup.Record.Hash != hashOf("p") {
		t.Fatalf("same hash while reserved: %v, want DuplicateError with the reservation", err)
	}
	mustSettle(t, j, "r", journal.OutcomeCancelled, journal.DispatchDispatched)
	err = j.Reserve(key("r"), hashOf("p"), "click")
	if dup, ok := errors.AsType[*journal.DuplicateError](err); !ok || dup.Record.State != journal.StateSettled || dup.Record.Outcome != journal.OutcomeCancelled {
		t.Fatalf("same hash once settled: %v, want DuplicateError with the outcome", err)
	}
	if err := j.Reserve(key("r"), hashOf("other"), "click"); !isCode(err, wire.CodeRequestIDConflict) {
		t.Fatalf("different hash: %v, want REQUEST_ID_CONFLICT", err)
	}
	// Another scope with the same request ID is another action.
	if err := j.Reserve(journal.Key{Scope: "other\x00s", RequestID: "r"}, hashOf("other"), "click"); err != nil {
		t.Fatalf("same request ID in another scope: %v", err)
	}
}

// TestEveryActionKind: every kind browser.act offers is a kind the journal
// stores and reads back after a restart, camel case (clickAt) included.
func TestEveryActionKind(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	kinds := []string{browser.ActCheck, browser.ActClick, browser.ActFill, browser.ActType, browser.ActAppend, browser.ActPress,
		browser.ActScroll, browser.ActWheel, browser.ActNavigate, browser.ActSelect, browser.ActDblclick, browser.ActHover,
		browser.ActChord, browser.ActDrag, browser.ActClickAt}
	for _, kind := range kinds {
		if err := j.Reserve(key(kind), hashOf(kind), kind); err != nil {
			t.Fatalf("reserve a %s: %v", kind, err)
		}
	}
	j.Close()
	j = MustOpen(t, path, journal.Options{})
	for _, kind := range kinds {
		if rec := mustLookup(t, j, kind); rec == nil || rec.Kind != kind {
			t.Fatalf("after a restart, the %s is %+v", kind, rec)
		}
	}
}

func TestInvalidCalls(t *testing.T) {
	j := MustOpen(t, journalPath(t), journal.Options{})
	mustReserve(t, j, "r", "p")
	for _, tc := range []struct {
		name string
		err  error
		code wire.Code
	}{
		{"NUL in request ID", j.Reserve(key("a\x00b"), hashOf("p"), "click"), wire.CodeInvalidRequest},
		{"empty request ID", j.Reserve(key(""), hashOf("p"), "click"), wire.CodeInvalidRequest},
		{"kind not a token", j.Reserve(key("k"), hashOf("p"), "Click me"), wire.CodeInvalidRequest},
		{"settle unknown key", j.Settle(key("nope"), journal.OutcomeSucceeded, journal.DispatchDispatched), wire.CodeInternalError},
		{"settle bad outcome", j.Settle(key("r"), "maybe", journal.DispatchDispatched), wire.CodeInternalError},
		{"settle with dispatch unknown", j.Settle(key("r"), journal.OutcomeUnknown, journal.DispatchUnknown), wire.CodeInternalError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !isCode(tc.err, tc.code) {
				t.Fatalf("%v, want %s", tc.err, tc.code)
			}
		})
	}
	mustSettle(t, j, "r", journal.OutcomeSucceeded, journal.DispatchDispatched)
	if err := j.Settle(key("r"), journal.OutcomeFailed, journal.DispatchDispatched); !isCode(err, wire.CodeInternalError) {
		t.Fatalf("second settle: %v, want INTERNAL_ERROR", err)
	}
	if j.Err() != nil {
		t.Fatalf("caller errors made the journal unavailable: %v", j.Err())
	}
}

// TestNothingRawOnDisk checks that the file holds no scope, session or
// request ID, and not the payload hash either.
func TestNothingRawOnDisk(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	h := hashOf("type my password hunter2")
	if err := j.Reserve(journal.Key{Scope: "JOURNALKEY-SECRET\x00SESSION-ID-42", RequestID: "REQUEST-ID-77"}, h, "fill"); err != nil {
		t.Fatal(err)
	}
	// The log holds the record too; look before Close checkpoints it.
	wal, err := os.ReadFile(journal.WALPath(path))
	must(t, err)
	if !bytes.Contains(wal, []byte(`"kind":"fill"`)) {
		t.Error("the record JSON is not in the log")
	}
	j.Close()
	for _, name := range []string{path, journal.WALPath(path), journal.KeyPath(path)} {
		data, err := os.ReadFile(name)
		must(t, err)
		for _, s := range [][]byte{[]byte("JOURNALKEY-SECRET"), []byte("SESSION-ID-42"), []byte("REQUEST-ID-77"), h[:], []byte(hex.EncodeToString(h[:]))} {
			if bytes.Contains(data, s) {
				t.Errorf("%s contains %q", name, s)
			}
		}
	}
	if data, _ := os.ReadFile(path); !bytes.Contains(data, []byte(`"kind":"fill"`)) {
		t.Error("the record JSON is not in the database")
	}
}

func TestCapacity(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{MaxEntries: 5})
	for i := range 5 {
		mustReserve(t, j, fmt.Sprint("r", i), "p")
	}
	mustSettle(t, j, "r0", journal.OutcomeSucceeded, journal.DispatchDispatched) // settled, still live
	if err := j.Reserve(key("r5"), hashOf("p"), "click"); !isCode(err, wire.CodeJournalFull) {
		t.Fatalf("6th reserve: %v, want JOURNAL_FULL", err)
	}
	for i := range 5 {
		if mustLookup(t, j, fmt.Sprint("r", i)) == nil {
			t.Fatalf("r%d was evicted", i)
		}
	}
	if j.Err() != nil {
		t.Fatalf("JOURNAL_FULL made the journal unavailable: %v", j.Err())
	}
	j.Close()
	j = MustOpen(t, path, journal.Options{MaxEntries: 5})
	if err := j.Reserve(key("r5"), hashOf("p"), "click"); !isCode(err, wire.CodeJournalFull) {
		t.Fatalf("6th reserve after reopen: %v, want JOURNAL_FULL", err)
	}
}

// TestCapacityDefault fills the journal to the default 10,000 entries (all
// but the last in one transaction, for speed) and checks the limit holds
// through a reopen.
func TestCapacityDefault(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	if err := journal.Fill(j, scope, journal.DefaultMaxEntries-1); err != nil {
		t.Fatal(err)
	}
	mustReserve(t, j, "last", "p")
	if err := j.Reserve(key("one-more"), hashOf("p"), "click"); !isCode(err, wire.CodeJournalFull) {
		t.Fatalf("reserve %d: %v, want JOURNAL_FULL", journal.DefaultMaxEntries+1, err)
	}
	st := j.Status()
	if st.Entries != journal.DefaultMaxEntries || st.Bytes > journal.DefaultMaxBytes {
		t.Fatalf("status: %+v", st)
	}
	j.Close()
	fi, _ := os.Stat(path)
	t.Logf("%d records: %d record bytes, file %d bytes", st.Entries, st.Bytes, fi.Size())

	j = MustOpen(t, path, journal.Options{})
	if st := j.Status(); st.Entries != journal.DefaultMaxEntries || st.Reserved != journal.DefaultMaxEntries {
		t.Fatalf("status after reopen: %+v", st)
	}
	if err := j.Reserve(key("one-more"), hashOf("p"), "click"); !isCode(err, wire.CodeJournalFull) {
		t.Fatalf("reserve after reopen: %v, want JOURNAL_FULL", err)
	}
	if mustLookup(t, j, "fill-0") == nil || mustLookup(t, j, "last") == nil {
		t.Fatal("a record was evicted")
	}
}

func TestMaxBytes(t *testing.T) {
	j := MustOpen(t, journalPath(t), journal.Options{})
	mustReserve(t, j, "r0", "p")
	one := j.Status().Bytes
	j.Close()

	// Room for three records and their settlements, not four.
	max := 3*(one+64) + 10
	j = MustOpen(t, journalPath(t), journal.Options{MaxBytes: max})
	for i := range 3 {
		mustReserve(t, j, fmt.Sprint("r", i), "p")
	}
	if err := j.Reserve(key("r3"), hashOf("p"), "click"); !isCode(err, wire.CodeJournalFull) {
		t.Fatalf("4th reserve: %v, want JOURNAL_FULL", err)
	}
	for i := range 3 {
		mustSettle(t, j, fmt.Sprint("r", i), journal.OutcomeCancelled, journal.DispatchNotDispatched)
	}
	if b := j.Status().Bytes; b > max {
		t.Fatalf("settled records take %d bytes, over MaxBytes %d", b, max)
	}
}

func TestRetention(t *testing.T) {
	clk := newClock()
	path := journalPath(t)
	opts := journal.Options{Retention: time.Hour, Now: clk.Now}
	j := MustOpen(t, path, opts)

	mustReserve(t, j, "old", "p") // t0, settled at t0
	mustSettle(t, j, "old", journal.OutcomeSucceeded, journal.DispatchDispatched)
	clk.Advance(30 * time.Minute)
	mustReserve(t, j, "uncertain", "p") // t0+30m, never settled
	clk.Advance(20 * time.Minute)
	mustReserve(t, j, "young", "p") // t0+50m
	mustSettle(t, j, "young", journal.OutcomeSucceeded, journal.DispatchDispatched)

	clk.Advance(20 * time.Minute) // t0+70m
	if n, err := j.Compact(); err != nil || n != 1 {
		t.Fatalf("compact at t0+70m: %d, %v, want 1 removed", n, err)
	}
	if mustLookup(t, j, "old") != nil {
		t.Fatal("a settled record past retention was kept")
	}
	if err := j.Reserve(key("old"), hashOf("new payload"), "click"); err != nil {
		t.Fatalf("reserving a compacted key again: %v", err)
	}
	if _, ok := errors.AsType[*journal.DuplicateError](j.Reserve(key("young"), hashOf("p"), "click")); !ok {
		t.Fatal("a settled record inside retention is not a duplicate")
	}
	if rec := mustLookup(t, j, "uncertain"); rec == nil || rec.State != journal.StateReserved {
		t.Fatalf("reserved record inside retention: %+v", rec)
	}

	// A reservation keeps its fence for the whole window, then goes.
	clk.Advance(20 * time.Minute) // t0+90m: uncertain is 60m old, exactly the window
	j.Compact()
	if mustLookup(t, j, "uncertain") == nil {
		t.Fatal("reserved record at the edge of retention was removed")
	}
	j.Close()
	clk.Advance(time.Minute)    // t0+91m
	j = MustOpen(t, path, opts) // Open compacts
	if mustLookup(t, j, "uncertain") != nil {
		t.Fatal("Open did not compact a reservation past retention")
	}
	if mustLookup(t, j, "young") == nil {
		t.Fatal("Open compacted a record inside retention")
	}
}

// TestFullCompactsFirst: expired records do not make the journal full.
func TestFullCompactsFirst(t *testing.T) {
	clk := newClock()
	j := MustOpen(t, journalPath(t), journal.Options{MaxEntries: 2, Retention: time.Hour, Now: clk.Now})
	mustReserve(t, j, "a", "p")
	mustSettle(t, j, "a", journal.OutcomeSucceeded, journal.DispatchDispatched)
	mustReserve(t, j, "b", "p")
	clk.Advance(2 * time.Hour)
	mustReserve(t, j, "c", "p")
	if mustLookup(t, j, "a") != nil || mustLookup(t, j, "b") != nil {
		t.Fatal("expired records were not compacted before refusing")
	}
	mustReserve(t, j, "d", "p")
	if err := j.Reserve(key("e"), hashOf("p"), "click"); !isCode(err, wire.CodeJournalFull) {
		t.Fatalf("third live record: %v, want JOURNAL_FULL", err)
	}
}

// TestRunCompacts runs the hourly compactor in a synctest bubble.
func TestRunCompacts(t *testing.T) {
	path := journalPath(t)
	synctest.Test(t, func(t *testing.T) {
		j := MustOpen(t, path, journal.Options{Retention: 90 * time.Minute})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { j.Run(ctx); close(done) }()
		mustReserve(t, j, "r", "p")
		mustSettle(t, j, "r", journal.OutcomeSucceeded, journal.DispatchDispatched)
		time.Sleep(journal.CompactInterval + time.Second)
		synctest.Wait()
		if mustLookup(t, j, "r") == nil {
			t.Fatal("compacted inside retention")
		}
		time.Sleep(journal.CompactInterval)
		synctest.Wait()
		if mustLookup(t, j, "r") != nil {
			t.Fatal("Run did not compact")
		}
		cancel()
		<-done
	})
}

func TestConcurrentReserve(t *testing.T) {
	j := MustOpen(t, journalPath(t), journal.Options{})
	const keys, tries = 8, 4
	var wg sync.WaitGroup
	results := make([][]error, keys)
	for k := range keys {
		results[k] = make([]error, tries)
		for i := range tries {
			wg.Go(func() {
				results[k][i] = j.Reserve(key(fmt.Sprint("k", k)), hashOf("p"), "click")
				j.Lookup(key(fmt.Sprint("k", k)))
			})
		}
	}
	wg.Wait()
	for k, errs := range results {
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else if _, ok := errors.AsType[*journal.DuplicateError](err); !ok {
				t.Fatalf("k%d: %v", k, err)
			}
		}
		if won != 1 {
			t.Fatalf("k%d reserved %d times, want once", k, won)
		}
	}
}

// makeJournal writes a valid journal with one settled and one reserved
// record at path, closed.
func makeJournal(t *testing.T, path string) {
	t.Helper()
	j := MustOpen(t, path, journal.Options{})
	mustReserve(t, j, "settled", "p")
	mustSettle(t, j, "settled", journal.OutcomeSucceeded, journal.DispatchObserved)
	mustReserve(t, j, "reserved", "p")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFailClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, path string) // after a valid journal is at path
		reason string                          // in Problem.Reason
		fix    string                          // in Problem.Fix
	}{
		{name: "truncated to half", reason: "truncated", fix: "broker journal reset",
			break_: func(t *testing.T, path string) {
				fi, _ := os.Stat(path)
				must(t, os.Truncate(path, fi.Size()/2))
			}},
		{name: "truncated to a page", reason: "not a valid journal database", fix: "broker journal reset",
			break_: func(t *testing.T, path string) { must(t, os.Truncate(path, 4096)) }},
		{name: "empty", reason: "empty", fix: "broker journal reset",
			break_: func(t *testing.T, path string) { must(t, os.Truncate(path, 0)) }},
		{name: "byte flipped in a record", reason: "changed outside the broker", fix: "broker journal reset",
			break_: func(t *testing.T, path string) {
				data, err := os.ReadFile(path)
				must(t, err)
				at := bytes.Index(data, []byte(`"state":"reserved"`))
				if at < 0 {
					t.Fatal("no reserved record in the file")
				}
				for at >= 0 { // every copy, in case a freed page holds one
					data[at+len(`"state":"r`)] ^= 0x20 // reserved → rEserved
					next := bytes.Index(data[at+1:], []byte(`"state":"reserved"`))
					if next < 0 {
						break
					}
					at += 1 + next
				}
				must(t, os.WriteFile(path, data, 0o600))
			}},
		{name: "another key", reason: "written with another key", fix: "broker journal reset",
			break_: func(t *testing.T, path string) {
				must(t, os.WriteFile(journal.KeyPath(path), bytes.Repeat([]byte{7}, 32), 0o600))
			}},
		{name: "symlink", reason: "symbolic link", fix: "broker journal reset",
			break_: func(t *testing.T, path string) {
				must(t, os.Rename(path, path+".real"))
				must(t, os.Symlink(filepath.Base(path)+".real", path))
			}},
		{name: "hard link", reason: "2 hard links", fix: "broker journal reset",
			break_: func(t *testing.T, path string) { must(t, os.Link(path, path+".other")) }},
		{name: "mode 0644", reason: "mode 0644", fix: "chmod 600",
			break_: func(t *testing.T, path string) { must(t, os.Chmod(path, 0o644)) }},
		{name: "group-writable directory", reason: "mode 0770", fix: "chmod go-w",
			break_: func(t *testing.T, path string) {
				must(t, os.Chmod(filepath.Dir(path), 0o770))
				t.Cleanup(func() { os.Chmod(filepath.Dir(path), 0o700) })
			}},
		{name: "directory is a symlink", reason: "not a directory", fix: "",
			break_: func(t *testing.T, path string) {
				dir := filepath.Dir(path)
				must(t, os.Rename(dir, dir+".real"))
				must(t, os.Symlink(dir+".real", dir))
				t.Cleanup(func() { os.Remove(dir); os.Rename(dir+".real", dir) })
			}},
		{name: "not a bolt database", reason: "not a valid journal database", fix: "broker journal reset",
			break_: func(t *testing.T, path string) {
				must(t, os.WriteFile(path, bytes.Repeat([]byte("not a database\n"), 4096), 0o600))
			}},
		{name: "a bolt database of something else", reason: "not a broker journal", fix: "broker journal reset",
			break_: func(t *testing.T, path string) {
				must(t, os.Remove(path))
				db, err := bolt.Open(path, 0o600, nil)
				must(t, err)
				must(t, db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err }))
				must(t, db.Close())
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := journalPath(t)
			makeJournal(t, path)
			tc.break_(t, path)
			before, _ := os.ReadFile(path)
			j := journal.Open(path, journal.Options{})
			defer j.Close()
			assertUnavailable(t, j, tc.reason, tc.fix)
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("opening changed the broken file")
			}
		})
	}
}

// TestTruncatedAnywhere cuts the file at every page below bbolt's
// high-water mark, and just below it: each cut loses data and must be
// refused, whether bbolt faults on it or the size check finds it.
func TestTruncatedAnywhere(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	for i := range 60 {
		mustReserve(t, j, fmt.Sprint("r", i), "p")
	}
	mustReserve(t, j, "reserved", "p")
	j.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	must(t, err)
	var highWater int64
	db.View(func(tx *bolt.Tx) error { highWater = tx.Size(); return nil })
	db.Close()
	data, err := os.ReadFile(path)
	must(t, err)

	cuts := []int64{highWater - 100}
	for cut := int64(2 * 4096); cut < highWater; cut += 4096 {
		cuts = append(cuts, cut)
	}
	for _, cut := range cuts {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			path := copyJournal(t, path)
			must(t, os.WriteFile(path, data[:cut], 0o600))
			j := journal.Open(path, journal.Options{})
			defer j.Close()
			assertUnavailable(t, j, "truncated", "broker journal reset")
		})
	}
	// The tail past the high-water mark holds nothing: cutting it is harmless.
	if int64(len(data)) > highWater {
		path := copyJournal(t, path)
		must(t, os.WriteFile(path, data[:highWater], 0o600))
		j := MustOpen(t, path, journal.Options{})
		if mustLookup(t, j, "reserved") == nil {
			t.Fatal("record lost")
		}
	}
}

// copyJournal copies the journal at path, with its key and log, to a new
// directory and returns its path there.
func copyJournal(t *testing.T, path string) string {
	t.Helper()
	to := journalPath(t)
	for _, p := range [][2]string{{path, to}, {journal.KeyPath(path), journal.KeyPath(to)}, {journal.WALPath(path), journal.WALPath(to)}} {
		data, err := os.ReadFile(p[0])
		must(t, err)
		must(t, os.WriteFile(p[1], data, 0o600))
	}
	return to
}

// smallWAL gives a journal a log of 64 KiB, so that it checkpoints often.
func smallWAL(o journal.Options) journal.Options { return journal.WithWALSize(o, 64<<10) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// assertUnavailable checks that j explains itself and refuses actions.
func assertUnavailable(t *testing.T, j *journal.Journal, reason, fix string) {
	t.Helper()
	p := j.Err()
	if p == nil {
		t.Fatal("the journal is available")
	}
	if !strings.Contains(p.Reason, reason) || !strings.Contains(p.Fix, fix) || p.Fix == "" {
		t.Errorf("problem %q (fix %q), want a reason with %q and a fix with %q", p.Reason, p.Fix, reason, fix)
	}
	if st := j.Status(); st.Problem != p {
		t.Errorf("status problem %v, want %v", st.Problem, p)
	}
	if _, err := j.Lookup(key("settled")); !isCode(err, wire.CodeJournalUnavailable) {
		t.Errorf("lookup: %v, want JOURNAL_UNAVAILABLE", err)
	}
	err := j.Reserve(key("new"), hashOf("p"), "click")
	if !isCode(err, wire.CodeJournalUnavailable) {
		t.Errorf("reserve: %v, want JOURNAL_UNAVAILABLE", err)
	}
	if got, ok := errors.AsType[*journal.Problem](err); !ok || got != p {
		t.Errorf("reserve error %v does not carry the problem", err)
	}
	if err := j.Settle(key("reserved"), journal.OutcomeSucceeded, journal.DispatchDispatched); !isCode(err, wire.CodeJournalUnavailable) {
		t.Errorf("settle: %v, want JOURNAL_UNAVAILABLE", err)
	}
	t.Logf("reason: %s; fix: %s; cause: %v", p.Reason, p.Fix, p.Cause)
}

func TestSecondBroker(t *testing.T) {
	path := journalPath(t)
	MustOpen(t, path, journal.Options{})
	j := journal.Open(path, journal.Options{})
	defer j.Close()
	assertUnavailable(t, j, "another broker holds the journal", "stop the other broker")
}

func TestMissingDirectory(t *testing.T) {
	j := journal.Open(filepath.Join(t.TempDir(), "gone", "journal.db"), journal.Options{})
	assertUnavailable(t, j, "does not exist", "mkdir")
}

// TestPoisonedByClosedDatabase: the database failing under the journal
// (here: closed behind its back) poisons it.
func TestPoisonedByClosedDatabase(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	mustReserve(t, j, "before", "p")
	must(t, journal.CloseFiles(j))

	err := j.Reserve(key("after"), hashOf("p"), "click")
	if !isCode(err, wire.CodeJournalUnavailable) {
		t.Fatalf("reserve on a failed database: %v, want JOURNAL_UNAVAILABLE", err)
	}
	assertUnavailable(t, j, "closed", "restart the broker")
	j.Close()

	// A restart verifies the file again and finds the acknowledged record.
	j = MustOpen(t, path, journal.Options{})
	if mustLookup(t, j, "before") == nil || mustLookup(t, j, "after") != nil {
		t.Fatal("after restart: the journal does not hold exactly the acknowledged reservation")
	}
}

func TestReset(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	mustReserve(t, j, "r", "p")
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

	if _, err := journal.Reset(path, now); !errors.Is(err, journal.ErrInUse) {
		t.Fatalf("reset while open: %v, want ErrInUse", err)
	}
	j.Close()
	files := []string{path, journal.WALPath(path), journal.KeyPath(path)}
	var before [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		must(t, err)
		before = append(before, data)
	}
	moved, err := journal.Reset(path, now)
	if err != nil {
		t.Fatal(err)
	}
	// The journal, its log and its key move together, so the files set
	// aside stay verifiable.
	if len(moved) != 3 {
		t.Fatalf("moved %v, want the journal, its log and its key", moved)
	}
	for i, f := range files {
		if want := f + ".broken-20260304T050607Z"; moved[i] != want {
			t.Fatalf("moved to %s, want %s", moved[i], want)
		}
		if after, _ := os.ReadFile(moved[i]); !bytes.Equal(before[i], after) {
			t.Fatalf("the moved %s differs", f)
		}
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s is still there: %v", f, err)
		}
	}
	if _, err := journal.Reset(path, now); !errors.Is(err, journal.ErrNoJournal) {
		t.Fatalf("reset of nothing: %v, want ErrNoJournal", err)
	}

	// The next start makes a new journal with a new key; a second reset in
	// the same second does not overwrite the first.
	j = MustOpen(t, path, journal.Options{})
	if mustLookup(t, j, "r") != nil {
		t.Fatal("the new journal has the old record")
	}
	if bytes.Equal(j.Key(), before[2]) {
		t.Fatal("the new journal has the old key")
	}
	j.Close()
	moved2, err := journal.Reset(path, now)
	if err != nil || moved2[0] == moved[0] {
		t.Fatalf("second reset: %s, %v", moved2, err)
	}
	if _, err := os.Stat(moved[0]); err != nil {
		t.Fatal(err)
	}
}

// TestResetBrokenJournal resets the cases Open refuses.
func TestResetBrokenJournal(t *testing.T) {
	for name, breakIt := range map[string]func(path string) error{
		"symlink":   func(path string) error { return os.Symlink("missing-target", path) },
		"truncated": func(path string) error { return os.WriteFile(path, nil, 0o600) },
		"key a symlink": func(path string) error {
			makeJournal(t, path)
			must(t, os.Rename(journal.KeyPath(path), path+".k"))
			return os.Symlink(path+".k", journal.KeyPath(path))
		},
		"log missing": func(path string) error {
			makeJournal(t, path)
			return os.Remove(journal.WALPath(path))
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := journalPath(t)
			must(t, breakIt(path))
			if j := journal.Open(path, journal.Options{}); j.Err() == nil {
				t.Fatal("the broken journal opened")
			}
			if _, err := journal.Reset(path, time.Now()); err != nil {
				t.Fatal(err)
			}
			MustOpen(t, path, journal.Options{})
		})
	}
}

func TestResetRefusesWhileAnotherProcessHolds(t *testing.T) {
	path := journalPath(t)
	cmd, out := startChild(t, "hold", path, "")
	if !out.Scan() || out.Text() != "open" {
		t.Fatalf("child said %q", out.Text())
	}
	_, err := journal.Reset(path, time.Now())
	if !errors.Is(err, journal.ErrInUse) || !strings.Contains(err.Error(), "stop the broker") {
		t.Fatalf("reset while a broker runs: %v, want ErrInUse telling to stop the broker", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := journal.Reset(path, time.Now()); err != nil {
		t.Fatalf("reset after the broker died: %v", err)
	}
}

// FuzzRecord: decoding arbitrary bytes never panics, and whatever decodes
// re-encodes to the same bytes. The fuzzer cannot forge MACs, so the JSON
// is also sealed with a valid MAC to reach the parser.
func FuzzRecord(f *testing.F) {
	k := journal.DBKey(secret, key("fuzz"))
	for _, r := range []journal.Record{
		{Hash: hashOf("a"), Kind: "click", State: journal.StateReserved, Dispatch: journal.DispatchUnknown, ReservedAt: time.Unix(1, 2)},
		{Hash: hashOf("b"), Kind: "fill", State: journal.StateSettled, Dispatch: journal.DispatchObserved,
			Outcome: journal.OutcomeSucceeded, ReservedAt: time.Unix(1767225600, 0), SettledAt: time.Unix(1767225601, 5)},
	} {
		v, err := journal.EncodeValue(secret, k, &r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
		f.Add(v[32:])
	}
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range [][]byte{data, journal.Seal(secret, k, data)} {
			r, err := journal.DecodeValue(secret, k, v)
			if err != nil {
				continue
			}
			again, err := journal.EncodeValue(secret, k, &r)
			if err != nil {
				t.Fatalf("decoded %q but cannot encode %+v: %v", v, r, err)
			}
			if !bytes.Equal(again, v) {
				t.Fatalf("round trip: %q → %+v → %q", v, r, again)
			}
			if r2, err := journal.DecodeValue(secret, k, again); err != nil || r2 != r {
				t.Fatalf("re-decode: %+v, %v; want %+v", r2, err, r)
			}
		}
	})
}

func TestRecordRoundTrip(t *testing.T) {
	k := journal.DBKey(secret, key("x"))
	r := journal.Record{Hash: hashOf("x"), Kind: "press", State: journal.StateSettled, Dispatch: journal.DispatchNotDispatched,
		Outcome: journal.OutcomeCancelled, ReservedAt: time.Unix(5, 6).UTC(), SettledAt: time.Unix(7, 8).UTC()}
	v, err := journal.EncodeValue(secret, k, &r)
	must(t, err)
	if len(v) > 300 {
		t.Errorf("a settled record takes %d bytes", len(v))
	}
	got, err := journal.DecodeValue(secret, k, v)
	if err != nil || got != r {
		t.Fatalf("decode: %+v, %v; want %+v", got, err, r)
	}
	if _, err := journal.DecodeValue(secret, journal.DBKey(secret, key("y")), v); err == nil {
		t.Fatal("a record moved to another key still verifies")
	}
	for _, bad := range []journal.Record{
		{Hash: r.Hash, Kind: "click", State: journal.StateReserved, Dispatch: journal.DispatchDispatched, ReservedAt: r.ReservedAt},
		{Hash: r.Hash, Kind: "click", State: journal.StateSettled, Dispatch: journal.DispatchDispatched, ReservedAt: r.ReservedAt},
		{Hash: r.Hash, Kind: "click", State: "done", Dispatch: journal.DispatchUnknown, ReservedAt: r.ReservedAt},
		{Hash: r.Hash, Kind: "click", State: journal.StateReserved, Dispatch: journal.DispatchUnknown},
	} {
		if _, err := journal.EncodeValue(secret, k, &bad); err == nil {
			t.Errorf("illegal record %+v encoded", bad)
		}
	}
}

func BenchmarkReserveSettle(b *testing.B) {
	j := MustOpen(b, journalPath(b), journal.Options{MaxEntries: 1 << 30, MaxBytes: 1 << 40})
	h := hashOf("p")
	i := 0
	for b.Loop() {
		k := key(fmt.Sprint("b", i))
		i++
		if err := j.Reserve(k, h, "click"); err != nil {
			b.Fatal(err)
		}
		if err := j.Settle(k, journal.OutcomeSucceeded, journal.DispatchObserved); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFsync is one write of a record's size plus fsync, in the same
// kind of directory: the floor under one Reserve.
func BenchmarkFsync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 300)
	for b.Loop() {
		if _, err := f.WriteAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
