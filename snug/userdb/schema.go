package userdb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Normative constants (spec Appendix B, "Storage").
const (
	// SchemaVersion is USERDB_SCHEMA_VERSION, kept in PRAGMA user_version.
	SchemaVersion = 6
	// MaxBytes is MAX_USERDB_BYTES, the cap on the whole file (64 MiB).
	MaxBytes = 64 << 20
	// VersionsRetained is VERSIONS_RETAINED: at least this many unpinned
	// versions are kept per app.
	VersionsRetained = 5
	// FileName is the canonical name of the user file in the state directory.
	FileName = "user.snug"
)

// hubTables are the 13 live snug_* tables in the spec's order (§8.1), each
// with its DDL. The column lists are the portable format: another hub opens
// the same file, so they must match the reference column for column. Every
// statement is idempotent (IF NOT EXISTS): the self-heal replays them.
var hubTables = []struct{ name, ddl string }{
	{"snug_meta", `CREATE TABLE IF NOT EXISTS snug_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`},
	{"snug_profile", `CREATE TABLE IF NOT EXISTS snug_profile (key TEXT PRIMARY KEY, value TEXT NOT NULL)`},
	{"snug_settings", `CREATE TABLE IF NOT EXISTS snug_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)`},
	{"snug_secrets", `CREATE TABLE IF NOT EXISTS snug_secrets (key TEXT PRIMARY KEY, value TEXT NOT NULL)`},
	{"snug_apps", `CREATE TABLE IF NOT EXISTS snug_apps (
    app_id TEXT PRIMARY KEY,
    display_name TEXT NOT NULL,
    description TEXT,
    icon_emoji TEXT,
    icon_color TEXT,
    uses_db INTEGER NOT NULL DEFAULT 0,
    current_version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    install_source TEXT
  )`},
	{"snug_app_versions", `CREATE TABLE IF NOT EXISTS snug_app_versions (
    app_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    html TEXT NOT NULL,
    note TEXT,
    created_at TEXT NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
    runtime_contract_json TEXT,
    PRIMARY KEY (app_id, version)
  )`},
	{"snug_app_schemas", `CREATE TABLE IF NOT EXISTS snug_app_schemas (
    app_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    schema_json TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`},
	{"snug_app_migrations", `CREATE TABLE IF NOT EXISTS snug_app_migrations (
    app_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ddl TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    PRIMARY KEY (app_id, seq)
  )`},
	{"snug_app_docs", `CREATE TABLE IF NOT EXISTS snug_app_docs (
    app_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT,
    content TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (app_id, slug)
  )`},
	{"snug_chat_threads", `CREATE TABLE IF NOT EXISTS snug_chat_threads (
    thread_id TEXT PRIMARY KEY,
    app_id TEXT,
    title TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`},
	{"snug_chat_messages", `CREATE TABLE IF NOT EXISTS snug_chat_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
    meta TEXT
  )`},
	{"snug_sync", `CREATE TABLE IF NOT EXISTS snug_sync (key TEXT PRIMARY KEY, value TEXT NOT NULL)`},
	{"snug_connections", `CREATE TABLE IF NOT EXISTS snug_connections (
    app_id TEXT NOT NULL,
    slot TEXT NOT NULL,
    requirement_json TEXT NOT NULL,
    requirement_version INTEGER NOT NULL,
    provenance TEXT NOT NULL,
    confidence REAL,
    status TEXT NOT NULL,
    pending_requirement_json TEXT,
    imported INTEGER NOT NULL DEFAULT 0,
    allowed_hosts TEXT NOT NULL DEFAULT '[]',
    approved_at TEXT,
    revoked_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (app_id, slot)
  )`},
}

// hubIndexes are the hub's indexes: a starter identity (install_source) is
// installed at most once.
var hubIndexes = []struct{ name, ddl string }{
	{"idx_snug_apps_install_source", `CREATE UNIQUE INDEX IF NOT EXISTS idx_snug_apps_install_source
    ON snug_apps (install_source) WHERE install_source IS NOT NULL`},
}

// Tables returns the names of the 13 live hub tables.
func Tables() []string {
	names := make([]string, len(hubTables))
	for i, t := range hubTables {
		names[i] = t.name
	}
	return names
}

// Tables that must not exist in a current file: snug_app_data was the v1
// blob store (abandoned at v2), snug_auth_specs the v3 auth table (dropped
// at v5). Neither is in hubTables, so the self-heal never recreates them.
const (
	legacyAppData   = "snug_app_data"
	legacyAuthSpecs = "snug_auth_specs"
)

