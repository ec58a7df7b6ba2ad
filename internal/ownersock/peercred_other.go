//go:build !linux

package ownersock

import (
	"errors"
	"net"
	"os"
)

// errUnsupported refuses what needs Linux's peer credentials: without
// SO_PEERCRED a server cannot tell who connected, so it admits no one.
var errUnsupported = errors.New("peer credentials (SO_PEERCRED) are only read on Linux; the broker serves no one here")

// PeerCred cannot read peer credentials off Linux.
func PeerCred(net.Conn) (uid, pid int, err error) { return 0, 0, errUnsupported }

// ProcessExecutable cannot read a process's executable off Linux.
func ProcessExecutable(int) (os.FileInfo, error) { return nil, errUnsupported }

// Supported reports that owner-only sockets cannot be served here.
func Supported() error { return errUnsupported }
