package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/dsh-browser/broker/mcpserver"
)

const mcpSynopsis = `mcp [flags]

Serves the browser, and the terminals you share with 'broker term', as
Model Context Protocol tools on standard input and output, for an MCP host
(Claude Desktop, Claude Code, Cursor, VS Code, …):

  claude mcp add dsh -- broker mcp
  {"command": "broker", "args": ["mcp"]}

It connects to the running broker as an ordinary client (start it with
'broker serve' or 'systemctl --user start broker.socket'), and to the
shared terminals as an agent of the agent socket (you admit it in the bar
of your terminal); without a broker it still starts, and its tools say how
to start one. Logs go to
standard error; standard output is the protocol.`

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("mcp", mcpSynopsis, stderr)
	opts := clientFlags(fs)
	agentSocket := fs.String("agent-socket", "", "the shared terminals' agent socket (default RUNTIME/conn.sock, or $CONN_SOCKET)")
	level := fs.String("log-level", "info", "debug, info, warn or error (logs go to stderr)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "broker mcp: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "broker mcp: bad --log-level %q: use debug, info, warn or error\n", *level)
		return 2
	}
	log := newLogger(stderr, lvl).With("component", "mcp")
	o := opts()
	srv := mcpserver.New(mcpserver.Options{
		RuntimeDir:  o.RuntimeDir,
		SocketPath:  o.SocketPath,
		AgentSocket: *agentSocket,
		Version:     version(),
		Logger:      log,
		NameProcess: true,
	})
	defer srv.Close()
	if err := srv.Serve(ctx, mcpserver.StdioTransport(stdin, stdout)); err != nil && ctx.Err() == nil {
		log.Error("MCP session ended", "err", err)
		return 1
	}
	return 0
}
