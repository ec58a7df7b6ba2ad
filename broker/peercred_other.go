//go:build !linux

package broker

import (
	"errors"
	"net"
	"os"
)

// errUnsupported refuses what needs Linux's peer credentials: without
// SO_PEERCRED the broker cannot tell who connected, so it admits no one.
var errUnsupported = errors.New("peer credentials (SO_PEERCRED) are only read on Linux; the broker serves no one here")

func peerCred(net.Conn) (uid, pid int, err error) { return 0, 0, errUnsupported }

func processExecutable(int) (os.FileInfo, error) { return nil, errUnsupported }

func checkPlatform() error { return errUnsupported }
