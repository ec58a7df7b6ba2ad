package hub_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/agent/agenttest"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/wire"
)

// calRequirement is a valid requirement (Part III §12.5), in one line.
const calRequirement = `{"slot":"cal","provider":{"name":"Cal"},"kind":"api_key","fields":[{"key":"api_key","label":"Key","type":"secret"}],` +
	`"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"declaredApiHosts":["api.cal.example"]}`

// exportTo exports the hub's user file to a new path and returns it.
func exportTo(t *testing.T, c *client.Client, params apps.ExportParams) (string, apps.Exported) {
	t.Helper()
	if params.Path == "" {
		params.Path = filepath.Join(t.TempDir(), "snug-user.snug")
	}
	out := call[apps.Exported](t, c, apps.MethodExport, params)
	return params.Path, out
}

// TestMoveToAnotherMachine: the user's apps and data move in one file,
// without the key; on the other side the foreign contract and a widened
// connection are neutralised, and agent turns wait until the user confirms
// the imported agent settings.
func TestMoveToAnotherMachine(t *testing.T) {
	te := newTurnEnv(t, contractA, agenttest.Reply{Text: `{"message":"ok"}`})
	path, out := exportTo(t, te.c, apps.ExportParams{})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 || out.Bytes != len(data) || out.Secrets || out.Protected {
		t.Fatalf("exported %+v, mode %v", out, fi.Mode())
	}
	if bytes.Contains(data, []byte(secret)) {
		t.Fatal("the default export holds the agent key")
	}
	if !bytes.HasPrefix(data, []byte("SQLite format 3\x00")) {
		t.Fatal("the export is not a SQLite file")
	}
	// The file picks up a widened connection on its way (an attacker, or
	// a careless edit): a grant whose hosts now include evil.example.
	// One requirement is not valid (dropped); the other is, and comes with
	// a grant whose allowed_hosts column is wider than it (it lands
	// declared, its ceiling recomputed by conn.CheckImported).
	tamper(t, path, `INSERT INTO snug_connections VALUES ('`+te.appID+`', 'github', '{"slot":"github"}', 1, 'user', NULL, 'approved', NULL, 0,
		'["api.github.com","evil.example"]', '2026-11-01T10:00:00.000Z', NULL, '2026-11-01T09:00:00.000Z', '2026-11-01T10:00:00.000Z')`)
	tamper(t, path, `INSERT INTO snug_connections VALUES ('`+te.appID+`', 'cal', '`+calRequirement+`', 1, 'user', NULL, 'approved', NULL, 0,
		'["api.cal.example","evil.example"]', '2026-11-01T10:00:00.000Z', NULL, '2026-11-01T09:00:00.000Z', '2026-11-01T10:00:00.000Z')`)

	other := start(t, "")
	oc := other.client(client.Options{})
	mine := install(t, oc, "<title>Local</title>", nil).App.ID
	rep := call[apps.Imported](t, oc, apps.MethodImport, apps.ImportParams{Path: path})
	if rep.Status != apps.ImportDone || rep.Apps != 1 || rep.ContractsDropped != 1 || rep.ContractsKept != 0 || !rep.AgentUnconfirmed ||
		rep.Connections.Declared != 1 || len(rep.Connections.Dropped) != 1 || !strings.Contains(rep.Connections.Dropped[0], "github") || rep.Backup == "" {
		t.Fatalf("import: %+v", rep)
	}
	conns := call[[]apps.Connection](t, oc, apps.MethodConnections, apps.ConnectionsParams{App: te.appID})
	if len(conns) != 1 || conns[0].Slot != "cal" || conns[0].Status != "declared" || !conns[0].Imported ||
		!slices.Equal(conns[0].Ceiling, []string{"api.cal.example"}) || !slices.Equal(conns[0].AllowedHosts, []string{"api.cal.example"}) || conns[0].ApprovedAt != "" {
		t.Fatalf("connections after import: %+v", conns)
	}
	list := call[[]apps.App](t, oc, apps.MethodApps, map[string]any{})
	if len(list) != 1 || list[0].ID != te.appID {
		t.Fatalf("apps after import: %+v", list)
	}
	if src := call[apps.Source](t, oc, apps.MethodSource, map[string]any{"app": te.appID}); src.RuntimeContract != "" || src.HTML != notes {
		t.Fatalf("source after import: %+v", src)
	}
	if n := countRows(t, filepath.Join(other.stateDir, "user.snug.before-import"), `SELECT count(*) FROM snug_apps WHERE app_id = '`+mine+`'`); n != 1 {
		t.Fatal("the backup does not hold the apps from before the import")
	}

	// Agent turns wait for the user's confirmation of the imported
	// settings (the key stayed behind: the other machine chose none).
	a := call[apps.Agent](t, oc, apps.MethodAgentGet, map[string]any{})
	if !a.Unconfirmed || a.Provider != apps.AgentOpenAI || a.Endpoint != te.stub.BaseURL() || a.HasKey {
		t.Fatalf("agent after import: %+v", a)
	}
	h := other.dialRunnerHost()
	tb := h.attach("tab", te.appID)
	ins := h.ready(tb)
	ask := func() map[string]any {
		id := nextID()
		h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:app-message", "requestId": id, "instanceId": ins, "appId": "app", "action": "x"})
		var f map[string]any
		tb.wait(t, apps.PieceFrame, func(b []byte) bool {
			f = parseFrame(b)
			return f["type"] == "snug:app-response" && f["requestId"] == id && f["streaming"] != true
		})
		return f
	}
	n := len(te.stub.Requests())
	if f := ask(); errCode(f) != "HOST_ERROR" || !strings.Contains(f["error"].(map[string]any)["message"].(string), "--confirm") {
		t.Fatalf("a turn before confirmation: %v", f)
	}
	if len(te.stub.Requests()) != n {
		t.Fatal("the imported endpoint was called before confirmation")
	}
	stale := apps.AgentConfirmParams{Provider: a.Provider, Endpoint: "https://elsewhere.example/v1", Model: a.Model}
	if _, err := callErr(oc, apps.MethodAgentConfirm, stale); !errors.Is(err, wire.Err(wire.CodeStaleTarget)) {
		t.Fatalf("confirming other settings: %v", err)
	}
	a = call[apps.Agent](t, oc, apps.MethodAgentConfirm, apps.AgentConfirmParams{Provider: a.Provider, Endpoint: a.Endpoint, Model: a.Model})
	if a.Unconfirmed {
		t.Fatal("still unconfirmed")
	}
	if f := ask(); f["ok"] != true {
		t.Fatalf("a turn after confirmation: %v", f)
	}
	if req := te.stub.Requests()[n]; strings.Contains(req.System, "Contract A") {
		t.Fatal("the imported contract reached the model")
	}
}

