package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/wire"
)

const (
	origin    = "chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"
	testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// providerHelloFrame is the extension's hello before token injection.
const providerHelloFrame = `{"type":"request","id":"h1","method":"hello","params":{"bootstrap":1,"versions":[1],"role":"provider",` +
	`"capabilities":["lease.fencing.v1","ax.read.v1"],"requiredCapabilities":["runtime.v1"],` +
	`"instance":{"id":"i1","family":"chromium","brand":"chrome","version":"156","profileLabel":"Default"}}}`

// fixture is a runtime dir with a token, a host config allowing origin,
// and a Unix listener standing in for the broker. The stand-in exists only
// to test the relay mechanics; the real broker end to end is tested in test/.
type fixture struct {
	dir, runtime, config, socket string
	ln                           net.Listener
	accepted                     atomic.Int32
	handler                      func(net.Conn)
	wg                           sync.WaitGroup
}

func mustFixture(t *testing.T) *fixture {
	t.Helper()
	// A short path: sun_path holds 108 bytes and t.TempDir() names are long.
	dir, err := os.MkdirTemp("", "nh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fixture{dir: dir, runtime: filepath.Join(dir, "rt"), config: filepath.Join(dir, "native-host.json")}
	f.socket = filepath.Join(f.runtime, "broker.sock")
	if err := os.Mkdir(f.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, filepath.Join(f.runtime, "auth-token"), testToken+"\n", 0o600)
	cfg, _ := json.Marshal(map[string]any{"allowedOrigins": []string{origin}, "runtimeDir": f.runtime})
	mustWriteFile(t, f.config, string(cfg), 0o600)
	t.Setenv("DSH_SOCKET", "")
	t.Setenv("NATIVEHOST_DEBUG", "")
	return f
}

// listen starts the stand-in broker; handle runs once per connection.
func (f *fixture) listen(t *testing.T, handle func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	f.ln = ln
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.accepted.Add(1)
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		f.wg.Wait()
	})
}

func mustWriteFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the host's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// session is one run() in progress: stdin to write frames to, stdout to
// read frames from.
type session struct {
	stdin  *io.PipeWriter
	stdout *frames.Reader
	raw    *io.PipeReader
	stderr *syncBuffer
	code   chan int
	cancel context.CancelFunc
}

