package journal

import (
	"bytes"
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/dsh-browser/broker/wire"
)

// Defaults of [Options].
const (
	DefaultMaxEntries = 10_000
	DefaultMaxBytes   = 20 << 20
	DefaultRetention  = 24 * time.Hour
)

// CompactInterval is how often [Journal.Run] compacts.
const CompactInterval = time.Hour

// Options tune a Journal. The zero value gives the defaults.
type Options struct {
	// MaxEntries caps the records kept (DefaultMaxEntries).
	MaxEntries int
	// MaxBytes caps the bytes of the records kept, keys and values
	// (DefaultMaxBytes). See "Capacity" in the package doc.
	MaxBytes int64
	// Retention is how long a record is kept at least (DefaultRetention).
	Retention time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	// Logger receives problems and compaction results (discarded if nil).
	Logger *slog.Logger
}

// Journal is the durable action journal. Its methods are safe for
// concurrent use; Reserve, Settle and Compact block on disk I/O.
type Journal struct {
	path   string
	secret []byte
	opts   Options
	log    *slog.Logger

	// wmu serializes the writers: Reserve, Settle, Compact and Close. It is
	// held across a bbolt write transaction. Lock order: wmu, then bbolt's
	// own locks, then mu.
	wmu  sync.Mutex
	db   *bolt.DB // nil when Open failed; set once by Open
	file *os.File // the file bbolt opened (tests break it to make writes fail)

	// mu guards the fields below. It is a leaf: no I/O and no other lock
	// while it is held.
	mu       sync.Mutex
	problem  *Problem // non-nil: unavailable, for good (until restart)
	entries  int      // records stored
	reserved int      // records in StateReserved
	bytes    int64    // key + value bytes of the records stored
}

// Status is the journal's state for `broker status`.
type Status struct {
	Path     string   `json:"path"`
	Entries  int      `json:"entries"`  // records kept
	Reserved int      `json:"reserved"` // of which uncertain: reserved, no outcome recorded
	Bytes    int64    `json:"bytes"`    // record bytes counted against MaxBytes
	Problem  *Problem `json:"problem,omitempty"`
}

// Open opens the journal at path, creating it if it does not exist, and
// verifies every record. It never returns nil: if anything is wrong the
// Journal is unavailable, [Journal.Err] says why and how to fix it, and
// Lookup, Reserve and Settle fail with JOURNAL_UNAVAILABLE.
//
// secret keys every MAC and hash in the file; opening with another secret
// than the file was written with makes the journal unavailable. Open
// compacts once before returning.
func Open(path string, secret []byte, opts Options) *Journal {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Journal{path: path, secret: bytes.Clone(secret), opts: opts, log: opts.Logger.With("journal", path)}
	if p := j.open(); p != nil {
		j.problem = p
		j.log.Error("journal unavailable", "reason", p.Reason, "fix", p.Fix, "err", p.Cause)
		return j
	}
	if _, err := j.Compact(); err != nil {
		return j // poisoned, logged
	}
	st := j.Status()
	j.log.Info("journal open", "entries", st.Entries, "reserved", st.Reserved)
	return j
}

func (j *Journal) open() *Problem {
	if len(j.secret) == 0 {
		return &Problem{Reason: "the journal has no secret to key its records with", Fix: fixRestart}
	}
	if p := checkDir(filepath.Dir(j.path)); p != nil {
		return p
	}
	before, err := os.Lstat(j.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := create(j.path, j.secret); err != nil {
			return openProblem(j.path, err)
		}
		if before, err = os.Lstat(j.path); err != nil {
			return openProblem(j.path, err)
		}
	case err != nil:
		return openProblem(j.path, err)
	}
	if p := checkFile(j.path, before); p != nil {
		return p
	}
	if before.Size() == 0 {
		// bbolt would make a new database of it, silently dropping
		// whatever fences the file held before it was truncated.
		return &Problem{Reason: fmt.Sprintf("the journal file %s is empty: it was truncated", j.path), Fix: fixReset}
	}
	db, f, err := openBolt(j.path)
	if err != nil {
		return openProblem(j.path, err)
	}
	// The checks above were on the name; these are on what was opened.
	after, err := f.Stat()
	if err == nil && !os.SameFile(before, after) {
		err = errors.New("the file changed while it was opened")
	}
	if err != nil {
		db.Close()
		return openProblem(j.path, err)
	}
	if p := checkFile(j.path, after); p != nil {
		db.Close()
		return p
	}
	j.db, j.file = db, f
	if p := j.verify(after.Size()); p != nil {
		db.Close()
		j.db = nil
		return p
	}
	return nil
}

