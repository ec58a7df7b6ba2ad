package journal

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
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
	// LegacySecret is the secret a journal of the first format was keyed
	// with: the broker's auth token. It is used only to migrate such a
	// journal (see "Keys and migration" in the package doc); nil sets any
	// such journal aside.
	LegacySecret []byte
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

	walSize int64 // of a new write-ahead log (defaultWALSize); tests set it
}

// Journal is the durable action journal. Its methods are safe for
// concurrent use; Reserve, Settle and Compact block on disk I/O.
type Journal struct {
	path string
	opts Options
	log  *slog.Logger

	key  *macKey  // from the key file; set once by Open
	db   *bolt.DB // nil when Open failed; set once by Open
	file *os.File // the file bbolt opened (tests break it to make writes fail)

	// The group commit (commit.go). wmu serializes writes to the files:
	// appending a frame, a checkpoint, closing. It guards the fields up to
	// closed. Lock order: wmu, smu, mu.
	wmu     sync.Mutex
	wal     *wal
	written map[[keySize]byte][]byte // values in the log since the last checkpoint
	buf     []byte                   // the frame being written
	closed  bool

	// smu guards the sync state; scond signals a sync's end.
	smu     sync.Mutex
	scond   *sync.Cond
	syncing bool         // a sync of the log is in progress
	frames  uint64       // frames written to the log, all generations
	durable uint64       // of those, how many are on disk (synced or checkpointed)
	syncs   atomic.Int64 // of the log, for tests and benchmarks

	// mu guards the fields below. It is a leaf: no I/O and no other lock
	// while it is held.
	mu       sync.Mutex
	problem  *Problem // non-nil: unavailable, for good (until restart)
	notice   string   // for the user, though the journal is available
	index    map[[keySize]byte]entry
	entries  int   // records stored
	reserved int   // records in StateReserved
	bytes    int64 // key + value bytes of the records stored
	// legacy is the auth token that keys the records a migration kept,
	// while they can still be found: the caller supplied that token, and
	// migratedAt is within Retention. Nil otherwise.
	legacy     *macKey
	migratedAt time.Time // zero once the "legacy" metadata is gone
}

// entry is a record as the index holds it, with its size on disk.
type entry struct {
	rec  Record
	size int64 // key + value bytes
}

// Status is the journal's state for `broker status`.
type Status struct {
	Path     string   `json:"path"`
	Entries  int      `json:"entries"`  // records kept
	Reserved int      `json:"reserved"` // of which uncertain: reserved, no outcome recorded
	Bytes    int64    `json:"bytes"`    // record bytes counted against MaxBytes
	Problem  *Problem `json:"problem,omitempty"`
	// Notice is something the user should know though the journal works,
	// such as an old journal that was set aside.
	Notice string `json:"notice,omitempty"`
}

// Open opens the journal at path, with its key and write-ahead log beside
// it ([KeyPath], [WALPath]), creating all three if there is no journal,
// and verifies every record. It never returns nil: if anything is wrong
// the Journal is unavailable, [Journal.Err] says why and how to fix it,
// and Lookup, Reserve and Settle fail with JOURNAL_UNAVAILABLE.
//
// A journal of the first format, keyed by the auth token, is migrated if
// it verifies under opts.LegacySecret and set aside otherwise ([Status]
// Notice says so). Open replays the write-ahead log, then checkpoints and
// compacts once before returning.
func Open(path string, opts Options) *Journal {
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
	if opts.walSize == 0 {
		opts.walSize = DefaultWALSize
	}
	j := &Journal{path: path, opts: opts, log: opts.Logger.With("journal", path),
		written: map[[keySize]byte][]byte{}, index: map[[keySize]byte]entry{}}
	j.scond = sync.NewCond(&j.smu)
	if p := j.open(); p != nil {
		j.closeFiles()
		j.problem = p
		j.log.Error("journal unavailable", "reason", p.Reason, "fix", p.Fix, "err", p.Cause)
		return j
	}
	if j.notice != "" {
		j.log.Warn(j.notice)
	}
	st := j.Status()
	j.log.Info("journal open", "entries", st.Entries, "reserved", st.Reserved)
	return j
}

