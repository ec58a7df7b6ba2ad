package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/test/harness/testenv"
)

// app runs `broker app ARGS…` against b with stdin, and returns stdout,
// stderr and the exit code.
func app(t *testing.T, b *testenv.Broker, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t, "broker"), append(append([]string{"app"}, args...), "--runtime-dir", b.RuntimeDir)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

func mustApp(t *testing.T, b *testenv.Broker, args ...string) string {
	t.Helper()
	out, errOut, code := app(t, b, "", args...)
	if code != 0 {
		t.Fatalf("broker app %v (exit %d): %s%s", args, code, out, errOut)
	}
	return out
}

// TestAppCommands: the whole `broker app` life of an app, across a broker
// restart, with the agent key read from standard input and shown nowhere.
func TestAppCommands(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "habits.html")
	os.WriteFile(file, []byte("<!doctype html><title>Habit tracker</title><p>v1</p>"), 0o600)
	v2 := filepath.Join(dir, "v2.html")
	os.WriteFile(v2, []byte("<!doctype html><title>Habit tracker</title><p>v2</p>"), 0o600)

	out := mustApp(t, b, "install", file)
	id := regexp.MustCompile(`as ([0-9a-f-]{36})`).FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, `"Habit tracker"`) {
		t.Fatalf("install: %s", out)
	}
	if out := mustApp(t, b, "list"); !strings.Contains(out, id[1]) || !strings.Contains(out, "Habit tracker") {
		t.Fatalf("list: %s", out)
	}
	if out := mustApp(t, b, "update", "habit tracker", v2, "--note", "second"); !strings.Contains(out, "version 2") {
		t.Fatalf("update: %s", out)
	}
	if out := mustApp(t, b, "revert", id[1], "1"); !strings.Contains(out, "version 3") {
		t.Fatalf("revert: %s", out)
	}
	if out := mustApp(t, b, "source", id[1]); !strings.Contains(out, "<p>v1</p>") {
		t.Fatalf("source after revert: %s", out)
	}
	out = mustApp(t, b, "versions", id[1])
	for _, want := range []string{"3 (current)", "second", "1 (pinned)", "copy of v1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("versions lack %q:\n%s", want, out)
		}
	}
	// Opening needs the extension.
	if _, errOut, code := app(t, b, "", "open", id[1]); code != 1 || !strings.Contains(errOut, "load it") {
		t.Fatalf("open without a browser (exit %d): %s", code, errOut)
	}
	if _, errOut, code := app(t, b, "", "open", "nothing like it"); code != 1 || !strings.Contains(errOut, "no such app") {
		t.Fatalf("open an unknown app (exit %d): %s", code, errOut)
	}

	// The agent: the key from stdin, never echoed, never shown.
	const key = "sk-cli-0123456789abcdefSECRET"
	out, errOut, code := app(t, b, key+"\n", "agent", "--endpoint", "http://127.0.0.1:9/v1", "--model", "small")
	if code != 0 || !strings.Contains(out, "a key stored") || strings.Contains(out+errOut, key) {
		t.Fatalf("agent (exit %d): %s%s", code, out, errOut)
	}
	if _, errOut, code := app(t, b, key, "agent", "--endpoint", "http://example.com/v1"); code != 1 || !strings.Contains(errOut, "plain http only") {
		t.Fatalf("an http endpoint off this machine (exit %d): %s", code, errOut)
	}
	status, _, _ := testenv.Run(t, nil, "status", "--json", "--runtime-dir", b.RuntimeDir)
	if strings.Contains(status, key) || strings.Contains(b.Stderr.String(), key) || !strings.Contains(status, `"hasKey":true`) {
		t.Fatalf("the key shows, or hasKey is missing:\n%s", status)
	}

	// Everything survives a restart.
	b.Stop(t)
	b.Start(t)
	if out := mustApp(t, b, "list"); !strings.Contains(out, id[1]) {
		t.Fatalf("list after restart: %s", out)
	}
	if out := mustApp(t, b, "agent"); !strings.Contains(out, "http://127.0.0.1:9/v1") || !strings.Contains(out, "a key stored") {
		t.Fatalf("agent after restart: %s", out)
	}
	mustApp(t, b, "remove", id[1])
	if out := mustApp(t, b, "list"); !strings.Contains(out, "No apps installed") {
		t.Fatalf("list after remove: %s", out)
	}
	state, _ := os.ReadFile(filepath.Join(b.StateDir, "user.snug"))
	if bytes.Contains(state, []byte("<p>v2</p>")) {
		t.Fatal("the removed app's HTML is still in the file")
	}
}

