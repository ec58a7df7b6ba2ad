package ownersock

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// PeerCred returns the uid and pid of the process at the other end of a
// Unix socket, read with SO_PEERCRED before any byte is read from it.
func PeerCred(c net.Conn) (uid, pid int, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, 0, fmt.Errorf("not a unix socket: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if credErr != nil {
		return 0, 0, credErr
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// ProcessExecutable returns the file a process runs, read through
// /proc/PID/exe (it names the executable even when a launcher script
// exec'd it).
func ProcessExecutable(pid int) (os.FileInfo, error) {
	return os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
}

// Supported reports whether owner-only sockets can be served here: they
// can on Linux.
func Supported() error { return nil }
