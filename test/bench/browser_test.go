package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// The browser benchmarks compare one operation done through the whole
// product (client → Unix socket → broker → native host → Chrome native
// messaging → extension → chrome.debugger → page) with the same operation
// done directly over CDP from Go, with chromedp, on the same tab of the same
// browser. The direct path has a DevTools session of its own on the tab
// (Browser.TargetCtx), next to the extension's chrome.debugger session.
// BENCHMARKS.md says what each path does exactly.

// benchSession is the client's session ID on the broker path.
const benchSession = "bench"

// callTimeout bounds one round trip on the direct path. (The broker path is
// bounded by stack.Call.)
const callTimeout = 90 * time.Second

// stableWait is the broker's pause between its two geometry samples
// (browser.clickPoint).
const stableWait = 32 * time.Millisecond

// benchTab is one page open in its own tab, with a direct CDP session on it.
type benchTab struct {
	path   string          // the test page, "/form"
	handle string          // the broker's tab handle
	target target.ID       // the DevTools target
	cdp    context.Context // a chromedp session of its own on the tab
}

// browserEnv is the whole product with one tab per test page.
type browserEnv struct {
	s    *stack.Stack
	tabs map[string]*benchTab
}

// startBrowserEnv starts the stack in personal mode and opens /form, /big,
// /counter and /frames, each in its own tab with its own direct CDP session.
func startBrowserEnv(tb testing.TB) *browserEnv {
	tb.Helper()
	e := &browserEnv{s: stack.Start(tb, "--access-mode=personal"), tabs: map[string]*benchTab{}}
	for _, path := range []string{"/form", "/big", "/counter", "/frames"} {
		t := &benchTab{path: path}
		t.handle, t.target = e.s.Tab(tb, e.s.Pages.URL(path))
		t.cdp = e.s.Browser.TargetCtx(tb, t.target)
		// chromedp enables Page, DOM and more; Accessibility too, as the
		// extension does on its session (getRootAXNode needs it).
		cdpCall(tb, t, accessibility.Enable, cdp.Empty{})
		e.tabs[path] = t
	}
	return e
}

// front brings the tab to the front of its window. Only the foreground tab
// is visible, and a hidden tab does not answer some CDP calls
// (Accessibility.queryAXTree never returns there).
func (e *browserEnv) front(tb testing.TB, t *benchTab) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(e.s.Browser.Ctx, callTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, target.ActivateTarget, target.ActivateTargetParams{TargetID: t.target}); err != nil {
		tb.Fatalf("activate %s: %v", t.path, err)
	}
	if v := chromium.Eval[string](tb, e.s.Browser, t.target, "document.visibilityState"); v != "visible" {
		tb.Fatalf("%s is %s after Target.activateTarget", t.path, v)
	}
}

// claim leases the tab for benchSession. The lease lasts lease.TTL (5 min)
// and nothing renews it, so each group of sub-benchmarks claims its own.
func (e *browserEnv) claim(tb testing.TB, t *benchTab) string {
	tb.Helper()
	return e.s.Claim(tb, benchSession, t.handle).ID
}

func (e *browserEnv) release(tb testing.TB, leaseID string) {
	tb.Helper()
	if _, err := e.s.Call(tb, "browser.release", map[string]any{"sessionId": benchSession, "leaseId": leaseID}); err != nil {
		tb.Fatalf("release: %v", err)
	}
}

// brokerObserve is one browser.observe round trip, decoded. It returns the
// observation and the size of the broker's answer.
func (e *browserEnv) brokerObserve(tb testing.TB, leaseID string, q *browser.Query) (browser.Observation, int) {
	params := map[string]any{"sessionId": benchSession, "leaseId": leaseID}
	if q != nil {
		params["query"] = q
	}
	raw, err := e.s.Call(tb, "browser.observe", params)
	if err != nil {
		tb.Fatalf("browser.observe: %v", err)
	}
	var o browser.Observation
	if err := json.Unmarshal(raw, &o); err != nil || o.DocumentEpoch == "" {
		tb.Fatalf("browser.observe answered %.200s (%v)", raw, err)
	}
	return o, len(raw)
}

var actSeq int

