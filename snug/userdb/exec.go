package userdb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// authorize is the runtime's SQLite authorizer. In hub mode everything is
// allowed; sandboxed (app SQL), these are refused, so the app can reach
// nothing outside its own database and cannot change what the hub relies on:
//
//   - ATTACH and DETACH, and so VACUUM and VACUUM INTO, which attach
//     internally: no other database or file, including another app's
//     runtime by its memdb name.
//   - CREATE/DROP VIRTUAL TABLE: virtual tables cannot be carried at rest.
//   - BEGIN, COMMIT, ROLLBACK, SAVEPOINT: each exec is its own transaction
//     and is written back when it returns, so a transaction cannot span
//     two requests.
//   - load_extension().
//   - every PRAGMA with a value, except foreign_keys, defer_foreign_keys,
//     recursive_triggers and case_sensitive_like (connection settings that
//     last one request) and the reads that take a table or index name
//     (table_info, index_list, foreign_key_check, integrity_check, …).
//     A PRAGMA without a value only reads and is allowed.
//   - temporary objects named snug_…, and any use of the data lane's change
//     log but by its own triggers (see Apply).
//   - while [Runtime.Apply] runs, any statement that would change a schema
//     (main or temp) and every PRAGMA with a value: the data lane changes
//     data only.
//
// The connection is also in SQLite's defensive mode (no writable_schema,
// no sqlite_dbpage writes), has SQLITE_LIMIT_ATTACHED 0 and a max_page_count
// at the user file's cap.
func (rt *Runtime) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, dbName, trigger string) sqlite.AuthorizerReturnCode {
	if !rt.sandboxed.Load() {
		return sqlite.AuthorizerOK
	}
	deny := func(why string) sqlite.AuthorizerReturnCode {
		rt.denied.Store(&why)
		return sqlite.AuthorizerDeny
	}
	if rt.applying.Load() {
		switch action {
		case sqlite.AuthCreateIndex, sqlite.AuthCreateTable, sqlite.AuthCreateTrigger, sqlite.AuthCreateView,
			sqlite.AuthCreateTempIndex, sqlite.AuthCreateTempTable, sqlite.AuthCreateTempTrigger, sqlite.AuthCreateTempView,
			sqlite.AuthDropIndex, sqlite.AuthDropTable, sqlite.AuthDropTrigger, sqlite.AuthDropView,
			sqlite.AuthDropTempIndex, sqlite.AuthDropTempTable, sqlite.AuthDropTempTrigger, sqlite.AuthDropTempView,
			sqlite.AuthAlterTable, sqlite.AuthReindex, sqlite.AuthAnalyze:
			return deny("a data change cannot change the schema")
		case sqlite.AuthPragma:
			if arg2 != "" {
				return deny("a data change cannot set a PRAGMA")
			}
		}
	}
	switch action {
	case sqlite.AuthAttach, sqlite.AuthDetach:
		return deny("ATTACH, DETACH and VACUUM are not allowed: an app has its own database only")
	case sqlite.AuthCreateVTable, sqlite.AuthDropVTable:
		return deny("virtual tables are not supported")
	case sqlite.AuthTransaction, sqlite.AuthSavepoint:
		return deny("transaction statements are not allowed: each exec is one transaction")
	case sqlite.AuthFunction:
		if strings.EqualFold(arg2, "load_extension") {
			return deny("load_extension() is not allowed")
		}
	case sqlite.AuthPragma:
		if arg2 != "" && !argPragmas[strings.ToLower(arg1)] {
			return deny("PRAGMA " + arg1 + " cannot be set")
		}
	case sqlite.AuthCreateTempTable, sqlite.AuthCreateTempTrigger, sqlite.AuthCreateTempView, sqlite.AuthCreateTempIndex,
		sqlite.AuthDropTempTable, sqlite.AuthDropTempTrigger, sqlite.AuthDropTempView, sqlite.AuthDropTempIndex:
		if strings.HasPrefix(strings.ToLower(arg1), "snug_") {
			return deny("temporary objects named snug_… are the host's")
		}
	case sqlite.AuthRead, sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete:
		// The data lane's change log is written by its own triggers only.
		if dbName == "temp" && strings.EqualFold(arg1, changeLog) && !strings.HasPrefix(trigger, changeTriggerPrefix) {
			return deny("the host's change log is out of reach")
		}
	}
	return sqlite.AuthorizerOK
}

// argPragmas may take an argument: connection settings that last one
// request, and reads that name a table or index.
var argPragmas = map[string]bool{
	"foreign_keys": true, "defer_foreign_keys": true, "recursive_triggers": true, "case_sensitive_like": true,
	"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true, "integrity_check": true, "quick_check": true,
}

