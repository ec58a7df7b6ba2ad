package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// BenchmarkHops times, on one leased /counter tab of the whole product, each
// hop an observation of a small page crosses, and the observation itself,
// so that what the read costs can be told from what the path costs
// (BENCHMARKS.md "Where a small page's observation spends its time"):
//
//   - hop=broker: a call the broker answers itself (browser.instances),
//     from the Go client over the broker's socket;
//   - hop=provider: a call the extension answers (browser.tabs): that, plus
//     the native host, Chrome's native messaging both ways and one
//     chrome.tabs.query;
//   - hop=debugger: one chrome.debugger call (Runtime.evaluate of "1") from
//     the extension's worker, as the extension makes its calls;
//   - hop=debugger-3: three such calls sent at once, as a read in a kept
//     world sends the reader, the listener read and the frame tree;
//   - hop=cdp: the same Runtime.evaluate over a DevTools connection of its
//     own, from Go: what a peer's call costs;
//   - hop=observe: browser.observe, back to back;
//   - hop=observe-fresh: browser.observe 250 ms after the page loaded, as
//     the MCP bench takes it (the load and the wait are not timed).
//
// The worker's hops are timed as one loop of b.N calls inside the worker:
// run them with -benchtime of 100x or more, so the one evaluation that
// starts the loop is a small part of it.
func BenchmarkHops(b *testing.B) {
	s := stack.Start(b, "--access-mode=personal")
	handle, id := s.Tab(b, s.Pages.URL("/counter"))
	lease := s.Claim(b, benchSession, handle).ID
	tabID := s.Browser.TabIDOf(b, id)
	worker := s.Browser.ServiceWorker(b, install.PinnedExtensionID)
	call := func(b *testing.B, method string, params any) {
		if _, err := s.Call(b, method, params); err != nil {
			b.Fatalf("%s: %v", method, err)
		}
	}
	observe := map[string]any{"sessionId": benchSession, "leaseId": lease}
	inWorker := func(calls string) func(*testing.B) {
		return func(b *testing.B) {
			js := fmt.Sprintf(`(async () => {
				const send = () => chrome.debugger.sendCommand({ tabId: %d }, 'Runtime.evaluate', { expression: '1', returnByValue: true });
				for (let i = 0; i < %d; i++) await %s;
				return true;
			})()`, tabID, b.N, calls)
			b.ResetTimer()
			chromium.Eval[bool](b, s.Browser, worker, js)
		}
	}

	b.Run("hop=broker", func(b *testing.B) {
		for b.Loop() {
			call(b, "browser.instances", nil)
		}
	})
	b.Run("hop=provider", func(b *testing.B) {
		for b.Loop() {
			call(b, "browser.tabs", map[string]any{"sessionId": benchSession, "instanceId": s.Instance})
		}
	})
	b.Run("hop=debugger", inWorker("send()"))
	b.Run("hop=debugger-3", inWorker("Promise.all([send(), send(), send()])"))
	b.Run("hop=cdp", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(s.Browser.Ctx, callTimeout)
		defer cancel()
		for b.Loop() {
			if _, err := chromium.Evaluate[int](ctx, s.Browser, id, "1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hop=observe", func(b *testing.B) {
		for b.Loop() {
			call(b, "browser.observe", observe)
		}
	})
	b.Run("hop=observe-fresh", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s.Browser.Navigate(b, id, s.Pages.URL("/counter"))
			time.Sleep(250 * time.Millisecond)
			b.StartTimer()
			call(b, "browser.observe", observe)
		}
	})
}

// BenchmarkFrameRead times browser.observe of /blankframes' srcdoc frame (a
// same-origin child frame of the main document's origin, reported as "://"
// and proved), back to back and 250 ms after the page loaded (the load,
// the wait and the frame list that names the new document are not timed).
func BenchmarkFrameRead(b *testing.B) {
	s := stack.Start(b, "--access-mode=personal")
	handle, id := s.Tab(b, s.Pages.URL("/blankframes"))
	lease := s.Claim(b, benchSession, handle).ID
	// srcdoc names the second same-origin child frame the list gives: the
	// page's iframes are the about:blank one, the srcdoc one, a sandboxed one.
	srcdoc := func(b *testing.B) map[string]any {
		raw, err := s.Call(b, "browser.frames", map[string]any{"sessionId": benchSession, "leaseId": lease})
		if err != nil {
			b.Fatal(err)
		}
		var inv browser.FrameInventory
		json.Unmarshal(raw, &inv)
		var same []browser.Frame
		for _, f := range inv.Frames {
			if !f.IsMain && f.OriginRelation == "same-origin" && f.DocumentEpoch != "" {
				same = append(same, f)
			}
		}
		if len(same) != 2 {
			b.Fatalf("same-origin frames %+v", same)
		}
		return map[string]any{"sessionId": benchSession, "leaseId": lease,
			"frame": map[string]any{"frameId": same[1].ID, "documentEpoch": same[1].DocumentEpoch}}
	}
	observe := func(b *testing.B, params map[string]any) {
		if _, err := s.Call(b, "browser.observe", params); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("frame", func(b *testing.B) {
		params := srcdoc(b)
		raw, err := s.Call(b, "browser.observe", params)
		if err != nil || !strings.Contains(string(raw), "Inside srcdoc") {
			b.Fatalf("the srcdoc frame: %s %v", raw, err)
		}
		for b.Loop() {
			observe(b, params)
		}
	})
	b.Run("frame-fresh", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s.Browser.Navigate(b, id, s.Pages.URL("/blankframes"))
			time.Sleep(250 * time.Millisecond)
			params := srcdoc(b)
			b.StartTimer()
			observe(b, params)
		}
	})
}
