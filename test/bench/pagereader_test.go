package bench

import (
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
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/testpages"
)

// TestPageReaderMatchesAX holds the in-page read (extension/lib/pagereader.js)
// to Chromium's accessibility tree: on every test page, what the broker's
// projection (browser/runtime/observe.go: entryOf, clickableNames, project)
// makes of the in-page read must be what it makes of ax.read as the
// product reads it today (extension/lib/ax.js) — the same text fragments
// and the same elements (role, name, value, checked, disabled, editable,
// clickable, and the backend node ID its ref stands for), in the same
// order. A difference that cannot be removed is in pageReaderAllowed,
// with its reason.
func TestPageReaderMatchesAX(t *testing.T) {
	env := startAXBench(t, "")
	pages := append(testpages.Paths(), "/rows?n=30")
	for _, pg := range pages {
		t.Run(pageName(pg), func(t *testing.T) {
			tab := env.open(t, pg)
			defer env.b.CloseTab(t, tab.target)
			env.front(t, tab)
			ax, in := env.compare(t, tab)
			if os.Getenv("DSH_PAGEREADER_DUMP") != "" {
				dumpNodes(t, "ax", ax.Nodes)
				dumpNodes(t, "page", in.Nodes)
			}
			want, got := projectLines(ax.Nodes), projectLines(in.Nodes)
			if in.FrameOwners != ax.FrameOwners {
				if reason, ok := pageReaderAllowed[fmt.Sprintf("%s frameOwners %d %d", pg, ax.FrameOwners, in.FrameOwners)]; ok {
					t.Logf("allowed: frameOwners %d, ax %d (%s)", in.FrameOwners, ax.FrameOwners, reason)
				} else {
					t.Errorf("frameOwners: page %d, ax %d", in.FrameOwners, ax.FrameOwners)
				}
			}
			var bad []string
			for _, d := range lineDiff(want, got) {
				if reason, ok := pageReaderAllowed[pg+" "+d]; ok {
					t.Logf("allowed: %s (%s)", d, reason)
					continue
				}
				bad = append(bad, d)
			}
			if len(bad) > 0 {
				t.Errorf("the in-page read projects otherwise than ax.read (- ax only, + page only):\n%s", strings.Join(bad, "\n"))
			}
		})
	}
}

// pageReaderAllowed lists the differences the test accepts, by page and
// diff line ("/path -E ..." or "/path +T ...") or frame owner counts
// ("/path frameOwners AX PAGE"), each with its reason.
var pageReaderAllowed = map[string]string{
	// An iframe of another site in a closed shadow root: the isolated
	// world cannot open a closed root (but one holding an element the page
	// listens on, passed in), and the tab's frame tree leaves out a frame
	// of another site (another process); ax.read's DOM snapshot sees it.
	"/frames frameOwners 8 7": "a frame owner of another site in a closed shadow root",
}

// pageAnswer is a read's answer: ax.read's or the in-page read's.
type pageAnswer struct {
	Nodes       []pageNode `json:"nodes"`
	Truncated   bool       `json:"truncated"`
	FrameOwners int        `json:"frameOwners"`
}

// pageNode is the AX node the broker decodes (browser/runtime/provider.go
// axNode).
type pageNode struct {
	AXID          string  `json:"axId"`
	ParentAXID    string  `json:"parentAxId"`
	BackendNodeID int64   `json:"backendNodeId"`
	Role          string  `json:"role"`
	Name          string  `json:"name"`
	Description   string  `json:"description"`
	Value         *string `json:"value"`
	Ignored       bool    `json:"ignored"`
	Props         struct {
		Disabled  bool   `json:"disabled"`
		Focusable bool   `json:"focusable"`
		Editable  string `json:"editable"`
		Checked   string `json:"checked"`
		Hidden    bool   `json:"hidden"`
		Clickable bool   `json:"clickable"`
	} `json:"props"`
}

// compare reads the tab both ways (compareRead in the bench worker), the
// in-page read by the product's driver.
func (e *axBench) compare(tb testing.TB, t axTab) (ax, in pageAnswer) {
	tb.Helper()
	return e.compareBy(tb, t, "product")
}

