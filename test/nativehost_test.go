package test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// installed runs `broker install` into a private home and returns the
// manifest it wrote for Chromium.
func installed(t *testing.T, b *testenv.Broker) (home string, manifest map[string]any) {
	t.Helper()
	home = testenv.ShortTempDir(t)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	out, errOut, code := testenv.Run(t, env, "install", "--browser", "chromium", "--no-service",
		"--runtime-dir", b.RuntimeDir, "--nativehost", testenv.Binary(t, "nativehost"))
	if code != 0 {
		t.Fatalf("broker install: %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "Load unpacked") {
		t.Errorf("install did not tell the user to load the extension:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(home, ".config", "chromium", "NativeMessagingHosts", install.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	return home, manifest
}

// browserSide starts the manifest's host the way Chrome does: the path from
// the manifest, the caller origin as first argument, frames on stdio.
type browserSide struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	frames *frames.Reader
	stderr *testenv.SyncBuffer
	done   chan struct{}
}

func startHost(t *testing.T, manifest map[string]any, origin string) *browserSide {
	t.Helper()
	cmd := exec.Command(manifest["path"].(string), origin)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	h := &browserSide{cmd: cmd, stdin: stdin, frames: frames.NewReader(stdout), stderr: &testenv.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(h.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-h.done })
	return h
}

func (h *browserSide) send(t *testing.T, env *wire.Envelope) {
	t.Helper()
	data, err := wire.Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	if err := frames.Write(h.stdin, data); err != nil {
		t.Fatalf("write to nativehost: %v\n%s", err, h.stderr)
	}
}

func (h *browserSide) read(t *testing.T) *wire.Envelope {
	t.Helper()
	type res struct {
		data []byte
		err  error
	}
	ch := make(chan res, 1)
	go func() { d, err := h.frames.Read(); ch <- res{d, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read from nativehost: %v\n%s", r.err, h.stderr)
		}
		env, err := wire.ParseEnvelope(r.data)
		if err != nil {
			t.Fatalf("nativehost wrote a non-envelope %q: %v", r.data, err)
		}
		return env
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing from nativehost in 10s\n%s", h.stderr)
	}
	return nil
}

func (h *browserSide) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-h.done:
		return h.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		t.Fatalf("nativehost did not exit\n%s", h.stderr)
	}
	return -1
}

func TestProviderThroughNativeHost(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	_, manifest := installed(t, b)
	origin := install.ExtensionOrigin(install.PinnedExtensionID)
	if got := manifest["allowed_origins"].([]any); len(got) != 1 || got[0] != origin {
		t.Fatalf("manifest allowed_origins %v, want [%s]", got, origin)
	}

	host := startHost(t, manifest, origin)
	hello, _ := json.Marshal(testenv.ProviderHello("", "chromium-1")) // the extension never knows the token
	host.send(t, wire.Request("h1", "hello", hello))
	welcome := host.read(t)
	if !welcome.OK {
		t.Fatalf("provider hello through nativehost refused: %s\nbroker:\n%s\nhost:\n%s", welcome.Code, b.Stderr, host.stderr)
	}
	if _, err := wire.ParseWelcome(welcome.Value); err != nil {
		t.Fatalf("bad welcome: %v", err)
	}

	out, _, code := testenv.Run(t, nil, "call", "--runtime-dir", b.RuntimeDir, "browser.instances")
	if code != 0 || !strings.Contains(out, `"id": "chromium-1"`) {
		t.Fatalf("browser.instances after provider hello: %d\n%s", code, out)
	}

	// A broker request reaches the "browser" through the host and back.
	c := b.Client(t, testenv.ClientOptions())
	type result struct {
		raw json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, err := c.Call(context.Background(), "browser.tabs", map[string]any{"sessionId": "s", "instanceId": "chromium-1"})
		done <- result{raw, err}
	}()
	req := host.read(t)
	if req.Method != "tabs.list" {
		t.Fatalf("browser got %+v", req)
	}
	host.send(t, wire.Success(req.ID, json.RawMessage(`[{"id":"chromium-1:7","instanceId":"chromium-1","url":"https://example.test/","title":"Example"}]`)))
	res := <-done
	if res.err != nil || !strings.Contains(string(res.raw), "chromium-1:7") {
		t.Fatalf("browser.tabs through nativehost: %s, %v", res.raw, res.err)
	}

	// Chrome closing the port ends the host cleanly and the instance goes away.
	host.stdin.Close()
	if code := host.wait(t); code != 0 {
		t.Fatalf("nativehost exit %d after stdin closed\n%s", code, host.stderr)
	}
	waitFor(t, func() bool {
		raw, err := c.Call(context.Background(), "browser.instances", nil)
		return err == nil && string(raw) == "[]"
	})
}

func TestNativeHostRefusesOtherOrigin(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	_, manifest := installed(t, b)
	host := startHost(t, manifest, install.ExtensionOrigin(strings.Repeat("a", 32)))
	if code := host.wait(t); code == 0 {
		t.Fatal("nativehost accepted an origin that install did not allow")
	}
	if !strings.Contains(host.stderr.String(), "not allowed") && !strings.Contains(host.stderr.String(), "allow") {
		t.Errorf("no clear reason on stderr: %s", host.stderr)
	}
	if strings.Contains(b.Stderr.String(), "browser connected") {
		t.Fatal("a refused origin reached the broker")
	}
}

func TestNativeHostExitsWhenBrokerGoes(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	_, manifest := installed(t, b)
	host := startHost(t, manifest, install.ExtensionOrigin(install.PinnedExtensionID))
	hello, _ := json.Marshal(testenv.ProviderHello("", "chromium-2"))
	host.send(t, wire.Request("h1", "hello", hello))
	if w := host.read(t); !w.OK {
		t.Fatalf("hello: %s", w.Code)
	}
	b.Kill()
	if code := host.wait(t); code != 0 {
		t.Fatalf("nativehost exit %d when the broker died\n%s", code, host.stderr)
	}
}

func TestNativeHostRequiresProviderHelloFirst(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	_, manifest := installed(t, b)
	host := startHost(t, manifest, install.ExtensionOrigin(install.PinnedExtensionID))
	hello, _ := json.Marshal(testenv.ClientHello("x"))
	host.send(t, wire.Request("h1", "hello", hello))
	if code := host.wait(t); code == 0 {
		t.Fatal("nativehost relayed a client hello")
	}
	if strings.Contains(b.Stderr.String(), "browser connected") {
		t.Fatal("a client hello through nativehost reached the broker")
	}
}
