package userdb_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dsh-browser/broker/snug/userdb"
)

// The conformance checks of spec §8 and §8.1, one test each.

func TestFreshFileIsVersion6WithExactlyThe13Tables(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	db.Close()
	r := raw(t, path)
	if v := queryInt(t, r, "PRAGMA user_version"); v != 6 {
		t.Fatalf("user_version %d, want 6", v)
	}
	got := queryStrings(t, r, `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'snug\_%' ESCAPE '\' ORDER BY name`)
	want := slices.Sorted(slices.Values(userdb.Tables()))
	if !slices.Equal(got, want) || len(got) != 13 {
		t.Fatalf("tables %v, want the 13 %v", got, want)
	}
	for _, gone := range []string{"snug_app_data", "snug_auth_specs"} {
		if slices.Contains(got, gone) {
			t.Fatalf("%s must not exist", gone)
		}
	}
	if n := queryInt(t, r, `SELECT count(*) FROM pragma_table_info('snug_app_versions') WHERE name = 'runtime_contract_json'`); n != 1 {
		t.Fatal("snug_app_versions lacks runtime_contract_json")
	}
	if n := queryInt(t, r, `SELECT count(*) FROM pragma_table_info('snug_connections')`); n != 14 {
		t.Fatalf("snug_connections has %d columns, want 14", n)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o, want 0600", fi.Mode().Perm())
	}
}

func TestDroppedConnectionsTableComesBackOnOpenOtherRowsUnchanged(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Keep")
	db.Close()
	r := raw(t, path)
	mustExec(t, r, `INSERT INTO snug_settings (key, value) VALUES ('mode', '"byok"')`)
	mustExec(t, r, `DROP TABLE snug_connections`)
	before := queryStrings(t, r, `SELECT app_id || display_name || current_version FROM snug_apps`)
	r.Close()

	mustReopen(t, path).Close()
	r = raw(t, path)
	if n := queryInt(t, r, `SELECT count(*) FROM sqlite_master WHERE name = 'snug_connections'`); n != 1 {
		t.Fatal("snug_connections was not healed")
	}
	if got := queryStrings(t, r, `SELECT app_id || display_name || current_version FROM snug_apps`); !slices.Equal(got, before) || len(got) != 1 {
		t.Fatalf("apps %v, want %v (%s)", got, before, app.ID)
	}
	if n := queryInt(t, r, `SELECT count(*) FROM snug_settings WHERE key = 'mode'`); n != 1 {
		t.Fatal("settings row lost")
	}
	if v := queryInt(t, r, "PRAGMA user_version"); v != 6 {
		t.Fatalf("user_version %d", v)
	}
}

