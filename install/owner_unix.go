//go:build unix

package install

import (
	"io/fs"
	"syscall"
)

// openFlags are added to os.O_RDONLY when reading a file that must not be a
// symlink: O_NOFOLLOW refuses a symlink swapped in after the Lstat, and
// O_NONBLOCK keeps a FIFO swapped in from blocking the open.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// fileOwner returns the owner and link count of fi.
func fileOwner(fi fs.FileInfo) (uid int, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), uint64(st.Nlink), true
}
