// Package mcp_test checks `broker mcp` with an MCP client written
// elsewhere: the official TypeScript SDK's Client and StdioClientTransport,
// in mcp.test.mjs beside this file.
package mcp_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
)

// dir is this test's directory: package.json, the lockfile and the Node
// test live here.
func dir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	d, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var ranRE = regexp.MustCompile(`pass (\d+)\n.*fail 0\n.*cancelled 0\n.*skipped (\d+)`)

// TestNodeMCPClient runs mcp.test.mjs against the built `broker mcp`, a
// real broker in personal mode and real Chromium showing /counter.
func TestNodeMCPClient(t *testing.T) {
	node := testenv.RequireCommand(t, "node")
	d := dir(t)
	testenv.NpmCI(t, d, "@modelcontextprotocol/sdk")
	s := stack.Start(t, "--access-mode=personal")
	page := s.Pages.URL("/counter")
	s.Tab(t, page)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", d)
	cmd.Dir = d
	cmd.Env = append(os.Environ(),
		"DSH_BROKER_BIN="+testenv.Binary(t, "broker"),
		"DSH_RUNTIME_DIR="+s.B.RuntimeDir,
		"DSH_INSTANCE="+s.Instance,
		"DSH_PAGE_URL="+page,
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("node --test:\n%s", out.String())
	if err != nil {
		t.Fatalf("node --test %s: %v\nbroker:\n%s", d, err, s.B.Stderr)
	}
	// The test skips itself without its environment: make sure it ran.
	if m := ranRE.FindSubmatch(out.Bytes()); m == nil || string(m[1]) == "0" || string(m[2]) != "0" {
		t.Fatalf("the Node test did not run")
	}
}
