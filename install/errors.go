package install

import "errors"

var (
	// ErrUnsafePath is returned when a target directory or file is a
	// symlink, is owned by another user, or is a directory writable by
	// group or others. Nothing is written or removed.
	ErrUnsafePath = errors.New("install: unsafe path")

	// ErrForeignFile is returned by [Install] when a file already exists at a
	// target path and was not written by broker install, or is malformed.
	// Nothing is written: the user decides what to do with that file.
	ErrForeignFile = errors.New("install: existing file was not written by broker install")

	// ErrInvalidOptions is returned for options that cannot be installed:
	// an unknown browser, a malformed extension ID, a relative path, a
	// missing nativehost or broker binary.
	ErrInvalidOptions = errors.New("install: invalid options")

	// ErrInvalidHostConfig is returned by [LoadHostConfig] for a file that is
	// not a valid host configuration.
	ErrInvalidHostConfig = errors.New("install: invalid native host config")
)