// TestAppExportImport: a user moves their apps to another machine with
// one exported file — without their key unless they ask, protected with a
// passphrase read from standard input — and the other side holds agent
// turns until the user confirms the settings that came with it.
func TestAppExportImport(t *testing.T) {
	t.Parallel()
	a := testenv.StartBroker(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "habits.html")
	os.WriteFile(file, []byte("<!doctype html><title>Habit tracker</title><p>v1</p>"), 0o600)
	mustApp(t, a, "install", file)
	if out, errOut, code := app(t, a, "sk-cli-export-key-123456\n", "agent", "--endpoint", "https://models.example/v1", "--model", "m"); code != 0 {
		t.Fatalf("agent (exit %d): %s%s", code, out, errOut)
	}

	plain := filepath.Join(dir, "snug-user.snug")
	if out := mustApp(t, a, "export", plain); !strings.Contains(out, "no secrets are in it") {
		t.Fatalf("export: %s", out)
	}
	if data, _ := os.ReadFile(plain); bytes.Contains(data, []byte("sk-cli-export-key")) || !bytes.HasPrefix(data, []byte("SQLite format 3")) {
		t.Fatal("the default export holds the key, or is not SQLite")
	}
	if _, errOut, code := app(t, a, "", "export", plain); code != 1 || !strings.Contains(errOut, "--force") {
		t.Fatalf("export over an existing file (exit %d): %s", code, errOut)
	}
	protected := filepath.Join(dir, "protected.snug")
	out, errOut, code := app(t, a, "a long passphrase\n", "export", protected, "--protect", "--secrets")
	rk := regexp.MustCompile(`(?m)^\s+([A-Z2-9]{5}(-[A-Z2-9]{1,5}){5})$`).FindStringSubmatch(out)
	if code != 0 || rk == nil || !strings.Contains(errOut, "no escrow") || !strings.Contains(out, "holds your secrets") {
		t.Fatalf("export --protect (exit %d): %s%s", code, out, errOut)
	}
	if out := mustApp(t, a, "export", filepath.Join(dir, "habits.sqlite"), "--app", "habit tracker"); !strings.Contains(out, "the data of app") {
		t.Fatalf("export --app: %s", out)
	}

	b := testenv.StartBroker(t)
	out = mustApp(t, b, "import", plain)
	for _, want := range []string{"imported 1 app(s)", "before-import", "paused until you confirm"} {
		if !strings.Contains(out, want) {
			t.Fatalf("import output lacks %q:\n%s", want, out)
		}
	}
	if out := mustApp(t, b, "list"); !strings.Contains(out, "Habit tracker") {
		t.Fatalf("list after import: %s", out)
	}
	if out := mustApp(t, b, "agent"); !strings.Contains(out, "https://models.example/v1") || !strings.Contains(out, "--confirm") || !strings.Contains(out, "no key") {
		t.Fatalf("agent after import: %s", out)
	}
	if out := mustApp(t, b, "agent", "--confirm"); !strings.Contains(out, "confirmed") {
		t.Fatalf("agent --confirm: %s", out)
	}
	if out := mustApp(t, b, "agent"); strings.Contains(out, "--confirm") {
		t.Fatalf("still unconfirmed: %s", out)
	}

	c := testenv.StartBroker(t)
	if _, errOut, code := app(t, c, "not it\n", "import", protected); code != 1 || !strings.Contains(errOut, "does not open") {
		t.Fatalf("import with the wrong passphrase (exit %d): %s", code, errOut)
	}
	if _, errOut, code := app(t, c, "", "import", file); code != 1 || !strings.Contains(errOut, "not a Snug user file") {
		t.Fatalf("import of an HTML file (exit %d): %s", code, errOut)
	}
	out = mustAppIn(t, c, strings.ToLower(rk[1])+"\n", "import", protected, "--recovery-key")
	if !strings.Contains(out, "1 secret(s) came with the file") {
		t.Fatalf("import with the recovery key: %s", out)
	}
	if out := mustApp(t, c, "agent"); !strings.Contains(out, "a key stored") {
		t.Fatalf("agent after importing the secrets: %s", out)
	}
}

func mustAppIn(t *testing.T, b *testenv.Broker, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := app(t, b, stdin, args...)
	if code != 0 {
		t.Fatalf("broker app %v (exit %d): %s%s", args, code, out, errOut)
	}
	return out
}
