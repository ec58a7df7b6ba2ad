// Package testenv builds the real binaries once per test process and starts
// real brokers in private temporary runtime directories.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// repoRoot is the module root, found from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// MustBinaries builds cmd/broker and cmd/nativehost once and returns the
// directory holding them.
func MustBinaries(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "dshbin")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/...")
		cmd.Dir = repoRoot()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out.String())
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// Binary returns the path of a built binary ("broker" or "nativehost").
func Binary(t testing.TB, name string) string {
	return filepath.Join(MustBinaries(t), name)
}

// ShortTempDir returns a fresh directory with a short path (Unix socket paths
// are limited to 107 bytes), removed when the test ends.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "dsh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Broker is a broker process started by a test, or a broker server the
// test runs in its own process (StartBrokerInProcess; Cmd is nil then).
type Broker struct {
	Cmd        *exec.Cmd
	RuntimeDir string
	StateDir   string
	Socket     string
	Stderr     *SyncBuffer
	Env        []string // extra environment for the next Start (e.g. DSH_FAILPOINT)
	exited     chan struct{}
	cancel     context.CancelFunc // an in-process broker's stop

	installOnce sync.Once // OwnerPeer's `broker install`
	installEnv  []string
	launcher    string // the manifest directory it wrote
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartBroker starts `broker serve` in a fresh runtime directory with extra
// flags, waits until its socket accepts a hello, and stops it (SIGTERM, then
// SIGKILL) when the test ends.
func StartBroker(t testing.TB, args ...string) *Broker {
	t.Helper()
	root := ShortTempDir(t)
	b := &Broker{
		RuntimeDir: filepath.Join(root, "run"),
		StateDir:   filepath.Join(root, "state"),
		Stderr:     &SyncBuffer{},
		exited:     make(chan struct{}),
	}
	b.Socket = filepath.Join(b.RuntimeDir, "broker.sock")
	b.Start(t, args...)
	return b
}

// StartBrokerInProcess runs the real broker server in the test's own
// process, in a fresh runtime directory, with the provider kinds services
// returns for its state directory, and stops it when the test ends. It is
// for the seams only a constructor can fill (the apps' network is reached
// through an injected resolver and dialer, snug/fetch.Options): nothing
// else differs from `broker serve`, and the native host beside the built
// broker is the one owner software whose providers may ask the user. It
// logs at debug level to Stderr. Start and Kill do not apply to it.
func StartBrokerInProcess(t testing.TB, services func(stateDir string) []service.Register) *Broker {
	t.Helper()
	root := ShortTempDir(t)
	b := &Broker{
		RuntimeDir: filepath.Join(root, "run"),
		StateDir:   filepath.Join(root, "state"),
		Stderr:     &SyncBuffer{},
		exited:     make(chan struct{}),
	}
	b.Socket = filepath.Join(b.RuntimeDir, "broker.sock")
	srv, err := broker.New(broker.Config{
		RuntimeDir:       b.RuntimeDir,
		StateDir:         b.StateDir,
		Services:         services(b.StateDir),
		OwnerExecutables: []string{Binary(t, "nativehost")},
		Logger:           slog.New(slog.NewTextHandler(b.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("broker: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		if err := srv.Serve(ctx); err != nil {
			fmt.Fprintf(b.Stderr, "serve: %v\n", err)
		}
		close(b.exited)
	}()
	t.Cleanup(func() { b.Stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("unix", b.Socket); err == nil {
			c.Close()
			return b
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("broker did not listen within 10s\n%s", b.Stderr)
	return nil
}

// Start (re)starts the broker process in b's directories.
func (b *Broker) Start(t testing.TB, args ...string) {
	t.Helper()
	full := append([]string{"serve", "--runtime-dir", b.RuntimeDir, "--state-dir", b.StateDir, "--log-level", "debug"}, args...)
	b.Cmd = exec.Command(Binary(t, "broker"), full...)
	b.Cmd.Env = append(append(os.Environ(), "DSH_TRACE_REFUSALS=1"), b.Env...)
	b.Cmd.Stderr = b.Stderr
	b.exited = make(chan struct{})
	if err := b.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.Cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() { b.Stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-b.exited:
			t.Fatalf("broker exited at start: %v\n%s", b.Cmd.ProcessState, b.Stderr)
		default:
		}
		if c, err := net.Dial("unix", b.Socket); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("broker did not listen within 10s\n%s", b.Stderr)
}

// Exited is closed when the broker process has exited.
func (b *Broker) Exited() <-chan struct{} { return b.exited }

// Stop sends SIGTERM and waits up to 10 s, then kills. An in-process
// broker is shut down as SIGTERM would.
func (b *Broker) Stop(t testing.TB) {
	select {
	case <-b.exited:
		return
	default:
	}
	if b.Cmd == nil {
		b.cancel()
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("the in-process broker did not stop within 10s\n%s", b.Stderr)
		}
		return
	}
	b.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.Cmd.Process.Kill()
		<-b.exited
		t.Errorf("broker ignored SIGTERM for 10s\n%s", b.Stderr)
	}
}

// Kill sends SIGKILL and waits for the process to go.
func (b *Broker) Kill() {
	b.Cmd.Process.Kill()
	<-b.exited
}

// Token returns the broker's auth token.
func (b *Broker) Token(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.RuntimeDir, "auth-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// Client dials the broker as an authenticated client, closed at cleanup.
func (b *Broker) Client(t testing.TB, opts client.Options) *client.Client {
	t.Helper()
	opts.RuntimeDir = b.RuntimeDir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, opts)
	if err != nil {
		t.Fatalf("dial broker: %v\n%s", err, b.Stderr)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Run runs the broker binary with args (for call, status, install…) and
// returns stdout, stderr and the exit code.
func Run(t testing.TB, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Binary(t, "broker"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// Peer is a raw framed connection for sending exactly what a test wants.
type Peer struct {
	t    testing.TB
	Conn net.Conn
	fr   *frames.Reader
	n    int
}

// DialPeer opens a raw connection to the broker's socket.
func (b *Broker) DialPeer(t testing.TB) *Peer {
	t.Helper()
	c, err := net.Dial("unix", b.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Peer{t: t, Conn: c, fr: frames.NewReader(c)}
}

// Send writes one envelope given as JSON text.
func (p *Peer) Send(envelope string) {
	p.t.Helper()
	if err := frames.Write(p.Conn, []byte(envelope)); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// Request sends a request with a fresh ID and returns the ID.
func (p *Peer) Request(method string, params any) string {
	p.t.Helper()
	p.n++
	id := fmt.Sprintf("t%d", p.n)
	data, err := json.Marshal(params)
	if err != nil {
		p.t.Fatal(err)
	}
	env, err := wire.Encode(wire.Request(id, method, data))
	if err != nil {
		p.t.Fatal(err)
	}
	p.Send(string(env))
	return id
}

// ReadFrame returns the next raw frame without a deadline.
func (p *Peer) ReadFrame() ([]byte, error) { return p.fr.Read() }

// Read returns the next envelope, or nil when the broker closed the
// connection. It fails the test after 10 s.
func (p *Peer) Read() *wire.Envelope {
	p.t.Helper()
	p.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	data, err := p.fr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil
		}
		p.t.Fatalf("read: %v", err)
	}
	env, err := wire.ParseEnvelope(data)
	if err != nil {
		p.t.Fatalf("broker sent an invalid envelope %s: %v", data, err)
	}
	return env
}

// Call sends a request and reads its response, failing the test if the
// connection closes instead.
func (p *Peer) Call(method string, params any) *wire.Envelope {
	p.t.Helper()
	id := p.Request(method, params)
	env := p.Read()
	if env == nil {
		p.t.Fatalf("%s: connection closed", method)
	}
	if env.Type != wire.TypeResponse || env.ID != id {
		p.t.Fatalf("%s: got %+v, want the response to %s", method, env, id)
	}
	return env
}

// ClientHello returns a valid client hello with the given token.
func ClientHello(token string) map[string]any {
	return map[string]any{"bootstrap": 1, "versions": []int{1}, "role": "client", "token": token}
}

// ProviderHello returns a valid provider hello for instance id, advertising
// every capability the broker requires.
func ProviderHello(token, id string) map[string]any {
	h := map[string]any{
		"bootstrap": 1, "versions": []int{1}, "role": "provider",
		"capabilities": append(browser.Required(), browser.CapDOMRead), // scripted providers answer dom.read
		"instance": map[string]any{
			"id": id, "family": "chromium", "brand": "test", "version": "1", "profileLabel": "Test profile",
		},
	}
	if token != "" {
		h["token"] = token
	}
	return h
}

// ClientOptions returns default client options; Broker.Client fills in the
// runtime directory.
func ClientOptions() client.Options { return client.Options{} }

// RequireCommand returns the path of a command the test needs, such as node
// or npm. A missing one skips the test, except on CI (CI=true), where every
// tool must be there and it fails.
func RequireCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required on CI (CI=true): %v; install Node.js 20", name, err)
	}
	t.Skipf("%s is not installed (%v); install Node.js 20", name, err)
	return ""
}

// NpmCI runs `npm ci` in dir (from its committed lockfile) unless every one
// of pkgs is already in dir/node_modules. Playwright is kept from downloading
// a browser of its own: tests use Debian's Chromium.
func NpmCI(t testing.TB, dir string, pkgs ...string) {
	t.Helper()
	missing := false
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing = true
		}
	}
	if !missing {
		return
	}
	npm := RequireCommand(t, "npm")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}
