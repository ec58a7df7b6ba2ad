// Package mcpbench puts `broker mcp` side by side with the MCP servers a user
// would otherwise install, @playwright/mcp and chrome-devtools-mcp (at the
// versions pinned in package.json), on the same test pages (/form,
// /counter, /swagger, the 2,000-element /big and /blankframes, whose
// button is inside a same-origin iframe) and the same Chromium
// binary: snapshots, clicks with and without an expectation, the bytes a
// model reads, and cold starts. bench.mjs beside this file does the
// measuring; this test starts the whole product for it and prints its
// tables. BENCHMARKS.md ("MCP servers side by side") says what each figure
// means.
//
// It takes several minutes, starts three browsers and installs the pinned
// packages from the npm registry on its first run, so it runs only with
// DSH_MCPBENCH=1 (-count=1: a benchmark's result must not come from go
// test's cache):
//
//	DSH_MCPBENCH=1 go test ./test/mcpbench -run . -v -count=1
package mcpbench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/test/harness/testpages"
)

// dir is this test's directory: package.json, the lockfile and bench.mjs.
func dir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	d, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMCPServersSideBySide runs bench.mjs against `broker mcp` on a real
// broker in personal mode (no approval window) with real Chromium and the
// extension, and against the two anchors, which launch their own headless
// Chromium from the same binary. All three read the same pages from the
// same local server.
func TestMCPServersSideBySide(t *testing.T) {
	if os.Getenv("DSH_MCPBENCH") != "1" {
		t.Skip("set DSH_MCPBENCH=1 to run the MCP benchmark (a few minutes, three browsers)")
	}
	node := testenv.RequireCommand(t, "node")
	d := dir(t)
	// Read the script from Go too, so that go test's cache notices when it
	// changes.
	if _, err := os.ReadFile(filepath.Join(d, "bench.mjs")); err != nil {
		t.Fatal(err)
	}
	testenv.NpmCI(t, d, "@modelcontextprotocol/sdk", "@playwright/mcp", "chrome-devtools-mcp")
	bin := chromium.Require(t)
	version, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}

	s := stack.Start(t, "--access-mode=personal")
	tab, id := s.Tab(t, s.Pages.URL("/form"))
	tabCtx := s.Browser.TargetCtx(t, id)

	// bench.mjs loads a page in the broker's tab through this endpoint (the
	// broker's MCP tools have no navigation): GET /navigate?path=/big loads
	// the page and answers once its load event has fired. It is never
	// timed.
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("path")
		if r.URL.Path != "/navigate" || !knownPath(path) {
			http.Error(w, "GET /navigate?path=<a test page>", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(tabCtx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Navigate(s.Pages.URL(path))); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer control.Close()

	// Stop the script in time for the stack's cleanup to run.
	deadline := time.Now().Add(20 * time.Minute)
	if dl, ok := t.Deadline(); ok {
		deadline = dl.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(d, "bench.mjs"))
	cmd.Dir = d
	cmd.Env = append(os.Environ(),
		"DSH_BROKER_BIN="+testenv.Binary(t, "broker"),
		"DSH_RUNTIME_DIR="+s.B.RuntimeDir,
		"DSH_INSTANCE="+s.Instance,
		"DSH_TAB="+tab,
		"DSH_PAGES_ORIGIN="+s.Pages.Origin(),
		"DSH_CONTROL_URL="+control.URL,
		"DSH_CHROMIUM_BIN="+bin,
		"DSH_CHROMIUM_VERSION="+strings.TrimSpace(string(version)),
		// chrome-devtools-mcp sends no usage statistics with CI set (it
		// also gets --no-usage-statistics); pages come from localhost only.
		"CI=true",
		"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1",
	)
	// The table (bench.mjs's standard output) is logged at the end;
	// progress and the servers' logs go to standard error as they come.
	var out testenv.SyncBuffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err = cmd.Run()
	t.Logf("bench.mjs:\n%s", out.String())
	if err != nil {
		t.Fatalf("node bench.mjs: %v\nbroker:\n%s", err, s.B.Stderr)
	}
}

// knownPath reports whether path is one of the test pages.
func knownPath(path string) bool {
	for _, p := range testpages.Paths() {
		if p == path {
			return true
		}
	}
	return false
}
