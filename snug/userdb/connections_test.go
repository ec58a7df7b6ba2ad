package userdb_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/userdb"
)

// requirement is a valid api_key requirement for slot, with extra hosts.
func reqJSON(slot string, hosts ...string) string {
	all := append([]string{"api." + slot + ".example"}, hosts...)
	return fmt.Sprintf(`{"slot":%q,"provider":{"name":"Provider %s"},"kind":"api_key",
		"fields":[{"key":"api_key","label":"API key","type":"secret"}],
		"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"declaredApiHosts":["%s"]}`, slot, slot, strings.Join(all, `","`))
}

func canonical(t testing.TB, text string) string {
	t.Helper()
	r, err := conn.ParseString(text)
	if err != nil {
		t.Fatal(err)
	}
	return r.Canonical()
}

func put(t testing.TB, db *userdb.DB, app, text string) userdb.Connection {
	t.Helper()
	c, err := db.PutDeclaredConnection(ctx, app, text, conn.ProvenanceUser, nil)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return c
}

func approve(t testing.TB, db *userdb.DB, app string, c userdb.Connection, key string) userdb.Connection {
	t.Helper()
	a, err := db.ApproveConnection(ctx, app, c.Slot, c.RequirementJSON, userdb.Credentials{"api_key": key})
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	return a
}

func count(t testing.TB, path, app string) int {
	return queryInt(t, raw(t, path), `SELECT count(*) FROM snug_connections WHERE app_id = ?`, app)
}

