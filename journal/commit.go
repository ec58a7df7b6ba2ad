package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/internal/failpoint"
)

// The group commit. Writes and syncs are separate. A write appends one
// frame to the log, under wmu, and never waits for a sync: frames are only
// appended, so a frame written while a sync is in progress cannot disturb
// the frames that sync covers. A sync is shared: a caller that needs its
// frame on disk (Reserve) waits for the sync in progress, if any, and
// then, unless that one covered its frame, starts the next, which covers
// every frame written until it starts. So an outcome (Settle) costs a
// write, a reservation a write and at most one sync of its own, and
// concurrent reservations share syncs, with no timer and no delay for a
// lone writer. A checkpoint (when the log is full, to compact, to close)
// writes the records to the database instead, in one bbolt transaction.

// wal is the open write-ahead log. Guarded by wmu.
type wal struct {
	path string
	f    *os.File
	fd   int
	size int64
	gen  uint64 // the current generation, as the database records it
	seq  uint64 // of the last frame written in this generation
	base uint64 // frames written before this generation (see Journal.frames)
	off  int64  // where the next frame goes
}

// write appends e to the log as one frame, or, if the log is full,
// checkpoints it into the database. With sync it returns once e is on
// disk. what names the write in a Problem.
func (j *Journal) write(e walEntry, sync bool, what string) error {
	j.wmu.Lock()
	n, err := j.writeLocked(e, what)
	j.wmu.Unlock()
	if err != nil || !sync {
		return err
	}
	return j.syncThrough(n, what)
}

// writeLocked is write's part under wmu. It returns the frame's number
// among all the frames written (0 if it went to the database).
func (j *Journal) writeLocked(e walEntry, what string) (uint64, error) {
	if p := j.state(); p != nil {
		return 0, unavailable(p)
	}
	w := j.wal
	data := []walEntry{e}
	if w.off+int64(frameLen(data)) > w.size {
		j.written[[keySize]byte(e.key)] = e.val
		_, err := j.checkpoint(false)
		return 0, err
	}
	j.smu.Lock()
	synced := max(j.durable, w.base) - w.base // of this generation's frames
	j.smu.Unlock()
	j.buf = appendFrame(j.buf[:0], j.key, w.gen, w.seq+1, synced, data)
	if _, err := w.f.WriteAt(j.buf, w.off); err != nil {
		return 0, j.poison(what, err)
	}
	failpoint.Hit("journal-written")
	w.seq++
	w.off += int64(len(j.buf))
	j.written[[keySize]byte(e.key)] = e.val
	j.smu.Lock()
	j.frames++
	n := j.frames
	j.smu.Unlock()
	return n, nil
}

// syncThrough returns once frame n (see writeLocked) is on disk: synced by
// a sync that started after it was written, or written to the database by
// a checkpoint.
func (j *Journal) syncThrough(n uint64, what string) error {
	j.smu.Lock()
	defer j.smu.Unlock()
	for j.durable < n {
		if p := j.state(); p != nil {
			return unavailable(p)
		}
		if j.syncing {
			j.scond.Wait()
			continue
		}
		j.syncing = true
		target := j.frames // every frame written so far
		j.smu.Unlock()
		err := unix.Fdatasync(j.wal.fd)
		if err == nil {
			failpoint.Hit("journal-synced")
		}
		j.smu.Lock()
		j.syncing = false
		j.scond.Broadcast()
		if err != nil {
			return j.poison(what, err)
		}
		j.syncs.Add(1)
		j.durable = max(j.durable, target)
	}
	return nil
}

