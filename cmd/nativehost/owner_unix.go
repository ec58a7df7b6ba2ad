//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// openFlags refuse a symlink swapped in after the Lstat and keep a FIFO from
// blocking the open.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
