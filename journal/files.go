package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/internal/fileinfo"
)

// checkDir checks the journal's directory: a real directory (not a
// symlink), owned by this user, that no one else can write to.
func checkDir(dir string) *Problem {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &Problem{Reason: fmt.Sprintf("the journal directory %s does not exist", dir),
			Fix: "mkdir -m 700 " + dir, Cause: err}
	}
	if err != nil {
		return &Problem{Reason: fmt.Sprintf("the journal directory %s cannot be read", dir), Fix: fixRestart, Cause: err}
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return &Problem{Reason: fmt.Sprintf("the journal directory %s is not a directory (symbolic links are refused)", dir),
			Fix: "move " + dir + " aside, then " + fixRestart}
	}
	if uid, _, ok := fileinfo.Owner(fi); !ok || uid != os.Getuid() {
		return &Problem{Reason: fmt.Sprintf("the journal directory %s is owned by uid %d, not by you (uid %d)", dir, uid, os.Getuid()),
			Fix: "give the broker a --runtime-dir you own"}
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return &Problem{Reason: fmt.Sprintf("the journal directory %s has mode %04o: other users could replace the journal", dir, m),
			Fix: "chmod go-w " + dir}
	}
	return nil
}

// The three files of a journal, as named in a Problem.
const (
	whatDB  = "the journal file"
	whatKey = "the journal's key"
	whatWAL = "the journal's write-ahead log"
)

// checkFile checks one of the journal's files (what names it): a regular
// file (not a symlink), owned by this user, private, with exactly one name.
func checkFile(what, path string, fi fs.FileInfo) *Problem {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &Problem{Reason: fmt.Sprintf("%s %s is a symbolic link, which the broker refuses to follow", what, path), Fix: fixReset}
	case !fi.Mode().IsRegular():
		return &Problem{Reason: fmt.Sprintf("%s %s is not a regular file", what, path), Fix: fixReset}
	}
	if uid, _, ok := fileinfo.Owner(fi); !ok || uid != os.Getuid() {
		return &Problem{Reason: fmt.Sprintf("%s %s is owned by uid %d, not by you (uid %d)", what, path, uid, os.Getuid()), Fix: fixReset}
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return &Problem{Reason: fmt.Sprintf("%s %s has mode %04o: other users could read or change it", what, path, m),
			Fix: "chmod 600 " + path}
	}
	if _, n, _ := fileinfo.Owner(fi); n != 1 {
		return &Problem{Reason: fmt.Sprintf("%s %s has %d hard links: another name could change it behind the broker's back", what, path, n),
			Fix: fixReset}
	}
	return nil
}

// openChecked opens one of the journal's files without following a
// symlink and checks what was opened. A missing file is fs.ErrNotExist
// with a nil Problem.
func openChecked(what, path string, flag int) (*os.File, fs.FileInfo, *Problem, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil, err
	case errors.Is(err, syscall.ELOOP):
		return nil, nil, &Problem{Reason: fmt.Sprintf("%s %s is a symbolic link, which the broker refuses to follow", what, path), Fix: fixReset, Cause: err}, err
	case err != nil:
		return nil, nil, &Problem{Reason: fmt.Sprintf("%s %s cannot be opened", what, path), Fix: fixReset, Cause: err}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &Problem{Reason: fmt.Sprintf("%s %s cannot be read", what, path), Fix: fixReset, Cause: err}, err
	}
	if p := checkFile(what, path, fi); p != nil {
		f.Close()
		return nil, nil, p, errors.New(p.Reason)
	}
	return f, fi, nil, nil
}

// createFile makes a new private file at path whose content fill writes.
// It is built under a temporary name (created exclusively, mode 0600),
// synced, linked into place and its directory synced, so a crash never
// leaves a half-made file at path. If a file appeared at path meanwhile,
// it is left alone and the error matches fs.ErrExist.
func createFile(path string, fill func(f *os.File) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.new") // O_EXCL, mode 0600
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name)
	err = fill(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(name, path); err != nil {
		return err
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	return syncDir(dir)
}

// openNoFollow is bbolt's OpenFile: it never follows a symlink at the
// journal's name.
func openNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

// syncDir makes a directory entry change durable.
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

// lockTimeout is how long Open and Reset wait for the file lock.
const lockTimeout = time.Second

// Reset moves the journal at path aside, with its write-ahead log and its
// key (see [WALPath] and [KeyPath]): each file present gets the suffix
// ".broken-" and a UTC timestamp taken from now, and Reset returns the new
// names. It never deletes anything. It refuses with an error matching [ErrInUse]
// while a broker holds the journal's file lock: stop the broker first.
// The next broker start creates a new, empty journal with a new key; the
// old fences are gone, so retries of actions recorded only in the old
// files are no longer recognized. The key moves with the journal so that
// the files set aside stay verifiable together.
//
// `broker journal reset` calls it.
func Reset(path string, now time.Time) (movedTo []string, err error) {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode().IsRegular():
		// A broker holds an exclusive flock on the file (bbolt) for as long
		// as it runs. Take it too, and keep it while renaming.
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("journal: open %s: %w", path, err)
		}
		defer f.Close()
		if err := flockTimeout(f, lockTimeout); err != nil {
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w (%s); stop the broker first (systemctl --user stop broker.service)", ErrInUse, path)
			}
			return nil, fmt.Errorf("journal: lock %s: %w", path, err)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return moveAside([]string{path, WALPath(path), KeyPath(path)}, "broken", now)
}

// moveAside renames each of paths that exists to path + "." + why + "-" + a
// UTC timestamp, one suffix for all (numbered if taken), then syncs the
// directory. With none of them present it returns ErrNoJournal.
func moveAside(paths []string, why string, now time.Time) ([]string, error) {
	var present []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			present = append(present, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(present) == 0 {
		return nil, fmt.Errorf("%w at %s", ErrNoJournal, paths[0])
	}
	base := "." + why + "-" + now.UTC().Format("20060102T150405Z")
	suffix := base
	for i := 2; slices.ContainsFunc(present, func(p string) bool { _, err := os.Lstat(p + suffix); return err == nil }); i++ {
		suffix = fmt.Sprintf("%s-%d", base, i)
	}
	var moved []string
	for _, p := range present {
		if err := os.Rename(p, p+suffix); err != nil {
			return moved, fmt.Errorf("journal: move %s aside: %w", p, err)
		}
		moved = append(moved, p+suffix)
	}
	if err := syncDir(filepath.Dir(paths[0])); err != nil {
		return moved, fmt.Errorf("journal: moved %s, but syncing the directory failed: %w", strings.Join(moved, ", "), err)
	}
	return moved, nil
}

// flockTimeout takes an exclusive flock on f, retrying until d has passed.
func flockTimeout(f *os.File, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