func start(t *testing.T, stdin io.Reader, args ...string) *session {
	t.Helper()
	inR, inW := io.Pipe()
	if stdin == nil {
		stdin = inR
	}
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{stdin: inW, stdout: frames.NewReader(outR), raw: outR, stderr: new(syncBuffer), code: make(chan int, 1), cancel: cancel}
	go func() {
		code := run(ctx, args, stdin, outW, s.stderr)
		outW.Close() // the host's stdout closes when the process exits
		s.code <- code
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		if t.Failed() {
			t.Logf("nativehost stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

func (s *session) send(t *testing.T, payload string) {
	t.Helper()
	if err := frames.Write(s.stdin, []byte(payload)); err != nil {
		t.Fatalf("writing to the host's stdin: %v", err)
	}
}

func (s *session) recv(t *testing.T) []byte {
	t.Helper()
	p, err := s.stdout.Read()
	if err != nil {
		t.Fatalf("reading the host's stdout: %v", err)
	}
	return p
}

func (s *session) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.code:
		return code
	case <-time.After(5 * time.Second):
		t.Fatalf("nativehost did not exit; stderr:\n%s", s.stderr.String())
		return -1
	}
}

// stdoutBytes drains stdout after exit.
func (s *session) stdoutBytes(t *testing.T) []byte {
	t.Helper()
	b, err := io.ReadAll(s.raw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fixture) args(extra ...string) []string {
	return append([]string{"--config=" + f.config}, extra...)
}

// welcomeBroker checks the first frame is our hello with the file's token,
// answers a welcome and then calls after (if any) with the connection.
func welcomeBroker(t *testing.T, hellos chan<- *wire.Hello, after func(net.Conn, *frames.Reader)) func(net.Conn) {
	return func(c net.Conn) {
		r := frames.NewReader(c)
		p, err := r.Read()
		if err != nil {
			t.Errorf("stand-in broker: reading hello: %v", err)
			return
		}
		env, err := wire.ParseEnvelope(p)
		if err != nil || env.Method != "hello" {
			t.Errorf("stand-in broker: first frame %s: %v", p, err)
			return
		}
		h, err := wire.ParseHello(env.Params)
		if err != nil {
			t.Errorf("stand-in broker: hello: %v", err)
			return
		}
		if hellos != nil {
			hellos <- h
		}
		if h.Token != testToken {
			frames.Write(c, mustEncode(t, wire.Failure(env.ID, wire.CodePolicyDenied)))
			return
		}
		welcome, _ := json.Marshal(wire.Welcome{Version: 1, ConnectionEpoch: "e1", Capabilities: []string{"runtime.v1"}})
		if err := frames.Write(c, mustEncode(t, wire.Success(env.ID, welcome))); err != nil {
			t.Errorf("stand-in broker: writing welcome: %v", err)
			return
		}
		if after != nil {
			after(c, r)
		}
	}
}

func mustEncode(t *testing.T, e *wire.Envelope) []byte {
	b, err := wire.Encode(e)
	if err != nil {
		t.Errorf("encoding %+v: %v", e, err)
	}
	return b
}

// echo returns every frame to the sender until the connection ends.
func echo(c net.Conn, r *frames.Reader) {
	for {
		p, err := r.Read()
		if err != nil {
			return
		}
		if err := frames.Write(c, p); err != nil {
			return
		}
	}
}

// bigPayload is a JSON string frame of exactly frames.MaxPayload bytes.
func bigPayload() string {
	return `"` + strings.Repeat("x", frames.MaxPayload-2) + `"`
}

func TestRelay(t *testing.T) {
	for _, debug := range []bool{false, true} {
		t.Run(fmt.Sprintf("debug=%v", debug), func(t *testing.T) {
			f := mustFixture(t)
			if debug {
				t.Setenv("NATIVEHOST_DEBUG", "1")
			}
			hellos := make(chan *wire.Hello, 1)
			brokerSaw := make(chan []byte, 16)
			f.listen(t, welcomeBroker(t, hellos, func(c net.Conn, r *frames.Reader) {
				// A broker-initiated event first, then echo.
				frames.Write(c, []byte(`{"type":"event","event":"page.changed","value":{"n":1}}`))
				for {
					p, err := r.Read()
					if err != nil {
						return
					}
					brokerSaw <- p
					if err := frames.Write(c, p); err != nil {
						return
					}
				}
			}))
			s := start(t, nil, f.args(origin)...)
			s.send(t, providerHelloFrame)

			h := <-hellos
			if h.Token != testToken || h.Role != wire.RoleProvider || len(h.Capabilities) != 2 || h.Instance.Brand != "chrome" {
				t.Fatalf("broker saw hello %+v", h)
			}
			var got [][]byte
			welcome := s.recv(t)
			got = append(got, welcome)
			env, err := wire.ParseEnvelope(welcome)
			if err != nil || !env.OK || env.ID != "h1" {
				t.Fatalf("welcome %s: %v", welcome, err)
			}
			if ev := s.recv(t); !bytes.Contains(ev, []byte(`"page.changed"`)) {
				t.Fatalf("second frame %s, want the broker's event", ev)
			}

			sent := []string{
				`{"type":"response","id":"b1","ok":true,"value":null}`,
				`{"type":"request","id":"r2","method":"browser.instances","params":{}}`,
				bigPayload(),
				`{"type":"cancel","id":"r2"}`,
			}
			go func() {
				for _, p := range sent {
					if err := frames.Write(s.stdin, []byte(p)); err != nil {
						return
					}
				}
			}()
			for i, want := range sent {
				select {
				case p := <-brokerSaw:
					if string(p) != want {
						t.Errorf("broker frame %d: %d bytes, want %d", i, len(p), len(want))
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("broker did not receive frame %d", i)
				}
				p := s.recv(t)
				got = append(got, p)
				if string(p) != want {
					t.Errorf("stdout frame %d: %d bytes, want %d", i, len(p), len(want))
				}
			}

			s.stdin.Close() // Chrome closed the port
			if code := s.wait(t); code != exitOK {
				t.Errorf("exit %d after stdin EOF, want 0", code)
			}
			for _, p := range got {
				if bytes.Contains(p, []byte(testToken)) {
					t.Error("the token reached stdout")
				}
			}
			if rest := s.stdoutBytes(t); len(rest) != 0 {
				t.Errorf("extra bytes on stdout: %q", rest)
			}
			logs := s.stderr.String()
			if strings.Contains(logs, testToken) {
				t.Error("the token reached stderr")
			}
			if debug != strings.Contains(logs, "msg=frame") {
				t.Errorf("debug=%v but frame summaries logged=%v:\n%s", debug, !debug, logs)
			}
			if debug && !strings.Contains(logs, "method=browser.instances") {
				t.Errorf("debug log lacks the request summary:\n%s", logs)
			}
		})
	}
}

func TestBrokerCloseExitsZero(t *testing.T) {
	f := mustFixture(t)
	f.listen(t, welcomeBroker(t, nil, nil)) // closes after the welcome
	s := start(t, nil, f.args(origin)...)
	s.send(t, providerHelloFrame)
	s.recv(t)
	if code := s.wait(t); code != exitOK {
		t.Errorf("exit %d after the broker closed, want 0", code)
	}
	if _, err := s.stdout.Read(); err != io.EOF {
		t.Errorf("stdout after exit: %v, want EOF", err)
	}
}

func TestSignalExitsZero(t *testing.T) {
	f := mustFixture(t)
	f.listen(t, welcomeBroker(t, nil, echo))
	s := start(t, nil, f.args(origin)...)
	s.send(t, providerHelloFrame)
	s.recv(t)
	s.cancel() // what SIGTERM does through signal.NotifyContext
	if code := s.wait(t); code != exitOK {
		t.Errorf("exit %d on SIGTERM, want 0", code)
	}
}

func TestMalformedAfterHello(t *testing.T) {
	t.Run("from the broker", func(t *testing.T) {
		f := mustFixture(t)
		f.listen(t, welcomeBroker(t, nil, func(c net.Conn, _ *frames.Reader) {
			c.Write(frame("{bad!"))
			io.Copy(io.Discard, c) // keep the connection open: the host must exit on the frame, not on EOF
		}))
		s := start(t, nil, f.args(origin)...)
		s.send(t, providerHelloFrame)
		s.recv(t)
		if code := s.wait(t); code == exitOK {
			t.Error("exit 0 after a malformed broker frame")
		}
		if rest := s.stdoutBytes(t); len(rest) != 0 {
			t.Errorf("the malformed frame was relayed: %q", rest)
		}
	})
	t.Run("from the extension", func(t *testing.T) {
		f := mustFixture(t)
		brokerSaw := make(chan []byte, 4)
		f.listen(t, welcomeBroker(t, nil, func(c net.Conn, r *frames.Reader) {
			for {
				p, err := r.Read()
				if err != nil {
					return
				}
				brokerSaw <- p
			}
		}))
		s := start(t, nil, f.args(origin)...)
		s.send(t, providerHelloFrame)
		s.recv(t)
		s.stdin.Write(frame("\"\xff\xfe\"")) // not UTF-8
		if code := s.wait(t); code == exitOK {
			t.Error("exit 0 after a malformed extension frame")
		}
		select {
		case p := <-brokerSaw:
			t.Errorf("the broker received %q", p)
		default:
		}
	})
}

// readSpy is a stdin that records whether it was read.
type readSpy struct{ reads atomic.Int32 }

func (r *readSpy) Read([]byte) (int, error) {
	r.reads.Add(1)
	return 0, io.EOF
}

func TestDisallowedOrigin(t *testing.T) {
	for _, caller := range []string{
		"chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
		"chrome-extension://gocinifmbcgfcfejlknabffipmookipn", // no trailing slash: not exact
		"https://example.com/",
	} {
		t.Run(caller, func(t *testing.T) {
			f := mustFixture(t)
			f.listen(t, func(net.Conn) {})
			spy := new(readSpy)
			s := start(t, spy, f.args(caller, "--parent-window=0")...)
			if code := s.wait(t); code != exitFail {
				t.Errorf("exit %d, want 1", code)
			}
			if spy.reads.Load() != 0 {
				t.Error("stdin was read for a disallowed origin")
			}
			if f.accepted.Load() != 0 {
				t.Error("the broker was contacted for a disallowed origin")
			}
			if rest := s.stdoutBytes(t); len(rest) != 0 {
				t.Errorf("stdout: %q", rest)
			}
			if !strings.Contains(s.stderr.String(), "origin is not in the installed allowlist") {
				t.Errorf("stderr does not say why:\n%s", s.stderr.String())
			}
		})
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	f := mustFixture(t)
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"no origin", f.args(), exitUsage, "missing the caller origin"},
		{"unknown flag", []string{"--bogus", origin}, exitUsage, "flag provided but not defined"},
		{"missing config", []string{"--config=" + filepath.Join(f.dir, "none.json"), origin}, exitFail, "run `broker install`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, new(readSpy), tc.args...)
			if code := s.wait(t); code != tc.want {
				t.Errorf("exit %d, want %d", code, tc.want)
			}
			if !strings.Contains(s.stderr.String(), tc.msg) {
				t.Errorf("stderr lacks %q:\n%s", tc.msg, s.stderr.String())
			}
		})
	}
}

func TestFirstFrameRejected(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte // raw bytes written to stdin (header included)
	}{
		{"not hello", frame(`{"type":"request","id":"r1","method":"browser.instances","params":{}}`)},
		{"response", frame(`{"type":"response","id":"r1","ok":true,"value":null}`)},
		{"client hello", frame(`{"type":"request","id":"h1","method":"hello","params":{"bootstrap":1,"versions":[1],"role":"client"}}`)},
		{"provider hello without instance", frame(`{"type":"request","id":"h1","method":"hello","params":{"bootstrap":1,"versions":[1],"role":"provider","capabilities":[]}}`)},
		{"hello with unknown field", frame(`{"type":"request","id":"h1","method":"hello","params":{"bootstrap":1,"versions":[1],"role":"provider","capabilities":[],"x":1,"instance":{"id":"i","family":"chromium","brand":"b","version":"v","profileLabel":"p"}}}`)},
		{"invalid JSON", frame(`{"type":`)},
		{"zero length", frame("")},
		{"over the limit", binary.NativeEndian.AppendUint32(nil, frames.MaxPayload+1)},
		{"torn frame", frame(`{"type":"request"}`)[:10]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustFixture(t)
			f.listen(t, func(net.Conn) {})
			s := start(t, nil, f.args(origin)...)
			go func() {
				s.stdin.Write(tc.frame)
				s.stdin.Close()
			}()
			if code := s.wait(t); code == exitOK {
				t.Error("exit 0, want non-zero")
			}
			if f.accepted.Load() != 0 {
				t.Error("the broker was contacted")
			}
			if rest := s.stdoutBytes(t); len(rest) != 0 {
				t.Errorf("stdout: %q", rest)
			}
		})
	}
}

