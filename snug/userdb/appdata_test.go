package userdb_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/userdb"
)

// The conformance checks of spec §8.2 and the reference materialiser's
// behaviours, one test each.

func TestAppDataTokenVectors(t *testing.T) {
	for in, want := range map[string]string{
		"A7F3B2C1-0D4E-4F5A-8B6C-9D0E1F2A3B4C": "a7f3b2c10d4e4f5a8b6c9d0e1f2a3b4c",
		"a7f3b2c1-0d4e-4f5a-8b6c-9d0e1f2a3b4c": "a7f3b2c10d4e4f5a8b6c9d0e1f2a3b4c",
		"starter--chess":                       "x" + fmt.Sprintf("%x", "starter--chess"),
		"":                                     "x",
		"a7f3b2c10d4e4f5a8b6c9d0e1f2a3b4c":     "x" + fmt.Sprintf("%x", "a7f3b2c10d4e4f5a8b6c9d0e1f2a3b4c"),
		"é":                                    "xc3a9",
	} {
		if got := userdb.AppDataToken(in); got != want {
			t.Errorf("AppDataToken(%q) = %q, want %q", in, got, want)
		}
	}
	if !strings.HasPrefix(userdb.AppDataToken("starter--chess"), "x73746172746572") {
		t.Fatal("the spec's starter--chess vector")
	}
}

func TestAppDataTokensAreUniqueOverAMixedSample(t *testing.T) {
	seen := map[string]string{}
	sample := []string{"", "x", "X", "app", "starter--chess", "starter-chess", "78", "x78"}
	for i := range 200 {
		sample = append(sample, fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), fmt.Sprintf("%08X-0000-4000-8000-%012x", i+1000, i), fmt.Sprintf("ns-%d", i))
	}
	for _, ns := range sample {
		tok := userdb.AppDataToken(ns)
		// UUIDs in either case are one namespace; anything else is distinct.
		key := ns
		if len(tok) == 32 && tok[0] != 'x' {
			key = strings.ToLower(ns)
		}
		if prev, ok := seen[tok]; ok && prev != key {
			t.Fatalf("%q and %q share the token %q", prev, ns, tok)
		}
		seen[tok] = key
	}
}

func TestObjectNameRule(t *testing.T) {
	valid := []string{"trades", "T", "a1_b", "snug_kv", strings.Repeat("a", 41), "Snug", "appx", "sqlitex"}
	invalid := []string{"", "1trades", "has-dash", "has.dot", "has space", strings.Repeat("a", 42), `evil"`, "_x",
		"snug_evil", "SNUG_x", "Snug_kv2", "snug_kv2", "sqlite_x", "app_deadbeef__x", "APP_deadbeef__x", "trädes"}
	for _, n := range valid {
		if !userdb.ValidObjectName(n) {
			t.Errorf("%q should be valid", n)
		}
	}
	for _, n := range invalid {
		if userdb.ValidObjectName(n) {
			t.Errorf("%q should be invalid", n)
		}
	}
}

