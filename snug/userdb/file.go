package userdb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ExportOptions choose what a whole-file export keeps.
type ExportOptions struct {
	// Secrets keeps the snug_secrets rows. By default they are deleted and
	// the copy is VACUUMed, so that no secret byte remains in it, not even
	// in free pages (spec §9); including them is the user's explicit
	// choice.
	Secrets bool
}

// Export returns the whole user database as the bytes of a plain SQLite
// file (the canonical .snug): a compacted copy, made without a file on
// disk, with the secrets removed unless opts says otherwise. The live file
// is not changed.
func (db *DB) Export(ctx context.Context, opts ExportOptions) ([]byte, error) {
	mem, err := openScratch(ctx)
	if err != nil {
		return nil, err
	}
	defer mem.close()
	if err := db.with(func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, "VACUUM INTO ?", mem.uri)
		return err
	}); err != nil {
		return nil, fmt.Errorf("userdb: export: %w", err)
	}
	if !opts.Secrets {
		for _, q := range []string{"PRAGMA secure_delete = ON", "DELETE FROM snug_secrets", "VACUUM"} {
			if _, err := mem.conn.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("userdb: export: %s: %w", q, err)
			}
		}
	}
	return mem.serialize()
}

// ExportApp returns app id's database as a standalone SQLite file: its
// objects under their natural names, nothing of the hub or other apps
// (spec §8.2, the db op export).
func (db *DB) ExportApp(ctx context.Context, id string) ([]byte, error) {
	rt, err := db.Materialise(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.Export(ctx)
}

// RequirementCheck validates an imported connection requirement strictly
// for its row's slot (spec §12.5: every bound, the template lint, the name
// guard, the requirement naming that slot) and returns the host ceiling
// approval would freeze from it, as the allowed_hosts column stores it: a
// JSON array, sorted, unique and normalised (deriveConnectionAllowedHosts,
// §12.4). An error rejects the requirement.
type RequirementCheck func(slot, requirementJSON string) (allowedHosts string, err error)

// ImportOptions configure [DB.Import].
type ImportOptions struct {
	// Requirements checks imported connection requirements. Nil checks
	// none: every imported connection that does not restore a local grant
	// is dropped (fail closed).
	Requirements RequirementCheck
	// Settings are written over the file's snug_settings in the import's
	// transaction, a nil value removing the key (the hub marks the
	// imported agent settings unconfirmed this way, so the file cannot
	// pre-confirm them).
	Settings map[string]json.RawMessage
}

// ImportReport says what an import did.
type ImportReport struct {
	// SchemaVersion is the version the file was stamped with (migrated
	// forward when older).
	SchemaVersion int
	Apps          int
	// ContractsKept and ContractsDropped count the version rows whose
	// runtime contract was kept (identical, in canonical form, to one the
	// hub held) or dropped (spec §18.2): the apps of dropped ones run on
	// generic instructions.
	ContractsKept, ContractsDropped int
	Connections                     ConnectionReport
	// SecretsImported counts the secrets the file carried (an export made
	// with its secrets); SecretsKept the local ones kept beside them.
	SecretsImported, SecretsKept int
}

// Import replaces the whole user database with image, the bytes of a plain
// SQLite user file (a .snug of any schema version up to [SchemaVersion];
// an older one is migrated forward), in one transaction: if anything fails,
// nothing changed.
//
// What the file holds is untrusted (spec §9): its runtime contracts are
// dropped unless identical, in canonical form, to one this hub already
// holds on a version row (§18.2); its connections are reconciled against
// the local grants (§12.4, see [ConnectionReport]); its endpoint settings
// land, and opts.Settings is written over them. Apps' at-rest tables are
// rebuilt from each app's schema registry (natural DDL, checked as a
// write-back checks it); tables the registry does not name are not
// carried. The file's secrets (if it was exported with them) replace the
// local ones of the same key, except the OAuth seat's own (auth:_*); other
// local secrets are kept, except the connection credentials of an app the
// import leaves absent.
//
// Errors: [ErrBadImport] for bytes that are not an openable SQLite user
// file (or one whose hub tables lack the expected columns), an
// [*UnsupportedError] for a file stamped newer than [SchemaVersion],
// [ErrTooLarge] for one over the size cap. A runtime materialised before
// the import cannot write back after it ([ErrReplaced]).
func (db *DB) Import(ctx context.Context, image []byte, opts ImportOptions) (ImportReport, error) {
	var rep ImportReport
	if int64(len(image)) > db.opts.MaxBytes {
		return rep, errorf(ErrTooLarge, "the file is %d bytes; the cap is %d", len(image), db.opts.MaxBytes)
	}
	if !bytes.HasPrefix(image, sqliteMagic) {
		return rep, errorf(ErrBadImport, "missing the \"SQLite format 3\" header")
	}
	mem, version, err := loadImage(ctx, image)
	if err != nil {
		return rep, err
	}
	defer mem.close()
	rep.SchemaVersion = version

	err = db.with(func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, "ATTACH ? AS imp", mem.uri); err != nil {
			return err
		}
		defer c.ExecContext(context.WithoutCancel(ctx), "DETACH imp")
		return db.tx(ctx, true, func(c *sql.Conn) error {
			var err error
			rep, err = replace(ctx, c, opts, rep)
			if err == nil {
				db.generation.Add(1)
			}
			return err
		})
	})
	if err != nil {
		if _, ok := errors.AsType[*Error](err); !ok {
			err = errorf(ErrBadImport, "%v", err)
		}
		return ImportReport{}, err
	}
	return rep, nil
}

