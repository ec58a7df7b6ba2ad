package chromium_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/testpages"
)

// TestSmoke launches Chromium with the repository's extension, opens pages,
// reads and clicks, and maps targets to tab IDs. The extension's service
// worker must start and activate.
func TestSmoke(t *testing.T) {
	t.Parallel()
	ext, err := filepath.Abs(filepath.Join("..", "..", "..", "extension"))
	if err != nil {
		t.Fatal(err)
	}
	pages := testpages.Serve(t)

	start := time.Now()
	b := chromium.Launch(t, chromium.Options{ExtensionDir: ext})
	launched := time.Since(start)
	form := b.OpenTab(t, pages.URL("/form"))
	t.Logf("launch %v, launch → /form loaded %v", launched.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	if got := b.Text(t, form, "h1"); got != "DSH demo" {
		t.Errorf("h1 = %q, want DSH demo", got)
	}
	ctx, cancel := context.WithTimeout(b.TargetCtx(t, form), 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("name"), "Ada")); err != nil {
		t.Fatal(err)
	}
	b.Click(t, form, "#greet")
	if got := b.Text(t, form, "#status"); got != "Hello, Ada!" {
		t.Errorf("status = %q, want Hello, Ada!", got)
	}

	counter := b.OpenTab(t, pages.Other().URL("/counter"))
	// The new tab is in front; the first one is now hidden.
	if v := chromium.Eval[string](t, b, form, "document.visibilityState"); v != "hidden" {
		t.Errorf("first tab: visibilityState %q, want hidden", v)
	}
	if v := chromium.Eval[string](t, b, counter, "document.visibilityState"); v != "visible" {
		t.Errorf("new tab: visibilityState %q, want visible", v)
	}
	b.Click(t, counter, "#add")
	b.Click(t, counter, "#add")
	if n := chromium.Eval[int](t, b, counter, "window.clicks"); n != 2 {
		t.Errorf("window.clicks = %d, want 2", n)
	}
	if got := b.Text(t, counter, "#count"); got != "Clicks: 2" {
		t.Errorf("count = %q, want Clicks: 2", got)
	}

	// The occluding overlay takes a real click.
	b.Navigate(t, counter, pages.URL("/occluded"))
	b.Click(t, counter, "#hidden")
	if got := chromium.Eval[[]int](t, b, counter, "[window.hiddenClicks, window.overlayClicks]"); got[0] != 0 || got[1] != 1 {
		t.Errorf("[hidden, overlay] clicks = %v, want [0 1]", got)
	}

	// Cross-site navigation (another site: a renderer swap) keeps the target.
	b.Navigate(t, counter, pages.Other().LocalhostURL("/form"))
	if got := chromium.Eval[string](t, b, counter, "location.origin"); !strings.HasPrefix(got, "http://localhost:") {
		t.Errorf("origin after navigation = %q", got)
	}

	formTab, counterTab := b.TabIDOf(t, form), b.TabIDOf(t, counter)
	if formTab <= 0 || counterTab <= 0 || formTab == counterTab {
		t.Errorf("tab IDs %d and %d, want two different positive IDs", formTab, counterTab)
	}
	if again := b.TabIDOf(t, form); again != formTab {
		t.Errorf("TabIDOf changed from %d to %d", formTab, again)
	}

	sw := b.ServiceWorker(t, install.PinnedExtensionID)
	t.Logf("extension service worker: %s (%v after launch)", sw, time.Since(start).Round(time.Millisecond))

	// With every tab closed, OpenTab still works (in a new window).
	for _, info := range b.Targets(t) {
		if info.Type == "page" {
			b.CloseTab(t, info.TargetID)
		}
	}
	b.WaitTarget(t, func(*target.Info) bool { return !slices.ContainsFunc(b.Targets(t), isPage) }, 0)
	last := b.OpenTab(t, pages.URL("/counter"))
	if got := b.Text(t, last, "button"); got != "Add one" {
		t.Errorf("button = %q", got)
	}

	b.Kill()
	select {
	case <-b.Exited():
	default:
		t.Error("Exited is open after Kill")
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close after Kill: %v", err)
	}
}

func isPage(info *target.Info) bool { return info.Type == "page" }

