package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	browserruntime "github.com/dsh-browser/broker/browser/runtime"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/testpages"
)

// TestPageReaderMatchesAX holds the in-page read (extension/lib/pagereader.js)
// to Chromium's accessibility tree: on every test page, what the broker's
// projection (browser/runtime.Project, which every observation goes
// through) makes of the in-page read must be what it makes of ax.read as
// the product reads it today (extension/lib/ax.js) — the same elements
// (role, name, value, checked, disabled, editable, kind, and what the ref
// stands for: the backend node ID and accessible name) in the same order,
// the same text fragments in the same order, and the same truncation. A
// difference that cannot be removed is in pageReaderAllowed, with its
// reason.
func TestPageReaderMatchesAX(t *testing.T) {
	env := startAXBench(t, "")
	pages := append(testpages.Paths(), "/rows?n=30")
	for _, pg := range pages {
		t.Run(pageName(pg), func(t *testing.T) {
			tab := env.open(t, pg)
			defer env.b.CloseTab(t, tab.target)
			env.front(t, tab)
			ax, in := env.compare(t, tab)
			if a, p := owners(ax), owners(in); a != p {
				if reason, ok := pageReaderAllowed[fmt.Sprintf("%s frameOwners %d %d", pg, a, p)]; ok {
					t.Logf("allowed: frameOwners %d, ax %d (%s)", p, a, reason)
				} else {
					t.Errorf("frameOwners: page %d, ax %d", p, a)
				}
			}
			checkProjection(t, pg, ax, in)
		})
	}
}

// pageReaderAllowed lists the differences the test accepts, by page and
// diff line ("/path -E ...", "/path +T ...", "/path +truncated") or frame
// owner counts ("/path frameOwners AX PAGE"), each with its reason.
var pageReaderAllowed = map[string]string{
	// An iframe of another site in a closed shadow root: the isolated
	// world cannot open a closed root (but one holding an element the page
	// listens on, passed in), and the tab's frame tree leaves out a frame
	// of another site (another process); ax.read's DOM snapshot sees it.
	"/frames frameOwners 8 7": "a frame owner of another site in a closed shadow root",
}

// pageRead is a read of a tab, ax.read's or the in-page read's: the
// answer as the provider sends it, and what the broker's projection makes
// of it (browser/runtime.Project, which every observation goes through).
type pageRead struct {
	answer json.RawMessage
	*browserruntime.Projection
}

// compare reads the tab both ways (compareRead in the bench worker), the
// in-page read by the product's driver.
func (e *axBench) compare(tb testing.TB, t axTab) (ax, in pageRead) {
	tb.Helper()
	raw := chromium.Eval[json.RawMessage](tb, e.b, e.worker, fmt.Sprintf("compareRead(%d)", t.tabID))
	var both struct {
		AX   json.RawMessage `json:"ax"`
		Page json.RawMessage `json:"page"`
	}
	if err := json.Unmarshal(raw, &both); err != nil {
		tb.Fatalf("compareRead: %v", err)
	}
	project := func(label string, answer json.RawMessage) pageRead {
		if os.Getenv("DSH_PAGEREADER_DUMP") != "" {
			var a struct{ Nodes []json.RawMessage }
			if err := json.Unmarshal(answer, &a); err != nil {
				tb.Fatalf("%s: %v", label, err)
			}
			var b strings.Builder
			for _, n := range a.Nodes {
				b.Write(n)
				b.WriteByte('\n')
			}
			tb.Logf("%s: %d nodes\n%s", label, len(a.Nodes), b.String())
		}
		p, err := browserruntime.Project(answer, false)
		if err != nil {
			tb.Fatalf("%s: project: %v", label, err)
		}
		return pageRead{answer, p}
	}
	return project("ax", both.AX), project("page", both.Page)
}

// owners is the read's frame owner count, -1 when it does not tell.
func owners(r pageRead) int {
	if r.FrameOwners == nil {
		return -1
	}
	return *r.FrameOwners
}

// answerNode is what a test reads of an answer's node besides the
// projection.
type answerNode struct {
	Role          string `json:"role"`
	Name          string `json:"name"`
	BackendNodeID int64  `json:"backendNodeId"`
}

// nodes decodes the answer's nodes.
func (r pageRead) nodes(tb testing.TB) []answerNode {
	tb.Helper()
	var a struct{ Nodes []answerNode }
	if err := json.Unmarshal(r.answer, &a); err != nil {
		tb.Fatal(err)
	}
	return a.Nodes
}