// frame frames payload without validating it.
func frame(payload string) []byte {
	return append(binary.NativeEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func TestFirstFrameTimeoutAndEOF(t *testing.T) {
	old := firstFrameTimeout
	firstFrameTimeout = 100 * time.Millisecond
	t.Cleanup(func() { firstFrameTimeout = old })

	f := mustFixture(t)
	f.listen(t, func(net.Conn) {})
	s := start(t, nil, f.args(origin)...)
	if code := s.wait(t); code != exitFail {
		t.Errorf("exit %d when no hello arrives, want 1", code)
	}
	if !strings.Contains(s.stderr.String(), "no frame within") {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}

	s = start(t, nil, f.args(origin)...)
	s.stdin.Close()
	if code := s.wait(t); code != exitOK {
		t.Errorf("exit %d when the port closes before the hello, want 0", code)
	}
	if f.accepted.Load() != 0 {
		t.Error("the broker was contacted")
	}
}

func TestTokenProblems(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, tokenPath string)
		msg   string
	}{
		{"missing", func(t *testing.T, p string) { os.Remove(p) }, "start the broker"},
		{"group-readable", func(t *testing.T, p string) { os.Chmod(p, 0o640) }, "must be private"},
		{"world-readable", func(t *testing.T, p string) { os.Chmod(p, 0o644) }, "must be private"},
		{"symlink", func(t *testing.T, p string) {
			os.Rename(p, p+".real")
			os.Symlink(p+".real", p)
		}, "not a regular file"},
		{"directory", func(t *testing.T, p string) {
			os.Remove(p)
			os.Mkdir(p, 0o700)
		}, "not a regular file"},
		{"short", func(t *testing.T, p string) { mustWriteFile(t, p, testToken[:63]+"\n", 0o600) }, "64 hexadecimal digits"},
		{"not hex", func(t *testing.T, p string) { mustWriteFile(t, p, strings.Repeat("z", 64), 0o600) }, "64 hexadecimal digits"},
		{"two newlines", func(t *testing.T, p string) { mustWriteFile(t, p, testToken+"\n\n", 0o600) }, "64 hexadecimal digits"},
		{"other owner", func(t *testing.T, p string) {
			if os.Getuid() != 0 {
				t.Skip("changing a file's owner needs root")
			}
			os.Chown(p, 65534, 65534)
		}, "not owned by the current user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustFixture(t)
			f.listen(t, func(net.Conn) {})
			tc.setup(t, filepath.Join(f.runtime, "auth-token"))
			s := start(t, nil, f.args(origin)...)
			s.send(t, providerHelloFrame)
			if code := s.wait(t); code != exitFail {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(s.stderr.String(), tc.msg) {
				t.Errorf("stderr lacks %q:\n%s", tc.msg, s.stderr.String())
			}
			if f.accepted.Load() != 0 {
				t.Error("the broker was contacted without a usable token")
			}
			if rest := s.stdoutBytes(t); len(rest) != 0 {
				t.Errorf("stdout: %q", rest)
			}
		})
	}
}

