package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/lmittmann/tint"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/browser/runtime"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/hub"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/termsvc"
)

func runServe(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlags("serve", "serve [flags]\n\nRuns the broker in the foreground until SIGTERM or Ctrl-C. Under systemd it\nserves the socket handed over by broker.socket and reports readiness.", stderr)
	runtimeDir := fs.String("runtime-dir", "", "runtime directory (socket, token); see 'broker help'")
	socket := fs.String("socket", "", "socket path (default RUNTIME/broker.sock, or $DSH_SOCKET)")
	agentSocket := fs.String("agent-socket", "", "the agent socket for shared terminals (default RUNTIME/conn.sock, or $CONN_SOCKET)")
	stateDir := fs.String("state-dir", "", "state directory (default $DSH_STATE_DIR, $XDG_STATE_HOME/dsh or ~/.local/state/dsh)")
	access := fs.String("access-mode", browser.AccessRestricted, "restricted: the user approves every claim in the extension; personal: prompt-free HTTP(S) tabs")
	var allow multiFlag
	fs.Var(&allow, "allow-origin", "restricted mode: an exact origin (scheme://host[:port]) claims may target; repeatable")
	admission := fs.String("admission", broker.AdmissionOpen, "open: a client with the token is admitted; prompt: each new client connection also waits\nuntil you allow it in the browser's admission window (discovery answers ADMISSION_PENDING\nmeanwhile, other calls wait up to 25 s; Deny is final for that connection; a new\nconnection asks again, whatever its name)")
	maxConns := fs.Int("max-connections", broker.DefaultMaxConnections, "open sockets allowed at once, including unauthenticated ones")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "broker serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "broker serve: bad --log-level %q: use debug, info, warn or error\n", *level)
		return 2
	}
	log := newLogger(stderr, lvl)

	switch *access {
	case browser.AccessRestricted, browser.AccessPersonal:
	default:
		fmt.Fprintf(stderr, "broker serve: unknown --access-mode %q: use restricted or personal\n", *access)
		return 2
	}
	rd := paths.RuntimeDir(*runtimeDir)
	sd := paths.StateDir(*stateDir)
	cfg := broker.Config{
		RuntimeDir: rd,
		SocketPath: paths.Socket(*socket, rd),
		Services: []service.Register{
			runtime.Register(runtime.Config{Personal: *access == browser.AccessPersonal, AllowOrigins: allow}),
			hub.Register(hub.Config{StateDir: sd, Requirements: conn.CheckImported}),
			termsvc.Register(termsvc.Config{Socket: agentsock.Config{SocketPath: paths.AgentSocket(*agentSocket, rd)}}),
		},
		Admission:      *admission,
		MaxConnections: *maxConns,
		Version:        version(),
		Logger:         log,
	}
	cfg.StateDir = sd
	listeners, err := activation.Listeners()
	if err != nil {
		log.Error("systemd socket activation failed", "err", err)
		return 1
	}
	for _, ln := range listeners {
		if ln == nil {
			continue
		}
		if ua, ok := ln.Addr().(*net.UnixAddr); ok {
			cfg.Listener, cfg.SocketPath = ln, ua.Name
			break
		}
	}
	srv, err := broker.New(cfg)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	if err := srv.Serve(ctx); err != nil {
		log.Error("broker stopped", "err", err)
		return 1
	}
	return 0
}

// newLogger writes colour to a terminal, plain text without timestamps to
// journald (which stamps lines itself) and plain timestamped text elsewhere.
func newLogger(w io.Writer, lvl slog.Level) *slog.Logger {
	if os.Getenv("JOURNAL_STREAM") != "" {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
			Level: lvl,
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey && len(groups) == 0 {
					return slog.Attr{}
				}
				return a
			},
		}))
	}
	return slog.New(tint.NewHandler(w, &tint.Options{Level: lvl, NoColor: !isTerminal(w)}))
}

// isTerminal reports whether w is a character device (a terminal, for
// the colour decision; no ioctl, so it reads the same on every platform).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