func TestAtRestLayoutAndRegistry(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE trades (id INTEGER PRIMARY KEY, qty REAL)", "INSERT INTO trades (qty) VALUES (2.5)")
	rt, _ := db.Materialise(ctx, app.ID)
	rt.KVSet(ctx, "theme", []byte(`"dark"`))
	if err := rt.WriteBack(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	db.Close()
	r := raw(t, path)
	tok := userdb.AppDataToken(app.ID)
	rest := queryStrings(t, r, `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'app\_%' ESCAPE '\' ORDER BY name`)
	want := []string{userdb.RestTableName(tok, "snug_kv"), userdb.RestTableName(tok, "trades")}
	if !slices.Equal(rest, want) {
		t.Fatalf("at rest %v, want %v", rest, want)
	}
	var schemaJSON, token string
	r.QueryRow(`SELECT schema_json, token FROM snug_app_schemas WHERE app_id = ?`, app.ID).Scan(&schemaJSON, &token)
	if token != tok || !strings.Contains(schemaJSON, `"ddl":"CREATE TABLE trades (id INTEGER PRIMARY KEY, qty REAL)"`) || strings.Contains(schemaJSON, "snug_kv") {
		t.Fatalf("registry %s (token %s)", schemaJSON, token)
	}
	if got := queryStrings(t, r, `SELECT ddl FROM snug_app_migrations WHERE app_id = ? ORDER BY seq`, app.ID); !slices.Equal(got, []string{"CREATE TABLE trades (id INTEGER PRIMARY KEY, qty REAL)"}) {
		t.Fatalf("audit %v", got)
	}
	if n := queryInt(t, r, `SELECT uses_db FROM snug_apps WHERE app_id = ?`, app.ID); n != 1 {
		t.Fatal("uses_db is not 1 with data at rest")
	}
}

func TestUsesDBBecomesOneOnceDataIsAtRest(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "SELECT 1")
	if a, _, _ := db.OpenApp(ctx, app.ID); a.UsesDB {
		t.Fatal("uses_db set by a read")
	}
	run(t, db, app.ID, "CREATE TABLE t (v)")
	if a, _, _ := db.OpenApp(ctx, app.ID); !a.UsesDB {
		t.Fatal("uses_db not set")
	}
}

func TestHostileQuotedNameIsRefusedAtPersistSecretsAndVictimIntact(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	victim := mustInstall(t, db, "Victim")
	attacker := mustInstall(t, db, "Attacker")
	run(t, db, victim.ID, "CREATE TABLE safe (v TEXT)", "INSERT INTO safe VALUES ('kept')")
	db.Close()
	r := raw(t, path)
	mustExec(t, r, `INSERT INTO snug_secrets (key, value) VALUES ('byok', 'sk-sensitive')`)
	r.Close()
	before := readFile(t, path)
	db = mustReopen(t, path)

	rt, err := db.Materialise(ctx, attacker.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.Exec(ctx, `CREATE TABLE "evil""; DROP TABLE snug_secrets;--"(x)`, nil); err != nil {
		t.Fatalf("the statement is legal inside the runtime: %v", err)
	}
	err = rt.WriteBack(ctx)
	rt.Close()
	if !errors.Is(err, userdb.ErrInvalidName) || userdb.Code(err) != "USERDB_INVALID_NAME" || strings.Contains(err.Error(), "DROP") {
		t.Fatalf("write-back: %v, want USERDB_INVALID_NAME without the name in it", err)
	}
	db.Close()
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("a refused write-back changed the file")
	}
	r = raw(t, path)
	if n := queryInt(t, r, `SELECT count(*) FROM snug_secrets WHERE value = 'sk-sensitive'`); n != 1 {
		t.Fatal("secrets touched")
	}
	if got := queryStrings(t, r, "SELECT v FROM "+userdb.RestTableName(userdb.AppDataToken(victim.ID), "safe")); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("victim rows %v", got)
	}
}

func TestReservedNamesFailPersistence(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	for _, name := range []string{"snug_evil", "APP_deadbeef__x", "Snug_kv2"} {
		app := mustInstall(t, db, name)
		_, err := tryRun(db, app.ID, fmt.Sprintf(`CREATE TABLE "%s" (v)`, name))
		if !errors.Is(err, userdb.ErrInvalidName) {
			t.Errorf("%s: %v, want USERDB_INVALID_NAME", name, err)
		}
		// Indexes, views and triggers are held to the same rule.
		for _, ddl := range []string{
			`CREATE TABLE ok (v)`,
		} {
			run(t, db, app.ID, ddl)
		}
		for _, ddl := range []string{
			fmt.Sprintf(`CREATE INDEX "%s" ON ok (v)`, name),
			fmt.Sprintf(`CREATE VIEW "%s" AS SELECT v FROM ok`, name),
			fmt.Sprintf(`CREATE TRIGGER "%s" AFTER INSERT ON ok BEGIN SELECT 1; END`, name),
		} {
			if _, err := tryRun(db, app.ID, ddl); !errors.Is(err, userdb.ErrInvalidName) {
				t.Errorf("%s: %v", ddl, err)
			}
		}
	}
	db.Close()
	if n := queryInt(t, raw(t, path), `SELECT count(*) FROM sqlite_master WHERE lower(name) LIKE '%evil%' OR lower(name) LIKE '%deadbeef%' OR lower(name) LIKE '%kv2%'`); n != 0 {
		t.Fatal("a reserved name reached the file")
	}
}

