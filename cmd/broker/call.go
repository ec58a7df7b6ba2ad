package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/rpc"
)

func runCall(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("call", "call [flags] METHOD [PARAMS_JSON]\n\nSends one request as a client and prints the response value as JSON.\nOn an error response prints its code and exits 1.", stderr)
	opts := clientFlags(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	method, params := fs.Arg(0), json.RawMessage("{}")
	if fs.NArg() == 2 {
		params = json.RawMessage(fs.Arg(1))
		if !json.Valid(params) || !strings.HasPrefix(strings.TrimSpace(fs.Arg(1)), "{") {
			fmt.Fprintf(stderr, "broker call: PARAMS_JSON must be a JSON object, e.g. '{\"instanceId\":\"…\"}'\n")
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := client.Dial(ctx, opts())
	if err != nil {
		fmt.Fprintf(stderr, "broker call: %v\n", err)
		return 1
	}
	defer c.Close()
	value, err := c.Call(ctx, method, params)
	if err != nil {
		fmt.Fprintf(stderr, "%s\n", rpc.CodeOf(err))
		return 1
	}
	var out bytes.Buffer
	if err := json.Indent(&out, value, "", "  "); err != nil {
		out.Reset()
		out.Write(value)
	}
	out.WriteByte('\n')
	stdout.Write(out.Bytes())
	return 0
}

func runStatus(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("status", "status [flags]\n\nShows the running broker, its access mode, connections and browsers.", stderr)
	opts := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print the raw broker.status value")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, opts())
	if err != nil {
		fmt.Fprintf(stderr, "broker status: not running or not reachable: %v\n", err)
		return 1
	}
	defer c.Close()
	raw, err := c.Call(ctx, "broker.status", nil)
	if err != nil {
		fmt.Fprintf(stderr, "broker status: %s\n", rpc.CodeOf(err))
		return 1
	}
	if *asJSON {
		stdout.Write(append(raw, '\n'))
		return 0
	}
	var st broker.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintf(stderr, "broker status: unexpected answer: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "broker\t%s (pid %d)\n", st.Version, st.PID)
	fmt.Fprintf(tw, "running since\t%s\n", st.StartedAt.Local().Format(time.DateTime))
	fmt.Fprintf(tw, "access mode\t%s\n", st.AccessMode)
	if len(st.AllowOrigins) > 0 {
		fmt.Fprintf(tw, "allowed origins\t%s\n", strings.Join(st.AllowOrigins, ", "))
	}
	fmt.Fprintf(tw, "connections\t%d of %d (this one included)\n", st.Connections, st.MaxSockets)
	fmt.Fprintf(tw, "browsers\t%d of %d\n", len(st.Instances), st.MaxProviders)
	tw.Flush()
	if len(st.Instances) == 0 {
		fmt.Fprintln(stdout, "\nNo browser is connected. Load the extension (see 'broker install') and keep the browser open.")
		return 0
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tBRAND\tVERSION\tPROFILE")
	for _, in := range st.Instances {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", in.ID, in.Brand, in.Version, in.ProfileLabel)
	}
	tw.Flush()
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
