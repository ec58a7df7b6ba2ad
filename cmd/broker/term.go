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
)

const termSynopsis = `term [flags] [-- COMMAND [ARG…]]

Runs your shell (or COMMAND) in this terminal as a session you may share
with agents. It starts private. The last row is the owner bar; Ctrl-] then
a key acts: s share / stop sharing, y / n answer what the bar asks (admit an
agent, let it in, grant control, accept a proposal, approve a command),
m switch co-pilot / autopilot, t take control back, Ctrl-] again sends
Ctrl-]. Typing anything else also takes control back.`

func runTerm(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("term", termSynopsis, stderr)
	id := fs.String("id", "t1", "the session's name for agents")
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
	code, err := term.Run(ctx, tty, term.Config{Session: session.Config{
		ID: *id, Command: fs.Args(), Mode: *mode, Grace: *grace,
		OpenControl: *openControl, RequireIntent: *intent, Policy: policy,
	}})
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
