package userfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-browser/broker/snug/userfile"
)

func TestWriteFileIsPrivateAndNeverClobbers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, userfile.Artifact)
	if err := userfile.WriteFile(path, []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if err := userfile.WriteFile(path, []byte("two"), false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second write without overwrite: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Fatalf("the refused write changed the file: %q", b)
	}
	if err := userfile.WriteFile(path, []byte("three"), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three" {
		t.Fatalf("overwrite: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	if err := userfile.WriteFile(filepath.Join(dir, "no", "such", "dir"), []byte("x"), false); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}

func TestReadFileAtAndPastTheCap(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at.snug")
	past := filepath.Join(dir, "past.snug")
	for path, size := range map[string]int64{at: userfile.MaxFileBytes, past: userfile.MaxFileBytes + 1} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(size) // sparse
		f.Close()
	}
	if b, err := userfile.ReadFile(at); err != nil || len(b) != userfile.MaxFileBytes {
		t.Fatalf("at the cap: %d %v", len(b), err)
	}
	if _, err := userfile.ReadFile(past); !errors.Is(err, userfile.ErrTooLarge) {
		t.Fatalf("past the cap: %v", err)
	}
	if _, err := userfile.ReadFile(dir); err == nil {
		t.Fatal("read a directory")
	}
}
