package activity_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/activity"
)

// clock is a settable clock for the bounds.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)} }

// mustLog opens a log in a fresh private directory and closes it at the
// end of the test.
func mustLog(t *testing.T, opts activity.Options) (*activity.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), activity.FileName)
	l := activity.Open(path, opts)
	t.Cleanup(func() { l.Close() })
	if st := l.Status(); st.Problem != nil {
		t.Fatalf("open: %v", st.Problem)
	}
	return l, path
}

func fill(agent string, n int) activity.Action {
	return activity.Action{Agent: agent, Conn: 3, Tab: "inst:12", Origin: "https://example.test", Kind: "fill",
		Step: -1, Role: "textbox", Name: "Email", TextLength: n}
}

func reopen(t *testing.T, path string, opts activity.Options) *activity.Log {
	t.Helper()
	l := activity.Open(path, opts)
	t.Cleanup(func() { l.Close() })
	if st := l.Status(); st.Problem != nil {
		t.Fatalf("reopen: %v", st.Problem)
	}
	return l
}

func all(l *activity.Log) []activity.Entry {
	return l.Query(activity.Query{Limit: activity.MaxQuery}).Entries
}

func TestBeginEndQueryAndReopen(t *testing.T) {
	c := newClock()
	changes := 0
	var mu sync.Mutex
	opts := activity.Options{Now: c.Now, OnChange: func() { mu.Lock(); changes++; mu.Unlock() }}
	l, path := mustLog(t, opts)

	a := l.Begin(fill("python3 (pid 7)", 13))
	c.Add(40 * time.Millisecond)
	if err := l.End(a, "succeeded", "observed", ""); err != nil {
		t.Fatal(err)
	}
	b := l.Begin(activity.Action{Agent: "node (pid 9)", Conn: 4, Tab: "inst:13", Origin: "https://other.test", Kind: "press", Step: 2, Role: "button", Name: "Go", TextLength: -1, Key: "Enter"})
	if err := l.End(b, "failed", "notDispatched", "STALE_TARGET"); err != nil {
		t.Fatal(err)
	}
	if err := l.End(b, "succeeded", "observed", ""); err != nil { // ending twice changes nothing
		t.Fatal(err)
	}
	if err := l.End(a, "maybe", "observed", ""); err == nil {
		t.Fatal("an outcome outside the vocabulary was accepted")
	}
	mu.Lock()
	if changes != 4 {
		t.Fatalf("OnChange called %d times, want 4", changes)
	}
	mu.Unlock()

	check := func(l *activity.Log) {
		t.Helper()
		got := all(l)
		if len(got) != 2 || got[0].ID != b || got[1].ID != a {
			t.Fatalf("entries %+v, want b then a", got)
		}
		e := got[1]
		if e.Agent != "python3 (pid 7)" || e.Conn != 3 || e.Kind != "fill" || e.Role != "textbox" || e.Name != "Email" ||
			e.TextLength == nil || *e.TextLength != 13 || e.Step != nil || e.State != activity.StateDone ||
			e.Outcome != "succeeded" || e.Dispatch != "observed" || e.EndedAt.Sub(e.Time) != 40*time.Millisecond {
			t.Fatalf("entry a %+v", e)
		}
		e = got[0]
		if e.Step == nil || *e.Step != 2 || e.Key != "Enter" || e.TextLength != nil || e.Code != "STALE_TARGET" || e.Outcome != "failed" {
			t.Fatalf("entry b %+v", e)
		}
	}
	check(l)
	l.Close()
	l2 := reopen(t, path, opts)
	check(l2)
	if id := l2.Begin(fill("x", 1)); id != b+1 {
		t.Fatalf("after reopening the next ID is %d, want %d", id, b+1)
	}

	// Filters.
	if got := l2.Query(activity.Query{Agent: "node (pid 9)"}).Entries; len(got) != 1 || got[0].ID != b {
		t.Fatalf("by agent: %+v", got)
	}
	if got := l2.Query(activity.Query{Tab: "inst:12"}).Entries; len(got) != 2 {
		t.Fatalf("by tab: %+v", got)
	}
	if got := l2.Query(activity.Query{Origin: "https://other.test"}).Entries; len(got) != 1 {
		t.Fatalf("by origin: %+v", got)
	}
	if got := l2.Query(activity.Query{Conn: 4}).Entries; len(got) != 1 {
		t.Fatalf("by conn: %+v", got)
	}
	p := l2.Query(activity.Query{Limit: 1})
	if len(p.Entries) != 1 || !p.More || p.Entries[0].ID != b+1 {
		t.Fatalf("limit 1: %+v", p)
	}
	if older := l2.Query(activity.Query{Before: b + 1}).Entries; len(older) != 2 {
		t.Fatalf("before: %+v", older)
	}
}