func TestNameLengthAtAndPastTheLimit(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	if _, err := tryRun(db, app.ID, "CREATE TABLE "+strings.Repeat("a", 41)+" (v)"); err != nil {
		t.Fatalf("41 characters: %v", err)
	}
	if _, err := tryRun(db, app.ID, "CREATE TABLE "+strings.Repeat("b", 42)+" (v)"); !errors.Is(err, userdb.ErrInvalidName) {
		t.Fatalf("42 characters: %v", err)
	}
}

func TestFailedPersistKeepsThePreviousStateOfTheApp(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE good (v TEXT)", "INSERT INTO good VALUES ('v1')")
	rt, _ := db.Materialise(ctx, app.ID)
	rt.Exec(ctx, `CREATE TABLE "bad name!" (x)`, nil)
	rt.Exec(ctx, `INSERT INTO good VALUES ('v2')`, nil)
	if err := rt.WriteBack(ctx); !errors.Is(err, userdb.ErrInvalidName) {
		t.Fatalf("write-back: %v", err)
	}
	rt.Close()
	if rows := run(t, db, app.ID, "SELECT v FROM good"); len(rows) != 1 || rows[0][0] != "v1" {
		t.Fatalf("rows %v, want only v1", rows)
	}
}

func TestAppBCannotSelectAppATableByEitherName(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	a := mustInstall(t, db, "A")
	b := mustInstall(t, db, "B")
	run(t, db, a.ID, "CREATE TABLE secrets_a (v TEXT)", "INSERT INTO secrets_a VALUES ('a-only')")
	run(t, db, b.ID, "CREATE TABLE t (v TEXT)")
	for _, q := range []string{
		"SELECT * FROM secrets_a",
		`SELECT * FROM "` + userdb.RestTableName(userdb.AppDataToken(a.ID), "secrets_a") + `"`,
		"SELECT * FROM main.secrets_a",
		"SELECT * FROM snug_secrets",
		"SELECT * FROM snug_apps",
	} {
		if rows, err := tryRun(db, b.ID, q); err == nil {
			t.Errorf("%s answered %v", q, rows)
		}
	}
	// sqlite_master shows B its own objects only.
	rows := run(t, db, b.ID, "SELECT name FROM sqlite_master")
	if len(rows) != 1 || rows[0][0] != "t" {
		t.Fatalf("B's sqlite_master: %v", rows)
	}
}