// migrate brings a file stamped found (< SchemaVersion) forward, in one
// transaction with the stamp. The steps only go forward; each is
// idempotent, so a file that claims an older version but already has some
// later tables migrates cleanly.
func migrate(ctx context.Context, c *sql.Conn, found int) error {
	steps := []struct {
		below int // run when found < below
		sql   []string
	}{
		// v2: per-app data became real tables; v1 blob data is abandoned.
		{2, []string{`DROP TABLE IF EXISTS ` + legacyAppData}},
		// v5: snug_auth_specs dropped (approvals are not migrated).
		{5, []string{`DROP TABLE IF EXISTS ` + legacyAuthSpecs}},
	}
	for _, s := range steps {
		if found >= s.below {
			continue
		}
		for _, q := range s.sql {
			if _, err := c.ExecContext(ctx, q); err != nil {
				return err
			}
		}
	}
	// v1, v4 (snug_connections): the tables themselves.
	if err := replayDDL(ctx, c); err != nil {
		return err
	}
	// v6: a column on an existing table, which replaying CREATE TABLE IF NOT
	// EXISTS cannot add.
	if err := addColumnIfMissing(ctx, c, "snug_app_versions", "runtime_contract_json", "TEXT"); err != nil {
		return err
	}
	if err := wipeLegacyAuthKeys(ctx, c); err != nil {
		return err
	}
	_, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion))
	return err
}

// replayDDL runs every hub CREATE … IF NOT EXISTS.
func replayDDL(ctx context.Context, c *sql.Conn) error {
	for _, t := range hubTables {
		if _, err := c.ExecContext(ctx, t.ddl); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
	}
	for _, ix := range hubIndexes {
		if _, err := c.ExecContext(ctx, ix.ddl); err != nil {
			return fmt.Errorf("create %s: %w", ix.name, err)
		}
	}
	return nil
}

// needsHeal reports, reading only, whether a hub table or index is missing
// or the v6 column is absent. The expected set is hubTables and hubIndexes,
// the objects the replay can create, so a healthy file never heals (and
// never writes).
func needsHeal(ctx context.Context, c *sql.Conn) (bool, error) {
	present := map[string]bool{}
	rows, err := c.QueryContext(ctx, `SELECT name FROM main.sqlite_master WHERE type IN ('table','index')`)
	if err != nil {
		return false, err
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return false, err
		}
		present[n] = true
	}
	if err := rows.Close(); err != nil {
		return false, err
	}
	for _, t := range hubTables {
		if !present[t.name] {
			return true, nil
		}
	}
	for _, ix := range hubIndexes {
		if !present[ix.name] {
			return true, nil
		}
	}
	has, err := hasColumn(ctx, c, "snug_app_versions", "runtime_contract_json")
	return !has, err
}

func hasColumn(ctx context.Context, c *sql.Conn, table, column string) (bool, error) {
	var n int
	err := c.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(&n)
	return n > 0, err
}

// addColumnIfMissing is ALTER TABLE ADD COLUMN, skipped when the column is
// there. table, column and decl are constants of this package.
func addColumnIfMissing(ctx context.Context, c *sql.Conn, table, column, decl string) error {
	has, err := hasColumn(ctx, c, table, column)
	if err != nil || has {
		return err
	}
	_, err = c.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", table, column, decl))
	return err
}

// wipeLegacyAuthKeys deletes the legacy credential keys auth:<appId>:<field>
// from snug_secrets. It runs only inside a migration (never on a routine
// open: legacy writers were live during the cutover). Keys are chosen by
// segment count, never by prefix, because the live keys
// auth:<appId>:<slot>:<field> share the prefix; auth:_state_hmac (two
// segments) and auth:_flow:<id> (a reserved "_" segment) survive.
// secure_delete (set on the connection) zeroes the deleted bytes.
func wipeLegacyAuthKeys(ctx context.Context, c *sql.Conn) error {
	rows, err := c.QueryContext(ctx, `SELECT key FROM snug_secrets WHERE substr(key, 1, 5) = 'auth:'`)
	if err != nil {
		return err
	}
	var wipe []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return err
		}
		if isLegacyAuthKey(k) {
			wipe = append(wipe, k)
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, k := range wipe {
		if _, err := c.ExecContext(ctx, `DELETE FROM snug_secrets WHERE key = ?`, k); err != nil {
			return err
		}
	}
	return nil
}

// isLegacyAuthKey reports whether key is auth:<appId>:<field>: exactly three
// segments, the second an app id (not a reserved "_" name such as _flow).
func isLegacyAuthKey(key string) bool {
	seg := strings.Split(key, ":")
	return len(seg) == 3 && seg[0] == "auth" && seg[1] != "" && !strings.HasPrefix(seg[1], "_")
}