// The cap: 8 slots, the 9th refused with nothing written; replacing a slot
// at the cap works; tombstones count; the cap is per app.
func TestConnectionSlotCap(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	a, b := mustInstall(t, db, "A"), mustInstall(t, db, "B")
	for i := range conn.MaxSlotsPerApp {
		put(t, db, a.ID, reqJSON(fmt.Sprintf("s%d", i)))
	}
	before := readFile(t, path)
	if _, err := db.PutDeclaredConnection(ctx, a.ID, reqJSON("s8"), conn.ProvenanceUser, nil); !errors.Is(err, userdb.ErrSlotCap) {
		t.Fatalf("9th slot: %v", err)
	}
	if !bytes.Equal(before, readFile(t, path)) || count(t, path, a.ID) != 8 {
		t.Fatal("the refused 9th slot wrote something")
	}
	if c := put(t, db, a.ID, reqJSON("s0", "more.example")); c.RequirementVersion != 2 {
		t.Fatalf("re-put at the cap: %+v", c)
	}
	put(t, db, b.ID, reqJSON("s8")) // the other app's own cap

	// Eight approve-then-revoke cycles fill the cap with tombstones.
	c := mustInstall(t, db, "C")
	for i := range conn.MaxSlotsPerApp {
		r := put(t, db, c.ID, reqJSON(fmt.Sprintf("t%d", i)))
		approve(t, db, c.ID, r, "k")
		if _, err := db.RevokeConnection(ctx, c.ID, r.Slot); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.PutDeclaredConnection(ctx, c.ID, reqJSON("t8"), conn.ProvenanceUser, nil); !errors.Is(err, userdb.ErrSlotCap) {
		t.Fatalf("after 8 tombstones: %v", err)
	}
}

// No column of snug_connections holds dynamic state.
func TestConnectionColumnsAreStatic(t *testing.T) {
	_, path := mustOpen(t, userdb.Options{})
	cols := queryStrings(t, raw(t, path), `SELECT name FROM pragma_table_info('snug_connections')`)
	if len(cols) != 14 {
		t.Fatalf("%d columns: %v", len(cols), cols)
	}
	for _, c := range cols {
		for _, bad := range []string{"token", "secret", "refresh", "expires", "verifier", "flow", "session", "password"} {
			if strings.Contains(c, bad) {
				t.Errorf("column %s", c)
			}
		}
	}
}

func TestRequirementVersions(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	v := func(text string) int { return put(t, db, app.ID, text).RequirementVersion }
	first := reqJSON("todo")
	if got := v(first); got != 1 {
		t.Fatalf("first put: v%d", got)
	}
	if got := v(first); got != 1 {
		t.Fatalf("identical put: v%d", got)
	}
	if got := v(reqJSON("todo", "b.example")); got != 2 {
		t.Fatalf("changed put: v%d", got)
	}
	if got := v(reqJSON("todo", "c.example")); got != 3 {
		t.Fatalf("changed again: v%d", got)
	}
	reordered := `{"declaredApiHosts":["api.todo.example","c.example"],"kind":"api_key","slot":"todo",
		"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"provider":{"name":"Provider todo"},
		"fields":[{"type":"secret","label":"API key","key":"api_key"}]}`
	if got := v(reordered); got != 3 {
		t.Fatalf("identical in another key order: v%d", got)
	}
}

func rowText(t testing.TB, path, app, slot string) map[string]string {
	t.Helper()
	r := raw(t, path)
	rows, err := r.Query(`SELECT * FROM snug_connections WHERE app_id = ? AND slot = ?`, app, slot)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		t.Fatal("no row")
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	rows.Scan(ptrs...)
	out := map[string]string{}
	for i, c := range cols {
		out[c] = fmt.Sprint(vals[i])
	}
	return out
}

// A staged edit never widens the ceiling: staging writes the pending
// column and updated_at, nothing else; approve discards it; only
// re-approval promotes it.
func TestStagedEditNeverWidens(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	c := approve(t, db, app.ID, put(t, db, app.ID, reqJSON("todo")), "sk-test-1")
	before := rowText(t, path, app.ID, "todo")
	widened := reqJSON("todo", "evil.example")
	if _, err := db.PutDeclaredConnection(ctx, app.ID, widened, conn.ProvenanceInference, nil); !errors.Is(err, userdb.ErrWriteRule) {
		t.Fatalf("a proposal aimed at an approved row: %v", err)
	}
	s, err := db.StagePendingRequirement(ctx, app.ID, widened)
	if err != nil || !s.NeedsReapproval() {
		t.Fatalf("stage: %+v %v", s, err)
	}
	after := rowText(t, path, app.ID, "todo")
	for col := range before {
		if before[col] != after[col] && col != "pending_requirement_json" && col != "updated_at" {
			t.Errorf("staging changed %s: %s → %s", col, before[col], after[col])
		}
	}
	if strings.Contains(after["allowed_hosts"], "evil.example") || after["pending_requirement_json"] != canonical(t, widened) {
		t.Fatalf("after staging: %v", after)
	}

	// Approve discards the edit and keeps the version.
	a, err := db.ApproveConnection(ctx, app.ID, "todo", c.RequirementJSON, nil)
	if err != nil || a.PendingJSON != "" || a.RequirementVersion != 1 || a.RequirementJSON != c.RequirementJSON {
		t.Fatalf("approve over a staged edit: %+v %v", a, err)
	}

	// Re-approval promotes it, after the user saw it.
	db.StagePendingRequirement(ctx, app.ID, widened)
	if _, err := db.ReapproveConnection(ctx, app.ID, "todo", c.RequirementJSON, nil); !errors.Is(err, userdb.ErrStaleReview) {
		t.Fatalf("re-approve of what the user did not see: %v", err)
	}
	r, err := db.ReapproveConnection(ctx, app.ID, "todo", canonical(t, widened), nil)
	if err != nil || r.RequirementVersion != 2 || r.PendingJSON != "" || !strings.Contains(r.AllowedHostsJSON, "evil.example") {
		t.Fatalf("re-approve: %+v %v", r, err)
	}

	// A pending requirement naming another slot (a state only a foreign
	// writer can make) is refused on re-approval.
	mustExec(t, raw(t, path), `UPDATE snug_connections SET pending_requirement_json = ? WHERE app_id = ?`, canonical(t, reqJSON("other")), app.ID)
	if _, err := db.ReapproveConnection(ctx, app.ID, "todo", canonical(t, reqJSON("other")), nil); !errors.Is(err, userdb.ErrSlotMismatch) {
		t.Fatalf("slot mismatch: %v", err)
	}
}

// Revocation keeps the row as a tombstone and deletes the slot's secrets,
// bytes and all; a revoked row takes no more writes.
func TestRevoke(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	const secret = "sk-live-REVOKE-ME-4eC39HqLyjWD"
	c := approve(t, db, app.ID, put(t, db, app.ID, reqJSON("todo")), secret)
	db.SetSecret(ctx, conn.StateKey(app.ID, "todo"), `{"status":"connected"}`)
	other := approve(t, db, app.ID, put(t, db, app.ID, reqJSON("keep")), "sk-live-KEEP-ME-xx")
	if !bytes.Contains(readFile(t, path), []byte(secret)) {
		t.Fatal("the secret is not in the file to begin with")
	}
	r, err := db.RevokeConnection(ctx, app.ID, c.Slot)
	if err != nil || r.Status != conn.StatusRevoked || r.RevokedAt == "" {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	if bytes.Contains(readFile(t, path), []byte(secret)) {
		t.Fatal("the revoked credential's bytes are still in the file")
	}
	if _, ok, _ := db.Secret(ctx, conn.StateKey(app.ID, "todo")); ok {
		t.Fatal("the slot's state survived revocation")
	}
	if v, _, _ := db.Secret(ctx, conn.CredentialKey(app.ID, other.Slot, "api_key")); v != "sk-live-KEEP-ME-xx" {
		t.Fatal("revoking one slot touched another")
	}
	for name, err := range map[string]error{
		"put": func() error {
			_, err := db.PutDeclaredConnection(ctx, app.ID, reqJSON("todo"), conn.ProvenanceUser, nil)
			return err
		}(),
		"approve": func() error { _, err := db.ApproveConnection(ctx, app.ID, "todo", c.RequirementJSON, nil); return err }(),
		"cred":    db.SetConnectionCredential(ctx, app.ID, "todo", "api_key", "x"),
	} {
		if !errors.Is(err, userdb.ErrRevoked) {
			t.Errorf("%s on a tombstone: %v", name, err)
		}
	}
	for name, err := range map[string]error{
		"revoke again": func() error { _, err := db.RevokeConnection(ctx, app.ID, "todo"); return err }(),
		"stage":        func() error { _, err := db.StagePendingRequirement(ctx, app.ID, reqJSON("todo")); return err }(),
	} {
		if !errors.Is(err, userdb.ErrWriteRule) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestWriterRefusals(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	before := readFile(t, path)
	for name, err := range map[string]error{
		"invalid": func() error {
			_, err := db.PutDeclaredConnection(ctx, app.ID, `{"slot":"x"}`, conn.ProvenanceUser, nil)
			return err
		}(),
		"provenance": func() error {
			_, err := db.PutDeclaredConnection(ctx, app.ID, reqJSON("x"), "model", nil)
			return err
		}(),
	} {
		if !errors.Is(err, userdb.ErrInvalidRequirement) || userdb.Code(err) != userdb.CodeInvalidRequirement {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := db.PutDeclaredConnection(ctx, "no-such-app", reqJSON("x"), conn.ProvenanceUser, nil); !errors.Is(err, userdb.ErrNotFound) {
		t.Errorf("unknown app: %v", err)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("a refused write changed the file")
	}
	c := put(t, db, app.ID, reqJSON("todo"))
	for name, err := range map[string]error{
		"revoke declared": func() error { _, err := db.RevokeConnection(ctx, app.ID, "todo"); return err }(),
		"stage declared":  func() error { _, err := db.StagePendingRequirement(ctx, app.ID, reqJSON("todo")); return err }(),
		"reapprove declared": func() error {
			_, err := db.ReapproveConnection(ctx, app.ID, "todo", c.RequirementJSON, nil)
			return err
		}(),
	} {
		if !errors.Is(err, userdb.ErrWriteRule) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := db.ApproveConnection(ctx, app.ID, "todo", c.RequirementJSON, nil); !errors.Is(err, userdb.ErrInvalid) {
		t.Errorf("approve without the required credential: %v", err)
	}
	if _, err := db.ApproveConnection(ctx, app.ID, "todo", c.RequirementJSON, userdb.Credentials{"api_key": "k", "password": "p"}); !errors.Is(err, userdb.ErrInvalid) {
		t.Errorf("approve with an undeclared field: %v", err)
	}
	if _, err := db.ApproveConnection(ctx, app.ID, "todo", canonical(t, reqJSON("todo", "x.example")), userdb.Credentials{"api_key": "k"}); !errors.Is(err, userdb.ErrStaleReview) {
		t.Errorf("approve of another requirement than the row's: %v", err)
	}
	if got, _ := db.Connections(ctx, app.ID); got[0].Status != conn.StatusDeclared {
		t.Fatalf("a refused approval approved: %+v", got[0])
	}
	a := approve(t, db, app.ID, c, "k")
	if a.AllowedHostsJSON != `["api.todo.example"]` || a.ApprovedAt == "" {
		t.Fatalf("approved: %+v", a)
	}
	if _, err := db.ApproveConnection(ctx, app.ID, "todo", c.RequirementJSON, nil); !errors.Is(err, userdb.ErrWriteRule) {
		t.Errorf("approve twice: %v", err)
	}
	fields, _ := db.CredentialFields(ctx, app.ID, "todo")
	if !fields["api_key"] || len(fields) != 1 {
		t.Fatalf("credential fields %v", fields)
	}
}

// Removing an app removes its connections and their secrets.
func TestRemoveDropsConnections(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	approve(t, db, app.ID, put(t, db, app.ID, reqJSON("todo")), "sk-live-GONE-WITH-APP")
	if err := db.Remove(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	if count(t, path, app.ID) != 0 || bytes.Contains(readFile(t, path), []byte("sk-live-GONE-WITH-APP")) {
		t.Fatal("the app's connection or credential survived its removal")
	}
}