// TestSince: a reader that knows revision R gets only what changed after
// it — a new entry, and an entry that ended.
func TestSince(t *testing.T) {
	l, _ := mustLog(t, activity.Options{})
	a := l.Begin(fill("a", 1))
	p := l.Query(activity.Query{})
	if len(p.Entries) != 1 || p.Entries[0].State != activity.StateRunning {
		t.Fatalf("%+v", p)
	}
	b := l.Begin(fill("b", 1))
	l.End(a, "succeeded", "dispatched", "")
	q := l.Query(activity.Query{Since: p.Rev})
	if q.Epoch != p.Epoch || len(q.Entries) != 2 || q.Entries[0].ID != b || q.Entries[1].ID != a || q.Entries[1].State != activity.StateDone {
		t.Fatalf("since %d: %+v", p.Rev, q)
	}
	if r := l.Query(activity.Query{Since: q.Rev}); len(r.Entries) != 0 {
		t.Fatalf("nothing changed, got %+v", r)
	}
}

// TestNamesAreShortAndSafe: what an Action can carry is all the log
// holds; names are shortened and made safe to print.
func TestNamesAreShortAndSafe(t *testing.T) {
	l, path := mustLog(t, activity.Options{})
	long := strings.Repeat("é", 300)
	l.Begin(activity.Action{Agent: "evil\x1b[2J (pid 1)", Tab: "t", Origin: "https://x.test", Kind: "click", Step: -1,
		Role: "button", Name: "Pay \u202Eyap\u202C now\n" + long, TextLength: -1})
	e := all(l)[0]
	if strings.ContainsAny(e.Agent+e.Name, "\x1b\n\u202E\u202C") {
		t.Fatalf("control or bidi characters kept: %q %q", e.Agent, e.Name)
	}
	if n := len([]rune(e.Name)); n != activity.MaxName || !strings.HasSuffix(e.Name, "…") {
		t.Fatalf("name of %d characters %q, want %d ending in …", n, e.Name, activity.MaxName)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("\x1b")) || bytes.Contains(data, []byte("\u202E")) {
		t.Fatalf("the file holds an escape: %q", data)
	}
	// Missing identity fields read as "unknown", an unknown kind too.
	l.Begin(activity.Action{Kind: "Not a token!", Step: -1, TextLength: -1})
	if e := all(l)[0]; e.Agent != "unknown" || e.Tab != "unknown" || e.Origin != "unknown" || e.Kind != "unknown" {
		t.Fatalf("%+v", e)
	}
}

func TestInterruptedAfterRestart(t *testing.T) {
	c := newClock()
	opts := activity.Options{Now: c.Now}
	l, path := mustLog(t, opts)
	done := l.Begin(fill("a", 3))
	l.End(done, "succeeded", "observed", "")
	cut := l.Begin(fill("a", 5)) // the broker dies here
	l.Close()
	c.Add(time.Minute)
	l2 := reopen(t, path, opts)
	got := all(l2)
	if got[0].ID != cut || got[0].State != activity.StateInterrupted || got[0].Outcome != "unknown" || got[0].Dispatch != "unknown" {
		t.Fatalf("cut entry after restart: %+v", got[0])
	}
	if got[1].State != activity.StateDone {
		t.Fatalf("finished entry after restart: %+v", got[1])
	}
	// Said once, for good: another restart adds no record.
	before, _ := os.ReadFile(path)
	l2.Close()
	reopen(t, path, opts).Close()
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) || bytes.Count(after, []byte(`"rec":"interrupted"`)) != 1 {
		t.Fatalf("file changed on a second restart:\n%s\n%s", before, after)
	}
}

