package journal_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/wire"
)

// TestPoisonedByFailedWrite makes every write of the file fail, as a dying
// disk would: the Reserve that hit it is refused, and so is everything
// after, until a restart verifies the file again.
func TestPoisonedByFailedWrite(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	mustReserve(t, j, "before", "p")
	must(t, journal.BreakWrites(j))

	if rec := mustLookup(t, j, "before"); rec == nil {
		t.Fatal("reads broke too")
	}
	if err := j.Reserve(key("after"), hashOf("p"), "click"); !isCode(err, wire.CodeJournalUnavailable) {
		t.Fatalf("reserve with failing writes: %v, want JOURNAL_UNAVAILABLE", err)
	}
	assertUnavailable(t, j, "recording an action failed", "restart the broker")
	j.Close()

	j = MustOpen(t, path, journal.Options{})
	if mustLookup(t, j, "before") == nil || mustLookup(t, j, "after") != nil {
		t.Fatal("after restart: the journal does not hold exactly the acknowledged reservation")
	}
}

// TestPoisonedByFullDisk runs the journal on a tiny tmpfs (root only) and
// fills it.
func TestPoisonedByFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v); write failures are covered by TestPoisonedByWriteFailure", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	path := filepath.Join(dir, "journal.db")
	j := journal.Open(path, smallWAL(journal.Options{}))
	t.Cleanup(func() { j.Close() })
	if p := j.Err(); p != nil {
		t.Fatal(p)
	}
	filler, err := os.Create(filepath.Join(dir, "filler"))
	must(t, err)
	for {
		if _, err := filler.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	filler.Close()

	var acked []string
	for i := 0; ; i++ {
		id := fmt.Sprint("r", i)
		err := j.Reserve(key(id), hashOf("p"), "click")
		if err != nil {
			if !isCode(err, wire.CodeJournalUnavailable) {
				t.Fatalf("reserve on a full disk: %v, want JOURNAL_UNAVAILABLE", err)
			}
			break
		}
		acked = append(acked, id)
		if i == 5000 {
			t.Fatal("the disk never filled")
		}
	}
	p := j.Err()
	if p == nil || !strings.Contains(p.Reason, "disk is full") || !errors.Is(p, syscall.ENOSPC) || !strings.Contains(p.Fix, "free disk space") {
		t.Fatalf("problem %v (fix %q), want the disk is full", p, p.Fix)
	}
	assertUnavailable(t, j, "disk is full", "free disk space")
	j.Close()

	must(t, os.Remove(filepath.Join(dir, "filler")))
	j = MustOpen(t, path, journal.Options{})
	for _, id := range acked {
		if mustLookup(t, j, id) == nil {
			t.Fatalf("acknowledged %s lost after the disk filled", id)
		}
	}
	t.Logf("%d reservations fit before ENOSPC; all kept", len(acked))
}
