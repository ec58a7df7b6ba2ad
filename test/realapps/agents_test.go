package realapps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/test/harness/testenv"
)

// agent does a task's steps through one MCP server, as a model would: it
// reads the page as the server renders it, finds the control by its role
// and name in that text, and acts on the ref the text gives it. It never
// uses a selector and never runs a script in the page.
type agent interface {
	// open starts a task on url: the page is loaded when it returns.
	open(ctx context.Context, url string) error
	// do performs one step: it finds the step's control, calls before
	// (if not nil) and acts.
	do(ctx context.Context, s step, before func() error) error
	// close ends the task (a broker lease is handed back).
	close(ctx context.Context)
	// seen reads the page once more, for a failure's report.
	seen(ctx context.Context) string
}

// findWait is how long an agent looks for a control before it gives up:
// applications render after their page has loaded, and change after an
// action, so it reads the page again until the control is there.
const findWait = 6 * time.Second

// mcpClient is one MCP session with a server started as a command.
type mcpClient struct {
	cs     *mcp.ClientSession
	stderr *testenv.SyncBuffer
	trace  func(format string, args ...any) // if set, every call and its answer
}

func startMCP(ctx context.Context, cmd *exec.Cmd) (*mcpClient, error) {
	c := &mcpClient{stderr: &testenv.SyncBuffer{}}
	cmd.Stderr = c.stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "dsh-realapps", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", cmd.Path, err, c.stderr.String())
	}
	c.cs = cs
	return c, nil
}

// call calls a tool and returns its text; a tool error is an error
// carrying the text.
func (c *mcpClient) call(ctx context.Context, name string, args map[string]any) (string, error) {
	if c.trace != nil {
		t0 := time.Now()
		out, err := c.call1(ctx, name, args)
		raw, _ := json.Marshal(args)
		c.trace("%s %s: %v (%.0f ms)\n%s", name, raw, err, ms(time.Since(t0)), clip(out, 1500))
		return out, err
	}
	return c.call1(ctx, name, args)
}

func (c *mcpClient) call1(ctx context.Context, name string, args map[string]any) (string, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return b.String(), fmt.Errorf("%s: %s", name, firstLines(b.String(), 4))
	}
	return b.String(), nil
}