// brokerAct is one browser.act round trip, with a fresh request ID and no
// expectation, decoded. It returns the result and the size of the answer.
func (e *browserEnv) brokerAct(tb testing.TB, leaseID string, o browser.Observation, action map[string]any) (browser.ActionResult, int) {
	actSeq++
	raw, err := e.s.Call(tb, "browser.act", map[string]any{"sessionId": benchSession, "request": map[string]any{
		"requestId": fmt.Sprintf("bench-%d", actSeq), "leaseId": leaseID, "documentEpoch": o.DocumentEpoch, "action": action,
	}})
	if err != nil {
		tb.Fatalf("browser.act: %v", err)
	}
	var r browser.ActionResult
	if err := json.Unmarshal(raw, &r); err != nil {
		tb.Fatalf("browser.act answered %.200s (%v)", raw, err)
	}
	// "observed": dispatched, and the verification observation came back.
	if r.Dispatch != "observed" || r.Observation == nil {
		tb.Fatalf("browser.act: %+v", r)
	}
	return r, len(raw)
}

// brokerActSince is brokerAct for a client that asks for the change since
// the observation it acted on (since, its cursor), as broker mcp does:
// the result carries the change, or the observation when that is smaller.
func (e *browserEnv) brokerActSince(tb testing.TB, leaseID string, o browser.Observation, action map[string]any) (browser.ActionResult, int) {
	actSeq++
	raw, err := e.s.Call(tb, "browser.act", map[string]any{"sessionId": benchSession, "request": map[string]any{
		"requestId": fmt.Sprintf("bench-%d", actSeq), "leaseId": leaseID, "documentEpoch": o.DocumentEpoch, "action": action,
		"since": o.Cursor,
	}})
	if err != nil {
		tb.Fatalf("browser.act: %v", err)
	}
	var r browser.ActionResult
	if err := json.Unmarshal(raw, &r); err != nil {
		tb.Fatalf("browser.act answered %.200s (%v)", raw, err)
	}
	if r.Dispatch != "observed" || (r.Observation == nil) == (r.Change == nil) {
		tb.Fatalf("browser.act since %s: %+v", o.Cursor, r)
	}
	if action["expected"] != nil && r.Outcome != "succeeded" {
		tb.Fatalf("browser.act with an expectation: %+v", r)
	}
	return r, len(raw)
}

// refOf returns the ref of the first node with role and name.
func refOf(tb testing.TB, o browser.Observation, role, name string) string {
	tb.Helper()
	for _, n := range o.Nodes {
		if n.Role == role && n.Name == name {
			return n.ID
		}
	}
	tb.Fatalf("no %s %q in the observation", role, name)
	return ""
}

// cdpCall runs one CDP command on the tab's direct session.
func cdpCall[P, R any](tb testing.TB, t *benchTab, cmd cdp.Command[P, R], params P) R {
	ctx, cancel := context.WithTimeout(t.cdp, callTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, cmd, params)
	if err != nil {
		tb.Fatalf("%s on %s: %v", cmd.Method, t.path, err)
	}
	return res
}

// rawSnapshot is the DOMSnapshot.captureSnapshot the extension takes with
// every ax.read and ax.page, to mark what the page made clickable
// (extension/lib/ax.js clickables), its result left as raw JSON.
var rawSnapshot = cdp.Command[map[string]any, jsonv2.Value]{Method: "DOMSnapshot.captureSnapshot"}

// rawFullAXTree is Accessibility.getFullAXTree with its result left as raw
// JSON, to learn its size.
var rawFullAXTree = cdp.Command[accessibility.GetFullAXTreeParams, jsonv2.Value]{Method: accessibility.CommandGetFullAXTree}

// cdpFullTree is what a direct CDP client does to read a page: one
// Accessibility.getFullAXTree, decoded into cdproto structs.
func cdpFullTree(tb testing.TB, t *benchTab) []*accessibility.Node {
	return cdpCall(tb, t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{}).Nodes
}

// cdpQuery is the direct counterpart of the extension's ax.find:
// DOM.getDocument {depth:0} + Accessibility.queryAXTree from the document
// node.
func cdpQuery(tb testing.TB, t *benchTab, name, role string) []*accessibility.Node {
	doc := cdpCall(tb, t, dom.GetDocument, dom.GetDocumentParams{Depth: new(int64(0))})
	return cdpCall(tb, t, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{
		BackendNodeID: doc.Root.BackendNodeID, AccessibleName: name, Role: role,
	}).Nodes
}

