package testenv

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/install"
)

// OwnerPeer connects a raw provider peer the way the owner's browser does:
// through the real nativehost, started by the manifest `broker install`
// wrote (its launcher, the extension's origin as first argument, frames on
// stdio). The broker sees the nativehost process, one of the owner's
// executables, so this peer is an owner surface that may be asked the
// owner's questions; a peer from DialPeer, which merely holds the token,
// never is. Send a provider hello without a token: nativehost injects it.
func (b *Broker) OwnerPeer(t testing.TB) *Peer {
	t.Helper()
	b.installOnce.Do(func() {
		home := ShortTempDir(t)
		b.installEnv = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
		out, errOut, code := Run(t, b.installEnv, "install", "--browser", "chromium", "--no-service",
			"--runtime-dir", b.RuntimeDir, "--nativehost", Binary(t, "nativehost"))
		if code != 0 {
			t.Fatalf("broker install: %d\n%s%s", code, out, errOut)
		}
		b.launcher = filepath.Join(home, ".config", "chromium", "NativeMessagingHosts")
	})
	data, err := os.ReadFile(filepath.Join(b.launcher, install.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Path == "" {
		t.Fatalf("manifest %s: %v", data, err)
	}
	manifest := m.Path
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(manifest, install.ExtensionOrigin(install.PinnedExtensionID))
	cmd.Env = append(os.Environ(), b.installEnv...)
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	stderr := &SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	stdoutW.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	c := &pipeConn{r: stdoutR, w: stdinW}
	t.Cleanup(func() {
		c.Close() // stdin EOF: nativehost exits, as it does when Chrome closes the port
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return &Peer{t: t, Conn: c, fr: frames.NewReader(c)}
}

// pipeConn is a net.Conn over a child's stdio pipes.
type pipeConn struct {
	r, w *os.File
	once sync.Once
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }
func (c *pipeConn) Close() error {
	c.once.Do(func() { c.w.Close(); c.r.Close() })
	return nil
}
func (c *pipeConn) LocalAddr() net.Addr                { return pipeAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr               { return pipeAddr{} }
func (c *pipeConn) SetDeadline(t time.Time) error      { c.r.SetDeadline(t); return c.w.SetDeadline(t) }
func (c *pipeConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "nativehost stdio" }
