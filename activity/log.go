package activity

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of [Options].
const (
	DefaultMaxEntries = 10_000
	DefaultMaxAge     = 7 * 24 * time.Hour
	// FileName is the log's name in the state directory.
	FileName = "activity.log"
	// CompactInterval is how often [Log.Run] drops entries past MaxAge.
	CompactInterval = time.Hour
	// MaxQuery bounds the entries one [Log.Query] returns.
	MaxQuery = 500
)

// errUnavailable: the log's file is not in use (see Status).
var errUnavailable = errors.New("activity: the log file is unavailable")

// Options tune a Log. The zero value gives the defaults.
type Options struct {
	MaxEntries int           // entries kept (DefaultMaxEntries)
	MaxAge     time.Duration // age past which an entry is dropped (DefaultMaxAge)
	Now        func() time.Time
	Logger     *slog.Logger
	// OnChange is called after an entry begins or ends, without the log's
	// lock held; it must not block.
	OnChange func()
}

// Log is the activity log. Its methods are safe for concurrent use; Begin
// waits for the disk, sharing one fdatasync with the Begins written
// meanwhile.
type Log struct {
	path  string
	opts  Options
	log   *slog.Logger
	epoch string

	// mu guards everything below and is held across file writes. Lock
	// order: mu is a leaf (OnChange runs after it is released).
	mu      sync.Mutex
	f       *os.File // nil while the log is unavailable
	problem *Problem
	aside   string   // where a damaged file was moved when the log was opened
	entries []*Entry // by ID, ascending
	byID    map[uint64]*Entry
	nextID  uint64
	rev     uint64
	lines   int // records in the file

	// smu guards the sync state; scond signals a sync's end. written
	// changes under both mu and smu. Lock order: mu, then smu; a sync
	// holds neither while it runs.
	smu     sync.Mutex
	scond   *sync.Cond
	syncing bool     // a sync is in progress
	sf      *os.File // the file a sync flushes: f, or nil
	written uint64   // records appended since Open
	durable uint64   // of those, how many are on disk
	syncs   int      // fdatasyncs done, for tests
}

// Status is the log's state for the console and `broker status`.
type Status struct {
	Path    string   `json:"path"`
	Entries int      `json:"entries"`
	Running int      `json:"running"`
	Problem *Problem `json:"problem,omitempty"`
	// MovedAside names where a damaged log was moved when the broker
	// started (its valid entries were kept).
	MovedAside string `json:"movedAside,omitempty"`
}

// Open opens the log at path, creating it if it does not exist. It never
// returns nil: when the file cannot be used the log keeps this broker
// run's entries in memory only, and [Log.Status] says why.
func Open(path string, opts Options) *Log {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	b := make([]byte, 8)
	rand.Read(b)
	l := &Log{path: path, opts: opts, log: opts.Logger.With("activity_log", path), epoch: hex.EncodeToString(b),
		byID: make(map[uint64]*Entry), nextID: 1}
	l.scond = sync.NewCond(&l.smu)
	if p := l.open(); p != nil {
		l.problem = p
		l.log.Error("activity log unavailable: agents' actions are shown for this run only", "reason", p.Reason, "fix", p.Fix, "err", p.Cause)
	}
	return l
}

func (l *Log) open() *Problem {
	dir := filepath.Dir(l.path)
	if p := checkDir(dir); p != nil {
		return p
	}
	if stale, _ := filepath.Glob(filepath.Join(dir, tempPattern(l.path))); len(stale) > 0 {
		for _, s := range stale {
			os.Remove(s) // a rewrite a crash cut short; the real file is intact
		}
	}
	before, err := os.Lstat(l.path)
	create := errors.Is(err, fs.ErrNotExist)
	if err != nil && !create {
		return openProblem(l.path, err)
	}
	if !create {
		if p := checkFile(l.path, before); p != nil {
			return p
		}
	}
	f, p := openChecked(l.path, os.O_RDWR|os.O_APPEND, create)
	if p != nil {
		return p
	}
	if !create {
		if after, err := f.Stat(); err != nil || !os.SameFile(before, after) {
			f.Close()
			return &Problem{Reason: fmt.Sprintf("the activity log %s changed while it was opened", l.path), Fix: fixRestart}
		}
	}
	l.use(f)
	fold, err := foldRecords(f)
	if err != nil {
		return l.fail("reading", err)
	}
	if fold.torn >= 0 {
		// A write cut short by a crash: drop the torn last line.
		if err := f.Truncate(fold.torn); err != nil {
			return l.fail("dropping a torn last line", err)
		}
		l.log.Warn("dropped a torn last line (a write cut short by a crash)")
	}
	for _, e := range fold.entries {
		l.rev++
		e.Rev = l.rev
		l.entries = append(l.entries, e)
		l.byID[e.ID] = e
		l.nextID = max(l.nextID, e.ID+1)
	}
	l.lines = fold.lines
	if create {
		if err := syncDir(dir); err != nil {
			return l.fail("creating", err)
		}
	}
	rewrite := fold.bad > 0 || l.trim() > 0 || l.lines > 2*len(l.entries)
	if fold.bad > 0 {
		if err := l.moveAside(fold.bad); err != nil {
			return l.fail("moving a damaged file aside", err)
		}
	}
	// Whatever was running when the broker stopped has no outcome: say so
	// once, for good.
	now := l.opts.Now()
	for _, e := range l.entries {
		if e.State == StateRunning {
			r := &record{V: 1, Rec: recInterrupted, ID: e.ID, At: max(now.UnixMilli(), e.Time.UnixMilli())}
			e.apply(r)
			if !rewrite {
				if err := l.append(r); err != nil {
					return l.problem
				}
			}
		}
	}
	if rewrite {
		if err := l.rewrite(); err != nil {
			return l.problem
		}
	}
	return nil
}

