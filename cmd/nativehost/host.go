package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/internal/fileinfo"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/wire"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// Timeouts; variables so that tests can shorten them.
var (
	// firstFrameTimeout bounds the wait for the extension's hello, like
	// the broker's and the extension's three-second handshake windows.
	firstFrameTimeout = 3 * time.Second
	// dialTimeout bounds the connection to the broker socket.
	dialTimeout = 3 * time.Second
)

// maxTokenFile bounds the token file read: 64 hex digits and a newline.
const maxTokenFile = 128

var tokenPattern = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// run is the whole native host; main only wires it to the process. stdout
// receives protocol frames and nothing else.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	debug := os.Getenv("NATIVEHOST_DEBUG") == "1"
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("prog", "nativehost")

	flags := flag.NewFlagSet("nativehost", flag.ContinueOnError)
	flags.SetOutput(stderr)
	configPath := flags.String("config", filepath.Join(paths.ConfigDir(), install.HostConfigName), "host config written by `broker install`")
	runtimeDir := flags.String("runtime-dir", "", "broker runtime directory (default: the config's runtimeDir)")
	socket := flags.String("socket", "", "broker socket (default: RUNTIME/broker.sock, or $DSH_SOCKET)")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: nativehost [--config PATH] [--runtime-dir DIR] [--socket PATH] ORIGIN\n\nChrome starts nativehost with the caller origin; run `broker install` to register it.")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return exitUsage
	}
	if flags.NArg() < 1 {
		log.Error("missing the caller origin argument; Chrome passes it when the extension connects (register the host with `broker install`)")
		return exitUsage
	}
	// Chrome may append arguments after the origin (--parent-window on
	// Windows); they are ignored.
	origin := flags.Arg(0)

	cfg, err := install.LoadHostConfig(*configPath)
	if err != nil {
		log.Error("cannot load the native host config; run `broker install`", "config", *configPath, "err", err)
		return exitFail
	}
	if !cfg.Allows(origin) {
		log.Error("refusing caller: origin is not in the installed allowlist", "origin", origin, "allowed", cfg.AllowedOrigins, "config", *configPath)
		return exitFail
	}
	rt := *runtimeDir
	if rt == "" {
		rt = cfg.RuntimeDir
	}
	h := &host{
		log:       log.With("origin", origin),
		debug:     debug,
		tokenPath: paths.Token(rt),
		socket:    paths.Socket(*socket, rt),
	}
	return h.serve(ctx, stdin, stdout)
}

type host struct {
	log       *slog.Logger
	debug     bool
	tokenPath string
	socket    string
}

// serve admits the extension's hello, connects to the broker and relays.
func (h *host) serve(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	in := frames.NewReader(stdin)
	first, err := readFirst(ctx, in)
	switch {
	case errors.Is(err, io.EOF):
		h.log.Info("the extension closed the port before its hello")
		return exitOK
	case ctx.Err() != nil:
		h.log.Info("stopped before the hello", "cause", context.Cause(ctx))
		return exitOK
	case err != nil:
		h.log.Error("no valid first frame from the extension", "err", err)
		return exitFail
	}
	h.trace("extension→broker", first)
	env, err := providerHello(first)
	if err != nil {
		h.log.Error("first frame is not a provider hello; nothing relayed", "err", err)
		return exitFail
	}
	token, err := readToken(h.tokenPath)
	if err != nil {
		h.log.Error("cannot use the broker's auth token", "err", err)
		return exitFail
	}
	hello, err := injectToken(env, token)
	if err != nil {
		h.log.Error("cannot forward the hello", "err", err)
		return exitFail
	}

	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", h.socket)
	if err != nil {
		h.log.Error("cannot reach the broker; is it running? (systemctl --user start broker.socket, or broker serve)", "socket", h.socket, "err", err)
		return exitFail
	}
	defer conn.Close()
	if err := frames.Write(conn, hello); err != nil {
		h.log.Error("cannot send the hello to the broker", "err", err)
		return exitFail
	}
	h.log.Debug("connected", "socket", h.socket)
	return h.relay(ctx, in, stdout, conn)
}

