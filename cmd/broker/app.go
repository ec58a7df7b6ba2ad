package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/snug/agent"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/contract"
	"github.com/dsh-browser/broker/snug/hub"
	"github.com/dsh-browser/broker/snug/samples"
	"github.com/dsh-browser/broker/snug/userfile"
	"github.com/dsh-browser/broker/wire"
)

const appSynopsis = `app COMMAND [flags] [ARGS]

Your Snug micro-apps: single HTML files that run in a sandboxed tab of your
browser, keep their data in the broker (STATE/user.snug) and think through
the agent you choose. APP is an app's id or its name.

  broker app install FILE.html [--name NAME] [--contract FILE.json]
  broker app install --sample notebook|tasks
                                      a bundled sample app (tasks proposes its
                                      connection too)
  broker app list
  broker app open APP                 show it in a browser tab
  broker app update APP FILE.html     save a new version (open tabs reload)
  broker app versions APP
  broker app revert APP VERSION       copy VERSION forward as the newest
  broker app reset APP                copy the installed version forward
  broker app source APP [--version N] print a version's HTML
  broker app remove APP               remove it with all its data
  broker app agent                    show where app turns go
  broker app agent --endpoint URL --model M
                                      an OpenAI-compatible endpoint; its API key
                                      is read from standard input (never argv)
  broker app agent --mcp [--mcp-host NAME]
                                      your MCP host, through sampling on a
                                      'broker mcp' connection
  broker app agent --none             no agent (apps still store data)
  broker app agent --confirm          confirm agent settings that came with an imported file
  broker app export FILE [--secrets] [--protect] [--force]
                                      all your apps and data in one file to move to
                                      another machine; secrets (agent keys, connection
                                      credentials) only with --secrets; --protect asks
                                      for a passphrase on standard input (never argv)
  broker app export FILE --app APP    one app's database, as a standalone SQLite file
  broker app import FILE [--recovery-key]
                                      replace your apps and data with an exported file
                                      (a protected one asks for its passphrase, or its
                                      recovery key); what it holds is checked, and the
                                      agent settings in it wait for your confirmation
  broker app connections APP          the APIs the app may use with your credentials
  broker app connections APP --show SLOT | --declare FILE.json | --revoke SLOT
  broker app connections APP --credential SLOT.FIELD
                                      store a credential, read from standard
                                      input (never argv); approve connections in
                                      the app's tab (Connections)`

func runApp(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(stderr, "Usage: broker %s\n", appSynopsis)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub, rest := args[0], args[1:]
	run, ok := map[string]func(*appCmd) int{
		"install":  appInstall,
		"list":     appList,
		"open":     appOpen,
		"update":   appUpdate,
		"versions": appVersions,
		"revert":   appRevert,
		"reset":    appReset,
		"source":   appSource,
		"remove":   appRemove,
		"agent":    appAgent,
		"export":   appExport,
		"import":   appImport,

		"connections": appConnections,
	}[sub]
	if !ok {
		fmt.Fprintf(stderr, "broker app: unknown command %q\n\nUsage: broker %s\n", sub, appSynopsis)
		return 2
	}
	a := &appCmd{ctx: ctx, name: sub, stdin: stdin, stdout: stdout, stderr: stderr,
		fs: newFlags("app "+sub, appSynopsis, stderr)}
	a.opts = clientFlags(a.fs)
	a.args = rest
	return run(a)
}