// moveAside renames a damaged file (lines that are not ours) out of the
// way, keeping it for inspection; the rewrite that follows keeps its valid
// entries under the real name.
func (l *Log) moveAside(bad int) error {
	base := l.path + ".broken-" + l.opts.Now().UTC().Format("20060102T150405Z")
	to := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(l.path, to); err != nil {
		return err
	}
	l.aside = to
	l.log.Warn("the activity log held lines the broker did not write: moved it aside and kept its valid entries",
		"damaged_lines", bad, "moved_to", to)
	return nil
}

// fail makes the log unavailable (its entries stay in memory) and returns
// the problem.
func (l *Log) fail(op string, err error) *Problem {
	p := &Problem{Reason: fmt.Sprintf("%s the activity log %s failed", op, l.path), Fix: fixRestart, Cause: err}
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		p.Reason, p.Fix = fmt.Sprintf("the disk is full: %s the activity log %s failed", op, l.path), fixDisk
	}
	if l.problem == nil {
		l.problem = p
		if l.f != nil {
			l.log.Error("activity log unavailable: agents' actions are shown for this run only", "reason", p.Reason, "fix", p.Fix, "err", err)
		}
	}
	if old := l.f; old != nil {
		l.use(nil)
		old.Close()
	}
	return l.problem
}

// use makes f the log's file, once no sync is running on the one before,
// and counts every record written so far as durable: f holds them synced
// (a rewrite), or there is no file to wait for. The caller holds mu, or
// the log is not shared yet.
func (l *Log) use(f *os.File) {
	l.smu.Lock()
	for l.syncing {
		l.scond.Wait()
	}
	l.f, l.sf = f, f
	l.durable = l.written
	l.smu.Unlock()
}

// append writes one record, without a sync. The caller holds mu.
func (l *Log) append(r *record) error {
	if l.f == nil {
		return errUnavailable
	}
	line, err := marshalRecord(r)
	if err != nil {
		return err // a programming error: the record was built invalid
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return l.fail("writing", err)
	}
	l.lines++
	l.smu.Lock()
	l.written++
	l.smu.Unlock()
	return nil
}

// syncThrough returns once the first n records written are on disk:
// synced by a sync that started after the nth was written. A Begin waits
// for the sync in progress, if any, and then, unless that one covered its
// record, starts the next, which covers every record written until it
// starts; so concurrent Begins share syncs, with no timer and no delay
// for a lone writer (the journal's group commit). A failed sync makes the
// log unavailable.
func (l *Log) syncThrough(n uint64) {
	l.smu.Lock()
	defer l.smu.Unlock()
	for l.durable < n && l.sf != nil {
		if l.syncing {
			l.scond.Wait()
			continue
		}
		l.syncing = true
		f, target := l.sf, l.written
		l.smu.Unlock()
		err := unix.Fdatasync(int(f.Fd()))
		l.smu.Lock()
		l.syncing = false
		l.scond.Broadcast()
		if err != nil {
			l.smu.Unlock()
			l.mu.Lock()
			if l.f == f {
				l.fail("syncing", err)
			}
			l.mu.Unlock()
			l.smu.Lock()
			return
		}
		l.syncs++
		l.durable = max(l.durable, target)
	}
}

// Begin records that an agent asked for an action, durably (the record is
// synced before Begin returns), and returns the entry's ID for [Log.End].
// On an unavailable log the entry is kept in memory only.
func (l *Log) Begin(a Action) uint64 {
	id, n := l.begin(a)
	l.syncThrough(n)
	return id
}

