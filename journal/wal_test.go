package journal_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/journal"
)

// TestOneSyncPerAction: a reservation is synced before Reserve returns, an
// outcome only written before Settle returns (and seen by Lookup at once),
// and the next reservation's sync takes it to disk: one sync per action.
func TestOneSyncPerAction(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	for i := range 5 {
		id := fmt.Sprint("a", i)
		before := journal.Syncs(j)
		mustReserve(t, j, id, "p")
		if n := journal.Syncs(j) - before; n != 1 {
			t.Fatalf("reserve synced %d times", n)
		}
		mustSettle(t, j, id, journal.OutcomeSucceeded, journal.DispatchObserved)
		if n := journal.Syncs(j) - before; n != 1 {
			t.Fatalf("settle synced")
		}
		if rec := mustLookup(t, j, id); rec == nil || rec.State != journal.StateSettled {
			t.Fatalf("lookup right after settle: %+v", rec)
		}
	}
	// A process killed now loses nothing it was told was written.
	journal.Abandon(j)
	j = MustOpen(t, path, journal.Options{})
	for i := range 5 {
		if rec := mustLookup(t, j, fmt.Sprint("a", i)); rec == nil || rec.State != journal.StateSettled {
			t.Fatalf("a%d after a crash: %+v", i, rec)
		}
	}
}

// TestGroupCommit: reservations written while a sync is in progress share
// the next sync; an outcome never waits for a sync.
func TestGroupCommit(t *testing.T) {
	const n = 16
	j := MustOpen(t, journalPath(t), journal.Options{})
	mustReserve(t, j, "s", "p")
	before, frames := journal.Syncs(j), journal.Frames(j)
	release := journal.HoldSync(j)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = j.Reserve(key(fmt.Sprint("g", i)), hashOf("p"), "click") })
	}
	for journal.Frames(j) < frames+n { // all written, all waiting for a sync
		time.Sleep(time.Millisecond)
	}
	settled := make(chan error, 1)
	go func() { settled <- j.Settle(key("s"), journal.OutcomeSucceeded, journal.DispatchObserved) }()
	select {
	case err := <-settled:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Settle waits for the sync in progress")
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("g%d: %v", i, err)
		}
	}
	if got := journal.Syncs(j) - before; got != 1 {
		t.Fatalf("%d concurrent reservations took %d syncs, want 1", n, got)
	}
	if st := j.Status(); st.Entries != n+1 || st.Reserved != n {
		t.Fatalf("status: %+v", st)
	}
}

// TestLogFull: a small log fills and is checkpointed into the database
// many times; nothing is lost, across a crash too.
func TestLogFull(t *testing.T) {
	path := journalPath(t)
	opts := journal.WithWALSize(journal.Options{}, 8192) // 16 frames
	j := MustOpen(t, path, opts)
	_, gen0, _, _ := journal.WALState(j)
	for i := range 40 {
		id := fmt.Sprint("f", i)
		mustReserve(t, j, id, id)
		mustSettle(t, j, id, journal.OutcomeSucceeded, journal.DispatchObserved)
	}
	mustReserve(t, j, "last", "p")
	if _, gen, _, _ := journal.WALState(j); gen < gen0+4 {
		t.Fatalf("generation %d after 81 writes to a log of 16 frames, from %d", gen, gen0)
	}
	journal.Abandon(j)
	j = MustOpen(t, path, opts)
	for i := range 40 {
		if rec := mustLookup(t, j, fmt.Sprint("f", i)); rec == nil || rec.State != journal.StateSettled {
			t.Fatalf("f%d: %+v", i, rec)
		}
	}
	if mustLookup(t, j, "last") == nil {
		t.Fatal("the last reservation is gone")
	}
}

// crashedJournal leaves a journal as a SIGKILL would: frame 1 reserves a,
// frame 2 reserves b (both synced), frame 3 settles b (written, not
// synced). It returns the path and the journal's key and generation.
func crashedJournal(t *testing.T) (path string, key []byte, gen uint64) {
	t.Helper()
	path = journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	mustReserve(t, j, "a", "p")
	mustReserve(t, j, "b", "p")
	mustSettle(t, j, "b", journal.OutcomeSucceeded, journal.DispatchObserved)
	if off, _, seq, synced := journal.WALState(j); off != 3*512 || seq != 3 || synced != 2 {
		t.Fatalf("log at %d, frame %d, synced %d; want 3 frames of 512 bytes, 2 synced", off, seq, synced)
	}
	key, gen = j.Key(), func() uint64 { _, g, _, _ := journal.WALState(j); return g }()
	journal.Abandon(j)
	return path, key, gen
}