// compareBy is compare with the in-page read by driver: "product"
// (extension/lib/pageread.js) or "bench" (the bench worker's readInPage).
func (e *axBench) compareBy(tb testing.TB, t axTab, driver string) (ax, in pageAnswer) {
	tb.Helper()
	raw := chromium.Eval[json.RawMessage](tb, e.b, e.worker, fmt.Sprintf("compareRead(%d, %q)", t.tabID, driver))
	var both struct {
		AX   pageAnswer `json:"ax"`
		Page pageAnswer `json:"page"`
	}
	if err := json.Unmarshal(raw, &both); err != nil {
		tb.Fatalf("compareRead: %v", err)
	}
	return both.AX, both.Page
}

func dumpNodes(tb testing.TB, label string, nodes []pageNode) {
	var b strings.Builder
	for _, n := range nodes {
		v := ""
		if n.Value != nil {
			v = fmt.Sprintf(" value=%q", *n.Value)
		}
		fmt.Fprintf(&b, "%s<%s %s %q%s desc=%q props=%+v id=%d\n", n.AXID, n.ParentAXID, n.Role, n.Name, v, n.Description, n.Props, n.BackendNodeID)
	}
	tb.Logf("%s: %d nodes\n%s", label, len(nodes), b.String())
}

// projectLines is what the broker's projection shows of nodes, a line
// each: "T text" for a text fragment, "E role|name|value|checked|
// disabled|editable|backendNodeId" for an element, "X" for an element
// dropped for its name. It mirrors browser/runtime/observe.go's project
// (with entryOf and clickableNames) and its budgets.
func projectLines(nodes []pageNode) []string {
	var out []string
	controls, regions, nodeBytes, textBytes, texts := 0, 0, 0, 0, 0
	clickable := clickableNamesOf(nodes)
	for i, n := range nodes {
		line, size, region, ok := entryLine(n)
		if name, c := clickable[i]; c {
			line, size, region, ok = elementLine(n.Role, name, nil, "", n.Props.Disabled, false, n.BackendNodeID), len(name)+64, false, true
		}
		switch {
		case !ok:
			continue
		case line == "X":
			out = append(out, line)
			continue
		case strings.HasPrefix(line, "T "):
			text := line[2:]
			if texts >= browser.MaxTextFragment || textBytes+len(text) > browser.MaxTextBytes {
				continue
			}
			texts++
			textBytes += len(text)
			out = append(out, line)
			continue
		}
		if (region && regions >= browser.MaxRegions) || (!region && controls >= browser.MaxControls) || nodeBytes+size > browser.MaxNodeBytes {
			continue
		}
		nodeBytes += size
		if region {
			regions++
		} else {
			controls++
		}
		out = append(out, line)
	}
	return out
}

var (
	testControlRoles = func() map[string]bool {
		m := map[string]bool{}
		for _, r := range browser.ControlRoles {
			m[r] = true
		}
		return m
	}()
	testRegionRoles = map[string]bool{
		"region": true, "form": true, "group": true, "dialog": true, "alertdialog": true,
		"main": true, "navigation": true, "search": true, "complementary": true, "banner": true,
		"contentinfo": true, "table": true, "list": true, "tabpanel": true,
	}
	testCheckableRoles = map[string]bool{"checkbox": true, "switch": true, "radio": true, "menuitemcheckbox": true, "menuitemradio": true}
)

// entryLine mirrors entryOf (without a query).
func entryLine(n pageNode) (line string, size int, region, ok bool) {
	if n.Ignored || n.Props.Hidden {
		return "", 0, false, false
	}
	name := strings.TrimSpace(n.Name)
	if n.Role == "StaticText" {
		return "T " + name, 0, false, name != ""
	}
	editable := n.Props.Editable != ""
	region = testRegionRoles[n.Role]
	if !testControlRoles[n.Role] && !(n.Props.Focusable && editable) && !(region && name != "") {
		return "", 0, false, false
	}
	if utf16Len(n.Name) > browser.MaxNameLength || n.BackendNodeID <= 0 {
		return "X", 0, false, true
	}
	region = region && !testControlRoles[n.Role]
	value := n.Value
	if value != nil && (utf16Len(*value) > browser.MaxValueLength || region) {
		value = nil
	}
	checked := ""
	if testCheckableRoles[n.Role] {
		checked = "false"
		if n.Props.Checked == "true" || n.Props.Checked == "mixed" {
			checked = n.Props.Checked
		}
	}
	size = len(n.Name) + 64
	if value != nil {
		size += len(*value)
	}
	return elementLine(n.Role, n.Name, value, checked, n.Props.Disabled, editable, n.BackendNodeID), size, region, true
}