// BeginSyncing is Begin for an action whose intent the caller is about to
// sync elsewhere (the journal's): it returns once the record is written,
// with a channel closed once the record is synced (or the log became
// unavailable), so that the two syncs overlap. The caller waits for the
// channel before it dispatches the action: every action that may have
// happened is then in the log on disk.
func (l *Log) BeginSyncing(a Action) (uint64, <-chan struct{}) {
	id, n := l.begin(a)
	synced := make(chan struct{})
	go func() {
		l.syncThrough(n)
		close(synced)
	}()
	return id, synced
}

// BeginUnsynced is Begin for an action the journal will not hold (its
// fence is in memory only): the record is written, so it outlives a crash
// of the broker, but Begin does not wait for the disk; a crash of the
// machine may lose it, as it loses the fence. The next sync, or the
// file's writeback, takes it to disk.
func (l *Log) BeginUnsynced(a Action) uint64 {
	id, _ := l.begin(a)
	return id
}

// begin writes an entry's begin record and returns its ID and its place
// in the file's records, for syncThrough.
func (l *Log) begin(a Action) (id, n uint64) {
	l.mu.Lock()
	id = l.nextID
	l.nextID++
	r := beginRecord(id, l.opts.Now(), a)
	l.append(r)
	n = l.written
	e := entryOf(r)
	l.rev++
	e.Rev = l.rev
	l.entries = append(l.entries, e)
	l.byID[id] = e
	l.bound()
	l.mu.Unlock()
	l.opts.OnChange()
	return id, n
}

// End records an action's outcome: outcome succeeded, failed, cancelled or
// unknown; dispatch notDispatched, dispatched or observed; code the
// refusal or error code, or "". Ending an unknown or ended entry does
// nothing. It returns an error only for values outside that vocabulary.
func (l *Log) End(id uint64, outcome, dispatch, code string) error {
	if !oneOf(outcome, outcomes) || !oneOf(dispatch, dispatches) || !token(code, false) {
		return fmt.Errorf("activity: cannot end entry %d with outcome %q, dispatch %q, code %q", id, outcome, dispatch, code)
	}
	l.mu.Lock()
	e := l.byID[id]
	if e == nil || e.State != StateRunning {
		l.mu.Unlock()
		return nil
	}
	r := &record{V: 1, Rec: recEnd, ID: id, At: max(l.opts.Now().UnixMilli(), e.Time.UnixMilli()), Outcome: outcome, Dispatch: dispatch, Code: code}
	l.append(r) // not synced: a lost end reads as interrupted, never as more than the journal knows
	e.apply(r)
	l.rev++
	e.Rev = l.rev
	l.bound()
	l.mu.Unlock()
	l.opts.OnChange()
	return nil
}

// bound applies the count bound after a change, and rewrites the file once
// it holds four times as many records as the bound allows entries. The
// caller holds mu.
func (l *Log) bound() {
	l.trim()
	if l.f != nil && l.lines >= 4*l.opts.MaxEntries {
		l.rewrite()
	}
}

// trim drops finished entries past MaxAge, then the oldest finished ones
// past MaxEntries, and returns how many it dropped. Running entries are
// never dropped. The caller holds mu.
func (l *Log) trim() int {
	now := l.opts.Now()
	if len(l.entries) <= l.opts.MaxEntries && (len(l.entries) == 0 || now.Sub(l.entries[0].Time) <= l.opts.MaxAge) {
		return 0 // the oldest entry is the first: nothing to drop
	}
	excess := len(l.entries) - l.opts.MaxEntries
	kept := l.entries[:0]
	dropped := 0
	for _, e := range l.entries {
		old := now.Sub(e.Time) > l.opts.MaxAge
		if e.State != StateRunning && (old || excess > 0) {
			delete(l.byID, e.ID)
			dropped++
			excess--
			continue
		}
		kept = append(kept, e)
	}
	clear(l.entries[len(kept):]) // let the dropped entries go
	l.entries = kept
	return dropped
}

// rewrite replaces the file by one holding exactly the kept entries: a
// temporary file in the same directory, synced, renamed into place, its
// directory synced. A crash at any point leaves either file whole under
// the real name. The caller holds mu.
func (l *Log) rewrite() error {
	dir := filepath.Dir(l.path)
	tmp, err := os.CreateTemp(dir, tempPattern(l.path)) // mode 0600, O_EXCL
	if err != nil {
		return l.fail("rewriting", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	w := bufio.NewWriter(tmp)
	lines := 0
	for _, e := range l.entries {
		for _, r := range e.records() {
			line, err := marshalRecord(r)
			if err != nil {
				tmp.Close()
				return l.fail("rewriting", err)
			}
			w.Write(line)
			w.WriteByte('\n')
			lines++
		}
	}
	err = w.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), l.path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return l.fail("rewriting", err)
	}
	f, p := openChecked(l.path, os.O_RDWR|os.O_APPEND, false)
	if p != nil {
		l.fail("reopening", p)
		return p
	}
	old := l.f
	l.use(f) // every record is in f, synced
	l.lines = lines
	if old != nil {
		old.Close()
	}
	return nil
}