// Exec runs one SQL statement of the app with params bound positionally
// (nil, bool, int64, float64, string or []byte) and returns the column
// names and rows. Cells are nil, int64, float64, string or []byte.
//
// Text that SQLite holds in a column declared DATE, DATETIME or TIMESTAMP
// and that parses as a time comes back from the driver as a time; it is
// rendered as "2006-01-02" (midnight UTC) or "2006-01-02 15:04:05.999999999"
// with "-07:00" when the text had an offset: the common forms come back as
// written, others (a "T" separator, no seconds) in that canonical form. The
// data itself is never changed.
//
// Errors: [ErrMultiStatement] for more than one statement; [ErrForbidden]
// for a refused statement class (see the policy on authorize); [ErrSQL]
// for anything SQLite refuses or fails, with its message.
func (rt *Runtime) Exec(ctx context.Context, text string, params []any) (columns []string, rows [][]any, err error) {
	if rt.closed {
		return nil, nil, ErrClosed
	}
	if err := checkOne(text); err != nil {
		return nil, nil, err
	}
	schemaBefore, err := rt.schemaVersion(ctx)
	if err != nil {
		return nil, nil, err
	}
	rt.denied.Store(nil)
	columns, rows, _, err = rt.query(ctx, text, params, -1)
	if err != nil {
		return nil, nil, rt.refusal(err)
	}
	schemaAfter, err := rt.schemaVersion(ctx)
	if err != nil {
		return nil, nil, err
	}
	if schemaAfter != schemaBefore {
		rt.ddl = append(rt.ddl, text)
	}
	return columns, rows, nil
}

// checkOne refuses SQL text that is not exactly one statement.
func checkOne(text string) error {
	if strings.IndexByte(text, 0) >= 0 {
		return errorf(ErrSQL, "the SQL contains a NUL byte")
	}
	switch countStatements(text) {
	case 0:
		return errorf(ErrSQL, "no SQL statement to execute")
	case 1:
		return nil
	default:
		return ErrMultiStatement
	}
}

// refusal maps a failed statement to ErrForbidden when the authorizer
// refused it, else to ErrSQL.
func (rt *Runtime) refusal(err error) error {
	if why := rt.denied.Load(); why != nil {
		return errorf(ErrForbidden, "%s", *why)
	}
	return errorf(ErrSQL, "%v", err)
}

// query runs text and returns at most maxRows rows (all with -1); more
// reports that there were more.
func (rt *Runtime) query(ctx context.Context, text string, params []any, maxRows int) (columns []string, rows [][]any, more bool, err error) {
	r, err := rt.conn.QueryContext(ctx, text, params...)
	if err != nil {
		return nil, nil, false, err
	}
	defer r.Close()
	if columns, err = r.Columns(); err != nil {
		return nil, nil, false, err
	}
	rows = [][]any{}
	for r.Next() {
		if len(rows) == maxRows {
			return columns, rows, true, nil
		}
		cells := make([]any, len(columns))
		ptrs := make([]any, len(columns))
		for i := range cells {
			ptrs[i] = &cells[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return nil, nil, false, err
		}
		for i, c := range cells {
			if t, ok := c.(time.Time); ok {
				cells[i] = timeText(t)
			}
		}
		rows = append(rows, cells)
	}
	return columns, rows, false, r.Err()
}

// timeText renders a time the driver parsed from TEXT (see Exec).
func timeText(t time.Time) string {
	if _, off := t.Zone(); off == 0 && t.Location() == time.UTC {
		if t.Equal(t.Truncate(24 * time.Hour)) {
			return t.Format("2006-01-02")
		}
		return t.Format("2006-01-02 15:04:05.999999999")
	}
	return t.Format("2006-01-02 15:04:05.999999999-07:00")
}

func (rt *Runtime) schemaVersion(ctx context.Context) (int64, error) {
	var v int64
	err := rt.hub(func() error { return rt.conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v) })
	return v, err
}

// KVGet returns the JSON value stored under key in the app's snug_kv
// table; ok is false when there is none.
func (rt *Runtime) KVGet(ctx context.Context, key string) (value json.RawMessage, ok bool, err error) {
	if rt.closed {
		return nil, false, ErrClosed
	}
	err = rt.hub(func() error {
		var has int
		if err := rt.conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, KVTable).Scan(&has); err != nil || has == 0 {
			return err
		}
		var raw sql.NullString
		err := rt.conn.QueryRowContext(ctx, `SELECT value FROM snug_kv WHERE key = ?`, key).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if !raw.Valid || !json.Valid([]byte(raw.String)) {
			return errorf(ErrSQL, "the stored value of %q is not JSON", key)
		}
		value, ok = json.RawMessage(raw.String), true
		return nil
	})
	return value, ok, err
}