// appCmd is one `broker app` command: its flags, its broker connection.
type appCmd struct {
	ctx    context.Context
	name   string
	fs     *flag.FlagSet
	opts   func() client.Options
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// parse parses the flags (they may come before or after the arguments)
// and checks the number of arguments.
func (a *appCmd) parse(minArgs, maxArgs int) ([]string, int, bool) {
	var flags, pos []string
	for i := 0; i < len(a.args); i++ {
		s := a.args[i]
		if strings.HasPrefix(s, "-") && s != "-" {
			flags = append(flags, s)
			name := strings.TrimLeft(s, "-")
			if f := a.fs.Lookup(name); f != nil && !strings.Contains(name, "=") && !isBool(f) && i+1 < len(a.args) {
				i++
				flags = append(flags, a.args[i])
			}
			continue
		}
		pos = append(pos, s)
	}
	if code, done := parseFlags(a.fs, flags); done {
		return nil, code, false
	}
	if len(pos) < minArgs || len(pos) > maxArgs {
		a.fs.Usage()
		return nil, 2, false
	}
	return pos, 0, true
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (a *appCmd) fail(format string, args ...any) int {
	fmt.Fprintf(a.stderr, "broker app %s: "+format+"\n", append([]any{a.name}, args...)...)
	return 1
}

// call sends one request and decodes its value into out; it prints what
// a refusal means for this command and returns the exit code.
func (a *appCmd) call(method string, params, out any) int {
	o := a.opts()
	o.AdmissionWait, o.OnAdmissionWait = admissionWait, admissionHint("broker app", a.stderr)
	dctx, cancel := context.WithTimeout(a.ctx, 5*time.Second+admissionWait)
	c, err := client.Dial(dctx, o)
	cancel()
	if err != nil {
		return a.fail("%v", err)
	}
	defer c.Close()
	// Params are sent as written: no HTML escaping of an app's < and >,
	// so an app of MaxHTMLBytes fits one request.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(params); err != nil {
		return a.fail("%v", err)
	}
	rctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	raw, err := c.Call(rctx, method, json.RawMessage(bytes.TrimSpace(buf.Bytes())))
	if err != nil {
		return a.fail("%s", a.explain(method, err))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return a.fail("unexpected answer: %v", err)
		}
	}
	return 0
}

// explain says what a refusal means, by its code (the wire carries only
// the code).
func (a *appCmd) explain(method string, err error) string {
	code := rpc.CodeOf(err)
	switch {
	case code == wire.CodeStaleTarget && method != apps.MethodAgentConfirm:
		return "no such app or version ('broker app list', 'broker app versions APP')"
	case code == wire.CodeAmbiguousTarget:
		return "several apps have that name: use the app's id ('broker app list')"
	case code == wire.CodeConnectionLost && method == apps.MethodOpen:
		return "no browser runs the DSH extension now: load it (see 'broker install') and keep the browser open"
	case code == wire.CodeBrokerStateUnsafe:
		return "the Snug user database is unavailable: 'broker status --json' says why"
	case code == wire.CodePolicyDenied && method == apps.MethodAgentSet:
		return "the endpoint was refused: use https, or plain http only to this machine"
	case code == wire.CodePolicyDenied && strings.HasPrefix(method, "snug.connection"):
		return "the connection's state does not allow that: it is revoked (proposals for it are refused), or not approved ('broker app connections APP')"
	case code == wire.CodeQueueFull && method == apps.MethodConnectionDeclare:
		return fmt.Sprintf("the app has %d connections, the most it may have (revoked ones count)", conn.MaxSlotsPerApp)
	case code == wire.CodeInvalidRequest && strings.HasPrefix(method, "snug.connection"):
		return "the broker refused it: check the requirement, the slot and the field ('broker app connections APP --show SLOT')"
	case code == wire.CodeQueueFull:
		return "the Snug user database is full (64 MiB)"
	case code == wire.CodeStaleTarget && method == apps.MethodAgentConfirm:
		return "the agent settings changed since they were shown: check them again with 'broker app agent'"
	case code == wire.CodeInvalidRequest && method == apps.MethodExport:
		return "the broker could not write the file there (does it exist already? use --force to replace it)"
	case code == wire.CodeInvalidRequest:
		return "the broker refused the request as invalid"
	case code != "":
		return string(code)
	}
	return err.Error()
}

// readHTML reads an app file and checks what the broker would refuse, so
// that the user hears why.
func (a *appCmd) readHTML(path string) (string, int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", a.fail("%v", err)
	}
	if len(data) == 0 || len(data) > apps.MaxHTMLBytes {
		return "", a.fail("%s is %d bytes; an app must be 1 to %d bytes (load big libraries from cdn.jsdelivr.net, cdnjs.cloudflare.com or unpkg.com)",
			path, len(data), apps.MaxHTMLBytes)
	}
	return string(data), 0
}

// readContract reads and checks a runtime contract file.
func (a *appCmd) readContract(path string) (string, int) {
	if path == "" {
		return "", 0
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", a.fail("%v", err)
	}
	if _, err := contract.Parse(string(data)); err != nil {
		return "", a.fail("%s: %v", path, err)
	}
	return string(data), 0
}