// The extension's ax.read budgets (extension/lib/ax.js BUDGET).
const (
	walkMaxNodes = 2048
	walkMaxCalls = 512
	walkMaxDepth = 64
)

// walkStats is what a replay of the extension's walk did.
type walkStats struct {
	nodes, calls int
	textCalls    int // getChildAXNodes calls for a StaticText's children (inline text boxes)
	truncated    bool
	kept         []axReadNode // the nodes the extension would send
}

// axReadNode is one node of an ax.read answer (protocol/PROVIDER.md
// AXRead), to weigh what the extension sends.
type axReadNode struct {
	AxID          accessibility.NodeID    `json:"axId"`
	ParentAxID    accessibility.NodeID    `json:"parentAxId,omitempty"`
	BackendNodeID cdp.BackendNodeID       `json:"backendNodeId,omitempty"`
	Role          string                  `json:"role"`
	Name          string                  `json:"name"`
	Value         json.RawMessage         `json:"value,omitempty"`
	Ignored       bool                    `json:"ignored"`
	Props         map[string]jsonv2.Value `json:"props"`
}

// walkProps are the AX properties an ax.read node carries.
var walkProps = []accessibility.PropertyName{"disabled", "focusable", "focused", "editable", "checked", "expanded", "hidden", "required"}

// jsonBytes is the size of the ax.read answer's nodes, as the extension
// would send them (the walk itself does not encode them).
func (st walkStats) jsonBytes() int {
	b, _ := json.Marshal(st.kept)
	return len(b)
}

// cdpWalk replays the extension's bounded ax.read (extension/lib/ax.js)
// directly over CDP: Accessibility.getRootAXNode, then a depth-first walk
// that asks Accessibility.getChildAXNodes, one call at a time, for the
// children of every node whose children it has not seen, walking through
// ignored nodes, skipping InlineTextBox nodes once fetched, and asking
// DOM.describeNode whether a single-line editable field with a value is a
// password field. It stops at the same budgets (2,048 nodes, 512 calls,
// depth 64); the 1 MiB JSON budget is not reached on the test pages and is
// not replayed. It keeps the nodes but does not project them.
func cdpWalk(tb testing.TB, t *benchTab) walkStats {
	var st walkStats
	known := map[accessibility.NodeID]*accessibility.Node{}
	learn := func(nodes []*accessibility.Node) {
		for _, n := range nodes {
			known[n.NodeID] = n
		}
	}
	root := cdpCall(tb, t, accessibility.GetRootAXNode, accessibility.GetRootAXNodeParams{}).Node
	st.calls++
	learn([]*accessibility.Node{root})
	type item struct {
		id, parent accessibility.NodeID
		depth      int
	}
	stack := []item{{root.NodeID, "", 1}}
walk:
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := known[it.id]
		if n == nil {
			continue
		}
		parent := it.parent // of the children: the nearest kept ancestor
		if !n.Ignored {
			if axString(n.Role) == "InlineTextBox" {
				continue
			}
			secret := false
			if n.Value != nil && len(n.Value.Value) > 0 && axProp(n, "editable") != "" && axProp(n, "multiline") != "true" {
				secret = true
				if n.BackendDOMNodeID > 0 && st.calls < walkMaxCalls {
					st.calls++
					d := cdpCall(tb, t, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: n.BackendDOMNodeID}).Node
					secret = false
					for i := 0; i+1 < len(d.Attributes); i += 2 {
						if strings.EqualFold(d.Attributes[i], "type") {
							secret = d.NodeName == "INPUT" && strings.EqualFold(d.Attributes[i+1], "password")
							break
						}
					}
				}
			}
			if len(st.kept) >= walkMaxNodes {
				st.truncated = true
				break walk
			}
			st.kept = append(st.kept, keep(n, it.parent, secret))
			if secret {
				continue
			}
			parent = n.NodeID
		}
		kids := n.ChildIDs
		if len(kids) == 0 {
			continue
		}
		if it.depth >= walkMaxDepth {
			st.truncated = true
			continue
		}
		if slices.ContainsFunc(kids, func(k accessibility.NodeID) bool { return known[k] == nil }) {
			if st.calls >= walkMaxCalls {
				st.truncated = true
				continue
			}
			st.calls++
			if axString(n.Role) == "StaticText" {
				st.textCalls++
			}
			learn(cdpCall(tb, t, accessibility.GetChildAXNodes, accessibility.GetChildAXNodesParams{ID: n.NodeID}).Nodes)
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, item{kids[i], parent, it.depth + 1})
		}
	}
	st.nodes = len(st.kept)
	return st
}

