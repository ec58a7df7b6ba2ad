package userdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
)

// Codes of the runtime's errors: the reference driver's names (open strings
// on the wire, Snug R5).
const (
	CodeSQL            = "DB_SQL_ERROR"           // SQLite refused or failed the statement
	CodeMultiStatement = "DB_MULTI_STATEMENT"     // exec takes exactly one statement
	CodeForbidden      = "DB_FORBIDDEN_STATEMENT" // a statement class closed on purpose
	CodeBadImport      = "DB_BAD_IMPORT"          // import bytes are not an openable SQLite database
)

// Sentinels of the runtime.
var (
	ErrSQL            = &Error{CodeSQL, "SQL error"}
	ErrMultiStatement = &Error{CodeMultiStatement, "exec accepts exactly one SQL statement; split the script into separate exec calls"}
	ErrForbidden      = &Error{CodeForbidden, "statement not allowed"}
	ErrBadImport      = &Error{CodeBadImport, "not a SQLite database"}
)

// registry is snug_app_schemas.schema_json: the app's objects in creation
// order, each with its sqlite_master DDL verbatim and natural names, and
// its AUTOINCREMENT counters. snug_kv is not listed.
type registry struct {
	Objects   []object         `json:"objects"`
	Sequences map[string]int64 `json:"sequences,omitempty"`
}

type object struct {
	Type string `json:"type"` // table, index, trigger or view
	Name string `json:"name"`
	DDL  string `json:"ddl"`
}

// Runtime is one app's materialised database: an in-memory SQLite database
// of its own (SQLite's memdb VFS) holding only that app's objects, under
// their natural names. The hub's tables and other apps' tables are absent
// from it, not filtered. App SQL runs here through [Runtime.Exec] under a
// statement policy (see Exec); [Runtime.WriteBack] then stores the changes.
//
// A Runtime holds its app's lock from [DB.Materialise] until
// [Runtime.Close]: one runtime per app at a time, so two requests of the
// same app never overwrite each other's write-back. A Runtime is for one
// goroutine.
type Runtime struct {
	db     *DB
	appID  string
	token  string
	memdb  string // the memdb URI, attached by the hub connection only
	sqldb  *sql.DB
	conn   *sql.Conn
	unlock func()

	replaced    bool                   // Import swapped the database in: write it back
	scratch     bool                   // a throwaway copy (DB.Scratch): never written back
	sandboxed   atomic.Bool            // the authorizer applies the app policy
	applying    atomic.Bool            // Apply runs: data changes only
	denied      atomic.Pointer[string] // why the authorizer last refused
	dataVersion uint32                 // at materialisation: unchanged means nothing to write
	generation  uint64                 // the DB's at materialisation (see ErrReplaced)
	ddl         []string               // statements this runtime ran that changed the schema
	closed      bool
}

