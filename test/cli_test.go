package test

import (
	"strings"
	"testing"

	"github.com/dsh-browser/broker/internal/testenv"
)

func TestHelp(t *testing.T) {
	t.Parallel()
	out, _, code := testenv.Run(t, nil, "help")
	for _, want := range []string{"serve", "install", "uninstall", "call METHOD", "status", "XDG_RUNTIME_DIR"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("broker help (exit %d) does not mention %q:\n%s", code, want, out)
		}
	}
	_, errOut, code := testenv.Run(t, nil, "help", "serve")
	if code != 0 || !strings.Contains(errOut, "access-mode") || !strings.Contains(errOut, "allow-origin") {
		t.Fatalf("broker help serve (exit %d):\n%s", code, errOut)
	}
	_, errOut, code = testenv.Run(t, nil, "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command (exit %d):\n%s", code, errOut)
	}
	_, errOut, code = testenv.Run(t, nil, "serve", "--access-mode", "wide-open")
	if code != 1 || !strings.Contains(errOut, "restricted or personal") {
		t.Fatalf("bad access mode (exit %d):\n%s", code, errOut)
	}
	_, errOut, code = testenv.Run(t, nil, "serve", "--access-mode", "personal", "--allow-origin", "https://a.test")
	if code != 1 || !strings.Contains(errOut, "restricted mode only") {
		t.Fatalf("allowlist in personal mode (exit %d):\n%s", code, errOut)
	}
}
