package userdb

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/dsh-browser/broker/internal/failpoint"
	"github.com/dsh-browser/broker/internal/fileinfo"
)

// Options tune a DB. The zero value gives the spec's values.
type Options struct {
	// MaxBytes caps the file (default and upper bound: [MaxBytes]). Tests
	// lower it to reach the cap quickly.
	MaxBytes int64
	// Now is the clock (time.Now).
	Now func() time.Time
}

// DB is an open user database. Its methods are safe for concurrent use;
// they serialise on the one SQLite connection to the file.
type DB struct {
	path string
	opts Options
	lock *os.File // our own O_NOFOLLOW handle, flocked while open

	sqldb *sql.DB
	apps  appLocks // one app's runtime at a time (see Materialise)
	// generation counts imports: a runtime materialised before one must
	// not write its stale copy back over the imported data.
	generation atomic.Uint64

	// mu guards conn and closed, and is held for the whole of every use of
	// conn: the connection is shared and has per-connection state (ATTACH).
	mu     sync.Mutex
	conn   *sql.Conn
	closed bool
}

var (
	sqliteMagic  = []byte("SQLite format 3\x00")
	snugencMagic = []byte("SNUGENC1\n")
)

// Open opens the user database at path (normally STATE/user.snug), creating
// it when absent. It checks the file rules first: the directory is a real
// directory of ours that nobody else can write, and the file, if present, is
// a regular file (never a symbolic link), ours, private (no group or other
// bits) and has exactly one link ([ErrUnsafeFile] otherwise). It holds an
// exclusive lock on the file while open ([ErrInUse] if another process has
// it).
//
// Then, by the file's leading bytes: SNUGENC1 gives [ErrProtected] and the
// file is untouched; bytes that are not SQLite (or SQLite that cannot be
// read) are copied to a quarantine file and give a [*CorruptError], the
// original left in place. A file stamped newer than [SchemaVersion] gives an
// [*UnsupportedError] and is not written to. An older file is migrated
// forward in one transaction (and only then are the legacy three-segment
// auth: keys wiped). A current file missing hub tables is healed; a healthy
// one is not written to at all.
func Open(path string, opts Options) (*DB, error) {
	if opts.MaxBytes <= 0 || opts.MaxBytes > MaxBytes {
		opts.MaxBytes = MaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	path = filepath.Clean(path)
	lock, err := openChecked(path)
	if err != nil {
		return nil, err
	}
	db := &DB{path: path, opts: opts, lock: lock}
	err = db.open()
	if isNotADatabase(err) {
		err = db.quarantine()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// OpenFresh is the explicit choice to start over after Open reported a
// [*CorruptError]: it makes sure the quarantine copy exists, removes the
// corrupt file and opens a new, empty database in its place. For any other
// file it behaves as Open (it never replaces a database it can read, a
// protected file or a newer one).
func OpenFresh(path string, opts Options) (*DB, error) {
	db, err := Open(path, opts)
	ce, ok := errors.AsType[*CorruptError](err)
	if !ok {
		return db, err
	}
	if _, err := os.Lstat(ce.Quarantine); err != nil {
		return nil, fmt.Errorf("userdb: the quarantine copy %s is missing, not replacing %s: %w", ce.Quarantine, path, err)
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("userdb: remove the corrupt file: %w", err)
	}
	return Open(path, opts)
}

// openChecked applies the file rules and returns our locked handle on the
// file, creating an empty one (0600) when absent.
func openChecked(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	di, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("userdb: state directory: %w", err)
	}
	if di.Mode()&fs.ModeSymlink != 0 || !di.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (symbolic links are refused)", ErrUnsafeFile, dir)
	}
	if uid, _, ok := fileinfo.Owner(di); !ok || uid != os.Getuid() {
		return nil, fmt.Errorf("%w: %s is not owned by you", ErrUnsafeFile, dir)
	}
	if di.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o: other users could replace the file (chmod 700 %s)", ErrUnsafeFile, dir, di.Mode().Perm(), dir)
	}
	const flags = os.O_RDWR | syscall.O_NOFOLLOW | syscall.O_CLOEXEC | syscall.O_NONBLOCK
	f, err := os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, flags, 0)
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link", ErrUnsafeFile, path)
	}
	if err != nil {
		return nil, fmt.Errorf("userdb: open %s: %w", path, err)
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := checkFile(path, fi); err != nil {
		return fail(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fail(fmt.Errorf("%w (%s)", ErrInUse, path))
		}
		return fail(fmt.Errorf("userdb: lock %s: %w", path, err))
	}
	return f, nil
}

// checkFile is the rule for the file itself: regular, ours, private, one
// link.
func checkFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafeFile, path)
	}
	uid, links, ok := fileinfo.Owner(fi)
	switch {
	case !ok || uid != os.Getuid():
		return fmt.Errorf("%w: %s is not owned by you", ErrUnsafeFile, path)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%w: %s has mode %04o: other users could read it (chmod 600 %s)", ErrUnsafeFile, path, fi.Mode().Perm(), path)
	case links != 1:
		return fmt.Errorf("%w: %s has %d hard links", ErrUnsafeFile, path, links)
	}
	return nil
}

