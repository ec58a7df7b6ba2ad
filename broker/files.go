package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/internal/fileinfo"
)

// TokenBytes is the size of the auth token before hex encoding (256 bits).
const TokenBytes = 32

// ensurePrivateDir creates dir with mode 0700 if needed and checks that it is
// a real directory owned by this user that no one else can enter, under
// parents no one else can swap (checkAncestors). It never loosens or
// repairs an existing directory: a wrong mode is the user's to fix.
func ensurePrivateDir(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := checkAncestors(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create runtime directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("runtime directory %s is not a directory (symlinks are refused)", dir)
	}
	if err := ownedByMe(fi, dir); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("runtime directory %s has mode %04o; other users could reach the socket; run: chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// checkAncestors checks that no one but this user (or root) can replace a
// directory on the way to dir: each directory of its real path, and each
// symlink met on the way there, is owned by this user or root, and a
// directory others may write is sticky (like /tmp), so they cannot rename
// what is in it.
func checkAncestors(dir string) error {
	me := os.Getuid()
	trusted := func(fi fs.FileInfo, path, what string) error {
		uid, _, ok := fileinfo.Owner(fi)
		if !ok {
			return fmt.Errorf("%s: cannot read its owner", path)
		}
		if uid != me && uid != 0 {
			return fmt.Errorf("%s %s is owned by uid %d, who could swap the runtime directory: choose a --runtime-dir under directories only you (or root) own", what, path, uid)
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
		return checkAncestors(filepath.Dir(dir)) // created below, by MkdirAll, as ours
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
			return fmt.Errorf("directory %s is writable by others (mode %04o) and not sticky, so they could swap the runtime directory: choose another --runtime-dir", p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func ownedByMe(fi fs.FileInfo, path string) error {
	uid, _, ok := fileinfo.Owner(fi)
	if !ok {
		return fmt.Errorf("%s: cannot read its owner", path)
	}
	if uid != os.Getuid() {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d)", path, uid, os.Getuid())
	}
	return nil
}

// loadOrCreateToken returns the hex token in path, creating it (0600, 32
// random bytes as 64 hex characters) if it does not exist.
func loadOrCreateToken(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|fileinfo.OpenNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return createToken(path)
	}
	if err != nil {
		return nil, fmt.Errorf("open the token %s: %w (a symlink there is refused)", path, err)
	}
	defer f.Close()
	fi, err := f.Stat() // the file opened, not whatever the name points to now
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token %s is not a regular file", path)
	}
	if err := ownedByMe(fi, path); err != nil {
		return nil, err
	}
	if _, nlink, _ := fileinfo.Owner(fi); nlink != 1 {
		return nil, fmt.Errorf("token %s has %d hard links, so another name could reach it; remove it and restart the broker to make a new one", path, nlink)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token %s has mode %04o; run: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	tok := make([]byte, 2*TokenBytes+1)
	n, err := io.ReadFull(f, tok)
	if err != io.ErrUnexpectedEOF && err != nil {
		return nil, err
	}
	tok = tok[:n]
	if len(tok) != 2*TokenBytes {
		return nil, fmt.Errorf("token %s is malformed (want 64 hex characters); remove it and restart the broker to make a new one", path)
	}
	if _, err := hex.DecodeString(string(tok)); err != nil {
		return nil, fmt.Errorf("token %s is malformed (want 64 hex characters); remove it and restart the broker to make a new one", path)
	}
	return tok, nil
}

// createToken writes a new token: 32 random bytes as 64 hex characters,
// 0600, created exclusively and synced.
func createToken(path string) ([]byte, error) {
	buf := make([]byte, TokenBytes)
	rand.Read(buf)
	tok := []byte(hex.EncodeToString(buf))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create token: %w", err)
	}
	if _, err := f.Write(tok); err != nil {
		f.Close()
		return nil, fmt.Errorf("write token: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return tok, f.Close()
}

// lockFile takes an exclusive lock on path for the life of the process, so
// that two brokers never share a runtime directory.
func lockFile(path string) (*os.File, error) {
	// O_NOFOLLOW: a symlink planted here must not make the broker create or
	// lock a file elsewhere.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|fileinfo.OpenNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock %s: %w (a symlink there is refused)", path, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another broker is already running with runtime directory %s", filepath.Dir(path))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// listenUnix listens on path with mode 0600. A leftover socket that refuses
// connections is removed first; a live one is an error.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; move it away", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("a broker is already listening on %s", path)
		}
		if err := ownedByMe(fi, path); err != nil {
			return nil, err
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