// keep is the extension's Reader.add: the node as ax.read sends it.
func keep(n *accessibility.Node, parent accessibility.NodeID, secret bool) axReadNode {
	k := axReadNode{AxID: n.NodeID, ParentAxID: parent, BackendNodeID: n.BackendDOMNodeID,
		Role: axString(n.Role), Name: axString(n.Name), Props: map[string]jsonv2.Value{}}
	if n.Value != nil && len(n.Value.Value) > 0 && !secret {
		k.Value = json.RawMessage(n.Value.Value)
	}
	for _, p := range n.Properties {
		if slices.Contains(walkProps, p.Name) && p.Value != nil && len(p.Value.Value) > 0 {
			k.Props[string(p.Name)] = p.Value.Value
		}
	}
	return k
}

// axProp returns an AX property's value as JSON text, "" when absent.
func axProp(n *accessibility.Node, name accessibility.PropertyName) string {
	for _, p := range n.Properties {
		if p.Name == name && p.Value != nil {
			return string(p.Value.Value)
		}
	}
	return ""
}

// axString decodes an AX value's string, "" when there is none.
func axString(v *accessibility.Value) string {
	var s string
	if v != nil {
		json.Unmarshal([]byte(v.Value), &s)
	}
	return s
}

// clickTarget is what a direct client knows about the element it clicks,
// from its own earlier read: the same identity the broker's ref stands for.
type clickTarget struct {
	node       cdp.BackendNodeID
	role, name string
}

// findTarget finds the one AX node with role and name over the direct
// session (setup, not timed).
func findTarget(tb testing.TB, t *benchTab, role, name string) clickTarget {
	tb.Helper()
	var found []clickTarget
	for _, n := range cdpQuery(tb, t, name, role) {
		if !n.Ignored && n.BackendDOMNodeID > 0 {
			found = append(found, clickTarget{n.BackendDOMNodeID, role, name})
		}
	}
	if len(found) != 1 {
		tb.Fatalf("%s: %d %s named %q, want 1", t.path, len(found), role, name)
	}
	return found[0]
}

// clickMode says which checks the direct click makes.
type clickMode struct {
	stable  bool // two geometry samples stableWait apart, as the broker does
	checked bool // the extension's identity check and hit test
}

// cdpClick clicks the target directly over CDP. With no checks it is the
// minimum a direct client does: scroll into view, read the content quads,
// press and release the left button at the centre of the first quad. It
// returns whether the hit test needed the isolated-world ancestry check.
func cdpClick(tb testing.TB, t *benchTab, c clickTarget, mode clickMode) (ancestry bool) {
	node := c.node
	cdpCall(tb, t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: node})
	quads := func() []dom.Quad {
		q := cdpCall(tb, t, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: node}).Quads
		if len(q) == 0 {
			tb.Fatalf("%s: target not rendered", t.path)
		}
		return q
	}
	q := quads()
	for mode.stable {
		time.Sleep(stableWait)
		again := quads()
		if slices.EqualFunc(q, again, slices.Equal) {
			break
		}
		q = again
	}
	var x, y float64
	for i := 0; i < 8; i += 2 {
		x, y = x+q[0][i]/4, y+q[0][i+1]/4
	}

	if mode.checked {
		// The extension's fence (extension/lib/input.js): the AX identity
		// recheck, then the hit test in page coordinates.
		tree := cdpCall(tb, t, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: node, FetchRelatives: new(false)})
		i := slices.IndexFunc(tree.Nodes, func(n *accessibility.Node) bool { return n.BackendDOMNodeID == node })
		if i < 0 || tree.Nodes[i].Ignored || axString(tree.Nodes[i].Role) != c.role || axString(tree.Nodes[i].Name) != c.name {
			tb.Fatalf("%s: the target changed identity", t.path)
		}
		// DOM.getNodeForLocation takes document coordinates: add the
		// scroll offset. (The extension reads cssVisualViewport; without
		// pinch zoom both viewports have the same pageX and pageY.)
		m := cdpCall(tb, t, page.GetLayoutMetrics, cdp.Empty{})
		hit := cdpCall(tb, t, dom.GetNodeForLocation, dom.GetNodeForLocationParams{
			X: int64(math.Floor(float64(m.CSSLayoutViewport.PageX) + x)), Y: int64(math.Floor(float64(m.CSSLayoutViewport.PageY) + y)),
			IncludeUserAgentShadowDOM: new(true),
		})
		if hit.BackendNodeID != node {
			ancestry = true
			if !inside(tb, t, hit, node) {
				tb.Fatalf("%s: the click point hits another element", t.path)
			}
		}
	}

	at := input.DispatchMouseEventParams{X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1}
	press, release := at, at
	press.Type, press.Buttons = input.DispatchMouseEventTypeMousePressed, 1
	release.Type = input.DispatchMouseEventTypeMouseReleased
	cdpCall(tb, t, input.DispatchMouseEvent, press)
	cdpCall(tb, t, input.DispatchMouseEvent, release)
	return ancestry
}

