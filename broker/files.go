package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/internal/fileinfo"
	"github.com/dsh-browser/broker/internal/ownersock"
)

// TokenBytes is the size of the auth token before hex encoding (256 bits).
const TokenBytes = 32

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
	if err := ownersock.OwnedByMe(fi, path); err != nil {
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