// Run drops entries past MaxAge every [CompactInterval] until ctx ends.
func (l *Log) Run(ctx context.Context) {
	t := time.NewTicker(CompactInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Compact()
		}
	}
}

// Compact drops entries past the bounds and, if it dropped any, rewrites
// the file without them.
func (l *Log) Compact() {
	l.mu.Lock()
	dropped := l.trim()
	if dropped > 0 && l.f != nil {
		l.rewrite()
	}
	l.mu.Unlock()
	if dropped > 0 {
		l.opts.OnChange()
	}
}

// Close closes the file. Entries stay readable in memory; later Begin and
// End calls are kept in memory only.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	old := l.f
	l.use(nil)
	err := old.Close()
	if l.problem == nil {
		l.problem = &Problem{Reason: "the activity log is closed", Fix: fixRestart}
	}
	return err
}

// Status reports the log.
func (l *Log) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	running := 0
	for _, e := range l.entries {
		if e.State == StateRunning {
			running++
		}
	}
	return Status{Path: l.path, Entries: len(l.entries), Running: running, Problem: l.problem, MovedAside: l.aside}
}

// Query selects entries, newest first.
type Query struct {
	Agent  string // only this agent's (its exact label)
	Conn   uint64 // only this connection's (in this broker run)
	Tab    string // only this tab's (its handle)
	Origin string // only on this origin
	// Since returns only entries changed after this revision of the same
	// Epoch (live updates); 0 returns all.
	Since uint64
	// Before returns only entries with a smaller ID (paging back); 0 is no
	// bound.
	Before uint64
	// Limit bounds the entries returned: 1..MaxQuery, default 100.
	Limit int
}

// Page is the answer to a [Query].
type Page struct {
	// Epoch names this opening of the log: revisions of another epoch mean
	// nothing here (the broker restarted), so the reader starts again.
	Epoch   string  `json:"epoch"`
	Rev     uint64  `json:"rev"` // the log's revision when answered
	Entries []Entry `json:"entries"`
	More    bool    `json:"more"` // more entries match past Limit
}

// Query returns the entries matching q, newest first.
func (l *Log) Query(q Query) Page {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, MaxQuery)
	l.mu.Lock()
	defer l.mu.Unlock()
	p := Page{Epoch: l.epoch, Rev: l.rev, Entries: []Entry{}}
	for i := len(l.entries) - 1; i >= 0; i-- {
		e := l.entries[i]
		if (q.Agent != "" && e.Agent != q.Agent) || (q.Conn != 0 && e.Conn != q.Conn) || (q.Tab != "" && e.Tab != q.Tab) ||
			(q.Origin != "" && e.Origin != q.Origin) || e.Rev <= q.Since || (q.Before != 0 && e.ID >= q.Before) {
			continue
		}
		if len(p.Entries) == limit {
			p.More = true
			break
		}
		p.Entries = append(p.Entries, *e)
	}
	return p
}

// folded is what reading a file gave.
type folded struct {
	entries []*Entry // by ID
	lines   int      // complete lines
	bad     int      // lines that are not valid records, or do not fit
	torn    int64    // offset of a last line without its newline, or -1
}

// foldRecords reads records from r (from its start) and folds them into
// entries. A begin whose ID was seen, or an end for an entry that is not
// running, counts as bad.
func foldRecords(r io.Reader) (*folded, error) {
	out := &folded{torn: -1}
	byID := make(map[uint64]*Entry)
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	for {
		line, err := br.ReadSlice('\n')
		n := int64(len(line))
		long := false
		for errors.Is(err, bufio.ErrBufferFull) {
			long = true // longer than any record: consume it, it is damaged
			line, err = br.ReadSlice('\n')
			n += int64(len(line))
		}
		if err == io.EOF {
			if n > 0 {
				out.torn = off
			}
			break
		}
		if err != nil {
			return nil, err
		}
		off += n
		out.lines++
		if long {
			out.bad++
			continue
		}
		rec, perr := parseRecord(line[:len(line)-1])
		if perr != nil || !foldOne(byID, &out.entries, rec) {
			out.bad++
		}
	}
	return out, nil
}

// foldOne applies one record; it reports false when the record does not fit
// what came before.
func foldOne(byID map[uint64]*Entry, entries *[]*Entry, r *record) bool {
	switch r.Rec {
	case recBegin:
		if byID[r.ID] != nil || (len(*entries) > 0 && r.ID <= (*entries)[len(*entries)-1].ID) {
			return false
		}
		e := entryOf(r)
		byID[r.ID] = e
		*entries = append(*entries, e)
	default:
		e := byID[r.ID]
		if e == nil || e.State != StateRunning {
			return false
		}
		e.apply(r)
	}
	return true
}
