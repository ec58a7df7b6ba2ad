package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testpages"
	"github.com/dsh-browser/broker/wire"
)

func readPage(t *testing.T, s *stack.Stack, leaseID string, opts map[string]any) (browser.PageWindow, error) {
	t.Helper()
	params := map[string]any{"sessionId": "s", "leaseId": leaseID}
	if opts != nil {
		params["options"] = opts
	}
	raw, err := s.Call(t, "browser.readPage", params)
	var w browser.PageWindow
	if err == nil {
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
	}
	return w, err
}

// readAll reads windows until the last one and checks each window's
// budgets and index.
func readAll(t *testing.T, s *stack.Stack, leaseID string, opts map[string]any) []browser.PageWindow {
	t.Helper()
	var out []browser.PageWindow
	for {
		w, err := readPage(t, s, leaseID, opts)
		if err != nil {
			t.Fatalf("window %d: %v", len(out), err)
		}
		regions := 0
		for _, n := range w.Nodes {
			if n.Kind == "region" {
				regions++
			}
		}
		if n := len(w.Nodes) + len(w.Text); n > browser.MaxWindowEntries || regions > browser.MaxWindowRegions {
			t.Fatalf("window %d: %d entries, %d regions", len(out), n, regions)
		}
		if w.Page.Index != len(out) || w.Page.Incomplete || w.Truncated != (w.Page.Continuation != "") {
			t.Fatalf("window %d: page %+v truncated=%v", len(out), w.Page, w.Truncated)
		}
		out = append(out, w)
		if w.Page.Continuation == "" {
			return out
		}
		if len(out) > 200 {
			t.Fatal("more than 200 windows")
		}
		opts = map[string]any{"continuation": w.Page.Continuation}
		if r, ok := w.Scope.RootRef, w.Scope.Kind == "subtree"; ok {
			opts["rootRef"] = r
		}
	}
}

// counts tallies the buttons and text fragments of the windows.
func counts(ws []browser.PageWindow) (buttons, texts map[string]int) {
	buttons, texts = map[string]int{}, map[string]int{}
	for _, w := range ws {
		for _, n := range w.Nodes {
			if n.Role == "button" {
				buttons[n.Name]++
			}
		}
		for _, x := range w.Text {
			texts[x]++
		}
	}
	return buttons, texts
}

func TestE2EReadPageWindows(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, target := s.Tab(t, s.Pages.URL("/big"))
	l := s.Claim(t, "s", tab)

	t.Run("whole page, once each", func(t *testing.T) {
		ws := readAll(t, s, l.ID, nil)
		buttons, texts := counts(ws)
		for i := 1; i <= testpages.BigItems; i++ {
			if name := fmt.Sprintf("Item %d", i); buttons[name] != 1 {
				t.Fatalf("button %q read %d times", name, buttons[name])
			}
		}
		for i := 1; i <= testpages.BigParagraphs; i++ {
			if p := fmt.Sprintf("Paragraph %d: a sentence of filler text to read.", i); texts[p] != 1 {
				t.Fatalf("%q read %d times", p, texts[p])
			}
		}
		if buttons["Target"] != 1 || len(buttons) != testpages.BigItems+1 {
			t.Errorf("%d distinct buttons, Target %d times", len(buttons), buttons["Target"])
		}
		t.Logf("%d windows", len(ws))
	})

	t.Run("a region", func(t *testing.T) {
		first, err := readPage(t, s, l.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		group := refOf(t, browser.Observation{Nodes: first.Nodes}, "region", "Group 1")
		ws := readAll(t, s, l.ID, map[string]any{"rootRef": group})
		buttons, _ := counts(ws)
		if len(buttons) != 100 || buttons["Item 1"] != 1 || buttons["Item 100"] != 1 || buttons["Item 101"] != 0 {
			t.Errorf("Group 1 read as %d buttons: %v", len(buttons), buttons)
		}
		if ws[0].Scope.Kind != "subtree" || ws[0].Scope.RootRef != group {
			t.Errorf("scope %+v", ws[0].Scope)
		}
	})

	t.Run("continuations are single-use", func(t *testing.T) {
		w, err := readPage(t, s, l.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		next := map[string]any{"continuation": w.Page.Continuation}
		if _, err := readPage(t, s, l.ID, next); err != nil {
			t.Fatalf("first use: %v", err)
		}
		if _, err := readPage(t, s, l.ID, next); rpc.CodeOf(err) != wire.CodeStaleTarget {
			t.Errorf("second use: %v, want STALE_TARGET", err)
		}
		if _, err := readPage(t, s, l.ID, map[string]any{"continuation": "p-unknown"}); rpc.CodeOf(err) != wire.CodeStaleTarget {
			t.Errorf("unknown continuation: %v, want STALE_TARGET", err)
		}
	})

	t.Run("the path changed", func(t *testing.T) {
		w, err := readPage(t, s, l.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The first window stops inside Group 1: take the group away.
		chromium.Eval[any](t, s.Browser, target, `document.querySelector('section[aria-label="Group 1"]').remove()`)
		_, err = readPage(t, s, l.ID, map[string]any{"continuation": w.Page.Continuation})
		if rpc.CodeOf(err) != wire.CodeStaleTarget {
			t.Errorf("continuation through a removed region: %v, want STALE_TARGET", err)
		}
		// A new reading starts from the page as it is now.
		ws := readAll(t, s, l.ID, nil)
		buttons, _ := counts(ws)
		if buttons["Item 1"] != 0 || buttons["Item 101"] != 1 || buttons["Target"] != 1 {
			t.Errorf("after the removal: Item 1 %d, Item 101 %d, Target %d", buttons["Item 1"], buttons["Item 101"], buttons["Target"])
		}
	})

	t.Run("options", func(t *testing.T) {
		// 128 characters is a continuation that could exist (and does not);
		// 129 is malformed.
		for _, opts := range []map[string]any{{"continuation": strings.Repeat("p", 128)}, {"rootRef": strings.Repeat("r", 128)},
			{"frame": map[string]any{"frameId": "f", "documentEpoch": "e"}}} {
			if _, err := readPage(t, s, l.ID, opts); rpc.CodeOf(err) != wire.CodeStaleTarget {
				t.Errorf("options %v: %v, want STALE_TARGET", opts, err)
			}
		}
		for _, opts := range []any{
			map[string]any{"frame": map[string]any{"frameId": "f"}},
			map[string]any{"frame": map[string]any{"frameId": strings.Repeat("f", 129), "documentEpoch": "e"}},
			map[string]any{"continuation": strings.Repeat("p", 129)},
			map[string]any{"rootRef": strings.Repeat("r", 129)},
			"document",
		} {
			if _, err := s.Call(t, "browser.readPage", map[string]any{"sessionId": "s", "leaseId": l.ID, "options": opts}); rpc.CodeOf(err) != wire.CodeInvalidRequest {
				t.Errorf("options %v: %v, want INVALID_REQUEST", opts, err)
			}
		}
	})
}
