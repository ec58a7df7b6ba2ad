// Command demo is the README's main job: on a fresh machine it starts the
// broker and Chromium with the extension, opens a bundled demo page, and runs
// a short scripted agent session through the real protocol — observe, fill,
// click, observe, capture (saved as demo-screenshot.jpg beside the binaries)
// — printing what it does.
//
// Nothing is installed outside a temporary directory: the native-messaging
// manifest goes into the throw-away browser profile. The broker runs in
// personal mode so the session needs no approval click; run with
// --restricted --headed on a desktop to approve the claim yourself.
//
// Run it with scripts/demo.sh, which builds the binaries first.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/test/harness/testpages"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the broker and nativehost binaries")
	ext := flag.String("extension", "extension", "the unpacked extension directory")
	chromium := flag.String("chromium", "/usr/lib/chromium/chromium", "the Chromium binary")
	headed := flag.Bool("headed", false, "show the browser window (needs a display)")
	restricted := flag.Bool("restricted", false, "restricted mode: approve the claim in the extension's window (use with --headed)")
	flag.Parse()
	if err := run(*bin, *ext, *chromium, *headed, *restricted); err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo failed:", err)
		os.Exit(1)
	}
	fmt.Println("\nDemo finished: an agent read and changed a real page, through the broker, with a lease.")
}

func step(format string, args ...any) { fmt.Printf("\n\033[1m▶ "+format+"\033[0m\n", args...) }

