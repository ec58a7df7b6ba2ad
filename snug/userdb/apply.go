package userdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"modernc.org/sqlite"
)

// The chat surface's data lane (spec Part IV §19) runs model-written SQL on
// an app's data. Reads run on a throwaway copy ([DB.Scratch]) that holds
// only the app's own tables; writes are previewed on such a copy and, once
// the user approves, run again on the live data ([Runtime.Apply]), kept
// only if they change exactly the rows the user saw.

// Names of the change log the data lane keeps while it applies statements:
// a temp table fed by temp triggers, both out of the app's reach (the
// authorizer refuses app SQL that touches them, or makes temp objects
// named snug_…).
const (
	changeLog           = "snug_changes"
	changeTriggerPrefix = "snug_chg_"
)

// Change is one row a statement changed, as SQL literals (SQLite's quote():
// 'text', 42, 1.5, X'0A', NULL), so that two changes compare exactly.
type Change struct {
	Table   string   `json:"table"`
	Op      string   `json:"op"` // insert, update or delete
	Columns []string `json:"columns"`
	// Before is the row before an update or delete, After the row after an
	// insert or update; nil when there is none.
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
	rowid  sql.NullInt64
}

// Same reports whether two change lists are the same changes to the same
// rows, in the same order: contents compared, not only counts.
func Same(a, b []Change) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Table != y.Table || x.Op != y.Op || x.rowid != y.rowid || !equalStrings(x.Before, y.Before) || !equalStrings(x.After, y.After) {
			return false
		}
	}
	return true
}