// loadImage checks image and brings it into a scratch database at the
// current schema: readable, not newer, migrated forward, healed, with
// neither triggers nor views (a hub file has none, and a hostile one's
// would fire while it migrates).
func loadImage(ctx context.Context, image []byte) (*scratchDB, int, error) {
	raw, err := sql.Open("sqlite", ":memory:?_defensive=1")
	if err != nil {
		return nil, 0, err
	}
	defer raw.Close()
	rc, err := raw.Conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	if _, err := rc.ExecContext(ctx, "PRAGMA trusted_schema = OFF"); err != nil {
		return nil, 0, err
	}
	if err := rc.Raw(func(dc any) error {
		return dc.(interface{ Deserialize([]byte) error }).Deserialize(bytes.Clone(image))
	}); err != nil {
		return nil, 0, errorf(ErrBadImport, "%v", err)
	}
	var check string
	if err := rc.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil || check != "ok" {
		return nil, 0, errorf(ErrBadImport, "not an openable SQLite database (%v%s)", err, check)
	}
	var version int
	if err := rc.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return nil, 0, errorf(ErrBadImport, "%v", err)
	}
	if version > SchemaVersion {
		return nil, 0, &UnsupportedError{Found: version}
	}
	// Any SQLite file would "migrate" into an empty user database; one
	// without the tables every version had is not a user file.
	var core int
	if err := rc.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name IN ('snug_apps', 'snug_app_versions')`).Scan(&core); err != nil || core != 2 {
		return nil, 0, errorf(ErrBadImport, "not a Snug user file: it lacks the snug_apps and snug_app_versions tables")
	}
	mem, err := openScratch(ctx)
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*scratchDB, int, error) {
		mem.close()
		return nil, 0, errorf(ErrBadImport, "%v", err)
	}
	if _, err := rc.ExecContext(ctx, "VACUUM INTO ?", mem.uri); err != nil {
		return fail(err)
	}
	c := mem.conn
	if _, err := c.ExecContext(ctx, "PRAGMA trusted_schema = OFF"); err != nil {
		return fail(err)
	}
	for _, kind := range []string{"trigger", "view"} {
		names, err := strings1(ctx, c, `SELECT name FROM main.sqlite_master WHERE type = ?`, kind)
		if err != nil {
			return fail(err)
		}
		for _, n := range names {
			if _, err := c.ExecContext(ctx, "DROP "+strings.ToUpper(kind)+" main."+quoteIdent(n)); err != nil {
				return fail(err)
			}
		}
	}
	if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
		return fail(err)
	}
	if version < SchemaVersion {
		err = migrate(ctx, c, version)
	} else {
		err = replayDDL(ctx, c)
		if err == nil {
			err = addColumnIfMissing(ctx, c, "snug_app_versions", "runtime_contract_json", "TEXT")
		}
	}
	if err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return fail(err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	return mem, version, nil
}

// replace swaps the hub tables and the apps' at-rest tables of main for
// those of imp, inside the import's transaction, applying the
// reconciliations (see Import).
func replace(ctx context.Context, c *sql.Conn, opts ImportOptions, rep ImportReport) (ImportReport, error) {
	// What the hub held before: the contracts on its version rows, its
	// connections, its secrets.
	held, err := heldContracts(ctx, c)
	if err != nil {
		return rep, err
	}
	localConns, err := localConnections(ctx, c)
	if err != nil {
		return rep, err
	}
	localSecrets, err := pairs(ctx, c, `SELECT key, value FROM main.snug_secrets`)
	if err != nil {
		return rep, err
	}

	// Out with the old: every at-rest app table and every hub row.
	old, err := strings1(ctx, c, `SELECT name FROM main.sqlite_master WHERE type = 'table' AND substr(name, 1, 4) = 'app_'`)
	if err != nil {
		return rep, err
	}
	for _, n := range old {
		if _, err := c.ExecContext(ctx, "DROP TABLE main."+quoteIdent(n)); err != nil {
			return rep, err
		}
	}
	for _, t := range hubTables {
		if _, err := c.ExecContext(ctx, "DELETE FROM main."+t.name); err != nil {
			return rep, err
		}
	}

	// In with the new: the hub rows, column by column (the columns are
	// ours; a file lacking one fails here, whole).
	for _, t := range hubTables {
		if t.name == "snug_connections" || t.name == "snug_secrets" {
			continue // reconciled below
		}
		cols, err := columns(ctx, c, "main", t.name)
		if err != nil {
			return rep, err
		}
		list := strings.Join(cols, ", ")
		if _, err := c.ExecContext(ctx, fmt.Sprintf("INSERT INTO main.%s (%s) SELECT %s FROM imp.%s", t.name, list, list, t.name)); err != nil {
			return rep, fmt.Errorf("copy %s: %w", t.name, err)
		}
	}
	ids, err := strings1(ctx, c, `SELECT app_id FROM main.snug_apps ORDER BY app_id`)
	if err != nil {
		return rep, err
	}
	rep.Apps = len(ids)
	var broken int
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM main.snug_apps a WHERE NOT EXISTS
		(SELECT 1 FROM main.snug_app_versions v WHERE v.app_id = a.app_id AND v.version = a.current_version)`).Scan(&broken); err != nil {
		return rep, err
	}
	if broken > 0 {
		return rep, fmt.Errorf("%d apps lack their current version", broken)
	}
	present := map[string]bool{}
	for _, id := range ids {
		present[id] = true
		if err := importAppTables(ctx, c, id); err != nil {
			return rep, err
		}
	}
	// Registry rows and audit of apps the file does not hold are not
	// carried.
	for _, t := range []string{"snug_app_schemas", "snug_app_migrations", "snug_app_versions", "snug_app_docs", "snug_chat_threads"} {
		if _, err := c.ExecContext(ctx, `DELETE FROM main.`+t+` WHERE app_id IS NOT NULL AND app_id NOT IN (SELECT app_id FROM main.snug_apps)`); err != nil {
			return rep, err
		}
	}

	// Secrets: the file's, then the local ones it does not replace, but
	// never an absent app's connection credentials. The file's auth:_*
	// keys (the OAuth state signing key, sign-ins in progress) belong to
	// the machine that wrote it: this one keeps its own.
	r, err := c.ExecContext(ctx, `INSERT INTO main.snug_secrets (key, value) SELECT key, value FROM imp.snug_secrets
		WHERE substr(key, 1, 6) != 'auth:_'`)
	if err != nil {
		return rep, err
	}
	n, _ := r.RowsAffected()
	rep.SecretsImported = int(n)
	for _, kv := range localSecrets {
		if seg := strings.Split(kv[0], ":"); len(seg) >= 3 && seg[0] == "auth" && !strings.HasPrefix(seg[1], "_") && !present[seg[1]] {
			continue
		}
		r, err := c.ExecContext(ctx, `INSERT OR IGNORE INTO main.snug_secrets (key, value) VALUES (?, ?)`, kv[0], kv[1])
		if err != nil {
			return rep, err
		}
		n, _ := r.RowsAffected()
		rep.SecretsKept += int(n)
	}

	if rep.ContractsKept, rep.ContractsDropped, err = reconcileContracts(ctx, c, held); err != nil {
		return rep, err
	}
	if rep.Connections, err = reconcileConnections(ctx, c, localConns, present, opts.Requirements); err != nil {
		return rep, err
	}

	for k, v := range opts.Settings {
		if v != nil && !json.Valid(v) {
			return rep, errorf(ErrInvalid, "a setting's value must be JSON")
		}
		if err := upsert(ctx, c, "main.snug_settings", k, v); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// importAppTables rebuilds app id's at-rest tables from its registry in
// imp, each created from its natural DDL and checked as a write-back checks
// it (restoreTable), then filled from the file's at-rest table. A registry
// that cannot be read, or names an object the hub would not persist, fails
// the import.
func importAppTables(ctx context.Context, c *sql.Conn, id string) error {
	token := AppDataToken(id)
	var raw string
	err := c.QueryRowContext(ctx, `SELECT schema_json FROM main.snug_app_schemas WHERE app_id = ?`, id).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var reg registry
	if err := json.Unmarshal([]byte(raw), &reg); err != nil {
		return fmt.Errorf("the schema registry of app %s is unreadable: %w", id, err)
	}
	if _, err := c.ExecContext(ctx, `UPDATE main.snug_app_schemas SET token = ? WHERE app_id = ?`, token, id); err != nil {
		return err
	}
	tables := []object{}
	for _, o := range reg.Objects {
		if !ValidObjectName(o.Name) || o.Name == KVTable || !isCreate(o.DDL, o.Type) {
			return fmt.Errorf("the schema registry of app %s holds a %s the hub would not persist", id, o.Type)
		}
		if o.Type == "table" {
			tables = append(tables, o)
		}
	}
	tables = append(tables, object{Type: "table", Name: KVTable, DDL: kvTableDDL})
	inFile, err := restTablesIn(ctx, c, "imp", token)
	if err != nil {
		return err
	}
	for _, t := range tables {
		rest := RestTableName(token, t.Name)
		if !inFile[rest] {
			continue // no rows at rest: the runtime creates it empty
		}
		if err := restoreTable(ctx, c, t, rest, "imp", rest); err != nil {
			return fmt.Errorf("app %s: %w", id, err)
		}
	}
	return nil
}

// reconcileContracts drops every runtime contract on the imported version
// rows that is not identical, in canonical form, to one of held (spec
// §18.2): a contract speaks with system authority, and a file must not
// dictate the model's instructions.
func reconcileContracts(ctx context.Context, c *sql.Conn, held map[string]bool) (kept, dropped int, err error) {
	rows, err := pairs(ctx, c, `SELECT rowid, runtime_contract_json FROM main.snug_app_versions WHERE runtime_contract_json IS NOT NULL`)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range rows {
		if canon, ok := canonicalJSON(r[1]); ok && held[canon] {
			kept++
			continue
		}
		if _, err := c.ExecContext(ctx, `UPDATE main.snug_app_versions SET runtime_contract_json = NULL WHERE rowid = ?`, r[0]); err != nil {
			return 0, 0, err
		}
		dropped++
	}
	return kept, dropped, nil
}

// heldContracts is the canonical form of every contract on the hub's
// version rows.
func heldContracts(ctx context.Context, c *sql.Conn) (map[string]bool, error) {
	texts, err := strings1(ctx, c, `SELECT DISTINCT runtime_contract_json FROM main.snug_app_versions WHERE runtime_contract_json IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, t := range texts {
		if canon, ok := canonicalJSON(t); ok {
			held[canon] = true
		}
	}
	return held, nil
}

// canonicalJSON is the canonical form of a JSON text: object keys sorted at
// every depth, no insignificant whitespace, array order kept, numbers and
// strings as written (no HTML escaping). ok is false for text that is not
// JSON.
func canonicalJSON(text string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "", false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}

// columns lists a table's columns, quoted.
func columns(ctx context.Context, c *sql.Conn, schema, table string) ([]string, error) {
	names, err := strings1(ctx, c, `SELECT name FROM pragma_table_info(?, ?)`, table, schema)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		names[i] = quoteIdent(n)
	}
	return names, nil
}

// restTablesIn is restTables for another schema.
func restTablesIn(ctx context.Context, c *sql.Conn, schema, token string) (map[string]bool, error) {
	names, err := strings1(ctx, c, `SELECT name FROM `+schema+`.sqlite_master WHERE type = 'table' AND substr(name, 1, length(?1)) = ?1`, restPrefix(token))
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out, err
}

// strings1 returns the first column of a query's rows as text.
func strings1(ctx context.Context, c *sql.Conn, q string, args ...any) ([]string, error) {
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// pairs returns the first two columns of a query's rows as text.
func pairs(ctx context.Context, c *sql.Conn, q string, args ...any) ([][2]string, error) {
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var p [2]string
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// scratchDB is a private in-memory database (SQLite's memdb VFS) under a
// random name: the hub connection can ATTACH it or VACUUM INTO it while
// this connection keeps it alive.
type scratchDB struct {
	uri   string
	sqldb *sql.DB
	conn  *sql.Conn
}

func openScratch(ctx context.Context) (*scratchDB, error) {
	s := &scratchDB{uri: "file:/snug-scratch-" + randomHex(16) + "?vfs=memdb"}
	var err error
	if s.sqldb, err = sql.Open("sqlite", s.uri+"&_defensive=1"); err != nil {
		return nil, err
	}
	s.sqldb.SetMaxOpenConns(1)
	if s.conn, err = s.sqldb.Conn(ctx); err != nil {
		s.sqldb.Close()
		return nil, err
	}
	return s, nil
}

func (s *scratchDB) close() {
	s.conn.Close()
	s.sqldb.Close()
}

func (s *scratchDB) serialize() ([]byte, error) {
	var image []byte
	err := s.conn.Raw(func(dc any) error {
		var err error
		image, err = dc.(interface{ Serialize() ([]byte, error) }).Serialize()
		return err
	})
	return image, err
}
