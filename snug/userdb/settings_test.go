package userdb_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/dsh-browser/broker/snug/userdb"
)

func TestSettingsRoundTripAndDelete(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	if _, ok, err := db.Setting(ctx, "provider"); ok || err != nil {
		t.Fatalf("absent setting: ok %v err %v", ok, err)
	}
	if err := db.SetSettings(ctx, map[string]json.RawMessage{"provider": json.RawMessage(`"openai-compatible"`), "model": json.RawMessage(`"m"`)}); err != nil {
		t.Fatal(err)
	}
	v, ok, err := db.Setting(ctx, "provider")
	if !ok || err != nil || string(v) != `"openai-compatible"` {
		t.Fatalf("provider: %s %v %v", v, ok, err)
	}
	if err := db.SetSettings(ctx, map[string]json.RawMessage{"model": nil}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Setting(ctx, "model"); ok {
		t.Fatal("a nil value did not remove the setting")
	}
	if err := db.SetSettings(ctx, map[string]json.RawMessage{"x": json.RawMessage(`{`)}); !errors.Is(err, userdb.ErrInvalid) {
		t.Fatalf("a value that is not JSON: %v", err)
	}
	db.Close()
	db = mustReopen(t, path)
	if v, ok, _ := db.Setting(ctx, "provider"); !ok || string(v) != `"openai-compatible"` {
		t.Fatalf("after reopen: %s %v", v, ok)
	}
}

// TestSecretsLeaveNoBytesBehind: a replaced or removed secret's bytes are
// gone from the file (secure_delete), not only from the table.
func TestSecretsLeaveNoBytesBehind(t *testing.T) {
	db, path := mustOpen(t, userdb.Options{})
	const first, second = "sk-first-0123456789abcdef", "sk-second-fedcba9876543210"
	if err := db.SetSecret(ctx, "byok:openai-compatible", first); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := db.Secret(ctx, "byok:openai-compatible"); v != first || !ok || err != nil {
		t.Fatalf("secret: %q %v %v", v, ok, err)
	}
	if err := db.SetSecret(ctx, "byok:openai-compatible", second); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(readFile(t, path), []byte(first)) {
		t.Fatal("the replaced secret's bytes are still in the file")
	}
	if err := db.SetSecret(ctx, "byok:openai-compatible", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Secret(ctx, "byok:openai-compatible"); ok {
		t.Fatal("an empty value did not remove the secret")
	}
	if bytes.Contains(readFile(t, path), []byte(second)) {
		t.Fatal("the removed secret's bytes are still in the file")
	}
}

func TestSourceReadsAVersionOrTheCurrentOne(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app := mustInstall(t, db, "Notes")
	if _, err := db.Update(ctx, app.ID, userdb.NewVersion{HTML: "<p>v2</p>", RuntimeContract: `{"overview":"x"}`}); err != nil {
		t.Fatal(err)
	}
	s, err := db.Source(ctx, app.ID, 0)
	if err != nil || s.Version != 2 || s.HTML != "<p>v2</p>" || s.RuntimeContract != `{"overview":"x"}` {
		t.Fatalf("current: %+v %v", s, err)
	}
	s, err = db.Source(ctx, app.ID, 1)
	if err != nil || s.Version != 1 || s.HTML != "<html>Notes</html>" || s.RuntimeContract != "" {
		t.Fatalf("v1: %+v %v", s, err)
	}
	if _, err := db.Source(ctx, app.ID, 9); !errors.Is(err, userdb.ErrNotFound) {
		t.Fatalf("v9: %v", err)
	}
	if _, err := db.Source(ctx, "nope", 0); !errors.Is(err, userdb.ErrNotFound) {
		t.Fatalf("unknown app: %v", err)
	}
}

func TestInstallVersionKeepsItsContract(t *testing.T) {
	db, _ := mustOpen(t, userdb.Options{})
	app, err := db.InstallVersion(ctx, userdb.AppMeta{DisplayName: "C"}, userdb.NewVersion{HTML: "<p>", RuntimeContract: `{"overview":"c"}`})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Source(ctx, app.ID, 1)
	vs, _ := db.Versions(ctx, app.ID)
	if err != nil || s.RuntimeContract != `{"overview":"c"}` || len(vs) != 1 || !vs[0].Pinned || vs[0].Note != "installed" {
		t.Fatalf("%+v %v %+v", s, err, vs)
	}
}
