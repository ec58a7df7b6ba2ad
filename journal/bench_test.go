//go:build linux

package journal_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/journal"
)

// The journal's cost per action, next to the bare disk syncs under it.
// BENCHMARKS.md ("Action journal") has the figures and the commands. The
// file is Linux-only because of fdatasync, which is what bbolt calls there.

// benchPrefill is how many records the journal holds before a benchmark
// starts: half of DefaultMaxEntries, the broker's cap.
const benchPrefill = journal.DefaultMaxEntries / 2

// benchReverseEnv, set to 1, makes BenchmarkActionCost run its operations
// in reverse order, so that a loop of runs can alternate which goes first
// (the same variable as in test/bench).
const benchReverseEnv = "DSH_BENCH_REVERSE"

// costOps are the operations of BenchmarkActionCost. setup runs before the
// timed loop; the function it returns is one timed operation.
var costOps = []struct {
	name  string
	setup func(b *testing.B) func(i int)
}{
	// Reserve then Settle of a new key: what a durable browser.act writes.
	{"reserve-settle", func(b *testing.B) func(int) {
		j := prefilled(b)
		h := hashOf("p")
		return func(i int) {
			k := key(fmt.Sprint("a", i))
			if err := j.Reserve(k, h, "click"); err != nil {
				b.Fatal(err)
			}
			if err := j.Settle(k, journal.OutcomeSucceeded, journal.DispatchObserved); err != nil {
				b.Fatal(err)
			}
		}
	}},
	// One write of a settled record's size, then fsync.
	{"fsync", func(b *testing.B) func(int) {
		f := syncFile(b)
		buf := make([]byte, 300)
		return func(int) {
			writeAt(b, f, buf, 0)
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}},
	// The same with fdatasync, which bbolt uses on Linux: it skips the
	// inode's timestamps.
	{"fdatasync", func(b *testing.B) func(int) {
		f := syncFile(b)
		buf := make([]byte, 300)
		return func(int) {
			writeAt(b, f, buf, 0)
			fdatasync(b, f)
		}
	}},
	// The I/O of one bbolt commit, which a Reserve or a Settle was before
	// the journal had a write-ahead log (a checkpoint is one now): the
	// dirty pages, fdatasync, then one of the two meta pages, fdatasync.
	// strace of the old op=reserve-settle showed about 6 page writes per
	// commit: 5 dirty pages (leaf, branch, bucket root, freelist) and the
	// meta page. Here the 5 pages rotate over 20 pages written before, as
	// bbolt's freelist reuses pages.
	{"commit-io", func(b *testing.B) func(int) {
		f := syncFile(b)
		page := make([]byte, 4096)
		return func(i int) {
			for p := range 5 {
				writeAt(b, f, page, int64(2+(5*i+p)%20)*4096)
			}
			fdatasync(b, f)
			writeAt(b, f, page, int64(i%2)*4096)
			fdatasync(b, f)
		}
	}},
	// Lookup of a record the journal holds: a retry.
	{"lookup-hit", func(b *testing.B) func(int) {
		j := prefilled(b)
		return func(i int) {
			if rec, err := j.Lookup(key(fmt.Sprint("fill-", i%benchPrefill))); err != nil || rec == nil {
				b.Fatalf("lookup: %v, %v", rec, err)
			}
		}
	}},
	// Lookup of a key the journal does not hold: every first attempt of a
	// durable action (browser.act looks up before it reserves).
	{"lookup-miss", func(b *testing.B) func(int) {
		j := prefilled(b)
		return func(i int) {
			if rec, err := j.Lookup(key(fmt.Sprint("absent-", i))); err != nil || rec != nil {
				b.Fatalf("lookup: %v, %v", rec, err)
			}
		}
	}},
}

// BenchmarkActionCost times each operation on its own and reports the
// median and the 99th percentile (ms/op-p50, ms/op-p99) next to the mean
// (ns/op). Every file is in the test's temp directory, so the journal and
// the bare syncs hit the same disk; TMPDIR moves them.
//
// go test runs a sub-benchmark's -count samples in a row, so for samples
// that interleave, run the test binary several times with -count=1
// (BENCHMARKS.md has the loop).
func BenchmarkActionCost(b *testing.B) {
	ops := slices.Clone(costOps)
	if os.Getenv(benchReverseEnv) == "1" {
		slices.Reverse(ops)
	}
	for _, op := range ops {
		b.Run("op="+op.name, func(b *testing.B) {
			run := op.setup(b)
			var took []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				run(i)
				took = append(took, time.Since(start))
				i++
			}
			reportPercentiles(b, took)
		})
	}
}

// reportPercentiles reports the median and the 99th percentile of took,
// in milliseconds (nearest rank).
func reportPercentiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	at := func(p float64) float64 {
		i := int(p*float64(len(took))+0.999999) - 1
		return float64(took[max(i, 0)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "ms/op-p50")
	b.ReportMetric(at(0.99), "ms/op-p99")
}

// prefilled opens a journal in a fresh temp directory holding benchPrefill
// reserved records, with keys key("fill-<i>"). Its caps are lifted so that
// a long run never fills it.
func prefilled(b *testing.B) *journal.Journal {
	b.Helper()
	j := MustOpen(b, journalPath(b), journal.Options{MaxEntries: 1 << 30, MaxBytes: 1 << 40})
	if err := journal.Fill(j, scope, benchPrefill); err != nil {
		b.Fatal(err)
	}
	return j
}

// syncFile is a 22-page file, written and synced, in a fresh temp
// directory.
func syncFile(b *testing.B) *os.File {
	b.Helper()
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	writeAt(b, f, make([]byte, 22*4096), 0)
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return f
}

func writeAt(b *testing.B, f *os.File, buf []byte, off int64) {
	if _, err := f.WriteAt(buf, off); err != nil {
		b.Fatal(err)
	}
}

func fdatasync(b *testing.B, f *os.File) {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		b.Fatal(err)
	}
}