// flip changes one byte of the log at off.
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(journal.WALPath(path), os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	b := []byte{0}
	f.ReadAt(b, off)
	b[0] ^= 0x55
	_, err = f.WriteAt(b, off)
	must(t, err)
}

// TestTornTail: a crash (a power failure) can tear the frames written
// after the last sync. They are dropped: b's outcome was never synced, so
// b is reserved again, which is true ("it may have been dispatched").
func TestTornTail(t *testing.T) {
	path, _, _ := crashedJournal(t)
	flip(t, path, 2*512+100) // frame 3
	j := MustOpen(t, path, journal.Options{})
	for _, id := range []string{"a", "b"} {
		if rec := mustLookup(t, j, id); rec == nil || rec.State != journal.StateReserved {
			t.Fatalf("%s after a torn tail: %+v", id, rec)
		}
	}
}

// TestDamagedLog: a frame that a later frame says was synced cannot have
// been torn by a crash: the journal is refused, not cut short.
func TestDamagedLog(t *testing.T) {
	path, _, _ := crashedJournal(t)
	flip(t, path, 1*512+100) // frame 2; frame 3 says frames up to 2 were synced
	before, _ := os.ReadFile(journal.WALPath(path))
	j := journal.Open(path, journal.Options{})
	defer j.Close()
	assertUnavailable(t, j, "is damaged", "broker journal reset")
	if after, _ := os.ReadFile(journal.WALPath(path)); string(before) != string(after) {
		t.Error("opening changed the damaged log")
	}
}

// TestIllegalLog: frames that verify but do not continue the journal's
// records legally are refused.
func TestIllegalLog(t *testing.T) {
	for name, rec := range map[string]journal.Record{
		"a second reservation": {Hash: hashOf("a"), Kind: "click", State: journal.StateReserved, Dispatch: journal.DispatchUnknown, ReservedAt: time.Unix(9, 0)},
		"an outcome of nothing": {Hash: hashOf("z"), Kind: "click", State: journal.StateSettled, Dispatch: journal.DispatchObserved,
			Outcome: journal.OutcomeSucceeded, ReservedAt: time.Unix(9, 0), SettledAt: time.Unix(10, 0)},
	} {
		t.Run(name, func(t *testing.T) {
			path, k, gen := crashedJournal(t)
			id := "a"
			if rec.State == journal.StateSettled {
				id = "z"
			}
			dk := journal.DBKey(k, key(id))
			v, err := journal.EncodeValue(k, dk, &rec)
			must(t, err)
			frame := journal.AppendFrame(nil, k, gen, 4, 2, []journal.WALEntryT{journal.WALEntry(dk, v)})
			f, err := os.OpenFile(journal.WALPath(path), os.O_RDWR, 0)
			must(t, err)
			_, err = f.WriteAt(frame, 3*512)
			f.Close()
			must(t, err)
			j := journal.Open(path, journal.Options{})
			defer j.Close()
			assertUnavailable(t, j, "not legal", "broker journal reset")
		})
	}
}

// The crash points inside the journal (internal/failpoint).
var journalPoints = []string{"journal-written", "journal-synced", "journal-checkpointed"}

// crashTrials is how many SIGKILL trials TestCrashAtJournalPoints runs per
// point; DSH_CRASH_TRIALS raises it, as for the broker's crash tests.
func crashTrials() int {
	if n, err := strconv.Atoi(os.Getenv("DSH_CRASH_TRIALS")); err == nil && n > 0 {
		return n
	}
	return 8
}

