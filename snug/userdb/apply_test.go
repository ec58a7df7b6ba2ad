package userdb_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/userdb"
)

func TestScratchHoldsOnlyTheAppsOwnTables(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	other := mustInstall(t, db, "Other")
	run(t, db, other.ID, `CREATE TABLE diary (entry TEXT)`, `INSERT INTO diary VALUES ('private')`)
	db.SetSecret(ctx, "byok:x", byokSecret)

	rt, err := db.Scratch(ctx, app.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, rows, _, err := rt.Read(ctx, `SELECT name FROM sqlite_master ORDER BY name`, 100)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r[0].(string))
	}
	if !slices.Equal(names, []string{"books", "books_by_finished", "snug_kv", "sqlite_autoindex_snug_kv_1", "sqlite_sequence"}) {
		t.Fatalf("the copy holds %v", names)
	}
	for _, q := range []string{
		`SELECT * FROM diary`, `SELECT * FROM app_` + userdb.AppDataToken(other.ID) + `__diary`, `SELECT * FROM snug_secrets`,
		`SELECT * FROM main.snug_apps`, `ATTACH 'file:x' AS x`,
	} {
		if _, _, _, err := rt.Read(ctx, q, 10); err == nil {
			t.Errorf("%s: read from the copy", q)
		}
	}
	if _, _, _, err := rt.Read(ctx, `UPDATE books SET title = 'x'`, 10); err == nil {
		t.Error("a write ran on the read-only copy")
	}
	if err := rt.WriteBack(ctx); err == nil {
		t.Error("a scratch copy was written back")
	}

	// A writable copy takes a write that never reaches the live data, and
	// does not hold the app's lock: the app's own requests go on.
	w, err := db.Scratch(ctx, app.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, err := w.Exec(ctx, `DELETE FROM books`, nil); err != nil {
		t.Fatal(err)
	}
	if rows := run(t, db, app.ID, `SELECT count(*) FROM books`); rows[0][0] != int64(2) {
		t.Fatal("a write on the copy reached the live data")
	}
}

func TestReadBoundsTheRows(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	rt, _ := db.Scratch(ctx, app.ID, true)
	defer rt.Close()
	for _, tc := range []struct {
		max  int
		rows int
		more bool
	}{{1, 1, true}, {2, 2, false}, {3, 2, false}} {
		cols, rows, more, err := rt.Read(ctx, `SELECT title FROM books ORDER BY id`, tc.max)
		if err != nil || len(rows) != tc.rows || more != tc.more || cols[0] != "title" {
			t.Errorf("max %d: %d rows, more %v, %v", tc.max, len(rows), more, err)
		}
	}
	if _, _, _, err := rt.Read(ctx, `SELECT 1; SELECT 2`, 10); !errors.Is(err, userdb.ErrMultiStatement) {
		t.Errorf("two statements: %v", err)
	}
}

const markMay = `UPDATE books SET finished = finished || ' (read)' WHERE finished LIKE '2026-05-%'`

