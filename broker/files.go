package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
// a real directory owned by this user that no one else can enter. It never
// loosens or repairs an existing directory: a wrong mode is the user's to fix.
func ensurePrivateDir(dir string) error {
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
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
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
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token %s is not a regular file (symlinks are refused)", path)
	}
	if err := ownedByMe(fi, path); err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token %s has mode %04o; run: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	tok, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(tok) != 2*TokenBytes {
		return nil, fmt.Errorf("token %s is malformed (want 64 hex characters); remove it and restart the broker to make a new one", path)
	}
	if _, err := hex.DecodeString(string(tok)); err != nil {
		return nil, fmt.Errorf("token %s is malformed (want 64 hex characters); remove it and restart the broker to make a new one", path)
	}
	return tok, nil
}

// lockFile takes an exclusive lock on path for the life of the process, so
// that two brokers never share a runtime directory.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
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
