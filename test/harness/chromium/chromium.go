// Package chromium starts a real Chromium for tests: a fresh profile, the
// unpacked extension, native-messaging host manifests in the profile, and a
// chromedp connection over the DevTools WebSocket.
//
// It follows the recipe in notes/chromium-e2e.md (Debian Chromium, headless,
// root): --no-sandbox, --user-data-dir (native messaging in headless looks for
// host manifests only in <user-data-dir>/NativeMessagingHosts/),
// --remote-debugging-port=0 and DevToolsActivePort, a remote allocator,
// WithTargetID with WithDetachOnCancel, and Browser.close to shut down.
//
// Every Launch has its own profile, HOME and TMPDIR, so tests that launch a
// browser each can run in parallel.
//
// A typical test:
//
//	pages := testpages.Serve(t)
//	b := chromium.Launch(t, chromium.Options{
//		ExtensionDir: extDir, // absolute
//		NativeHosts:  map[string][]byte{install.ManifestName: manifest},
//		Env:          []string{"DSH_RUNTIME_DIR=" + broker.RuntimeDir},
//	})
//	sw := b.ServiceWorker(t, install.PinnedExtensionID)
//	tab := b.OpenTab(t, pages.URL("/form"))
//	b.Click(t, tab, "#greet")
//	status := b.Text(t, tab, "#status")
//	tabID := b.TabIDOf(t, tab) // the chrome.tabs ID the extension sees
//	n := chromium.Eval[int](t, b, tab, "window.clicks")
//	b.WaitEval(t, tab, "window.clicks > 1", 0)
//
// Eval, Evaluate and WaitEval run on a DevTools connection of the harness's
// own, not chromedp: poll with them. For anything else, attach a chromedp
// context with b.TargetCtx, once per target, and use chromedp (v0.23 API)
// on it; b.Ctx is the browser-level context.
package chromium

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/dsh-browser/broker/test/harness/testenv"
)

// DefaultPath is where Debian's chromium package puts the browser binary.
// /usr/bin/chromium is a shell wrapper that adds flags of its own, so the tests
// run this file.
const DefaultPath = "/usr/lib/chromium/chromium"

// InstallCommand installs Chromium on Debian.
const InstallCommand = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium"

// PathEnv names an environment variable that, when set, replaces DefaultPath.
const PathEnv = "DSH_CHROMIUM"

// Path returns the Chromium binary to run: $DSH_CHROMIUM if set, else
// DefaultPath. It fails if the file is missing or not executable.
func Path() (string, error) {
	p := DefaultPath
	if env := os.Getenv(PathEnv); env != "" {
		p = env
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// Require returns the Chromium binary. When it is missing, the test fails on
// CI (CI=true), where a missing browser is a broken runner and never a skip,
// and is skipped elsewhere with the command that installs it.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Path()
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Chromium is required on CI (CI=true): %v\ninstall it with: %s", err, InstallCommand)
	}
	t.Skipf("Chromium is not installed (%v); install it with: %s", err, InstallCommand)
	return ""
}

// Options configure Launch.
type Options struct {
	// ExtensionDir is the absolute path of an unpacked extension, loaded with
	// --load-extension. Empty loads none.
	ExtensionDir string
	// NativeHosts maps a file name ("dev.dsh.broker.json") to a
	// native-messaging host manifest, written to
	// <user-data-dir>/NativeMessagingHosts/ before the launch.
	NativeHosts map[string][]byte
	// Env holds extra environment variables ("K=V") for the browser. Native
	// hosts inherit the browser's environment, so this is how a test passes
	// them settings. They override HOME, TMPDIR and the XDG variables set by
	// Launch.
	Env []string
	// Headed runs the browser with a window (it then needs a display). The
	// default is --headless=new. (A bool field cannot default to true, so the
	// field names the exception.)
	Headed bool
	// Args are extra command-line flags, added after the standard ones.
	Args []string
}

// DefaultTimeout bounds each helper call of a Browser (a click, a read, a wait
// for a target) unless Browser.Timeout says otherwise. The machine running
// the tests can be a busy 2-core runner.
const DefaultTimeout = 30 * time.Second