// Materialise builds the runtime of app id from the user file: it replays
// the registry's DDL verbatim (tables first, then the rows, then indexes,
// views and triggers, so no trigger fires on the copy) and restores the
// AUTOINCREMENT counters. It waits for the app's previous runtime to close.
// An app that is not installed gives [ErrNotFound].
func (db *DB) Materialise(ctx context.Context, id string) (_ *Runtime, err error) {
	unlock, err := db.apps.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{db: db, appID: id, token: AppDataToken(id), unlock: unlock,
		memdb: "file:/snug-app-" + randomHex(16) + "?vfs=memdb"}
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	var reg registry
	var rest map[string]bool
	if err := db.with(func(c *sql.Conn) error {
		if err := appExists(ctx, c, id); err != nil {
			return err
		}
		rt.generation = db.generation.Load()
		var raw string
		err := c.QueryRowContext(ctx, `SELECT schema_json FROM snug_app_schemas WHERE app_id = ?`, id).Scan(&raw)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if raw != "" {
			if err := json.Unmarshal([]byte(raw), &reg); err != nil {
				return fmt.Errorf("userdb: the schema registry of app %s is unreadable: %w", id, err)
			}
		}
		rest, err = restTables(ctx, c, rt.token)
		return err
	}); err != nil {
		return nil, err
	}
	if err := rt.openConn(ctx); err != nil {
		return nil, err
	}
	// Tables, with their natural DDL (snug_kv with its fixed one).
	var tables []string
	for _, o := range reg.Objects {
		if o.Type != "table" {
			continue
		}
		if !ValidObjectName(o.Name) || o.Name == KVTable || !isCreate(o.DDL, "table") {
			return nil, fmt.Errorf("userdb: the schema registry of app %s holds a bad table entry %q", id, o.Name)
		}
		if _, err := rt.conn.ExecContext(ctx, o.DDL); err != nil {
			return nil, fmt.Errorf("userdb: replay %s: %w", o.Name, err)
		}
		tables = append(tables, o.Name)
	}
	if rest[RestTableName(rt.token, KVTable)] {
		if _, err := rt.conn.ExecContext(ctx, kvTableDDL); err != nil {
			return nil, err
		}
		tables = append(tables, KVTable)
	}
	// Rows: the hub connection attaches the runtime and copies.
	if err := db.withRuntime(ctx, rt, func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
		for _, t := range tables {
			if !rest[RestTableName(rt.token, t)] {
				continue
			}
			if err := copyRows(ctx, c, "app", t, "main", RestTableName(rt.token, t)); err != nil {
				c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
				return err
			}
		}
		_, err := c.ExecContext(ctx, "COMMIT")
		return err
	}); err != nil {
		return nil, fmt.Errorf("userdb: materialise app %s: %w", id, err)
	}
	for name, seq := range reg.Sequences {
		if err := setSequence(ctx, rt.conn, name, seq); err != nil {
			return nil, err
		}
	}
	for _, o := range reg.Objects {
		if o.Type == "table" {
			continue
		}
		if !ValidObjectName(o.Name) || !isCreate(o.DDL, o.Type) {
			return nil, fmt.Errorf("userdb: the schema registry of app %s holds a bad %s entry %q", id, o.Type, o.Name)
		}
		if _, err := rt.conn.ExecContext(ctx, o.DDL); err != nil {
			return nil, fmt.Errorf("userdb: replay %s: %w", o.Name, err)
		}
	}
	// A read first: the data version takes in the hub connection's copy
	// only when this connection next reads.
	if _, err := rt.conn.ExecContext(ctx, "SELECT count(*) FROM sqlite_master"); err != nil {
		return nil, err
	}
	if rt.dataVersion, err = rt.version(); err != nil {
		return nil, err
	}
	rt.sandboxed.Store(true)
	return rt, nil
}

// openConn opens the runtime's own connection to rt.memdb, with its limits
// and the authorizer. The caller is in hub mode.
func (rt *Runtime) openConn(ctx context.Context) error {
	var err error
	if rt.sqldb, err = sql.Open("sqlite", rt.memdb+"&_defensive=1"); err != nil {
		return err
	}
	rt.sqldb.SetMaxOpenConns(1)
	if rt.conn, err = rt.sqldb.Conn(ctx); err != nil {
		return err
	}
	if err := rt.conn.Raw(func(dc any) error {
		a, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("userdb: the SQLite driver has no authorizer")
		}
		return a.RegisterAuthorizer(rt.authorize)
	}); err != nil {
		return err
	}
	// No database but its own: the authorizer refuses ATTACH, and the
	// limit makes any ATTACH fail even if it were allowed.
	if _, err := sqlite.Limit(rt.conn, sqliteLimitAttached, 0); err != nil {
		return err
	}
	// The runtime cannot grow past the user file's own cap (memory).
	var pageSize int64
	if err := rt.conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return err
	}
	_, err = rt.conn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", rt.db.opts.MaxBytes/pageSize))
	return err
}

const sqliteLimitAttached = 7 // SQLITE_LIMIT_ATTACHED

// withRuntime runs fn on the hub connection with the runtime attached as
// "app" (outside any transaction: ATTACH and DETACH cannot run inside one).
func (db *DB) withRuntime(ctx context.Context, rt *Runtime, fn func(c *sql.Conn) error) error {
	return db.with(func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, "ATTACH ? AS app", rt.memdb); err != nil {
			return err
		}
		err := fn(c)
		if _, derr := c.ExecContext(context.WithoutCancel(ctx), "DETACH app"); derr != nil {
			err = errors.Join(err, derr)
		}
		return err
	})
}

