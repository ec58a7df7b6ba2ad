package activity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dsh-browser/broker/internal/fileinfo"
)

// Problem says why the log is unavailable, and what to do about it.
type Problem struct {
	Reason string `json:"reason"` // one human sentence
	Fix    string `json:"fix"`    // what the user runs or does
	Cause  error  `json:"-"`
}

func (p *Problem) Error() string {
	if p.Cause != nil {
		return "activity log unavailable: " + p.Reason + ": " + p.Cause.Error()
	}
	return "activity log unavailable: " + p.Reason
}

// Unwrap returns the cause.
func (p *Problem) Unwrap() error { return p.Cause }

const (
	fixRestart = "restart the broker (systemctl --user restart broker.service)"
	fixDisk    = "free disk space, then restart the broker (systemctl --user restart broker.service)"
)

// fixAside is the fix for a file the broker will not use: move it away.
func fixAside(path string) string {
	return "move " + path + " aside, then " + fixRestart
}

// checkDir checks the log's directory: a real directory (not a symlink),
// owned by this user, that no one else can write to.
func checkDir(dir string) *Problem {
	fi, err := os.Lstat(dir)
	if err != nil {
		return &Problem{Reason: fmt.Sprintf("the state directory %s cannot be read", dir), Fix: "mkdir -m 700 " + dir + ", then " + fixRestart, Cause: err}
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return &Problem{Reason: fmt.Sprintf("the state directory %s is not a directory (symbolic links are refused)", dir), Fix: fixAside(dir)}
	}
	if uid, _, ok := fileinfo.Owner(fi); !ok || uid != os.Getuid() {
		return &Problem{Reason: fmt.Sprintf("the state directory %s is owned by uid %d, not by you (uid %d)", dir, uid, os.Getuid()),
			Fix: "give the broker a --state-dir you own"}
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return &Problem{Reason: fmt.Sprintf("the state directory %s has mode %04o: other users could replace the log", dir, m), Fix: "chmod go-w " + dir}
	}
	return nil
}

// checkFile checks the log file: a regular file (not a symlink), owned by
// this user, private, with exactly one name.
func checkFile(path string, fi fs.FileInfo) *Problem {
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular() {
		return &Problem{Reason: fmt.Sprintf("the activity log %s is not a regular file (symbolic links are refused)", path), Fix: fixAside(path)}
	}
	uid, links, ok := fileinfo.Owner(fi)
	switch {
	case !ok || uid != os.Getuid():
		return &Problem{Reason: fmt.Sprintf("the activity log %s is owned by uid %d, not by you (uid %d)", path, uid, os.Getuid()), Fix: fixAside(path)}
	case fi.Mode().Perm()&0o077 != 0:
		return &Problem{Reason: fmt.Sprintf("the activity log %s has mode %04o: other users could read or change it", path, fi.Mode().Perm()),
			Fix: "chmod 600 " + path}
	case links != 1:
		return &Problem{Reason: fmt.Sprintf("the activity log %s has %d hard links: another name could change it behind the broker's back", path, links),
			Fix: fixAside(path)}
	}
	return nil
}

// openChecked opens path (creating it, mode 0600, when create is set)
// without following a symlink, and checks what was opened.
func openChecked(path string, flag int, create bool) (*os.File, *Problem) {
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, openProblem(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, openProblem(path, err)
	}
	if p := checkFile(path, fi); p != nil {
		f.Close()
		return nil, p
	}
	return f, nil
}

func openProblem(path string, err error) *Problem {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return &Problem{Reason: fmt.Sprintf("the activity log %s is a symbolic link, which the broker refuses to follow", path), Fix: fixAside(path), Cause: err}
	case errors.Is(err, fs.ErrPermission):
		return &Problem{Reason: fmt.Sprintf("the activity log %s cannot be opened: permission denied", path), Fix: fixAside(path), Cause: err}
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &Problem{Reason: fmt.Sprintf("the disk is full: the activity log %s cannot be written", path), Fix: fixDisk, Cause: err}
	}
	return &Problem{Reason: fmt.Sprintf("the activity log %s cannot be opened", path), Fix: fixRestart, Cause: err}
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

// tempPattern names the rewrites under way; one left by a crash is removed
// when the log is opened.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".*.new" }
