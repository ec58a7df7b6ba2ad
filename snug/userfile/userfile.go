// Package userfile is the user's Snug file as it travels: the canonical
// .snug that moves all of a user's apps and data to another machine, plain
// or protected with a passphrase (spec Part II §9–§11).
//
// # Format
//
// The format is told by the leading bytes, never by the name ([Detect]):
// "SQLite format 3\0" is a plain database, "SNUGENC1\n" a protected one.
// A .sqlite name, or any other, is never refused for its extension.
//
// # Protection
//
// [Seal] wraps the SQLite bytes in the SNUGENC1 container: a random file
// key encrypts them (AES-256-GCM), and two slots wrap that key, one under
// the passphrase and one under a recovery key ([NewRecoveryKey]), each
// through PBKDF2-HMAC-SHA256 at the iteration count stored in the header.
// [Open] tells a sound file no supplied secret opens ([ErrLocked]) from a
// damaged or tampered one ([ErrCorrupt]); the header, slot table included,
// is the AAD of every decryption, so any change to it is refused.
//
// This is "encrypted with a passphrase only the user holds" and nothing
// more: if both the passphrase and the recovery key are lost, the data is
// gone — there is no escrow and no reset.
//
// # Files
//
// [ReadFile] reads a user file within its size cap; [WriteFile] writes one
// privately (0600) and atomically, never over an existing file unless
// asked.
package userfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dsh-browser/broker/snug/userdb"
)

// Format is what a file's leading bytes say it is.
type Format int

const (
	Unknown   Format = iota // neither: not a user file
	Plain                   // a SQLite database
	Protected               // a SNUGENC1 container
)

// Names of the user file (spec §10).
const (
	// Artifact is the name an export suggests.
	Artifact = "snug-user.snug"
	// Extension is the canonical extension (the legacy one is .sqlite).
	Extension = ".snug"
)

var sqliteMagic = []byte("SQLite format 3\x00")

// Detect tells the format by the leading bytes; it never fails, whatever
// the length.
func Detect(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, sqliteMagic):
		return Plain
	case IsProtected(head):
		return Protected
	}
	return Unknown
}

// MaxFileBytes bounds a user file on disk: the database cap (which applies
// to the plaintext) and a container's overhead.
const MaxFileBytes = userdb.MaxBytes + headerFixed + MaxSlots*(slotSize+wrappedSize) + ivSize + tagSize

// ErrTooLarge: the file is over [MaxFileBytes].
var ErrTooLarge = errors.New("userfile: the file is larger than a user file can be")

// ReadFile reads the file at path, refusing one over MaxFileBytes or one
// that is not a regular file.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("userfile: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w (%s)", ErrTooLarge, path)
	}
	return data, nil
}

// WriteFile writes data to path, readable by its owner only (0600): to a
// temporary file beside it, synced, then moved into place, so path holds
// either nothing new or all of data. An existing path is replaced only
// when overwrite is set ([fs.ErrExist] otherwise).
func WriteFile(path string, data []byte, overwrite bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if overwrite {
		err = os.Rename(tmp.Name(), path)
	} else {
		// A hard link never replaces an existing name: the no-clobber
		// move, atomic.
		if err = os.Link(tmp.Name(), path); err == nil {
			os.Remove(tmp.Name())
		} else if errors.Is(err, syscall.EEXIST) {
			err = fmt.Errorf("%s: %w", path, fs.ErrExist)
		}
	}
	if err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
