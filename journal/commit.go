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

// The group commit. Every write goes through do: the caller queues an op
// and waits. When no one is leading, the caller leads: it takes the whole
// queue and writes it as one frame of the write-ahead log, synced once if
// any op in it needs that; ops that arrive meanwhile queue up for the
// next leader, so concurrent actions share syncs without anyone waiting
// on a timer. A checkpoint (when the log is full, and to compact or
// close) writes the records to the database instead, in one bbolt
// transaction. Only the leader touches the files.
//
// An outcome (Settle) is done once its frame is written, a reservation
// (Reserve) once it is synced: so a sync is paid once per action, by its
// reservation, and shared with every write queued behind it.

// wal is the open write-ahead log: where the next frame goes. Owned by
// the leader.
type wal struct {
	path   string
	f      *os.File
	fd     int
	size   int64
	gen    uint64 // the current generation, as the database records it
	seq    uint64 // of the last frame written
	synced uint64 // of the last frame synced
	off    int64  // where the next frame goes
}

type opKind int

const (
	opReserve opKind = iota // write and sync
	opSettle                // write
	opCompact               // checkpoint, deleting expired records
	opClose                 // checkpoint, then close the files
)

// op is one queued write. done and err are guarded by qmu.
type op struct {
	kind    opKind
	entry   walEntry // reserve, settle
	removed int      // compact: records deleted
	done    bool
	err     error
}

// do queues o and returns once it is done: by another leader, or by this
// caller leading.
func (j *Journal) do(o *op) error {
	j.qmu.Lock()
	j.queue = append(j.queue, o)
	for j.leading && !o.done {
		j.qcond.Wait()
	}
	if o.done {
		j.qmu.Unlock()
		return o.err
	}
	j.leading = true
	batch := j.queue
	j.queue = nil
	j.qmu.Unlock()

	j.lead(batch)

	j.qmu.Lock()
	j.leading = false
	j.qcond.Broadcast() // a queued op's caller leads next
	err := o.err
	j.qmu.Unlock()
	return err
}

// finish marks the ops of batch that match done, with err.
func (j *Journal) finish(batch []*op, err error, match func(*op) bool) {
	j.qmu.Lock()
	for _, o := range batch {
		if !o.done && (match == nil || match(o)) {
			o.done, o.err = true, err
		}
	}
	j.qcond.Broadcast()
	j.qmu.Unlock()
}

func isSettle(o *op) bool { return o.kind == opSettle }

// lead writes batch. Every op in it is done when lead returns.
func (j *Journal) lead(batch []*op) {
	var data []walEntry
	sync, compact, closing := false, false, false
	for _, o := range batch {
		switch o.kind {
		case opReserve:
			sync = true
			data = append(data, o.entry)
		case opSettle:
			data = append(data, o.entry)
		case opCompact:
			compact = true
		case opClose:
			closing = true
		}
	}
	if j.closed {
		j.finish(batch, unavailable(j.state()), nil)
		return
	}
	if p := j.state(); p != nil {
		if closing {
			j.closeFiles()
		}
		j.finish(batch, unavailable(p), nil)
		return
	}
	if !compact && !closing && j.writeFrame(batch, data, sync) {
		return
	}
	// A checkpoint: to compact or close, or because the frame does not
	// fit in the log. The batch's records go to the database with it.
	for _, e := range data {
		j.written[[keySize]byte(e.key)] = e.val
	}
	removed, err := j.checkpoint(compact)
	for _, o := range batch {
		o.removed = removed
	}
	if closing {
		if cerr := j.closeFiles(); err == nil {
			err = cerr
		}
		j.setClosed()
	}
	j.finish(batch, err, nil)
}

// writeFrame appends data to the log as one frame, and syncs it if sync.
// It reports false, having done nothing, when the frame does not fit.
func (j *Journal) writeFrame(batch []*op, data []walEntry, sync bool) bool {
	w := j.wal
	if w.off+int64(frameLen(data)) > w.size {
		return false
	}
	what := "recording an outcome"
	if sync {
		what = "recording an action"
	}
	j.buf = appendFrame(j.buf[:0], j.key, w.gen, w.seq+1, w.synced, data)
	if _, err := w.f.WriteAt(j.buf, w.off); err != nil {
		j.finish(batch, j.poison(what, err), nil)
		return true
	}
	failpoint.Hit("journal-written")
	w.seq++
	w.off += int64(len(j.buf))
	for _, e := range data {
		j.written[[keySize]byte(e.key)] = e.val
	}
	j.finish(batch, nil, isSettle) // an outcome waits for the write only
	if !sync {
		return true
	}
	if err := unix.Fdatasync(w.fd); err != nil {
		j.finish(batch, j.poison(what, err), nil)
		return true
	}
	j.syncs.Add(1)
	failpoint.Hit("journal-synced")
	w.synced = w.seq
	j.finish(batch, nil, nil)
	return true
}

// checkpoint writes the records the log holds to the database, deletes
// the expired ones if compact, and starts the log's next generation, all
// in one bbolt transaction: after a crash before its commit the log is
// replayed as it is, after it the log's frames (of the previous
// generation) are ignored. It returns how many records it deleted.
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
			return meta.Put(metaWAL, walMeta(j.key, next, j.wal.size))
		})
	})
	if err != nil {
		return 0, j.poison("writing the journal's records to its database", err)
	}
	failpoint.Hit("journal-checkpointed")
	j.wal.gen, j.wal.seq, j.wal.synced, j.wal.off = next, 0, 0, 0
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

// closeFiles closes the database and the log (those that are open).
func (j *Journal) closeFiles() error {
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

// Close waits for the writes in progress, writes the log's records to the
// database (so the next Open has nothing to replay), then closes the files
// and releases the lock. Afterwards the journal is unavailable. Close is
// idempotent.
func (j *Journal) Close() error {
	if j.db == nil { // Open failed before the database was opened
		j.setClosed()
		return nil
	}
	err := j.do(&op{kind: opClose})
	if _, ok := errors.AsType[*Problem](err); ok {
		return nil // unavailable before: already said
	}
	return err
}