// checkpoint writes the records the log holds to the database, deletes
// the expired ones if compact, and starts the log's next generation, all
// in one bbolt transaction: after a crash before its commit the log is
// replayed as it is, after it the log's frames (of the previous
// generation) are ignored. It returns how many records it deleted. wmu is
// held.
func (j *Journal) checkpoint(compact bool) (int, error) {
	var expired [][keySize]byte
	dropLegacy := false
	if compact {
		expired, dropLegacy = j.expire()
		for _, k := range expired {
			delete(j.written, k)
		}
	}
	next := j.wal.gen + 1
	err := guard(func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			recs, meta := tx.Bucket(bucketRecords), tx.Bucket(bucketMeta)
			if recs == nil || meta == nil {
				return errors.New("the journal's buckets are gone")
			}
			for _, k := range expired {
				if err := recs.Delete(bytes.Clone(k[:])); err != nil {
					return err
				}
			}
			for k, v := range j.written {
				if err := recs.Put(bytes.Clone(k[:]), v); err != nil {
					return err
				}
			}
			if dropLegacy {
				if err := meta.Delete(metaLegacy); err != nil {
					return err
				}
			}
			return meta.Put(metaWAL, walMeta(j.key.secret, next, j.wal.size))
		})
	})
	if err != nil {
		return 0, j.poison("writing the journal's records to its database", err)
	}
	failpoint.Hit("journal-checkpointed")
	j.smu.Lock()
	j.durable = j.frames // every frame written so far is in the database now
	j.scond.Broadcast()
	j.wal.base = j.frames
	j.smu.Unlock()
	j.wal.gen, j.wal.seq, j.wal.off = next, 0, 0
	clear(j.written)
	if len(expired) > 0 {
		j.log.Info("journal compacted", "removed", len(expired), "entries", j.Status().Entries)
	}
	return len(expired), nil
}

// expire removes the records past retention from the index and returns
// their keys, and whether the metadata of a migration can go too (its
// records are all past retention). From here on those actions are
// unknown; the caller deletes them durably.
func (j *Journal) expire() (expired [][keySize]byte, dropLegacy bool) {
	cutoff := j.now().Add(-j.opts.Retention)
	j.mu.Lock()
	defer j.mu.Unlock()
	for k, e := range j.index {
		at := e.rec.ReservedAt
		if e.rec.State == StateSettled {
			at = e.rec.SettledAt
		}
		if at.Before(cutoff) {
			expired = append(expired, k)
			j.removeLocked(k)
		}
	}
	if !j.migratedAt.IsZero() && j.migratedAt.Before(cutoff) {
		dropLegacy = true
		j.migratedAt, j.legacy = time.Time{}, nil
	}
	return expired, dropLegacy
}

// Compact deletes the records past retention: settled records whose
// outcome is older than Retention, and reserved records reserved longer
// ago than Retention. It returns how many it deleted, once the deletion is
// durable (it is a checkpoint). A failure makes the journal unavailable.
func (j *Journal) Compact() (int, error) {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if p := j.state(); p != nil {
		return 0, unavailable(p)
	}
	return j.checkpoint(true)
}

// closeFiles closes the database and the log (those that are open), once
// no sync is in progress. wmu is held, or the Journal not yet shared.
func (j *Journal) closeFiles() error {
	j.smu.Lock()
	for j.syncing {
		j.scond.Wait()
	}
	j.smu.Unlock()
	var errs []error
	if j.wal != nil {
		errs = append(errs, j.wal.f.Close())
	}
	if j.db != nil {
		// j.db stays set: closing twice is a no-op in bbolt.
		errs = append(errs, j.db.Close())
	}
	j.closed = true
	return errors.Join(errs...)
}

// setClosed makes the journal unavailable because it is closed, unless it
// already is for another reason.
func (j *Journal) setClosed() {
	j.mu.Lock()
	if j.problem == nil {
		j.problem = &Problem{Reason: fmt.Sprintf("the journal %s is closed", j.path), Fix: fixRestart}
	}
	j.mu.Unlock()
}

// Close waits for the write in progress, writes the log's records to the
// database (so the next Open has nothing to replay), then closes the files
// and releases the lock. Afterwards the journal is unavailable. Close is
// idempotent.
func (j *Journal) Close() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if j.closed || j.db == nil {
		j.setClosed()
		return nil
	}
	if j.state() == nil {
		j.checkpoint(false) // a failure poisons the journal and is logged there
	}
	j.setClosed() // a caller waiting for a sync gives up
	j.smu.Lock()
	j.scond.Broadcast()
	j.smu.Unlock()
	return j.closeFiles()
}
