package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/extensions"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/test/harness/testpages"
)

// BenchmarkAXRead times the extension's own AX read (extension/lib/ax.js,
// the code ax.read runs) where the product runs it: in an extension's
// service worker, through chrome.debugger, on a tab of real Chromium, as
// the product calls it (marking the main frame's clickable elements). The
// worker belongs to a bench extension that imports the product's lib/ and
// nothing else, so the figures hold the read alone, without the broker or
// native messaging. Each page is read three ways: by the walk
// (getChildAXNodes, ax.READ.bulkMaxNodes = 0), by one getFullAXTree
// (bulkMaxNodes = Infinity), and as the product chooses (auto). The /rows
// pages of growing size show where one getFullAXTree stops paying. With
// DSH_AXBENCH_BEFORE set to the extension directory of another tree (an
// export of an earlier commit), each page is also read by that tree's
// ax.js (read=before), beside this one's. ms/fenced adds the frame tree
// that proves which document was read, asked as the product asks it
// (extension.js oneDocument): right after the read's last call when the
// read says (lastCall), else once it answered. read=page reads the page
// inside it instead, by the product's driver as extension.js runs it
// (extension/lib/pageread.js, readProduct in the worker): ms/read to its
// answer, ms/fenced to the frame tree that proves the document.
// read=first (/counter, /form, /swagger) is the first read of a document
// just loaded, as an agent's first observation meets it (firstTimes in
// the worker): ms/read with the reader warmed in the document's new world,
// ms/unwarmed without, the loads alternating, medians of firstLoads each.
// BENCHMARKS.md ("Reading the page", "Reading the page in the page") has
// the figures.
func BenchmarkAXRead(b *testing.B) {
	before := os.Getenv("DSH_AXBENCH_BEFORE")
	env := startAXBench(b, before)
	pages := []string{"/counter", "/form", "/swagger", "/big"}
	for _, n := range axBenchRows {
		pages = append(pages, "/rows?n="+strconv.Itoa(n))
	}
	for _, pg := range pages {
		tab := env.open(b, pg)
		answers := map[string]uint32{} // way -> the hash of its answer
		for _, how := range []string{"walk", "bulk", "auto", "before", "page"} {
			if (how == "bulk" && pg == "/big") || (how == "before" && before == "") {
				continue // /big: 2.8 MB of AX nodes, seconds a read, and known to lose
			}
			b.Run(fmt.Sprintf("page=%s/read=%s", pageName(pg), how), func(b *testing.B) {
				env.front(b, tab)
				var st axReadStats
				if how == "page" {
					st = env.productRead(b, tab, b.N)
				} else {
					st = env.read(b, tab, how, b.N, nil)
					answers[how] = st.Sum
				}
				b.ReportMetric(st.Ms, "ms/read")
				b.ReportMetric(st.FencedMs, "ms/fenced")
				b.ReportMetric(float64(st.Calls), "calls/read")
				b.ReportMetric(float64(st.Nodes), "nodes/read")
				b.ReportMetric(float64(st.Bytes), "B/read")
			})
		}
		if pg == "/counter" || pg == "/form" || pg == "/swagger" {
			b.Run(fmt.Sprintf("page=%s/read=first", pageName(pg)), func(b *testing.B) {
				env.front(b, tab)
				var st struct{ Warmed, Unwarmed float64 }
				for range b.N {
					raw := chromium.Eval[json.RawMessage](b, env.b, env.worker, fmt.Sprintf("firstTimes(%d, %q, %d)", tab.tabID, env.pages.URL(pg), firstLoads))
					if err := json.Unmarshal(raw, &st); err != nil {
						b.Fatalf("first read stats %s: %v", raw, err)
					}
				}
				b.ReportMetric(st.Warmed, "ms/read")
				b.ReportMetric(st.Unwarmed, "ms/unwarmed")
			})
		}
		// Every way of ax.read answers the same: the ways differ in cost
		// only (the in-page read answers otherwise, to the same projection:
		// TestPageReaderMatchesAX).
		walk, ok := answers["walk"] // unless a -bench pattern left it out
		for how, sum := range answers {
			if ok && sum != walk {
				b.Errorf("page %s: the %s read answers otherwise than the walk", pg, how)
			}
		}
	}
}

// firstLoads is how many loads of each kind a read=first sample takes.
const firstLoads = 8

// axBenchRows are the sizes of /rows that BenchmarkAXRead reads: about 14
// DOM nodes and 9 AX nodes a row.
var axBenchRows = []int{10, 30, 100, 150, 300}