func TestFileStamped16IsUnsupportedAndUnchanged(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	db.Close()
	r := raw(t, path)
	mustExec(t, r, "PRAGMA user_version = 16")
	r.Close()
	before := readFile(t, path)
	_, err := userdb.Open(path, userdb.Options{})
	ue, ok := errors.AsType[*userdb.UnsupportedError](err)
	if !ok || !errors.Is(err, userdb.ErrUnsupported) || ue.Found != 16 {
		t.Fatalf("open: %v, want unsupported v16", err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("the newer file was changed")
	}
	assertNoSiblings(t, path)
}

func TestSecondOpenOfHealthyFilePersistsNothing(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	mustInstall(t, db, "A")
	db.Close()
	mustReopen(t, path).Close()
	before := readFile(t, path)
	st1, _ := os.Stat(path)
	mustReopen(t, path).Close()
	st2, _ := os.Stat(path)
	if !bytes.Equal(readFile(t, path), before) || !st1.ModTime().Equal(st2.ModTime()) {
		t.Fatal("a routine open of a healthy v6 file wrote to it")
	}
}

func TestLegacyWipeOnMigrationFromV3(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	db.Close()
	r := raw(t, path)
	secrets := map[string]string{
		"auth:A:api_key":      "sk-legacy-3seg-aaaaaaaaaaaaaaaa",
		"auth:A:slot:api_key": "sk-live-4seg-bbbbbbbbbbbbbbbb",
		"auth:_state_hmac":    "hmac-cccccccccccccccc",
		"auth:_flow:x":        "flow-dddddddddddddddd",
		"byok:x":              "sk-byok-eeeeeeeeeeeeeeee",
	}
	for k, v := range secrets {
		mustExec(t, r, `INSERT INTO snug_secrets (key, value) VALUES (?, ?)`, k, v)
	}
	mustExec(t, r, "PRAGMA user_version = 3")
	r.Close()

	mustReopen(t, path).Close()
	r = raw(t, path)
	got := queryStrings(t, r, `SELECT key FROM snug_secrets ORDER BY key`)
	want := []string{"auth:A:slot:api_key", "auth:_flow:x", "auth:_state_hmac", "byok:x"}
	if !slices.Equal(got, want) {
		t.Fatalf("secrets after migration %v, want %v", got, want)
	}
	r.Close()
	if bytes.Contains(readFile(t, path), []byte(secrets["auth:A:api_key"])) {
		t.Fatal("the wiped value's bytes are still in the file")
	}
}

func TestLegacyWipeRunsOnlyOnMigration(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	db.Close()
	r := raw(t, path)
	mustExec(t, r, `INSERT INTO snug_secrets (key, value) VALUES ('auth:A:api_key', 'v')`)
	r.Close()
	for range 3 {
		mustReopen(t, path).Close()
	}
	if n := queryInt(t, raw(t, path), `SELECT count(*) FROM snug_secrets WHERE key = 'auth:A:api_key'`); n != 1 {
		t.Fatal("a three-segment key written to a v6 file was wiped by a routine open")
	}
}

func TestMigrationsFromOlderVersions(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	db.Close()
	r := raw(t, path)
	// A v1-shaped file: the blob table, the v3 auth table, no v6 column.
	mustExec(t, r, `CREATE TABLE snug_app_data (namespace TEXT PRIMARY KEY, bytes BLOB, updated_at TEXT)`)
	mustExec(t, r, `CREATE TABLE snug_auth_specs (app_id TEXT PRIMARY KEY, spec TEXT)`)
	mustExec(t, r, `DROP TABLE snug_connections`)
	mustExec(t, r, `ALTER TABLE snug_app_versions DROP COLUMN runtime_contract_json`)
	mustExec(t, r, "PRAGMA user_version = 1")
	r.Close()

	mustReopen(t, path).Close()
	r = raw(t, path)
	if v := queryInt(t, r, "PRAGMA user_version"); v != 6 {
		t.Fatalf("user_version %d", v)
	}
	if n := queryInt(t, r, `SELECT count(*) FROM sqlite_master WHERE name IN ('snug_app_data', 'snug_auth_specs')`); n != 0 {
		t.Fatal("legacy tables survived the migration")
	}
	if n := queryInt(t, r, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'snug\_%' ESCAPE '\'`); n != 13 {
		t.Fatalf("%d hub tables", n)
	}
	if n := queryInt(t, r, `SELECT count(*) FROM pragma_table_info('snug_app_versions') WHERE name = 'runtime_contract_json'`); n != 1 {
		t.Fatal("the v6 column was not added")
	}
}

func TestNonSQLiteBytesAreQuarantinedUntilOpenFresh(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, userdb.FileName)
	junk := []byte("this is not a database, it is a grocery list\n")
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := userdb.Open(path, userdb.Options{})
	ce, ok := errors.AsType[*userdb.CorruptError](err)
	if !ok || !errors.Is(err, userdb.ErrCorrupt) {
		t.Fatalf("open: %v, want corrupt", err)
	}
	if !bytes.Equal(readFile(t, ce.Quarantine), junk) || !bytes.Equal(readFile(t, path), junk) {
		t.Fatal("the quarantine copy or the original lost bytes")
	}
	// Opening again neither makes a fresh file nor a second copy.
	if _, err := userdb.Open(path, userdb.Options{}); !errors.Is(err, userdb.ErrCorrupt) {
		t.Fatalf("second open: %v", err)
	}
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 1 {
		t.Fatalf("quarantine copies %v", m)
	}
	db, err := userdb.OpenFresh(path, userdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if !bytes.Equal(readFile(t, ce.Quarantine), junk) {
		t.Fatal("the quarantine copy changed")
	}
	if v := queryInt(t, raw(t, path), "PRAGMA user_version"); v != 6 {
		t.Fatalf("fresh file at v%d", v)
	}
}

func TestDamagedSQLiteIsQuarantined(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	mustInstall(t, db, "A")
	db.Close()
	b := readFile(t, path)
	for i := 100; i < len(b); i++ {
		b[i] = 0xA5 // keep the magic, wreck the rest
	}
	os.WriteFile(path, b, 0o600)
	if _, err := userdb.Open(path, userdb.Options{}); !errors.Is(err, userdb.ErrCorrupt) {
		t.Fatalf("open: %v, want corrupt", err)
	}
}

func TestProtectedFileIsNeverQuarantinedOrTouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), userdb.FileName)
	content := append([]byte("SNUGENC1\n\x01"), bytes.Repeat([]byte{7}, 300)...)
	os.WriteFile(path, content, 0o600)
	if _, err := userdb.Open(path, userdb.Options{}); !errors.Is(err, userdb.ErrProtected) {
		t.Fatalf("open: %v, want protected", err)
	}
	if _, err := userdb.OpenFresh(path, userdb.Options{}); !errors.Is(err, userdb.ErrProtected) {
		t.Fatalf("open fresh: %v, want protected", err)
	}
	if !bytes.Equal(readFile(t, path), content) {
		t.Fatal("the protected file changed")
	}
	assertNoSiblings(t, path)
}