// projected is what the broker shows of a read, a line each: its
// elements in order, "E" and the ref as a client gets it (without its ID,
// minted per lease), then the accessible name the ref stands for when the
// ref shows another (ax="...") and "#" its backend node ID; then its text
// fragments in order, "T text"; then "truncated" when the observation says
// so. An observation lists its elements apart from its text, so how the
// two interleave is nothing the broker shows.
func projected(tb testing.TB, r pageRead) []string {
	tb.Helper()
	var out []string
	for _, e := range r.Elements {
		ref, err := json.Marshal(e.Ref)
		if err != nil {
			tb.Fatal(err)
		}
		line := "E " + string(ref)
		if e.AXName != e.Ref.Name {
			line += fmt.Sprintf(" ax=%q", e.AXName)
		}
		out = append(out, fmt.Sprintf("%s #%d", line, e.BackendNodeID))
	}
	for _, text := range r.Text {
		out = append(out, "T "+text)
	}
	if r.Truncated {
		out = append(out, "truncated")
	}
	return out
}

// checkProjection fails t where the broker shows the in-page read of page
// otherwise than ax.read's, but for the differences pageReaderAllowed
// lists.
func checkProjection(t *testing.T, page string, ax, in pageRead) {
	t.Helper()
	var bad []string
	for _, d := range lineDiff(projected(t, ax), projected(t, in)) {
		if reason, ok := pageReaderAllowed[page+" "+d]; ok {
			t.Logf("allowed: %s (%s)", d, reason)
			continue
		}
		bad = append(bad, d)
	}
	if len(bad) > 0 {
		t.Errorf("%s: the in-page read projects otherwise than ax.read (- ax only, + page only):\n%s", page, strings.Join(bad, "\n"))
	}
}

// lineDiff returns the lines of a longest-common-subsequence diff of want
// and got: "-line" only in want, "+line" only in got.
func lineDiff(want, got []string) []string {
	n, m := len(want), len(got)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if want[i] == got[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && want[i] == got[j]:
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+"+got[j])
			j++
		default:
			out = append(out, "-"+want[i])
			i++
		}
	}
	return slices.Clip(out)
}

