package journal

// This file opens backdoors needed only by tests.

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var CheckValue = checkValue

func DecodeValue(secret, key, v []byte) (Record, error) {
	return decodeValue(newMACKey(secret), key, v)
}
func EncodeValue(secret, key []byte, r *Record) ([]byte, error) {
	return encodeValue(newMACKey(secret), key, r)
}
func Seal(secret, key, js []byte) []byte { return seal(newMACKey(secret), key, js) }
func DBKey(secret []byte, k Key) []byte  { return dbKey(newMACKey(secret), k) }
func AppendFrame(buf, secret []byte, gen, seq, synced uint64, entries []walEntry) []byte {
	return appendFrame(buf, newMACKey(secret), gen, seq, synced, entries)
}

// WALEntryT is a log entry, for AppendFrame.
type WALEntryT = walEntry

// WALEntry is a log entry, for AppendFrame.
func WALEntry(key, val []byte) walEntry { return walEntry{key: key, val: val} }

const LegacyFormat = legacyFormat

// WithWALSize sets the size of a new write-ahead log.
func WithWALSize(o Options, n int64) Options {
	o.walSize = n
	return o
}

// Key returns the journal's key.
func (j *Journal) Key() []byte { return j.key.secret }

// WALState is where the log's next frame goes, its generation, and the
// last of its frames written and synced. No write may be in flight.
func WALState(j *Journal) (off int64, gen, seq, synced uint64) {
	return j.wal.off, j.wal.gen, j.wal.seq, max(j.durable, j.wal.base) - j.wal.base
}

// Abandon closes the journal's files without a checkpoint, as a process
// killed with SIGKILL leaves them: the log keeps what it holds.
func Abandon(j *Journal) {
	j.wal.f.Close()
	j.db.Close()
	j.closed = true
	j.setClosed()
}

// CloseFiles closes the files under j without j knowing, so that its next
// write fails.
func CloseFiles(j *Journal) error {
	j.wal.f.Close()
	return j.db.Close()
}

// Fill adds n reserved records with keys Key{scope, "fill-<i>"} to the
// database in one transaction, as if they had been reserved one by one
// and checkpointed. No write may be in flight.
func Fill(j *Journal, scope string, n int) error {
	var puts []walEntry
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		for i := range n {
			key := dbKey(j.key, Key{Scope: scope, RequestID: fmt.Sprint("fill-", i)})
			rec := Record{Kind: "click", State: StateReserved, Dispatch: DispatchUnknown, ReservedAt: j.now()}
			val, err := encodeValue(j.key, key, &rec)
			if err != nil {
				return err
			}
			if err := b.Put(key, val); err != nil {
				return err
			}
			puts = append(puts, walEntry{key, val})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range puts {
		rec, _ := decodeValue(j.key, e.key, e.val)
		j.put([keySize]byte(e.key), entry{rec: rec, size: int64(len(e.key) + len(e.val))})
	}
	return nil
}

// HoldSync makes the log look busy syncing until release is closed: the
// writes that need a sync meanwhile wait, and the first of them to go on
// then syncs for all.
func HoldSync(j *Journal) (release chan struct{}) {
	release = make(chan struct{})
	j.smu.Lock()
	j.syncing = true
	j.smu.Unlock()
	go func() {
		<-release
		j.smu.Lock()
		j.syncing = false
		j.scond.Broadcast()
		j.smu.Unlock()
	}()
	return release
}

// Frames is how many frames were written to the log.
func Frames(j *Journal) uint64 {
	j.smu.Lock()
	defer j.smu.Unlock()
	return j.frames
}

// Syncs is how many times the log was synced.
func Syncs(j *Journal) int64 { return j.syncs.Load() }

// ParseFrame parses the frame at the start of data: its sequence numbers
// and entries, and its padded length (0 when it is not a valid frame).
func ParseFrame(data, secret []byte, gen uint64) (seq, synced uint64, entries []walEntry, n int) {
	fr, ok := parseFrame(data, newMACKey(secret), gen)
	if !ok {
		return 0, 0, nil, 0
	}
	return fr.seq, fr.synced, fr.entries, fr.len
}