func elementLine(role, name string, value *string, checked string, disabled, editable bool, id int64) string {
	v := "-"
	if value != nil {
		v = fmt.Sprintf("%q", *value)
	}
	return fmt.Sprintf("E %s|%q|%s|%s|%t|%t|%d", role, name, v, checked, disabled, editable, id)
}

// clickableNamesOf mirrors clickableNames.
func clickableNamesOf(nodes []pageNode) map[int]string {
	const maxClickableName = 100
	index := map[string]int{}
	candidates := map[int]bool{}
	for i, n := range nodes {
		if n.AXID != "" {
			index[n.AXID] = i
		}
		region := testRegionRoles[n.Role] && strings.TrimSpace(n.Name) != ""
		if n.Props.Clickable && !n.Ignored && !n.Props.Hidden && n.BackendNodeID > 0 && n.Role != "StaticText" &&
			!testControlRoles[n.Role] && !region && !(n.Props.Focusable && n.Props.Editable != "") {
			candidates[i] = true
		}
	}
	words := map[int][]string{}
	wordBytes := map[int]int{}
	blocked := map[int]bool{}
	for _, n := range nodes {
		control := testControlRoles[n.Role] || (n.Props.Focusable && n.Props.Editable != "")
		text := n.Role == "StaticText" && !n.Ignored && !n.Props.Hidden
		if !control && !text {
			continue
		}
		for id, steps := n.ParentAXID, 0; id != "" && steps < 64; steps++ {
			a, ok := index[id]
			if !ok {
				break
			}
			switch {
			case !candidates[a]:
			case control:
				blocked[a] = true
			case wordBytes[a] <= 4*maxClickableName:
				words[a] = append(words[a], n.Name)
				wordBytes[a] += len(n.Name) + 1
			}
			id = nodes[a].ParentAXID
		}
	}
	collapse := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	out := map[int]string{}
	for i := range candidates {
		if blocked[i] {
			continue
		}
		name := collapse(nodes[i].Name)
		if name == "" {
			name = collapse(nodes[i].Description)
		}
		if name == "" {
			name = collapse(strings.Join(words[i], " "))
		}
		out[i] = strings.TrimSpace(cutUTF16(name, maxClickableName))
	}
	return out
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

func cutUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		units++
		if r > 0xFFFF {
			units++
		}
		if units > n {
			return s[:i]
		}
	}
	return s
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
		for _, n := range in.Nodes {
			if strings.Contains(n.Name, "hunter2") || (n.Value != nil && strings.Contains(*n.Value, "hunter2")) {
				t.Errorf("%s: a password's value in the answer: %+v", path, n)
			}
		}
		want, got := projectLines(ax.Nodes), projectLines(in.Nodes)
		if d := lineDiff(want, got); len(d) > 0 {
			t.Errorf("%s: the in-page read projects otherwise than ax.read:\n%s", path, strings.Join(d, "\n"))
		}
		// Without the backend node IDs, which differ between the tabs.
		for i, l := range got {
			if strings.HasPrefix(l, "E ") {
				got[i] = l[:strings.LastIndexByte(l, '|')]
			}
		}
		return got
	}
	clean, hostile := read("/clean"), read("/hostile")
	for _, want := range []string{
		`E textbox|"User"|"ann"||false|true`, `E textbox|"Password"|-||false|true`, `E checkbox|"Remember"|-|true|false|false`,
		`E combobox|"Size"|"Large"||false|false`, `E button|"Shadow action"|-||false|false`, `E generic|"LISTENED"|-||false|false`,
		`E generic|"Open tile"|-||false|false`, `E listitem|"One"|-||false|false`, "T Some", "T here.",
	} {
		if !slices.Contains(clean, want) {
			t.Errorf("the clean page's read lacks %s:\n%s", want, strings.Join(clean, "\n"))
		}
	}
	if d := lineDiff(clean, hostile); len(d) > 0 {
		t.Errorf("the hostile page reads otherwise than the clean one:\n%s", strings.Join(d, "\n"))
	}
}