// pageName turns "/rows?n=10" into "rows10" for a benchmark name.
func pageName(path string) string {
	name := path[1:]
	if n, ok := cutPrefix(name, "rows?n="); ok {
		return "rows" + n
	}
	return name
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return s, false
}

// axBench is a browser with the bench extension loaded and the pages
// served.
type axBench struct {
	b      *chromium.Browser
	pages  *testpages.Server
	worker target.ID
}

// axTab is a page open in a tab the bench extension's worker is attached
// to.
type axTab struct {
	target target.ID
	tabID  int
}

// axReadStats is what the worker reports of a read: the median time of
// its reads, and the shape of the last one.
type axReadStats struct {
	Ms        float64 `json:"ms"`
	FencedMs  float64 `json:"fencedMs"` // with the frame tree after the read, as the product asks it
	Calls     int     `json:"calls"`
	Nodes     int     `json:"nodes"`
	Bytes     int     `json:"bytes"`
	Truncated bool    `json:"truncated"`
	Sum       uint32  `json:"sum"` // a hash of the answer
}

const axBenchManifest = `{
  "manifest_version": 3,
  "name": "DSH AX read bench",
  "description": "Runs the extension's AX read for the benchmarks. Not part of the product.",
  "version": "1.0",
  "background": { "service_worker": "sw.js", "type": "module" },
  "permissions": ["debugger"]
}
`