// KVSet stores the JSON value under key in the app's snug_kv table (a nil
// value stores null).
func (rt *Runtime) KVSet(ctx context.Context, key string, value json.RawMessage) error {
	if rt.closed {
		return ErrClosed
	}
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	if !json.Valid(value) {
		return errorf(ErrSQL, "the value is not JSON")
	}
	return rt.hub(func() error {
		if _, err := rt.conn.ExecContext(ctx, kvTableDDL); err != nil {
			return err
		}
		_, err := rt.conn.ExecContext(ctx, `INSERT OR REPLACE INTO snug_kv (key, value) VALUES (?, ?)`, key, string(value))
		return err
	})
}

// Export returns the app's database as a standalone SQLite file: its
// objects under their natural names and nothing of the hub or other apps.
func (rt *Runtime) Export(ctx context.Context) ([]byte, error) {
	if rt.closed {
		return nil, ErrClosed
	}
	var image []byte
	err := rt.hub(func() error {
		return rt.conn.Raw(func(dc any) error {
			s, ok := dc.(interface{ Serialize() ([]byte, error) })
			if !ok {
				return errors.New("userdb: the SQLite driver cannot serialise")
			}
			var err error
			image, err = s.Serialize()
			return err
		})
	})
	return image, err
}

// Import replaces the app's whole database with image, a SQLite file. Bytes
// that are not one give [ErrBadImport] and change nothing. What the image
// holds is checked at write-back like anything the app created.
func (rt *Runtime) Import(ctx context.Context, image []byte) error {
	if rt.closed {
		return ErrClosed
	}
	if !bytes.HasPrefix(image, sqliteMagic) {
		return errorf(ErrBadImport, "missing the \"SQLite format 3\" header")
	}
	scratch, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return err
	}
	defer scratch.Close()
	c, err := scratch.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		return dc.(interface{ Deserialize([]byte) error }).Deserialize(bytes.Clone(image))
	}); err != nil {
		return errorf(ErrBadImport, "%v", err)
	}
	var check string
	if err := c.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil || check != "ok" {
		return errorf(ErrBadImport, "not an openable SQLite database (%v%s)", err, check)
	}
	// A new runtime database, filled by VACUUM INTO (which keeps the
	// image's page size, unlike a backup into the old one), then swapped in.
	old, oldDB, oldName := rt.conn, rt.sqldb, rt.memdb
	rt.memdb = "file:/snug-app-" + randomHex(16) + "?vfs=memdb"
	err = rt.hub(func() error {
		if err := rt.openConn(ctx); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, "VACUUM INTO ?", rt.memdb)
		return err
	})
	if err != nil {
		if rt.conn != old {
			rt.conn.Close()
			rt.sqldb.Close()
		}
		rt.conn, rt.sqldb, rt.memdb = old, oldDB, oldName
		return errorf(ErrBadImport, "%v", err)
	}
	old.Close()
	oldDB.Close()
	rt.replaced = true
	return nil
}

// WriteBack stores the runtime's state in the user file, in one
// transaction: the app's at-rest tables app_<token>__<name> are replaced
// (each created from its natural DDL verbatim and renamed, then filled from
// the runtime), and its registry, DDL audit and uses_db are updated. A
// runtime with no committed change since materialisation (or the last
// write-back) writes nothing.
//
// It refuses, writing nothing and keeping the app's previous state, when an
// object's name breaks the naming rule or its DDL is not a single CREATE of
// its kind ([ErrInvalidName]: the name is never put into SQL), when the
// file would grow past its cap ([ErrTooLarge], the whole write-back rolled
// back), when the app was removed meanwhile ([ErrNotFound]), or when an
// import replaced the user database since materialisation ([ErrReplaced]).
func (rt *Runtime) WriteBack(ctx context.Context) error {
	if rt.closed {
		return ErrClosed
	}
	if rt.scratch {
		return errScratch
	}
	v, err := rt.version()
	if err != nil || v == rt.dataVersion && !rt.replaced {
		return err
	}
	var reg registry
	var tables []object
	err = rt.hub(func() error {
		var err error
		reg, tables, err = rt.snapshot(ctx)
		return err
	})
	if err != nil {
		return err
	}
	regJSON, err := json.Marshal(reg)
	if err != nil {
		return err
	}
	db := rt.db
	now := timestamp(db.opts.Now())
	err = db.withRuntime(ctx, rt, func(c *sql.Conn) error {
		return db.tx(ctx, true, func(c *sql.Conn) error {
			if rt.generation != db.generation.Load() {
				return ErrReplaced
			}
			if err := appExists(ctx, c, rt.appID); err != nil {
				return err
			}
			if err := dropRestTables(ctx, c, rt.token); err != nil {
				return err
			}
			for _, t := range tables {
				if err := restoreTable(ctx, c, t, RestTableName(rt.token, t.Name), "app", t.Name); err != nil {
					return err
				}
			}
			if _, err := c.ExecContext(ctx, `INSERT OR REPLACE INTO snug_app_schemas (app_id, token, schema_json, updated_at) VALUES (?, ?, ?, ?)`,
				rt.appID, rt.token, string(regJSON), now); err != nil {
				return err
			}
			for _, stmt := range rt.ddl {
				if _, err := c.ExecContext(ctx, `INSERT INTO snug_app_migrations (app_id, seq, ddl, applied_at)
					VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM snug_app_migrations WHERE app_id = ?1), ?2, ?3)`, rt.appID, stmt, now); err != nil {
					return err
				}
			}
			_, err := c.ExecContext(ctx, `UPDATE snug_apps SET uses_db = 1 WHERE app_id = ? AND uses_db = 0`, rt.appID)
			return err
		})
	})
	if err != nil {
		return err
	}
	rt.dataVersion, rt.ddl, rt.replaced = v, nil, false
	return nil
}

