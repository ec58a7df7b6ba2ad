package userdb_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/userdb"
)

// checkRequirement stands in for the strict requirement check (§12.5): a
// JSON object naming the row's slot and 1–32 declared hosts; the ceiling
// is those hosts, lower-cased, sorted, unique.
func checkRequirement(slot, requirement string) (string, error) {
	var r struct {
		Slot  string   `json:"slot"`
		Hosts []string `json:"declaredApiHosts"`
	}
	dec := json.NewDecoder(strings.NewReader(requirement))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return "", err
	}
	if r.Slot != slot {
		return "", errors.New("CONNECTION_SLOT_MISMATCH")
	}
	if len(r.Hosts) == 0 || len(r.Hosts) > 32 {
		return "", errors.New("1 to 32 hosts")
	}
	hosts := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		hosts[i] = strings.ToLower(h)
	}
	slices.Sort(hosts)
	b, _ := json.Marshal(slices.Compact(hosts))
	return string(b), nil
}

func requirement(slot string, hosts ...string) string {
	b, _ := json.Marshal(map[string]any{"slot": slot, "declaredApiHosts": hosts})
	return string(b)
}

// connection is a row of snug_connections as a test writes it.
type connection struct {
	slot, requirement, status, hosts string
	pending                          string
}

func insertConnections(appID string, rows ...connection) []string {
	var stmts []string
	for _, r := range rows {
		pending, approved, revoked := "NULL", "NULL", "NULL"
		if r.pending != "" {
			pending = quote(r.pending)
		}
		if r.status == "approved" {
			approved = "'2026-11-01T10:00:00.000Z'"
		}
		if r.status == "revoked" {
			revoked = "'2026-11-02T10:00:00.000Z'"
		}
		stmts = append(stmts, fmt.Sprintf(`INSERT OR REPLACE INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance, confidence, status,
			pending_requirement_json, imported, allowed_hosts, approved_at, revoked_at, created_at, updated_at)
			VALUES (%s, %s, %s, 1, 'user', NULL, %s, %s, 0, %s, %s, %s, '2026-11-01T09:00:00.000Z', '2026-11-01T10:00:00.000Z')`,
			quote(appID), quote(r.slot), quote(r.requirement), quote(r.status), pending, quote(r.hosts), approved, revoked))
	}
	return stmts
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// connectionState is a row as the tests compare it.
func connectionStates(t *testing.T, path string) []string {
	t.Helper()
	return queryStrings(t, raw(t, path), `SELECT slot || ' ' || status || ' imported=' || imported || ' hosts=' || allowed_hosts ||
		' approved=' || coalesce(approved_at, '-') || ' pending=' || coalesce(pending_requirement_json, '-') FROM snug_connections ORDER BY slot`)
}

func TestImportReconcilesConnections(t *testing.T) {
	gh := requirement("github", "api.github.com")
	widened := requirement("github", "api.github.com", "evil.example")
	// This hub: one app with an approved GitHub grant, a revoked tombstone
	// and an approved mail grant.
	db, path := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	db.Close()
	r := raw(t, path)
	for _, s := range insertConnections(app.ID,
		connection{slot: "github", requirement: gh, status: "approved", hosts: `["api.github.com"]`},
		connection{slot: "old", requirement: requirement("old", "old.example"), status: "revoked", hosts: `["old.example"]`},
		connection{slot: "mail", requirement: requirement("mail", "mail.example"), status: "approved", hosts: `["mail.example"]`},
	) {
		mustExec(t, r, s)
	}
	r.Close()
	db = mustReopen(t, path)
	local, err := db.Export(ctx, userdb.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a round trip keeps every approval", func(t *testing.T) {
		rep, err := db.Import(ctx, local, userdb.ImportOptions{Requirements: checkRequirement})
		if err != nil || rep.Connections.Restored != 2 || rep.Connections.Revoked != 1 || rep.Connections.Declared != 0 || len(rep.Connections.Dropped) != 0 {
			t.Fatalf("report %+v %v", rep.Connections, err)
		}
	})
	db.Close()
	want := connectionStates(t, path)
	pristine := readFile(t, path)

	cases := []struct {
		name  string
		rows  []connection
		check userdb.RequirementCheck
		want  []string
		rep   string
	}{{
		name:  "identical rows restore the local grants",
		rows:  nil,
		check: checkRequirement,
		want:  want,
		rep:   "restored=2 declared=0 revoked=1 dropped=[]",
	}, {
		name: "an edited requirement lands declared and imported, its hosts derived",
		rows: []connection{{slot: "github", requirement: widened, status: "approved", hosts: `["api.github.com","evil.example"]`}},
		want: []string{
			`github declared imported=1 hosts=["api.github.com","evil.example"] approved=- pending=-`,
			want[1], want[2],
		},
		check: checkRequirement,
		rep:   "restored=1 declared=1 revoked=1 dropped=[]",
	}, {
		name: "a widened allowed_hosts column is ignored",
		rows: []connection{{slot: "github", requirement: gh, status: "approved", hosts: `["api.github.com","evil.example"]`}},
		want: []string{
			`github declared imported=1 hosts=["api.github.com"] approved=- pending=-`,
			want[1], want[2],
		},
		check: checkRequirement,
		rep:   "restored=1 declared=1 revoked=1 dropped=[]",
	}, {
		name:  "an identical grant with a staged widening restores the local row, never the pending edit",
		rows:  []connection{{slot: "github", requirement: gh, status: "approved", hosts: `["api.github.com"]`, pending: widened}},
		want:  want,
		check: checkRequirement,
		rep:   "restored=2 declared=0 revoked=1 dropped=[]",
	}, {
		name:  "a local revocation wins over an imported grant",
		rows:  []connection{{slot: "old", requirement: requirement("old", "old.example"), status: "approved", hosts: `["old.example"]`}},
		want:  want,
		check: checkRequirement,
		rep:   "restored=2 declared=0 revoked=1 dropped=[]",
	}, {
		name:  "an invalid requirement is dropped and named",
		rows:  []connection{{slot: "mail", requirement: requirement("other-slot", "mail.example"), status: "approved", hosts: `["mail.example"]`}},
		want:  []string{want[0], want[2]},
		check: checkRequirement,
		rep:   "restored=1 declared=0 revoked=1 dropped=[APP/mail: the requirement is invalid: CONNECTION_SLOT_MISMATCH]",
	}, {
		name:  "without a requirement check only identical grants survive",
		rows:  []connection{{slot: "github", requirement: widened, status: "approved", hosts: `["api.github.com"]`}},
		want:  []string{want[1], want[2]},
		check: nil,
		rep:   "restored=1 declared=0 revoked=1 dropped=[APP/github: this hub cannot check connection requirements yet]",
	}, {
		name:  "an imported tombstone stays revoked",
		rows:  []connection{{slot: "mail", requirement: requirement("mail", "mail.example"), status: "revoked", hosts: `["mail.example"]`}},
		want:  []string{want[0], `mail revoked imported=1 hosts=["mail.example"] approved=- pending=-`, want[2]},
		check: checkRequirement,
		rep:   "restored=1 declared=0 revoked=2 dropped=[]",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, pristine, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := userdb.Open(path, userdb.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			image := mutate(t, local, insertConnections(app.ID, tc.rows...)...)
			rep, err := db.Import(ctx, image, userdb.ImportOptions{Requirements: tc.check})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Connections
			got := fmt.Sprintf("restored=%d declared=%d revoked=%d dropped=%v", c.Restored, c.Declared, c.Revoked, c.Dropped)
			if got = strings.ReplaceAll(got, app.ID, "APP"); got != tc.rep {
				t.Errorf("report %s\nwant   %s", got, tc.rep)
			}
			db.Close()
			if got := connectionStates(t, path); !slices.Equal(got, tc.want) {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestImportedConnectionsAreCappedAndBoundToTheirApp(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	image, err := db.Export(ctx, userdb.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []connection
	for i := range 9 {
		slot := fmt.Sprintf("s%d", i)
		rows = append(rows, connection{slot: slot, requirement: requirement(slot, "h.example"), status: "declared", hosts: `[]`})
	}
	stmts := insertConnections(app.ID, rows...)
	stmts = append(stmts, insertConnections("no-such-app", connection{slot: "x", requirement: requirement("x", "x.example"), status: "declared", hosts: `[]`})...)
	rep, err := db.Import(ctx, mutate(t, image, stmts...), userdb.ImportOptions{Requirements: checkRequirement})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Connections.Declared != 8 || len(rep.Connections.Dropped) != 2 ||
		!strings.Contains(rep.Connections.Dropped[0], "s8: past the cap of 8") || !strings.Contains(rep.Connections.Dropped[1], "no-such-app/x: its app is not in the file") {
		t.Fatalf("report %+v", rep.Connections)
	}
	db.Close()
	// The derived hosts are stored as the check gave them, byte for byte.
	if got := queryStrings(t, raw(t, path), `SELECT DISTINCT allowed_hosts FROM snug_connections`); !slices.Equal(got, []string{`["h.example"]`}) {
		t.Fatalf("hosts %v", got)
	}
}

// An imported requirement is compared and stored in conn's canonical form:
// the same grant spelt another way in the file is restored, and a row that
// lands declared keeps its requirement_version when the same requirement
// is proposed again.
func TestImportCanonicalisesRequirements(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := books(t, db, "")
	approve(t, db, app.ID, put(t, db, app.ID, reqJSON("todo")), "k1")
	image, err := db.Export(ctx, userdb.ExportOptions{Secrets: true})
	if err != nil {
		t.Fatal(err)
	}
	respelt := `{"declaredApiHosts":["api.todo.example"], "kind":"api_key","slot":"todo",
		"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"provider":{"name":"Provider todo"},
		"fields":[{"type":"secret","label":"API key","key":"api_key"}]}`
	stmts := append([]string{`UPDATE snug_connections SET requirement_json = ` + quote(respelt) + ` WHERE slot = 'todo'`},
		insertConnections(app.ID, connection{slot: "mail", requirement: reqJSON("mail"), status: "declared", hosts: `[]`})...)
	rep, err := db.Import(ctx, mutate(t, image, stmts...), userdb.ImportOptions{Requirements: conn.CheckImported})
	if err != nil || rep.Connections.Restored != 1 || rep.Connections.Declared != 1 || len(rep.Connections.Dropped) != 0 {
		t.Fatalf("report %+v %v", rep.Connections, err)
	}
	db.Close()
	if got := rowText(t, path, app.ID, "mail")["requirement_json"]; got != canonical(t, reqJSON("mail")) {
		t.Fatalf("stored as\n%s", got)
	}
	if got := rowText(t, path, app.ID, "todo")["status"]; got != "approved" {
		t.Fatalf("the respelt grant is %s", got)
	}
	db = mustReopen(t, path)
	defer db.Close()
	if key, ok, err := db.Secret(ctx, conn.CredentialKey(app.ID, "todo", "api_key")); key != "k1" || !ok || err != nil {
		t.Fatalf("the restored grant's key: %q %v %v", key, ok, err)
	}
	if c := put(t, db, app.ID, reqJSON("mail")); c.RequirementVersion != 1 {
		t.Fatalf("the same proposal after the import: v%d", c.RequirementVersion)
	}
}

// The OAuth seat's secrets (the state signing key, sign-ins in progress)
// stay with the machine: an import, even of a file exported with its
// secrets, neither replaces this one's nor brings the other's.
func TestImportKeepsTheLocalOAuthSeat(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	books(t, db, "")
	for k, v := range map[string]string{conn.StateHMACKey: "hmac-of-the-other-machine", conn.FlowKey("f1"): `{"app":"x"}`, "byok:openai-compatible": byokSecret} {
		if err := db.SetSecret(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	image, err := db.Export(ctx, userdb.ExportOptions{Secrets: true})
	if err != nil {
		t.Fatal(err)
	}
	here, _ := mustOpen(t, userdb.Options{})
	if err := here.SetSecret(ctx, conn.StateHMACKey, "hmac-of-this-machine"); err != nil {
		t.Fatal(err)
	}
	rep, err := here.Import(ctx, image, userdb.ImportOptions{})
	if err != nil || rep.SecretsImported != 1 || rep.SecretsKept != 1 {
		t.Fatalf("report %+v %v", rep, err)
	}
	if v, _, _ := here.Secret(ctx, conn.StateHMACKey); v != "hmac-of-this-machine" {
		t.Fatalf("the state key is %q", v)
	}
	if _, ok, _ := here.Secret(ctx, conn.FlowKey("f1")); ok {
		t.Fatal("the other machine's sign-in in progress came along")
	}
	if v, _, _ := here.Secret(ctx, "byok:openai-compatible"); v != byokSecret {
		t.Fatal("the opted-in secret did not come")
	}
}