// openBolt opens path with bbolt: mode 0600, a 1 s lock timeout, default
// syncing (NoSync and NoFreelistSync off). A damaged file can make bbolt
// fault on its memory map while opening; that is caught (see guard), and
// the file bbolt opened is closed so its lock is released.
func openBolt(path string) (db *bolt.DB, f *os.File, err error) {
	opts := &bolt.Options{
		Timeout: lockTimeout,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			file, err := openNoFollow(name, flag, perm)
			f = file
			return file, err
		},
	}
	err = guard(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, opts)
		return err
	})
	if _, ok := errors.AsType[*faultError](err); ok && f != nil {
		f.Close() // the half-open DB is abandoned; its mapping is leaked
	}
	return db, f, err
}

// create makes a new, empty journal at path. It is built under a temporary
// name and linked into place, so a crash never leaves a half-made journal
// at path; link (unlike rename) never replaces a journal that appeared
// meanwhile.
func create(path string, secret []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.new") // mode 0600
	if err != nil {
		return err
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name)
	db, err := bolt.Open(name, 0o600, &bolt.Options{Timeout: lockTimeout, OpenFile: openNoFollow})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(bucketRecords); err != nil {
			return err
		}
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(metaFormat, []byte(format)); err != nil {
			return err
		}
		return meta.Put(metaCheck, checkValue(secret))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(name, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	return syncDir(dir)
}

// openProblem explains a failure to open the file.
func openProblem(path string, err error) *Problem {
	_, fault := errors.AsType[*faultError](err)
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return &Problem{Reason: fmt.Sprintf("another broker holds the journal %s (its file lock is taken)", path), Fix: fixOther, Cause: err}
	case errors.Is(err, syscall.ELOOP):
		return &Problem{Reason: fmt.Sprintf("the journal file %s is a symbolic link, which the broker refuses to follow", path), Fix: fixReset, Cause: err}
	case errors.Is(err, fs.ErrPermission):
		return &Problem{Reason: fmt.Sprintf("the journal file %s cannot be opened: permission denied", path), Fix: fixReset, Cause: err}
	case errors.Is(err, syscall.ENOSPC):
		return &Problem{Reason: fmt.Sprintf("the disk is full: the journal %s cannot be created", path), Fix: fixDisk, Cause: err}
	case fault,
		errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), strings.Contains(err.Error(), "file size too small"):
		return &Problem{Reason: fmt.Sprintf("the journal file %s is not a valid journal database (it is truncated, corrupt or some other file)", path),
			Fix: fixReset, Cause: err}
	}
	return &Problem{Reason: fmt.Sprintf("the journal %s cannot be opened", path), Fix: fixReset, Cause: err}
}

// verify checks the whole file in one read transaction: its size, its
// buckets, the secret, every record's MAC and shape, and bbolt's own
// consistency check. It sets the counters.
func (j *Journal) verify(fileSize int64) *Problem {
	corrupt := func(what string, cause error) *Problem {
		return &Problem{Reason: fmt.Sprintf("the journal file %s %s", j.path, what), Fix: fixReset, Cause: cause}
	}
	var p *Problem
	var entries, reserved int
	var size int64
	err := guard(func() error {
		return j.db.View(func(tx *bolt.Tx) error {
			// Pages past the end of the file would fault (and their
			// records are lost): a truncated file.
			if need := tx.Size(); need > fileSize {
				p = corrupt(fmt.Sprintf("is truncated: it has %d bytes, its database needs %d", fileSize, need), nil)
				return nil
			}
			// Everything at the top level must be ours.
			err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				if !bytes.Equal(name, bucketRecords) && !bytes.Equal(name, bucketMeta) {
					return fmt.Errorf("unknown bucket %q", name)
				}
				return nil
			})
			if err != nil {
				p = corrupt("is not a broker journal", err)
				return nil
			}
			meta, recs := tx.Bucket(bucketMeta), tx.Bucket(bucketRecords)
			if meta == nil || recs == nil {
				p = corrupt("is not a broker journal (its buckets are missing)", nil)
				return nil
			}
			if f := meta.Get(metaFormat); !bytes.Equal(f, []byte(format)) {
				p = corrupt(fmt.Sprintf("has format %q; this broker reads %q", f, format), nil)
				return nil
			}
			if !hmac.Equal(meta.Get(metaCheck), checkValue(j.secret)) {
				p = &Problem{Reason: fmt.Sprintf("the journal %s was written with a different secret (the broker's auth token changed), so its records cannot be verified", j.path),
					Fix: fixReset}
				return nil
			}
			if n := meta.Stats().KeyN; n != 2 {
				p = corrupt(fmt.Sprintf("has %d metadata entries, want 2", n), nil)
				return nil
			}
			err = recs.ForEach(func(k, v []byte) error {
				if v == nil {
					return errors.New("a nested bucket among the records")
				}
				if len(k) != keySize {
					return fmt.Errorf("a record key of %d bytes", len(k))
				}
				r, err := decodeValue(j.secret, k, v)
				if err != nil {
					return err
				}
				entries++
				size += int64(len(k) + len(v))
				if r.State == StateReserved {
					reserved++
				}
				return nil
			})
			if errors.Is(err, errMAC) {
				p = corrupt("was changed outside the broker: a record failed its integrity check", err)
				return nil
			}
			if err != nil {
				p = corrupt("holds a record that is not legal", err)
				return nil
			}
			for err := range tx.Check() {
				p = corrupt("is inconsistent (bbolt check failed)", err)
				// Drain: Check's goroutine blocks until its channel is read.
			}
			return nil
		})
	})
	if err != nil {
		return corrupt("cannot be read (it is truncated or corrupt)", err)
	}
	if p != nil {
		return p
	}
	j.mu.Lock()
	j.entries, j.reserved, j.bytes = entries, reserved, size
	j.mu.Unlock()
	return nil
}