func TestSandboxRefusesWhatReachesOutside(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	a := mustInstall(t, db, "A")
	b := mustInstall(t, db, "B")
	run(t, db, b.ID, "CREATE TABLE t (v TEXT)", "INSERT INTO t VALUES ('b')")
	outside := filepath.Join(t.TempDir(), "stolen.db")
	forbidden := []string{
		"ATTACH '" + path + "' AS u",
		"ATTACH 'file:" + path + "?mode=ro' AS u",
		"ATTACH ':memory:' AS m",
		"VACUUM INTO '" + outside + "'",
		"VACUUM",
		"SELECT load_extension('libc.so.6')",
		"PRAGMA writable_schema = 1",
		"PRAGMA journal_mode = WAL",
		"PRAGMA temp_store_directory = '/tmp'",
		"PRAGMA max_page_count = 1000000000",
		"PRAGMA user_version = 7",
		"BEGIN",
		"SAVEPOINT s",
		"CREATE VIRTUAL TABLE f USING fts5(x)",
	}
	for _, q := range forbidden {
		_, err := tryRun(db, a.ID, q)
		if !errors.Is(err, userdb.ErrForbidden) {
			t.Errorf("%s: %v, want DB_FORBIDDEN_STATEMENT", q, err)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("VACUUM INTO wrote a file")
	}
	// Allowed: pragmas that read, and the per-request connection settings.
	for _, q := range []string{"PRAGMA table_info('t')", "PRAGMA foreign_keys = ON", "PRAGMA user_version", "SELECT * FROM pragma_table_list"} {
		if _, err := tryRun(db, a.ID, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

func TestViewsAndTriggersNamingOtherTablesFindNothing(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	a := mustInstall(t, db, "A")
	b := mustInstall(t, db, "B")
	run(t, db, b.ID, "CREATE TABLE victim (v TEXT)", "INSERT INTO victim VALUES ('b-data')")
	restB := userdb.RestTableName(userdb.AppDataToken(b.ID), "victim")
	// SQLite accepts a view on a missing table; using it finds nothing.
	run(t, db, a.ID,
		"CREATE VIEW peek AS SELECT * FROM snug_secrets",
		`CREATE VIEW peek2 AS SELECT * FROM "`+restB+`"`,
		"CREATE TABLE log (v TEXT)",
		`CREATE TRIGGER wipe AFTER INSERT ON log BEGIN DELETE FROM "`+restB+`"; DELETE FROM snug_secrets; END`,
	)
	for _, q := range []string{"SELECT * FROM peek", "SELECT * FROM peek2", "INSERT INTO log VALUES ('x')"} {
		if _, err := tryRun(db, a.ID, q); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
	db.Close()
	r := raw(t, path)
	if got := queryStrings(t, r, `SELECT v FROM "`+restB+`"`); !slices.Equal(got, []string{"b-data"}) {
		t.Fatalf("B's rows %v", got)
	}
	// The at-rest file holds A's views and triggers in the registry only.
	if n := queryInt(t, r, `SELECT count(*) FROM sqlite_master WHERE type IN ('view', 'trigger')`); n != 0 {
		t.Fatalf("%d views or triggers at rest", n)
	}
}

func TestExecTakesExactlyOneStatement(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	run(t, db, app.ID, "CREATE TABLE t (v)")
	for _, q := range []string{"INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)", "SELECT 1;SELECT 2"} {
		if _, err := tryRun(db, app.ID, q); !errors.Is(err, userdb.ErrMultiStatement) {
			t.Errorf("%q: %v", q, err)
		}
	}
	for _, q := range []string{"", "  -- nothing", "/* */ ;"} {
		if _, err := tryRun(db, app.ID, q); !errors.Is(err, userdb.ErrSQL) {
			t.Errorf("%q: %v", q, err)
		}
	}
	for _, q := range []string{"INSERT INTO t VALUES (';');", "SELECT 1; -- trailing", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; SELECT 2; END;"} {
		if _, err := tryRun(db, app.ID, q); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
	if rows := run(t, db, app.ID, "SELECT count(*) FROM t"); rows[0][0] != int64(1) {
		t.Fatalf("rows %v", rows)
	}
}

func TestObjectsRoundTripAcrossReopen(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID,
		"CREATE TABLE trades (id INTEGER PRIMARY KEY AUTOINCREMENT, symbol TEXT NOT NULL, qty REAL DEFAULT 0)",
		"CREATE TABLE equities (symbol TEXT PRIMARY KEY, name TEXT, parent TEXT REFERENCES equities(symbol)) WITHOUT ROWID",
		"CREATE TABLE strict_t (a INTEGER, b TEXT) STRICT",
		"CREATE TABLE gen_t (price REAL, qty REAL, total REAL GENERATED ALWAYS AS (price * qty) STORED, half REAL AS (price / 2))",
		"CREATE TABLE blob_t (payload BLOB)",
		"CREATE TABLE plain (v)",
		"CREATE INDEX idx_trades_symbol ON trades (symbol)",
		"CREATE VIEW v_totals AS SELECT symbol, SUM(qty) AS total FROM trades GROUP BY symbol",
		"CREATE TABLE audit (n INTEGER)",
		"CREATE TRIGGER trg_trades AFTER INSERT ON trades BEGIN INSERT INTO audit VALUES (NEW.id); END",
		"INSERT INTO trades (symbol, qty) VALUES ('AAPL', 3)",
		"INSERT INTO trades (symbol, qty) VALUES ('MSFT', 1)",
		"DELETE FROM trades WHERE symbol = 'MSFT'",
		"INSERT INTO equities VALUES ('AAPL', 'Apple', NULL)",
		"INSERT INTO strict_t VALUES (1, 'one')",
		"INSERT INTO gen_t (price, qty) VALUES (10, 4)",
		"INSERT INTO blob_t VALUES (x'DEADBEEF00FF')",
		"INSERT INTO plain (rowid, v) VALUES (42, 'at 42')",
	)
	db.Close()
	db = mustReopen(t, path)
	names := run(t, db, app.ID, "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite%' ORDER BY name")
	var got []string
	for _, r := range names {
		got = append(got, r[0].(string))
	}
	want := []string{"audit", "blob_t", "equities", "gen_t", "idx_trades_symbol", "plain", "strict_t", "trades", "trg_trades", "v_totals"}
	if !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	check := func(q string, want ...any) {
		t.Helper()
		rows := run(t, db, app.ID, q)
		if len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
			t.Errorf("%s = %v, want %v", q, rows, want)
		}
	}
	check("SELECT total, half FROM gen_t", 40.0, 5.0)
	check("SELECT payload FROM blob_t", []byte{0xde, 0xad, 0xbe, 0xef, 0, 0xff})
	check("SELECT total FROM v_totals", 3.0)
	check("SELECT rowid, v FROM plain", int64(42), "at 42")
	check("SELECT name FROM equities", "Apple")
	check("SELECT typeof(a), b FROM strict_t", "integer", "one")
	if _, err := tryRun(db, app.ID, "INSERT INTO strict_t VALUES ('not an int', 'x')"); err == nil {
		t.Error("STRICT was lost")
	}
	// AUTOINCREMENT continues past the deleted id 2, and the trigger fires.
	run(t, db, app.ID, "INSERT INTO trades (symbol, qty) VALUES ('GOOG', 1)")
	check("SELECT max(id) FROM trades", int64(3))
	check("SELECT group_concat(n) FROM audit", "1,2,3")
	// The schema is the verbatim DDL: WITHOUT ROWID and STRICT survive.
	check("SELECT sql FROM sqlite_master WHERE name = 'equities'", "CREATE TABLE equities (symbol TEXT PRIMARY KEY, name TEXT, parent TEXT REFERENCES equities(symbol)) WITHOUT ROWID")
}

func TestStandaloneExportHoldsNaturalNamesOnly(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app, err := db.Install(ctx, userdb.AppMeta{DisplayName: "Chess"}, "<html/>")
	if err != nil {
		t.Fatal(err)
	}
	run(t, db, app.ID, "CREATE TABLE moves (san TEXT)", "INSERT INTO moves VALUES ('e4')")
	rt, _ := db.Materialise(ctx, app.ID)
	image, err := rt.Export(ctx)
	rt.Close()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "export.sqlite")
	os.WriteFile(p, image, 0o600)
	r := raw(t, p)
	if got := queryStrings(t, r, "SELECT name FROM sqlite_master ORDER BY name"); !slices.Equal(got, []string{"moves"}) {
		t.Fatalf("export holds %v", got)
	}
	if got := queryStrings(t, r, "SELECT san FROM moves"); !slices.Equal(got, []string{"e4"}) {
		t.Fatalf("rows %v", got)
	}
}

func TestImportReplacesTheAppDatabase(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE old (v)")
	p := filepath.Join(t.TempDir(), "in.sqlite")
	src, _ := sql.Open("sqlite", p)
	src.Exec("PRAGMA page_size = 8192")
	src.Exec("CREATE TABLE fresh (v TEXT)")
	src.Exec("INSERT INTO fresh VALUES ('imported')")
	src.Close()
	rt, _ := db.Materialise(ctx, app.ID)
	if err := rt.Import(ctx, readFile(t, p)); err != nil {
		t.Fatal(err)
	}
	if err := rt.WriteBack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Import(ctx, []byte("not sqlite")); !errors.Is(err, userdb.ErrBadImport) {
		t.Fatalf("bad import: %v", err)
	}
	rt.Close()
	if rows := run(t, db, app.ID, "SELECT name FROM sqlite_master"); len(rows) != 1 || rows[0][0] != "fresh" {
		t.Fatalf("after import %v", rows)
	}
	if rows := run(t, db, app.ID, "SELECT v FROM fresh"); rows[0][0] != "imported" {
		t.Fatalf("rows %v", rows)
	}
}

func TestImportedImageIsHeldToTheNameRule(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE keep (v)", "INSERT INTO keep VALUES (1)")
	p := filepath.Join(t.TempDir(), "in.sqlite")
	src, _ := sql.Open("sqlite", p)
	src.Exec(`CREATE TABLE snug_secrets (key, value)`)
	src.Exec(`INSERT INTO snug_secrets VALUES ('byok', 'overwritten')`)
	src.Close()
	rt, _ := db.Materialise(ctx, app.ID)
	if err := rt.Import(ctx, readFile(t, p)); err != nil {
		t.Fatal(err)
	}
	if err := rt.WriteBack(ctx); !errors.Is(err, userdb.ErrInvalidName) {
		t.Fatalf("write-back of an image with snug_secrets: %v", err)
	}
	rt.Close()
	db.Close()
	if n := queryInt(t, raw(t, path), "SELECT count(*) FROM snug_secrets"); n != 0 {
		t.Fatal("the import reached the hub's secrets")
	}
}

func TestReadOnlySessionLeavesTheFileByteIdentical(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE t (v TEXT)", "INSERT INTO t VALUES ('x')")
	before := readFile(t, path)
	run(t, db, app.ID, "SELECT v FROM t", "SELECT count(*) FROM t", "PRAGMA table_info('t')")
	rt, _ := db.Materialise(ctx, app.ID)
	rt.KVGet(ctx, "missing")
	rt.Export(ctx)
	rt.WriteBack(ctx)
	rt.Close()
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("a read-only session changed the file")
	}
}

func TestKVRoundTripsAcrossReopen(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	rt, _ := db.Materialise(ctx, app.ID)
	if _, ok, err := rt.KVGet(ctx, "theme"); ok || err != nil {
		t.Fatalf("absent key: %v %v", ok, err)
	}
	rt.KVSet(ctx, "theme", []byte(`{"dark":true}`))
	if err := rt.WriteBack(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	db.Close()
	db = mustReopen(t, path)
	rt, _ = db.Materialise(ctx, app.ID)
	defer rt.Close()
	v, ok, err := rt.KVGet(ctx, "theme")
	if !ok || err != nil || string(v) != `{"dark":true}` {
		t.Fatalf("kvGet %s %v %v", v, ok, err)
	}
	// The app's own SQL sees snug_kv, and a reshaped snug_kv is refused.
	if _, _, err := rt.Exec(ctx, "DROP TABLE snug_kv", nil); err != nil {
		t.Fatal(err)
	}
	rt.Exec(ctx, "CREATE TABLE snug_kv (k, v, extra)", nil)
	if err := rt.WriteBack(ctx); !errors.Is(err, userdb.ErrInvalidName) {
		t.Fatalf("reshaped snug_kv: %v", err)
	}
}

func TestOverCapWriteBackRollsBackWhole(t *testing.T) {
	const limit = 512 << 10
	db, path := mustOpen(t, userdb.Options{MaxBytes: limit})
	other := mustInstall(t, db, "Other")
	run(t, db, other.ID, "CREATE TABLE big (v BLOB)", "INSERT INTO big VALUES (zeroblob(300000))")
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE t (v TEXT)", "INSERT INTO t VALUES ('small')")
	before := readFile(t, path)
	rt, _ := db.Materialise(ctx, app.ID)
	if _, _, err := rt.Exec(ctx, "INSERT INTO t VALUES (?)", []any{strings.Repeat("x", 250<<10)}); err != nil {
		t.Fatalf("the runtime accepts the insert: %v", err)
	}
	err := rt.WriteBack(ctx)
	rt.Close()
	if !errors.Is(err, userdb.ErrTooLarge) || userdb.Code(err) != "USERDB_TOO_LARGE" {
		t.Fatalf("write-back: %v", err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("the over-cap write-back left changes")
	}
	if rows := run(t, db, app.ID, "SELECT count(*) FROM t"); rows[0][0] != int64(1) {
		t.Fatalf("rows %v", rows)
	}
}

func TestCapAtAndJustPastTheLimit(t *testing.T) {
	// The cap counts pages: find the size after a write, then set the cap
	// exactly there (allowed) and one byte under it (refused).
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE t (v TEXT)")
	db.Close()
	probe := func(limit int64) error {
		dir := t.TempDir()
		p := filepath.Join(dir, userdb.FileName)
		os.WriteFile(p, readFile(t, path), 0o600)
		db, err := userdb.Open(p, userdb.Options{MaxBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = tryRun(db, app.ID, "INSERT INTO t VALUES (?)", strings.Repeat("y", 100<<10))
		if err == nil {
			fi, _ := os.Stat(p)
			if fi.Size() > limit {
				t.Fatalf("file %d bytes over the cap %d", fi.Size(), limit)
			}
			return nil
		}
		return err
	}
	if err := probe(userdb.MaxBytes); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, userdb.FileName)
	os.WriteFile(p, readFile(t, path), 0o600)
	db = mustReopen(t, p)
	tryRun(db, app.ID, "INSERT INTO t VALUES (?)", strings.Repeat("y", 100<<10))
	db.Close()
	fi, _ := os.Stat(p)
	if err := probe(fi.Size()); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	if err := probe(fi.Size() - 1); !errors.Is(err, userdb.ErrTooLarge) {
		t.Fatalf("one byte under: %v", err)
	}
}

func TestRealCapOf64MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Big")
	run(t, db, app.ID, "CREATE TABLE b (v BLOB)")
	// 60 MiB fits.
	for range 6 {
		if _, err := tryRun(db, app.ID, "INSERT INTO b VALUES (zeroblob(10485760))"); err != nil {
			t.Fatalf("under the cap: %v", err)
		}
	}
	// The runtime itself stops at the cap (its max_page_count), or the
	// write-back does: either way nothing past 64 MiB lands.
	_, err := tryRun(db, app.ID, "INSERT INTO b VALUES (zeroblob(8388608))")
	if err == nil {
		t.Fatal("a write past 64 MiB succeeded")
	}
	fi, _ := os.Stat(path)
	if fi.Size() > userdb.MaxBytes {
		t.Fatalf("file is %d bytes", fi.Size())
	}
	if rows := run(t, db, app.ID, "SELECT count(*) FROM b"); rows[0][0] != int64(6) {
		t.Fatalf("rows %v", rows)
	}
}

func TestConcurrentRequestsOfOneAppAreSerialised(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "P")
	run(t, db, app.ID, "CREATE TABLE c (n INTEGER)", "INSERT INTO c VALUES (0)")
	done := make(chan error)
	for range 16 {
		go func() {
			_, err := tryRun(db, app.ID, "UPDATE c SET n = n + 1")
			done <- err
		}()
	}
	for range 16 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if rows := run(t, db, app.ID, "SELECT n FROM c"); rows[0][0] != int64(16) {
		t.Fatalf("n = %v, want 16: an update was lost", rows[0][0])
	}
}
