package userdb

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/dsh-browser/broker/snug/conn"
)

// Import reconciliation of connections (spec §12.4): the rows of
// snug_connections in an imported file are untrusted. This file takes the
// strict requirement check from the caller ([RequirementCheck]); it writes
// the table directly, as the import's own step, not through the five
// writers of §12.3.

// ConnectionReport says what an import did with the file's connections.
type ConnectionReport struct {
	// Restored rows matched a local approved grant byte for byte (app,
	// slot, requirement, hosts) and keep it; Declared rows landed as
	// declared and imported, to be reviewed and approved again; Revoked
	// rows are tombstones kept revoked.
	Restored, Declared, Revoked int
	// Dropped names the rows ("app/slot: why") that could not be used;
	// the user is told.
	Dropped []string
}

// connectionRow is one row of snug_connections, every column as stored.
type connectionRow struct {
	appID, slot, requirement string
	version                  int64
	provenance               string
	confidence               sql.NullFloat64
	status                   string
	pending                  sql.NullString
	imported                 int64
	allowedHosts             string
	approvedAt, revokedAt    sql.NullString
	createdAt, updatedAt     string
}

const connectionColumns = `app_id, slot, requirement_json, requirement_version, provenance, confidence, status, pending_requirement_json,
	imported, allowed_hosts, approved_at, revoked_at, created_at, updated_at`

func scanConnections(ctx context.Context, c *sql.Conn, schema string) ([]connectionRow, error) {
	rows, err := c.QueryContext(ctx, `SELECT `+connectionColumns+` FROM `+schema+`.snug_connections ORDER BY app_id, slot`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []connectionRow
	for rows.Next() {
		var r connectionRow
		if err := rows.Scan(&r.appID, &r.slot, &r.requirement, &r.version, &r.provenance, &r.confidence, &r.status, &r.pending,
			&r.imported, &r.allowedHosts, &r.approvedAt, &r.revokedAt, &r.createdAt, &r.updatedAt); err != nil {
			return nil, fmt.Errorf("snug_connections: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// localConnections reads the hub's connections before an import replaces
// them.
func localConnections(ctx context.Context, c *sql.Conn) ([]connectionRow, error) {
	return scanConnections(ctx, c, "main")
}

// reconcileConnections writes main.snug_connections from the imported rows
// (imp.snug_connections, which the import emptied main of), one of three
// ways for each:
//
//  1. A row (not revoked) whose (app_id, slot, requirement_json,
//     allowed_hosts) is byte for byte a local approved row from before the
//     import restores that local row, grant and all (no approval fatigue on
//     a routine move). A local revoked tombstone for the same slot stays,
//     revoked.
//  2. Else a row that validates strictly (slot rule, provenance, status,
//     and check) lands declared with imported=1, approved_at cleared, no
//     pending edit, and allowed_hosts recomputed by check: the imported
//     column is never trusted. An imported tombstone stays revoked.
//  3. Else the row is dropped, and named in the report.
//
// Rows of apps the import does not hold, and rows past the slot cap of
// their app, are dropped too. A row that ends revoked loses its
// credentials (auth:<app>:<slot>:*), so the caller merges secrets first.
func reconcileConnections(ctx context.Context, c *sql.Conn, local []connectionRow, apps map[string]bool, check RequirementCheck) (ConnectionReport, error) {
	var rep ConnectionReport
	incoming, err := scanConnections(ctx, c, "imp")
	if err != nil {
		return rep, err
	}
	type key struct{ app, slot string }
	byKey := map[key]connectionRow{}
	for _, r := range local {
		byKey[key{r.appID, r.slot}] = r
	}
	slots := map[string]int{}
	drop := func(r connectionRow, why string) {
		rep.Dropped = append(rep.Dropped, fmt.Sprintf("%s/%s: %s", r.appID, r.slot, why))
	}
	for _, in := range incoming {
		// A requirement that parses is compared and stored in the canonical
		// form the writers keep, so an identical one restores its grant and
		// a later identical proposal keeps requirement_version. One that
		// does not parse stays as it came; the check refuses it.
		if req, err := conn.ParseString(in.requirement); err == nil {
			in.requirement = req.Canonical()
		}
		if !apps[in.appID] {
			drop(in, "its app is not in the file")
			continue
		}
		if slots[in.appID] >= conn.MaxSlotsPerApp { // revoked tombstones count
			drop(in, fmt.Sprintf("past the cap of %d connections per app", conn.MaxSlotsPerApp))
			continue
		}
		out, ok := in, true
		mine, had := byKey[key{in.appID, in.slot}]
		switch {
		case had && mine.status == "revoked":
			out = mine // a local revocation wins
			rep.Revoked++
		case had && mine.status == "approved" && in.status != "revoked" && mine.requirement == in.requirement && mine.allowedHosts == in.allowedHosts:
			out = mine // branch 1: restore the local grant as it was
			rep.Restored++
		default:
			var why string
			if out, why = untrusted(in, check); why != "" {
				drop(in, why)
				ok = false
			} else if out.status == "revoked" {
				rep.Revoked++
			} else {
				rep.Declared++
			}
		}
		if !ok {
			continue
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO main.snug_connections (`+connectionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			out.appID, out.slot, out.requirement, out.version, out.provenance, out.confidence, out.status, out.pending,
			out.imported, out.allowedHosts, out.approvedAt, out.revokedAt, out.createdAt, out.updatedAt); err != nil {
			return rep, err
		}
		slots[in.appID]++
		if out.status == "revoked" { // a tombstone holds no credential
			if _, err := c.ExecContext(ctx, `DELETE FROM main.snug_secrets WHERE substr(key, 1, length(?1)) = ?1`, "auth:"+out.appID+":"+out.slot+":"); err != nil {
				return rep, err
			}
		}
	}
	sort.Strings(rep.Dropped)
	return rep, nil
}

// untrusted is branch 2 of reconcileConnections: the imported row as it
// may land (declared or revoked, imported, hosts recomputed), or why it
// cannot.
func untrusted(r connectionRow, check RequirementCheck) (connectionRow, string) {
	switch {
	case !conn.ValidSlot(r.slot):
		return r, "the slot name breaks the rule"
	case !conn.ValidProvenance(conn.Provenance(r.provenance)):
		return r, "unknown provenance"
	case r.status != "declared" && r.status != "approved" && r.status != "revoked":
		return r, "unknown status"
	case r.version < 1:
		return r, "bad requirement version"
	case check == nil:
		return r, "this hub cannot check connection requirements yet"
	}
	hosts, err := check(r.slot, r.requirement)
	if err != nil {
		return r, "the requirement is invalid: " + err.Error()
	}
	if r.status != "revoked" {
		r.status = "declared"
		r.revokedAt = sql.NullString{}
	}
	r.imported = 1
	r.approvedAt = sql.NullString{}
	r.pending = sql.NullString{} // a pending edit is never promoted by an import
	r.allowedHosts = hosts
	return r, ""
}