func TestProtectedExport(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	id := install(t, c, notes, nil).App.ID
	call[apps.Agent](t, c, apps.MethodAgentSet, apps.AgentSetParams{Provider: apps.AgentOpenAI, Endpoint: "https://models.example/v1", Key: secret})
	path, out := exportTo(t, c, apps.ExportParams{Passphrase: "correct horse battery", Secrets: true})
	data, _ := os.ReadFile(path)
	if !out.Protected || !out.Secrets || len(out.RecoveryKey) != 32 || !bytes.HasPrefix(data, []byte("SNUGENC1\n")) {
		t.Fatalf("exported %+v", out)
	}
	if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte(notes)) {
		t.Fatal("the protected file holds plaintext")
	}
	other := start(t, "")
	oc := other.client(client.Options{})
	for _, p := range []apps.ImportParams{{Path: path}, {Path: path, Passphrase: "wrong"}, {Path: path, RecoveryKey: "correct horse battery"}} {
		if rep := call[apps.Imported](t, oc, apps.MethodImport, p); rep.Status != apps.ImportLocked {
			t.Fatalf("import with %+v: %+v", p, rep)
		}
	}
	damaged := filepath.Join(t.TempDir(), "damaged.snug")
	bad := bytes.Clone(data)
	bad[len(bad)-30] ^= 1
	os.WriteFile(damaged, bad, 0o600)
	if rep := call[apps.Imported](t, oc, apps.MethodImport, apps.ImportParams{Path: damaged, Passphrase: "correct horse battery"}); rep.Status != apps.ImportCorrupt {
		t.Fatalf("import of a damaged file: %+v", rep)
	}
	if list := call[[]apps.App](t, oc, apps.MethodApps, map[string]any{}); len(list) != 0 {
		t.Fatal("a refused import changed the apps")
	}
	rep := call[apps.Imported](t, oc, apps.MethodImport, apps.ImportParams{Path: path, RecoveryKey: strings.ToLower(out.RecoveryKey)})
	if rep.Status != apps.ImportDone || rep.SecretsImported != 1 || rep.Apps != 1 {
		t.Fatalf("import with the recovery key: %+v", rep)
	}
	if a := call[apps.Agent](t, oc, apps.MethodAgentGet, map[string]any{}); !a.HasKey || !a.Unconfirmed {
		t.Fatalf("agent after importing the key: %+v", a)
	}
	if src := call[apps.Source](t, oc, apps.MethodSource, map[string]any{"app": id}); src.HTML != notes {
		t.Fatal("the app did not come")
	}
}

