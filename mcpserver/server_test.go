package mcpserver

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectNoBroker connects an SDK client to a Server whose runtime
// directory holds no broker.
func connectNoBroker(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	s := New(Options{RuntimeDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
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