// insideFunc is the extension's ancestry test (extension/lib/input.js).
const insideFunc = "function (target) { for (let n = this; n; n = n.parentNode || n.host) if (n === target) return true; return false; }"

// inside reports whether the hit node is the target or inside it, decided
// in an isolated world as the extension does.
func inside(tb testing.TB, t *benchTab, hit dom.GetNodeForLocationResult, node cdp.BackendNodeID) bool {
	const group = "bench-hit-test"
	defer cdpCall(tb, t, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
	world := cdpCall(tb, t, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: hit.FrameID, WorldName: group})
	resolve := func(id cdp.BackendNodeID) runtime.RemoteObjectID {
		return cdpCall(tb, t, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ExecutionContextID: world.ExecutionContextID, ObjectGroup: group}).Object.ObjectID
	}
	hitObj, targetObj := resolve(hit.BackendNodeID), resolve(node)
	res := cdpCall(tb, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		ObjectID: hitObj, FunctionDeclaration: insideFunc, Arguments: []*runtime.CallArgument{{ObjectID: targetObj}}, ReturnByValue: new(true),
	})
	return string(res.Result.Value) == "true"
}

// clickCase is the button that the click benchmarks of a page press, and a
// JavaScript expression that counts the trusted clicks it has had.
type clickCase struct {
	role, name string
	count      string
}

var clickCases = map[string]clickCase{
	// Each trusted click adds one to window.clicks and changes the text.
	"/counter": {"button", "Add one", "window.clicks"},
	// The second-last button of /big, below the fold. It has no handler of
	// its own (the last one renames itself when clicked, which would make
	// every ref to it stale), so the first count installs a listener.
	"/big": {"button", "Item 999", `(() => {
		if (window.benchClicks === undefined) {
			window.benchClicks = 0;
			document.getElementById('item-999').addEventListener('click', (e) => { if (e.isTrusted) window.benchClicks++; });
		}
		return window.benchClicks;
	})()`},
}

// clicks returns the trusted clicks of the page's click case so far, read
// over the harness's own session (neither path's).
func (e *browserEnv) clicks(tb testing.TB, t *benchTab) int {
	tb.Helper()
	return chromium.Eval[int](tb, e.s.Browser, t.target, clickCases[t.path].count)
}

// clickRefs returns what each path knows before it clicks: the broker's
// ref (from a query observation, whose epoch the act carries) and the
// direct path's node.
func (e *browserEnv) clickRefs(tb testing.TB, t *benchTab, leaseID string) (browser.Observation, map[string]any, clickTarget) {
	tb.Helper()
	c := clickCases[t.path]
	o, _ := e.brokerObserve(tb, leaseID, &browser.Query{Role: c.role, Name: c.name})
	action := map[string]any{"kind": "click", "ref": refOf(tb, o, c.role, c.name)}
	return o, action, findTarget(tb, t, c.role, c.name)
}

// reverseEnv, set to 1, makes BenchmarkBrowser run the paths of each
// operation in reverse order, so that a loop of runs can alternate which
// path goes first.
const reverseEnv = "DSH_BENCH_REVERSE"