// faultError is a panic caught by guard: a memory fault on bbolt's map
// (a truncated or damaged file) or one of bbolt's corruption panics.
type faultError struct {
	value any
	stack []byte
}

func (e *faultError) Error() string { return fmt.Sprintf("panic reading the database: %v", e.value) }

// guard runs fn, turning a panic into a *faultError. bbolt reads the file
// through a memory map, so a page past the end of a truncated file raises
// SIGBUS; SetPanicOnFault makes that a recoverable panic in this goroutine
// instead of a crash. A fault in the middle of a write leaves the
// transaction rolled back by bbolt's deferred rollback.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = &faultError{value: v, stack: debug.Stack()}
		}
	}()
	return fn()
}

// state returns the problem, if any.
func (j *Journal) state() *Problem {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.problem
}

// Err returns why the journal is unavailable, or nil if it is available.
func (j *Journal) Err() *Problem { return j.state() }

// Status reports the journal for `broker status`.
func (j *Journal) Status() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Status{Path: j.path, Entries: j.entries, Reserved: j.reserved, Bytes: j.bytes, Problem: j.problem}
}

// poison makes the journal unavailable after a failed read or write: after
// a failed fsync nothing on disk can be trusted until the file is opened
// and verified again. It returns the error for the caller.
func (j *Journal) poison(op string, err error) error {
	p := &Problem{Reason: fmt.Sprintf("%s failed, so the journal %s cannot be trusted", op, j.path), Fix: fixRestart, Cause: err}
	fault, isFault := errors.AsType[*faultError](err)
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		p.Reason, p.Fix = fmt.Sprintf("the disk is full: %s failed on the journal %s", op, j.path), fixDisk
	case errors.Is(err, syscall.EIO):
		p.Reason = fmt.Sprintf("the disk reported an I/O error: %s failed on the journal %s", op, j.path)
	case errors.Is(err, syscall.EROFS):
		p.Reason = fmt.Sprintf("the file system of the journal %s is read-only: %s failed", j.path, op)
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		p.Reason = fmt.Sprintf("the journal %s is closed: %s failed", j.path, op)
	case errors.Is(err, errMAC):
		p.Reason, p.Fix = fmt.Sprintf("the journal file %s was changed outside the broker: a record failed its integrity check", j.path), fixReset
	case isFault:
		p.Reason, p.Fix = fmt.Sprintf("the journal file %s is corrupt: %s failed", j.path, op), fixReset
		j.log.Error("journal fault", "stack", string(fault.stack))
	}
	j.mu.Lock()
	if j.problem == nil {
		j.problem = p
	} else {
		p = j.problem
	}
	j.mu.Unlock()
	j.log.Error("journal unavailable", "reason", p.Reason, "fix", p.Fix, "err", err)
	return unavailable(p)
}

func (j *Journal) validKey(k Key) error {
	if k.Scope == "" || k.RequestID == "" || strings.IndexByte(k.RequestID, 0) >= 0 {
		return fmt.Errorf("%w: journal: invalid key", wire.Err(wire.CodeInvalidRequest))
	}
	return nil
}

