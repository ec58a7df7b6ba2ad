package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	lock := filepath.Join(dir, "broker.lock")
	if err := os.Symlink(elsewhere, lock); err != nil {
		t.Fatal(err)
	}
	if f, err := lockFile(lock); err == nil {
		f.Close()
		t.Fatal("a symlinked lock file was followed")
	}
	if _, err := os.Lstat(elsewhere); !os.IsNotExist(err) {
		t.Fatalf("the broker created the symlink's target: %v", err)
	}
	// A real file works, and a second lock on it is refused.
	real := filepath.Join(dir, "real.lock")
	f, err := lockFile(real)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if g, err := lockFile(real); err == nil {
		g.Close()
		t.Fatal("two locks on one file")
	}
}

func TestTokenFileRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "auth-token")
	tok, err := loadOrCreateToken(path)
	if err != nil || len(tok) != 64 {
		t.Fatalf("create: %q %v", tok, err)
	}
	again, err := loadOrCreateToken(path)
	if err != nil || string(again) != string(tok) {
		t.Fatalf("reload: %q %v", again, err)
	}
	// A second name for the token: refused.
	if err := os.Link(path, filepath.Join(dir, "copy")); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateToken(path); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("a token with 2 links: %v", err)
	}
	// A symlink in its place: refused, and never followed.
	other := filepath.Join(t.TempDir(), "auth-token")
	target := filepath.Join(dir, "copy")
	os.Remove(path)
	if err := os.Symlink(target, other); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateToken(other); err == nil {
		t.Fatal("a symlinked token was read")
	}
}

func TestRuntimeDirAncestorsChecked(t *testing.T) {
	root := t.TempDir()
	open := filepath.Join(root, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777) // writable by all, not sticky
	if err := ensurePrivateDir(filepath.Join(open, "dsh")); err == nil || !strings.Contains(err.Error(), "not sticky") {
		t.Fatalf("under a world-writable parent: %v", err)
	}
	sticky := filepath.Join(root, "sticky")
	os.Mkdir(sticky, 0o700)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	if err := ensurePrivateDir(filepath.Join(sticky, "dsh")); err != nil {
		t.Fatalf("under a sticky parent like /tmp: %v", err)
	}
	// Nested, not yet existing: the check walks up to what exists.
	if err := ensurePrivateDir(filepath.Join(open, "a", "b")); err == nil {
		t.Fatal("a missing directory under a world-writable parent")
	}
	if os.Getuid() != 0 {
		t.Skip("the foreign-owner cases need root to chown")
	}
	foreign := filepath.Join(root, "foreign")
	os.Mkdir(foreign, 0o755)
	os.Chown(foreign, 4242, 4242)
	if err := ensurePrivateDir(filepath.Join(foreign, "dsh")); err == nil || !strings.Contains(err.Error(), "uid 4242") {
		t.Fatalf("under a parent owned by another user: %v", err)
	}
	mine := filepath.Join(root, "mine")
	os.Mkdir(mine, 0o700)
	link := filepath.Join(root, "link")
	os.Symlink(mine, link)
	if err := ensurePrivateDir(filepath.Join(link, "dsh")); err != nil {
		t.Fatalf("through my own symlink: %v", err)
	}
	os.Lchown(link, 4242, 4242)
	if err := ensurePrivateDir(filepath.Join(link, "dsh2")); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("through another user's symlink: %v", err)
	}
}