// BenchmarkBrowser measures observe and click round trips through the
// whole product next to the same operations done directly over CDP, in one
// browser and one stack, started once per run of the benchmark binary.
//
// The paths of one operation run back to back. -count repeats each
// sub-benchmark in place (go test runs a leaf's -count samples in a row),
// so for samples that interleave, run the test binary several times with
// -count=1 (BENCHMARKS.md has the loop).
func BenchmarkBrowser(b *testing.B) {
	e := startBrowserEnv(b)
	reverse := os.Getenv(reverseEnv) == "1"
	type path struct {
		name string
		run  func(b *testing.B)
	}
	// group runs the paths of one operation back to back.
	group := func(b *testing.B, name string, paths ...path) {
		if reverse {
			slices.Reverse(paths)
		}
		b.Run(name, func(b *testing.B) {
			for _, p := range paths {
				b.Run("path="+p.name, p.run)
			}
		})
	}

	for _, pg := range []string{"/form", "/big", "/counter", "/frames"} {
		t := e.tabs[pg]
		b.Run("page="+pg[1:], func(b *testing.B) {
			e.front(b, t)
			leaseID := e.claim(b, t)
			defer e.release(b, leaseID)

			group(b, "op=observe",
				path{"broker", func(b *testing.B) {
					var size, refs, text int
					took := make([]time.Duration, 0, b.N)
					for range b.N {
						t0 := time.Now()
						o, n := e.brokerObserve(b, leaseID, nil)
						took = append(took, time.Since(t0))
						size, refs, text = n, len(o.Nodes), len(o.Text)
					}
					// The mean (ns/op) follows this loaded machine's outliers.
					b.ReportMetric(medianMs(took), "ms/op-p50")
					b.ReportMetric(float64(size), "resp-B/op")
					b.ReportMetric(float64(refs), "refs/op")
					b.ReportMetric(float64(text), "texts/op")
				}},
				path{"cdp-full", func(b *testing.B) {
					var nodes int
					for range b.N {
						nodes = len(cdpFullTree(b, t))
					}
					b.StopTimer()
					raw := cdpCall(b, t, rawFullAXTree, accessibility.GetFullAXTreeParams{})
					b.ReportMetric(float64(len(raw)), "resp-B/op")
					b.ReportMetric(float64(nodes), "axnodes/op")
				}},
				path{"cdp-snapshot", func(b *testing.B) {
					var size int
					for range b.N {
						size = len(cdpCall(b, t, rawSnapshot, map[string]any{"computedStyles": []string{"cursor"}}))
					}
					b.ReportMetric(float64(size), "resp-B/op")
				}},
				path{"cdp-walk", func(b *testing.B) {
					var st walkStats
					for range b.N {
						st = cdpWalk(b, t)
					}
					b.StopTimer()
					b.ReportMetric(float64(st.nodes), "axnodes/op")
					b.ReportMetric(float64(st.calls), "calls/op")
					b.ReportMetric(float64(st.textCalls), "text-calls/op")
					b.ReportMetric(float64(st.jsonBytes()), "resp-B/op")
				}},
			)

			if pg == "/big" {
				group(b, "op=read-page",
					path{"broker", func(b *testing.B) {
						var windows int
						for range b.N {
							windows = e.brokerReadAll(b, leaseID)
						}
						b.ReportMetric(float64(windows), "windows/op")
					}},
					path{"cdp-full", func(b *testing.B) {
						for range b.N {
							cdpFullTree(b, t)
						}
					}},
				)
				q := &browser.Query{Role: "button", Name: "Target"}
				group(b, "op=observe-query",
					path{"broker", func(b *testing.B) {
						var size int
						for range b.N {
							o, n := e.brokerObserve(b, leaseID, q)
							if len(o.Nodes) != 1 {
								b.Fatalf("query matched %d nodes", len(o.Nodes))
							}
							size = n
						}
						b.ReportMetric(float64(size), "resp-B/op")
					}},
					path{"cdp", func(b *testing.B) {
						for range b.N {
							if n := cdpQuery(b, t, q.Name, q.Role); len(n) != 1 {
								b.Fatalf("queryAXTree matched %d nodes", len(n))
							}
						}
					}},
				)
			}

			group(b, "op=capture",
				path{"broker", func(b *testing.B) {
					var shot browser.Screenshot
					for range b.N {
						shot = e.brokerCapture(b, leaseID)
					}
					b.ReportMetric(float64(len(shot.Data)), "b64-B/op")
					b.ReportMetric(float64(shot.Redaction.Regions), "regions/op")
				}},
				path{"cdp", func(b *testing.B) {
					var n int
					for range b.N {
						n = base64.StdEncoding.EncodedLen(len(cdpCapture(b, t)))
					}
					b.ReportMetric(float64(n), "b64-B/op")
				}},
			)

			if _, ok := clickCases[pg]; !ok {
				return
			}
			o, action, c := e.clickRefs(b, t, leaseID)
			// counted runs the loop and checks that every iteration was
			// one trusted click on the target.
			counted := func(loop func(b *testing.B)) func(b *testing.B) {
				return func(b *testing.B) {
					before := e.clicks(b, t)
					b.ResetTimer()
					loop(b)
					b.StopTimer()
					if got := e.clicks(b, t) - before; got != b.N {
						b.Fatalf("%d clicks counted for %d iterations", got, b.N)
					}
				}
			}
			direct := func(mode clickMode) func(b *testing.B) {
				return counted(func(b *testing.B) {
					for range b.N {
						cdpClick(b, t, c, mode)
					}
				})
			}
			group(b, "op=click",
				path{"broker", counted(func(b *testing.B) {
					var size, refs int
					for range b.N {
						r, n := e.brokerAct(b, leaseID, o, action)
						size, refs = n, len(r.Observation.Nodes)
					}
					b.ReportMetric(float64(size), "resp-B/op")
					b.ReportMetric(float64(refs), "refs/op")
				})},
				// As broker mcp clicks: answered with the change since the
				// search the ref came from, without and with an expected
				// text (the button's own, there before the click).
				path{"broker-since", counted(func(b *testing.B) {
					var size int
					for range b.N {
						_, size = e.brokerActSince(b, leaseID, o, action)
					}
					b.ReportMetric(float64(size), "resp-B/op")
				})},
				path{"broker-since-expect", counted(func(b *testing.B) {
					expecting := maps.Clone(action)
					expecting["expected"] = map[string]any{"kind": "text", "text": clickCases[pg].name}
					var size int
					for range b.N {
						_, size = e.brokerActSince(b, leaseID, o, expecting)
					}
					b.ReportMetric(float64(size), "resp-B/op")
				})},
				path{"cdp", direct(clickMode{})},
				path{"cdp-checked", direct(clickMode{checked: true})},
				path{"cdp-checked-stable", direct(clickMode{checked: true, stable: true})},
			)
		})
	}
}

