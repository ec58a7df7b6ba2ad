package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/mcpserver"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// host is an MCP host in the test: an SDK client session, and what it was
// asked through elicitation.
type host struct {
	t  *testing.T
	cs *mcp.ClientSession

	mu        sync.Mutex
	questions []string
	answer    *mcp.ElicitResult // nil: the host declares no elicitation
}

func connect(t *testing.T, srv *mcpserver.Server, elicit bool) *host {
	t.Helper()
	h := &host{t: t}
	var opts mcp.ClientOptions
	if elicit {
		h.answer = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.questions = append(h.questions, req.Params.Message)
			return h.answer, nil
		}
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx, st); close(served) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.cs = cs
	t.Cleanup(func() { cs.Close(); cancel(); <-served })
	return h
}

// call calls a tool and returns its text; wantError says whether the
// result must be a tool error.
func (h *host) call(name string, args map[string]any, wantError bool) (string, *mcp.CallToolResult) {
	h.t.Helper()
	res, err := h.cs.CallTool(h.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError != wantError {
		h.t.Fatalf("%s %v: isError=%v:\n%s", name, args, res.IsError, b.String())
	}
	return b.String(), res
}

// image returns a tool result's image, or nil.
func image(res *mcp.CallToolResult) *mcp.ImageContent {
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			return img
		}
	}
	return nil
}

var (
	epochRE = regexp.MustCompile(`documentEpoch=(\S+)`)
	leaseRE = regexp.MustCompile(`leaseId=(\S+)`)
)

// ref finds the ref of an element in an outline.
func ref(t *testing.T, outline, role, name string) string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(role+` "`+name+`" [ref=`) + `(r[0-9a-f]+)\]`).FindStringSubmatch(outline)
	if m == nil {
		t.Fatalf("no %s %q in:\n%s", role, name, outline)
	}
	return m[1]
}

func epoch(t *testing.T, outline string) string {
	t.Helper()
	m := epochRE.FindStringSubmatch(outline)
	if m == nil {
		t.Fatalf("no documentEpoch in:\n%s", outline)
	}
	return m[1]
}

// claimTab claims tab through browser_claim and returns the claim's
// structured answer.
func claimTab(h *host, s *stack.Stack, tab string) mcpserver.ClaimOutput {
	_, res := h.call("browser_claim", map[string]any{"instanceId": s.Instance, "tab": tab}, false)
	raw, _ := json.Marshal(res.StructuredContent)
	var l mcpserver.ClaimOutput
	json.Unmarshal(raw, &l)
	return l
}

func click(ref, expect string) map[string]any {
	return map[string]any{"kind": "click", "ref": ref, "expected": map[string]any{"kind": "text", "text": expect}}
}