func appInstall(a *appCmd) int {
	name := a.fs.String("name", "", "the app's name (default: the HTML's <title>)")
	contractFile := a.fs.String("contract", "", "a runtime contract (JSON, Snug Part IV §18.1) for its turns")
	sample := a.fs.String("sample", "", "install a bundled sample instead of a file: notebook or tasks")
	pos, code, ok := a.parse(0, 1)
	if !ok {
		return code
	}
	var html string
	switch {
	case *sample != "" && len(pos) == 0:
		if html, ok = samples.All[*sample]; !ok {
			return a.fail("no sample %q; the samples are: notebook, tasks", *sample)
		}
		pos = []string{*sample}
	case *sample == "" && len(pos) == 1:
		if html, code = a.readHTML(pos[0]); code != 0 {
			return code
		}
	default:
		a.fs.Usage()
		return 2
	}
	c, code := a.readContract(*contractFile)
	if code != 0 {
		return code
	}
	if *name == "" && hub.TitleOf(html) == "" {
		*name = strings.TrimSuffix(filepath.Base(pos[0]), filepath.Ext(pos[0]))
	}
	var s apps.Saved
	if code := a.call(apps.MethodInstall, apps.InstallParams{HTML: html, DisplayName: *name, RuntimeContract: c}, &s); code != 0 {
		return code
	}
	fmt.Fprintf(a.stdout, "installed %q as %s (version 1)\nopen it with: broker app open %s\n", s.App.DisplayName, s.App.ID, s.App.ID)
	if *sample == "tasks" {
		// The sample's connection, proposed on your behalf: nothing is
		// granted until you approve it in the app's tab.
		var c apps.Connection
		if code := a.call(apps.MethodConnectionDeclare, apps.DeclareParams{App: s.App.ID, Requirement: samples.TasksConnection}, &c); code != 0 {
			return code
		}
		fmt.Fprintf(a.stdout, "it proposes a connection to %s (%s); connect it in the app's tab (Connections)\n", c.Provider, strings.Join(c.Ceiling, " "))
	}
	return 0
}