func run(bin, ext, chromiumPath string, headed, restricted bool) error {
	bin, _ = filepath.Abs(bin)
	ext, _ = filepath.Abs(ext)
	root, err := os.MkdirTemp("", "dsh-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	runtimeDir := filepath.Join(root, "run")
	env := append(os.Environ(), "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "TMPDIR="+root)

	mode := "personal"
	if restricted {
		mode = "restricted"
	}
	step("start the broker (--access-mode=%s)", mode)
	srv := exec.Command(filepath.Join(bin, "broker"), "serve", "--runtime-dir", runtimeDir, "--state-dir", filepath.Join(root, "state"), "--access-mode="+mode)
	srv.Env = env
	logf, _ := os.Create(filepath.Join(root, "broker.log"))
	srv.Stderr = logf
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	if err := waitForSocket(filepath.Join(runtimeDir, "broker.sock")); err != nil {
		return err
	}

	step("register the native host for the extension (broker install, into the demo's browser profile)")
	profile := filepath.Join(root, "profile")
	manifests := filepath.Join(profile, "NativeMessagingHosts")
	inst := exec.Command(filepath.Join(bin, "broker"), "install", "--browser", "chromium", "--no-service",
		"--manifest-dir", manifests, "--runtime-dir", runtimeDir, "--nativehost", filepath.Join(bin, "nativehost"))
	inst.Env = env
	out, err := inst.CombinedOutput()
	if err != nil {
		return fmt.Errorf("install: %v\n%s", err, out)
	}
	fmt.Printf("  %s\n", strings.SplitN(string(out), "\n", 2)[0])

	page, _ := testpages.Page("/form")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}))
	pageURL := "http://" + ln.Addr().String() + "/form"

	step("start Chromium with the extension, showing %s", pageURL)
	args := []string{"--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--load-extension=" + ext, pageURL}
	if !headed {
		args = append([]string{"--headless=new"}, args...)
	}
	browserCmd := exec.Command(chromiumPath, args...)
	browserCmd.Env = env
	browserCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := browserCmd.Start(); err != nil {
		return fmt.Errorf("start Chromium (install it with: apt-get install chromium): %w", err)
	}
	defer func() { syscall.Kill(-browserCmd.Process.Pid, syscall.SIGTERM); browserCmd.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{RuntimeDir: runtimeDir})
	if err != nil {
		return err
	}
	defer c.Close()
	call := func(method string, params any, out any) error {
		raw, err := c.Call(ctx, method, params)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return json.Unmarshal(raw, out)
	}

	step("the agent connects and waits for the browser (broker call browser.instances)")
	var instance string
	for instance == "" {
		var list []browser.TabSummary // only the id is read
		if err := call("browser.instances", nil, &list); err != nil {
			return err
		}
		if len(list) > 0 {
			instance = list[0].ID
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the extension never connected; broker log: %s", filepath.Join(root, "broker.log"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Printf("  browser instance %s connected through nativehost\n", instance)

	const session = "demo"
	var tabs []browser.TabSummary
	for len(tabs) == 0 {
		if err := call("browser.tabs", map[string]any{"sessionId": session, "instanceId": instance}, &tabs); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("  browser.tabs: %s  %q\n", tabs[0].URL, tabs[0].Title)

	step("browser.claim %s", tabs[0].ID)
	if restricted {
		fmt.Println("  → click Allow in the extension's approval window")
	}
	var l browser.LeaseResult
	if err := call("browser.claim", map[string]any{"sessionId": session, "instanceId": instance, "tab": tabs[0].ID}, &l); err != nil {
		return err
	}
	fmt.Printf("  lease %s, scope %s, origin %s\n", l.ID, l.Scope, l.Origin)

	step("browser.observe")
	var obs browser.Observation
	if err := call("browser.observe", map[string]any{"sessionId": session, "leaseId": l.ID}, &obs); err != nil {
		return err
	}
	printObservation(obs)

	act := func(id string, action map[string]any) (browser.ActionResult, error) {
		var res browser.ActionResult
		err := call("browser.act", map[string]any{"sessionId": session, "request": map[string]any{
			"requestId": id, "leaseId": l.ID, "documentEpoch": obs.DocumentEpoch, "action": action}}, &res)
		return res, err
	}
	name, greet := find(obs, "textbox", "Your name"), find(obs, "button", "Greet")
	if name == "" || greet == "" {
		return fmt.Errorf("the demo page did not show its text box and button")
	}
	step("browser.act fill %s (textbox \"Your name\") with \"Ada\", expecting the text \"Ada\"", name)
	res, err := act("demo-1", map[string]any{"kind": "fill", "ref": name, "text": "Ada", "expected": map[string]any{"kind": "text", "text": "Ada"}})
	if err != nil {
		return err
	}
	fmt.Printf("  outcome %s, postcondition %s\n", res.Outcome, res.Postcondition)

	step("browser.act click %s (button \"Greet\"), expecting the text \"Hello, Ada!\"", greet)
	res, err = act("demo-2", map[string]any{"kind": "click", "ref": greet, "expected": map[string]any{"kind": "text", "text": "Hello, Ada!"}})
	if err != nil {
		return err
	}
	fmt.Printf("  outcome %s, postcondition %s\n", res.Outcome, res.Postcondition)
	if res.Outcome != "succeeded" {
		return fmt.Errorf("the click did not have the expected effect: %+v", res)
	}

	step("browser.observe")
	if err := call("browser.observe", map[string]any{"sessionId": session, "leaseId": l.ID}, &obs); err != nil {
		return err
	}
	printObservation(obs)

	step("browser.capture")
	var shot browser.Screenshot
	if err := call("browser.capture", map[string]any{"sessionId": session, "leaseId": l.ID}, &shot); err != nil {
		return err
	}
	img, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return fmt.Errorf("the screenshot is not base64: %v", err)
	}
	shotPath := filepath.Join(bin, "demo-screenshot.jpg")
	if err := os.WriteFile(shotPath, img, 0o600); err != nil {
		return err
	}
	fmt.Printf("  %s, %d bytes, viewport %v×%v; %d frame region(s) painted over; saved to %s\n",
		shot.MimeType, len(img), shot.Viewport.Width, shot.Viewport.Height, shot.Redaction.Regions, shotPath)

	step("browser.release")
	var released map[string]bool
	return call("browser.release", map[string]any{"sessionId": session, "leaseId": l.ID}, &released)
}

func printObservation(o browser.Observation) {
	fmt.Printf("  %s — %s (epoch %s, revision %d)\n", o.Title, o.URL, o.DocumentEpoch, o.Revision)
	for _, n := range o.Nodes {
		extra := ""
		if n.Value != nil {
			extra = fmt.Sprintf(" value=%q", *n.Value)
		}
		if n.Checked != nil {
			extra += fmt.Sprintf(" checked=%v", n.Checked)
		}
		fmt.Printf("    [%s] %s %q%s\n", n.ID, n.Role, n.Name, extra)
	}
	fmt.Printf("    text: %s\n", strings.Join(o.Text, " · "))
}

func find(o browser.Observation, role, name string) string {
	for _, n := range o.Nodes {
		if n.Role == role && n.Name == name {
			return n.ID
		}
	}
	return ""
}

func waitForSocket(path string) error {
	for range 200 {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("broker did not start listening on %s", path)
}
