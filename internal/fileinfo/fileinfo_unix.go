//go:build unix

package fileinfo

import (
	"io/fs"
	"syscall"
)

// OpenNoFollow is added to os.O_RDONLY when reading a file that must not be
// a symlink: O_NOFOLLOW refuses a symlink swapped in after the Lstat, and
// O_NONBLOCK keeps a FIFO swapped in from blocking the open.
const OpenNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// Owner returns fi's owner uid and hard-link count. ok is false when the
// platform does not say; callers then fail closed.
func Owner(fi fs.FileInfo) (uid int, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, 0, false
	}
	return int(st.Uid), uint64(st.Nlink), true
}
