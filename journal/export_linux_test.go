package journal

import (
	"os"

	"golang.org/x/sys/unix"
)

// BreakWrites replaces the descriptors the journal writes through (its log
// and bbolt's file) with read-only ones on the same files: reads keep
// working, every write fails as a failing disk would.
func BreakWrites(j *Journal) error {
	for _, f := range []*os.File{j.wal.f, j.file} {
		ro, err := os.Open(f.Name())
		if err != nil {
			return err
		}
		err = unix.Dup3(int(ro.Fd()), int(f.Fd()), unix.O_CLOEXEC)
		ro.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