// get reads and verifies the record at key (nil if none) in tx.
func (j *Journal) get(tx *bolt.Tx, key []byte) (*Record, error) {
	b := tx.Bucket(bucketRecords)
	if b == nil {
		return nil, errors.New("the records bucket is gone")
	}
	v := b.Get(key)
	if v == nil {
		return nil, nil
	}
	r, err := decodeValue(j.secret, key, v)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Lookup returns the record of k, or (nil, nil) if there is none. An
// existing record means the request is a retry: a StateReserved record
// says the action may have been dispatched before a crash.
func (j *Journal) Lookup(k Key) (*Record, error) {
	if p := j.state(); p != nil {
		return nil, unavailable(p)
	}
	if err := j.validKey(k); err != nil {
		return nil, err
	}
	key := dbKey(j.secret, k)
	var rec *Record
	err := guard(func() error {
		return j.db.View(func(tx *bolt.Tx) error {
			var err error
			rec, err = j.get(tx, key)
			return err
		})
	})
	if err != nil {
		return nil, j.poison("reading a record", err)
	}
	return rec, nil
}

// Reserve durably records the intent to dispatch the action k with payload
// hash and kind, before it is dispatched. It returns nil only after the
// record is committed and fsynced; on any error nothing may be dispatched.
//
// If k already has a record, Reserve returns a *[DuplicateError] carrying it
// when hash matches, and REQUEST_ID_CONFLICT when it does not. When the
// journal holds MaxEntries records, or MaxBytes of them, after compaction,
// it returns JOURNAL_FULL: a live fence is never evicted. A failed write
// makes the journal unavailable for good and returns JOURNAL_UNAVAILABLE.
func (j *Journal) Reserve(k Key, hash [32]byte, kind string) error {
	if p := j.state(); p != nil {
		return unavailable(p)
	}
	if err := j.validKey(k); err != nil {
		return err
	}
	if !validKind(kind) {
		return fmt.Errorf("%w: journal: invalid action kind %q", wire.Err(wire.CodeInvalidRequest), kind)
	}
	key := dbKey(j.secret, k)
	rec := Record{Hash: hash, Kind: kind, State: StateReserved, Dispatch: DispatchUnknown, ReservedAt: j.now()}
	val, err := encodeValue(j.secret, key, &rec)
	if err != nil {
		return internalf("encode: %v", err)
	}
	size := int64(len(key) + len(val))

	j.wmu.Lock()
	defer j.wmu.Unlock()
	if p := j.state(); p != nil {
		return unavailable(p)
	}
	// Fast path: a duplicate needs no write. Writers are serialized by
	// wmu, so nothing changes between this read and the write below.
	var old *Record
	if err := guard(func() error {
		return j.db.View(func(tx *bolt.Tx) (err error) { old, err = j.get(tx, key); return err })
	}); err != nil {
		return j.poison("reading a record", err)
	}
	if old != nil {
		if old.Hash != hash {
			return wire.Err(wire.CodeRequestIDConflict)
		}
		return &DuplicateError{Record: *old}
	}
	if j.full(size) {
		if _, err := j.compact(); err != nil {
			return err
		}
		if j.full(size) {
			return wire.Err(wire.CodeJournalFull)
		}
	}
	if err := j.put(key, nil, val); err != nil {
		return j.poison("recording an action", err)
	}
	j.mu.Lock()
	j.entries++
	j.reserved++
	j.bytes += size
	j.mu.Unlock()
	return nil
}

// settleGrowth bounds how much Settle grows a record: dispatch "unknown"
// becomes at most "notDispatched" (+6), plus ,"outcome":"cancelled" (22)
// and ,"settledAt":<19 digits> (32). Reserve counts it for every reserved
// record, so that Settle never takes the records past MaxBytes and never
// fails for space.
const settleGrowth = 64

// full reports whether a new record of size bytes would exceed a limit.
func (j *Journal) full(size int64) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	pending := int64(j.reserved+1) * settleGrowth
	return j.entries >= j.opts.MaxEntries || j.bytes+size+pending > j.opts.MaxBytes
}

// put writes val at key in one committed (fsynced) transaction. If want is
// non-nil the stored value must still be want.
func (j *Journal) put(key, want, val []byte) error {
	return guard(func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketRecords)
			if b == nil {
				return errors.New("the records bucket is gone")
			}
			if cur := b.Get(key); !bytes.Equal(cur, want) {
				return errors.New("the record changed under the writer lock")
			}
			return b.Put(key, val)
		})
	})
}

