package activity

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNoLog is returned by [ReadFile] and [Tail.Next] when there is no log
// file (no agent has acted yet, or the state directory is another).
var ErrNoLog = errors.New("activity: no activity log")

// ReadFile reads the log at path as it is now, for a reader outside the
// broker (`broker log`), with the same file checks as the broker. It
// changes nothing: a torn last line (a write under way) is left out, an
// entry without an outcome reads as running, and damaged lines are
// skipped and counted.
func ReadFile(path string) (entries []Entry, damaged int, err error) {
	f, err := openReadOnly(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fold, err := foldRecords(f)
	if err != nil {
		return nil, 0, fmt.Errorf("activity: read %s: %w", path, err)
	}
	entries = make([]Entry, len(fold.entries))
	for i, e := range fold.entries {
		entries[i] = *e
	}
	return entries, fold.bad, nil
}

// openReadOnly opens the log for reading after the file checks.
func openReadOnly(path string) (*os.File, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoLog, path)
	}
	f, p := openChecked(path, os.O_RDONLY, false)
	if p != nil {
		return nil, p
	}
	return f, nil
}

// Tail follows the log file as the broker writes it (`broker log
// --follow`). It survives the broker rewriting or replacing the file.
type Tail struct {
	path    string
	file    fs.FileInfo // the file last read
	off     int64       // bytes of it folded so far (whole lines only)
	byID    map[uint64]*Entry
	entries []*Entry
	told    map[uint64]string // state last reported, by ID
}

// NewTail returns a Tail of the log at path; its first Next reports every
// entry in the file.
func NewTail(path string) *Tail {
	return &Tail{path: path, byID: make(map[uint64]*Entry), told: make(map[uint64]string)}
}

// Next reads what was appended since the last call and returns the entries
// that are new or whose state changed, oldest first.
func (t *Tail) Next() ([]Entry, error) {
	f, err := openReadOnly(t.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	reread := t.file == nil || !os.SameFile(t.file, fi) || fi.Size() < t.off
	if reread {
		// Rewritten or replaced: read it again from the start; what was
		// told already is not told again.
		t.off, t.byID, t.entries = 0, make(map[uint64]*Entry), nil
	}
	t.file = fi
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()-t.off))
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, nil // nothing whole yet
	}
	t.off += int64(end + 1)
	for line := range bytes.Lines(data[:end+1]) {
		if r, err := parseRecord(line[:len(line)-1]); err == nil {
			foldOne(t.byID, &t.entries, r)
		}
	}
	if reread {
		for id := range t.told {
			if t.byID[id] == nil {
				delete(t.told, id) // dropped by the broker's bounds
			}
		}
	}
	var out []Entry
	for _, e := range t.entries {
		if t.told[e.ID] != e.State {
			t.told[e.ID] = e.State
			out = append(out, *e)
		}
	}
	return out, nil
}
