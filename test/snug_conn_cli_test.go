package test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/test/harness/testenv"
)

// TestAppConnectionsCommand: `broker app connections` proposes a
// requirement from a file, lists and shows it, takes a credential from
// standard input only, and never prints or logs the credential.
func TestAppConnectionsCommand(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "todo.html")
	os.WriteFile(file, []byte("<!doctype html><title>Todo</title><p>todo</p>"), 0o600)
	id := regexp.MustCompile(`as ([0-9a-f-]{36})`).FindStringSubmatch(mustApp(t, b, "install", file))[1]

	if out := mustApp(t, b, "connections", "todo"); !strings.Contains(out, "No connections") {
		t.Fatalf("empty: %s", out)
	}
	req := filepath.Join(dir, "todo.json")
	os.WriteFile(req, []byte(`{"slot":"todo","provider":{"name":"Todo Cloud"},"kind":"api_key",
		"fields":[{"key":"api_key","label":"API key","type":"secret"}],
		"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"declaredApiHosts":["api.todo.example"]}`), 0o600)
	if out := mustApp(t, b, "connections", id, "--declare", req); !strings.Contains(out, `proposed "todo"`) || !strings.Contains(out, "nothing is granted") {
		t.Fatalf("declare: %s", out)
	}
	const secret = "sk-live-CLI-4eC39HqLyjWDarjtT1zdp7dc"
	out, errOut, code := app(t, b, secret+"\n", "connections", "todo", "--credential", "todo.api_key")
	if code != 0 || !strings.Contains(out, "stored the api_key") || strings.Contains(out+errOut, secret) {
		t.Fatalf("credential (exit %d): %s%s", code, out, errOut)
	}
	out = mustApp(t, b, "connections", "todo")
	if !regexp.MustCompile(`todo\s+Todo Cloud\s+api_key\s+declared\s+api.todo.example\s+api_key set`).MatchString(out) {
		t.Fatalf("list: %s", out)
	}
	if out := mustApp(t, b, "connections", "todo", "--show", "todo"); !strings.Contains(out, `"X-Api-Key": "{{api_key}}"`) || strings.Contains(out, secret) {
		t.Fatalf("show: %s", out)
	}
	// Refusals say what they mean.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"connections", "todo", "--revoke", "todo"}, "not approved"},
		{[]string{"connections", "todo", "--credential", "todo.password"}, "the field"},
		{[]string{"connections", "todo", "--credential", "Todo"}, "SLOT.FIELD"},
		{[]string{"connections", "todo", "--declare", file}, "connection requirement"},
	} {
		out, errOut, code := app(t, b, "x\n", c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v (exit %d): %s%s", c.args, code, out, errOut)
		}
	}
	if strings.Contains(b.Stderr.String(), secret) {
		t.Fatal("the credential is in the broker's log")
	}
}
