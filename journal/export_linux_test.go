package journal

import (
	"os"

	"golang.org/x/sys/unix"
)

// BreakWrites replaces the descriptor bbolt writes through with a read-only
// one on the same file: reads (through the memory map) keep working, every
// write fails as a failing disk would.
func BreakWrites(j *Journal) error {
	ro, err := os.Open(j.path)
	if err != nil {
		return err
	}
	defer ro.Close()
	return unix.Dup3(int(ro.Fd()), int(j.file.Fd()), unix.O_CLOEXEC)
}
