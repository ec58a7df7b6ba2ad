package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

const logSynopsis = `log [flags]

Prints what agents asked the browser to do, oldest first: when, which agent
(program and pid), the tab's origin and number, the action and its target
(role and accessible name), and the outcome. Typed text is shown only as
its length; no page content, typed value or password is ever recorded.

An entry reads "interrupted" when the broker stopped before the action's
outcome was recorded: the input may or may not have happened (the action
journal says the same, and never replays it).

The log is STATE/activity.log (see 'broker help serve' for STATE); it keeps
the last 10,000 actions of the last 7 days. It is read directly, so it works
while the broker is stopped. The browser extension's console shows the
same log, live.`

func runLog(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("log", logSynopsis, stderr)
	stateDir := fs.String("state-dir", "", "state directory (default as for serve)")
	follow := fs.Bool("follow", false, "keep printing actions as they finish, until interrupted")
	fs.BoolVar(follow, "f", false, "short for --follow")
	agent := fs.String("agent", "", "only agents whose label contains this text (e.g. a program name or pid)")
	tab := fs.String("tab", "", "only this tab (its number, or the full tab handle)")
	origin := fs.String("origin", "", "only actions on origins containing this text")
	last := fs.Int("n", 50, "print the last N matching actions first (0: all)")
	asJSON := fs.Bool("json", false, "print each entry as one line of JSON")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 || *last < 0 {
		fs.Usage()
		return 2
	}
	path := filepath.Join(paths.StateDir(*stateDir), activity.FileName)
	match := func(e activity.Entry) bool {
		return (*agent == "" || strings.Contains(strings.ToLower(e.Agent), strings.ToLower(*agent))) &&
			(*tab == "" || e.Tab == *tab || tabNumber(e.Tab) == *tab) &&
			(*origin == "" || strings.Contains(e.Origin, *origin))
	}
	show := func(e activity.Entry) {
		if *asJSON {
			b, _ := json.Marshal(e)
			fmt.Fprintf(stdout, "%s\n", b)
			return
		}
		fmt.Fprintln(stdout, logLine(e))
	}

	tail := activity.NewTail(path)
	entries, err := tail.Next()
	if errors.Is(err, activity.ErrNoLog) && *follow {
		entries, err = nil, nil // the broker creates it with the first action
	}
	if err != nil {
		if errors.Is(err, activity.ErrNoLog) {
			fmt.Fprintf(stderr, "broker log: no action has been recorded yet (%s does not exist)\n", path)
			return 0
		}
		fmt.Fprintf(stderr, "broker log: %v\n", err)
		return 1
	}
	var shown []activity.Entry
	for _, e := range entries {
		if match(e) {
			shown = append(shown, e)
		}
	}
	if *last > 0 && len(shown) > *last {
		shown = shown[len(shown)-*last:]
	}
	for _, e := range shown {
		show(e)
	}
	if !*follow {
		switch {
		case len(entries) == 0:
			fmt.Fprintf(stderr, "broker log: no action has been recorded yet (%s)\n", path)
		case len(shown) == 0:
			fmt.Fprintln(stderr, "broker log: no matching action")
		}
		return 0
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
		}
		news, err := tail.Next()
		if err != nil && !errors.Is(err, activity.ErrNoLog) {
			fmt.Fprintf(stderr, "broker log: %v\n", err)
			return 1
		}
		for _, e := range news {
			if e.State != activity.StateRunning && match(e) {
				show(e)
			}
		}
	}
}

// tabNumber is the browser's tab number in a tab handle "instance:N".
func tabNumber(handle string) string {
	if i := strings.LastIndexByte(handle, ':'); i >= 0 {
		return handle[i+1:]
	}
	return handle
}

// logLine is one entry for a person: when, who, where, what, and how it
// ended.
func logLine(e activity.Entry) string {
	return fmt.Sprintf("%s  %-24s  %-32s  tab %-5s  %s → %s", e.Time.Local().Format(time.DateTime), e.Agent, e.Origin,
		tabNumber(e.Tab), describeAction(e), describeResult(e))
}

