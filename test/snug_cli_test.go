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
