package userdb_test

import (
	"slices"
	"testing"

	"github.com/dsh-browser/broker/snug/userdb"
)

func TestApprovedConnectionsShowNoHost(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Repos")
	other := mustInstall(t, db, "Other")
	db.Close()
	r := raw(t, path)
	for _, row := range [][]any{
		{app.ID, "github", `{"slot":"github","provider":{"name":"GitHub"},"kind":"bearer_token","declaredApiHosts":["api.github.com"]}`, "approved", 0},
		{app.ID, "hue", `{"slot":"hue","provider":{"name":"Hue\u0455 <b>"}}`, "approved", 0},
		{app.ID, "mail", `{"slot":"mail","provider":{"name":"Mail"}}`, "declared", 0},
		{app.ID, "cal", `{"slot":"cal","provider":{"name":"Calendar"}}`, "approved", 1},
		{app.ID, "gone", `{"slot":"gone","provider":{"name":"Gone"}}`, "revoked", 0},
		{other.ID, "drive", `{"slot":"drive","provider":{"name":"Drive"}}`, "approved", 0},
	} {
		mustExec(t, r, `INSERT INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance, status, imported,
			allowed_hosts, created_at, updated_at) VALUES (?, ?, ?, 1, 'user', ?, ?, '["api.example.com"]', 'now', 'now')`, row...)
	}
	r.Close()
	db = mustReopen(t, path)
	got, err := db.ApprovedConnections(ctx, app.ID)
	if err != nil || !slices.Equal(got, []string{"github (GitHub)", "hue (Hue <b>)"}) {
		t.Fatalf("%q %v", got, err)
	}
}
