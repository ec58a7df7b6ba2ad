package userdb_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/dsh-browser/broker/snug/userdb"
)

var ctx = context.Background()

// mustOpen opens a new user database in a private temporary directory.
func mustOpen(t testing.TB, opts userdb.Options) (*userdb.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), userdb.FileName)
	db, err := userdb.Open(path, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func mustReopen(t testing.TB, path string) *userdb.DB {
	t.Helper()
	db, err := userdb.Open(path, userdb.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// raw opens the file directly with SQLite, as another program would.
func raw(t testing.TB, path string) *sql.DB {
	t.Helper()
	r, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	r.SetMaxOpenConns(1)
	t.Cleanup(func() { r.Close() })
	return r
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func queryInt(t testing.TB, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func queryStrings(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustInstall installs a small app.
func mustInstall(t testing.TB, db *userdb.DB, name string) userdb.App {
	t.Helper()
	app, err := db.Install(ctx, userdb.AppMeta{DisplayName: name}, "<html>"+name+"</html>")
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	return app
}

// run materialises app, runs each statement and writes back, failing the
// test on any error.
func run(t testing.TB, db *userdb.DB, appID string, stmts ...string) [][]any {
	t.Helper()
	var last [][]any
	for _, s := range stmts {
		rows, err := tryRun(db, appID, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		last = rows
	}
	return last
}

// tryRun is one request: materialise, exec, write back.
func tryRun(db *userdb.DB, appID, stmt string, params ...any) ([][]any, error) {
	rt, err := db.Materialise(ctx, appID)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	_, rows, err := rt.Exec(ctx, stmt, params)
	if err != nil {
		return nil, err
	}
	return rows, rt.WriteBack(ctx)
}
