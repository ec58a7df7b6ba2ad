// Package realapps is the real-application suite: web applications
// installed from the npm registry at pinned versions (package.json and
// package-lock.json beside this file), served from localhost, where an
// agent does short tasks through `broker mcp` only — it reads the page as
// the tools render it, finds the control by role and name, and acts on its
// ref; no selector, no script in the page. Each task's result is checked in
// the page's DOM (evaluation over CDP, for checking only): false before the
// first action, true after the last.
//
// The applications come from `npm ci --omit=dev` in this directory, which
// scripts/test.sh runs. Without them the test fails, saying so, unless
// DSH_REALAPPS_SKIP=1 says to skip it.
//
// DSH_REALAPPS_TASKS=<regexp> runs only the tasks whose id (app/name)
// it matches; DSH_REALAPPS_TRACE=1 logs every tool call with its answer
// and duration; DSH_REALAPPS_DUMP=<dir> writes there, for each failed
// task, the page as the agent last read it.
//
// With DSH_REALAPPS_PLAYWRIGHT=1 the same tasks then run through
// @playwright/mcp (a dev dependency here: `npm ci` installs it) on the same
// Chromium binary, one browser at a time, and the test prints both tools'
// results side by side (BENCHMARKS.md, "Real applications"):
//
//	DSH_REALAPPS_PLAYWRIGHT=1 go test ./test/realapps -run . -v -count=1
package realapps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testenv"
)

// resolverRules keep every browser of the suite on this machine: any host
// name but loopback fails to resolve, so the applications' CDN, font and
// analytics requests go nowhere (notes/chromium-e2e.md).
const resolverRules = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"

