package testpages_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/testpages"
)

// TestInBrowser checks that the pages behave as documented in a real
// Chromium (skipped without one, except on CI).
func TestInBrowser(t *testing.T) {
	t.Parallel()
	s := testpages.Serve(t)
	b := chromium.Launch(t, chromium.Options{})

	sendKeys := func(t *testing.T, id target.ID, selector, keys string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.TargetCtx(t, id), 10*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(selector), keys)); err != nil {
			t.Fatal(err)
		}
	}
	// waitURL waits until target id shows url (after a click on a link).
	waitURL := func(t *testing.T, id target.ID, url string) {
		t.Helper()
		b.WaitTarget(t, func(info *target.Info) bool { return info.TargetID == id && info.URL == url }, 10*time.Second)
		chromium.Eval[bool](t, b, id, "document.readyState === 'complete' || new Promise((r) => addEventListener('load', () => r(true)))")
	}

	t.Run("form", func(t *testing.T) {
		id := b.OpenTab(t, s.URL("/form"))
		sendKeys(t, id, "#name", "Bo"+kb.Enter)
		if got := b.Text(t, id, "#status"); got != "Hello, Bo!" {
			t.Errorf("after Enter, status = %q", got)
		}
		b.Click(t, id, "#updates")
		if !chromium.Eval[bool](t, b, id, "document.getElementById('updates').checked") {
			t.Error("the checkbox is not checked after a click")
		}
		b.Click(t, id, "#counter-link")
		waitURL(t, id, s.URL("/counter"))
	})
	t.Run("counter", func(t *testing.T) {
		id := b.OpenTab(t, s.URL("/counter"))
		b.Click(t, id, "#add")
		chromium.Eval[any](t, b, id, "document.getElementById('add').click()") // untrusted
		if got := chromium.Eval[[]int](t, b, id, "[window.clicks, window.untrustedClicks]"); !slices.Equal(got, []int{1, 1}) {
			t.Errorf("[trusted, untrusted] = %v, want [1 1]", got)
		}
		if got := b.Text(t, id, "#count"); got != "Clicks: 1" {
			t.Errorf("count = %q", got)
		}
	})
	t.Run("occluded", func(t *testing.T) {
		id := b.OpenTab(t, s.URL("/occluded"))
		b.Click(t, id, "#hidden")
		b.Click(t, id, "#visible")
		got := chromium.Eval[[]int](t, b, id, "[window.hiddenClicks, window.overlayClicks, window.visibleClicks]")
		if !slices.Equal(got, []int{0, 1, 1}) {
			t.Errorf("[hidden, overlay, visible] = %v, want [0 1 1]", got)
		}
		// The overlay covers the whole button.
		covered := chromium.Eval[bool](t, b, id, `(() => {
			const r = document.getElementById('hidden').getBoundingClientRect();
			return [[r.left + 1, r.top + 1], [r.right - 1, r.bottom - 1], [r.left + r.width / 2, r.top + r.height / 2]]
				.every(([x, y]) => document.elementFromPoint(x, y).id === 'overlay');
		})()`)
		if !covered {
			t.Error("the overlay does not cover the hidden button")
		}
	})
	t.Run("keys", func(t *testing.T) {
		id := b.OpenTab(t, s.URL("/keys"))
		sendKeys(t, id, "#entry", "ab"+kb.ArrowLeft+kb.Escape+kb.Enter)
		if got := b.Text(t, id, "#result"); got != "Submitted: ab" {
			t.Errorf("result = %q", got)
		}
		sendKeys(t, id, "#entry", kb.Tab)
		want := []string{"a", "b", "ArrowLeft", "Escape", "Enter", "Tab"}
		if got := chromium.Eval[[]string](t, b, id, "window.keys"); !slices.Equal(got, want) {
			t.Errorf("keys = %q, want %q", got, want)
		}
		if got := b.Text(t, id, "#log li:last-child"); got != "Tab" {
			t.Errorf("last listed key = %q", got)
		}
		if got := b.Text(t, id, "#focus"); got != "Focused: next" {
			t.Errorf("after Tab: %q", got)
		}
	})
	t.Run("big", func(t *testing.T) {
		id := b.OpenTab(t, s.URL("/big"))
		counts := chromium.Eval[[]int](t, b, id, "[document.querySelectorAll('button').length, document.querySelectorAll('p').length, document.querySelectorAll('*').length]")
		if counts[0] != testpages.BigItems+1 || counts[1] != testpages.BigParagraphs || counts[2] < 2000 {
			t.Errorf("buttons, paragraphs, elements = %v", counts)
		}
		b.Click(t, id, "#target")
		if got := b.Text(t, id, "#target"); got != "Target clicked" {
			t.Errorf("target = %q", got)
		}
	})
	t.Run("swagger", func(t *testing.T) {
		id := b.OpenTab(t, s.URL("/swagger"))
		counts := chromium.Eval[[]int](t, b, id, "[document.querySelectorAll('.opblock').length, document.querySelectorAll('.model-container').length, document.querySelectorAll('*').length]")
		if counts[0] != 19 || counts[1] != 6 || counts[2] < 500 {
			t.Errorf("operations, models, elements = %v", counts)
		}
		b.Click(t, id, "#operations-pet-get-pet-findByStatus .opblock-summary-control")
		if got := chromium.Eval[int](t, b, id, "document.querySelectorAll('.opblock.is-open').length"); got != 1 {
			t.Errorf("%d operations open after a click on one", got)
		}
	})
	t.Run("nav", func(t *testing.T) {
		id := b.OpenTab(t, s.URL("/nav"))
		b.Click(t, id, "#other-origin")
		waitURL(t, id, s.Other().URL("/form"))
		if got := b.Text(t, id, "h1"); got != "DSH demo" {
			t.Errorf("h1 on the other origin = %q", got)
		}
		b.Navigate(t, id, s.URL("/nav"))
		b.Click(t, id, "#other-site")
		waitURL(t, id, s.Other().LocalhostURL("/form"))
		b.Navigate(t, id, s.URL("/nav"))
		b.Click(t, id, "#same-origin")
		waitURL(t, id, s.URL("/counter"))
	})
}
