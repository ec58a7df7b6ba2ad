package install

// This file opens backdoors needed only by tests.

// SetFsync turns fsync of written files and their directories on or off and
// returns a function that restores the previous setting.
func SetFsync(on bool) (restore func()) {
	old := fsync
	fsync = on
	return func() { fsync = old }
}