// dir is this test's directory: package.json, node_modules and pages.
func dir(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	d, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// requireInstalled fails (or, with DSH_REALAPPS_SKIP=1, skips) unless
// every package of section ("dependencies" or "devDependencies") is in
// node_modules.
func requireInstalled(t testing.TB, d, section, command string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(d, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg map[string]json.RawMessage
	var deps map[string]string
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	if err := json.Unmarshal(pkg[section], &deps); err != nil {
		t.Fatalf("package.json %s: %v", section, err)
	}
	var missing []string
	for name := range deps {
		if _, err := os.Stat(filepath.Join(d, "node_modules", name, "package.json")); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return
	}
	slices.Sort(missing)
	msg := fmt.Sprintf("the applications are not installed (%s missing from %s/node_modules): run `%s` in %s (scripts/test.sh does)",
		strings.Join(missing, ", "), d, command, d)
	if os.Getenv("DSH_REALAPPS_SKIP") == "1" {
		t.Skip(msg + "; skipped because DSH_REALAPPS_SKIP=1")
	}
	t.Fatal(msg)
}

// site serves the applications (node_modules/), the pages that host them
// (pages/) and the little API that Swagger UI's "Try it out" calls.
func site(d string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/node_modules/", http.StripPrefix("/node_modules/", http.FileServer(http.Dir(filepath.Join(d, "node_modules")))))
	mux.Handle("/pages/", http.StripPrefix("/pages/", http.FileServer(http.Dir(filepath.Join(d, "pages")))))
	mux.HandleFunc("GET /api/pets", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"id":1,"name":"Rex","tag":"dog"},{"id":2,"name":"Tom","tag":"cat"}]`)
	})
	return mux
}

// result is one task's outcome through one tool.
type result struct {
	pass bool
	ms   float64 // from opening the page to the last action's answer
	err  string
	seen string // on failure: the page as the agent last read it
}

// checker evaluates a predicate in the page showing origin.
type checker func(ctx context.Context, origin, expr string) (bool, error)

// predicate wraps a task's check so that an exception (an element not
// there yet) reads as false.
func predicate(expr string) string {
	return "(() => { try { return !!(" + expr + "); } catch (e) { return false; } })()"
}

// doneWait bounds how long a task's result may take to show after its
// last action (an application updates its DOM on its own schedule).
const doneWait = 5 * time.Second

// run does one task through ag on a fresh origin: the application starts
// with empty storage every time.
func run(ctx context.Context, ag agent, check checker, tk task, origin string) result {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	defer ag.close(context.WithoutCancel(ctx))
	start := time.Now()
	var checking time.Duration
	fail := func(format string, args ...any) result {
		return result{ms: ms(time.Since(start) - checking), err: fmt.Sprintf(format, args...), seen: ag.seen(ctx)}
	}
	if err := ag.open(ctx, origin+tk.Page); err != nil {
		return fail("open %s: %v", tk.Page, err)
	}
	for i, s := range tk.Steps {
		var before func() error
		if i == 0 {
			// Once the application shows the first control, the result
			// must not be there yet.
			before = func() error {
				t0 := time.Now()
				defer func() { checking += time.Since(t0) }()
				done, err := check(ctx, origin, tk.Done)
				if err != nil {
					return fmt.Errorf("checking the page before the task: %v", err)
				}
				if done {
					return fmt.Errorf("the result is there before the task: %s", tk.Done)
				}
				return nil
			}
		}
		err := ag.do(ctx, s, before)
		for retry := 0; errors.Is(err, errStale) && retry < 2; retry++ {
			err = ag.do(ctx, s, nil)
		}
		if err != nil {
			return fail("step %d (%s): %v", i+1, s, err)
		}
	}
	elapsed := ms(time.Since(start) - checking)
	deadline := time.Now().Add(doneWait)
	for {
		done, err := check(ctx, origin, tk.Done)
		if err != nil {
			return result{ms: elapsed, err: fmt.Sprintf("checking the page after the task: %v", err), seen: ag.seen(ctx)}
		}
		if done {
			return result{pass: true, ms: elapsed}
		}
		if time.Now().After(deadline) {
			return result{ms: elapsed, err: fmt.Sprintf("every step answered, but the page does not show the result: %s", tk.Done), seen: ag.seen(ctx)}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TestRealApps runs every task through broker mcp on the whole product (a
// broker in personal mode, real Chromium with the extension); a task in
// gaps must fail, and says why, until what it needs has landed.
func TestRealApps(t *testing.T) {
	d := dir(t)
	requireInstalled(t, d, "dependencies", "npm ci --omit=dev --ignore-scripts")
	tasks := selected(t)
	handler := site(d)
	origins := make([]string, len(tasks))
	for i := range tasks {
		// A fresh origin per task: no storage carries over from one task
		// to the next.
		srv := httptest.NewServer(handler)
		t.Cleanup(srv.Close)
		origins[i] = srv.URL
	}

	// The tab opens, and @playwright/mcp's browser starts, on an origin
	// of its own, before any task is timed.
	warm := httptest.NewServer(handler)
	t.Cleanup(warm.Close)
	s := stack.Start(t, "--access-mode=personal")
	tab, id := s.Tab(t, warm.URL+"/pages/docs/README.md")
	tabCtx := s.Browser.TargetCtx(t, id)
	brokerCheck := func(ctx context.Context, _ string, expr string) (bool, error) {
		ctx, cancel := context.WithTimeout(tabCtx, 10*time.Second)
		defer cancel()
		return chromedp.Run(ctx, chromedp.Evaluate[bool](predicate(expr)))
	}

	ctx := context.Background()
	cmd := exec.Command(testenv.Binary(t, "broker"), "mcp", "--runtime-dir", s.B.RuntimeDir)
	c, err := startMCP(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kinds, err := c.actionKinds(ctx, "browser_act")
	if err != nil {
		t.Fatalf("broker mcp's browser_act: %v", err)
	}
	if os.Getenv("DSH_REALAPPS_TRACE") == "1" {
		c.trace = t.Logf
	}
	ag := &brokerAgent{c: c, instance: s.Instance, tab: tab}

	ours := make([]result, len(tasks))
	for i, tk := range tasks {
		t.Run(tk.id(), func(t *testing.T) {
			r := run(ctx, ag, brokerCheck, tk, origins[i])
			ours[i] = r
			if !r.pass {
				dump(t, "broker", tk, r)
			}
			gap := gapOf(tk, kinds)
			switch {
			case r.pass && gap == "":
				t.Logf("passed in %.0f ms", r.ms)
			case r.pass:
				if _, listed := gaps[tk.id()]; listed {
					t.Errorf("passes now (%.0f ms): take it out of gaps (%s)", r.ms, gap)
				}
			case gap != "":
				t.Logf("known gap (%s): %s", gap, r.err)
			default:
				t.Errorf("%s\nbroker mcp (tail):\n%s", r.err, tail(c.stderr.String(), 2000))
			}
		})
	}

	if d := os.Getenv("DSH_REALAPPS_DUMP"); d != "" {
		if err := os.WriteFile(filepath.Join(d, "broker.log"), []byte(s.B.Stderr.String()), 0o644); err != nil {
			t.Error(err)
		}
	}

	var theirs []result
	if os.Getenv("DSH_REALAPPS_PLAYWRIGHT") == "1" {
		// One browser at a time: ours goes before theirs starts.
		c.Close()
		if err := s.Browser.Close(); err != nil {
			t.Errorf("closing the broker's browser: %v", err)
		}
		theirs = runPlaywright(t, d, tasks, origins, warm.URL)
	}
	report(t, tasks, kinds, ours, theirs)
}

// selected returns the tasks to run: all, or those DSH_REALAPPS_TASKS
// matches.
func selected(t *testing.T) []task {
	f := os.Getenv("DSH_REALAPPS_TASKS")
	if f == "" {
		return tasks
	}
	re, err := regexp.Compile(f)
	if err != nil {
		t.Fatalf("DSH_REALAPPS_TASKS: %v", err)
	}
	var out []task
	for _, tk := range tasks {
		if re.MatchString(tk.id()) {
			out = append(out, tk)
		}
	}
	if len(out) == 0 {
		t.Fatalf("DSH_REALAPPS_TASKS=%s matches no task", f)
	}
	return out
}

// gapOf says why tk cannot pass through broker mcp yet: a kind that
// browser_act does not list, or the reason gaps gives; "" if nothing
// stands in its way.
func gapOf(tk task, kinds []string) string {
	var missing []string
	for _, s := range tk.Steps {
		if !slices.Contains(kinds, s.Do) && !slices.Contains(missing, s.Do) {
			missing = append(missing, s.Do)
		}
	}
	if len(missing) > 0 {
		return "browser_act has no kind " + strings.Join(missing, ", ")
	}
	return gaps[tk.id()]
}

// runPlaywright runs every task through @playwright/mcp, which launches
// its own headless Chromium from the same binary with the same resolver
// rules; the DOM is checked over that browser's DevTools port.
func runPlaywright(t *testing.T, d string, tasks []task, origins []string, warm string) []result {
	requireInstalled(t, d, "devDependencies", "npm ci --ignore-scripts")
	bin := chromium.Require(t)
	port := freePort(t)
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "config.json")
	config, _ := json.Marshal(map[string]any{"browser": map[string]any{
		"browserName":   "chromium",
		"launchOptions": map[string]any{"args": []string{resolverRules, fmt.Sprintf("--remote-debugging-port=%d", port)}},
	}})
	if err := os.WriteFile(cfg, config, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(d, "node_modules", ".bin", "playwright-mcp"),
		"--config", cfg, "--executable-path", bin, "--headless", "--isolated", "--no-sandbox",
		"--caps", "vision", "--output-dir", filepath.Join(tmp, "out"))
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "HOME="+tmp, "TMPDIR="+tmp, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1", "CI=true")
	ctx := context.Background()
	c, err := startMCP(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if os.Getenv("DSH_REALAPPS_TRACE") == "1" {
		c.trace = t.Logf
	}
	dt := &devtools{port: port}
	defer dt.close()
	if _, err := c.call(ctx, "browser_navigate", map[string]any{"url": warm + "/pages/docs/README.md"}); err != nil {
		t.Fatalf("@playwright/mcp: %v\n%s", err, tail(c.stderr.String(), 2000))
	}
	ag := &playwrightAgent{c: c}
	out := make([]result, len(tasks))
	for i, tk := range tasks {
		out[i] = run(ctx, ag, dt.check, tk, origins[i])
		if out[i].pass {
			t.Logf("@playwright/mcp %s: passed in %.0f ms", tk.id(), out[i].ms)
		} else {
			t.Logf("@playwright/mcp %s: failed: %s", tk.id(), out[i].err)
			dump(t, "playwright", tk, out[i])
		}
	}
	return out
}

// dump writes, with DSH_REALAPPS_DUMP=<dir>, the page as the agent of
// tool last read it in a failed task.
func dump(t *testing.T, tool string, tk task, r result) {
	d := os.Getenv("DSH_REALAPPS_DUMP")
	if d == "" {
		return
	}
	name := tool + "-" + strings.NewReplacer("/", "-", " ", "_").Replace(tk.id()) + ".txt"
	if err := os.WriteFile(filepath.Join(d, name), []byte(r.err+"\n\n"+r.seen), 0o644); err != nil {
		t.Error(err)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// devtools checks pages of a browser that someone else launched, over its
// DevTools port.
type devtools struct {
	port   int
	bctx   context.Context
	cancel context.CancelFunc
}

func (d *devtools) close() {
	if d.cancel != nil {
		d.cancel()
	}
}

func (d *devtools) check(ctx context.Context, origin, expr string) (bool, error) {
	if d.bctx == nil || d.bctx.Err() != nil {
		actx, acancel := remote.NewAllocator(context.Background(), fmt.Sprintf("ws://127.0.0.1:%d", d.port))
		bctx, bcancel := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil {
			bcancel()
			acancel()
			return false, fmt.Errorf("DevTools port %d: %v", d.port, err)
		}
		d.bctx, d.cancel = bctx, func() { bcancel(); acancel() }
	}
	infos, err := chromedp.Targets(d.bctx)
	if err != nil {
		return false, err
	}
	var id target.ID
	for _, info := range infos {
		if info.Type == "page" && strings.HasPrefix(info.URL, origin+"/") {
			id = info.TargetID
		}
	}
	if id == "" {
		return false, fmt.Errorf("no page of %s", origin)
	}
	pctx, cancel := chromedp.NewContext(d.bctx, chromedp.WithTargetID(id), chromedp.WithDetachOnCancel())
	defer cancel()
	tctx, tcancel := context.WithTimeout(pctx, 10*time.Second)
	defer tcancel()
	return chromedp.Run(tctx, chromedp.Evaluate[bool](predicate(expr)))
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// report logs the results as a Markdown table (ours, and theirs beside
// them when they ran), the counts, and the gaps.
func report(t *testing.T, tasks []task, kinds []string, ours, theirs []result) {
	var b strings.Builder
	head := "| app | task | kinds | broker mcp | ms |"
	rule := "|---|---|---|---|---:|"
	if theirs != nil {
		head += " @playwright/mcp | ms |"
		rule += "---|---:|"
	}
	b.WriteString(head + "\n" + rule + "\n")
	cell := func(r result) string {
		if r.pass {
			return fmt.Sprintf("pass | %.0f", r.ms)
		}
		return "fail | –"
	}
	passed := [2]int{}
	for i, tk := range tasks {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |", tk.App, tk.Name, strings.Join(tk.kinds(), ", "), cell(ours[i]))
		if ours[i].pass {
			passed[0]++
		}
		if theirs != nil {
			fmt.Fprintf(&b, " %s |", cell(theirs[i]))
			if theirs[i].pass {
				passed[1]++
			}
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\nbroker mcp: %d of %d tasks passed", passed[0], len(tasks))
	if theirs != nil {
		fmt.Fprintf(&b, "; @playwright/mcp: %d of %d", passed[1], len(tasks))
	}
	b.WriteString("\n")
	for i, tk := range tasks {
		if !ours[i].pass {
			fmt.Fprintf(&b, "- broker mcp %s: %s", tk.id(), firstLines(ours[i].err, 1))
			if g := gapOf(tk, kinds); g != "" {
				fmt.Fprintf(&b, " [known gap: %s]", g)
			}
			b.WriteByte('\n')
		}
	}
	for i, tk := range tasks {
		if theirs != nil && !theirs[i].pass {
			fmt.Fprintf(&b, "- @playwright/mcp %s: %s\n", tk.id(), firstLines(theirs[i].err, 1))
		}
	}
	t.Logf("real applications:\n%s", b.String())
	if path := os.Getenv("DSH_REALAPPS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}
