package test

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/target"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/mcpserver"
	"github.com/dsh-browser/broker/snug/samples"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// TestSnugAgentOverMCP: an agent on `broker mcp` writes an app, opens it
// in the user's browser, saves a new version (the open tab reloads in
// place, the data stays) and reverts it; and the app's agent turns go to
// the MCP host through sampling.
func TestSnugAgentOverMCP(t *testing.T) {
	s := stack.Start(t)
	srv := mcpserver.New(mcpserver.Options{RuntimeDir: s.B.RuntimeDir, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { srv.Close() })

	var mu sync.Mutex
	var sampled []*mcp.CreateMessageParams
	opts := &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		mu.Lock()
		sampled = append(sampled, req.Params)
		mu.Unlock()
		return &mcp.CreateMessageResult{Model: "host-model", Role: "assistant",
			Content: &mcp.TextContent{Text: "```json\n{\"message\":\"Sampled by your MCP host.\"}\n```"}}, nil
	}}
	serverT, clientT := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx, serverT); close(served) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, opts).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); <-served })
	tool := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if res.IsError {
			t.Fatalf("%s %v: %s\nbroker:\n%s", name, args, b.String(), s.B.Stderr)
		}
		return b.String()
	}

	out := tool("app_write", map[string]any{"name": "Reading notes", "html": samples.Notebook, "iconEmoji": "📚",
		"runtimeContract": `{"overview":"Summarises the user's reading notes.","maxOutputTokens":512}`})
	m := regexp.MustCompile(`as app ([0-9a-f-]{36})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("app_write: %s", out)
	}
	id := m[1]
	if out := tool("app_list", nil); !strings.Contains(out, id) {
		t.Fatalf("app_list: %s", out)
	}
	// The MCP host offered sampling when the session started; the user
	// chooses it for app turns.
	if out, errOut, code := app(t, s.B, "", "agent", "--mcp", "--mcp-host", "test-host"); code != 0 || !strings.Contains(out, "offering now: test-host") {
		t.Fatalf("agent --mcp (exit %d): %s%s", code, out, errOut)
	}

	if out := tool("app_open", map[string]any{"app": id}); !strings.Contains(out, "Opened") {
		t.Fatalf("app_open: %s", out)
	}
	runner := s.Browser.WaitTarget(t, func(i *target.Info) bool {
		return i.Type == "page" && strings.Contains(i.URL, "/snug/runner.html?app="+id)
	}, 0).TargetID
	nb := &stack.AppTab{Runner: runner}
	nb.WaitFrame(t, s, "document.body.dataset.ready", "")
	chromium.Eval[any](t, s.Browser, nb.Frame, `notebook.add('Deep Work', 'focus').then(() => notebook.summarise())`)
	st := notebook(t, s, nb)
	if !strings.Contains(string(st.Answer), "Sampled by your MCP host.") || len(st.Streamed) != 1 {
		t.Fatalf("a sampled turn: %+v", st)
	}
	mu.Lock()
	p := sampled[0]
	mu.Unlock()
	user := p.Messages[0].Content.(*mcp.TextContent).Text
	if !strings.Contains(p.SystemPrompt, "Summarises the user's reading notes.") || p.MaxTokens != 512 || p.IncludeContext != "none" ||
		!strings.HasPrefix(user, "[SNUG_APP_REQUEST]") || !strings.Contains(user, "Deep Work") {
		t.Fatalf("the host was asked %+v (user %q)", p, user)
	}

	// A new version: the open tab reloads in place, the data stays.
	v2 := strings.Replace(samples.Notebook, "<h1>📚 Reading notes</h1>", "<h1>📚 Reading notes, v2</h1>", 1)
	if out := tool("app_save_version", map[string]any{"app": id, "html": v2, "note": "a new title"}); !strings.Contains(out, "version 2") || !strings.Contains(out, "1 open tab") {
		t.Fatalf("app_save_version: %s", out)
	}
	nb.WaitFrame(t, s, "document.body.dataset.ready", nb.Ready)
	if h1 := chromium.Eval[string](t, s.Browser, nb.Frame, `document.querySelector('h1').textContent`); h1 != "📚 Reading notes, v2" {
		t.Fatalf("after the new version: %q", h1)
	}
	if st := notebook(t, s, nb); len(st.Notes) != 1 {
		t.Fatalf("the data after a new version: %+v", st)
	}
	if src := tool("app_source", map[string]any{"app": id}); !strings.Contains(src, "Reading notes, v2") || !strings.Contains(src, "maxOutputTokens") {
		t.Fatalf("app_source: %.200s", src)
	}
	if out := tool("app_versions", map[string]any{"app": id}); !strings.Contains(out, "version 2") || !strings.Contains(out, "a new title") {
		t.Fatalf("app_versions: %s", out)
	}
	if out := tool("app_revert", map[string]any{"app": id, "version": 1}); !strings.Contains(out, "as version 3") {
		t.Fatalf("app_revert: %s", out)
	}
	nb.WaitFrame(t, s, "document.body.dataset.ready", nb.Ready)
	if h1 := chromium.Eval[string](t, s.Browser, nb.Frame, `document.querySelector('h1').textContent`); h1 != "📚 Reading notes" {
		t.Fatalf("after revert: %q", h1)
	}
	// Refusals a model can act on.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "app_open", Arguments: map[string]any{"app": "no such app"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "app_list") {
		t.Fatalf("app_open of an unknown app: %+v %v", res, err)
	}
}
