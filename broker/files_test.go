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