// axBenchWorker exposes the product's ax.js (and another tree's, under
// before/, when it has one) and times reads with it.
const axBenchWorker = `import * as current from './lib/ax.js';
import * as pageread from './lib/pageread.js';
IMPORT_BEFORE

globalThis.ax = current;
globalThis.axBefore = before;
const defaults = { ...current.READ };
// readTimes reads the tab n times the given way (walk, bulk or auto, and
// settings of ax.READ) and reports the median time and the last read's
// size.
globalThis.readTimes = async (tabId, how, n, settings = {}) => {
  const ax = how === 'before' ? before : current;
  if (ax === current) {
    Object.assign(ax.READ, defaults, settings);
    if (how === 'walk' || how === 'bulk') ax.READ.bulkMaxNodes = how === 'walk' ? 0 : Infinity;
  }
  let calls = 0;
  const send = (method, params) => { calls++; return chrome.debugger.sendCommand({ tabId }, method, params ?? {}); };
  const page = { documentEpoch: 'F:L', url: 'http://bench/', title: 'bench' };
  // The product marks the clickable elements of the main frame's document.
  const { frameTree } = await chrome.debugger.sendCommand({ tabId }, 'Page.getFrameTree', {});
  const times = [];
  const fenced = []; // to the frame tree that proves the document, as the product asks it (oneDocument)
  let res;
  const tree = () => chrome.debugger.sendCommand({ tabId }, 'Page.getFrameTree', {});
  for (let i = 0; i < n; i++) {
    calls = 0;
    let asked;
    const lastCall = () => { asked = tree(); }; // an ax.js without lastCall never calls it
    const t0 = performance.now();
    res = await ax.read(send, page, undefined, undefined, frameTree.frame.id, { shown: true, lastCall }); // the tab is in front
    times.push(performance.now() - t0);
    await (asked ?? tree());
    fenced.push(performance.now() - t0);
  }
  Object.assign(current.READ, defaults);
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const json = JSON.stringify(res);
  let sum = 0x811c9dc5; // FNV-1a of the answer, to compare the ways
  for (let i = 0; i < json.length; i++) sum = Math.imul(sum ^ json.charCodeAt(i), 0x01000193) >>> 0;
  return { ms: median(times), fencedMs: median(fenced), calls, nodes: res.nodes.length,
    bytes: new TextEncoder().encode(json).length, truncated: res.truncated, sum };
};
// readProduct reads the tab in the page as the product does
// (extension.js leased, oneDocument and readDocument): with its driver
// (lib/pageread.js) started beside the frame tree that names the
// document, its world kept per tab and document, and the frame tree that
// proves the document asked after its last call (in a world already
// proven, that tree is the only one). It
// answers the answer, the time to it (ms) and to the proving frame tree
// (fencedMs), and the calls it sent. gate is the driver's state of the tab,
// by default the one kept per tab here.
const productGates = new Map(); // tab ID -> the driver's state of the tab
async function readProduct(tabId, gate = productGates.get(tabId)) {
  let calls = 0;
  const send = (method, params) => { calls++; return chrome.debugger.sendCommand({ tabId }, method, params ?? {}); };
  if (gate === undefined) { // the product knows the main frame from the lease's grant
    const { frameTree } = await send('Page.getFrameTree');
    gate = { mainFrameId: frameTree.frame.id, childFrames: new Set() };
    productGates.set(tabId, gate);
  }
  calls = 0;
  const t0 = performance.now();
  const early = pageread.start(send, gate);
  const tree = early.after ?? send('Page.getFrameTree'); // one tree in a world already proven
  const { frameTree } = await tree;
  gate.epoch = frameTree.frame.id + ':' + frameTree.frame.loaderId;
  let asked;
  const lastCall = (after) => {
    asked = after ?? send('Page.getFrameTree');
    asked.catch(() => {});
  };
  const answer = await pageread.read(send, gate, { documentEpoch: gate.epoch, url: 'http://bench/', title: 'bench' }, { early, lastCall, tree });
  const ms = performance.now() - t0;
  await asked;
  const fencedMs = performance.now() - t0;
  return { answer, ms, fencedMs, calls };
}
// productTimes reads the tab n times in the page as the product does and
// reports the medians and the last read's shape.
globalThis.productTimes = async (tabId, n) => {
  const ms = [];
  const fenced = [];
  let res;
  for (let i = 0; i < n; i++) {
    res = await readProduct(tabId);
    ms.push(res.ms);
    fenced.push(res.fencedMs);
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { ms: median(ms), fencedMs: median(fenced), calls: res.calls, nodes: res.answer.nodes.length,
    bytes: new TextEncoder().encode(JSON.stringify(res.answer)).length, truncated: res.answer.truncated };
};
// firstTimes loads url in the tab n times, and each time reads its
// document the first time as the product does: its world asked as the
// main frame commits and warmed at the load event (pageread.renew and
// loaded, as extension.js calls them), the read 250 ms after the load
// event (the MCP bench's settle). Loads alternate with and without the reader warmed
// in the new world (PAGE_READ.warm); it reports the median time of each
// to the proving frame tree.
const firstGates = new Map(); // tab ID -> the driver's state while firstTimes runs
chrome.debugger.onEvent.addListener(({ tabId }, method, params) => {
  const gate = firstGates.get(tabId);
  if (gate === undefined) return;
  if (method === 'Page.frameNavigated' && !params.frame.parentId) {
    gate.epoch = params.frame.id + ':' + params.frame.loaderId;
    pageread.renew(gate, (m, p) => chrome.debugger.sendCommand({ tabId }, m, p ?? {}));
  }
  if (method === 'Page.loadEventFired') {
    pageread.loaded(gate, (m, p) => chrome.debugger.sendCommand({ tabId }, m, p ?? {}));
    gate.loaded?.();
  }
});
globalThis.firstTimes = async (tabId, url, n) => {
  const send = (method, params) => chrome.debugger.sendCommand({ tabId }, method, params ?? {});
  const { frameTree } = await send('Page.getFrameTree');
  const gate = { mainFrameId: frameTree.frame.id, childFrames: new Set() };
  firstGates.set(tabId, gate);
  const times = { warmed: [], unwarmed: [] };
  try {
    for (let i = 0; i < 2 * n; i++) {
      const way = i % 2 === 0 ? 'warmed' : 'unwarmed';
      pageread.PAGE_READ.warm = way === 'warmed';
      const loaded = new Promise((resolve) => { gate.loaded = resolve; });
      await send('Page.navigate', { url });
      await loaded;
      await new Promise((resolve) => setTimeout(resolve, 250));
      times[way].push((await readProduct(tabId, gate)).fencedMs);
    }
  } finally {
    pageread.PAGE_READ.warm = true;
    firstGates.delete(tabId);
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { warmed: median(times.warmed), unwarmed: median(times.unwarmed) };
};
// compareRead answers the tab's ax.read (as the product reads it) and
// its in-page read by the product's driver.
globalThis.compareRead = async (tabId) => {
  const send = (method, params) => chrome.debugger.sendCommand({ tabId }, method, params ?? {});
  const page = { documentEpoch: 'F:L', url: 'http://bench/', title: 'bench' };
  const { frameTree } = await send('Page.getFrameTree');
  const ax = await current.read(send, page, undefined, undefined, frameTree.frame.id, { shown: true });
  return { ax, page: (await readProduct(tabId)).answer };
};
// tagCount counts the listeners that tag elements for the product's
// driver (a type of dsh, 8 hex digits and a dash: pageread.js options).
globalThis.tagCount = async (tabId) => {
  const send = (method, params) => chrome.debugger.sendCommand({ tabId }, method, params ?? {});
  const { result: { objectId } } = await send('Runtime.evaluate', { expression: 'document' });
  const { listeners } = await send('DOMDebugger.getEventListeners', { objectId, depth: -1, pierce: true });
  await send('Runtime.releaseObject', { objectId });
  return (listeners ?? []).filter((l) => /^dsh[0-9a-f]{8}-/.test(l.type)).length;
};
globalThis.attach = async (tabId) => {
  await chrome.debugger.attach({ tabId }, '1.3');
  for (const m of ['Page.enable', 'DOM.enable', 'Accessibility.enable', 'Performance.enable']) {
    await chrome.debugger.sendCommand({ tabId }, m, {});
  }
  return true;
};
`

