package ownersock_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/internal/ownersock"
)

func TestRuntimeDirAncestorsChecked(t *testing.T) {
	root := t.TempDir()
	open := filepath.Join(root, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777) // writable by all, not sticky
	if err := ownersock.EnsurePrivateDir(filepath.Join(open, "dsh")); err == nil || !strings.Contains(err.Error(), "not sticky") {
		t.Fatalf("under a world-writable parent: %v", err)
	}
	sticky := filepath.Join(root, "sticky")
	os.Mkdir(sticky, 0o700)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	if err := ownersock.EnsurePrivateDir(filepath.Join(sticky, "dsh")); err != nil {
		t.Fatalf("under a sticky parent like /tmp: %v", err)
	}
	// Nested, not yet existing: the check walks up to what exists.
	if err := ownersock.EnsurePrivateDir(filepath.Join(open, "a", "b")); err == nil {
		t.Fatal("a missing directory under a world-writable parent")
	}
	if os.Getuid() != 0 {
		t.Skip("the foreign-owner cases need root to chown")
	}
	foreign := filepath.Join(root, "foreign")
	os.Mkdir(foreign, 0o755)
	os.Chown(foreign, 4242, 4242)
	if err := ownersock.EnsurePrivateDir(filepath.Join(foreign, "dsh")); err == nil || !strings.Contains(err.Error(), "uid 4242") {
		t.Fatalf("under a parent owned by another user: %v", err)
	}
	mine := filepath.Join(root, "mine")
	os.Mkdir(mine, 0o700)
	link := filepath.Join(root, "link")
	os.Symlink(mine, link)
	if err := ownersock.EnsurePrivateDir(filepath.Join(link, "dsh")); err != nil {
		t.Fatalf("through my own symlink: %v", err)
	}
	os.Lchown(link, 4242, 4242)
	if err := ownersock.EnsurePrivateDir(filepath.Join(link, "dsh2")); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("through another user's symlink: %v", err)
	}
}

func TestListen(t *testing.T) {
	dir, err := os.MkdirTemp("", "os")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s.sock")
	ln, err := ownersock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	// A live socket is never taken over.
	if _, err := ownersock.Listen(path); err == nil || !strings.Contains(err.Error(), "already listening") {
		t.Fatalf("second listener on a live socket: %v", err)
	}
	// The peer is this user, read before any byte.
	go func() {
		if c, err := net.Dial("unix", path); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	uid, pid, err := ownersock.PeerCred(c)
	if err != nil || uid != os.Getuid() || pid != os.Getpid() {
		t.Fatalf("peer credentials: uid %d pid %d %v", uid, pid, err)
	}
	c.Close()
	// A stale socket (nobody answers) is replaced. Unlinking on close is
	// turned off so that the file stays behind, as after a crash.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	ln, err = ownersock.Listen(path)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	ln.Close()
	// A file that is not a socket is left alone.
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o600)
	if _, err := ownersock.Listen(plain); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("over a regular file: %v", err)
	}
}

// A socket path of 107 bytes is the longest sun_path holds; 108 is refused
// with a clear error rather than truncated.
func TestListenPathLimit(t *testing.T) {
	dir, err := os.MkdirTemp("", "os")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pad := func(n int) string {
		return filepath.Join(dir, strings.Repeat("s", n-len(dir)-1))
	}
	ln, err := ownersock.Listen(pad(ownersock.MaxPath))
	if err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	ln.Close()
	if _, err := ownersock.Listen(pad(ownersock.MaxPath + 1)); err == nil || !strings.Contains(err.Error(), "allow 107") {
		t.Fatalf("past the limit: %v", err)
	}
}
