package test

import (
	"strings"
	"testing"

	"github.com/dsh-browser/broker/test/harness/testenv"
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
	if code != 2 || !strings.Contains(errOut, "restricted or personal") {
		t.Fatalf("bad access mode (exit %d):\n%s", code, errOut)
	}
	home := testenv.ShortTempDir(t)
	for _, bad := range [][]string{
		{"--access-mode=wide-open"},
		{"--admission=maybe"},
		{"--access-mode=personal", "--allow-origin=https://a.test"},
	} {
		args := append([]string{"install", "--no-service", "--manifest-dir", home}, bad...)
		if _, errOut, code := testenv.Run(t, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home}, args...); code != 2 || !strings.Contains(errOut, "broker install:") {
			t.Fatalf("install %v (exit %d): %s", bad, code, errOut)
		}
	}
	_, errOut, code = testenv.Run(t, nil, "serve", "--access-mode", "personal", "--allow-origin", "https://a.test")
	if code != 1 || !strings.Contains(errOut, "restricted mode only") {
		t.Fatalf("allowlist in personal mode (exit %d):\n%s", code, errOut)
	}
}

// TestRefusalTracing: a refusal is a generic code on the wire; its reason
// reaches stderr only with DSH_TRACE_REFUSALS=1, and never the secret.
func TestRefusalTracing(t *testing.T) {
	t.Parallel()
	for _, trace := range []bool{false, true} {
		b := testenv.StartBroker(t)
		b.Stop(t)
		if trace {
			b.Env = []string{"DSH_TRACE_REFUSALS=1"}
		} else {
			b.Env = []string{"DSH_TRACE_REFUSALS=0"}
		}
		b.Start(t, "--log-level", "info")
		p := b.DialPeer(t)
		wrong := strings.Repeat("7", 64)
		if r := p.Call("hello", testenv.ClientHello(wrong)); r.Code != "POLICY_DENIED" {
			t.Fatalf("wrong token: %+v", r)
		}
		b.Stop(t)
		log := b.Stderr.String()
		if got := strings.Contains(log, "refused: wrong or missing token"); got != trace {
			t.Fatalf("DSH_TRACE_REFUSALS=%v: reason printed %v\n%s", trace, got, log)
		}
		if strings.Contains(log, wrong) || strings.Contains(log, b.Token(t)) {
			t.Fatalf("a token reached the log:\n%s", log)
		}
	}
}