// startAXBench launches Chromium, serves the test pages and loads the bench
// extension: the product's extension/lib beside a worker of its own, and
// under before/ the lib of the extension directory before, if not empty.
func startAXBench(tb testing.TB, before string) *axBench {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "axbench")
	libs := map[string]string{"lib": filepath.Join(stack.ExtensionDir(tb), "lib")}
	worker := strings.Replace(axBenchWorker, "IMPORT_BEFORE", "const before = undefined;", 1)
	if before != "" {
		libs["before"] = filepath.Join(before, "lib")
		worker = strings.Replace(axBenchWorker, "IMPORT_BEFORE", "import * as before from './before/ax.js';", 1)
	}
	for name, lib := range libs {
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(lib)); err != nil {
			tb.Fatal(err)
		}
	}
	for name, text := range map[string]string{"manifest.json": axBenchManifest, "sw.js": worker} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	e := &axBench{b: chromium.Launch(tb, chromium.Options{}), pages: testpages.Serve(tb)}
	ctx, cancel := context.WithTimeout(e.b.Ctx, callTimeout)
	defer cancel()
	res, err := chromedp.CallBrowser(ctx, extensions.LoadUnpacked, extensions.LoadUnpackedParams{Path: dir})
	if err != nil {
		tb.Fatalf("load the bench extension: %v", err)
	}
	e.worker = e.b.ServiceWorker(tb, res.ID)
	deadline := time.Now().Add(callTimeout)
	for !chromium.Eval[bool](tb, e.b, e.worker, `typeof globalThis.readTimes === "function" && !!chrome.debugger`) {
		if time.Now().After(deadline) {
			tb.Fatal("the bench extension's worker never got ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return e
}

// open opens path in a foreground tab and attaches the worker to it.
func (e *axBench) open(tb testing.TB, path string) axTab {
	tb.Helper()
	return e.openURL(tb, e.pages.URL(path))
}

// openURL opens url in a foreground tab and attaches the worker to it.
func (e *axBench) openURL(tb testing.TB, url string) axTab {
	tb.Helper()
	t := axTab{target: e.b.OpenTab(tb, url)}
	t.tabID = e.b.TabIDOf(tb, t.target)
	chromium.Eval[bool](tb, e.b, e.worker, fmt.Sprintf("attach(%d)", t.tabID))
	// The first read after a load has the renderer build its accessibility
	// tree: a cost of the page, not of the way it is read.
	e.read(tb, t, "auto", 1, nil)
	return t
}

// front brings the tab to the front: a read of a hidden tab is another
// matter (queryAXTree never answers there).
func (e *axBench) front(tb testing.TB, t axTab) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(e.b.Ctx, callTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, target.ActivateTarget, target.ActivateTargetParams{TargetID: t.target}); err != nil {
		tb.Fatal(err)
	}
}

// productRead reads the tab n times in the page as the product does
// (productTimes in the worker).
func (e *axBench) productRead(tb testing.TB, t axTab, n int) axReadStats {
	tb.Helper()
	raw := chromium.Eval[json.RawMessage](tb, e.b, e.worker, fmt.Sprintf("productTimes(%d, %d)", t.tabID, n))
	var st axReadStats
	if err := json.Unmarshal(raw, &st); err != nil {
		tb.Fatalf("page read stats %s: %v", raw, err)
	}
	return st
}

// read reads the tab n times the given way in the worker, with settings
// of ax.READ.
func (e *axBench) read(tb testing.TB, t axTab, how string, n int, settings map[string]any) axReadStats {
	tb.Helper()
	q, _ := json.Marshal(how)
	set, _ := json.Marshal(settings)
	raw := chromium.Eval[json.RawMessage](tb, e.b, e.worker, fmt.Sprintf("readTimes(%d, %s, %d, %s)", t.tabID, q, n, set))
	var st axReadStats
	if err := json.Unmarshal(raw, &st); err != nil {
		tb.Fatalf("read stats %s: %v", raw, err)
	}
	return st
}