// TestWithBroker drives a real broker, Chromium and extension through the
// MCP tools with the SDK's own client.
func TestWithBroker(t *testing.T) {
	s := stack.Start(t, "--access-mode=personal")
	counterTab, _ := s.Tab(t, s.Pages.URL("/counter"))
	formTab, _ := s.Tab(t, s.Pages.URL("/form"))
	srv := mcpserver.New(mcpserver.Options{RuntimeDir: s.B.RuntimeDir, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	t.Cleanup(func() { srv.Close() })
	h := connect(t, srv, true)

	out, _ := h.call("browser_list", nil, false)
	if !strings.Contains(out, "instanceId="+s.Instance) {
		t.Fatalf("browser_list:\n%s", out)
	}
	out, _ = h.call("browser_list", map[string]any{"instanceId": s.Instance}, false)
	if !strings.Contains(out, "tab="+counterTab+` "Counter"`) {
		t.Fatalf("browser_list %s:\n%s", s.Instance, out)
	}

	out, res := h.call("browser_claim", map[string]any{"instanceId": s.Instance, "tab": counterTab}, false)
	var claimed mcpserver.ClaimOutput
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &claimed)
	if claimed.LeaseID == "" || claimed.Tab != counterTab || claimed.Scope != "tab" || claimed.ExpiresAt == 0 ||
		!strings.Contains(out, "leaseId="+claimed.LeaseID) || strings.Contains(string(raw), "token") {
		t.Fatalf("browser_claim: %s\n%s", raw, out)
	}
	leaseID := claimed.LeaseID

	obs, _ := h.call("browser_observe", map[string]any{"leaseId": leaseID}, false)
	add := ref(t, obs, "button", "Add one")
	if !strings.Contains(obs, "Clicks: 0") || leaseRE.FindStringSubmatch(obs)[1] != leaseID {
		t.Fatalf("observe:\n%s", obs)
	}

	t.Run("act", func(t *testing.T) {
		args := map[string]any{"leaseId": leaseID, "documentEpoch": epoch(t, obs), "requestId": "act-1", "action": click(add, "Clicks: 1")}
		out, _ := h.call("browser_act", args, false)
		if !strings.Contains(out, "click "+add+": succeeded") || !strings.Contains(out, "Clicks: 1") || !strings.Contains(out, "requestId=act-1") {
			t.Fatalf("act:\n%s", out)
		}
		// A retry with the same requestId answers the first result and does not click again.
		if again, _ := h.call("browser_act", args, false); !strings.Contains(again, "succeeded") {
			t.Fatalf("retry:\n%s", again)
		}
		if now, _ := h.call("browser_observe", map[string]any{"leaseId": leaseID}, false); !strings.Contains(now, "Clicks: 1") {
			t.Fatalf("after the retry:\n%s", now)
		}
		// Without a requestId one is generated and shown.
		delete(args, "requestId")
		args["action"] = map[string]any{"kind": "click", "ref": add}
		out, _ = h.call("browser_act", args, false)
		if !regexp.MustCompile(`requestId=mcp-[0-9a-f]{24}`).MatchString(out) || !strings.Contains(out, "Done, not verified") {
			t.Fatalf("act without requestId or expectation:\n%s", out)
		}
		// A stale documentEpoch is a result that says what to do, not an error.
		args["documentEpoch"] = "stale:epoch"
		out, _ = h.call("browser_act", args, false)
		if !strings.Contains(out, "Nothing was done. STALE_TARGET: the page changed: call browser_observe again") {
			t.Fatalf("stale act:\n%s", out)
		}
	})

	t.Run("from a URL to a verified form submission", func(t *testing.T) {
		tab, _ := s.Tab(t, s.Pages.URL("/counter"))
		l := claimTab(h, s, tab)
		defer h.call("browser_handoff", map[string]any{"leaseId": l.LeaseID}, false)

		out, _ := h.call("browser_navigate", map[string]any{"leaseId": l.LeaseID, "url": s.Pages.URL("/fields")}, false)
		if !strings.Contains(out, "navigate to "+s.Pages.URL("/fields")+": succeeded") || !strings.Contains(out, "Done: the new page loaded at "+s.Pages.URL("/fields")+".") ||
			!strings.Contains(out, `page "Fields"`) {
			t.Fatalf("browser_navigate:\n%s", out)
		}
		act := func(page string, action map[string]any) string {
			t.Helper()
			out, _ := h.call("browser_act", map[string]any{"leaseId": l.LeaseID, "documentEpoch": epoch(t, page), "action": action}, false)
			return out
		}
		// An action's answer says what changed: the refs of the page seen
		// before still hold.
		page := out
		out = act(out, map[string]any{"kind": "fill", "ref": ref(t, page, "textbox", "City"), "text": "Lyon"})
		if !strings.Contains(out, "succeeded") || !strings.Contains(out, "Done: the field holds the text.") ||
			!strings.Contains(out, `~ textbox "City" [ref=`+ref(t, page, "textbox", "City")+`] value="Lyon"`) {
			t.Fatalf("fill:\n%s", out)
		}
		out = act(out, map[string]any{"kind": "select", "ref": ref(t, page, "combobox", "Color"), "option": "Green", "expected": map[string]any{"value": "g"}})
		if !strings.Contains(out, `select "Green" in `) || !strings.Contains(out, "Done: the field holds the expected value.") {
			t.Fatalf("select:\n%s", out)
		}
		out = act(out, map[string]any{"kind": "scroll", "deltaX": 0, "deltaY": 200})
		if !strings.Contains(out, "scroll of the document by (0, 200): from (0, 0) to (0, ") {
			t.Fatalf("scroll:\n%s", out)
		}
		out = act(out, map[string]any{"kind": "click", "ref": ref(t, page, "button", "Send"), "expected": map[string]any{"text": "Sent: Lyon / g"}})
		if !strings.Contains(out, "Done: the expected text is on the page.") || !strings.Contains(out, "+ text: Sent: Lyon / g") {
			t.Fatalf("send:\n%s", out)
		}
		// A checkbox, and a region read on its own.
		page, _ = h.call("browser_navigate", map[string]any{"leaseId": l.LeaseID, "url": s.Pages.URL("/controls"), "expectedText": "Controls"}, false)
		out = act(page, map[string]any{"kind": "check", "ref": ref(t, page, "checkbox", "Newsletter"), "checked": true})
		if !strings.Contains(out, "Done: the control is in the requested state.") || !strings.Contains(out, `~ checkbox "Newsletter" [ref=`) {
			t.Fatalf("check:\n%s", out)
		}
		size := regexp.MustCompile(`group "Size" \[ref=(r[0-9a-f]+)\]`).FindStringSubmatch(page)
		if size == nil {
			t.Fatalf("no Size group in:\n%s", out)
		}
		region, _ := h.call("browser_observe", map[string]any{"leaseId": l.LeaseID, "rootRef": size[1]}, false)
		if !strings.Contains(region, `radio "Large"`) || strings.Contains(region, "Newsletter") {
			t.Fatalf("observe the Size group:\n%s", region)
		}
		// A navigation the lease's scope does not allow is refused with the reason.
		out, _ = h.call("browser_navigate", map[string]any{"leaseId": l.LeaseID, "url": "file:///etc/passwd"}, false)
		if !strings.Contains(out, "Nothing was done. POLICY_DENIED") {
			t.Fatalf("navigate to a file:\n%s", out)
		}
	})

	t.Run("a click on a big page is answered in under 1 KB", func(t *testing.T) {
		tab, _ := s.Tab(t, s.Pages.URL("/big"))
		l := claimTab(h, s, tab)
		defer h.call("browser_handoff", map[string]any{"leaseId": l.LeaseID}, false)
		page, _ := h.call("browser_observe", map[string]any{"leaseId": l.LeaseID}, false)
		out, _ := h.call("browser_act", map[string]any{"leaseId": l.LeaseID, "documentEpoch": epoch(t, page),
			"action": map[string]any{"kind": "click", "ref": ref(t, page, "button", "Item 3")}}, false)
		if !strings.Contains(out, "click "+ref(t, page, "button", "Item 3")+": unknown") || !strings.Contains(out, "documentEpoch="+epoch(t, page)) ||
			len(out) > 1024 || len(page) < 4*1024 {
			t.Fatalf("a click on a page of %d bytes is answered in %d:\n%s", len(page), len(out), out)
		}
	})

	t.Run("a button in a same-origin iframe: one observe, one act", func(t *testing.T) {
		tab, _ := s.Tab(t, s.Pages.URL("/frames"))
		l := claimTab(h, s, tab)
		defer h.call("browser_handoff", map[string]any{"leaseId": l.LeaseID}, false)
		var page string
		for range 50 { // the frames load after the page
			if page, _ = h.call("browser_observe", map[string]any{"leaseId": l.LeaseID}, false); strings.Contains(page, "Nested button") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, want := range []string{s.Pages.Origin() + " (same origin; its refs act directly):\n  - button \"Nested button\" [ref=",
			s.Pages.Other().Origin() + " (cross-origin: another site's content, not readable)"} {
			if !strings.Contains(page, want) {
				t.Fatalf("observe lacks %q:\n%s", want, page)
			}
		}
		out, _ := h.call("browser_act", map[string]any{"leaseId": l.LeaseID, "documentEpoch": epoch(t, page),
			"action": click(ref(t, page, "button", "Nested button"), "Nested clicks: 1")}, false)
		if !strings.Contains(out, "Done: the expected text is on the page.") || !strings.Contains(out, "Nested clicks: 1") {
			t.Fatalf("click in the frame:\n%s", out)
		}
		// The frame's refs still hold for the next action.
		out, _ = h.call("browser_act", map[string]any{"leaseId": l.LeaseID, "documentEpoch": epoch(t, page),
			"action": click(ref(t, page, "button", "Nested button"), "Nested clicks: 2")}, false)
		if !strings.Contains(out, "Done: the expected text is on the page.") {
			t.Fatalf("a second click in the frame:\n%s", out)
		}
	})

	// Which pages are listed at all is the broker's (frameOwners,
	// TestObserveFrames); here, the frames come in the outline.
	t.Run("a page's frames come with its observation", func(t *testing.T) {
		framesOf := func(path string) string {
			tab, _ := s.Tab(t, s.Pages.URL(path))
			l := claimTab(h, s, tab)
			defer h.call("browser_handoff", map[string]any{"leaseId": l.LeaseID}, false)
			out, _ := h.call("browser_observe", map[string]any{"leaseId": l.LeaseID}, false)
			var frames []string
			for line := range strings.Lines(out) {
				if strings.HasPrefix(line, "frame frame-") {
					frames = append(frames, line)
				}
			}
			return strings.Join(frames, "")
		}
		if got := framesOf("/form"); got != "" {
			t.Errorf("frames of /form, which has none:\n%s", got)
		}
		if got := framesOf("/frames"); !strings.Contains(got, "(same origin; its refs act directly)") || !strings.Contains(got, "another site's content") {
			t.Errorf("the frames of /frames:\n%s", got)
		}
	})

	t.Run("batch approved through elicitation", func(t *testing.T) {
		obs, _ := h.call("browser_observe", map[string]any{"leaseId": leaseID}, false)
		args := map[string]any{"leaseId": leaseID, "documentEpoch": epoch(t, obs), "steps": []any{
			map[string]any{"action": click(add, "Clicks: 3")},
			map[string]any{"action": click(add, "Clicks: 4")},
		}}
		out, _ := h.call("browser_batch", args, false)
		if !strings.Contains(out, "batch: succeeded") || !strings.Contains(out, "after 2 of 2 steps") || !strings.Contains(out, "Clicks: 4") {
			t.Fatalf("batch:\n%s", out)
		}
		h.mu.Lock()
		qs := h.questions
		h.mu.Unlock()
		if len(qs) != 2 || !strings.Contains(qs[0], `batch step 1 of 2 (index 0): click button "Add one" on `) {
			t.Fatalf("questions: %q", qs)
		}

		h.mu.Lock()
		h.answer = &mcp.ElicitResult{Action: "decline"}
		h.mu.Unlock()
		obs, _ = h.call("browser_observe", map[string]any{"leaseId": leaseID}, false)
		args["documentEpoch"] = epoch(t, obs)
		out, _ = h.call("browser_batch", args, false)
		if !strings.Contains(out, "step 1 click button") && !strings.Contains(out, "code POLICY_DENIED") || strings.Contains(out, "Clicks: 5") {
			t.Fatalf("declined batch:\n%s", out)
		}
		if !strings.Contains(out, "POLICY_DENIED: the user or policy refused: ask the user.") {
			t.Fatalf("declined batch:\n%s", out)
		}
	})

	t.Run("batch refused without elicitation", func(t *testing.T) {
		h2 := connect(t, srv, false)
		out, res := h2.call("browser_claim", map[string]any{"instanceId": s.Instance, "tab": formTab}, false)
		_ = out
		raw, _ := json.Marshal(res.StructuredContent)
		var l mcpserver.ClaimOutput
		json.Unmarshal(raw, &l)
		obs, _ := h2.call("browser_observe", map[string]any{"leaseId": l.LeaseID}, false)
		greet := ref(t, obs, "button", "Greet")
		out, _ = h2.call("browser_batch", map[string]any{"leaseId": l.LeaseID, "documentEpoch": epoch(t, obs),
			"steps": []any{map[string]any{"action": click(greet, "Hello")}}}, false)
		if !strings.Contains(out, "does not support elicitation") || !strings.Contains(out, "Use browser_act for each step instead.") {
			t.Fatalf("batch without elicitation:\n%s", out)
		}
		// The other session's lease is not this one's.
		out, _ = h2.call("browser_observe", map[string]any{"leaseId": leaseID}, true)
		if !strings.HasPrefix(out, "LEASE_REVOKED: ") {
			t.Fatalf("observe another session's lease: %s", out)
		}
		// Ending the MCP session releases its leases.
		h2.cs.Close()
		l2 := s.Claim(t, "after-session", formTab)
		s.Call(t, "browser.release", map[string]any{"sessionId": "after-session", "leaseId": l2.ID})
	})

	t.Run("outline vs JSON on real pages", func(t *testing.T) {
		for _, path := range []string{"/form", "/big"} {
			tab, _ := s.Tab(t, s.Pages.URL(path))
			l := s.Claim(t, "size", tab)
			raw, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "size", "leaseId": l.ID})
			if err != nil {
				t.Fatal(err)
			}
			var o browser.Observation
			if err := json.Unmarshal(raw, &o); err != nil {
				t.Fatal(err)
			}
			outline := mcpserver.Outline(&o, l.ID)
			ratio := float64(len(outline)) / float64(len(raw))
			t.Logf("%s: %d nodes, %d text fragments, truncated=%v: outline %d bytes, JSON %d bytes, ratio %.2f",
				path, len(o.Nodes), len(o.Text), o.Truncated, len(outline), len(raw), ratio)
			if ratio >= 1 {
				t.Errorf("%s: the outline (%d bytes) is not smaller than the JSON (%d bytes)", path, len(outline), len(raw))
			}
			if path == "/form" {
				t.Logf("/form outline:\n%s", outline)
			}
			s.Call(t, "browser.release", map[string]any{"sessionId": "size", "leaseId": l.ID})
		}
	})

	t.Run("frames and screenshot", func(t *testing.T) {
		// A tab of its own: only the foreground tab can be captured.
		tab, _ := s.Tab(t, s.Pages.URL("/counter"))
		l := claimTab(h, s, tab)
		out, _ := h.call("browser_frames", map[string]any{"leaseId": l.LeaseID}, false)
		if !strings.Contains(out, ": 1 frame\n") || !regexp.MustCompile(`(?m)^- frame \S+ `+regexp.QuoteMeta(s.Pages.Origin())+` same-origin main$`).MatchString(out) {
			t.Fatalf("frames:\n%s", out)
		}
		t.Logf("browser_frames:\n%s", out)
		obs, _ := h.call("browser_observe", map[string]any{"leaseId": l.LeaseID}, false)
		out, res = h.call("browser_screenshot", map[string]any{"leaseId": l.LeaseID}, false)
		img := image(res)
		if img == nil || img.MIMEType != "image/jpeg" || !bytes.HasPrefix(img.Data, []byte{0xff, 0xd8, 0xff}) || len(img.Data) < 1000 {
			t.Fatalf("screenshot: %v\n%s", res.Content, out)
		}
		if !strings.Contains(out, "redaction: no frames redacted") || !strings.Contains(out, "documentEpoch="+epoch(t, obs)) {
			t.Fatalf("screenshot:\n%s", out)
		}
		t.Logf("browser_screenshot: %d bytes of JPEG\n%s", len(img.Data), out)
		// No image once the lease is handed off.
		h.call("browser_handoff", map[string]any{"leaseId": l.LeaseID}, false)
		out, res = h.call("browser_screenshot", map[string]any{"leaseId": l.LeaseID}, true)
		if !strings.HasPrefix(out, "LEASE_REVOKED: ") || image(res) != nil {
			t.Fatalf("screenshot after handoff: %q %v", out, res.Content)
		}
	})

	t.Run("frames and screenshot of iframes", func(t *testing.T) {
		tab, _ := s.Tab(t, s.Pages.URL("/frames"))
		l := claimTab(h, s, tab)
		defer h.call("browser_handoff", map[string]any{"leaseId": l.LeaseID}, false)
		out, _ := h.call("browser_frames", map[string]any{"leaseId": l.LeaseID}, false)
		t.Logf("browser_frames:\n%s", out)
		for _, want := range []string{"  (truncated)\n", " same-origin main\n", "\n  - frame ", "\n    - frame ", " cross-origin\n", " (origin unknown) opaque context unavailable\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("frames lack %q", want)
			}
		}
		out, res = h.call("browser_screenshot", map[string]any{"leaseId": l.LeaseID}, false)
		t.Logf("browser_screenshot:\n%s", out)
		if image(res) == nil || !regexp.MustCompile(`redaction: \d+ cross-origin frames? painted black in \d+ regions? `).MatchString(out) {
			t.Errorf("screenshot of /frames:\n%s", out)
		}
	})

	t.Run("handoff", func(t *testing.T) {
		out, _ := h.call("browser_handoff", map[string]any{"leaseId": leaseID}, false)
		if !strings.Contains(out, "Released leaseId="+leaseID) {
			t.Fatalf("handoff: %s", out)
		}
		out, _ = h.call("browser_observe", map[string]any{"leaseId": leaseID}, true)
		if out != "LEASE_REVOKED: the lease ended (Stop, navigation away, release or expiry): claim the tab again." {
			t.Fatalf("observe after handoff: %q", out)
		}
	})

	t.Run("broker restart", func(t *testing.T) {
		s.B.Stop(t)
		out, _ := h.call("browser_list", nil, true)
		if !strings.HasPrefix(out, "CONNECTION_LOST: the browser or broker is gone") && !strings.Contains(out, "broker serve") {
			t.Fatalf("browser_list without a broker: %s", out)
		}
		s.B.Start(t, "--access-mode=personal")
		if out, _ := h.call("browser_list", nil, false); !strings.Contains(out, "connected") {
			t.Fatalf("browser_list after the restart: %s", out)
		}
	})
}