// readFirst reads the first frame, waiting at most firstFrameTimeout.
// stdin has no deadline of its own, so the read runs in a goroutine; on
// timeout it is abandoned and the process exits.
func readFirst(ctx context.Context, in *frames.Reader) ([]byte, error) {
	type result struct {
		payload []byte
		err     error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := in.Read()
		ch <- result{p, err}
	}()
	timer := time.NewTimer(firstFrameTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.payload, r.err
	case <-timer.C:
		return nil, fmt.Errorf("no frame within %v", firstFrameTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// providerHello accepts only a valid hello request whose params are a
// valid provider hello.
func providerHello(payload []byte) (*wire.Envelope, error) {
	env, err := wire.ParseEnvelope(payload)
	if err != nil {
		return nil, err
	}
	if env.Type != wire.TypeRequest || env.Method != "hello" {
		return nil, fmt.Errorf("got a %s %q, want a hello request", env.Type, env.Method)
	}
	hello, err := wire.ParseHello(env.Params)
	if err != nil {
		return nil, err
	}
	if hello.Role != wire.RoleProvider {
		return nil, fmt.Errorf("hello role is %q; the extension must connect as %q", hello.Role, wire.RoleProvider)
	}
	return env, nil
}

// injectToken returns the hello request with token set in its params. The
// params are edited as raw JSON rather than re-marshalled from wire.Hello,
// so every other member reaches the broker exactly as the extension sent it
// (an empty capabilities list, for one, would be dropped by omitempty).
func injectToken(env *wire.Envelope, token string) ([]byte, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(env.Params, &params); err != nil {
		return nil, err
	}
	tok, err := json.Marshal(token)
	if err != nil {
		return nil, err
	}
	params["token"] = tok
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if _, err := wire.ParseHello(raw); err != nil {
		return nil, err
	}
	return wire.Encode(wire.Request(env.ID, env.Method, raw))
}

// readToken reads the broker's token: a regular file (not a symlink) owned
// by the current user with no group or other permissions, holding 64 hex
// digits and an optional newline.
func readToken(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no token at %s: start the broker (it creates the token) or check --runtime-dir", path)
	}
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (mode %v)", path, fi.Mode())
	}
	if uid, _, ok := fileinfo.Owner(fi); !ok || uid != os.Getuid() {
		return "", fmt.Errorf("%s is not owned by the current user", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %04o; it must be private to its owner (0600)", path, perm)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|fileinfo.OpenNoFollow, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(got, fi) {
		return "", fmt.Errorf("%s changed while it was being read", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", err
	}
	s := string(data)
	if n := len(s); n > 0 && s[n-1] == '\n' {
		s = s[:n-1]
	}
	if !tokenPattern.MatchString(s) {
		return "", fmt.Errorf("%s does not hold 64 hexadecimal digits", path)
	}
	return s, nil
}

// side names where a relay ended.
type side int

const (
	fromExtension side = iota // reading stdin or writing to the socket
	fromBroker                // reading the socket or writing stdout
)

type relayEnd struct {
	side  side
	write bool // the error came from writing to the other side
	err   error
}

// relay copies frames both ways until either side closes or ctx ends.
// Frames are checked (length, UTF-8, JSON) but not interpreted.
func (h *host) relay(ctx context.Context, in *frames.Reader, stdout io.Writer, conn net.Conn) int {
	ends := make(chan relayEnd, 2) // buffered: the losing pump may finish after relay returns
	go func() { ends <- h.pump(fromExtension, in, conn) }()
	go func() { ends <- h.pump(fromBroker, frames.NewReader(conn), stdout) }()

	var end relayEnd
	select {
	case end = <-ends:
	case <-ctx.Done():
		h.log.Info("stopping on signal", "cause", context.Cause(ctx))
		conn.Close()
		return exitOK
	}
	conn.Close()

	switch {
	case end.side == fromExtension && !end.write && errors.Is(end.err, io.EOF):
		h.log.Info("the extension closed the port")
		return exitOK
	case end.side == fromBroker && !end.write && (errors.Is(end.err, io.EOF) || peerGone(end.err)):
		h.log.Info("the broker closed the connection", "err", end.err)
		return exitOK
	case end.side == fromExtension && end.write && peerGone(end.err):
		h.log.Info("the broker closed the connection", "err", end.err)
		return exitOK
	case end.side == fromBroker && end.write && peerGone(end.err):
		h.log.Info("the browser closed stdout", "err", end.err)
		return exitOK
	case !end.write && end.side == fromExtension:
		h.log.Error("malformed frame from the extension", "err", end.err)
	case !end.write:
		h.log.Error("malformed frame from the broker", "err", end.err)
	default:
		h.log.Error("relay failed", "err", end.err)
	}
	return exitFail
}

// pump relays frames from r to w until an error.
func (h *host) pump(s side, r *frames.Reader, w io.Writer) relayEnd {
	dir := "extension→broker"
	if s == fromBroker {
		dir = "broker→extension"
	}
	for {
		p, err := r.Read()
		if err != nil {
			return relayEnd{side: s, err: err}
		}
		h.trace(dir, p)
		if err := frames.Write(w, p); err != nil {
			return relayEnd{side: s, write: true, err: err}
		}
	}
}

// peerGone reports errors that mean the other end went away.
func peerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed)
}

// trace logs a one-line summary of a frame under NATIVEHOST_DEBUG=1: its
// size and envelope header, never params or values.
func (h *host) trace(dir string, p []byte) {
	if !h.debug {
		return
	}
	var s struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		Method string `json:"method"`
		Event  string `json:"event"`
		OK     *bool  `json:"ok"`
		Code   string `json:"code"`
	}
	_ = json.Unmarshal(p, &s) // a summary of whatever parses
	attrs := []any{"dir", dir, "bytes", len(p), "type", s.Type}
	for _, kv := range [][2]string{{"id", s.ID}, {"method", s.Method}, {"event", s.Event}, {"code", s.Code}} {
		if kv[1] != "" {
			attrs = append(attrs, kv[0], kv[1])
		}
	}
	if s.OK != nil {
		attrs = append(attrs, "ok", *s.OK)
	}
	h.log.Debug("frame", attrs...)
}