// actionKinds returns the action kinds a tool's input schema lists under
// action.kind (browser_act's), or nil if it lists none.
func (c *mcpClient) actionKinds(ctx context.Context, tool string) ([]string, error) {
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range res.Tools {
		if t.Name != tool {
			continue
		}
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, err
		}
		var s struct {
			Properties struct {
				Action struct {
					Properties struct {
						Kind struct {
							Enum []string `json:"enum"`
						} `json:"kind"`
					} `json:"properties"`
				} `json:"action"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return s.Properties.Action.Properties.Kind.Enum, nil
	}
	return nil, fmt.Errorf("no tool %s", tool)
}

func (c *mcpClient) Close() error { return c.cs.Close() }

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// errNotFound says that the control is not on the page as the agent reads
// it.
var errNotFound = errors.New("not in the page as the server shows it")

// errStale says that the page changed between reading it and acting: the
// tool refused the ref before any input, and the agent reads the page
// again and retries, as both tools' answers advise.
var errStale = errors.New("the page changed under the ref")

// roleRE matches l's role, any role if it has none (Chromium's own role
// names, as LabelText, included).
func roleRE(l locator) string {
	if l.Role == "" {
		return `[A-Za-z]+`
	}
	return regexp.QuoteMeta(l.Role)
}

// nameRE matches l's name as a tool quotes it, without regard to case
// (one tool gives a name as the page's CSS transforms it, the other as
// the DOM spells it).
func nameRE(l locator) string {
	return `(?i:` + regexp.QuoteMeta(strconv.Quote(l.Name)) + `)`
}

// nthMatch returns the first group of the l.Nth-th match of any of res in
// text, matches ordered by where they start.
func nthMatch(text string, l locator, res ...*regexp.Regexp) (string, bool) {
	type match struct {
		at  int
		ref string
	}
	var all []match
	for _, re := range res {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			all = append(all, match{m[0], text[m[2]:m[3]]})
		}
	}
	slices.SortFunc(all, func(a, b match) int { return a.at - b.at })
	if l.Nth < len(all) {
		return all[l.Nth].ref, true
	}
	return "", false
}

// brokerRef finds l in broker mcp's outline, whose lines read
// `- [region ]role ["name"] [ref=r…][ value="…"]…`.
func brokerRef(outline string, l locator) (string, bool) {
	re := `(?m)^- (?:region )?` + roleRE(l)
	if l.Name != "" {
		re += " " + nameRE(l)
	}
	re += ` \[ref=(r[0-9a-f]+)\]`
	if l.Value != "" {
		re += ` value=` + regexp.QuoteMeta(strconv.Quote(l.Value))
	}
	return nthMatch(outline, l, regexp.MustCompile(re))
}

// playwrightRef finds l in @playwright/mcp's snapshot, whose lines read
// `- role "name" [state]… [ref=e…] [cursor=…]…`, or, for an element named
// by its text only, `- role [ref=e…]: text` (a line with a colon in it is
// quoted whole).
func playwrightRef(snapshot string, l locator) (string, bool) {
	marks := `(?: \[[^\]]*\])*?`
	head := `(?m)^\s*- '?` + roleRE(l)
	ref := ` \[ref=([a-z0-9]+)\]`
	if l.Name == "" {
		return nthMatch(snapshot, l, regexp.MustCompile(head+marks+ref))
	}
	named := regexp.MustCompile(head + " " + nameRE(l) + marks + ref)
	text := regexp.MustCompile(head + marks + ref + `(?: \[[^\]]*\])*: ['"]?(?i:` + regexp.QuoteMeta(l.Name) + `)['"]?$`)
	return nthMatch(snapshot, l, named, text)
}

// brokerAgent drives `broker mcp`: claim the tab, navigate, observe, act by
// ref, hand the tab back.
type brokerAgent struct {
	c        *mcpClient
	instance string
	tab      string

	lease   string
	outline string // the latest outline: of browser_observe or of an action's result
	frame   map[string]any
}

var epochRE = regexp.MustCompile(`documentEpoch=(\S+)`)

func (a *brokerAgent) open(ctx context.Context, url string) error {
	out, err := a.c.call(ctx, "browser_claim", map[string]any{"instanceId": a.instance, "tab": a.tab})
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`leaseId=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("browser_claim: no leaseId in %q", out)
	}
	a.lease = m[1]
	a.outline, err = a.c.call(ctx, "browser_navigate", map[string]any{"leaseId": a.lease, "url": url})
	return err
}

func (a *brokerAgent) seen(ctx context.Context) string {
	args := map[string]any{"leaseId": a.lease}
	if a.frame != nil {
		args["frame"] = a.frame
	}
	out, err := a.c.call(ctx, "browser_observe", args)
	if err != nil {
		return a.outline
	}
	return out
}

func (a *brokerAgent) close(ctx context.Context) {
	if a.lease != "" {
		a.c.call(ctx, "browser_handoff", map[string]any{"leaseId": a.lease})
	}
	a.lease, a.outline, a.frame = "", "", nil
}

// find returns the ref of l and the documentEpoch it belongs to, reading
// the page again (the whole page; by exact name when the outline is
// truncated; then its same-origin frames) until the control is there.
func (a *brokerAgent) find(ctx context.Context, l locator) (ref, epoch string, err error) {
	deadline := time.Now().Add(findWait)
	for try := 0; ; try++ {
		if ref, ok := a.findIn(a.outline, l); ok {
			return ref, epochRE.FindStringSubmatch(a.outline)[1], nil
		}
		if strings.Contains(a.outline, "(truncated") {
			q := map[string]any{"name": l.Name, "role": l.Role}
			out, err := a.c.call(ctx, "browser_observe", map[string]any{"leaseId": a.lease, "query": q})
			if err == nil {
				if ref, ok := a.findIn(out, l); ok {
					a.outline, a.frame = out, nil
					return ref, epochRE.FindStringSubmatch(out)[1], nil
				}
			}
		}
		if ref, epoch, ok := a.findInFrames(ctx, l); ok {
			return ref, epoch, nil
		}
		if time.Now().After(deadline) {
			return "", "", fmt.Errorf("%s %q: %w (broker mcp's outline:\n%s)", l.Role, l.Name, errNotFound, clip(a.outline, 3000))
		}
		if try > 0 {
			time.Sleep(200 * time.Millisecond) // let the page catch up
		}
		a.outline, err = a.c.call(ctx, "browser_observe", map[string]any{"leaseId": a.lease})
		a.frame = nil
		if err != nil {
			return "", "", err
		}
	}
}

func (a *brokerAgent) findIn(outline string, l locator) (string, bool) {
	return brokerRef(outline, l)
}

var sameOriginFrameRE = regexp.MustCompile(`(?m)^\s*- frame (\S+) .*same-origin documentEpoch=(\S+)$`)

// findInFrames looks for l in the page's same-origin child frames, as an
// agent does once the page itself does not show it (an editor in an
// iframe).
func (a *brokerAgent) findInFrames(ctx context.Context, l locator) (ref, epoch string, ok bool) {
	inv, err := a.c.call(ctx, "browser_frames", map[string]any{"leaseId": a.lease})
	if err != nil {
		return "", "", false
	}
	for _, m := range sameOriginFrameRE.FindAllStringSubmatch(inv, -1) {
		sel := map[string]any{"frameId": m[1], "documentEpoch": m[2]}
		out, err := a.c.call(ctx, "browser_observe", map[string]any{"leaseId": a.lease, "frame": sel})
		if err != nil {
			continue
		}
		if ref, ok := a.findIn(out, l); ok {
			a.outline, a.frame = out, sel
			return ref, epochRE.FindStringSubmatch(out)[1], true
		}
	}
	return "", "", false
}

func (a *brokerAgent) do(ctx context.Context, s step, before func() error) error {
	ref, epoch, err := a.find(ctx, s.On)
	if err != nil {
		return err
	}
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	action := map[string]any{"kind": s.Do, "ref": ref}
	switch s.Do {
	case "fill", "type", "append":
		action["text"] = s.Text
	case "press":
		action["key"] = s.Key
	case "chord":
		action["key"] = s.Key
		action["modifiers"] = nonNil(s.Mods)
	case "select":
		if s.Value != "" {
			action["value"] = s.Value
		} else {
			action["option"] = s.Option
		}
	case "clickAt":
		action["x"], action["y"] = s.X, s.Y
	case "drag":
		if s.To != nil {
			frame := a.frame
			to, _, err := a.find(ctx, *s.To)
			if err != nil {
				return err
			}
			if !mapsEqual(frame, a.frame) {
				return errors.New("drag: the two elements are in different frames")
			}
			action["toRef"] = to
		} else {
			action["deltaX"], action["deltaY"] = s.X, s.Y
		}
	}
	args := map[string]any{"leaseId": a.lease, "documentEpoch": epoch, "action": action}
	if a.frame != nil {
		args["frame"] = a.frame
	}
	out, err := a.c.call(ctx, "browser_act", args)
	status := firstLines(out, 1)
	if strings.Contains(status, "STALE_TARGET") && strings.Contains(status, "notDispatched") || err != nil && strings.Contains(err.Error(), "STALE_TARGET") {
		a.outline, _ = a.c.call(ctx, "browser_observe", map[string]any{"leaseId": a.lease})
		a.frame = nil
		return fmt.Errorf("browser_act %s: %w: %s", s.Do, errStale, status)
	}
	if err != nil {
		return err
	}
	if strings.Contains(status, ": failed") || strings.Contains(status, ": cancelled") {
		return fmt.Errorf("browser_act %s: %s", s.Do, firstLines(out, 3))
	}
	// The answer shows the page afterwards (of the frame the action was
	// in): whole, or what changed since the agent's last view, whose other
	// refs still hold.
	if i := strings.Index(out, "\npage "); i >= 0 {
		if page := out[i+1:]; strings.Contains(page, "since your last view") {
			a.outline += "\n" + changed(page)
		} else {
			a.outline = page
		}
	}
	return nil
}

// changed turns the elements an answer lists as new ("+ ") or changed
// ("~ ") into outline lines ("- "), to read beside the last view.
func changed(answer string) string {
	var b strings.Builder
	for line := range strings.Lines(answer) {
		if (strings.HasPrefix(line, "+ ") || strings.HasPrefix(line, "~ ")) && !strings.HasPrefix(line[2:], "text:") {
			b.WriteString("- " + line[2:])
		}
	}
	return b.String()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func mapsEqual(a, b map[string]any) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// clip shortens s to n bytes for a failure message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n…"
}

// playwrightAgent drives @playwright/mcp: navigate, snapshot, act by ref.
// Its browser_press_key presses a key in the page (whatever has focus),
// and its browser_click, browser_hover, browser_drag, browser_type and
// browser_select_option take a ref. Points are clicked with
// browser_mouse_click_xy (its vision capability) at the element's box from
// a snapshot with boxes, as a model would compute them.
type playwrightAgent struct {
	c       *mcpClient
	outline string // the latest snapshot
	focused string // the ref the last step acted on: keys go there
}

func (a *playwrightAgent) open(ctx context.Context, url string) error {
	out, err := a.c.call(ctx, "browser_navigate", map[string]any{"url": url})
	a.outline = out
	return err
}

func (a *playwrightAgent) close(context.Context) { a.outline, a.focused = "", "" }

func (a *playwrightAgent) seen(ctx context.Context) string {
	out, err := a.c.call(ctx, "browser_snapshot", map[string]any{})
	if err != nil {
		return a.outline
	}
	return out
}

func (a *playwrightAgent) find(ctx context.Context, l locator) (string, error) {
	deadline := time.Now().Add(findWait)
	for try := 0; ; try++ {
		if ref, ok := playwrightRef(a.outline, l); ok {
			return ref, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s %q: %w (@playwright/mcp's snapshot:\n%s)", l.Role, l.Name, errNotFound, clip(a.outline, 3000))
		}
		if try > 0 {
			time.Sleep(200 * time.Millisecond) // let the page catch up
		}
		out, err := a.c.call(ctx, "browser_snapshot", map[string]any{})
		if err != nil {
			return "", err
		}
		a.outline = out
	}
}

// staleRefRE matches @playwright/mcp's refusal of a ref that its latest
// snapshot no longer has.
var staleRefRE = regexp.MustCompile(`(?i)ref \S+ not found`)

var boxRE = regexp.MustCompile(`\[box=(-?[0-9.]+),(-?[0-9.]+),(-?[0-9.]+),(-?[0-9.]+)\]`)

// box reads the viewport box of ref from a snapshot taken with boxes.
func (a *playwrightAgent) box(ctx context.Context, ref string) (x, y, w, h float64, err error) {
	out, err := a.c.call(ctx, "browser_snapshot", map[string]any{"boxes": true})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	for line := range strings.Lines(out) {
		if !strings.Contains(line, "[ref="+ref+"]") {
			continue
		}
		m := boxRE.FindStringSubmatch(line)
		if m == nil {
			break
		}
		f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		return f(m[1]), f(m[2]), f(m[3]), f(m[4]), nil
	}
	return 0, 0, 0, 0, fmt.Errorf("no box for ref %s in the snapshot", ref)
}

func (a *playwrightAgent) do(ctx context.Context, s step, before func() error) error {
	l := s.On
	if s.PW != nil {
		l = *s.PW
	}
	ref, err := a.find(ctx, l)
	if err != nil {
		return err
	}
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	el := fmt.Sprintf("%s %q", l.Role, l.Name)
	var out string
	defer func() { a.focused = ref }()
	switch s.Do {
	case "click":
		out, err = a.c.call(ctx, "browser_click", map[string]any{"element": el, "target": ref})
	case "dblclick":
		out, err = a.c.call(ctx, "browser_click", map[string]any{"element": el, "target": ref, "doubleClick": true})
	case "hover":
		out, err = a.c.call(ctx, "browser_hover", map[string]any{"element": el, "target": ref})
	case "fill":
		out, err = a.c.call(ctx, "browser_type", map[string]any{"element": el, "target": ref, "text": s.Text})
	case "type", "append":
		out, err = a.c.call(ctx, "browser_type", map[string]any{"element": el, "target": ref, "text": s.Text, "slowly": true})
	case "press", "chord":
		// The key goes to whatever has focus: a model clicks the element
		// first unless it has just acted on it.
		if ref != a.focused {
			if _, err := a.c.call(ctx, "browser_click", map[string]any{"element": el, "target": ref}); err != nil {
				return err
			}
		}
		key := s.Key
		if key == "Space" {
			key = " "
		}
		if len(s.Mods) > 0 {
			key = strings.Join(s.Mods, "+") + "+" + key
		}
		out, err = a.c.call(ctx, "browser_press_key", map[string]any{"key": key})
	case "select":
		v := s.Option
		if s.Value != "" {
			v = s.Value
		}
		out, err = a.c.call(ctx, "browser_select_option", map[string]any{"element": el, "target": ref, "values": []string{v}})
	case "clickAt":
		var x, y float64
		if x, y, _, _, err = a.box(ctx, ref); err == nil {
			out, err = a.c.call(ctx, "browser_mouse_click_xy", map[string]any{"x": x + float64(s.X), "y": y + float64(s.Y)})
		}
	case "drag":
		if s.To != nil {
			var to string
			if to, err = a.find(ctx, *s.To); err == nil {
				out, err = a.c.call(ctx, "browser_drag", map[string]any{"startElement": el, "startTarget": ref,
					"endElement": fmt.Sprintf("%s %q", s.To.Role, s.To.Name), "endTarget": to})
			}
		} else {
			var x, y, w, h float64
			if x, y, w, h, err = a.box(ctx, ref); err == nil {
				cx, cy := x+w/2, y+h/2
				out, err = a.c.call(ctx, "browser_mouse_drag_xy", map[string]any{"startX": cx, "startY": cy, "endX": cx + float64(s.X), "endY": cy + float64(s.Y)})
			}
		}
	default:
		return fmt.Errorf("@playwright/mcp: no tool for %s", s.Do)
	}
	if err != nil && staleRefRE.MatchString(err.Error()) {
		a.outline, _ = a.c.call(ctx, "browser_snapshot", map[string]any{})
		return fmt.Errorf("%w: %v", errStale, err)
	}
	if err != nil {
		return err
	}
	if i := strings.Index(out, "- "); i >= 0 && slices.Contains([]string{"click", "dblclick", "hover", "fill", "type", "append", "press", "chord", "select", "drag"}, s.Do) {
		// Its result ends with the page's snapshot afterwards.
		a.outline = out
	}
	return nil
}
