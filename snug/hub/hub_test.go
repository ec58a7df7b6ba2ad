package hub_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/hub"
	"github.com/dsh-browser/broker/wire"
)

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

const notes = `<!doctype html><title>Reading &amp; notes</title><p>notes</p>`

func install(t testing.TB, c *client.Client, html string, extra map[string]any) apps.Saved {
	t.Helper()
	p := map[string]any{"html": html}
	for k, v := range extra {
		p[k] = v
	}
	return call[apps.Saved](t, c, apps.MethodInstall, p)
}

func TestAppsAndVersions(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	if s.App.DisplayName != "Reading & notes" || s.App.CurrentVersion != 1 || !s.Version.Pinned || !s.Version.Current {
		t.Fatalf("install: %+v", s)
	}
	id := s.App.ID
	// Updates: v2..v8, none pinned. At least five unpinned are kept, and
	// the pinned v1.
	for i := 2; i <= 8; i++ {
		call[apps.Saved](t, c, apps.MethodUpdate, map[string]any{"app": "reading & NOTES", "html": strings.Repeat("x", i)})
	}
	vs := call[[]apps.Version](t, c, apps.MethodVersions, map[string]any{"app": id})
	if len(vs) != 6 || vs[0].Version != 8 || !vs[0].Current || vs[5].Version != 1 || !vs[5].Pinned {
		t.Fatalf("versions %+v", vs)
	}
	// Revert copies forward.
	r := call[apps.Saved](t, c, apps.MethodRevert, map[string]any{"app": id, "version": 5})
	src := call[apps.Source](t, c, apps.MethodSource, map[string]any{"app": id})
	if r.Version.Version != 9 || src.Version != 9 || src.HTML != "xxxxx" {
		t.Fatalf("revert %+v, source %+v", r, src)
	}
	// Factory reset: the newest pinned (v1) as v10.
	f := call[apps.Saved](t, c, apps.MethodReset, map[string]any{"app": id})
	src = call[apps.Source](t, c, apps.MethodSource, map[string]any{"app": id, "version": 10})
	if f.Version.Version != 10 || src.HTML != notes {
		t.Fatalf("reset %+v, source %+v", f, src)
	}
	// Unknown and ambiguous references.
	if _, err := callErr(c, apps.MethodVersions, map[string]any{"app": "no such app"}); !errors.Is(err, wire.Err(wire.CodeStaleTarget)) {
		t.Fatalf("unknown app: %v", err)
	}
	install(t, c, notes, nil)
	if _, err := callErr(c, apps.MethodVersions, map[string]any{"app": "Reading & notes"}); !errors.Is(err, wire.Err(wire.CodeAmbiguousTarget)) {
		t.Fatalf("ambiguous name: %v", err)
	}
	if _, err := callErr(c, apps.MethodRevert, map[string]any{"app": id, "version": 2}); !errors.Is(err, wire.Err(wire.CodeStaleTarget)) {
		t.Fatalf("revert to a pruned version: %v", err)
	}
	// Remove cascades (userdb tests the cascade itself); the app is gone.
	call[map[string]string](t, c, apps.MethodRemove, map[string]any{"app": id})
	list := call[[]apps.App](t, c, apps.MethodApps, map[string]any{})
	if len(list) != 1 || list[0].ID == id {
		t.Fatalf("after remove: %+v", list)
	}
}

func TestInstallLimits(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	at := "<title>big</title>" + strings.Repeat("a", apps.MaxHTMLBytes-len("<title>big</title>"))
	if s := install(t, c, at, nil); s.Version.HTMLBytes != apps.MaxHTMLBytes {
		t.Fatalf("HTML at the bound: %+v", s)
	}
	// Past the bound in bytes though not in characters: é is two bytes.
	past := strings.Repeat("é", apps.MaxHTMLBytes/2) + "a"
	if _, err := callErr(c, apps.MethodInstall, map[string]any{"html": past}); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
		t.Fatalf("HTML past the bound: %v", err)
	}
	if _, err := callErr(c, apps.MethodInstall, map[string]any{"html": notes, "runtimeContract": `{"overview":"x","extra":1}`}); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
		t.Fatalf("an invalid contract: %v", err)
	}
	s := install(t, c, "<p>no title</p>", map[string]any{"runtimeContract": `{"overview":"A to-do list."}`})
	if s.App.DisplayName != "Untitled app" {
		t.Fatalf("default name %q", s.App.DisplayName)
	}
	// A new version copies the contract forward unless dropped.
	call[apps.Saved](t, c, apps.MethodUpdate, map[string]any{"app": s.App.ID, "html": "<p>2</p>"})
	if src := call[apps.Source](t, c, apps.MethodSource, map[string]any{"app": s.App.ID}); src.RuntimeContract != `{"overview":"A to-do list."}` {
		t.Fatalf("contract not copied forward: %+v", src)
	}
	call[apps.Saved](t, c, apps.MethodUpdate, map[string]any{"app": s.App.ID, "html": "<p>3</p>", "dropContract": true})
	if src := call[apps.Source](t, c, apps.MethodSource, map[string]any{"app": s.App.ID}); src.RuntimeContract != "" {
		t.Fatalf("contract not dropped: %+v", src)
	}
}