// TestCrashAtJournalPoints kills a broker stand-in with SIGKILL at each
// point of the journal's writes (a frame written, a frame synced, a
// checkpoint committed), at a random hit, while four writers reserve and
// settle concurrently through a small log (so it checkpoints too). After
// each crash the journal must open clean and hold every write the child
// saw acknowledged: every reservation, and every outcome as recorded.
func TestCrashAtJournalPoints(t *testing.T) {
	trials := crashTrials()
	total, acks := 0, 0
	for _, point := range journalPoints {
		var path string
		acked := map[string]string{}
		for trial := range trials {
			if trial%10 == 0 { // a fresh journal now and then, so it never fills
				path, acked = journalPath(t), map[string]string{}
			}
			hit := 1 + rand.IntN(40)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "JOURNAL_TEST_CHILD=group", "JOURNAL_TEST_PATH="+path,
				"JOURNAL_TEST_PREFIX="+fmt.Sprintf("t%d", trial), fmt.Sprintf("DSH_FAILPOINT=%s:%d", point, hit))
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				verb, id, _ := strings.Cut(sc.Text(), " ")
				switch verb {
				case "reserved":
					acked[id] = journal.StateReserved
				case "settled":
					acked[id] = journal.StateSettled
				default:
					t.Fatalf("%s:%d: child: %s", point, hit, sc.Text())
				}
			}
			err = cmd.Wait()
			cancel()
			if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
				t.Fatalf("%s:%d: the child was not killed: %v", point, hit, err)
			}
			j := MustOpen(t, path, journal.Options{})
			for id, state := range acked {
				rec := mustLookup(t, j, id)
				switch {
				case rec == nil:
					t.Fatalf("%s:%d: acknowledged %s %s is gone", point, hit, state, id)
				case state == journal.StateSettled && rec.State != journal.StateSettled:
					t.Fatalf("%s:%d: acknowledged outcome of %s lost: %+v", point, hit, id, rec)
				}
			}
			j.Close()
			total++
			acks += len(acked)
		}
	}
	t.Logf("%d SIGKILL trials at %d points: every acknowledged write survived (%d checked)", total, len(journalPoints), acks)
}

// groupChild is the stand-in of TestCrashAtJournalPoints: four writers
// reserving and settling until a failpoint kills the process. It prints a
// line after each write returned.
func groupChild(path, prefix string) int {
	j := journal.Open(path, journal.WithWALSize(journal.Options{}, 16<<10))
	if p := j.Err(); p != nil {
		fmt.Println("error", p)
		return 1
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("%s-%d-%d", prefix, w, i)
				if err := j.Reserve(key(id), hashOf(id), "click"); err != nil {
					fmt.Println("error", err)
					os.Exit(1)
				}
				fmt.Println("reserved", id)
				if i%3 != 2 {
					if err := j.Settle(key(id), journal.OutcomeSucceeded, journal.DispatchObserved); err != nil {
						fmt.Println("error", err)
						os.Exit(1)
					}
					fmt.Println("settled", id)
				}
			}
		})
	}
	wg.Wait()
	return 0
}

// FuzzFrame: parsing arbitrary bytes as a log frame never panics, and a
// frame that parses encodes back to the same bytes. The fuzzer cannot
// forge MACs, so its bytes are also framed with a valid header and MAC to
// reach the entry parser.
func FuzzFrame(f *testing.F) {
	k := []byte(strings.Repeat("k", 32))
	dk := journal.DBKey(k, key("fuzz"))
	f.Add(journal.AppendFrame(nil, k, 7, 1, 0, []journal.WALEntryT{journal.WALEntry(dk, []byte(`{"v":1}`))}))
	f.Add(journal.AppendFrame(nil, k, 7, 2, 1, []journal.WALEntryT{journal.WALEntry(dk, []byte("a")), journal.WALEntry(dk, []byte("bc"))}))
	f.Add([]byte("DJW1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(data []byte) {
			seq, synced, entries, n := journal.ParseFrame(data, k, 7)
			if n == 0 {
				return
			}
			again := journal.AppendFrame(nil, k, 7, seq, synced, entries)
			if len(again) != n || string(again) != string(data[:n]) {
				t.Fatalf("frame %q parsed as %d entries re-encodes to %q", data[:n], len(entries), again)
			}
		}
		check(data)
		// The same bytes as a payload, behind a valid header and MAC.
		var entries []journal.WALEntryT
		for p := data; len(p) > 0; {
			n := min(len(p), 40)
			entries = append(entries, journal.WALEntry(bytes.Repeat([]byte{p[0]}, 32), p[:n]))
			p = p[n:]
		}
		frame := journal.AppendFrame(nil, k, 7, 3, 2, entries)
		if _, _, got, n := journal.ParseFrame(frame, k, 7); n != len(frame) || len(got) != len(entries) {
			t.Fatalf("a frame of %d entries did not parse: %d entries, %d bytes", len(entries), len(got), n)
		}
		check(frame)
		check(frame[:len(frame)/2])
	})
}