// TestNativeMessaging checks the plumbing the end-to-end tests rely on: a
// host manifest in NativeHosts is found in headless, the host inherits Env,
// and messages go both ways. The extension and the host are made here: a
// pinned key, and /bin/cat as an echo host (the framing is symmetric).
func TestNativeMessaging(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	id := extensionID(der)
	manifest, _ := json.Marshal(map[string]any{
		"manifest_version": 3,
		"name":             "echo test",
		"version":          "1.0",
		"key":              base64.StdEncoding.EncodeToString(der),
		"background":       map[string]string{"service_worker": "sw.js"},
		"permissions":      []string{"nativeMessaging", "tabs"},
	})
	mark := filepath.Join(dir, "mark")
	host := filepath.Join(dir, "host.sh")
	files := map[string]string{
		"ext/manifest.json": string(manifest),
		"ext/sw.js":         "// empty: the test drives chrome.runtime.connectNative over CDP\n",
		"host.sh":           "#!/bin/sh\nprintf '%s' \"$DSH_ECHO_MARK\" > " + mark + "\nexec cat\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hostManifest, _ := json.Marshal(map[string]any{
		"name":            "dev.dsh.echo_test",
		"description":     "echo",
		"path":            host,
		"type":            "stdio",
		"allowed_origins": []string{install.ExtensionOrigin(id)},
	})

	b := chromium.Launch(t, chromium.Options{
		ExtensionDir: filepath.Join(dir, "ext"),
		NativeHosts:  map[string][]byte{"dev.dsh.echo_test.json": hostManifest},
		Env:          []string{"DSH_ECHO_MARK=inherited"},
	})
	sw := b.ServiceWorker(t, id)
	got := chromium.Eval[map[string]string](t, b, sw, `new Promise((resolve, reject) => {
		const port = chrome.runtime.connectNative('dev.dsh.echo_test');
		port.onMessage.addListener((m) => resolve(m));
		port.onDisconnect.addListener(() => reject(new Error(chrome.runtime.lastError?.message)));
		port.postMessage({ hello: 'world' });
	})`)
	if got["hello"] != "world" {
		t.Errorf("echo = %v", got)
	}
	if data, err := os.ReadFile(mark); err != nil || string(data) != "inherited" {
		t.Errorf("host saw DSH_ECHO_MARK=%q (%v), want inherited", data, err)
	}

	// TabIDOf agrees with chrome.tabs as an extension sees it.
	pages := testpages.Serve(t)
	tab := b.OpenTab(t, pages.URL("/counter"))
	want := chromium.Eval[int](t, b, sw, `chrome.tabs.query({}).then((ts) => ts.find((t) => t.url === `+
		strconvQuote(pages.URL("/counter"))+`)?.id ?? -1)`)
	if got := b.TabIDOf(t, tab); got != want || want <= 0 {
		t.Errorf("TabIDOf = %d, chrome.tabs.query says %d", got, want)
	}
	closing := time.Now()
	if err := b.Close(); err != nil {
		t.Error(err)
	}
	t.Logf("Close (Browser.close until the process exited) took %v", time.Since(closing).Round(time.Millisecond))
}

func strconvQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// extensionID is Chromium's ID for a public key: the first 32 hex digits of
// sha256(DER), with 0-9a-f mapped to a-p.
func extensionID(der []byte) string {
	sum := sha256.Sum256(der)
	h := []byte(hex.EncodeToString(sum[:16]))
	for i, c := range h {
		if c <= '9' {
			h[i] = 'a' + (c - '0')
		} else {
			h[i] = 'a' + 10 + (c - 'a')
		}
	}
	return string(h)
}

func TestRequire(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv(chromium.PathEnv, filepath.Join(t.TempDir(), "no-chromium"))
	if _, err := chromium.Path(); err == nil {
		t.Fatal("Path found a missing browser")
	}
	t.Run("skip", func(t *testing.T) {
		t.Setenv("CI", "")
		ok := t.Run("inner", func(t *testing.T) {
			chromium.Require(t)
			t.Error("Require returned")
		})
		if !ok {
			t.Error("Require failed the test outside CI")
		}
	})
}