// TestBrowserBenchPaths runs each path of BenchmarkBrowser once (the slow
// ones on the small pages only) and checks that it works, so that
// `go test ./test/bench` proves the harness without -bench.
func TestBrowserBenchPaths(t *testing.T) {
	e := startBrowserEnv(t)

	form := e.tabs["/form"]
	e.front(t, form)
	leaseID := e.claim(t, form)
	o, _ := e.brokerObserve(t, leaseID, nil)
	refOf(t, o, "button", "Greet")
	refOf(t, o, "textbox", "Your name")
	nodes := cdpFullTree(t, form)
	if !slices.ContainsFunc(nodes, func(n *accessibility.Node) bool {
		return axString(n.Role) == "button" && axString(n.Name) == "Greet"
	}) {
		t.Fatalf("getFullAXTree of /form has no button Greet among %d nodes", len(nodes))
	}
	// The replayed walk keeps every non-ignored node but the inline text
	// boxes, as the full tree has them.
	want := 0
	for _, n := range nodes {
		if !n.Ignored && axString(n.Role) != "InlineTextBox" {
			want++
		}
	}
	if st := cdpWalk(t, form); st.nodes != want || st.truncated || st.calls < 2 {
		t.Fatalf("walk of /form: %+v, want %d nodes", st, want)
	}
	e.release(t, leaseID)

	big := e.tabs["/big"]
	e.front(t, big)
	leaseID = e.claim(t, big)
	q, _ := e.brokerObserve(t, leaseID, &browser.Query{Role: "button", Name: "Target"})
	if q.Scope.Kind != "query" || len(q.Nodes) != 1 || q.Nodes[0].Name != "Target" {
		t.Fatalf("broker query on /big: %+v", q)
	}
	if n := cdpQuery(t, big, "Target", "button"); len(n) != 1 {
		t.Fatalf("direct query on /big matched %d nodes", len(n))
	}
	e.release(t, leaseID)

	// Every click path on /counter, and the broker's and the bare direct
	// click on /big.
	for _, tc := range []struct {
		page  string
		modes []clickMode
	}{
		{"/counter", []clickMode{{}, {checked: true}, {checked: true, stable: true}}},
		{"/big", []clickMode{{}}},
	} {
		tab := e.tabs[tc.page]
		e.front(t, tab)
		leaseID = e.claim(t, tab)
		before := e.clicks(t, tab)
		o, action, c := e.clickRefs(t, tab, leaseID)
		if r, _ := e.brokerAct(t, leaseID, o, action); e.clicks(t, tab) != before+1 {
			t.Fatalf("broker click on %s: %d clicks counted; %+v", tc.page, e.clicks(t, tab)-before, r)
		}
		expecting := maps.Clone(action)
		expecting["expected"] = map[string]any{"kind": "text", "text": clickCases[tc.page].name}
		if r, _ := e.brokerActSince(t, leaseID, o, expecting); e.clicks(t, tab) != before+2 {
			t.Fatalf("broker click since the search on %s: %d clicks counted; %+v", tc.page, e.clicks(t, tab)-before, r)
		}
		before++
		for i, mode := range tc.modes {
			ancestry := cdpClick(t, tab, c, mode)
			if n := e.clicks(t, tab) - before; n != i+2 {
				t.Fatalf("direct click %+v on %s: %d clicks counted, want %d", mode, tc.page, n, i+2)
			}
			if ancestry {
				t.Logf("direct click %+v on %s: the hit test needed the ancestry check", mode, tc.page)
			}
		}
		e.release(t, leaseID)
	}

	// Both capture paths give a JPEG of the same size; the broker's paints
	// the five foreign frame branches of /frames.
	frames := e.tabs["/frames"]
	e.front(t, frames)
	leaseID = e.claim(t, frames)
	shot := e.brokerCapture(t, leaseID)
	direct := cdpCapture(t, frames)
	if shot.Redaction.Regions != 5 || !bytes.HasPrefix(direct, []byte{0xFF, 0xD8, 0xFF}) {
		t.Fatalf("capture of /frames: redaction %+v; direct data starts % x", shot.Redaction, direct[:min(3, len(direct))])
	}
	e.release(t, leaseID)
}

