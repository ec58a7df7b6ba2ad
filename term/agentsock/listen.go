package agentsock

import (
	"fmt"
	"net"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/internal/ownersock"
)

// listen makes the socket's directory private (0700, see
// [ownersock.EnsurePrivateDir]) and listens with mode 0600, replacing a
// stale socket (one nobody answers on), never a live one.
func listen(path string) (net.Listener, error) {
	if err := ownersock.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("the agent socket's directory: %w", err)
	}
	ln, err := ownersock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("the agent socket: %w", err)
	}
	return ln, nil
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