func TestFileRules(t *testing.T) {
	t.Run("symlink", func(t *testing.T) {
		dir := t.TempDir()
		db, target := mustOpen(t, userdb.Options{})
		db.Close()
		link := filepath.Join(dir, userdb.FileName)
		os.Symlink(target, link)
		if _, err := userdb.Open(link, userdb.Options{}); !errors.Is(err, userdb.ErrUnsafeFile) {
			t.Fatalf("open through a symlink: %v", err)
		}
	})
	t.Run("readable by others", func(t *testing.T) {
		db, path := mustOpen(t, userdb.Options{})
		db.Close()
		os.Chmod(path, 0o644)
		if _, err := userdb.Open(path, userdb.Options{}); !errors.Is(err, userdb.ErrUnsafeFile) {
			t.Fatalf("open 0644: %v", err)
		}
	})
	t.Run("hard link", func(t *testing.T) {
		db, path := mustOpen(t, userdb.Options{})
		db.Close()
		os.Link(path, path+".other")
		if _, err := userdb.Open(path, userdb.Options{}); !errors.Is(err, userdb.ErrUnsafeFile) {
			t.Fatalf("open with two links: %v", err)
		}
	})
	t.Run("directory writable by others", func(t *testing.T) {
		dir := t.TempDir()
		os.Chmod(dir, 0o777)
		if _, err := userdb.Open(filepath.Join(dir, userdb.FileName), userdb.Options{}); !errors.Is(err, userdb.ErrUnsafeFile) {
			t.Fatalf("open in a 0777 directory: %v", err)
		}
	})
	t.Run("not a regular file", func(t *testing.T) {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, userdb.FileName), 0o700)
		if _, err := userdb.Open(filepath.Join(dir, userdb.FileName), userdb.Options{}); err == nil {
			t.Fatal("opened a directory")
		}
	})
	t.Run("in use", func(t *testing.T) {
		_, path := mustOpen(t, userdb.Options{})
		if _, err := userdb.Open(path, userdb.Options{}); !errors.Is(err, userdb.ErrInUse) {
			t.Fatalf("second open: %v, want in use", err)
		}
	})
}

// assertNoSiblings checks that nothing was created next to path.
func assertNoSiblings(t *testing.T, path string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if e.Name() != filepath.Base(path) {
			t.Fatalf("unexpected file %s next to the user database", e.Name())
		}
	}
}