func TestExportAndImportRefusals(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	id := install(t, c, notes, nil).App.ID
	dir := t.TempDir()
	path, _ := exportTo(t, c, apps.ExportParams{Path: filepath.Join(dir, "a.snug")})
	for name, p := range map[string]apps.ExportParams{
		"an existing file":         {Path: path},
		"a relative path":          {Path: "a.snug"},
		"a missing directory":      {Path: filepath.Join(dir, "no", "a.snug")},
		"an app with secrets":      {Path: filepath.Join(dir, "b.snug"), App: id, Secrets: true},
		"an app with a passphrase": {Path: filepath.Join(dir, "b.snug"), App: id, Passphrase: "p"},
	} {
		if _, err := callErr(c, apps.MethodExport, p); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("export to %s: %v", name, err)
		}
	}
	call[apps.Exported](t, c, apps.MethodExport, apps.ExportParams{Path: path, Overwrite: true})

	// One app's database, standalone, natural names.
	appPath, out := exportTo(t, c, apps.ExportParams{Path: filepath.Join(dir, "notes.sqlite"), App: "reading & notes"})
	if out.App != id || countRows(t, appPath, `SELECT count(*) FROM sqlite_master WHERE name LIKE 'app\_%' ESCAPE '\' OR name LIKE 'snug\_a%' ESCAPE '\'`) != 0 {
		t.Fatalf("app export %+v", out)
	}

	notAFile := filepath.Join(dir, "notes.txt")
	os.WriteFile(notAFile, []byte("just some notes"), 0o600)
	newer := filepath.Join(dir, "newer.snug")
	data, _ := os.ReadFile(path)
	os.WriteFile(newer, data, 0o600)
	tamper(t, newer, "PRAGMA user_version = 7")
	for _, tc := range []struct{ path, status string }{
		{notAFile, apps.ImportNotUserFile},
		{newer, apps.ImportUnsupported},
		{filepath.Join(dir, "missing.snug"), apps.ImportUnreadable},
		{appPath, apps.ImportNotUserFile}, // an app's database is not a user file
	} {
		if rep := call[apps.Imported](t, c, apps.MethodImport, apps.ImportParams{Path: tc.path}); rep.Status != tc.status || rep.Detail == "" {
			t.Errorf("import of %s: %+v, want %s", filepath.Base(tc.path), rep, tc.status)
		}
	}
	if _, err := callErr(c, apps.MethodImport, apps.ImportParams{Path: "relative.snug"}); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
		t.Errorf("import of a relative path: %v", err)
	}
	if a := call[apps.Agent](t, c, apps.MethodAgentGet, map[string]any{}); a.Unconfirmed {
		t.Fatal("a refused import marked the agent unconfirmed")
	}
}

// TestImportReloadsRunners: a runner of an app the file holds shows the
// imported version; one of an app it lacks closes and says why.
func TestImportReloadsRunners(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	kept := install(t, c, notes, nil).App.ID
	path, _ := exportTo(t, c, apps.ExportParams{})
	call[apps.Saved](t, c, apps.MethodUpdate, map[string]any{"app": kept, "html": "<p>changed after the export</p>"})
	gone := install(t, c, "<title>Gone</title>", nil).App.ID
	h := e.dialRunnerHost()
	tbKept := h.attach("kept", kept)
	tbGone := h.attach("gone", gone)
	call[apps.Imported](t, c, apps.MethodImport, apps.ImportParams{Path: path})
	tbKept.wait(t, apps.PieceHTML, func(b []byte) bool { return string(b) == notes })
	tbGone.wait(t, apps.PieceClosed, func(b []byte) bool { return strings.Contains(string(b), "not in the imported file") })
}

func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func countRows(t *testing.T, path, q string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func parseFrame(b []byte) map[string]any {
	var f map[string]any
	json.Unmarshal(b, &f)
	return f
}