func appList(a *appCmd) int {
	if _, code, ok := a.parse(0, 0); !ok {
		return code
	}
	var list []apps.App
	if code := a.call(apps.MethodApps, apps.AppsParams{}, &list); code != 0 {
		return code
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "No apps installed. Install one with: broker app install FILE.html")
		return 0
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tVERSION\tDATA\tOPEN\tUPDATED")
	for _, ap := range list {
		data := "-"
		if ap.UsesDB {
			data = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%d\t%s\t%d\t%s\n", ap.ID, ap.IconEmoji, ap.DisplayName, ap.CurrentVersion, data, ap.Open,
			ap.UpdatedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
	return 0
}

func appOpen(a *appCmd) int {
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	var o apps.Opened
	if code := a.call(apps.MethodOpen, apps.AppRef{App: pos[0]}, &o); code != 0 {
		return code
	}
	fmt.Fprintf(a.stdout, "opened %q (version %d) in your browser\n", o.App.DisplayName, o.App.CurrentVersion)
	return 0
}

func (a *appCmd) printSaved(s apps.Saved) {
	fmt.Fprintf(a.stdout, "%q is now at version %d", s.App.DisplayName, s.Version.Version)
	if s.Reloaded > 0 {
		fmt.Fprintf(a.stdout, " (%d open tab(s) reloaded)", s.Reloaded)
	}
	fmt.Fprintln(a.stdout)
}

func appUpdate(a *appCmd) int {
	note := a.fs.String("note", "", "what changed")
	contractFile := a.fs.String("contract", "", "a new runtime contract (default: the current one is kept)")
	pos, code, ok := a.parse(2, 2)
	if !ok {
		return code
	}
	html, code := a.readHTML(pos[1])
	if code != 0 {
		return code
	}
	c, code := a.readContract(*contractFile)
	if code != 0 {
		return code
	}
	var s apps.Saved
	if code := a.call(apps.MethodUpdate, apps.UpdateParams{App: pos[0], HTML: html, Note: *note, RuntimeContract: c}, &s); code != 0 {
		return code
	}
	a.printSaved(s)
	return 0
}

func appVersions(a *appCmd) int {
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	var vs []apps.Version
	if code := a.call(apps.MethodVersions, apps.AppRef{App: pos[0]}, &vs); code != 0 {
		return code
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSAVED\tBYTES\tNOTE")
	for _, v := range vs {
		mark := ""
		if v.Current {
			mark = " (current)"
		}
		if v.Pinned {
			mark += " (pinned)"
		}
		fmt.Fprintf(tw, "%d%s\t%s\t%d\t%s\n", v.Version, mark, v.CreatedAt.Local().Format(time.DateTime), v.HTMLBytes, v.Note)
	}
	tw.Flush()
	return 0
}

func appRevert(a *appCmd) int {
	pos, code, ok := a.parse(2, 2)
	if !ok {
		return code
	}
	n, err := strconv.Atoi(strings.TrimPrefix(pos[1], "v"))
	if err != nil || n < 1 {
		return a.fail("VERSION must be a version number, as 'broker app versions' lists them")
	}
	var s apps.Saved
	if code := a.call(apps.MethodRevert, apps.RevertParams{App: pos[0], Version: n}, &s); code != 0 {
		return code
	}
	a.printSaved(s)
	return 0
}

func appReset(a *appCmd) int {
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	var s apps.Saved
	if code := a.call(apps.MethodReset, apps.AppRef{App: pos[0]}, &s); code != 0 {
		return code
	}
	a.printSaved(s)
	return 0
}

func appSource(a *appCmd) int {
	version := a.fs.Int("version", 0, "the version to print (default: the current one)")
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	var s apps.Source
	if code := a.call(apps.MethodSource, apps.SourceParams{App: pos[0], Version: *version}, &s); code != 0 {
		return code
	}
	io.WriteString(a.stdout, s.HTML)
	return 0
}

func appRemove(a *appCmd) int {
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	if code := a.call(apps.MethodRemove, apps.AppRef{App: pos[0]}, nil); code != 0 {
		return code
	}
	fmt.Fprintf(a.stdout, "removed %s and all its data\n", pos[0])
	return 0
}

func appAgent(a *appCmd) int {
	endpoint := a.fs.String("endpoint", "", "an OpenAI-compatible API base URL (…/v1); its key is read from standard input")
	model := a.fs.String("model", "", "the model to ask")
	keepKey := a.fs.Bool("keep-key", false, "keep the stored key instead of reading one")
	useMCP := a.fs.Bool("mcp", false, "answer app turns through your MCP host's sampling ('broker mcp')")
	mcpHost := a.fs.String("mcp-host", "", "with --mcp: the MCP host's name (default: the latest that offered sampling)")
	none := a.fs.Bool("none", false, "no agent: app turns are refused, storage works")
	confirm := a.fs.Bool("confirm", false, "confirm the agent settings that came with an imported file, as 'broker app agent' shows them")
	if _, code, ok := a.parse(0, 0); !ok {
		return code
	}
	if *confirm {
		if *endpoint != "" || *useMCP || *none {
			return a.fail("--confirm takes no other choice")
		}
		var ag apps.Agent
		if code := a.call(apps.MethodAgentGet, apps.AppsParams{}, &ag); code != 0 {
			return code
		}
		if !ag.Unconfirmed {
			a.printAgent(ag)
			return 0
		}
		if code := a.call(apps.MethodAgentConfirm, apps.AgentConfirmParams{Provider: ag.Provider, Endpoint: ag.Endpoint, Model: ag.Model, MCPHost: ag.MCPHost}, &ag); code != 0 {
			return code
		}
		fmt.Fprint(a.stdout, "confirmed: ")
		a.printAgent(ag)
		return 0
	}
	var p apps.AgentSetParams
	switch {
	case *endpoint != "" && !*useMCP && !*none:
		if _, err := agent.CheckEndpoint(*endpoint); err != nil {
			return a.fail("%v", err)
		}
		p = apps.AgentSetParams{Provider: apps.AgentOpenAI, Endpoint: *endpoint, Model: *model, KeepKey: *keepKey}
		if !*keepKey {
			key, err := readKey(a.stdin, a.stderr, *endpoint)
			if err != nil {
				return a.fail("cannot read the API key: %v", err)
			}
			p.Key = key
		}
	case *useMCP && *endpoint == "" && !*none:
		p = apps.AgentSetParams{Provider: apps.AgentSampling, MCPHost: *mcpHost, Model: *model}
	case *none && *endpoint == "" && !*useMCP:
		p = apps.AgentSetParams{Provider: apps.AgentNone}
	case *endpoint == "" && !*useMCP && !*none:
		var ag apps.Agent
		if code := a.call(apps.MethodAgentGet, apps.AppsParams{}, &ag); code != 0 {
			return code
		}
		a.printAgent(ag)
		return 0
	default:
		return a.fail("choose one of --endpoint, --mcp and --none")
	}
	var ag apps.Agent
	if code := a.call(apps.MethodAgentSet, p, &ag); code != 0 {
		return code
	}
	a.printAgent(ag)
	return 0
}

func (a *appCmd) printAgent(ag apps.Agent) {
	switch ag.Provider {
	case apps.AgentOpenAI:
		key := "no key"
		if ag.HasKey {
			key = "a key stored"
		}
		fmt.Fprintf(a.stdout, "app turns go to %s, model %q (%s)\n", ag.Endpoint, ag.Model, key)
	case apps.AgentSampling:
		host := "the latest MCP host that offers sampling"
		if ag.MCPHost != "" {
			host = fmt.Sprintf("the MCP host %q", ag.MCPHost)
		}
		fmt.Fprintf(a.stdout, "app turns go to %s through 'broker mcp'; offering now: %s\n", host, orNone(ag.Samplers))
	default:
		fmt.Fprintln(a.stdout, "no agent: apps store data, and their agent requests are refused")
	}
	if ag.Unconfirmed && ag.Provider != apps.AgentNone {
		fmt.Fprintln(a.stdout, "these settings came with an imported file: app turns wait until you confirm them with 'broker app agent --confirm'\n(or choose again with 'broker app agent --endpoint URL --model M')")
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// readKey reads the API key: hidden, after a prompt, from a terminal; the
// first line otherwise. An empty key means the endpoint needs none.
func readKey(stdin io.Reader, stderr io.Writer, endpoint string) (string, error) {
	return readSecret(stdin, stderr, fmt.Sprintf("API key for %s (input hidden; empty for none): ", endpoint))
}

// readSecret reads one secret line: hidden, after prompt, from a terminal;
// the first line of standard input otherwise (a secret never comes from
// argv, where other users' ps can see it).
func readSecret(stdin io.Reader, stderr io.Writer, prompt string) (string, error) {
	if f, ok := stdin.(*os.File); ok {
		if old, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			fmt.Fprint(stderr, prompt)
			hidden := *old
			hidden.Lflag &^= unix.ECHO
			unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, &hidden)
			defer func() {
				unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, old)
				fmt.Fprintln(stderr)
			}()
		}
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 8192)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func appExport(a *appCmd) int {
	secrets := a.fs.Bool("secrets", false, "include your secrets (agent keys, connection credentials); by default none leaves this machine")
	protect := a.fs.Bool("protect", false, "protect the file with a passphrase, read from standard input")
	force := a.fs.Bool("force", false, "replace FILE if it exists")
	appRef := a.fs.String("app", "", "export only this app's database, as a standalone SQLite file")
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	if *appRef != "" && (*secrets || *protect) {
		return a.fail("--app exports one app's data only: no --secrets, no --protect")
	}
	path, err := filepath.Abs(pos[0])
	if err != nil {
		return a.fail("%v", err)
	}
	if _, err := os.Stat(path); err == nil && !*force {
		return a.fail("%s exists; use --force to replace it", path)
	}
	p := apps.ExportParams{Path: path, App: *appRef, Secrets: *secrets, Overwrite: *force}
	if *protect {
		fmt.Fprintln(a.stderr, "The file will be encrypted with a passphrase only you hold, and a recovery key shown once.\n"+
			"If you lose both, the data in the file is gone: there is no escrow and no reset.")
		pass, err := readSecret(a.stdin, a.stderr, "Passphrase (input hidden): ")
		if err != nil {
			return a.fail("cannot read the passphrase: %v", err)
		}
		if pass == "" {
			return a.fail("an empty passphrase protects nothing")
		}
		if isTerminal(a.stdin) {
			again, err := readSecret(a.stdin, a.stderr, "The passphrase again: ")
			if err != nil || again != pass {
				return a.fail("the passphrases differ")
			}
		}
		p.Passphrase = pass
	}
	var out apps.Exported
	if code := a.call(apps.MethodExport, p, &out); code != 0 {
		return code
	}
	what := "all your apps and data"
	if out.App != "" {
		what = "the data of app " + out.App
	}
	fmt.Fprintf(a.stdout, "exported %s to %s (%d bytes)\n", what, out.Path, out.Bytes)
	switch {
	case out.App != "":
	case out.Secrets:
		fmt.Fprintln(a.stdout, "the file holds your secrets (agent keys, connection credentials): keep it as safe as they are")
	default:
		fmt.Fprintln(a.stdout, "no secrets are in it (add --secrets to carry them); agent keys and connection credentials stay here")
	}
	if out.Protected {
		fmt.Fprintf(a.stdout, "it is protected with your passphrase. Its recovery key opens it too — write it down now, it is shown only once:\n\n    %s\n\n", out.RecoveryKey)
	}
	return 0
}

func appImport(a *appCmd) int {
	useRecovery := a.fs.Bool("recovery-key", false, "open a protected file with its recovery key instead of its passphrase")
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	path, err := filepath.Abs(pos[0])
	if err != nil {
		return a.fail("%v", err)
	}
	head := make([]byte, 16)
	f, err := os.Open(path)
	if err != nil {
		return a.fail("%v", err)
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	p := apps.ImportParams{Path: path}
	if userfile.Detect(head[:n]) == userfile.Protected {
		if *useRecovery {
			p.RecoveryKey, err = readSecret(a.stdin, a.stderr, "Recovery key: ")
		} else {
			p.Passphrase, err = readSecret(a.stdin, a.stderr, "Passphrase of "+filepath.Base(path)+" (input hidden): ")
		}
		if err != nil {
			return a.fail("cannot read the secret: %v", err)
		}
	}
	var rep apps.Imported
	if code := a.call(apps.MethodImport, p, &rep); code != 0 {
		return code
	}
	switch rep.Status {
	case apps.ImportDone:
	case apps.ImportLocked:
		return a.fail("the passphrase (or recovery key) does not open %s; nothing was changed", path)
	case apps.ImportCorrupt:
		return a.fail("%s is a protected file that is damaged (%s); nothing was changed", path, rep.Detail)
	case apps.ImportUnsupported:
		return a.fail("%s comes from a newer version of Snug: upgrade the broker to import it; nothing was changed", path)
	case apps.ImportNotUserFile:
		return a.fail("%s is not a Snug user file (%s); nothing was changed", path, rep.Detail)
	case apps.ImportTooLarge:
		return a.fail("%s is larger than a user file can be (64 MiB); nothing was changed", path)
	default:
		return a.fail("cannot import %s: %s (%s); nothing was changed", path, rep.Status, rep.Detail)
	}
	fmt.Fprintf(a.stdout, "imported %d app(s) from %s\n", rep.Apps, path)
	fmt.Fprintf(a.stdout, "what you had before is kept in %s\n", rep.Backup)
	if rep.ContractsDropped > 0 {
		fmt.Fprintf(a.stdout, "%d runtime contract(s) in the file were not used: a contract shapes the model's instructions, and the file is not trusted to set them; those versions run on generic instructions\n", rep.ContractsDropped)
	}
	c := rep.Connections
	if c.Restored > 0 {
		fmt.Fprintf(a.stdout, "%d connection(s) keep the approval you gave them here\n", c.Restored)
	}
	if c.Declared > 0 {
		fmt.Fprintf(a.stdout, "%d connection(s) need your review and approval again before an app may use them\n", c.Declared)
	}
	if len(c.Dropped) > 0 {
		fmt.Fprintf(a.stdout, "%d connection(s) could not be used and were left out:\n", len(c.Dropped))
		for _, d := range c.Dropped {
			fmt.Fprintf(a.stdout, "  %s\n", d)
		}
	}
	if rep.SecretsImported > 0 {
		fmt.Fprintf(a.stdout, "%d secret(s) came with the file\n", rep.SecretsImported)
	}
	fmt.Fprintln(a.stdout, "agent turns are paused until you confirm the agent settings that came with the file:\n"+
		"  broker app agent            (shows them)\n  broker app agent --confirm  (confirms them)")
	return 0
}
