package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

const usage = `broker — the DSH browser broker

Usage:
  broker [serve] [flags]            run the daemon in the foreground
  broker install [flags]            register the native host and the user service
  broker uninstall [flags]          remove what install wrote (keeps token and state)
  broker app COMMAND [ARGS]         your Snug micro-apps (install, list, open, …)
  broker call METHOD [PARAMS_JSON]  send one request and print its value as JSON
  broker mcp [flags]                serve the browser and shared terminals as MCP tools (for AI hosts)
  broker status                     show the broker, its browsers, leases and journal
  broker console                    open the owner's console in the browser (agents, questions, Stop)
  broker log [--follow]             show what agents asked the browser to do
  broker term [-- COMMAND…]         run your shell as a terminal you may share with agents
  broker journal reset              move an unusable action journal aside (broker stopped)
  broker help [COMMAND]             show help

Run 'broker help COMMAND' or 'broker COMMAND --help' for a command's flags.

Paths: the runtime directory is --runtime-dir, else $DSH_RUNTIME_DIR, else
$XDG_RUNTIME_DIR/dsh, else /tmp/dsh-$UID; it holds broker.sock, auth-token and
conn.sock (the agent socket of shared terminals; $CONN_SOCKET overrides it).
`

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"app":       {"install, open and manage Snug micro-apps", runApp},
		"call":      {"send one request and print its value", runCall},
		"console":   {"open the owner's console in the browser", runConsole},
		"log":       {"show what agents asked the browser to do", runLog},
		"install":   {"register the native host and user service", runInstall},
		"journal":   {"reset an unusable action journal", runJournal},
		"mcp":       {"serve the browser and shared terminals as MCP tools on stdio", runMCP},
		"serve":     {"run the daemon", runServe},
		"status":    {"show the broker's state", runStatus},
		"term":      {"run a shell you may share with agents", runTerm},
		"uninstall": {"remove what install wrote", runUninstall},
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" && args[0] != "-help" {
		return runServe(ctx, args, stdin, stdout, stderr)
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "--help", "-help":
		if len(rest) > 0 {
			if c, ok := commands[rest[0]]; ok {
				return c.run(ctx, []string{"--help"}, stdin, stdout, stderr)
			}
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, version())
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "broker: unknown command %q\n\n%s", name, usage)
		return 2
	}
	return c.run(ctx, rest, stdin, stdout, stderr)
}

// newFlags returns a flag set that prints its usage to stderr with a line
// of explanation.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: broker %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and returns (exit code, done): done is true when
// the caller should return the code (help shown or a bad flag).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func version() string {
	v := "0.1.0-dev"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}