func equalStrings(a, b []string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ErrTooManyChanges: the statements change more rows than one approval
// may cover ([MaxChanges]); nothing was kept.
var ErrTooManyChanges = &Error{CodeForbidden, fmt.Sprintf("the change touches more than %d rows; narrow it", MaxChanges)}

// MaxChanges bounds the rows one [Runtime.Apply] may change.
const MaxChanges = 10_000

// Scratch returns a throwaway copy of app id's database: materialised as
// for a request, holding only the app's objects under their natural names
// (other apps' tables and the hub's are absent, not filtered), and never
// written back ([Runtime.WriteBack] refuses). It does not hold the app's
// lock past materialisation. With readOnly, SQLite's query_only is set on
// it too (a second wall: the copy is what isolates).
func (db *DB) Scratch(ctx context.Context, id string, readOnly bool) (*Runtime, error) {
	rt, err := db.Materialise(ctx, id)
	if err != nil {
		return nil, err
	}
	rt.unlock()
	rt.unlock = func() {}
	rt.scratch = true
	if readOnly {
		if err := rt.hub(func() error {
			_, err := rt.conn.ExecContext(ctx, "PRAGMA query_only = ON")
			return err
		}); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}

// Read runs one statement of model-written SQL and returns at most maxRows
// rows; more reports that there were more. Like [Runtime.Exec], it runs
// under the app's statement policy, and cells are the same.
func (rt *Runtime) Read(ctx context.Context, text string, maxRows int) (columns []string, rows [][]any, more bool, err error) {
	if rt.closed {
		return nil, nil, false, ErrClosed
	}
	if err := checkOne(text); err != nil {
		return nil, nil, false, err
	}
	rt.denied.Store(nil)
	columns, rows, more, err = rt.query(ctx, text, nil, maxRows)
	if err != nil {
		return nil, nil, false, rt.refusal(err)
	}
	return columns, rows, more, nil
}

// Apply runs stmts, in order and in one transaction, under the app's
// statement policy, recording every row they change (in any of the app's
// tables, through the app's own triggers too), and keeps them only if
// keep(changes) says so; otherwise it rolls them back. It returns the
// changes and whether they were kept. Call it on a fresh runtime: on a
// [DB.Scratch] copy to preview (keep nil), then on a materialised one to
// execute, with [Runtime.WriteBack] after it kept them.
//
// A statement that changes a schema or sets a PRAGMA is refused
// ([ErrForbidden]): the data lane changes data only; so is one that
// changes a row no trigger records (a row INSERT OR REPLACE deletes), since
// the preview could not show it. More than [MaxChanges] changed rows give
// [ErrTooManyChanges]. Nothing is kept on any error.
func (rt *Runtime) Apply(ctx context.Context, stmts []string, keep func([]Change) bool) (changes []Change, kept bool, err error) {
	if rt.closed {
		return nil, false, ErrClosed
	}
	cols := map[string][]string{}
	if err := rt.hub(func() error {
		if _, err := rt.conn.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
		return rt.logChanges(ctx, cols)
	}); err != nil {
		rt.rollback()
		return nil, false, err
	}
	// SQLite's pre-update hook sees every row change, those no trigger
	// fires for too (the rows INSERT OR REPLACE deletes): a count that
	// differs from the log's means a change the preview could not show.
	var seen atomic.Int64
	if err := rt.preUpdate(func(d sqlite.SQLitePreUpdateData) {
		if d.DatabaseName == "main" && !strings.HasPrefix(strings.ToLower(d.TableName), "sqlite_") {
			seen.Add(1)
		}
	}); err != nil {
		rt.rollback()
		return nil, false, err
	}
	defer rt.preUpdate(nil)
	rt.applying.Store(true)
	defer rt.applying.Store(false)
	ddl := len(rt.ddl)
	for _, s := range stmts {
		if _, _, err := rt.Exec(ctx, s, nil); err != nil {
			rt.rollback()
			return nil, false, err
		}
		if len(rt.ddl) != ddl {
			rt.ddl = rt.ddl[:ddl]
			rt.rollback()
			return nil, false, errorf(ErrForbidden, "a data change cannot change the schema: %q", s)
		}
		var n int
		if err := rt.hub(func() error {
			return rt.conn.QueryRowContext(ctx, "SELECT count(*) FROM temp."+changeLog).Scan(&n)
		}); err != nil {
			rt.rollback()
			return nil, false, err
		}
		if n > MaxChanges {
			rt.rollback()
			return nil, false, ErrTooManyChanges
		}
		if int64(n) != seen.Load() {
			rt.rollback()
			return nil, false, errorf(ErrForbidden, "%q changes rows in a way the preview cannot show (a row INSERT OR REPLACE deletes): write the DELETE or UPDATE out", s)
		}
	}
	if err := rt.hub(func() error {
		var err error
		changes, err = rt.readChanges(ctx, cols)
		return err
	}); err != nil {
		rt.rollback()
		return nil, false, err
	}
	if keep == nil || !keep(changes) {
		rt.rollback()
		return changes, false, nil
	}
	err = rt.hub(func() error {
		if err := rt.dropLog(ctx); err != nil {
			return err
		}
		_, err := rt.conn.ExecContext(ctx, "COMMIT")
		return err
	})
	if err != nil {
		rt.rollback()
		return nil, false, err
	}
	return changes, true, nil
}

// preUpdate registers fn as the connection's pre-update hook (nil removes
// it).
func (rt *Runtime) preUpdate(fn sqlite.PreUpdateHookFn) error {
	return rt.conn.Raw(func(dc any) error {
		h, ok := dc.(sqlite.HookRegisterer)
		if !ok {
			return errors.New("userdb: the SQLite driver has no pre-update hook")
		}
		h.RegisterPreUpdateHook(fn)
		return nil
	})
}

// logChanges creates the change log and a trigger per table and operation
// that records each changed row (hub mode, inside Apply's transaction).
func (rt *Runtime) logChanges(ctx context.Context, cols map[string][]string) error {
	if _, err := rt.conn.ExecContext(ctx, `CREATE TEMP TABLE `+changeLog+` (seq INTEGER PRIMARY KEY, tbl TEXT, op TEXT, rid INTEGER, before TEXT, after TEXT)`); err != nil {
		return err
	}
	rows, err := rt.conn.QueryContext(ctx, `SELECT name, wr FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return err
	}
	type table struct {
		name         string
		withoutRowid bool
	}
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.name, &t.withoutRowid); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for i, t := range tables {
		names, err := strings1(ctx, rt.conn, `SELECT name FROM pragma_table_xinfo(?, 'main') WHERE hidden IN (0, 2, 3) ORDER BY cid`, t.name)
		if err != nil {
			return err
		}
		cols[t.name] = names
		image := func(row string) string {
			parts := make([]string, len(names))
			for j, n := range names {
				parts[j] = "quote(" + row + "." + quoteIdent(n) + ")"
			}
			return "json_array(" + strings.Join(parts, ", ") + ")"
		}
		rid := func(row string) string {
			if t.withoutRowid {
				return "NULL"
			}
			return row + ".rowid"
		}
		lit := "'" + strings.ReplaceAll(t.name, "'", "''") + "'"
		for _, op := range []struct{ event, name, rid, before, after string }{
			{"INSERT", "insert", rid("NEW"), "NULL", image("NEW")},
			{"UPDATE", "update", rid("OLD"), image("OLD"), image("NEW")},
			{"DELETE", "delete", rid("OLD"), image("OLD"), "NULL"},
		} {
			q := fmt.Sprintf(`CREATE TEMP TRIGGER %s%d_%s AFTER %s ON main.%s BEGIN INSERT INTO temp.%s (tbl, op, rid, before, after) VALUES (%s, '%s', %s, %s, %s); END`,
				changeTriggerPrefix, i, op.name, op.event, quoteIdent(t.name), changeLog, lit, op.name, op.rid, op.before, op.after)
			if _, err := rt.conn.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("userdb: log changes of %s: %w", t.name, err)
			}
		}
	}
	return nil
}

func (rt *Runtime) readChanges(ctx context.Context, cols map[string][]string) ([]Change, error) {
	rows, err := rt.conn.QueryContext(ctx, `SELECT tbl, op, rid, before, after FROM temp.`+changeLog+` ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	changes := []Change{}
	for rows.Next() {
		var c Change
		var before, after sql.NullString
		if err := rows.Scan(&c.Table, &c.Op, &c.rowid, &before, &after); err != nil {
			return nil, err
		}
		c.Columns = cols[c.Table]
		for _, img := range []struct {
			raw sql.NullString
			dst *[]string
		}{{before, &c.Before}, {after, &c.After}} {
			if !img.raw.Valid {
				continue
			}
			if err := json.Unmarshal([]byte(img.raw.String), img.dst); err != nil {
				return nil, err
			}
		}
		changes = append(changes, c)
	}
	return changes, rows.Err()
}

// dropLog removes the change log's triggers and table.
func (rt *Runtime) dropLog(ctx context.Context) error {
	names, err := strings1(ctx, rt.conn, `SELECT name FROM temp.sqlite_master WHERE type = 'trigger' AND substr(name, 1, length(?1)) = ?1`, changeTriggerPrefix)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := rt.conn.ExecContext(ctx, "DROP TRIGGER temp."+quoteIdent(n)); err != nil {
			return err
		}
	}
	_, err = rt.conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+changeLog)
	return err
}

// rollback ends Apply's transaction, taking the change log with it (temp
// objects made inside a transaction go with its rollback).
func (rt *Runtime) rollback() {
	rt.hub(func() error {
		_, err := rt.conn.ExecContext(context.Background(), "ROLLBACK")
		if err != nil && !strings.Contains(err.Error(), "no transaction") {
			return err
		}
		return rt.dropLog(context.Background())
	})
}

// errScratch: a throwaway copy is never written back.
var errScratch = errors.New("userdb: a scratch copy is never written back")
