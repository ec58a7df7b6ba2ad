package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/wire"
)

// TestOlderBroker: a broker that does not offer what broker mcp needs
// (the frames that come with an observation) refuses its tools with what
// to do, not a silently poorer outline. The broker is a stand-in that
// welcomes with the capabilities of an older version: a real one of this
// tree always offers them.
func TestOlderBroker(t *testing.T) {
	dir := t.TempDir()
	token := strings.Repeat("ab", 32)
	if err := os.WriteFile(paths.Token(dir), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", paths.Socket("", dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				p, err := frames.NewReader(c).Read()
				if err != nil {
					return
				}
				env, err := wire.ParseEnvelope(p)
				if err != nil {
					return
				}
				old := slices.DeleteFunc(browser.Offered(), func(c string) bool { return c == browser.CapObserveFrames })
				welcome, _ := json.Marshal(wire.Welcome{Version: 1, ConnectionEpoch: "e1", Capabilities: append(old, wire.CapOrderedIDs)})
				reply, _ := wire.Encode(wire.Success(env.ID, welcome))
				frames.Write(c, reply)
				io.Copy(io.Discard, c)
			}()
		}
	}()
	cs := connectIn(t, dir, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "browser_list", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(got, "older than this MCP server") || !strings.Contains(got, browser.CapObserveFrames) ||
		!strings.Contains(got, "restart") || strings.Contains(got, "not running") {
		t.Errorf("isError=%v %q", res.IsError, got)
	}
}

// connectNoBroker connects an SDK client to a Server whose runtime
// directory holds no broker.
func connectNoBroker(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectIn(t, t.TempDir(), opts)
}

// connectIn connects an SDK client to a Server of runtime directory dir.
func connectIn(t *testing.T, dir string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	s := New(Options{RuntimeDir: dir, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { s.Serve(ctx, st); close(served) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); <-served; s.Close() })
	return cs
}

// TestNoBroker: without a broker the server starts and lists its tools,
// and every tool answers with how to start the broker.
func TestNoBroker(t *testing.T) {
	cs := connectNoBroker(t, nil)
	for name, args := range map[string]map[string]any{
		"browser_list":       {},
		"browser_claim":      {"instanceId": "i", "tab": "t"},
		"browser_observe":    {"leaseId": "L"},
		"browser_frames":     {"leaseId": "L"},
		"browser_read_page":  {"leaseId": "L"},
		"browser_screenshot": {"leaseId": "L"},
		"browser_handoff":    {"leaseId": "L"},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || !strings.Contains(got, "broker serve") || !strings.Contains(got, "systemctl --user start broker.socket") {
			t.Errorf("%s: isError=%v %q", name, res.IsError, got)
		}
	}
	// Arguments are checked before the broker is needed.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "browser_act", Arguments: map[string]any{
		"leaseId": "L", "documentEpoch": "E", "action": map[string]any{"kind": "fill", "ref": "r1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(got, "fill needs action.text") {
		t.Errorf("fill without text: isError=%v %q", res.IsError, got)
	}
}