// copyRows copies every row of srcSchema.src into dstSchema.dst, keeping
// rowids (when the table has them and one of their names is free) and
// leaving generated columns to SQLite. Both tables come from the same DDL.
func copyRows(ctx context.Context, c *sql.Conn, dstSchema, dst, srcSchema, src string) error {
	rows, err := c.QueryContext(ctx, `SELECT name, hidden FROM pragma_table_xinfo(?, ?)`, src, srcSchema)
	if err != nil {
		return err
	}
	var cols []string
	names := map[string]bool{}
	for rows.Next() {
		var name string
		var hidden int
		if err := rows.Scan(&name, &hidden); err != nil {
			rows.Close()
			return err
		}
		names[strings.ToLower(name)] = true
		if hidden == 0 { // 2 and 3 are generated columns
			cols = append(cols, quoteIdent(name))
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	var withoutRowid bool
	if err := c.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list(?) WHERE schema = ?`, src, srcSchema).Scan(&withoutRowid); err != nil {
		return err
	}
	if !withoutRowid {
		for _, alias := range []string{"rowid", "_rowid_", "oid"} {
			if !names[alias] {
				cols = append([]string{alias}, cols...)
				break
			}
		}
	}
	list := strings.Join(cols, ", ")
	_, err = c.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s",
		dstSchema, quoteIdent(dst), list, list, srcSchema, quoteIdent(src)))
	return err
}

// setSequence restores one AUTOINCREMENT counter, never lowering it.
func setSequence(ctx context.Context, c *sql.Conn, table string, seq int64) error {
	var has int
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'`).Scan(&has); err != nil || has == 0 {
		return err
	}
	r, err := c.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?`, seq, table)
	if err != nil {
		return err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		_, err = c.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`, table, seq)
	}
	return err
}

// restTables returns the at-rest table names of the app with token.
func restTables(ctx context.Context, c *sql.Conn, token string) (map[string]bool, error) {
	prefix := restPrefix(token)
	rows, err := c.QueryContext(ctx, `SELECT name FROM main.sqlite_master WHERE type = 'table' AND substr(name, 1, length(?1)) = ?1`, prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

// isCreate reports whether ddl is one statement creating an object of
// kind (as sqlite_master records it: leading keywords in upper case).
func isCreate(ddl, kind string) bool {
	if countStatements(ddl) != 1 {
		return false
	}
	switch kind {
	case "table":
		return strings.HasPrefix(ddl, "CREATE TABLE ")
	case "index":
		return strings.HasPrefix(ddl, "CREATE INDEX ") || strings.HasPrefix(ddl, "CREATE UNIQUE INDEX ")
	case "view":
		return strings.HasPrefix(ddl, "CREATE VIEW ")
	case "trigger":
		return strings.HasPrefix(ddl, "CREATE TRIGGER ")
	}
	return false
}

// version is the runtime's SQLite data version: it moves with every
// committed change, DDL included.
func (rt *Runtime) version() (uint32, error) {
	var v uint32
	err := rt.conn.Raw(func(dc any) error {
		f, ok := dc.(interface {
			FileControlDataVersion(string) (uint32, error)
		})
		if !ok {
			return errors.New("userdb: the SQLite driver cannot report a data version")
		}
		var err error
		v, err = f.FileControlDataVersion("main")
		return err
	})
	return v, err
}

// hub runs fn with the app policy lifted (the hub's own statements).
func (rt *Runtime) hub(fn func() error) error {
	was := rt.sandboxed.Swap(false)
	defer rt.sandboxed.Store(was)
	return fn()
}

// Close discards the runtime (anything not written back is lost) and
// releases the app's lock. It is safe to call twice.
func (rt *Runtime) Close() error {
	if rt.closed {
		return nil
	}
	rt.closed = true
	var err error
	if rt.conn != nil {
		err = rt.conn.Close()
	}
	if rt.sqldb != nil {
		err = errors.Join(err, rt.sqldb.Close())
	}
	rt.unlock()
	return err
}

// appLocks gives each app one runtime at a time. A waiter gives up when its
// context ends.
type appLocks struct {
	mu sync.Mutex
	m  map[string]*appLock
}

type appLock struct {
	ch   chan struct{} // holds a token while locked
	refs int
}

func (l *appLocks) lock(ctx context.Context, id string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*appLock{}
	}
	a := l.m[id]
	if a == nil {
		a = &appLock{ch: make(chan struct{}, 1)}
		l.m[id] = a
	}
	a.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if a.refs--; a.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
	select {
	case a.ch <- struct{}{}:
		return func() { <-a.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
