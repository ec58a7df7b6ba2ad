package journal

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// secretSize is the length of a journal key: 32 random bytes.
const secretSize = 32

// KeyPath is where the journal at path keeps its key: beside it, with the
// extension ".key" (STATE/journal.key for STATE/journal.db).
func KeyPath(path string) string { return sibling(path, ".key") }

// WALPath is where the journal at path keeps its write-ahead log: beside
// it, with the extension ".wal".
func WALPath(path string) string { return sibling(path, ".wal") }

func sibling(path, ext string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ext
}

// loadKey reads the journal's key, checked as the journal file is. It
// returns fs.ErrNotExist (and no Problem) when there is none.
func loadKey(path string) ([]byte, *Problem, error) {
	f, fi, p, err := openChecked(whatKey, path, os.O_RDONLY)
	if err != nil {
		return nil, p, err
	}
	defer f.Close()
	if fi.Size() != secretSize {
		p := &Problem{Reason: fmt.Sprintf("%s %s has %d bytes, not %d: it is not a journal key", whatKey, path, fi.Size(), secretSize), Fix: fixReset}
		return nil, p, errors.New(p.Reason)
	}
	key := make([]byte, secretSize)
	if _, err := io.ReadFull(f, key); err != nil {
		p := &Problem{Reason: fmt.Sprintf("%s %s cannot be read", whatKey, path), Fix: fixReset, Cause: err}
		return nil, p, err
	}
	return key, nil, nil
}

// loadOrCreateKey returns the journal's key, creating it if there is none:
// 32 random bytes, durable (file and directory synced) before it returns,
// so that no journal ever refers to a key a crash could lose.
func loadOrCreateKey(path string) ([]byte, *Problem) {
	key, p, err := loadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, p
	}
	err = createFile(path, func(f *os.File) error {
		key := make([]byte, secretSize)
		rand.Read(key) // never fails (crypto/rand)
		_, err := f.Write(key)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, createProblem(whatKey, path, err)
	}
	key, p, err = loadKey(path)
	if p == nil && err != nil {
		p = createProblem(whatKey, path, err)
	}
	return key, p
}

// createProblem explains a failure to create one of the journal's files.
func createProblem(what, path string, err error) *Problem {
	if isDiskFull(err) {
		return &Problem{Reason: fmt.Sprintf("the disk is full: %s %s cannot be created", what, path), Fix: fixDisk, Cause: err}
	}
	return &Problem{Reason: fmt.Sprintf("%s %s cannot be created", what, path), Fix: fixRestart, Cause: err}
}