// describeAction says what the agent asked for, in words.
func describeAction(e activity.Entry) string {
	var b strings.Builder
	if e.Step != nil {
		fmt.Fprintf(&b, "batch step %d: ", *e.Step+1)
	}
	target := "an element it no longer had on the page"
	if e.Role != "" || e.Name != "" {
		target = strings.TrimSpace(e.Role + " " + fmt.Sprintf("%q", e.Name))
	}
	chars := func() string {
		if e.TextLength == nil {
			return "text"
		}
		if *e.TextLength == 1 {
			return "1 character"
		}
		return fmt.Sprintf("%d characters", *e.TextLength)
	}
	switch e.Kind {
	case "click":
		fmt.Fprintf(&b, "click %s", target)
	case "fill":
		fmt.Fprintf(&b, "fill %s with %s", target, chars())
	case "type":
		fmt.Fprintf(&b, "type %s into %s", chars(), target)
	case "append":
		fmt.Fprintf(&b, "append %s to %s", chars(), target)
	case "press":
		fmt.Fprintf(&b, "press %s on %s", e.Key, target)
	default:
		fmt.Fprintf(&b, "%s %s", e.Kind, target)
		if e.TextLength != nil {
			fmt.Fprintf(&b, " (%s)", chars())
		}
	}
	return b.String()
}

// describeResult says how an entry ended (the console says the same).
func describeResult(e activity.Entry) string {
	switch e.State {
	case activity.StateRunning:
		return "no outcome recorded yet"
	case activity.StateInterrupted:
		return "interrupted: the broker stopped before the outcome was recorded; the input may have happened"
	}
	code := ""
	if e.Code != "" {
		code = " (" + e.Code + ")"
	}
	if e.Dispatch == "notDispatched" {
		if e.Outcome == "cancelled" {
			return "cancelled: nothing was sent to the page" + code
		}
		return "refused: nothing was sent to the page" + code
	}
	switch e.Outcome {
	case "succeeded":
		return "done, and the expected result appeared"
	case "failed":
		return "done, but the expected result did not appear" + code
	case "cancelled":
		return "cancelled after it was sent to the page" + code
	}
	if e.Dispatch == "observed" {
		return "done (the agent asked for no check)"
	}
	return "sent to the page; what it did is not known" + code
}

const consoleSynopsis = `console [flags]

Opens the owner's console in your browser: the broker's mode, every agent
that is connected (what it may do where, and for how long), the questions
waiting for you, Stop for one agent or all, and the activity log.

It asks the browser extension to open (or focus) its console tab. When no
browser is connected it prints the console's address instead: open it in
the browser where the extension is installed.`

func runConsole(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("console", consoleSynopsis, stderr)
	opts := clientFlags(fs)
	printOnly := fs.Bool("print", false, "only print the console's address")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	url := install.ExtensionOrigin(install.PinnedExtensionID) + "console.html"
	if *printOnly {
		fmt.Fprintln(stdout, url)
		return 0
	}
	o := opts()
	o.AdmissionWait, o.OnAdmissionWait = admissionWait, admissionHint("broker console", stderr)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second+admissionWait)
	defer cancel()
	c, err := client.Dial(dctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "broker console: the broker is not reachable (%v)\n", err)
		fmt.Fprintf(stdout, "Open the console in the browser where the extension is installed:\n  %s\n", url)
		return 1
	}
	defer c.Close()
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	raw, err := c.Call(cctx, wire.BrokerConsole, nil)
	var v struct {
		Opened bool `json:"opened"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "broker console: %s\n", rpc.CodeOf(err))
	case v.Opened:
		fmt.Fprintln(stdout, "The console is open in your browser.")
		return 0
	default:
		fmt.Fprintln(stderr, "broker console: no browser with the extension is connected to the broker")
	}
	fmt.Fprintf(stdout, "Open the console in the browser where the extension is installed:\n  %s\n", url)
	return 1
}