// hostilePage is a page of every kind of thing the reader reads (labels,
// a password, a select, listeners, a closed shadow root, a grab list),
// with HOSTILE replaced by a script of the page's own.
const hostilePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<style>.up { text-transform: uppercase; } .tile { cursor: pointer; }</style></head>
<body><main>
<h1>Shop</h1>
<form aria-label="Login">
<p><label for="user">User</label> <input id="user" value="ann"></p>
<p><label for="pw">Password</label> <input id="pw" type="password" value="hunter2"></p>
<p><label><input type="checkbox" checked> Remember</label></p>
<p><select aria-label="Size"><option>Small</option><option selected>Large</option></select></p>
<button type="submit">Sign in</button>
</form>
<div class="tile">Open <b>tile</b></div>
<span id="listened" class="up">Listened</span>
<div id="host"></div>
<ul id="sortable"><li>One</li><li>Two</li></ul>
<p>Some <em>text</em> here.</p>
</main>
<script>
document.getElementById('listened').addEventListener('click', () => {});
document.getElementById('sortable').addEventListener('pointerdown', () => {});
const root = document.getElementById('host').attachShadow({ mode: 'closed' });
root.innerHTML = '<button id="inner">Shadow action</button>';
root.getElementById('inner').addEventListener('click', () => {});
HOSTILE
</script></body></html>
`

// hostileScript redefines, in the page's main world, what a reader in
// that world would call; the reader's isolated world has its own.
const hostileScript = `
Element.prototype.getAttribute = function () { return 'button'; };
Element.prototype.hasAttribute = function () { return true; };
Object.defineProperty(Node.prototype, 'childNodes', { get() { return []; } });
Object.defineProperty(Element.prototype, 'children', { get() { return []; } });
Object.defineProperty(HTMLInputElement.prototype, 'value', { get() { return 'lie'; }, set() {} });
window.getComputedStyle = () => ({ display: 'none', visibility: 'hidden', cursor: 'pointer', content: '"lie"' });
EventTarget.prototype.addEventListener = function () {};
EventTarget.prototype.removeEventListener = function () {};
JSON.stringify = () => '{"nodes":[],"truncated":false,"frameOwners":0}';
TextEncoder.prototype.encode = () => new Uint8Array(0);
globalThis.__dshPageReaderTags = [[document.body, 'click', null]];
`

// TestPageReaderHostilePage reads a page whose scripts redefine the DOM's
// prototypes, getComputedStyle, addEventListener and JSON in its main
// world: it reads as the same page without them, as ax.read reads it, and
// a password field's value is never in the answer.
func TestPageReaderHostilePage(t *testing.T) {
	env := startAXBench(t, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		script := ""
		if r.URL.Path == "/hostile" {
			script = hostileScript
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, strings.Replace(hostilePage, "HOSTILE", script, 1))
	}))
	defer srv.Close()
	read := func(path string) []string {
		tab := env.openURL(t, srv.URL+path)
		defer env.b.CloseTab(t, tab.target)
		env.front(t, tab)
		ax, in := env.compare(t, tab)
		if bytes.Contains(in.answer, []byte("hunter2")) {
			t.Errorf("%s: a password's value in the answer", path)
		}
		checkProjection(t, path, ax, in)
		// Without the backend node IDs, which differ between the tabs.
		got := projected(t, in)
		for i, l := range got {
			if strings.HasPrefix(l, "E ") {
				got[i] = l[:strings.LastIndex(l, " #")]
			}
		}
		return got
	}
	clean, hostile := read("/clean"), read("/hostile")
	for _, want := range []string{
		`E {"id":"","role":"textbox","name":"User","disabled":false,"editable":true,"value":"ann"}`,
		`E {"id":"","role":"textbox","name":"Password","disabled":false,"editable":true}`,
		`E {"id":"","role":"checkbox","name":"Remember","disabled":false,"checked":true}`,
		`E {"id":"","role":"combobox","name":"Size","disabled":false,"value":"Large"}`,
		`E {"id":"","role":"button","name":"Shadow action","disabled":false}`,
		`E {"id":"","role":"generic","name":"LISTENED","disabled":false} ax=""`,
		`E {"id":"","role":"generic","name":"Open tile","disabled":false} ax=""`,
		`E {"id":"","role":"listitem","name":"One","disabled":false} ax=""`,
		"T Some", "T here.",
	} {
		if !slices.Contains(clean, want) {
			t.Errorf("the clean page's read lacks %s:\n%s", want, strings.Join(clean, "\n"))
		}
	}
	if d := lineDiff(clean, hostile); len(d) > 0 {
		t.Errorf("the hostile page reads otherwise than the clean one:\n%s", strings.Join(d, "\n"))
	}
}

// TestPageReaderTags checks that the product's driver leaves none of the
// reader's tags behind, read after read, though its answer's elements got
// their backend node IDs from them. (That the reader's next call, and
// removeTags, remove a read's tags is extension/test/pagereader.test.mjs's.)
func TestPageReaderTags(t *testing.T) {
	env := startAXBench(t, "")
	tab := env.open(t, "/clickables")
	env.front(t, tab)
	for read := range 2 {
		_, in := env.compare(t, tab)
		tagged := 0
		for _, n := range in.nodes(t) {
			if n.BackendNodeID > 0 {
				tagged++
			}
		}
		if tagged == 0 {
			t.Fatalf("read %d: no element has a backend node ID", read)
		}
		if n := chromium.Eval[int](t, env.b, env.worker, fmt.Sprintf("tagCount(%d)", tab.tabID)); n != 0 {
			t.Errorf("after read %d: %d of the reader's tags left, want none", read, n)
		}
	}
}

// TestPageReaderRealApps compares the two reads on the real
// applications' pages (test/realapps: installed by `npm ci` there, which
// scripts/test.sh runs) and logs what differs; with
// DSH_PAGEREADER_REALAPPS=strict a difference fails the test.
func TestPageReaderRealApps(t *testing.T) {
	mode := os.Getenv("DSH_PAGEREADER_REALAPPS")
	if mode == "" {
		t.Skip("DSH_PAGEREADER_REALAPPS is not set")
	}
	dir := filepath.Join("..", "realapps")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skipf("the applications are not installed: %v", err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	pages, err := filepath.Glob(filepath.Join(dir, "pages", "*.html"))
	if err != nil {
		t.Fatal(err)
	}
	env := startAXBench(t, "")
	for _, p := range pages {
		name := strings.TrimSuffix(filepath.Base(p), ".html")
		t.Run(name, func(t *testing.T) {
			tab := env.openURL(t, srv.URL+"/pages/"+filepath.Base(p))
			defer env.b.CloseTab(t, tab.target)
			env.front(t, tab)
			time.Sleep(2 * time.Second) // the application draws itself
			report := t.Logf
			if mode == "strict" {
				report = t.Errorf
			}
			// As loaded, then after clicks on its first buttons (menus,
			// dialogs and sections opened).
			for round := range 3 {
				if round > 0 {
					chromium.Eval[bool](t, env.b, tab.target, fmt.Sprintf(
						"(() => { const b = [...document.querySelectorAll('button, [role=button]')].filter((e) => e.offsetParent)[%d]; b?.click(); return true; })()", round*2))
					time.Sleep(700 * time.Millisecond)
				}
				ax, in := env.compare(t, tab)
				want := projected(t, ax)
				d := lineDiff(want, projected(t, in))
				if len(d) > 0 || owners(in) != owners(ax) {
					report("%s round %d: %d of %d projected lines differ (- ax only, + page only), frameOwners ax %d page %d:\n%s",
						name, round, len(d), len(want), owners(ax), owners(in), strings.Join(d, "\n"))
				}
			}
		})
	}
}

// edgePage holds what the test pages lack: naming from labelledby, titles,
// placeholders, alt text, pseudo-elements and transforms; states from
// ARIA and from ancestors; hidden and inert subtrees; every kind of field.
const edgePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Edges</title>
<style>
.star::before { content: "\2605  "; } .more::after { content: " \2192"; }
.up { text-transform: uppercase; } .cap { text-transform: capitalize; }
.ghost { visibility: hidden; } .ghost .back { visibility: visible; }
</style></head>
<body>
<nav aria-label="Site"><a href="#a">Home</a> <a href="#b"><img src="x.png" alt="Logo"> Shop</a></nav>
<main>
<h1 class="up">Edge cases</h1>
<span id="lbl">Labelled by</span><button aria-labelledby="lbl extra">ignored</button><span id="extra" hidden>Hidden extra</span>
<button title="Only a title"></button>
<button class="star">Starred</button> <button class="more">Read</button>
<button>Line<br>break</button> <button class="cap">capital letters here</button>
<p>A <q>quoted</q> word and <span class="up">shout</span>.</p>
<input type="submit"> <input type="reset"> <input type="button" value="Plain"> <input type="image" alt="Go" src="go.png">
<input placeholder="Search here"> <input type="search" aria-label="Find"> <input type="email" value="a@b.c" title="Mail">
<input type="number" value="7" aria-label="Count"> <input type="range" value="30" aria-label="Volume">
<input type="url" aria-label="Site URL"> <input type="tel" value="555" aria-label="Phone">
<label>Wrapped <input value="inner"></label>
<textarea aria-label="Long">one
two</textarea>
<select multiple aria-label="Many"><option selected>First</option><option>Second</option><optgroup label="More" disabled><option>Third</option></optgroup></select>
<div role="slider" aria-valuenow="5" aria-valuetext="five" aria-label="Level" tabindex="0"></div>
<div role="menuitemcheckbox" aria-checked="mixed">Mixed item</div>
<div role="tablist"><div role="tab" aria-selected="true">First tab</div><div role="tab">Second tab</div></div>
<input type="checkbox" id="indet" aria-label="Indeterminate">
<div contenteditable="plaintext-only" aria-label="Plain editor">plain</div>
<div contenteditable="true"><p>Rich <b>editor</b></p></div>
<div contenteditable="true"><p>Line one<br>Line two</p></div>
<details open><summary>More</summary><p>Details text</p></details>
<details><summary>Closed</summary><p>Closed details text</p><button>In closed details</button></details>
<div hidden="until-found"><p>Found text</p><button>Found button</button></div>
<div style="content-visibility: hidden"><p>Skipped text</p><button>Skipped button</button></div>
<svg width="40" height="20"><a href="#s"><text x="0" y="15">SVG link</text></a></svg>
<canvas width="10" height="10"><button>Canvas fallback</button></canvas>
<div aria-owns="owned">Owner</div><p>Between</p><div id="owned"><button>Owned button</button></div>
<div role="group" aria-disabled="true" aria-label="Off group"><button>In off group</button></div>
<fieldset disabled><legend>Disabled set</legend><input aria-label="In disabled set"><button>Set button</button></fieldset>
<section aria-label="Inert part" inert><button>Inert button</button></section>
<div hidden><button>Hidden button</button></div>
<div aria-hidden="true"><button>Aria hidden button</button></div>
<div class="ghost">Ghost text <span class="back">Back text</span> <button>Ghost button</button></div>
<table><caption>Prices</caption><tr><th>Item</th><th>Cost</th></tr><tr><td>Tea</td><td>3</td></tr></table>
<form aria-labelledby="fh"><h2 id="fh">Contact</h2><button>Send</button></form>
<dialog open aria-label="Notice"><p>Dialog text</p><button>Close</button></dialog>
<meter value="0.5" aria-label="Meter"></meter> <progress value="3" max="10" aria-label="Progress"></progress>
<a href="#x" title="Titled link"></a> <a>No href</a> <a href="#y"><span aria-label="Inner label">x</span></a>
<ul><li><a href="#1">One</a></li><li>Two <button aria-describedby="desc">Described</button></li></ul>
<p id="desc">A description</p>
<span role="button" tabindex="-1">Span button</span> <span role="link" aria-disabled="true">Off link</span>
<div role="switch" aria-checked="true" aria-label="On switch"></div>
<pre>pre   text
  kept</pre>
<div role="presentation" tabindex="0">Focusable presentation</div>
<img alt="" src="decor.png"> <img alt="Photo" src="p.png" title="Photo title">
<svg role="img" aria-label="Chart svg" width="10" height="10"></svg>
<output>Out</output> <abbr title="Abbreviation">abbr</abbr> <code>code()</code>
<label for="c2">Agree</label><input type="checkbox" id="c2"> <input type="radio" aria-label="Pick" checked>
</main>
<footer>Footer text</footer>
<script>document.getElementById('indet').indeterminate = true;</script>
</body></html>
`

