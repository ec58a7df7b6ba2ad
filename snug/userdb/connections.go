package userdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/dsh-browser/broker/snug/conn"
)

// Connection errors: the reference hub's names (spec Appendix A and its
// typed errors).
const (
	CodeInvalidRequirement = "INVALID_CONNECTION_REQUIREMENT" // the requirement or provenance is invalid
	CodeSlotMismatch       = "CONNECTION_SLOT_MISMATCH"       // a staged requirement names another slot
	CodeWriteRule          = "CONNECTION_WRITE_RULE_VIOLATION"
	CodeRevoked            = "CONNECTION_REVOKED"
	CodeSlotCapExceeded    = "CONNECTION_SLOT_CAP_EXCEEDED"
	CodeStaleReview        = "CONNECTION_STALE_REVIEW"
)

var (
	// ErrInvalidRequirement: the requirement does not parse (conn.Parse)
	// or the provenance is unknown. Nothing was written.
	ErrInvalidRequirement = &Error{CodeInvalidRequirement, "invalid connection requirement"}
	// ErrSlotMismatch: a staged or re-approved requirement names another
	// slot than its row.
	ErrSlotMismatch = &Error{CodeSlotMismatch, "the requirement names another slot"}
	// ErrWriteRule: the writer does not apply to the row's status (a
	// proposal aimed at an approved row must be staged; only an approved
	// row is revoked…).
	ErrWriteRule = &Error{CodeWriteRule, "this write does not apply to the connection's status"}
	// ErrRevoked: the row is a revocation tombstone; it is never written
	// again.
	ErrRevoked = &Error{CodeRevoked, "the connection was revoked"}
	// ErrSlotCap: the app has MaxSlotsPerApp rows already (tombstones
	// count); nothing was written.
	ErrSlotCap = &Error{CodeSlotCapExceeded, "the app has the most connections it may have"}
	// ErrStaleReview: the requirement changed since the user reviewed it;
	// the approval was not written.
	ErrStaleReview = &Error{CodeStaleReview, "the requirement changed since it was reviewed"}
)

// Connection is one row of snug_connections: an app's requirement for one
// provider and what the user granted.
type Connection struct {
	AppID              string
	Slot               string
	RequirementJSON    string // canonical (conn.Requirement.Canonical)
	RequirementVersion int
	Provenance         conn.Provenance
	Confidence         *float64 // display only
	Status             conn.Status
	PendingJSON        string // a staged edit, "" for none
	Imported           bool
	AllowedHostsJSON   string // the frozen ceiling, as stored
	ApprovedAt         string // "" for none
	RevokedAt          string
	CreatedAt          string
	UpdatedAt          string
}

// NeedsReapproval reports whether an approved row has a staged edit.
func (c Connection) NeedsReapproval() bool {
	return c.Status == conn.StatusApproved && c.PendingJSON != ""
}

// AllowedHosts decodes the frozen ceiling; an unreadable column is empty,
// which refuses everything.
func (c Connection) AllowedHosts() []string {
	var hosts []string
	if json.Unmarshal([]byte(c.AllowedHostsJSON), &hosts) != nil {
		return nil
	}
	return hosts
}

// Requirement parses the row's requirement (the approved one on an
// approved row: never the pending edit).
func (c Connection) Requirement() (*conn.Requirement, error) {
	return conn.ParseString(c.RequirementJSON)
}

const connSelectColumns = `app_id, slot, requirement_json, requirement_version, provenance, confidence, status,
	coalesce(pending_requirement_json, ''), imported, allowed_hosts, coalesce(approved_at, ''), coalesce(revoked_at, ''),
	created_at, updated_at`

func scanConn(row interface{ Scan(...any) error }) (Connection, error) {
	var c Connection
	var conf sql.NullFloat64
	var imported int
	err := row.Scan(&c.AppID, &c.Slot, &c.RequirementJSON, &c.RequirementVersion, &c.Provenance, &conf, &c.Status,
		&c.PendingJSON, &imported, &c.AllowedHostsJSON, &c.ApprovedAt, &c.RevokedAt, &c.CreatedAt, &c.UpdatedAt)
	if conf.Valid {
		c.Confidence = &conf.Float64
	}
	c.Imported = imported != 0
	return c, err
}

// Connections returns an app's connection rows, by slot.
func (db *DB) Connections(ctx context.Context, appID string) ([]Connection, error) {
	var out []Connection
	err := db.with(func(c *sql.Conn) error {
		var err error
		out, err = readConnections(ctx, c, appID)
		return err
	})
	return out, err
}

