// Package ownersock makes and checks the owner-only Unix sockets the broker
// serves — RUNTIME/broker.sock and the agent socket RUNTIME/conn.sock — so
// both follow one set of rules: a private directory (0700, owned by this
// user, under parents no one else can swap), a socket with mode 0600, a
// stale socket replaced but a live one never, and the peer's credentials
// (SO_PEERCRED) read before any byte.
package ownersock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dsh-browser/broker/internal/fileinfo"
)

// MaxPath is the longest socket path: sun_path holds 108 bytes with the
// terminating NUL.
const MaxPath = 107

// EnsurePrivateDir creates dir with mode 0700 if needed and checks that it
// is a real directory owned by this user that no one else can enter, under
// parents no one else can swap (see [CheckAncestors]). It never loosens or
// repairs an existing directory: a wrong mode is the user's to fix.
func EnsurePrivateDir(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := CheckAncestors(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (symlinks are refused)", dir)
	}
	if err := OwnedByMe(fi, dir); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("directory %s has mode %04o; other users could reach its socket; run: chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// CheckAncestors checks that no one but this user (or root) can replace a
// directory on the way to dir: each directory of its real path, and each
// symlink met on the way there, is owned by this user or root, and a
// directory others may write is sticky (like /tmp), so they cannot rename
// what is in it.
func CheckAncestors(dir string) error {
	me := os.Getuid()
	trusted := func(fi fs.FileInfo, path, what string) error {
		uid, _, ok := fileinfo.Owner(fi)
		if !ok {
			return fmt.Errorf("%s: cannot read its owner", path)
		}
		if uid != me && uid != 0 {
			return fmt.Errorf("%s %s is owned by uid %d, who could swap the directory: choose a --runtime-dir (or socket path) under directories only you (or root) own", what, path, uid)
		}
		return nil
	}
	// The symlinks on the way: each could be redirected by its owner.
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if err := trusted(fi, p, "symlink"); err != nil {
				return err
			}
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return CheckAncestors(filepath.Dir(dir)) // created later, by MkdirAll, as ours
	}
	if err != nil {
		return err
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if err := trusted(fi, p, "directory"); err != nil {
			return err
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("directory %s is writable by others (mode %04o) and not sticky, so they could swap the directory: choose another --runtime-dir (or socket path)", p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// OwnedByMe refuses a file another user owns.
func OwnedByMe(fi fs.FileInfo, path string) error {
	uid, _, ok := fileinfo.Owner(fi)
	if !ok {
		return fmt.Errorf("%s: cannot read its owner", path)
	}
	if uid != os.Getuid() {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d)", path, uid, os.Getuid())
	}
	return nil
}

// Listen listens on path with mode 0600; its directory must already be
// private ([EnsurePrivateDir]). A leftover socket that refuses connections
// is removed first; a live one is an error.
func Listen(path string) (net.Listener, error) {
	if len(path) > MaxPath {
		return nil, fmt.Errorf("socket path %s is %d bytes; Unix sockets allow %d: choose a shorter path", path, len(path), MaxPath)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; move it away", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("something (another broker?) is already listening on %s", path)
		}
		if err := OwnedByMe(fi, path); err != nil {
			return nil, err
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	// The socket is made 0600 before it is bound (the mode of a socket
	// file is its inode's, less the umask): it never appears with a looser
	// mode, not even for a moment. The chmod after is for platforms that
	// do not do that.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = syscall.Fchmod(int(fd), 0o600) }); cerr != nil {
			return cerr
		}
		return err
	}}
	ln, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