// snapshot reads the runtime's schema: the registry to store and the tables
// to copy (snug_kv included), refusing any object the hub will not persist.
func (rt *Runtime) snapshot(ctx context.Context) (registry, []object, error) {
	var reg registry
	var tables []object
	rows, err := rt.conn.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name <> 'sqlite_sequence' AND name NOT LIKE 'sqlite\_stat%' ESCAPE '\' ORDER BY rowid`)
	if err != nil {
		return reg, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.Type, &o.Name, &o.DDL); err != nil {
			return reg, nil, err
		}
		if !ValidObjectName(o.Name) {
			return reg, nil, errorf(ErrInvalidName, "the app created a %s whose name is not allowed (1–41 letters, digits and _, starting with a letter, not snug_, sqlite_ or app_)", o.Type)
		}
		if o.Name == KVTable {
			if o.Type != "table" || o.DDL != kvTableSQL {
				return reg, nil, errorf(ErrInvalidName, "%s must keep its fixed shape", KVTable)
			}
			tables = append(tables, o)
			continue
		}
		if !isCreate(o.DDL, o.Type) {
			return reg, nil, errorf(ErrInvalidName, "the DDL of %s %s is not a single CREATE %s", o.Type, o.Name, strings.ToUpper(o.Type))
		}
		reg.Objects = append(reg.Objects, o)
		if o.Type == "table" {
			tables = append(tables, o)
		}
	}
	if err := rows.Err(); err != nil {
		return reg, nil, err
	}
	var hasSeq int
	if err := rt.conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'`).Scan(&hasSeq); err != nil {
		return reg, nil, err
	}
	if hasSeq > 0 {
		seqs, err := rt.conn.QueryContext(ctx, `SELECT name, seq FROM sqlite_sequence`)
		if err != nil {
			return reg, nil, err
		}
		defer seqs.Close()
		for seqs.Next() {
			var name string
			var seq int64
			if err := seqs.Scan(&name, &seq); err != nil {
				return reg, nil, err
			}
			if !ValidObjectName(name) {
				continue // a row for no table of the app: not carried
			}
			if reg.Sequences == nil {
				reg.Sequences = map[string]int64{}
			}
			reg.Sequences[name] = seq
		}
		if err := seqs.Err(); err != nil {
			return reg, nil, err
		}
	}
	if reg.Objects == nil {
		reg.Objects = []object{}
	}
	return reg, tables, nil
}

// restoreTable creates the at-rest table rest for table t and copies the
// rows of srcSchema.src into it (the runtime's table at write-back, the
// file's at-rest table at import), inside the caller's transaction. The DDL runs verbatim
// on the hub connection, so it is checked to have made exactly the one new,
// empty table t in main before anything else happens; the rename then
// happens under legacy_alter_table, a pure name swap that touches no other
// table's DDL.
func restoreTable(ctx context.Context, c *sql.Conn, t object, rest, srcSchema, src string) error {
	count := func() (int, error) {
		var n int
		err := c.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master`).Scan(&n)
		return n, err
	}
	before, err := count()
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, t.DDL); err != nil {
		return fmt.Errorf("userdb: create the at-rest table for %s: %w", t.Name, err)
	}
	after, err := count()
	if err != nil {
		return err
	}
	var made, rows int
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = ?`, t.Name).Scan(&made); err != nil {
		return err
	}
	if made != 1 || after <= before {
		return errorf(ErrInvalidName, "the DDL of table %s does not create that table", t.Name)
	}
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM main."+quoteIdent(t.Name)).Scan(&rows); err != nil {
		return err
	}
	if rows != 0 {
		return errorf(ErrInvalidName, "the DDL of table %s fills it", t.Name)
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf("ALTER TABLE main.%s RENAME TO %s", quoteIdent(t.Name), quoteIdent(rest))); err != nil {
		return err
	}
	return copyRows(ctx, c, "main", rest, srcSchema, src)
}
