package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/term/termsvc"
	"github.com/dsh-browser/broker/wire"
)

const callSynopsis = `call [flags] METHOD [PARAMS_JSON]
       broker call [flags]            (a session: one request per line on stdin)

Sends one request as a client and prints the response value as indented JSON.
On an error response prints its code and exits 1.

Without METHOD it keeps one connection open and reads requests from standard
input, one per line as "METHOD [PARAMS_JSON]", printing each value as one
line of JSON ("error CODE" for a refusal) and each event as "event NAME
VALUE". Leases belong to their connection, so claim, observe and act in one
session:

  $ broker call
  > browser.tabs {"sessionId":"me","instanceId":"…"}
  > browser.claim {"sessionId":"me","instanceId":"…","tab":"…"}`

func runCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("call", callSynopsis, stderr)
	opts := clientFlags(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "give up on a request after this long")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	var single *request
	if fs.NArg() > 0 {
		r, err := parseRequest(strings.Join(fs.Args(), " "))
		if err != nil {
			fmt.Fprintf(stderr, "broker call: %v\n", err)
			return 2
		}
		single = r
	}
	var out sync.Mutex
	o := opts()
	if single == nil {
		o.OnEvent = func(ev *wire.Envelope) {
			out.Lock()
			fmt.Fprintf(stdout, "event %s %s\n", ev.Event, ev.Value)
			out.Unlock()
		}
	}
	o.AdmissionWait, o.OnAdmissionWait = admissionWait, admissionHint("broker call", stderr)
	dctx, cancel := context.WithTimeout(ctx, *timeout+admissionWait)
	c, err := client.Dial(dctx, o)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "broker call: %v\n", err)
		return 1
	}
	defer c.Close()
	do := func(r *request) (json.RawMessage, error) {
		rctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		return c.Call(rctx, r.method, r.params)
	}

	if single != nil {
		value, err := do(single)
		if err != nil {
			fmt.Fprintf(stderr, "%s\n", rpc.CodeOf(err))
			return 1
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, value, "", "  "); err != nil {
			buf.Reset()
			buf.Write(value)
		}
		buf.WriteByte('\n')
		stdout.Write(buf.Bytes())
		return 0
	}

	interactive := isTerminal(stdin)
	prompt := func() {
		if interactive {
			out.Lock()
			fmt.Fprint(stdout, "> ")
			out.Unlock()
		}
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	failed := false
	for prompt(); sc.Scan(); prompt() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := parseRequest(line)
		if err != nil {
			fmt.Fprintf(stderr, "broker call: %v\n", err)
			failed = true
			continue
		}
		value, err := do(r)
		out.Lock()
		if err != nil {
			fmt.Fprintf(stdout, "error %s\n", rpc.CodeOf(err))
			failed = true
		} else {
			fmt.Fprintf(stdout, "%s\n", value)
		}
		out.Unlock()
		select {
		case <-c.Done():
			fmt.Fprintln(stderr, "broker call: the broker closed the connection")
			return 1
		default:
		}
	}
	if failed {
		return 1
	}
	return 0
}

// admissionWait is how long the CLI waits for the owner to admit it when
// the broker runs with --admission=prompt (the extension's window waits 60 s).
const admissionWait = 70 * time.Second

func admissionHint(cmd string, stderr io.Writer) func() {
	return func() {
		fmt.Fprintf(stderr, "%s: the broker asks you to admit each program that connects: click Allow for this one (pid %d) in the browser's window; waiting up to %v\n", cmd, os.Getpid(), admissionWait)
	}
}

type request struct {
	method string
	params json.RawMessage
}

// parseRequest reads "METHOD [PARAMS_JSON]".
func parseRequest(line string) (*request, error) {
	method, params, _ := strings.Cut(strings.TrimSpace(line), " ")
	params = strings.TrimSpace(params)
	if !wire.ValidName(method) {
		return nil, fmt.Errorf("%q is not a method name", method)
	}
	if params == "" {
		params = "{}"
	}
	if !json.Valid([]byte(params)) || !strings.HasPrefix(params, "{") {
		return nil, fmt.Errorf(`PARAMS_JSON must be a JSON object, e.g. '{"instanceId":"…"}'`)
	}
	return &request{method, json.RawMessage(params)}, nil
}