func TestTokenWithoutNewline(t *testing.T) {
	f := mustFixture(t)
	mustWriteFile(t, filepath.Join(f.runtime, "auth-token"), testToken, 0o400)
	hellos := make(chan *wire.Hello, 1)
	f.listen(t, welcomeBroker(t, hellos, nil))
	s := start(t, nil, f.args(origin)...)
	s.send(t, providerHelloFrame)
	if h := <-hellos; h.Token != testToken {
		t.Errorf("token %q", h.Token)
	}
	s.recv(t)
	s.wait(t)
}

func TestBrokerNotRunning(t *testing.T) {
	f := mustFixture(t)
	s := start(t, nil, f.args(origin)...)
	s.send(t, providerHelloFrame)
	if code := s.wait(t); code != exitFail {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(s.stderr.String(), "cannot reach the broker") {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}
	if rest := s.stdoutBytes(t); len(rest) != 0 {
		t.Errorf("stdout: %q", rest)
	}
}

// TestFlagsOverrideConfig: --runtime-dir replaces the config's runtimeDir
// (token and socket), and --socket replaces the socket only.
func TestFlagsOverrideConfig(t *testing.T) {
	f := mustFixture(t)
	hellos := make(chan *wire.Hello, 1)
	f.listen(t, welcomeBroker(t, hellos, nil))

	// A config pointing at a runtime dir that does not exist.
	cfg, _ := json.Marshal(map[string]any{"allowedOrigins": []string{origin}, "runtimeDir": filepath.Join(f.dir, "gone")})
	mustWriteFile(t, f.config, string(cfg), 0o600)

	s := start(t, nil, f.args("--runtime-dir="+f.runtime, origin)...)
	s.send(t, providerHelloFrame)
	if h := <-hellos; h.Token != testToken {
		t.Errorf("token %q", h.Token)
	}
	s.recv(t)
	if code := s.wait(t); code != exitOK {
		t.Errorf("exit %d", code)
	}

	// --socket with the token taken from --runtime-dir; the socket lives elsewhere.
	other := filepath.Join(f.dir, "o.sock")
	ln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s = start(t, nil, f.args("--runtime-dir="+f.runtime, "--socket="+other, origin)...)
	s.send(t, providerHelloFrame)
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	p, err := frames.NewReader(c).Read()
	if err != nil || !bytes.Contains(p, []byte(testToken)) {
		t.Errorf("--socket listener got %q, %v", p, err)
	}
	c.Close()
	if code := s.wait(t); code != exitOK {
		t.Errorf("exit %d", code)
	}
}

func TestInjectTokenKeepsHello(t *testing.T) {
	env, err := providerHello([]byte(`{"type":"request","id":"h1","method":"hello","params":{"bootstrap":1,"versions":[1,2],"role":"provider","token":"from-extension","capabilities":[],"instance":{"id":"i","family":"chromium","brand":"b","version":"v","profileLabel":"p"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := injectToken(env, testToken)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.ParseEnvelope(out)
	if err != nil {
		t.Fatal(err)
	}
	h, err := wire.ParseHello(got.Params)
	if err != nil {
		t.Fatal(err)
	}
	if h.Token != testToken || h.Capabilities == nil || !bytes.Contains(got.Params, []byte(`"capabilities":[]`)) || len(h.Versions) != 2 || got.ID != "h1" {
		t.Errorf("re-encoded hello %s", out)
	}
}