// brokerCapture takes a screenshot through the product: the extension reads
// the frames, viewport and boxes twice, takes a PNG, redacts and encodes a
// JPEG in the service worker.
func (e *browserEnv) brokerCapture(tb testing.TB, leaseID string) browser.Screenshot {
	tb.Helper()
	raw, err := e.s.Call(tb, "browser.capture", map[string]any{"sessionId": benchSession, "leaseId": leaseID})
	if err != nil {
		tb.Fatalf("browser.capture: %v", err)
	}
	var shot browser.Screenshot
	if err := json.Unmarshal(raw, &shot); err != nil {
		tb.Fatal(err)
	}
	return shot
}

// cdpCapture is what a tool without redaction does: one JPEG of the visual
// viewport at quality 70, the same clip and scale as the extension's.
func cdpCapture(tb testing.TB, t *benchTab) []byte {
	tb.Helper()
	m := cdpCall(tb, t, page.GetLayoutMetrics, cdp.Empty{})
	vp := m.CSSVisualViewport
	scale := math.Min(1, 1200/vp.ClientWidth)
	shot := cdpCall(tb, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatJpeg, Quality: new(int64(70)),
		Clip:                  &page.Viewport{X: vp.PageX, Y: vp.PageY, Width: vp.ClientWidth, Height: vp.ClientHeight, Scale: scale},
		CaptureBeyondViewport: new(false),
	})
	return shot.Data
}

// brokerReadAll reads the whole page with browser.readPage, window by
// window, and returns how many windows it took.
func (e *browserEnv) brokerReadAll(tb testing.TB, leaseID string) int {
	tb.Helper()
	params := map[string]any{"sessionId": benchSession, "leaseId": leaseID}
	for n := 1; ; n++ {
		raw, err := e.s.Call(tb, "browser.readPage", params)
		if err != nil {
			tb.Fatalf("browser.readPage window %d: %v", n, err)
		}
		var w browser.PageWindow
		if err := json.Unmarshal(raw, &w); err != nil {
			tb.Fatal(err)
		}
		if w.Page.Continuation == "" {
			return n
		}
		params["options"] = map[string]any{"continuation": w.Page.Continuation}
	}
}

// medianMs is the median of took in milliseconds.
func medianMs(took []time.Duration) float64 {
	slices.Sort(took)
	return float64(took[len(took)/2]) / float64(time.Millisecond)
}
