package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// checkFile checks an existing journal file: a regular file (not a
// symlink), owned by this user, private, with exactly one name.
func checkFile(path string, fi fs.FileInfo) *Problem {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &Problem{Reason: fmt.Sprintf("the journal file %s is a symbolic link, which the broker refuses to follow", path), Fix: fixReset}
	case !fi.Mode().IsRegular():
		return &Problem{Reason: fmt.Sprintf("the journal file %s is not a regular file", path), Fix: fixReset}
	}
	if uid, _, ok := fileinfo.Owner(fi); !ok || uid != os.Getuid() {
		return &Problem{Reason: fmt.Sprintf("the journal file %s is owned by uid %d, not by you (uid %d)", path, uid, os.Getuid()), Fix: fixReset}
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return &Problem{Reason: fmt.Sprintf("the journal file %s has mode %04o: other users could read or change it", path, m),
			Fix: "chmod 600 " + path}
	}
	if _, n, _ := fileinfo.Owner(fi); n != 1 {
		return &Problem{Reason: fmt.Sprintf("the journal file %s has %d hard links: another name could change it behind the broker's back", path, n),
			Fix: fixReset}
	}
	return nil
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

// Reset moves the journal at path aside to path + ".broken-" + a UTC
// timestamp taken from now, and returns the new name. It never deletes
// anything. It refuses with an error matching [ErrInUse] while a broker
// holds the journal's file lock: stop the broker first. The next broker
// start creates a new, empty journal; the old fences are gone, so retries
// of actions recorded only in the old file are no longer recognized.
//
// `broker journal reset` calls it.
func Reset(path string, now time.Time) (movedTo string, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w at %s", ErrNoJournal, path)
	}
	if err != nil {
		return "", err
	}
	if fi.Mode().IsRegular() {
		// A broker holds an exclusive flock on the file (bbolt) for as long
		// as it runs. Take it too, and keep it while renaming.
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("journal: open %s: %w", path, err)
		}
		defer f.Close()
		if err := flockTimeout(f, lockTimeout); err != nil {
			if errors.Is(err, unix.EWOULDBLOCK) {
				return "", fmt.Errorf("%w (%s); stop the broker first (systemctl --user stop broker.service)", ErrInUse, path)
			}
			return "", fmt.Errorf("journal: lock %s: %w", path, err)
		}
	}
	base := path + ".broken-" + now.UTC().Format("20060102T150405Z")
	to := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("journal: move the journal aside: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return to, fmt.Errorf("journal: moved to %s, but syncing its directory failed: %w", to, err)
	}
	return to, nil
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