func (j *Journal) open() *Problem {
	if p := checkDir(filepath.Dir(j.path)); p != nil {
		return p
	}
	fi, err := os.Lstat(j.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return openProblem(j.path, err)
	}
	if err == nil {
		if p := j.openDB(fi); p != nil {
			return p
		}
		if p := j.fromLegacy(); p != nil {
			return p
		}
	}
	if j.db == nil {
		if p := j.create(); p != nil {
			return p
		}
	}
	if j.key == nil {
		key, p, err := loadKey(KeyPath(j.path))
		if errors.Is(err, fs.ErrNotExist) {
			return &Problem{Reason: fmt.Sprintf("%s %s is missing, so the journal's records cannot be verified", whatKey, KeyPath(j.path)),
				Fix: fixReset, Cause: err}
		}
		if p != nil {
			return p
		}
		j.key = newMACKey(key)
	}
	meta, p := j.verify()
	if p != nil {
		return p
	}
	w, p := openWAL(WALPath(j.path), 0)
	if p != nil {
		return p
	}
	j.wal = w
	if w.size != meta.walSize {
		return &Problem{Reason: fmt.Sprintf("%s %s has %d bytes, where the journal recorded %d: it was truncated or replaced", whatWAL, w.path, w.size, meta.walSize),
			Fix: fixReset}
	}
	w.gen = meta.gen
	if p := j.replay(); p != nil {
		return p
	}
	if _, err := j.checkpoint(true); err != nil {
		return j.state()
	}
	return nil
}

// openDB opens the existing journal file: the checks on the name, bbolt's
// open (which takes the file lock), and the same checks on what was
// opened, which must still be what the name refers to.
func (j *Journal) openDB(before fs.FileInfo) *Problem {
	if p := checkFile(whatDB, j.path, before); p != nil {
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
	// The checks above were on the name; these are on what was opened,
	// after its lock was taken: another broker may have replaced the file
	// (a migration) while this one waited.
	after, err := f.Stat()
	if err == nil && !os.SameFile(before, after) {
		err = errors.New("the file changed while it was opened")
	}
	if now, lerr := os.Lstat(j.path); err == nil && (lerr != nil || !os.SameFile(now, after)) {
		err = errors.New("the file was replaced while it was opened")
	}
	if err != nil {
		db.Close()
		return openProblem(j.path, err)
	}
	if p := checkFile(whatDB, j.path, after); p != nil {
		db.Close()
		return p
	}
	j.db, j.file = db, f
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

// create makes a new, empty journal: first its key, then its log, each
// durable before the journal file that refers to them is linked into
// place. A crash part way leaves a key or a log without a journal, which
// the next Open uses; never a journal without its key.
func (j *Journal) create() *Problem {
	key, p := loadOrCreateKey(KeyPath(j.path))
	if p != nil {
		return p
	}
	j.key = newMACKey(key)
	w, p := openWAL(WALPath(j.path), j.opts.walSize)
	if p != nil {
		return p
	}
	defer w.f.Close()
	// A random first generation: frames left in an old log by a journal
	// that was deleted are never replayed into this one.
	var gen [8]byte
	rand.Read(gen[:])
	err := createFile(j.path, func(f *os.File) error {
		db, err := bolt.Open(f.Name(), 0o600, &bolt.Options{Timeout: lockTimeout, OpenFile: openNoFollow})
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
			if err := meta.Put(metaCheck, checkValue(key, format)); err != nil {
				return err
			}
			return meta.Put(metaWAL, walMeta(key, binary.BigEndian.Uint64(gen[:])>>1, w.size))
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrExist) { // ErrExist: another broker made one; open that
		return createProblem(whatDB, j.path, err)
	}
	fi, err := os.Lstat(j.path)
	if err != nil {
		return openProblem(j.path, err)
	}
	return j.openDB(fi)
}

// openWAL opens the write-ahead log at path, creating it with create
// bytes if it is missing and create > 0.
func openWAL(path string, create int64) (*wal, *Problem) {
	f, fi, p, err := openChecked(whatWAL, path, os.O_RDWR)
	if errors.Is(err, fs.ErrNotExist) && create > 0 {
		if err := createWAL(path, create); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, createProblem(whatWAL, path, err)
		}
		f, fi, p, err = openChecked(whatWAL, path, os.O_RDWR)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Problem{Reason: fmt.Sprintf("%s %s is missing: actions recorded only there would be forgotten", whatWAL, path), Fix: fixReset, Cause: err}
	}
	if p != nil {
		return nil, p
	}
	if n := fi.Size(); n < minWALSize || n > maxWALSize || n%frameAlign != 0 {
		f.Close()
		return nil, &Problem{Reason: fmt.Sprintf("%s %s has %d bytes: it is not a journal log", whatWAL, path, n), Fix: fixReset}
	}
	return &wal{path: path, f: f, fd: int(f.Fd()), size: fi.Size()}, nil
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
	case isDiskFull(err):
		return &Problem{Reason: fmt.Sprintf("the disk is full: the journal %s cannot be created", path), Fix: fixDisk, Cause: err}
	case fault,
		errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), strings.Contains(err.Error(), "file size too small"):
		return &Problem{Reason: fmt.Sprintf("the journal file %s is not a valid journal database (it is truncated, corrupt or some other file)", path),
			Fix: fixReset, Cause: err}
	}
	return &Problem{Reason: fmt.Sprintf("the journal %s cannot be opened", path), Fix: fixReset, Cause: err}
}

