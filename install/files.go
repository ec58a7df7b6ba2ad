package install

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-browser/broker/internal/fileinfo"
)

// maxFileSize bounds every file this package reads back: manifests, units,
// the launcher and the host config are all a few hundred bytes.
const maxFileSize = 64 << 10

// checkOwner refuses fi unless the current user owns it.
func checkOwner(path string, fi fs.FileInfo) error {
	uid, _, ok := fileinfo.Owner(fi)
	if !ok {
		return fmt.Errorf("%w: cannot determine the owner of %s", ErrUnsafePath, path)
	}
	if uid != os.Getuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, not by the current user (uid %d)", ErrUnsafePath, path, uid, os.Getuid())
	}
	return nil
}

// checkDir checks a directory that files will be written into or removed
// from. A missing directory is acceptable (Install creates it); an existing
// one must be a real directory, not a symlink, owned by the current user
// and not writable by group or others.
func checkDir(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: directory %s is a symlink; point the installer at the real directory", ErrUnsafePath, path)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafePath, path)
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: directory %s is writable by group or others (mode %04o); fix it with chmod go-w", ErrUnsafePath, path, perm)
	}
	return nil
}

// checkFile refuses an existing file that is a symlink, not a regular file,
// owned by another user or hard-linked elsewhere.
func checkFile(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink", ErrUnsafePath, path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafePath, path)
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if _, nlink, _ := fileinfo.Owner(fi); nlink > 1 {
		return fmt.Errorf("%w: %s has %d hard links", ErrUnsafePath, path, nlink)
	}
	return nil
}

// errTooLarge reports a file over maxFileSize; callers wrap it in their
// own category.
var errTooLarge = fmt.Errorf("file is larger than %d bytes", maxFileSize)

// readExisting returns the content and info of the file at path after
// [checkFile], or (nil, nil, nil) when there is no file.
func readExisting(path string) ([]byte, fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := checkFile(path, fi); err != nil {
		return nil, nil, err
	}
	data, err := readSame(path, fi)
	if err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

// readSame reads path without following a symlink and checks that the file
// opened is the one described by want, so that a file swapped in between
// the Lstat and the open is not read.
func readSame(path string, want fs.FileInfo) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|fileinfo.OpenNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(got, want) {
		return nil, fmt.Errorf("%w: %s changed while it was being read", ErrUnsafePath, path)
	}
	if got.Size() > maxFileSize {
		return nil, fmt.Errorf("%s: %w", path, errTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: %w", path, errTooLarge)
	}
	return data, nil
}

// writeAtomic replaces path with data and mode so that a reader sees either
// the old file or the new one, never a partial one, and the new one survives
// a crash once writeAtomic returns: temporary file in the same directory,
// chmod, write, fsync, close, rename, fsync of the directory (after
// tailscale's atomicfile.WriteFile).
func writeAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := syncFile(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// removeDurably removes path and syncs its directory.
func removeDurably(path string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// fsync is false only in tests that do not exercise durability: fsync on
// a busy disk makes them slow without testing anything they check.
var fsync = true

func syncFile(f *os.File) error {
	if !fsync {
		return nil
	}
	return f.Sync()
}

func syncDir(dir string) error {
	if !fsync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