// TestPageReaderTags checks that the listeners tagging the answer's
// elements never outlive the next read, and that removeTags removes them.
func TestPageReaderTags(t *testing.T) {
	env := startAXBench(t, "")
	tab := env.open(t, "/clickables")
	env.front(t, tab)
	count := func() int { return chromium.Eval[int](t, env.b, env.worker, fmt.Sprintf("tagCount(%d)", tab.tabID)) }
	_, in := env.compareBy(t, tab, "bench") // the product's driver removes its tags at once
	elements := 0
	for _, n := range in.Nodes {
		if n.BackendNodeID > 0 {
			elements++
		}
	}
	if elements == 0 {
		t.Fatal("the read tagged no element")
	}
	// One a read for the document besides (the driver tells its
	// listeners from its elements').
	if n := count(); n != elements+1 {
		t.Errorf("after a read: %d tags, want one for each of its %d elements and the document's", n, elements)
	}
	env.compareBy(t, tab, "bench")
	if n := count(); n != elements+1 {
		t.Errorf("after a second read: %d tags, want %d (the first read's removed)", n, elements+1)
	}
	chromium.Eval[bool](t, env.b, env.worker, fmt.Sprintf("untag(%d)", tab.tabID))
	if n := count(); n != 0 {
		t.Errorf("after removeTags: %d tags, want none", n)
	}
	// The product's driver removes its tags once it has read them.
	if _, in := env.compare(t, tab); len(in.Nodes) == 0 {
		t.Fatal("the product's read answered no node")
	}
	if n := chromium.Eval[int](t, env.b, env.worker, fmt.Sprintf("tagCount(%d, true)", tab.tabID)); n != 0 {
		t.Errorf("after the product's read: %d of its tags left, want none", n)
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
				if os.Getenv("DSH_PAGEREADER_DUMP") != "" {
					dumpNodes(t, "ax", ax.Nodes)
					dumpNodes(t, "page", in.Nodes)
				}
				want, got := projectLines(ax.Nodes), projectLines(in.Nodes)
				d := lineDiff(want, got)
				if len(d) > 0 || in.FrameOwners != ax.FrameOwners {
					report("%s round %d: %d of %d projected lines differ (- ax only, + page only), frameOwners ax %d page %d:\n%s",
						name, round, len(d), len(want), ax.FrameOwners, in.FrameOwners, strings.Join(d, "\n"))
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
}

// TestPageReaderEdges compares the two reads on edgePage and the modal
// pages.
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
	for _, path := range []string{"/edges", "/modal", "/ariamodal"} {
		t.Run(path[1:], func(t *testing.T) {
			tab := env.openURL(t, srv.URL+path)
			defer env.b.CloseTab(t, tab.target)
			env.front(t, tab)
			ax, in := env.compare(t, tab)
			if os.Getenv("DSH_PAGEREADER_DUMP") != "" {
				dumpNodes(t, "ax", ax.Nodes)
				dumpNodes(t, "page", in.Nodes)
			}
			var bad []string
			for _, d := range lineDiff(projectLines(ax.Nodes), projectLines(in.Nodes)) {
				if reason, ok := pageReaderAllowed[path+" "+d]; ok {
					t.Logf("allowed: %s (%s)", d, reason)
					continue
				}
				bad = append(bad, d)
			}
			if len(bad) > 0 {
				t.Errorf("the in-page read projects otherwise than ax.read (- ax only, + page only):\n%s", strings.Join(bad, "\n"))
			}
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
			if d := lineDiff(projectLines(ax.Nodes), projectLines(in.Nodes)); len(d) > 0 {
				t.Errorf("the in-page read projects otherwise than ax.read:\n%s", strings.Join(d, "\n"))
			}
			full := n >= browser.MaxControls // 120 controls and 240 fragments
			if in.Truncated != full {
				t.Errorf("truncated %t, want %t", in.Truncated, full)
			}
			last := fmt.Sprintf("B%d", min(n, browser.MaxControls))
			buttons := 0
			for _, nd := range in.Nodes {
				if nd.Role == "button" {
					buttons++
				}
			}
			if want := min(n, browser.MaxControls); buttons != want || !slices.ContainsFunc(in.Nodes, func(nd pageNode) bool { return nd.Name == last }) {
				t.Errorf("%d buttons read, want %d through %s", buttons, want, last)
			}
		})
	}
}
