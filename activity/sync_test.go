package activity_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-browser/broker/activity"
)

// TestOneSyncPerBegin: Begin syncs its record before it returns; End and
// BeginUnsynced write theirs without a sync, and the file holds them at
// once (a crash of the broker keeps them).
func TestOneSyncPerBegin(t *testing.T) {
	l, path := mustLog(t, activity.Options{})
	syncs := func() int { n, _ := activity.Syncs(l); return n }
	before := syncs()
	a := l.Begin(fill("durable", 1))
	if n := syncs() - before; n != 1 {
		t.Fatalf("Begin synced %d times, want 1", n)
	}
	l.End(a, "succeeded", "observed", "")
	b := l.BeginUnsynced(fill("memory", 2))
	l.End(b, "failed", "notDispatched", "STALE_TARGET")
	if n := syncs() - before; n != 1 {
		t.Fatalf("End and BeginUnsynced synced %d times, want 0", n-1)
	}
	entries, damaged, err := activity.ReadFile(path)
	if err != nil || damaged != 0 || len(entries) != 2 {
		t.Fatalf("the file holds %d entries (%d damaged, %v), want 2", len(entries), damaged, err)
	}
	for _, e := range entries {
		if e.State != activity.StateDone {
			t.Fatalf("entry %+v not finished in the file", e)
		}
	}
}

// TestGroupCommit: Begins written while a sync is in progress share the
// next sync; End and BeginUnsynced never wait for one.
func TestGroupCommit(t *testing.T) {
	const n = 16
	l, _ := mustLog(t, activity.Options{})
	first := l.Begin(fill("first", 1))
	syncs0, written0 := activity.Syncs(l)
	release := activity.HoldSync(l)
	var returned atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l.Begin(fill(fmt.Sprint("agent ", i), i))
			returned.Add(1)
		})
	}
	for _, w := activity.Syncs(l); w < written0+n; _, w = activity.Syncs(l) {
		time.Sleep(time.Millisecond) // all written, all waiting for a sync
	}
	done := make(chan struct{})
	go func() {
		l.End(first, "succeeded", "observed", "")
		l.End(l.BeginUnsynced(fill("memory", 1)), "succeeded", "observed", "")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("End or BeginUnsynced waits for the sync in progress")
	}
	if r := returned.Load(); r != 0 {
		t.Fatalf("%d Begins returned before their record was synced", r)
	}
	close(release)
	wg.Wait()
	if s, _ := activity.Syncs(l); s-syncs0 != 1 {
		t.Fatalf("%d concurrent Begins took %d syncs, want 1", n, s-syncs0)
	}
	if st := l.Status(); st.Entries != n+2 || st.Running != n {
		t.Fatalf("status %+v, want %d entries, %d running", st, n+2, n)
	}
}

// TestConcurrentWritersAndRewrites: writers that sync, writers that do
// not, and compactions, all at once, with a bound so small that the file
// is rewritten (and replaced under the syncs) all the time: the file
// stays whole and within its bound.
func TestConcurrentWritersAndRewrites(t *testing.T) {
	const max = 5
	c := newClock()
	opts := activity.Options{MaxEntries: max, Now: c.Now}
	l, path := mustLog(t, opts)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				var id uint64
				if (w+i)%2 == 0 {
					id = l.Begin(fill(fmt.Sprint("w", w), i))
				} else {
					id = l.BeginUnsynced(fill(fmt.Sprint("w", w), i))
				}
				l.End(id, "succeeded", "observed", "")
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			l.Compact()
			time.Sleep(100 * time.Microsecond)
		}
	})
	wg.Wait()
	if st := l.Status(); st.Problem != nil || st.Entries != max || st.Running != 0 {
		t.Fatalf("status %+v, want %d finished entries and no problem", st, max)
	}
	l.Close()
	entries, damaged, err := activity.ReadFile(path)
	if err != nil || damaged != 0 || len(entries) < max || len(entries) > 4*max {
		t.Fatalf("the file holds %d entries (%d damaged, %v)", len(entries), damaged, err)
	}
	if st := reopen(t, path, opts).Status(); st.Problem != nil || st.MovedAside != "" || st.Entries != max {
		t.Fatalf("reopened: %+v", st)
	}
}

// TestBeginSyncing: BeginSyncing returns once its record is written, while
// the disk is still busy, and its channel closes only once a sync that
// started after the write is done, so that a caller's own sync (the
// journal's) runs beside it.
func TestBeginSyncing(t *testing.T) {
	l, path := mustLog(t, activity.Options{})
	l.Begin(fill("first", 1))
	syncs0, written0 := activity.Syncs(l)
	release := activity.HoldSync(l)
	returned := make(chan (<-chan struct{}))
	go func() {
		_, synced := l.BeginSyncing(fill("durable", 2))
		returned <- synced
	}()
	var synced <-chan struct{}
	select {
	case synced = <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("BeginSyncing waits for the sync in progress")
	}
	if _, w := activity.Syncs(l); w != written0+1 {
		t.Fatalf("BeginSyncing returned with %d records written, want %d", w, written0+1)
	}
	entries, _, err := activity.ReadFile(path)
	if err != nil || len(entries) != 2 || entries[1].State != activity.StateRunning {
		t.Fatalf("the file holds %+v (%v), want the new begin written", entries, err)
	}
	select {
	case <-synced:
		t.Fatal("the channel closed before the record was synced")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-synced:
	case <-time.After(5 * time.Second):
		t.Fatal("the channel never closed after the sync")
	}
	if s, _ := activity.Syncs(l); s-syncs0 != 1 {
		t.Fatalf("BeginSyncing took %d syncs, want 1", s-syncs0)
	}
}