// modalPages show a modal dialog, which leaves the rest of the page out
// of Chromium's tree: an HTML one (showModal) and an ARIA one.
var modalPages = map[string]string{
	"/modal": `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Modal</title></head><body>
<main><h1>Behind</h1><button>Behind button</button></main>
<dialog id="d"><p>In the dialog</p><button>Inside button</button></dialog>
<script>document.getElementById('d').showModal();</script></body></html>`,
	"/ariamodal": `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ARIA modal</title></head><body>
<main><h1>Behind</h1><button>Behind button</button></main>
<div role="dialog" aria-modal="true" aria-label="Box"><p>In the box</p><button>Inside button</button></div>
</body></html>`,
	// An editor's document (TinyMCE writes its frame so): the body is the
	// editing host, a node of Chromium's tree.
	"/editorbody": `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Editor</title></head>
<body contenteditable="true" aria-label="Rich Text Area"><p>Dear Ada,</p><p>Yours, Charles</p></body></html>`,
	// An editing host whose role takes its name from its text (GrapesJS
	// makes a heading one) takes none.
	"/editableheading": `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Editable heading</title></head>
<body><h1 contenteditable="true">Summer sale</h1><p>Everything must go.</p></body></html>`,
}

// TestPageReaderEdges compares the two reads on edgePage, the modal pages
// and an editor's document.
func TestPageReaderEdges(t *testing.T) {
	env := startAXBench(t, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page, ok := modalPages[r.URL.Path]
		if !ok {
			page = edgePage
		}
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	for _, path := range []string{"/edges", "/modal", "/ariamodal", "/editorbody", "/editableheading"} {
		t.Run(path[1:], func(t *testing.T) {
			tab := env.openURL(t, srv.URL+path)
			defer env.b.CloseTab(t, tab.target)
			env.front(t, tab)
			ax, in := env.compare(t, tab)
			checkProjection(t, path, ax, in)
		})
	}
}

// TestPageReaderBudgets reads pages of n buttons, each followed by a
// paragraph (2n text fragments), around the projection's budgets (120
// controls, 240 fragments): the read stops once the projection is full,
// never before, and projects as ax.read does.
func TestPageReaderBudgets(t *testing.T) {
	env := startAXBench(t, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		var b strings.Builder
		b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Budgets</title></head><body><main>`)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "<button>B%d</button><p>P%d</p>\n", i, i)
		}
		b.WriteString(`</main></body></html>`)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, b.String())
	}))
	defer srv.Close()
	for _, n := range []int{browser.MaxControls - 1, browser.MaxControls, browser.MaxControls + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tab := env.openURL(t, fmt.Sprintf("%s/?n=%d", srv.URL, n))
			defer env.b.CloseTab(t, tab.target)
			env.front(t, tab)
			ax, in := env.compare(t, tab)
			checkProjection(t, fmt.Sprintf("/?n=%d", n), ax, in)
			full := n >= browser.MaxControls // 120 controls and 240 fragments
			if in.Truncated != full {
				t.Errorf("truncated %t, want %t", in.Truncated, full)
			}
			last := fmt.Sprintf("B%d", min(n, browser.MaxControls))
			buttons, lastRead := 0, false
			for _, nd := range in.nodes(t) {
				if nd.Role == "button" {
					buttons++
					lastRead = lastRead || nd.Name == last
				}
			}
			if want := min(n, browser.MaxControls); buttons != want || !lastRead {
				t.Errorf("%d buttons read, want %d through %s", buttons, want, last)
			}
		})
	}
}