func TestApplyPreviewsThenExecutesTheSameChanges(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	stmts := []string{markMay, `INSERT INTO books (title) VALUES ('Middlemarch')`, `DELETE FROM books WHERE title = 'Dune'`}

	scratch, _ := db.Scratch(ctx, app.ID, false)
	preview, kept, err := scratch.Apply(ctx, stmts, nil)
	scratch.Close()
	if err != nil || kept {
		t.Fatalf("preview: %v kept=%v", err, kept)
	}
	var got []string
	for _, c := range preview {
		got = append(got, fmt.Sprintf("%s %s %v -> %v", c.Op, c.Table, c.Before, c.After))
	}
	want := []string{
		`update books [1 'Dune' '2026-05-03'] -> [1 'Dune' '2026-05-03 (read)']`,
		`update books [2 'Emma' '2026-05-20'] -> [2 'Emma' '2026-05-20 (read)']`,
		`insert books [] -> [4 'Middlemarch' NULL]`,
		`delete books [1 'Dune' '2026-05-03 (read)'] -> []`,
	}
	if !slices.Equal(got, want) || !slices.Equal(preview[0].Columns, []string{"id", "title", "finished"}) {
		t.Fatalf("preview\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rows := run(t, db, app.ID, `SELECT count(*) FROM books WHERE finished LIKE '%(read)'`); rows[0][0] != int64(0) {
		t.Fatal("the preview changed the live data")
	}

	live, err := db.Materialise(ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	changes, kept, err := live.Apply(ctx, stmts, func(c []userdb.Change) bool { return userdb.Same(c, preview) })
	if err != nil || !kept || !userdb.Same(changes, preview) {
		t.Fatalf("execute: %v kept=%v", err, kept)
	}
	if err := live.WriteBack(ctx); err != nil {
		t.Fatal(err)
	}
	live.Close()
	rows := run(t, db, app.ID, `SELECT title || ':' || coalesce(finished, '-') FROM books ORDER BY id`)
	if len(rows) != 2 || rows[0][0] != "Emma:2026-05-20 (read)" || rows[1][0] != "Middlemarch:-" {
		t.Fatalf("after execution %v", rows)
	}
	// The change log is gone with the transaction.
	if rows := run(t, db, app.ID, `SELECT count(*) FROM sqlite_temp_master`); rows[0][0] != int64(0) {
		t.Fatal("the change log outlived its transaction")
	}
}

// TestApplyHaltsOnDrift: the same count of rows, different rows (a title
// edited between preview and approval): nothing is kept.
func TestApplyHaltsOnDrift(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	stmts := []string{markMay}
	scratch, _ := db.Scratch(ctx, app.ID, false)
	preview, _, err := scratch.Apply(ctx, stmts, nil)
	scratch.Close()
	if err != nil || len(preview) != 2 {
		t.Fatalf("preview %d %v", len(preview), err)
	}
	run(t, db, app.ID, `UPDATE books SET title = 'Dune Messiah' WHERE title = 'Dune'`)

	live, _ := db.Materialise(ctx, app.ID)
	changes, kept, err := live.Apply(ctx, stmts, func(c []userdb.Change) bool { return userdb.Same(c, preview) })
	if err != nil || kept || len(changes) != len(preview) {
		t.Fatalf("after drift: %v kept=%v, %d changes", err, kept, len(changes))
	}
	if err := live.WriteBack(ctx); err != nil {
		t.Fatal(err)
	}
	live.Close()
	if rows := run(t, db, app.ID, `SELECT count(*) FROM books WHERE finished LIKE '%(read)'`); rows[0][0] != int64(0) {
		t.Fatal("a drifted change was executed")
	}
}

func TestApplyRefusesSchemaChangesAndTampering(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	for _, stmts := range [][]string{
		{`ALTER TABLE books ADD COLUMN read INTEGER`},
		{markMay, `DROP TABLE books`},
		{markMay, `DELETE FROM temp.snug_changes`},
		{markMay, `UPDATE temp.snug_changes SET after = NULL`},
		{`CREATE TEMP TRIGGER snug_chg_x AFTER UPDATE ON books BEGIN DELETE FROM temp.snug_changes; END`, markMay},
		{`DROP TRIGGER temp.snug_chg_0_update`, markMay},
		{`SELECT * FROM temp.snug_changes`},
		{`BEGIN`},
		{`CREATE TEMP TABLE t (x)`},
		{`PRAGMA recursive_triggers = ON`, markMay},
		// A row REPLACE deletes fires no delete trigger: refused, not
		// previewed as a lone insert.
		{`INSERT OR REPLACE INTO books (id, title) VALUES (1, 'Dune Messiah')`},
	} {
		rt, _ := db.Scratch(ctx, app.ID, false)
		_, kept, err := rt.Apply(ctx, stmts, func([]userdb.Change) bool { return true })
		rt.Close()
		if err == nil || kept {
			t.Errorf("%q: kept=%v err=%v", stmts, kept, err)
		}
	}
	if rows := run(t, db, app.ID, `SELECT count(*) FROM pragma_table_info('books')`); rows[0][0] != int64(3) {
		t.Fatal("the schema changed")
	}
}

func TestApplyRecordsCascadesAndTablesWithoutRowid(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Tags")
	run(t, db, app.ID,
		`CREATE TABLE tags (name TEXT PRIMARY KEY, uses INTEGER) WITHOUT ROWID`,
		`CREATE TABLE audit (what TEXT)`,
		`CREATE TRIGGER audit_tags AFTER UPDATE ON tags BEGIN INSERT INTO audit VALUES ('tag ' || NEW.name); END`,
		`INSERT INTO tags VALUES ('sf', 1)`)
	rt, _ := db.Scratch(ctx, app.ID, false)
	defer rt.Close()
	changes, _, err := rt.Apply(ctx, []string{`UPDATE tags SET uses = uses + 1`}, nil)
	if err != nil || len(changes) != 2 || changes[0].Table != "tags" || changes[1].Table != "audit" || changes[1].After[0] != "'tag sf'" {
		t.Fatalf("changes %+v %v", changes, err)
	}
}

func TestApplyAtAndPastMaxChanges(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Many")
	run(t, db, app.ID, `CREATE TABLE n (x INTEGER)`)
	insert := func(n int) string {
		return fmt.Sprintf(`INSERT INTO n WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d) SELECT i FROM c`, n)
	}
	rt, _ := db.Scratch(ctx, app.ID, false)
	changes, _, err := rt.Apply(ctx, []string{insert(userdb.MaxChanges)}, nil)
	rt.Close()
	if err != nil || len(changes) != userdb.MaxChanges {
		t.Fatalf("at the bound: %d %v", len(changes), err)
	}
	rt, _ = db.Scratch(ctx, app.ID, false)
	_, _, err = rt.Apply(ctx, []string{insert(userdb.MaxChanges + 1)}, nil)
	rt.Close()
	if !errors.Is(err, userdb.ErrTooManyChanges) {
		t.Fatalf("past the bound: %v", err)
	}
}

func TestApplyRefusesARowReplaceDeletes(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	rt, _ := db.Scratch(ctx, app.ID, false)
	defer rt.Close()
	_, _, err := rt.Apply(ctx, []string{`INSERT OR REPLACE INTO books (id, title) VALUES (1, 'Dune Messiah')`}, nil)
	if !errors.Is(err, userdb.ErrForbidden) || !strings.Contains(err.Error(), "INSERT OR REPLACE deletes") {
		t.Fatalf("replace: %v", err)
	}
	// An upsert that updates in place is an update, and is shown as one.
	changes, _, err := rt.Apply(ctx, []string{`INSERT INTO books (id, title) VALUES (1, 'Dune Messiah') ON CONFLICT (id) DO UPDATE SET title = excluded.title`}, nil)
	if err != nil || len(changes) != 1 || changes[0].Op != "update" || changes[0].After[1] != "'Dune Messiah'" {
		t.Fatalf("upsert: %+v %v", changes, err)
	}
}
