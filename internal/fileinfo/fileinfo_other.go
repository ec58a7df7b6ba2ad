//go:build !unix

package fileinfo

import "io/fs"

// OpenNoFollow has no equivalent off unix.
const OpenNoFollow = 0

// Owner cannot tell owners apart off unix, so every ownership check fails
// closed there.
func Owner(fs.FileInfo) (uid int, nlink uint64, ok bool) { return -1, 0, false }