func (db *DB) open() error {
	head := make([]byte, len(sqliteMagic))
	n, err := db.lock.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("userdb: read %s: %w", db.path, err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, snugencMagic):
		return fmt.Errorf("%w (%s)", ErrProtected, db.path)
	case n > 0 && !bytes.Equal(head, sqliteMagic):
		return db.quarantine()
	}

	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: db.path}).String() + "?_defensive=1"
	db.sqldb, err = sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	db.sqldb.SetMaxOpenConns(1)
	ctx := context.Background()
	if db.conn, err = db.sqldb.Conn(ctx); err != nil {
		return err
	}
	// The file's identity, checked again now that SQLite has it open.
	if err := sameFile(db.path, db.lock); err != nil {
		return err
	}
	for _, p := range []string{
		"PRAGMA synchronous = FULL",      // a commit is on disk when it returns
		"PRAGMA foreign_keys = OFF",      // app DDL at rest may name absent parents
		"PRAGMA secure_delete = ON",      // removed secrets and app rows leave no bytes behind
		"PRAGMA legacy_alter_table = ON", // a rename is a pure name swap (see writeBack)
		"PRAGMA trusted_schema = OFF",
	} {
		if _, err := db.conn.ExecContext(ctx, p); err != nil {
			return err
		}
	}
	var version int
	if err := db.conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	switch {
	case version > SchemaVersion:
		return &UnsupportedError{Found: version}
	case version < SchemaVersion:
		return db.migrateWrite(ctx, func(c *sql.Conn) error { return migrate(ctx, c, version) })
	}
	heal, err := needsHeal(ctx, db.conn)
	if err != nil || !heal {
		return err
	}
	return db.migrateWrite(ctx, func(c *sql.Conn) error {
		if err := replayDDL(ctx, c); err != nil {
			return err
		}
		return addColumnIfMissing(ctx, c, "snug_app_versions", "runtime_contract_json", "TEXT")
	})
}

// migrateWrite runs a migration or heal, plus the snug_meta seed, in one
// transaction. It is not held to the size cap: a file must stay openable.
func (db *DB) migrateWrite(ctx context.Context, fn func(*sql.Conn) error) error {
	return db.tx(ctx, false, func(c *sql.Conn) error {
		if err := fn(c); err != nil {
			return err
		}
		now := timestamp(db.opts.Now())
		_, err := c.ExecContext(ctx, `INSERT OR IGNORE INTO snug_meta (key, value) VALUES ('db_id', ?), ('created_at', ?)`, newUUID(), now)
		return err
	})
}

// isNotADatabase reports whether SQLite found the file not to be a
// database, or damaged, while Open read it.
func isNotADatabase(err error) bool {
	se, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return true
	}
	return false
}

func sameFile(path string, f *os.File) error {
	a, err := os.Lstat(path)
	if err != nil {
		return err
	}
	b, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(a, b) {
		return fmt.Errorf("%w: %s changed while it was opened", ErrUnsafeFile, path)
	}
	return nil
}

// quarantine copies the file's bytes to path.corrupt-<hash> (0600, synced)
// and returns the CorruptError. The name comes from the content, so opening
// the same corrupt file again makes no second copy.
func (db *DB) quarantine() error {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(db.lock, 0, 1<<62)); err != nil {
		return fmt.Errorf("userdb: read %s: %w", db.path, err)
	}
	to := db.path + ".corrupt-" + hex.EncodeToString(h.Sum(nil))[:16]
	if _, err := os.Lstat(to); err == nil {
		return &CorruptError{Path: db.path, Quarantine: to}
	}
	tmp := fmt.Sprintf("%s.tmp-%s", to, randomHex(8))
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("userdb: quarantine %s: %w", db.path, err)
	}
	_, err = io.Copy(out, io.NewSectionReader(db.lock, 0, 1<<62))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, to)
	}
	if err == nil {
		err = syncDir(filepath.Dir(db.path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("userdb: quarantine %s: %w", db.path, err)
	}
	return &CorruptError{Path: db.path, Quarantine: to}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes the database and releases the file lock. Calls after the
// first return nil; other methods then fail with [ErrClosed].
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	var err error
	if db.conn != nil {
		err = db.conn.Close()
	}
	if db.sqldb != nil {
		err = errors.Join(err, db.sqldb.Close())
	}
	// Only now: closing our handle any earlier would drop SQLite's POSIX
	// locks on the same file.
	if db.lock != nil {
		err = errors.Join(err, db.lock.Close())
	}
	return err
}

// Path returns the file's path.
func (db *DB) Path() string { return db.path }

// with runs fn with the connection, holding mu.
func (db *DB) with(fn func(c *sql.Conn) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	return fn(db.conn)
}

// write runs fn in one IMMEDIATE transaction held to the size cap: if the
// file would end larger than Options.MaxBytes, everything fn did is rolled
// back and the error matches [ErrTooLarge].
func (db *DB) write(ctx context.Context, fn func(c *sql.Conn) error) error {
	return db.with(func(c *sql.Conn) error { return db.tx(ctx, true, fn) })
}

// tx is write without taking mu (the caller holds it).
func (db *DB) tx(ctx context.Context, capped bool, fn func(c *sql.Conn) error) (err error) {
	c := db.conn
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// The context may be what failed; the rollback must still run.
			if _, rerr := c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	if err := fn(c); err != nil {
		return err
	}
	if capped {
		var size int64
		if err := c.QueryRowContext(ctx, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()").Scan(&size); err != nil {
			return err
		}
		if size > db.opts.MaxBytes {
			return errorf(ErrTooLarge, "the write would make the file %d bytes; the cap is %d", size, db.opts.MaxBytes)
		}
	}
	failpoint.Hit("userdb-before-commit")
	_, err = c.ExecContext(ctx, "COMMIT")
	return err
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func parseTimestamp(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// newUUID returns a random (version 4) UUID in lower case.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