// TestCountBound: MaxEntries entries are kept; one more drops the oldest
// finished one, in memory and after reopening; a running entry is never
// dropped.
func TestCountBound(t *testing.T) {
	const max = 5
	opts := activity.Options{MaxEntries: max}
	l, path := mustLog(t, opts)
	running := l.Begin(fill("slow", 1))
	var ids []uint64
	for range max - 1 {
		id := l.Begin(fill("a", 1))
		l.End(id, "succeeded", "observed", "")
		ids = append(ids, id)
	}
	if n := len(all(l)); n != max {
		t.Fatalf("at the bound: %d entries, want %d", n, max)
	}
	extra := l.Begin(fill("a", 1))
	l.End(extra, "succeeded", "observed", "")
	got := all(l)
	if len(got) != max {
		t.Fatalf("past the bound: %d entries, want %d", len(got), max)
	}
	has := func(id uint64) bool {
		for _, e := range got {
			if e.ID == id {
				return true
			}
		}
		return false
	}
	if !has(running) || has(ids[0]) || !has(extra) {
		t.Fatalf("past the bound kept %+v: want the running entry and the newest, not %d", got, ids[0])
	}
	l.Close()
	if n := len(all(reopen(t, path, opts))); n != max {
		t.Fatalf("after reopening: %d entries", n)
	}
}

// TestAgeBound: an entry exactly MaxAge old is kept; one a millisecond
// older is dropped by Compact, which rewrites the file without it.
func TestAgeBound(t *testing.T) {
	c := newClock()
	opts := activity.Options{Now: c.Now, MaxAge: time.Hour}
	l, path := mustLog(t, opts)
	old := l.Begin(fill("a", 1))
	l.End(old, "succeeded", "observed", "")
	c.Add(time.Minute)
	newer := l.Begin(fill("a", 1))
	l.End(newer, "succeeded", "observed", "")
	c.Add(time.Hour - time.Minute)
	l.Compact()
	if n := len(all(l)); n != 2 {
		t.Fatalf("at MaxAge: %d entries, want 2", n)
	}
	c.Add(time.Millisecond)
	l.Compact()
	got := all(l)
	if len(got) != 1 || got[0].ID != newer {
		t.Fatalf("past MaxAge: %+v", got)
	}
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte("\n")); n != 2 {
		t.Fatalf("the file was not rewritten: %d lines\n%s", n, data)
	}
	// A running entry is kept however old.
	run := l.Begin(fill("slow", 1))
	c.Add(2 * time.Hour)
	l.Compact()
	if got := all(l); len(got) != 1 || got[0].ID != run {
		t.Fatalf("%+v", got)
	}
}

// TestRewriteKeepsTheFileBounded: the file is rewritten once it holds four
// records per allowed entry.
func TestRewriteKeepsTheFileBounded(t *testing.T) {
	const max = 10
	l, path := mustLog(t, activity.Options{MaxEntries: max})
	for i := range 200 {
		id := l.Begin(fill("a", i))
		l.End(id, "succeeded", "observed", "")
		data, _ := os.ReadFile(path)
		if n := bytes.Count(data, []byte("\n")); n >= 4*max {
			t.Fatalf("after %d entries the file has %d lines", i+1, n)
		}
	}
	if n := len(all(l)); n != max {
		t.Fatalf("%d entries", n)
	}
}

func TestTornLastLineIsDropped(t *testing.T) {
	l, path := mustLog(t, activity.Options{})
	id := l.Begin(fill("a", 1))
	l.End(id, "succeeded", "observed", "")
	l.Close()
	// A write cut short (only a power loss can do this; SIGKILL cannot
	// stop write(2) halfway): appended by hand.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"v":1,"rec":"begin","id":2,"at":17`)
	f.Close()
	l2 := reopen(t, path, activity.Options{})
	if st := l2.Status(); st.MovedAside != "" || st.Entries != 1 {
		t.Fatalf("status %+v", st)
	}
	next := l2.Begin(fill("b", 2))
	l2.End(next, "succeeded", "observed", "")
	l2.Close()
	if got := all(reopen(t, path, activity.Options{})); len(got) != 2 || got[0].Agent != "b" {
		t.Fatalf("%+v", got)
	}
}

// TestDamagedFileMovedAside: a line the broker did not write means the
// file was changed behind its back: it is kept aside, and the valid
// entries live on in a new file.
func TestDamagedFileMovedAside(t *testing.T) {
	l, path := mustLog(t, activity.Options{})
	for range 3 {
		id := l.Begin(fill("a", 1))
		l.End(id, "succeeded", "observed", "")
	}
	l.Close()
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(data, []byte("\n"))
	damaged := append(append(append([]byte{}, bytes.Join(lines[:2], nil)...), "not a record\n"...), bytes.Join(lines[2:], nil)...)
	os.WriteFile(path, damaged, 0o600)
	l2 := activity.Open(path, activity.Options{})
	defer l2.Close()
	st := l2.Status()
	if st.Problem != nil || st.MovedAside == "" || st.Entries != 3 {
		t.Fatalf("status %+v", st)
	}
	kept, err := os.ReadFile(st.MovedAside)
	if err != nil || !bytes.Equal(kept, damaged) {
		t.Fatalf("the damaged file was not kept as it was: %v", err)
	}
	now, _ := os.ReadFile(path)
	if bytes.Contains(now, []byte("not a record")) {
		t.Fatal("the damaged line is still in the log")
	}
}

func TestStaleRewriteRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "."+activity.FileName+".123.new")
	os.WriteFile(stale, []byte("half a rewrite"), 0o600)
	l := activity.Open(filepath.Join(dir, activity.FileName), activity.Options{})
	defer l.Close()
	if _, err := os.Lstat(stale); err == nil {
		t.Fatal("a rewrite left by a crash was not removed")
	}
}

// TestFileRules: the journal's rules. A log that breaks them is not used,
// and says why; actions are still shown for this run.
func TestFileRules(t *testing.T) {
	cases := map[string]func(t *testing.T, dir, path string){
		"symlink": func(t *testing.T, dir, path string) {
			os.WriteFile(filepath.Join(dir, "elsewhere"), nil, 0o600)
			os.Symlink(filepath.Join(dir, "elsewhere"), path)
		},
		"readable by others": func(t *testing.T, dir, path string) { os.WriteFile(path, nil, 0o644) },
		"two links": func(t *testing.T, dir, path string) {
			os.WriteFile(path, nil, 0o600)
			os.Link(path, filepath.Join(dir, "second-name"))
		},
		"a directory":              func(t *testing.T, dir, path string) { os.Mkdir(path, 0o700) },
		"group-writable dir":       func(t *testing.T, dir, path string) { os.Chmod(dir, 0o770) },
		"state dir is a symlink":   nil, // below
		"state dir does not exist": nil,
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			os.Mkdir(dir, 0o700)
			path := filepath.Join(dir, activity.FileName)
			switch name {
			case "state dir is a symlink":
				real := filepath.Join(filepath.Dir(dir), "real")
				os.Mkdir(real, 0o700)
				os.Remove(dir)
				os.Symlink(real, dir)
			case "state dir does not exist":
				os.Remove(dir)
			default:
				setup(t, dir, path)
			}
			l := activity.Open(path, activity.Options{})
			defer l.Close()
			st := l.Status()
			if st.Problem == nil || st.Problem.Reason == "" || st.Problem.Fix == "" {
				t.Fatalf("opened: %+v", st)
			}
			id := l.Begin(fill("a", 1))
			l.End(id, "succeeded", "observed", "")
			if got := all(l); len(got) != 1 || got[0].State != activity.StateDone {
				t.Fatalf("in memory: %+v", got)
			}
			if fi, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil && fi.Size() != 0 {
				t.Fatal("wrote through the symlink")
			}
		})
	}
	// A new file is private.
	l, path := mustLog(t, activity.Options{})
	l.Begin(fill("a", 1))
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestReadFileAndTail(t *testing.T) {
	l, path := mustLog(t, activity.Options{MaxEntries: 3})
	if _, _, err := activity.ReadFile(filepath.Join(filepath.Dir(path), "none")); err == nil {
		t.Fatal("a missing file read")
	}
	tail := activity.NewTail(path)
	a := l.Begin(fill("a", 1))
	got, err := tail.Next()
	if err != nil || len(got) != 1 || got[0].State != activity.StateRunning {
		t.Fatalf("tail: %+v %v", got, err)
	}
	l.End(a, "succeeded", "observed", "")
	if got, _ := tail.Next(); len(got) != 1 || got[0].ID != a || got[0].State != activity.StateDone {
		t.Fatalf("tail after end: %+v", got)
	}
	if got, _ := tail.Next(); len(got) != 0 {
		t.Fatalf("nothing new, got %+v", got)
	}
	// Past the bound the broker rewrites the file: the tail reads the new
	// one and tells only what is new.
	var last uint64
	for range 12 {
		last = l.Begin(fill("b", 1))
		l.End(last, "succeeded", "observed", "")
	}
	got, _ = tail.Next()
	for _, e := range got {
		if e.ID == a {
			t.Fatalf("entry %d told twice", a)
		}
	}
	if len(got) == 0 || got[len(got)-1].ID != last {
		t.Fatalf("tail after rewrites: %+v", got)
	}
	entries, damaged, err := activity.ReadFile(path)
	if err != nil || damaged != 0 || len(entries) < 3 || entries[len(entries)-1].ID != last {
		t.Fatalf("ReadFile: %d entries, %d damaged, %v", len(entries), damaged, err)
	}
}