func runStatus(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("status", "status [flags]\n\nShows the running broker, its access mode, connections and browsers.", stderr)
	opts := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print the raw broker.status value")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	o := opts()
	o.AdmissionWait, o.OnAdmissionWait = admissionWait, admissionHint("broker status", stderr)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second+admissionWait)
	defer cancel()
	c, err := client.Dial(dctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "broker status: not running, not reachable or not admitted: %v\n", err)
		return 1
	}
	defer c.Close()
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	defer scancel()
	raw, err := c.Call(sctx, "broker.status", nil)
	if err != nil {
		fmt.Fprintf(stderr, "broker status: %s\n", rpc.CodeOf(err))
		return 1
	}
	if *asJSON {
		stdout.Write(append(raw, '\n'))
		return 0
	}
	var st broker.Status
	var bst browser.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintf(stderr, "broker status: unexpected answer: %v\n", err)
		return 1
	}
	if sec, ok := st.Services[browser.Kind]; ok {
		if err := json.Unmarshal(sec, &bst); err != nil {
			fmt.Fprintf(stderr, "broker status: unexpected browser section: %v\n", err)
			return 1
		}
	}
	var tst termsvc.Status
	_, hasTerminals := st.Services[termsvc.Kind]
	if hasTerminals {
		if err := json.Unmarshal(st.Services[termsvc.Kind], &tst); err != nil {
			fmt.Fprintf(stderr, "broker status: unexpected terminal section: %v\n", err)
			return 1
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "broker\t%s (pid %d)\n", st.Version, st.PID)
	fmt.Fprintf(tw, "running since\t%s\n", st.StartedAt.Local().Format(time.DateTime))
	fmt.Fprintf(tw, "access mode\t%s\n", bst.AccessMode)
	if len(bst.AllowOrigins) > 0 {
		fmt.Fprintf(tw, "allowed origins\t%s\n", strings.Join(bst.AllowOrigins, ", "))
	}
	if st.Admission == broker.AdmissionPrompt {
		fmt.Fprintf(tw, "admission\tprompt: each new client waits until you allow it in the browser or a terminal's bar (%d pending)\n", len(st.Pending))
	}
	fmt.Fprintf(tw, "connections\t%d of %d (this one included)\n", st.Connections, st.MaxSockets)
	fmt.Fprintf(tw, "browsers\t%d of %d\n", len(bst.Instances), st.MaxProviders)
	fmt.Fprintf(tw, "leases\t%d\n", len(bst.Leases))
	if hasTerminals {
		var names []string
		for _, ts := range tst.Sessions {
			sharing := "private"
			if ts.Shared {
				sharing = fmt.Sprintf("shared with %d", ts.Participants)
			}
			names = append(names, ts.ID+" "+sharing)
		}
		fmt.Fprintf(tw, "terminals\t%d", len(tst.Sessions))
		if len(names) > 0 {
			fmt.Fprintf(tw, " (%s)", strings.Join(names, ", "))
		}
		fmt.Fprintf(tw, "; agents connect to %s\n", tst.AgentSocket)
	}
	if j := st.Journal; j != nil {
		if j.Problem != "" {
			fmt.Fprintf(tw, "journal\tUNAVAILABLE: %s\n", j.Problem)
			fmt.Fprintf(tw, "\tactions are refused until it is fixed: %s\n", j.Fix)
		} else {
			fmt.Fprintf(tw, "journal\t%s (%d actions fenced, %d uncertain)\n", j.Path, j.Entries, j.Uncertain)
		}
		if j.Notice != "" {
			fmt.Fprintf(tw, "\tnote: %s\n", j.Notice)
		}
	} else {
		fmt.Fprintf(tw, "journal\tnone (action fences kept in memory)\n")
	}
	if a := st.Activity; a != nil {
		if a.Problem != nil {
			fmt.Fprintf(tw, "activity log\tUNAVAILABLE: %s (%s); actions are shown for this run only\n", a.Problem.Reason, a.Problem.Fix)
		} else {
			fmt.Fprintf(tw, "activity log\t%s (%d actions; broker log, or the browser's console)\n", a.Path, a.Entries)
		}
	}
	tw.Flush()
	if len(st.Pending) > 0 {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PENDING\tPROGRAM\tWAITING SINCE\tASKING THE OWNER")
		for _, p := range st.Pending {
			asked := "no (asks again on its next request)"
			if p.Asking {
				asked = "yes"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.ID, p.Label, p.Since.Local().Format(time.TimeOnly), asked)
		}
		tw.Flush()
	}
	if len(bst.Instances) == 0 {
		fmt.Fprintln(stdout, "\nNo browser is connected. Load the extension (see 'broker install') and keep the browser open.")
		return 0
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tBRAND\tVERSION\tPROFILE")
	for _, in := range bst.Instances {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", in.ID, in.Brand, in.Version, in.ProfileLabel)
	}
	tw.Flush()
	if len(bst.Leases) > 0 {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LEASE\tTAB\tSCOPE\tORIGIN\tEXPIRES")
		for _, l := range bst.Leases {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.ID, l.Tab, l.Scope, l.Origin, l.ExpiresAt.Local().Format(time.TimeOnly))
		}
		tw.Flush()
	}
	return 0
}

// clientFlags adds the flags that locate the broker; call the returned
// function after parsing.
func clientFlags(fs *flag.FlagSet) func() client.Options {
	rd := fs.String("runtime-dir", "", "runtime directory of the broker to reach")
	sock := fs.String("socket", "", "socket path (default RUNTIME/broker.sock)")
	return func() client.Options {
		return client.Options{RuntimeDir: *rd, SocketPath: *sock}
	}
}