// Settle durably records the outcome of the action k, which must have a
// StateReserved record (else INTERNAL_ERROR). outcome is one of the
// Outcome constants and dispatch one of notDispatched, dispatched,
// observed. If it fails the outcome is not recorded and the runtime must
// report it as unknown; a failed write makes the journal unavailable.
func (j *Journal) Settle(k Key, outcome, dispatch string) error {
	if p := j.state(); p != nil {
		return unavailable(p)
	}
	if err := j.validKey(k); err != nil {
		return err
	}
	if !validOutcome(outcome) || !validDispatch(dispatch) {
		return internalf("settle with outcome %q, dispatch %q", outcome, dispatch)
	}
	key := dbKey(j.secret, k)

	j.wmu.Lock()
	defer j.wmu.Unlock()
	if p := j.state(); p != nil {
		return unavailable(p)
	}
	var old *Record
	var oldVal []byte
	if err := guard(func() error {
		return j.db.View(func(tx *bolt.Tx) (err error) {
			if old, err = j.get(tx, key); old != nil {
				oldVal = bytes.Clone(tx.Bucket(bucketRecords).Get(key))
			}
			return err
		})
	}); err != nil {
		return j.poison("reading a record", err)
	}
	if old == nil || old.State != StateReserved {
		return internalf("settle without a reservation")
	}
	rec := *old
	rec.State, rec.Outcome, rec.Dispatch, rec.SettledAt = StateSettled, outcome, dispatch, j.now()
	val, err := encodeValue(j.secret, key, &rec)
	if err != nil {
		return internalf("encode: %v", err)
	}
	if err := j.put(key, oldVal, val); err != nil {
		return j.poison("recording an outcome", err)
	}
	j.mu.Lock()
	j.reserved--
	j.bytes += int64(len(val) - len(oldVal))
	j.mu.Unlock()
	return nil
}

func (j *Journal) now() time.Time { return time.Unix(0, j.opts.Now().UnixNano()).UTC() }

// Compact deletes the records past retention: settled records whose
// outcome is older than Retention, and reserved records reserved longer
// ago than Retention. It returns how many it deleted. A failure makes the
// journal unavailable.
func (j *Journal) Compact() (int, error) {
	if p := j.state(); p != nil {
		return 0, unavailable(p)
	}
	j.wmu.Lock()
	defer j.wmu.Unlock()
	return j.compact()
}

// compact is Compact under wmu.
func (j *Journal) compact() (int, error) {
	if p := j.state(); p != nil {
		return 0, unavailable(p)
	}
	cutoff := j.now().Add(-j.opts.Retention)
	var removed, entries, reserved int
	var size int64
	err := guard(func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketRecords)
			if b == nil {
				return errors.New("the records bucket is gone")
			}
			var expired [][]byte
			err := b.ForEach(func(k, v []byte) error {
				r, err := decodeValue(j.secret, k, v)
				if err != nil {
					return err
				}
				at := r.ReservedAt
				if r.State == StateSettled {
					at = r.SettledAt
				}
				if at.Before(cutoff) {
					expired = append(expired, bytes.Clone(k))
					return nil
				}
				entries++
				size += int64(len(k) + len(v))
				if r.State == StateReserved {
					reserved++
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range expired {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			removed = len(expired)
			return nil
		})
	})
	if err != nil {
		return 0, j.poison("compacting", err)
	}
	j.mu.Lock()
	j.entries, j.reserved, j.bytes = entries, reserved, size
	j.mu.Unlock()
	if removed > 0 {
		j.log.Info("journal compacted", "removed", removed, "entries", entries)
	}
	return removed, nil
}

// Run compacts every CompactInterval until ctx is done. The broker runs it
// in its own goroutine once the journal is open.
func (j *Journal) Run(ctx context.Context) {
	t := time.NewTicker(CompactInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			j.Compact() // a failure poisons the journal and is logged there
		}
	}
}

// Close waits for a write in progress, then closes the file and releases
// its lock. Afterwards the journal is unavailable. Close is idempotent.
func (j *Journal) Close() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.mu.Lock()
	if j.problem == nil {
		j.problem = &Problem{Reason: fmt.Sprintf("the journal %s is closed", j.path), Fix: fixRestart}
	}
	j.mu.Unlock()
	if j.db == nil {
		return nil
	}
	// j.db stays set: a Lookup racing with Close gets bbolt's
	// ErrDatabaseNotOpen, and closing twice is a no-op in bbolt.
	return j.db.Close()
}
