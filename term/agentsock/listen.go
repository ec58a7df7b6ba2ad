package agentsock

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// listen creates the socket's directory (0700) if needed, refuses one that
// others can enter, removes a stale socket (one nobody answers on) and
// listens with mode 0600.
func listen(path string) (net.Listener, error) {
	if len(path) > 107 {
		return nil, fmt.Errorf("agent socket path %s is %d bytes; Unix sockets allow 107", path, len(path))
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the agent socket's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (symlinks are refused)", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%s is not owned by you", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o; other users could reach the agent socket; run: chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; move it away", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("something already listens on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale agent socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// peerUID returns the uid of the process at the other end of a Unix
// socket (SO_PEERCRED), read before any byte is.
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("not a unix socket: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return int(cred.Uid), nil
}

// peek says what the peer has sent that is not read yet.
type peek uint8

const (
	peekNothing peek = iota // nothing yet; the peer can still send
	peekData                // bytes are waiting
	peekEOF                 // the peer closed its write side (or the connection)
)

// peekConn looks at the socket without reading or waiting. Connections that
// are not Unix sockets report nothing waiting.
func peekConn(c net.Conn) peek {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peekNothing
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peekEOF
	}
	var n int
	var rerr error
	var b [1]byte
	if err := raw.Control(func(fd uintptr) {
		n, _, rerr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	}); err != nil {
		return peekEOF
	}
	switch {
	case rerr == unix.EAGAIN || rerr == unix.EINTR:
		return peekNothing
	case rerr != nil || n == 0:
		return peekEOF
	}
	return peekData
}