// Browser is a running Chromium started by Launch.
type Browser struct {
	// Ctx is the browser-level chromedp context. Use it with
	// chromedp.Targets, chromedp.CallBrowser and chromedp.BrowserEvents, and
	// as the parent of target contexts. Do not Run actions on it: that would
	// open a tab of its own.
	Ctx context.Context
	// UserDataDir is the profile directory (--user-data-dir).
	UserDataDir string
	// Home is the HOME (and TMPDIR parent) of the browser.
	Home string
	// Stderr collects the browser's stdout and stderr, and the errors that
	// chromedp reports (prefixed "chromedp: ").
	Stderr *testenv.SyncBuffer
	// Timeout bounds each helper call; it is DefaultTimeout after Launch.
	Timeout time.Duration

	cmd    *exec.Cmd
	exited chan struct{}
	wsURL  string
	root   string
	cancel context.CancelFunc

	devtools *devtools // the harness's own DevTools connection

	mu      sync.Mutex
	tabs    map[target.ID]context.Context // cached contexts of the helpers
	cancels []context.CancelFunc          // of the cached contexts
	harness *harness

	closeOnce sync.Once
	closeErr  error
}

// Launch starts Chromium with a fresh profile and connects to it. The
// browser is closed (Browser.close, then SIGKILL of its process group) when
// the test ends. On a failed test, the tail of the browser's output is logged.
func Launch(t testing.TB, opts Options) *Browser {
	t.Helper()
	bin := Require(t)
	if opts.ExtensionDir != "" && !filepath.IsAbs(opts.ExtensionDir) {
		t.Fatalf("chromium: ExtensionDir %q is not absolute", opts.ExtensionDir)
	}

	root := testenv.ShortTempDir(t)
	b := &Browser{
		UserDataDir: filepath.Join(root, "profile"),
		Home:        filepath.Join(root, "home"),
		Stderr:      &testenv.SyncBuffer{},
		Timeout:     DefaultTimeout,
		exited:      make(chan struct{}),
		root:        root,
		tabs:        map[target.ID]context.Context{},
	}
	tmp := filepath.Join(b.Home, "tmp")
	for _, d := range []string{b.UserDataDir, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if len(opts.NativeHosts) > 0 {
		dir := filepath.Join(b.UserDataDir, "NativeMessagingHosts")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range opts.NativeHosts {
			if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
				t.Fatalf("chromium: bad native host manifest name %q", name)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	args := []string{
		"--no-sandbox", // required as root
		"--disable-gpu",
		"--disable-quic",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--remote-debugging-port=0",
		// Every host name but loopback fails to resolve: nothing a page or an
		// app asks for can reach past this machine. localhost stays (Chromium
		// answers it with loopback itself, never asking DNS): the tests use it
		// as a second origin beside 127.0.0.1.
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
		"--user-data-dir=" + b.UserDataDir,
	}
	if !opts.Headed {
		args = append([]string{"--headless=new"}, args...)
	}
	if opts.ExtensionDir != "" {
		args = append(args, "--load-extension="+opts.ExtensionDir)
	}
	args = append(args, opts.Args...)
	args = append(args, "about:blank")

	b.cmd = exec.Command(bin, args...)
	b.cmd.Env = append(os.Environ(),
		"HOME="+b.Home,
		"TMPDIR="+tmp,
		// The crash database goes under the config directory even with
		// --user-data-dir; keep it and any cache inside the test's directory.
		"XDG_CONFIG_HOME="+filepath.Join(b.Home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(b.Home, ".cache"),
	)
	b.cmd.Env = append(b.cmd.Env, opts.Env...)
	b.cmd.Dir = b.Home
	b.cmd.Stdout, b.cmd.Stderr = b.Stderr, b.Stderr
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The crash handlers leave the process group and can hold the output
	// pipe for a moment after the browser dies; do not wait for them long.
	b.cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	go func() { b.cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("chromium: %v", err)
		}
		if t.Failed() {
			t.Logf("chromium output (tail):\n%s", b.StderrTail(8<<10))
		}
	})

	wsURL, err := b.waitDevToolsPort(start)
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, b.StderrTail(8<<10))
	}
	b.wsURL = wsURL

	actx, acancel := remote.NewAllocator(context.Background(), wsURL, remote.NoModifyURL)
	logf := func(format string, args ...any) {
		fmt.Fprintf(b.Stderr, "chromedp: "+format+"\n", args...)
	}
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithErrorf(logf), chromedp.WithLogf(logf))
	b.cancel = func() { bcancel(); acancel() }
	// The first call binds the connection to the context it gets, so give it
	// bctx itself and bound it with a watchdog, not a timeout context.
	if err := b.watchdog(bcancel, func() error { _, err := chromedp.Targets(bctx); return err }); err != nil {
		t.Fatalf("chromium: connect to %s: %v\n%s", wsURL, err, b.StderrTail(8<<10))
	}
	b.Ctx = bctx
	dctx, dcancel := b.timeout()
	defer dcancel()
	if b.devtools, err = dialDevtools(dctx, wsURL); err != nil {
		t.Fatalf("chromium: connect to %s: %v\n%s", wsURL, err, b.StderrTail(8<<10))
	}
	return b
}

