// Package failpoint lets crash tests kill the broker with a real SIGKILL at a
// named point of an action's life. It is inert unless the environment
// variable DSH_FAILPOINT names a point (or "point:N" for the N-th hit, N ≥ 1);
// nobody sets it outside tests.
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

var (
	name  string
	nth   int64 = 1
	count atomic.Int64
)

func init() {
	spec := os.Getenv("DSH_FAILPOINT")
	if spec == "" {
		return
	}
	name = spec
	if n, k, ok := strings.Cut(spec, ":"); ok {
		if v, err := strconv.ParseInt(k, 10, 64); err == nil && v >= 1 {
			name, nth = n, v
		}
	}
}

// Hit kills this process with SIGKILL when point is the configured one (on
// its configured hit). It does nothing otherwise.
func Hit(point string) {
	if name == "" || point != name {
		return
	}
	if count.Add(1) == nth {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