func TestTitleOf(t *testing.T) {
	for in, want := range map[string]string{
		"<TITLE lang=en>\n  Habit\ttracker </TITLE>":     "Habit tracker",
		"<title>A &lt;b&gt;</title>":                     "A <b>",
		"<p>none</p>":                                    "",
		"<title>" + strings.Repeat("😀", 50) + "</title>": strings.Repeat("😀", 40),
	} {
		if got := hub.TitleOf(in); got != want {
			t.Errorf("TitleOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenNeedsARunnerHost(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	if _, err := callErr(c, apps.MethodOpen, map[string]any{"app": s.App.ID}); !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
		t.Fatalf("open without a runner host: %v", err)
	}
	h := e.dialRunnerHost()
	o := call[apps.Opened](t, c, apps.MethodOpen, map[string]any{"app": "reading & notes"})
	if o.Tab != 7 || o.App.ID != s.App.ID || len(h.opened) != 1 || h.opened[0].App != s.App.ID || h.opened[0].Title != "Reading & notes" {
		t.Fatalf("open: %+v, asked %+v", o, h.opened)
	}
}

// TestRunnerServesFrames: attach, load (host-ready), announce (acked, shown
// on the chrome), storage through db frames, and a new version reloading
// the tab in place.
func TestRunnerServesFrames(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	h := e.dialRunnerHost()
	tb := h.attach("tab1", s.App.ID)
	ins := h.ready(tb)

	h.sendJSON("tab1", map[string]any{"v": 1, "type": "snug:app-announce", "appId": "claimed-id", "displayName": "Notes!", "iconEmoji": "📝"})
	tb.frameOf(t, "snug:host-ready", "")
	var d apps.Display
	json.Unmarshal(tb.wait(t, apps.PieceApp, func(b []byte) bool { return strings.Contains(string(b), `"announced":true`) }), &d)
	if d.DisplayName != "Notes!" || d.IconEmoji != "📝" || d.ID != s.App.ID || d.Version != 1 {
		t.Fatalf("display %+v", d)
	}

	db := func(op map[string]any) map[string]any {
		t.Helper()
		id := nextID()
		op["v"], op["type"], op["requestId"], op["instanceId"] = 1, "snug:db-request", id, ins
		h.sendJSON("tab1", op)
		return tb.frameOf(t, "snug:db-response", id)
	}
	for _, q := range []string{`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`, `INSERT INTO notes (body) VALUES ('one'), ('two')`} {
		if r := db(map[string]any{"op": "exec", "sql": q}); r["ok"] != true {
			t.Fatalf("%s: %v", q, r)
		}
	}
	r := db(map[string]any{"op": "exec", "sql": "SELECT body FROM notes WHERE id > ? ORDER BY id", "params": []any{0}})
	if rows, _ := json.Marshal(r["rows"]); string(rows) != `[["one"],["two"]]` {
		t.Fatalf("select: %v", r)
	}
	db(map[string]any{"op": "kvSet", "key": "theme", "value": map[string]any{"dark": true}})
	if r := db(map[string]any{"op": "kvGet", "key": "theme"}); r["ok"] != true || r["value"].(map[string]any)["dark"] != true {
		t.Fatalf("kvGet: %v", r)
	}
	// Another app's tables and the hub's are absent, by either name.
	other := install(t, c, "<title>other</title>", nil)
	h2 := h.attach("tab2", other.App.ID)
	ins2 := h.ready(h2)
	for _, q := range []string{"SELECT * FROM notes", "SELECT * FROM snug_secrets", "SELECT * FROM snug_apps",
		"SELECT name FROM sqlite_master WHERE name LIKE 'app_%'"} {
		id := nextID()
		h.sendJSON("tab2", map[string]any{"v": 1, "type": "snug:db-request", "requestId": id, "instanceId": ins2, "op": "exec", "sql": q})
		r := h2.frameOf(t, "snug:db-response", id)
		if rows, _ := json.Marshal(r["rows"]); r["ok"] == true && string(rows) != "[]" {
			t.Fatalf("%s from another app: %v", q, r)
		}
	}

	// A new version reloads the tab: the new document, then a new
	// instanceId once it loaded.
	saved := call[apps.Saved](t, c, apps.MethodUpdate, map[string]any{"app": s.App.ID, "html": "<title>v2</title>"})
	if saved.Reloaded != 1 {
		t.Fatalf("reloaded %d tabs", saved.Reloaded)
	}
	if html := tb.wait(t, apps.PieceHTML, func([]byte) bool { return true }); string(html) != "<title>v2</title>" {
		t.Fatalf("reloaded with %q", html)
	}
	h.conn.Notify(apps.EventLoad, apps.RunnerParams{Runner: "tab1"})
	if again := h.ready(tb); again == ins {
		t.Fatal("the reload kept the instanceId")
	}
	// Stale instanceId: dropped, no answer.
	h.sendJSON("tab1", map[string]any{"v": 1, "type": "snug:db-request", "requestId": "stale-1", "instanceId": ins, "op": "kvGet", "key": "x"})
	// Remove: the tab is told, the runner is gone.
	call[map[string]string](t, c, apps.MethodRemove, map[string]any{"app": s.App.ID})
	if reason := tb.wait(t, apps.PieceClosed, func([]byte) bool { return true }); !strings.Contains(string(reason), "removed") {
		t.Fatalf("closed: %s", reason)
	}
	for _, f := range tb.frames() {
		if f["requestId"] == "stale-1" {
			t.Fatalf("a stale request was answered: %v", f)
		}
	}
}