// waitDevToolsPort polls <user-data-dir>/DevToolsActivePort until it holds
// the port and the browser's WebSocket path.
func (b *Browser) waitDevToolsPort(start time.Time) (string, error) {
	file := filepath.Join(b.UserDataDir, "DevToolsActivePort")
	deadline := start.Add(b.Timeout)
	for {
		select {
		case <-b.exited:
			return "", fmt.Errorf("the browser exited at start: %v", b.cmd.ProcessState)
		default:
		}
		if data, err := os.ReadFile(file); err == nil {
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) == 2 && strings.HasPrefix(lines[1], "/devtools/browser/") {
				if _, err := strconv.Atoi(lines[0]); err == nil {
					return "ws://127.0.0.1:" + lines[0] + lines[1], nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no DevToolsActivePort after %v", b.Timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchdog runs f and calls cancel if f takes longer than b.Timeout. Use it
// for the first call on a chromedp context, which must get the context itself
// (not one with a timeout) because the connection or session lives as long as
// the context of that first call.
func (b *Browser) watchdog(cancel context.CancelFunc, f func() error) error {
	timer := time.AfterFunc(b.Timeout, cancel)
	err := f()
	if !timer.Stop() {
		return fmt.Errorf("no answer within %v: %w", b.Timeout, err)
	}
	return err
}

// StderrTail returns at most the last n bytes of the browser's output,
// without the harmless D-Bus errors of every start (there is no bus).
func (b *Browser) StderrTail(n int) string {
	lines := strings.SplitAfter(b.Stderr.String(), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, ":ERROR:dbus/") })
	s := strings.Join(lines, "")
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// Exited is closed when the browser process has exited.
func (b *Browser) Exited() <-chan struct{} { return b.exited }

// Kill sends SIGKILL to the browser's process group, as a crash would, and
// waits for the browser process to go. The crash handlers are not in the
// group; they exit by themselves.
func (b *Browser) Kill() {
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.exited
}

// Close shuts the browser down: it detaches the helpers' sessions, sends
// Browser.close over a fresh connection, waits up to closeWait for the exit, then
// kills what is left of the process group. It is safe to call more than once
// and after Kill. It reports an error if the browser did not close by itself.
func (b *Browser) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.close() })
	return b.closeErr
}

// closeWait is how long Close waits for the browser to exit by itself. A
// browser that closes its profile on a machine whose cores are all busy
// (CI runs several suites of Chromium at once) has taken more than 10 s.
const closeWait = 30 * time.Second

func (b *Browser) close() error {
	b.mu.Lock()
	cancels := b.cancels
	b.cancels, b.tabs = nil, nil
	b.mu.Unlock()
	for i := len(cancels) - 1; i >= 0; i-- {
		cancels[i]()
	}
	if b.devtools != nil {
		b.devtools.close()
	}
	if b.cancel != nil {
		b.cancel()
	}
	defer func() {
		// Renderers and zygotes are in the group; they normally exit with
		// the browser, but never leave one behind.
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.exited
	}()
	select {
	case <-b.exited:
		return nil // killed or crashed earlier
	default:
	}
	if b.wsURL == "" {
		return nil // never connected; the deferred kill is all there is
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	err := sendBrowserClose(ctx, b.wsURL)
	if err != nil {
		select {
		case <-b.exited: // it closed while we sent; fine
			return nil
		default:
		}
		return fmt.Errorf("Browser.close: %w", err)
	}
	select {
	case <-b.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the browser did not exit within %v of Browser.close", closeWait)
	}
}

// sendBrowserClose sends Browser.close on a connection of its own (chromedp's
// Browser refuses to send that command), waits for the answer and closes the
// connection. The browser exits sooner once its DevTools clients are gone.
func sendBrowserClose(ctx context.Context, wsURL string) error {
	c, err := remote.DialContext(ctx, wsURL)
	if err != nil {
		return err
	}
	// Conn.Read ignores its context; closing the connection ends it.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	drained := make(chan struct{})
	defer func() {
		// Close waits for the server's close frame, which only a reader
		// sees: keep reading until the connection ends.
		go func() {
			defer close(drained)
			var msg cdproto.Message
			for c.Read(ctx, &msg) == nil {
			}
		}()
		c.Close()
		<-drained
	}()
	if err := c.Write(ctx, &cdproto.Message{ID: 1, Method: "Browser.close"}); err != nil {
		return err
	}
	// The answer, or the connection closing, means the browser got it.
	var msg cdproto.Message
	c.Read(ctx, &msg)
	return nil
}
