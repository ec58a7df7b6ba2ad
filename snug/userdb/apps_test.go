package userdb_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/userdb"
)

func versionNumbers(t *testing.T, db *userdb.DB, id string) (all, unpinned []int) {
	t.Helper()
	vs, err := db.Versions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		all = append(all, v.Version)
		if !v.Pinned {
			unpinned = append(unpinned, v.Version)
		}
	}
	return all, unpinned
}

func TestInstallIsVersion1Pinned(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app, err := db.Install(ctx, userdb.AppMeta{DisplayName: "Notes", IconEmoji: "📝", InstallSource: "starter:notes"}, "<html>notes</html>")
	if err != nil {
		t.Fatal(err)
	}
	if app.CurrentVersion != 1 || app.UsesDB || app.IconEmoji != "📝" || app.InstallSource != "starter:notes" {
		t.Fatalf("app %+v", app)
	}
	vs, _ := db.Versions(ctx, app.ID)
	if len(vs) != 1 || !vs[0].Pinned || vs[0].Version != 1 {
		t.Fatalf("versions %+v", vs)
	}
	got, html, err := db.OpenApp(ctx, app.ID)
	if err != nil || html != "<html>notes</html>" || got.ID != app.ID {
		t.Fatalf("open app: %+v %q %v", got, html, err)
	}
	apps, _ := db.Apps(ctx)
	if len(apps) != 1 || apps[0].ID != app.ID {
		t.Fatalf("apps %+v", apps)
	}
	if _, _, err := db.OpenApp(ctx, "nope"); !errors.Is(err, userdb.ErrNotFound) || userdb.Code(err) != "USERDB_NOT_FOUND" {
		t.Fatalf("open unknown: %v", err)
	}
}

func TestInstallRefusesBadMetadata(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	for _, m := range []userdb.AppMeta{
		{},
		{DisplayName: string(make([]byte, 81))},
		{DisplayName: "x", IconEmoji: "123456789"},
	} {
		if _, err := db.Install(ctx, m, "<html/>"); !errors.Is(err, userdb.ErrInvalid) {
			t.Fatalf("install %+v: %v", m, err)
		}
	}
	if _, err := db.Install(ctx, userdb.AppMeta{DisplayName: string(make([]rune, 80))}, "<html/>"); err != nil {
		t.Fatalf("an 80-character name: %v", err)
	}
}