// fileMeta is what verify reads from the "meta" bucket.
type fileMeta struct {
	gen        uint64 // the write-ahead log's current generation
	walSize    int64
	legacy     []byte // the check value of the auth token a migration kept records under
	migratedAt time.Time
}

// verify checks the whole file in one read transaction: its size, its
// buckets, its format, the secret it was written with, every record's MAC
// and shape, and bbolt's own consistency check. The legacy format is
// checked under the legacy secret, and its records are only counted; the
// current one under the key, and its records fill the index.
func (j *Journal) verify() (fileMeta, *Problem) {
	return j.verifyAs(format, j.key)
}

func (j *Journal) verifyAs(f string, secret *macKey) (m fileMeta, p *Problem) {
	corrupt := func(what string, cause error) *Problem {
		return &Problem{Reason: fmt.Sprintf("the journal file %s %s", j.path, what), Fix: fixReset, Cause: cause}
	}
	fi, err := j.file.Stat()
	if err != nil {
		return m, corrupt("cannot be read", err)
	}
	index := map[[keySize]byte]entry{}
	err = guard(func() error {
		return j.db.View(func(tx *bolt.Tx) error {
			// Pages past the end of the file would fault (and their
			// records are lost): a truncated file.
			if need := tx.Size(); need > fi.Size() {
				p = corrupt(fmt.Sprintf("is truncated: it has %d bytes, its database needs %d", fi.Size(), need), nil)
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
			if got := meta.Get(metaFormat); !bytes.Equal(got, []byte(f)) {
				p = corrupt(fmt.Sprintf("has format %q; this broker reads %q", got, format), nil)
				return nil
			}
			if !hmac.Equal(meta.Get(metaCheck), checkValue(secret.secret, f)) {
				p = &Problem{Reason: fmt.Sprintf("the journal %s was written with another key than %s, so its records cannot be verified", j.path, KeyPath(j.path)),
					Fix: fixReset}
				return nil
			}
			if p = j.readMeta(meta, f, &m); p != nil {
				return nil
			}
			err = recs.ForEach(func(k, v []byte) error {
				if v == nil {
					return errors.New("a nested bucket among the records")
				}
				if len(k) != keySize {
					return fmt.Errorf("a record key of %d bytes", len(k))
				}
				r, err := decodeValue(secret, k, v)
				if err != nil {
					return err
				}
				index[[keySize]byte(k)] = entry{rec: r, size: int64(len(k) + len(v))}
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
		return m, corrupt("cannot be read (it is truncated or corrupt)", err)
	}
	if p != nil || f != format {
		return m, p
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for k, e := range index {
		j.putLocked(k, e)
	}
	j.migratedAt = m.migratedAt
	if m.legacy != nil && j.opts.LegacySecret != nil && hmac.Equal(m.legacy, checkValue(j.opts.LegacySecret, legacyFormat)) {
		j.legacy = newMACKey(bytes.Clone(j.opts.LegacySecret))
	}
	return m, nil
}

// readMeta checks the "meta" bucket of a file of format f beyond its
// format and check: the first format has nothing else; the current one a
// sealed "wal" value and maybe a sealed "legacy" one.
func (j *Journal) readMeta(meta *bolt.Bucket, f string, m *fileMeta) *Problem {
	corrupt := func(what string) *Problem {
		return &Problem{Reason: fmt.Sprintf("the journal file %s %s", j.path, what), Fix: fixReset}
	}
	want := 2
	if f == format {
		var ok bool
		if m.gen, m.walSize, ok = parseWALMeta(j.key.secret, meta.Get(metaWAL)); !ok {
			return corrupt("was changed outside the broker: its log metadata failed its integrity check")
		}
		want++
		if v := meta.Get(metaLegacy); v != nil {
			data, ok := openMeta(j.key.secret, metaLegacy, v, macSize+8)
			if !ok {
				return corrupt("was changed outside the broker: its migration metadata failed its integrity check")
			}
			m.legacy = bytes.Clone(data[:macSize])
			m.migratedAt = time.Unix(0, int64(binary.BigEndian.Uint64(data[macSize:]))).UTC()
			want++
		}
	}
	if n := meta.Stats().KeyN; n != want {
		return corrupt(fmt.Sprintf("has %d metadata entries, want %d", n, want))
	}
	return nil
}

// fromLegacy handles an open journal file of the first format, keyed by
// the auth token. If it verifies under Options.LegacySecret it is migrated
// in place; if that secret is not the one it was written with (the token
// changed: a reboot wiped the runtime directory), it is moved aside, never
// trusted, and j.db is left nil for a new journal. Any other format is
// left to verify.
func (j *Journal) fromLegacy() *Problem {
	var f []byte
	err := guard(func() error {
		return j.db.View(func(tx *bolt.Tx) error {
			if meta := tx.Bucket(bucketMeta); meta != nil {
				f = bytes.Clone(meta.Get(metaFormat))
			}
			return nil
		})
	})
	if err != nil || string(f) != legacyFormat {
		return nil
	}
	if len(j.opts.LegacySecret) > 0 {
		check := checkValue(j.opts.LegacySecret, legacyFormat)
		var ok bool
		guard(func() error {
			return j.db.View(func(tx *bolt.Tx) error {
				ok = hmac.Equal(tx.Bucket(bucketMeta).Get(metaCheck), check)
				return nil
			})
		})
		if ok {
			return j.migrate()
		}
	}
	// Still holding the file's lock, so no other broker is migrating it.
	moved, err := moveAside([]string{j.path}, "legacy", j.now())
	j.db.Close()
	j.db, j.file = nil, nil
	if err != nil {
		return &Problem{Reason: fmt.Sprintf("the journal %s was keyed by an auth token this broker no longer has, and it cannot be moved aside", j.path),
			Fix: fixReset, Cause: err}
	}
	j.notice = fmt.Sprintf("the journal %s was keyed by an auth token this broker no longer has (its runtime directory was made anew, by a reboot or a logout), "+
		"so its records cannot be verified: it was moved to %s and a new journal started; retries of actions from before are not recognized", j.path, moved[0])
	return nil
}

// migrate rewrites a journal of the first format, verified under the
// legacy secret, to the current format in one bbolt transaction: every
// record is resealed under the journal's key, after the key and the log
// are durable. A record keeps its database key, a MAC of its action's
// identity under the auth token that cannot be recomputed without it; so
// these records are found only while the broker runs with that token, and
// are compacted after Retention like any other.
func (j *Journal) migrate() *Problem {
	secret := newMACKey(j.opts.LegacySecret)
	if _, p := j.verifyAs(legacyFormat, secret); p != nil {
		return p
	}
	key, p := loadOrCreateKey(KeyPath(j.path))
	if p != nil {
		return p
	}
	w, p := openWAL(WALPath(j.path), j.opts.walSize)
	if p != nil {
		return p
	}
	w.f.Close()
	newKey := newMACKey(key)
	var gen [8]byte
	rand.Read(gen[:])
	legacy := binary.BigEndian.AppendUint64(checkValue(secret.secret, legacyFormat), uint64(j.now().UnixNano()))
	err := guard(func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			recs, meta := tx.Bucket(bucketRecords), tx.Bucket(bucketMeta)
			type kv struct{ k, v []byte }
			var all []kv
			err := recs.ForEach(func(k, v []byte) error {
				r, err := decodeValue(secret, k, v)
				if err != nil {
					return err
				}
				nv, err := encodeValue(newKey, k, &r)
				all = append(all, kv{bytes.Clone(k), nv})
				return err
			})
			if err != nil {
				return err
			}
			for _, e := range all {
				if err := recs.Put(e.k, e.v); err != nil {
					return err
				}
			}
			for _, e := range []kv{
				{metaFormat, []byte(format)},
				{metaCheck, checkValue(key, format)},
				{metaWAL, walMeta(key, binary.BigEndian.Uint64(gen[:])>>1, w.size)},
				{metaLegacy, sealMeta(key, metaLegacy, legacy)},
			} {
				if err := meta.Put(e.k, e.v); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return &Problem{Reason: fmt.Sprintf("the journal %s cannot be migrated to the current format", j.path), Fix: fixReset, Cause: err}
	}
	j.key = newKey
	j.log.Info("journal migrated: its records are now keyed by its own key", "key", KeyPath(j.path))
	return nil
}

// replay applies the write-ahead log's frames of the current generation to
// the index, checking that they continue the file's records legally.
func (j *Journal) replay() *Problem {
	damaged := func(what string, err error) *Problem {
		return &Problem{Reason: fmt.Sprintf("%s %s %s", whatWAL, j.wal.path, what), Fix: fixReset, Cause: err}
	}
	end, seq, err := readWAL(j.wal.f, j.wal.size, j.key, j.wal.gen, func(e walEntry) error {
		r, err := decodeValue(j.key, e.key, e.val)
		if err != nil {
			return err
		}
		k := [keySize]byte(e.key)
		j.mu.Lock()
		old, had := j.index[k]
		j.mu.Unlock()
		switch {
		case r.State == StateReserved && had:
			return errors.New("a second reservation of one action")
		case r.State == StateSettled && !(had && old.rec.State == StateReserved && old.rec.Hash == r.Hash &&
			old.rec.Kind == r.Kind && old.rec.ReservedAt.Equal(r.ReservedAt)):
			return errors.New("an outcome without its reservation")
		}
		j.put(k, entry{rec: r, size: int64(len(e.key) + len(e.val))})
		j.written[k] = bytes.Clone(e.val)
		return nil
	})
	switch {
	case errors.Is(err, errMAC):
		return damaged("was changed outside the broker: a record failed its integrity check", err)
	case errors.Is(err, errWALDamaged):
		return damaged("is damaged: a frame before its end failed its integrity check", err)
	case err != nil:
		return damaged("holds a record that is not legal", err)
	}
	if seq > 0 { // a crash: the checkpoint that follows writes them to the database
		j.log.Info("journal log replayed", "frames", seq, "bytes", end)
	}
	return nil
}

// put sets the index entry of k, keeping the counters.
func (j *Journal) put(k [keySize]byte, e entry) {
	j.mu.Lock()
	j.putLocked(k, e)
	j.mu.Unlock()
}

func (j *Journal) putLocked(k [keySize]byte, e entry) {
	j.removeLocked(k)
	j.index[k] = e
	j.entries++
	j.bytes += e.size
	if e.rec.State == StateReserved {
		j.reserved++
	}
}

func (j *Journal) removeLocked(k [keySize]byte) {
	old, ok := j.index[k]
	if !ok {
		return
	}
	delete(j.index, k)
	j.entries--
	j.bytes -= old.size
	if old.rec.State == StateReserved {
		j.reserved--
	}
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
	return Status{Path: j.path, Entries: j.entries, Reserved: j.reserved, Bytes: j.bytes, Problem: j.problem, Notice: j.notice}
}

// poison makes the journal unavailable after a failed read or write: after
// a failed fsync nothing on disk can be trusted until the file is opened
// and verified again. It returns the error for the caller.
func (j *Journal) poison(op string, err error) error {
	p := &Problem{Reason: fmt.Sprintf("%s failed, so the journal %s cannot be trusted", op, j.path), Fix: fixRestart, Cause: err}
	fault, isFault := errors.AsType[*faultError](err)
	switch {
	case isDiskFull(err):
		p.Reason, p.Fix = fmt.Sprintf("the disk is full: %s failed on the journal %s", op, j.path), fixDisk
	case errors.Is(err, syscall.EIO):
		p.Reason = fmt.Sprintf("the disk reported an I/O error: %s failed on the journal %s", op, j.path)
	case errors.Is(err, syscall.EROFS):
		p.Reason = fmt.Sprintf("the file system of the journal %s is read-only: %s failed", j.path, op)
	case errors.Is(err, berrors.ErrDatabaseNotOpen), errors.Is(err, os.ErrClosed):
		p.Reason = fmt.Sprintf("the journal %s is closed: %s failed", j.path, op)
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

// findLocked returns the index entry of the action k, whose database key
// under the journal's key is key: there, or under the auth token of a
// migration while its records can be found.
func (j *Journal) findLocked(k Key, key []byte) (entry, bool) {
	if e, ok := j.index[[keySize]byte(key)]; ok {
		return e, true
	}
	if j.legacy != nil {
		e, ok := j.index[[keySize]byte(dbKey(j.legacy, k))]
		return e, ok
	}
	return entry{}, false
}

// Lookup returns the record of k, or (nil, nil) if there is none. An
// existing record means the request is a retry: a StateReserved record
// says the action may have been dispatched before a crash. It reads memory
// only: the journal keeps an index of its records.
func (j *Journal) Lookup(k Key) (*Record, error) {
	if p := j.state(); p != nil {
		return nil, unavailable(p)
	}
	if err := j.validKey(k); err != nil {
		return nil, err
	}
	key := dbKey(j.key, k)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.problem != nil { // closed meanwhile
		return nil, unavailable(j.problem)
	}
	e, ok := j.findLocked(k, key)
	if !ok {
		return nil, nil
	}
	return &e.rec, nil
}

// Reserve durably records the intent to dispatch the action k with payload
// hash and kind, before it is dispatched. It returns nil only after the
// record is in the write-ahead log and the log is synced; on any error
// nothing may be dispatched. Concurrent calls share one sync.
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
	key := dbKey(j.key, k)
	rec := Record{Hash: hash, Kind: kind, State: StateReserved, Dispatch: DispatchUnknown, ReservedAt: j.now()}
	val, err := encodeValue(j.key, key, &rec)
	if err != nil {
		return internalf("encode: %v", err)
	}
	size := int64(len(key) + len(val))
	for compacted := false; ; compacted = true {
		j.mu.Lock()
		if j.problem != nil {
			j.mu.Unlock()
			return unavailable(j.problem)
		}
		// The check and the insertion are one step under mu, so of two
		// concurrent reservations of one action exactly one is recorded.
		if old, ok := j.findLocked(k, key); ok {
			j.mu.Unlock()
			if old.rec.Hash != hash {
				return wire.Err(wire.CodeRequestIDConflict)
			}
			return &DuplicateError{Record: old.rec}
		}
		if !j.fullLocked(size) {
			j.putLocked([keySize]byte(key), entry{rec: rec, size: size})
			j.mu.Unlock()
			break
		}
		j.mu.Unlock()
		if compacted {
			return wire.Err(wire.CodeJournalFull)
		}
		if _, err := j.Compact(); err != nil {
			return err
		}
	}
	// Until the write is synced, a Lookup already sees the reservation:
	// "it may have been dispatched", which is true of it too.
	return j.write(walEntry{key: key, val: val}, true, "recording an action")
}

// settleGrowth bounds how much Settle grows a record: dispatch "unknown"
// becomes at most "notDispatched" (+6), plus ,"outcome":"cancelled" (22)
// and ,"settledAt":<19 digits> (32). Reserve counts it for every reserved
// record, so that Settle never takes the records past MaxBytes and never
// fails for space.
const settleGrowth = 64

// fullLocked reports whether a new record of size bytes would exceed a
// limit. j.mu is held.
func (j *Journal) fullLocked(size int64) bool {
	pending := int64(j.reserved+1) * settleGrowth
	return j.entries >= j.opts.MaxEntries || j.bytes+size+pending > j.opts.MaxBytes
}

// Settle records the outcome of the action k, which must have a
// StateReserved record (else INTERNAL_ERROR). outcome is one of the
// Outcome constants and dispatch one of notDispatched, dispatched,
// observed. It returns once the outcome is written to the write-ahead
// log, without waiting for a sync: a SIGKILL cannot lose it, and a power
// failure can only leave the record reserved ("it may have been
// dispatched"), which stays true. Lookup sees the outcome at once. If
// Settle fails the outcome is not recorded and the runtime must report it
// as unknown; a failed write makes the journal unavailable.
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
	key := dbKey(j.key, k)
	ik := [keySize]byte(key)
	j.mu.Lock()
	old, ok := j.index[ik]
	j.mu.Unlock()
	if !ok || old.rec.State != StateReserved {
		return internalf("settle without a reservation")
	}
	rec := old.rec
	rec.State, rec.Outcome, rec.Dispatch, rec.SettledAt = StateSettled, outcome, dispatch, j.now()
	val, err := encodeValue(j.key, key, &rec)
	if err != nil {
		return internalf("encode: %v", err)
	}
	j.mu.Lock()
	if j.problem != nil {
		j.mu.Unlock()
		return unavailable(j.problem)
	}
	if cur, ok := j.index[ik]; !ok || cur.rec != old.rec { // settled or compacted meanwhile
		j.mu.Unlock()
		return internalf("settle without a reservation")
	}
	j.putLocked(ik, entry{rec: rec, size: int64(len(key) + len(val))})
	j.mu.Unlock()
	return j.write(walEntry{key: key, val: val}, false, "recording an outcome")
}

func (j *Journal) now() time.Time { return time.Unix(0, j.opts.Now().UnixNano()).UTC() }

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