func readConnections(ctx context.Context, c *sql.Conn, appID string) ([]Connection, error) {
	rows, err := c.QueryContext(ctx, `SELECT `+connSelectColumns+` FROM snug_connections WHERE app_id = ? ORDER BY slot`, appID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Connection
	for rows.Next() {
		r, err := scanConn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ConnectionRow returns one row ([ErrNotFound] when absent).
func (db *DB) ConnectionRow(ctx context.Context, appID, slot string) (Connection, error) {
	var r Connection
	err := db.with(func(c *sql.Conn) error {
		var err error
		r, err = readConnection(ctx, c, appID, slot)
		return err
	})
	return r, err
}

func readConnection(ctx context.Context, c *sql.Conn, appID, slot string) (Connection, error) {
	r, err := scanConn(c.QueryRowContext(ctx, `SELECT `+connSelectColumns+` FROM snug_connections WHERE app_id = ? AND slot = ?`, appID, slot))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errorf(ErrNotFound, "app %q has no connection %q", appID, slot)
	}
	return r, err
}

func parseRequirement(text string) (*conn.Requirement, error) {
	req, err := conn.ParseString(text)
	if err != nil {
		return nil, errorf(ErrInvalidRequirement, "%v", err)
	}
	return req, nil
}

// The five writers (spec §12.3). Running app code reaches none of them:
// no frame, SDK call or announce field proposes a connection.

// PutDeclaredConnection is the one writer of proposals (the user, an
// agent building the app, an install): it inserts or replaces a declared
// row for the requirement's slot. It refuses an approved row (the
// proposal must be staged: [ErrWriteRule]), a revoked one ([ErrRevoked]),
// a new slot past [conn.MaxSlotsPerApp] rows ([ErrSlotCap], checked
// before writing), an invalid requirement or provenance
// ([ErrInvalidRequirement]); in each case nothing is written.
// requirement_version starts at 1 and grows by one whenever the canonical
// form changes.
func (db *DB) PutDeclaredConnection(ctx context.Context, appID, requirement string, prov conn.Provenance, confidence *float64) (Connection, error) {
	req, err := parseRequirement(requirement)
	if err != nil {
		return Connection{}, err
	}
	if !conn.ValidProvenance(prov) {
		return Connection{}, errorf(ErrInvalidRequirement, "unknown provenance %q", prov)
	}
	var out Connection
	err = db.write(ctx, func(c *sql.Conn) error {
		if err := appExists(ctx, c, appID); err != nil {
			return err
		}
		now := timestamp(db.opts.Now())
		row, err := readConnection(ctx, c, appID, req.Slot)
		switch {
		case errors.Is(err, ErrNotFound):
			var n int
			if err := c.QueryRowContext(ctx, `SELECT count(*) FROM snug_connections WHERE app_id = ?`, appID).Scan(&n); err != nil {
				return err
			}
			if n >= conn.MaxSlotsPerApp {
				return errorf(ErrSlotCap, "app %q has %d connections, the most it may have", appID, n)
			}
			_, err = c.ExecContext(ctx, `INSERT INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance,
				confidence, status, imported, allowed_hosts, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, 'declared', 0, '[]', ?, ?)`,
				appID, req.Slot, req.Canonical(), prov, confidence, now, now)
			if err != nil {
				return err
			}
		case err != nil:
			return err
		case row.Status == conn.StatusApproved:
			return errorf(ErrWriteRule, "connection %q is approved: stage the change for re-approval", req.Slot)
		case row.Status == conn.StatusRevoked:
			return errorf(ErrRevoked, "connection %q was revoked on %s", req.Slot, row.RevokedAt)
		default:
			version := row.RequirementVersion
			if row.RequirementJSON != req.Canonical() {
				version++
			}
			_, err = c.ExecContext(ctx, `UPDATE snug_connections SET requirement_json = ?, requirement_version = ?, provenance = ?,
				confidence = ?, allowed_hosts = '[]', updated_at = ? WHERE app_id = ? AND slot = ?`,
				req.Canonical(), version, prov, confidence, now, appID, req.Slot)
			if err != nil {
				return err
			}
		}
		out, err = readConnection(ctx, c, appID, req.Slot)
		return err
	})
	return out, err
}

// StagePendingRequirement stages a changed requirement on an approved row:
// it writes pending_requirement_json and updated_at and nothing else. The
// executor keeps the approved requirement and its frozen hosts until the
// user re-approves ([DB.ReapproveConnection]). A staged requirement that
// is identical to the approved one clears the stage.
func (db *DB) StagePendingRequirement(ctx context.Context, appID, requirement string) (Connection, error) {
	req, err := parseRequirement(requirement)
	if err != nil {
		return Connection{}, err
	}
	var out Connection
	err = db.write(ctx, func(c *sql.Conn) error {
		row, err := readConnection(ctx, c, appID, req.Slot)
		if err != nil {
			return err
		}
		if row.Status != conn.StatusApproved {
			return errorf(ErrWriteRule, "only an approved connection takes a staged change; %q is %s", req.Slot, row.Status)
		}
		var pending any = req.Canonical()
		if req.Canonical() == row.RequirementJSON {
			pending = nil
		}
		if _, err := c.ExecContext(ctx, `UPDATE snug_connections SET pending_requirement_json = ?, updated_at = ? WHERE app_id = ? AND slot = ?`,
			pending, timestamp(db.opts.Now()), appID, req.Slot); err != nil {
			return err
		}
		out, err = readConnection(ctx, c, appID, req.Slot)
		return err
	})
	return out, err
}

// Credentials are the values the user typed for a connection's fields,
// by field key. They are written only to snug_secrets.
type Credentials map[string]string

// ApproveConnection is the user's approval of a declared row, made in host
// chrome: it freezes allowed_hosts from requirement_json (never from a
// pending edit), stamps approved_at, clears imported, sets the status to
// approved, and stores creds (each a declared field; an empty value
// removes one) in the same transaction; every required field must then
// have a value. reviewed is the canonical
// requirement the user was shown: when the row's differs, nothing is
// written ([ErrStaleReview]). On an approved row with a staged edit it
// discards the edit (never promotes it) and keeps the version.
func (db *DB) ApproveConnection(ctx context.Context, appID, slot, reviewed string, creds Credentials) (Connection, error) {
	var out Connection
	err := db.write(ctx, func(c *sql.Conn) error {
		row, err := readConnection(ctx, c, appID, slot)
		if err != nil {
			return err
		}
		switch {
		case row.Status == conn.StatusRevoked:
			return errorf(ErrRevoked, "connection %q was revoked on %s", slot, row.RevokedAt)
		case row.Status == conn.StatusApproved && row.PendingJSON == "":
			return errorf(ErrWriteRule, "connection %q is approved already", slot)
		case row.RequirementJSON != reviewed:
			return errorf(ErrStaleReview, "connection %q", slot)
		}
		req, err := parseRequirement(row.RequirementJSON)
		if err != nil {
			return err
		}
		if err := putCredentials(ctx, c, appID, req, creds); err != nil {
			return err
		}
		if err := requireFields(ctx, c, appID, req); err != nil {
			return err
		}
		now := timestamp(db.opts.Now())
		if _, err := c.ExecContext(ctx, `UPDATE snug_connections SET status = 'approved', allowed_hosts = ?, approved_at = ?,
			imported = 0, pending_requirement_json = NULL, updated_at = ? WHERE app_id = ? AND slot = ?`,
			conn.HostsJSON(req.Ceiling()), now, now, appID, slot); err != nil {
			return err
		}
		out, err = readConnection(ctx, c, appID, slot)
		return err
	})
	return out, err
}

// ReapproveConnection promotes an approved row's staged edit, after the
// user reviewed its field-by-field diff: the pending requirement is
// validated again (its slot must be the row's: [ErrSlotMismatch]), becomes
// the requirement (the version grows when it differs), the hosts are
// frozen again from it and the stage is cleared; creds are stored as in
// ApproveConnection. It is the only path that widens a ceiling. reviewed
// is the canonical pending requirement the user was shown.
func (db *DB) ReapproveConnection(ctx context.Context, appID, slot, reviewed string, creds Credentials) (Connection, error) {
	var out Connection
	err := db.write(ctx, func(c *sql.Conn) error {
		row, err := readConnection(ctx, c, appID, slot)
		if err != nil {
			return err
		}
		if !row.NeedsReapproval() {
			return errorf(ErrWriteRule, "connection %q has no staged change to re-approve", slot)
		}
		if row.PendingJSON != reviewed {
			return errorf(ErrStaleReview, "connection %q", slot)
		}
		req, err := parseRequirement(row.PendingJSON)
		if err != nil {
			return err
		}
		if req.Slot != slot {
			return errorf(ErrSlotMismatch, "the staged requirement names slot %q, not %q", req.Slot, slot)
		}
		if err := putCredentials(ctx, c, appID, req, creds); err != nil {
			return err
		}
		if err := requireFields(ctx, c, appID, req); err != nil {
			return err
		}
		version := row.RequirementVersion
		if req.Canonical() != row.RequirementJSON {
			version++
		}
		now := timestamp(db.opts.Now())
		if _, err := c.ExecContext(ctx, `UPDATE snug_connections SET requirement_json = ?, requirement_version = ?, allowed_hosts = ?,
			approved_at = ?, imported = 0, pending_requirement_json = NULL, updated_at = ? WHERE app_id = ? AND slot = ?`,
			req.Canonical(), version, conn.HostsJSON(req.Ceiling()), now, now, appID, slot); err != nil {
			return err
		}
		out, err = readConnection(ctx, c, appID, slot)
		return err
	})
	return out, err
}

// RevokeConnection revokes an approved row: status revoked, revoked_at
// stamped, the row kept as a tombstone (it still counts against the cap),
// and every auth:<appId>:<slot>:* secret deleted in the same transaction
// (secure_delete zeroes their bytes).
func (db *DB) RevokeConnection(ctx context.Context, appID, slot string) (Connection, error) {
	var out Connection
	err := db.write(ctx, func(c *sql.Conn) error {
		row, err := readConnection(ctx, c, appID, slot)
		if err != nil {
			return err
		}
		if row.Status != conn.StatusApproved {
			return errorf(ErrWriteRule, "only an approved connection is revoked; %q is %s", slot, row.Status)
		}
		now := timestamp(db.opts.Now())
		if _, err := c.ExecContext(ctx, `UPDATE snug_connections SET status = 'revoked', revoked_at = ?, updated_at = ? WHERE app_id = ? AND slot = ?`,
			now, now, appID, slot); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `DELETE FROM snug_secrets WHERE substr(key, 1, length(?1)) = ?1`, conn.SlotKeyPrefix(appID, slot)); err != nil {
			return err
		}
		out, err = readConnection(ctx, c, appID, slot)
		return err
	})
	return out, err
}

// SetConnectionCredential stores one credential value of a declared or
// approved connection (an empty value removes it). field must be declared
// by the row's requirement; a revoked row takes none ([ErrRevoked]).
// The value goes to snug_secrets only.
func (db *DB) SetConnectionCredential(ctx context.Context, appID, slot, field, value string) error {
	return db.write(ctx, func(c *sql.Conn) error {
		row, err := readConnection(ctx, c, appID, slot)
		if err != nil {
			return err
		}
		if row.Status == conn.StatusRevoked {
			return errorf(ErrRevoked, "connection %q was revoked on %s", slot, row.RevokedAt)
		}
		req, err := parseRequirement(row.RequirementJSON)
		if err != nil {
			return err
		}
		return putCredentials(ctx, c, appID, req, Credentials{field: value})
	})
}

// CredentialFields reports which of a connection's fields have a value
// stored, without reading any value.
func (db *DB) CredentialFields(ctx context.Context, appID, slot string) (map[string]bool, error) {
	prefix := conn.SlotKeyPrefix(appID, slot)
	keys, err := db.SecretKeys(ctx, prefix)
	out := map[string]bool{}
	for _, k := range keys {
		if f := strings.TrimPrefix(k, prefix); f != conn.StateField {
			out[f] = true
		}
	}
	return out, err
}

// putCredentials writes creds under the requirement's slot; every key must
// be a declared field.
func putCredentials(ctx context.Context, c *sql.Conn, appID string, req *conn.Requirement, creds Credentials) error {
	keys := req.FieldKeys()
	for _, f := range slices.Sorted(maps.Keys(creds)) {
		if !slices.Contains(keys, f) {
			return errorf(ErrInvalid, "connection %q declares no field %q", req.Slot, f)
		}
		var v []byte
		if creds[f] != "" {
			v = []byte(creds[f])
		}
		if err := upsert(ctx, c, "snug_secrets", conn.CredentialKey(appID, req.Slot, f), v); err != nil {
			return err
		}
	}
	return nil
}

// requireFields refuses an approval that would leave a required field of
// req without a value.
func requireFields(ctx context.Context, c *sql.Conn, appID string, req *conn.Requirement) error {
	for _, f := range req.Fields {
		if !f.IsRequired() {
			continue
		}
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM snug_secrets WHERE key = ?`, conn.CredentialKey(appID, req.Slot, f.Key)).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return errorf(ErrInvalid, "the field %q (%s) needs a value", f.Key, f.Label)
		}
	}
	return nil
}

// secretField is a field name under a slot: a credential field key, or
// _connection.
var secretField = regexp.MustCompile(`^([a-z0-9_]{1,40}|_connection)$`)

// SetConnectionSecrets writes secrets under an approved connection's slot
// — tokens the executor obtained, its _connection state — in one
// transaction, and only while the row is approved: a token that arrives
// after a revocation is dropped, never stored ([ErrWriteRule]). An empty
// value removes its key.
func (db *DB) SetConnectionSecrets(ctx context.Context, appID, slot string, values map[string]string) error {
	return db.write(ctx, func(c *sql.Conn) error {
		row, err := readConnection(ctx, c, appID, slot)
		if err != nil {
			return err
		}
		if row.Status != conn.StatusApproved {
			return errorf(ErrWriteRule, "connection %q is %s", slot, row.Status)
		}
		for _, f := range slices.Sorted(maps.Keys(values)) {
			if !secretField.MatchString(f) {
				return errorf(ErrInvalid, "bad secret field %q", f)
			}
			var v []byte
			if values[f] != "" {
				v = []byte(values[f])
			}
			if err := upsert(ctx, c, "snug_secrets", conn.CredentialKey(appID, slot, f), v); err != nil {
				return err
			}
		}
		return nil
	})
}