func TestTwoAppsWithTheSameInstallSourceFail(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	meta := userdb.AppMeta{DisplayName: "Chess", InstallSource: "starter:chess"}
	if _, err := db.Install(ctx, meta, "<html/>"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Install(ctx, meta, "<html/>"); err == nil {
		t.Fatal("a second app with the same install_source was installed")
	}
	// Built apps (no source) are not limited.
	mustInstall(t, db, "a")
	mustInstall(t, db, "b")
	apps, _ := db.Apps(ctx)
	if len(apps) != 3 {
		t.Fatalf("%d apps", len(apps))
	}
}

func TestSavingVersions2To7KeepsAtLeast5UnpinnedAndThePinnedV1(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	for v := 2; v <= 7; v++ {
		got, err := db.Update(ctx, app.ID, userdb.NewVersion{HTML: fmt.Sprintf("<html>v%d</html>", v)})
		if err != nil || got.Version != v {
			t.Fatalf("update to v%d: %+v %v", v, got, err)
		}
	}
	all, unpinned := versionNumbers(t, db, app.ID)
	if !slices.Equal(unpinned, []int{7, 6, 5, 4, 3}) || !slices.Contains(all, 1) {
		t.Fatalf("versions %v (unpinned %v): want v1 pinned and the 5 newest unpinned", all, unpinned)
	}
	// One more: exactly the oldest unpinned goes.
	db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v8</html>"})
	if all, unpinned = versionNumbers(t, db, app.ID); !slices.Equal(unpinned, []int{8, 7, 6, 5, 4}) || !slices.Contains(all, 1) {
		t.Fatalf("after v8: %v", all)
	}
	// Reset returns the newest pinned HTML as a new version number.
	v, err := db.FactoryReset(ctx, app.ID)
	if err != nil || v.Version != 9 {
		t.Fatalf("reset: %+v %v", v, err)
	}
	_, html, _ := db.OpenApp(ctx, app.ID)
	if html != "<html>A</html>" {
		t.Fatalf("after reset the HTML is %q", html)
	}
}

func TestPinnedVersionsAreNeverPruned(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Starter")
	db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>starter v2</html>", Pinned: true})
	for i := range 10 {
		db.Update(ctx, app.ID, userdb.NewVersion{HTML: fmt.Sprintf("<html>edit %d</html>", i)})
	}
	all, unpinned := versionNumbers(t, db, app.ID)
	if !slices.Contains(all, 1) || !slices.Contains(all, 2) || len(unpinned) != userdb.VersionsRetained {
		t.Fatalf("versions %v", all)
	}
	// The factory version is the newest pinned one.
	db.FactoryReset(ctx, app.ID)
	if _, html, _ := db.OpenApp(ctx, app.ID); html != "<html>starter v2</html>" {
		t.Fatalf("reset to %q", html)
	}
}

func TestRevertCopiesForward(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v2</html>", RuntimeContract: `{"c":2}`})
	db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v3</html>"})
	v, err := db.Revert(ctx, app.ID, 2)
	if err != nil || v.Version != 4 || v.Pinned {
		t.Fatalf("revert: %+v %v", v, err)
	}
	all, _ := versionNumbers(t, db, app.ID)
	if !slices.Equal(all, []int{4, 3, 2, 1}) {
		t.Fatalf("history %v, want 4 3 2 1", all)
	}
	got, html, _ := db.OpenApp(ctx, app.ID)
	if html != "<html>v2</html>" || got.CurrentVersion != 4 {
		t.Fatalf("current %d %q", got.CurrentVersion, html)
	}
	if _, err := db.Revert(ctx, app.ID, 99); !errors.Is(err, userdb.ErrNotFound) {
		t.Fatalf("revert to a missing version: %v", err)
	}
}

// TestRuntimeContractCustody: a new version inherits the current contract
// unless it brings its own or drops it; revert and reset copy the target's
// contract, an absent one included.
func TestRuntimeContractCustody(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app, err := db.InstallVersion(ctx, userdb.AppMeta{DisplayName: "A"}, userdb.NewVersion{HTML: "<html>v1</html>", RuntimeContract: `{"c":1}`})
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() (userdb.Version, error){
		func() (userdb.Version, error) {
			return db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v2</html>"})
		}, // v2 inherits c1
		func() (userdb.Version, error) {
			return db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v3</html>", RuntimeContract: `{"c":3}`})
		}, // v3 its own
		func() (userdb.Version, error) {
			return db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v4</html>", DropContract: true})
		}, // v4 none
		func() (userdb.Version, error) {
			return db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v5</html>"})
		}, // v5 inherits none
		func() (userdb.Version, error) { return db.Revert(ctx, app.ID, 3) },    // v6 = v3 with c3
		func() (userdb.Version, error) { return db.Revert(ctx, app.ID, 4) },    // v7 = v4, none
		func() (userdb.Version, error) { return db.FactoryReset(ctx, app.ID) }, // v8 = v1 with c1
	}
	for i, step := range steps {
		if _, err := step(); err != nil {
			t.Fatalf("step %d: %v", i+2, err)
		}
		if i == 0 { // v2 is pruned by the end
			if s, err := db.Source(ctx, app.ID, 2); err != nil || s.RuntimeContract != `{"c":1}` {
				t.Fatalf("v2 %+v %v: the contract was not copied forward", s, err)
			}
		}
	}
	db.Close()
	got := queryStrings(t, raw(t, path), `SELECT version || ':' || html || ':' || coalesce(runtime_contract_json, '-') FROM snug_app_versions ORDER BY version`)
	want := []string{
		`1:<html>v1</html>:{"c":1}`, `4:<html>v4</html>:-`, `5:<html>v5</html>:-`,
		`6:<html>v3</html>:{"c":3}`, `7:<html>v4</html>:-`, `8:<html>v1</html>:{"c":1}`,
	}
	if !slices.Equal(got, want) { // v2 and v3 were pruned (five unpinned kept)
		t.Fatalf("versions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSeedingDocsNeverChangesAnExistingRow(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "A")
	if n, err := db.SeedDocs(ctx, app.ID, []userdb.Doc{{Slug: "vision", Content: "mine"}}); err != nil || n != 1 {
		t.Fatalf("seed: %d %v", n, err)
	}
	n, err := db.SeedDocs(ctx, app.ID, []userdb.Doc{{Slug: "vision", Title: "V", Content: "starter's"}, {Slug: "plan", Content: "p"}})
	if err != nil || n != 1 {
		t.Fatalf("second seed: %d %v", n, err)
	}
	docs, _ := db.Docs(ctx, app.ID)
	if len(docs) != 2 || docs[1].Slug != "vision" || docs[1].Content != "mine" || docs[1].Title != "" {
		t.Fatalf("docs %+v", docs)
	}
}

func TestRemoveCascades(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Gone")
	other := mustInstall(t, db, "Stays")
	run(t, db, app.ID, "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('the app''s private note')")
	run(t, db, other.ID, "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('other')")
	db.SeedDocs(ctx, app.ID, []userdb.Doc{{Slug: "memory", Content: "m"}})
	db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<html>v2</html>"})
	db.Close()
	r := raw(t, path)
	for k, v := range map[string]string{
		"auth:" + app.ID + ":slot:api_key":   "sk-app-secret-value-1234",
		"auth:" + other.ID + ":slot:api_key": "sk-other",
		"share:L1":                           "link-secret-9876",
		"byok:openai":                        "sk-global",
	} {
		mustExec(t, r, `INSERT INTO snug_secrets (key, value) VALUES (?, ?)`, k, v)
	}
	for _, k := range []string{"appModel:" + app.ID, "shareLink:" + app.ID + ":L1", "accessMuted:" + app.ID, "appModel:" + other.ID, "mode"} {
		mustExec(t, r, `INSERT INTO snug_settings (key, value) VALUES (?, '1')`, k)
	}
	mustExec(t, r, `INSERT INTO snug_chat_threads (thread_id, app_id, created_at, updated_at) VALUES ('t1', ?, 'x', 'x')`, app.ID)
	mustExec(t, r, `INSERT INTO snug_chat_messages (thread_id, role, content, created_at) VALUES ('t1', 'user', 'hello', 'x')`)
	mustExec(t, r, `INSERT INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance, status, created_at, updated_at) VALUES (?, 's', '{}', 1, 'user', 'declared', 'x', 'x')`, app.ID)
	r.Close()

	db = mustReopen(t, path)
	if err := db.Remove(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Remove(ctx, app.ID); !errors.Is(err, userdb.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
	if _, err := db.Materialise(ctx, app.ID); !errors.Is(err, userdb.ErrNotFound) {
		t.Fatalf("materialise a removed app: %v", err)
	}
	if rows := run(t, db, other.ID, "SELECT body FROM notes"); len(rows) != 1 {
		t.Fatalf("the other app's rows: %v", rows)
	}
	db.Close()
	r = raw(t, path)
	for _, q := range []string{"snug_apps", "snug_app_versions", "snug_app_schemas", "snug_app_migrations", "snug_app_docs", "snug_chat_threads", "snug_connections"} {
		if n := queryInt(t, r, "SELECT count(*) FROM "+q+" WHERE app_id = ?", app.ID); n != 0 {
			t.Errorf("%s keeps %d rows of the removed app", q, n)
		}
	}
	if n := queryInt(t, r, `SELECT count(*) FROM snug_chat_messages`); n != 0 {
		t.Error("chat messages of the removed app remain")
	}
	if n := queryInt(t, r, `SELECT count(*) FROM sqlite_master WHERE name = ?`, userdb.RestTableName(userdb.AppDataToken(app.ID), "notes")); n != 0 {
		t.Error("the removed app's table remains")
	}
	secrets := queryStrings(t, r, `SELECT key FROM snug_secrets ORDER BY key`)
	if !slices.Equal(secrets, []string{"auth:" + other.ID + ":slot:api_key", "byok:openai"}) {
		t.Errorf("secrets %v", secrets)
	}
	settings := queryStrings(t, r, `SELECT key FROM snug_settings ORDER BY key`)
	if !slices.Equal(settings, []string{"appModel:" + other.ID, "mode"}) {
		t.Errorf("settings %v", settings)
	}
	r.Close()
	file := readFile(t, path)
	for _, gone := range []string{"sk-app-secret-value-1234", "link-secret-9876", "the app's private note"} {
		if bytes.Contains(file, []byte(gone)) {
			t.Errorf("%q is still in the file's bytes", gone)
		}
	}
}
