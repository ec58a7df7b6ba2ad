// Command demo shows the broker foundation working end to end on a fresh
// machine, with nothing installed outside a throw-away directory:
//
//  1. `broker install` writes the native-messaging manifest and launcher;
//  2. `broker serve` starts the daemon;
//  3. the demo plays the browser: it starts the host named in the manifest
//     the way Chrome does (caller origin as first argument, frames on stdio)
//     and sends the extension's provider hello, without a token;
//  4. `broker call` and `broker status` answer from the connected browser,
//     and a browser.tabs request travels client → broker → nativehost →
//     "browser" and back;
//  5. a host started for an origin the install did not allow is refused.
//
// Run it with scripts/demo.sh, which builds the binaries first.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/wire"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the broker and nativehost binaries")
	flag.Parse()
	if err := run(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
	fmt.Println("\nDemo finished: everything above ran through the real broker, socket and native host.")
}

func step(format string, args ...any) { fmt.Printf("\n\033[1m▶ "+format+"\033[0m\n", args...) }

func run(bin string) error {
	bin, _ = filepath.Abs(bin)
	broker := filepath.Join(bin, "broker")
	root, err := os.MkdirTemp("", "dsh-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	runtimeDir := filepath.Join(root, "run")
	env := append(os.Environ(), "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "DSH_RUNTIME_DIR="+runtimeDir)

	step("broker install --browser chromium --no-service   (into a throw-away home)")
	if err := show(env, broker, "install", "--browser", "chromium", "--no-service", "--nativehost", filepath.Join(bin, "nativehost")); err != nil {
		return err
	}

	step("broker serve")
	srv := exec.Command(broker, "serve", "--state-dir", filepath.Join(root, "state"))
	srv.Env = env
	srv.Stderr = prefixed("  [broker] ")
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	if err := waitForSocket(filepath.Join(runtimeDir, "broker.sock")); err != nil {
		return err
	}

	manifestPath := filepath.Join(root, "config", "chromium", "NativeMessagingHosts", install.ManifestName)
	var manifest struct {
		Path           string   `json:"path"`
		AllowedOrigins []string `json:"allowed_origins"`
	}
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return err
	}

	origin := manifest.AllowedOrigins[0]
	step("the browser starts the native host: %s %s", filepath.Base(manifest.Path), origin)
	host := exec.Command(manifest.Path, origin)
	host.Env = env
	host.Stderr = prefixed("  [nativehost] ")
	stdin, _ := host.StdinPipe()
	stdout, _ := host.StdoutPipe()
	if err := host.Start(); err != nil {
		return err
	}
	defer host.Wait()
	defer stdin.Close()
	fr := frames.NewReader(stdout)

	hello := `{"bootstrap":1,"versions":[1],"role":"provider","capabilities":["lease.fencing.v1","lease.tab-scope.v1","ax.read.v1","ax.find.v1"],` +
		`"instance":{"id":"demo-browser","family":"chromium","brand":"Chromium","version":"demo","profileLabel":"Demo profile"}}`
	fmt.Println("  extension → hello (no token: the native host injects it)")
	if err := send(stdin, wire.Request("1", "hello", json.RawMessage(hello))); err != nil {
		return err
	}
	welcome, err := receive(fr)
	if err != nil {
		return err
	}
	if !welcome.OK {
		return fmt.Errorf("hello refused: %s", welcome.Code)
	}
	fmt.Printf("  broker → welcome %s\n", welcome.Value)

	step("broker call browser.instances")
	if err := show(env, broker, "call", "browser.instances"); err != nil {
		return err
	}

	step(`broker call browser.tabs '{"sessionId":"demo","instanceId":"demo-browser"}'`)
	call := exec.Command(broker, "call", "browser.tabs", `{"sessionId":"demo","instanceId":"demo-browser"}`)
	call.Env = env
	var out bytes.Buffer
	call.Stdout, call.Stderr = &out, &out
	if err := call.Start(); err != nil {
		return err
	}
	req, err := receive(fr)
	if err != nil {
		return err
	}
	fmt.Printf("  browser ← %s %s\n", req.Method, req.Params)
	tabs := `[{"id":"demo-browser:1","instanceId":"demo-browser","url":"https://example.test/","title":"Example"},` +
		`{"id":"demo-browser:2","instanceId":"demo-browser","url":"chrome://settings/","title":"Settings (never offered to agents)"}]`
	if err := send(stdin, wire.Success(req.ID, json.RawMessage(tabs))); err != nil {
		return err
	}
	fmt.Println("  browser → two tabs; the broker drops the chrome:// one")
	if err := call.Wait(); err != nil {
		return fmt.Errorf("broker call: %v\n%s", err, out.String())
	}
	fmt.Print(indent(out.String()))

	step("broker status")
	if err := show(env, broker, "status"); err != nil {
		return err
	}

	other := "chrome-extension://" + strings.Repeat("a", 32) + "/"
	step("an extension the user did not install tries the host: %s", other)
	bad := exec.Command(manifest.Path, other)
	bad.Env = env
	msg, err := bad.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code == 0 {
		return fmt.Errorf("the native host accepted an origin it should refuse")
	}
	fmt.Printf("  refused (exit %d): %s", code, indent(string(msg)))

	step("the browser closes the port; the broker forgets the instance")
	stdin.Close()
	host.Wait()
	time.Sleep(100 * time.Millisecond)
	return show(env, broker, "call", "browser.instances")
}

func show(env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	fmt.Print(indent(string(out)))
	if err != nil {
		return fmt.Errorf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	return nil
}

func send(w io.Writer, env *wire.Envelope) error {
	data, err := wire.Encode(env)
	if err != nil {
		return err
	}
	return frames.Write(w, data)
}

func receive(fr *frames.Reader) (*wire.Envelope, error) {
	data, err := fr.Read()
	if err != nil {
		return nil, fmt.Errorf("native host closed: %w", err)
	}
	return wire.ParseEnvelope(data)
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

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

type prefixWriter struct{ prefix string }

func prefixed(p string) io.Writer { return prefixWriter{p} }

func (w prefixWriter) Write(b []byte) (int, error) {
	os.Stderr.WriteString(indent(w.prefix + strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", "\n"+w.prefix)))
	return len(b), nil
}
