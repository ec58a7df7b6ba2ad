package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/dsh-browser/broker/term"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/term/termsvc"
)

const termSynopsis = `term [flags] [-- COMMAND [ARG…]]

Runs your shell (or COMMAND) in this terminal as a session you may share
with agents. It starts private, and nothing reaches agents until you share
it and admit them.

It registers with the broker ('broker serve', the same runtime directory)
as a terminal, named t1, t2, … (or --id) for agents; without a broker it is
an ordinary terminal ("local" in the bar) and registers as soon as one
starts. Agents reach it on the agent socket, RUNTIME/conn.sock (or
$CONN_SOCKET), or through 'broker mcp'.

The last row is the owner bar. Ctrl-] then a key acts:
  s  share / stop sharing this terminal
  y  yes, n no: answer what the bar asks (admit an agent, let it in, grant
     control, accept a proposed command, approve a command)
  m  switch co-pilot (you accept each command) / autopilot
  t  take control back (typing anything also does)
  Ctrl-] again sends Ctrl-] to the program.

To share with an agent: press Ctrl-] s, have the agent connect, and answer
y when the bar asks to admit it.`

// localName is what the bar calls the session while no broker relays it.
const localName = "local"

func runTerm(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("term", termSynopsis, stderr)
	runtimeDir := fs.String("runtime-dir", "", "the broker's runtime directory (see 'broker help')")
	socket := fs.String("socket", "", "the broker's socket (default RUNTIME/broker.sock, or $DSH_SOCKET)")
	id := fs.String("id", "", "the session's name for agents, when free (default: the broker picks t1, t2, …)")
	mode := fs.String("mode", agentapi.ModeCopilot, "how agents start: copilot (you accept each command) or autopilot")
	grace := fs.Duration("grace", 0, "in autopilot, how long an agent's Enter waits, cancellable with Ctrl-] n")
	openControl := fs.Bool("open-control", false, "grant agents' control requests without asking")
	intent := fs.Bool("require-intent", false, "agents must say what each Enter is for")
	var ask, deny multiFlag
	fs.Var(&ask, "ask", "REGEXP: commands matching it run only after you approve (repeatable)")
	fs.Var(&deny, "deny", "REGEXP: commands matching it never run (repeatable)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *id != "" && !termsvc.ValidName(*id) {
		fmt.Fprintf(stderr, "broker term: --id %q: use up to %d letters, digits, _ and -\n", *id, termsvc.MaxName)
		return 2
	}
	var policy session.Policy
	for _, p := range []struct {
		list []string
		into *[]*regexp.Regexp
		flag string
	}{{ask, &policy.Ask, "--ask"}, {deny, &policy.Deny, "--deny"}} {
		for _, expr := range p.list {
			re, err := regexp.Compile(expr)
			if err != nil {
				fmt.Fprintf(stderr, "broker term: %s %q: %v\n", p.flag, expr, err)
				return 2
			}
			*p.into = append(*p.into, re)
		}
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(stderr, "broker term: needs a terminal: %v\n", err)
		return 1
	}
	defer tty.Close()
	code, err := term.Run(ctx, tty, term.Config{
		Session: session.Config{
			ID: localName, Command: fs.Args(), Mode: *mode, Grace: *grace,
			OpenControl: *openControl, RequireIntent: *intent, Policy: policy,
		},
		Attach: func(s *session.Session) (func(), error) {
			lctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				termsvc.Link(lctx, s, termsvc.LinkConfig{
					RuntimeDir: *runtimeDir, SocketPath: *socket, Name: *id, Version: version(),
					OnChange: func(name string) {
						if name == "" {
							s.SetID(localName)
						}
					},
				})
			}()
			return func() { cancel(); <-done }, nil
		},
	})
	if err != nil {
		if errors.Is(err, term.ErrNotTerminal) {
			fmt.Fprintln(stderr, "broker term: needs a terminal")
		} else {
			fmt.Fprintf(stderr, "broker term: %v\n", err)
		}
		return 1
	}
	return code
}
