// The same page tasks through three MCP servers, side by side in one
// process: `broker mcp` (this repository), @playwright/mcp and
// chrome-devtools-mcp. Each is driven by the official TypeScript SDK's
// Client over stdio, as an MCP host would drive it.
//
// mcpbench_test.go starts the broker (personal mode), Chromium with the
// extension and one tab, and the test pages, then runs this script with:
//
//   DSH_BROKER_BIN        the built broker binary
//   DSH_RUNTIME_DIR       that broker's runtime directory
//   DSH_INSTANCE, DSH_TAB the connected browser and the tab to claim
//   DSH_PAGES_ORIGIN      http://127.0.0.1:<port> serving the test pages
//   DSH_CONTROL_URL       GET <it>/navigate?path=/big loads a page in the broker's tab
//   DSH_CHROMIUM_BIN      the Chromium binary the anchors launch
//   DSH_CHROMIUM_VERSION  its --version, for the report
//   DSH_MCPBENCH_N        measured iterations (default 15)
//   DSH_MCPBENCH_WARMUP   warm-up iterations, not counted (default 2)
//   DSH_MCPBENCH_COLD     cold starts per server (default 3; 0 skips them)
//   DSH_MCPBENCH_PLAYWRIGHT_ARGS  extra flags for @playwright/mcp, split at
//                         spaces (e.g. "--timeout-settle 0")
//   DSH_MCPBENCH_DUMP     a directory: write there what each server answered
//                         (snapshot, find, click) in the last iteration
//   DSH_MCPBENCH_PROBE=1  instead of the tables, the latency probe (probe below):
//                         broker mcp and chrome-devtools-mcp only, DSH_MCPBENCH_N
//                         rounds (default 15) on DSH_MCPBENCH_PROBE_PAGES
//                         (default /counter,/form)
//
// First, for each server in turn, a few cold starts: a fresh server
// process, from its start to its first snapshot of /form (what a host pays
// when a session begins, the anchors' own browser launch included). Then
// every iteration, for each page and each server in turn (the order rotates
// from one iteration to the next), it loads the page afresh (not timed),
// takes the snapshot a model would read (timed: bytes and milliseconds),
// and on the pages with a button clicks it by the ref from that snapshot
// (timed) and checks with one more snapshot (not timed) that the click
// happened. broker mcp clicks twice, each time on a page loaded afresh:
// once without an expectation and once with action.expected (the anchors
// have no such thing: their one click stands for both). It prints Markdown
// tables of medians and p90s with ratios to broker mcp, then one JSON line
// with every sample.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = dirname(fileURLToPath(import.meta.url));
const env = {
  bin: process.env.DSH_BROKER_BIN,
  runtimeDir: process.env.DSH_RUNTIME_DIR,
  instance: process.env.DSH_INSTANCE,
  tab: process.env.DSH_TAB,
  origin: process.env.DSH_PAGES_ORIGIN,
  control: process.env.DSH_CONTROL_URL,
  chromium: process.env.DSH_CHROMIUM_BIN,
};
for (const [k, v] of Object.entries(env)) {
  if (!v) {
    console.error(`missing ${k}: run through \`DSH_MCPBENCH=1 go test ./test/mcpbench -run . -v -count=1\``);
    process.exit(2);
  }
}
const N = Number(process.env.DSH_MCPBENCH_N || 15);
const COLD = Number(process.env.DSH_MCPBENCH_COLD ?? 3);
const WARMUP = Number(process.env.DSH_MCPBENCH_WARMUP || 2);
const DUMP = process.env.DSH_MCPBENCH_DUMP;
// DSH_MCPBENCH_ONLY=broker runs broker mcp alone (no ratios): for
// iterating on it, never for a table.
const ONLY_BROKER = process.env.DSH_MCPBENCH_ONLY === 'broker';
const PLAYWRIGHT_ARGS = (process.env.DSH_MCPBENCH_PLAYWRIGHT_ARGS ?? '').split(' ').filter(Boolean);
const SETTLE_MS = 250; // after each page load, for every server alike (not timed)
// Every browser of the benchmark resolves no host name but loopback, as the
// broker's does (test/harness/chromium): a page can never reach past this
// machine.
const RESOLVER_RULES = '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost';

const log = (...a) => console.error('[mcpbench]', ...a);
const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const bytes = (s) => Buffer.byteLength(s, 'utf8');
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The tasks. click: the button's accessible name, and the text on the page
// once it has been clicked (the page is loaded afresh before each click).
// expect: broker mcp also clicks with action.expected {text: after}, as its
// tool description advises. On /big that click is made once per run, not
// every iteration (bigExpect): the broker has checked the expected text
// against its bounded observation, which stops long before "Target", so
// the act re-observed until its 10 s deadline and answered failed although
// the click happened; the run records what it answers now.
const PAGES = [
  { path: '/form', click: { name: 'Greet', after: 'Hello, !', expect: true } },
  { path: '/counter', click: { name: 'Add one', after: 'Clicks: 1', before: 'Clicks: 0', expect: true } },
  { path: '/swagger', click: { name: 'get /pet/findByStatus', after: 'Try it out', expect: true } },
  { path: '/big', click: { name: 'Target', after: 'Target clicked', expect: false, bigExpect: true } },
  // A button inside a same-origin (srcdoc) iframe: found and clicked with
  // one snapshot and one click, when the snapshot shows frames inline. A
  // server whose snapshot does not show it is recorded (inFrame), not failed.
  { path: '/blankframes', click: { name: 'Inside srcdoc', after: 'Clicked inside', expect: true, inFrame: true } },
];

// Server wraps one MCP client. Subclasses say how to load a page, which tool
// gives the snapshot, how to find a button's ref in it and how to click.
class Server {
  constructor(name, transport) {
    this.name = name;
    this.stderr = '';
    this.transport = transport;
    transport.stderr?.on('data', (c) => { this.stderr = (this.stderr + c).slice(-20000); });
    this.client = new Client({ name: 'dsh-mcpbench', version: '1.0.0' });
  }
  async connect() {
    await this.client.connect(this.transport);
    const v = this.client.getServerVersion();
    this.version = `${v?.name} ${v?.version}`;
    const { tools } = await this.client.listTools();
    this.tools = tools.length;
    this.toolBytes = bytes(JSON.stringify(tools));
  }
  // call calls a tool and times it; a tool error fails the run.
  async call(name, args) {
    const t0 = performance.now();
    const result = await this.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    const ms = performance.now() - t0;
    const text = textOf(result);
    if (result.isError) {
      throw new Error(`${this.name}: ${name} ${JSON.stringify(args)} failed:\n${text}\nstderr (tail):\n${this.stderr.slice(-4000)}`);
    }
    return { text, ms, bytes: bytes(text) };
  }
  fail(what, text) {
    throw new Error(`${this.name}: ${what} in:\n${text.slice(0, 4000)}${text.length > 4000 ? '\n…' : ''}`);
  }
  close() { return this.client.close(); }
}

class Broker extends Server {
  constructor() {
    super('broker mcp', new StdioClientTransport({
      command: env.bin, args: ['mcp', '--runtime-dir', env.runtimeDir], stderr: 'pipe',
    }));
    this.snapshotTool = 'browser_observe';
    this.clickTool = 'browser_act';
  }
  async connect() {
    await super.connect();
    const { text } = await this.call('browser_list', { instanceId: env.instance });
    if (!text.includes(`tab=${env.tab} `)) this.fail(`no tab=${env.tab}`, text);
    await this.claim();
  }
  async claim() {
    const claim = await this.call('browser_claim', { instanceId: env.instance, tab: env.tab });
    this.leaseId = claim.text.match(/leaseId=(\S+)/)?.[1] ?? this.fail('no leaseId', claim.text);
    this.claimedAt = performance.now();
  }
  async load(path) {
    // A lease lasts 5 minutes and a run takes longer: a new one well
    // before it ends (not timed, as the load is not).
    if (performance.now() - this.claimedAt > 4 * 60_000) {
      await this.call('browser_handoff', { leaseId: this.leaseId });
      await this.claim();
    }
    const res = await fetch(`${env.control}/navigate?path=${encodeURIComponent(path)}`);
    if (!res.ok) throw new Error(`navigate ${path}: ${res.status} ${await res.text()}`);
  }
  snapshot() { return this.call('browser_observe', { leaseId: this.leaseId }); }
  // ref finds the button in an outline, with the documentEpoch to act with.
  ref(text, name) {
    const ref = text.match(new RegExp(`- button ${esc(JSON.stringify(name))} \\[ref=(r[0-9a-f]+)\\]`))?.[1];
    const epoch = text.match(/documentEpoch=(\S+)/)?.[1];
    return ref && epoch ? { ref, epoch } : null;
  }
  // find is the outline's way to an element past its budgets: an
  // observation by exact name.
  find(name) { return this.call('browser_observe', { leaseId: this.leaseId, query: { name, role: 'button' } }); }
  // click clicks, with action.expected when expect; a click whose
  // expectation the broker could not confirm is returned (its outcome
  // recorded) when lenient, else it fails the run.
  async click(target, click, { expect = false, lenient = false } = {}) {
    const action = { kind: 'click', ref: target.ref };
    if (expect) action.expected = { kind: 'text', text: click.after };
    const r = await this.call('browser_act', { leaseId: this.leaseId, documentEpoch: target.epoch, action });
    r.outcome = r.text.match(/: (\w+ \(dispatch \w+, postcondition \w+\))/)?.[1] ?? "?";
    const want = expect ? /: succeeded \(dispatch observed, postcondition passed\)/ : /: unknown \(dispatch observed, postcondition unverified\)/;
    if (!want.test(r.text) && !lenient) this.fail('click did not succeed', r.text);
    return r;
  }
  // clicked checks the page with a fresh observation (a query on /big,
  // whose full outline stops before the button).
  async clicked(click) {
    const { text } = click.name === 'Target' ? await this.find(click.after) : await this.snapshot();
    return click.name === 'Target' ? /1 match\b/.test(text) && text.includes(`button "${click.after}"`) : text.includes(click.after);
  }
}

// playwrightConfig writes @playwright/mcp's configuration: the flags its
// command line cannot give Chromium.
function playwrightConfig(dir) {
  const file = join(dir, 'playwright-mcp.json');
  writeFileSync(file, JSON.stringify({ browser: { launchOptions: { args: [RESOLVER_RULES] } } }));
  return file;
}

class Playwright extends Server {
  constructor(dir) {
    super('@playwright/mcp', new StdioClientTransport({
      command: join(here, 'node_modules', '.bin', 'playwright-mcp'),
      args: ['--config', playwrightConfig(dir), '--browser', 'chromium', '--executable-path', env.chromium, '--headless', '--isolated',
        '--no-sandbox', '--output-dir', dir, ...PLAYWRIGHT_ARGS],
      cwd: dir, // it writes snapshot files under its working directory
      stderr: 'pipe',
    }));
    this.snapshotTool = 'browser_snapshot';
    this.clickTool = 'browser_click';
  }
  async load(path) { await this.call('browser_navigate', { url: env.origin + path }); }
  snapshot() { return this.call('browser_snapshot', {}); }
  ref(text, name) {
    const ref = text.match(new RegExp(`- button ${esc(JSON.stringify(name))} \\[ref=([^\\]\\s]+)\\]`))?.[1];
    return ref ? { ref } : null;
  }
  click(target, click) { return this.call('browser_click', { element: `${click.name} button`, target: target.ref }); }
  async clicked(click) {
    const { text } = await this.snapshot();
    return click.name === 'Target' ? text.includes(`button "${click.after}"`) : text.includes(click.after);
  }
}

class DevTools extends Server {
  constructor(dir) {
    super('chrome-devtools-mcp', new StdioClientTransport({
      command: join(here, 'node_modules', '.bin', 'chrome-devtools-mcp'),
      args: ['--executablePath', env.chromium, '--headless', '--isolated', '--chromeArg=--no-sandbox',
        `--chromeArg=${RESOLVER_RULES}`, '--no-usage-statistics', '--no-performance-crux'],
      cwd: dir,
      stderr: 'pipe',
    }));
    this.snapshotTool = 'take_snapshot';
    this.clickTool = 'click';
  }
  async connect() {
    await super.connect();
    const { text } = await this.call('list_pages', {});
    this.pageId = Number(text.match(/^(\d+): .*\[selected\]/m)?.[1] ?? this.fail('no selected page', text));
  }
  async load(path) { await this.call('navigate_page', { pageId: this.pageId, type: 'url', url: env.origin + path }); }
  snapshot() { return this.call('take_snapshot', { pageId: this.pageId }); }
  ref(text, name) {
    const ref = text.match(new RegExp(`uid=(\\S+) button ${esc(JSON.stringify(name))}(?: |$)`, 'm'))?.[1];
    return ref ? { ref } : null;
  }
  click(target) { return this.call('click', { pageId: this.pageId, uid: target.ref }); }
  async clicked(click) {
    const { text } = await this.snapshot();
    return click.name === 'Target' ? text.includes(`button "${click.after}"`) : text.includes(click.after);
  }
}

// task runs one page's task on one server and returns its sample; with
// expect (broker mcp only), the click carries action.expected.
async function task(server, page, { expect = false, lenient = false } = {}) {
  await server.load(page.path);
  await sleep(SETTLE_MS);
  const snap = await server.snapshot();
  const dump = (what, text) => {
    if (DUMP) writeFileSync(join(DUMP, `${server.name.replace(/\W+/g, '_')}${page.path.replace('/', '_')}_${what}${expect ? '_expect' : ''}.txt`), text);
  };
  dump('snapshot', snap.text);
  const sample = { server: server.name, page: page.path, expect, snapBytes: snap.bytes, snapMs: snap.ms };
  if (!page.click) return sample;
  const c = page.click;
  if (c.before && !snap.text.includes(c.before)) server.fail(`no "${c.before}" before the click`, snap.text);
  let target = server.ref(snap.text, c.name);
  if (!target && server.find) {
    // Not in the snapshot (past its budgets): one more call to find it.
    const found = await server.find(c.name);
    sample.findMs = found.ms;
    sample.findBytes = found.bytes;
    dump('find', found.text);
    target = server.ref(found.text, c.name);
  }
  if (!target && c.inFrame) {
    sample.notFound = true;
    return sample;
  }
  if (!target) server.fail(`no button "${c.name}"`, snap.text);
  const click = await server.click(target, c, { expect, lenient });
  sample.clickMs = click.ms;
  sample.clickBytes = click.bytes;
  if (click.outcome) sample.outcome = click.outcome;
  dump('click', click.text);
  if (!(await server.clicked(c))) throw new Error(`${server.name}: the click on "${c.name}" on ${page.path} did not happen`);
  return sample;
}

// coldStart starts a fresh server process and times it to its first
// snapshot of /form: initialize and tools/list, then for broker mcp the
// browser list and the claim of its tab (the page is already open in the
// user's browser), for the anchors the navigation that launches their
// browser; then the snapshot.
// probe separates what a snapshot costs from the path it takes, for
// broker mcp and chrome-devtools-mcp in turn (the order rotates each
// round): per round, 10 MCP pings; for broker mcp 10 browser_list calls
// without an instance (broker mcp and the broker only) and 10 with one (a
// provider round trip: native messaging, the extension, chrome.tabs.query);
// then per page a fresh load, 250 ms, and three snapshots in a row (fresh,
// again, again2). It prints the median of each.
async function probe() {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-mcpprobe-'));
  const servers = [new Broker(), new DevTools(dir)];
  const pages = (process.env.DSH_MCPBENCH_PROBE_PAGES ?? '/counter,/form').split(',');
  const samples = new Map();
  const add = (key, ms) => samples.set(key, [...(samples.get(key) ?? []), ms]);
  try {
    for (const s of servers) await s.connect();
    for (let i = 0; i < N; i++) {
      for (let k = 0; k < servers.length; k++) {
        const s = servers[(i + k) % servers.length];
        for (let j = 0; j < 10; j++) {
          const t0 = performance.now();
          await s.client.ping();
          add(`${s.name}: ping`, performance.now() - t0);
        }
        if (s instanceof Broker) {
          for (let j = 0; j < 10; j++) {
            add(`${s.name}: browser_list (the broker only)`, (await s.call('browser_list', {})).ms);
            add(`${s.name}: browser_list of the tabs (a provider round trip)`, (await s.call('browser_list', { instanceId: env.instance })).ms);
          }
        }
        for (const path of pages) {
          await s.load(path);
          await sleep(SETTLE_MS);
          for (const when of ['fresh', 'again', 'again2']) add(`${s.name}: ${path} ${s.snapshotTool} ${when}`, (await s.snapshot()).ms);
        }
      }
      log(`probe round ${i + 1}/${N} done`);
    }
    console.log(`Latency probe: ${N} rounds, servers interleaved; medians in ms`);
    for (const [key, xs] of samples) console.log(`- ${key}: ${fmtMs(median(xs))} (min ${fmtMs(Math.min(...xs))}, n=${xs.length})`);
  } finally {
    await Promise.allSettled(servers.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  }
}

async function coldStart(make) {
  const server = make();
  try {
    const t0 = performance.now();
    await server.connect();
    const connected = performance.now() - t0;
    if (server instanceof Broker) await server.load('/form'); // not timed: the user's page is there already
    const t1 = performance.now();
    if (!(server instanceof Broker)) await server.load('/form');
    await server.snapshot();
    return { server: server.name, connectedMs: connected, firstSnapshotMs: connected + performance.now() - t1 };
  } finally {
    await server.close();
    await sleep(1000); // broker mcp's lease ends as its connection does: let it go before the next claim
  }
}

function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(q * s.length) - 1)];
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmtMs = (x) => (x === undefined ? '–' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
const fmtInt = (x) => (x === undefined ? '–' : Math.round(x).toLocaleString('en-US'));

async function main() {
  const dirs = [];
  const mk = () => { const d = mkdtempSync(join(tmpdir(), 'mcpbench-')); dirs.push(d); return d; };
  const makers = [() => new Broker(), () => new Playwright(mk()), () => new DevTools(mk())].slice(0, ONLY_BROKER ? 1 : 3);
  const cold = [];
  for (let i = 0; i < COLD; i++) {
    for (const make of makers) {
      const c = await coldStart(make);
      cold.push(c);
      log(`${c.server}: cold start ${i + 1}/${COLD}: ${c.firstSnapshotMs.toFixed(0)} ms to the first snapshot`);
    }
  }
  const servers = makers.map((make) => make());
  try {
    for (const s of servers) {
      const t0 = performance.now();
      await s.connect();
      log(`${s.name}: connected (${s.version}, ${s.tools} tools) in ${(performance.now() - t0).toFixed(0)} ms`);
    }
    const samples = [];
    let bigExpect;
    for (let i = 0; i < WARMUP + N; i++) {
      for (const page of PAGES) {
        for (let k = 0; k < servers.length; k++) {
          const s = servers[(i + k) % servers.length];
          const runs = [{}];
          if (s instanceof Broker && page.click?.expect) runs.push({ expect: true });
          if (s instanceof Broker && page.click?.bigExpect && i === WARMUP) runs.push({ expect: true, lenient: true });
          for (const opts of runs) {
            const sample = await task(s, page, opts);
            if (opts.lenient) bigExpect = sample;
            else if (i >= WARMUP) samples.push({ iter: i - WARMUP, ...sample });
          }
        }
      }
      log(`iteration ${i + 1}/${WARMUP + N}${i < WARMUP ? ' (warm-up)' : ''} done`);
    }
    report(servers, samples, cold, bigExpect);
  } finally {
    await Promise.allSettled(servers.map((s) => s.close()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

function report(servers, samples, cold, bigExpect) {
  const broker = servers[0].name;
  const anchors = servers.slice(1).map((s) => s.name);
  // rows: broker mcp's plain click, its click with action.expected, then
  // the anchors' (one click each: they have no expectations).
  const of = (page, server, expect = false) => samples.filter((x) => x.page === page && x.server === server && !!x.expect === expect);
  // vs is broker mcp's median over the anchor's (above 1: broker mcp costs
  // more), and in brackets the median of the per-iteration ratios, whose
  // pairs ran next to each other.
  const vs = (page, expect, anchor, f) => {
    const b = of(page, broker, expect).filter((x) => f(x) !== undefined);
    const a = of(page, anchor).filter((x) => f(x) !== undefined);
    if (!a.length || !b.length) return '–';
    const pairs = b.map((x) => [f(x), a.find((y) => y.iter === x.iter)]).filter(([, y]) => y).map(([v, y]) => v / f(y));
    return `${(median(b.map(f)) / median(a.map(f))).toFixed(2)}× (${median(pairs).toFixed(2)}×)`;
  };
  const range = (xs) => {
    const lo = Math.min(...xs), hi = Math.max(...xs), m = median(xs);
    return lo === hi ? fmtInt(m) : `${fmtInt(m)} (${fmtInt(lo)}–${fmtInt(hi)})`;
  };
  const total = (x) => (x.clickMs === undefined ? undefined : x.snapMs + (x.findMs ?? 0) + x.clickMs);
  const totalBytes = (x) => x.snapBytes + (x.findBytes ?? 0) + x.clickBytes;

  const out = [];
  out.push(`MCP servers side by side: ${N} iterations after ${WARMUP} warm-up, servers interleaved round-robin`);
  out.push(`Chromium: ${process.env.DSH_CHROMIUM_VERSION ?? env.chromium}; Node ${process.version}`);
  for (const s of servers) out.push(`- ${s.name}: ${s.version}; ${s.tools} tools, tools/list ${fmtInt(s.toolBytes)} B of JSON`);
  if (PLAYWRIGHT_ARGS.length) out.push(`- @playwright/mcp ran with the extra flags: ${PLAYWRIGHT_ARGS.join(' ')}`);
  out.push('');
  out.push(`Ratios: broker mcp ÷ the anchor, of the medians, and in brackets the median of per-iteration ratios (above 1: broker mcp costs more).`);
  out.push('');
  out.push('Snapshot');
  out.push('');
  out.push(`| page | server | tool | bytes | ms median | p90 | ${anchors.map((a) => `broker ÷ ${a} (ms)`).join(' | ')} | ${anchors.map((a) => `broker ÷ ${a} (bytes)`).join(' | ')} |`);
  out.push(`|---|---|---|---:|---:|---:|${anchors.map(() => '---:').join('|')}|${anchors.map(() => '---:').join('|')}|`);
  for (const page of PAGES) {
    for (const s of servers) {
      const xs = of(page.path, s.name);
      const mine = s.name === broker;
      const bytesVs = (a) => (median(of(page.path, broker).map((x) => x.snapBytes)) / median(of(page.path, a).map((x) => x.snapBytes))).toFixed(3) + '×';
      out.push(`| ${page.path} | ${s.name} | \`${s.snapshotTool}\` | ${range(xs.map((x) => x.snapBytes))} | ${fmtMs(median(xs.map((x) => x.snapMs)))} | ${fmtMs(quantile(xs.map((x) => x.snapMs), 0.9))} | ${anchors.map((a) => (mine ? vs(page.path, false, a, (x) => x.snapMs) : '')).join(' | ')} | ${anchors.map((a) => (mine ? bytesVs(a) : '')).join(' | ')} |`);
    }
  }
  out.push('');
  out.push('Click by the snapshot\'s ref (the page loaded afresh before each); "snapshot → clicked" adds the snapshot (and broker mcp\'s find) to the click');
  out.push('');
  out.push(`| page | server | click ms median | p90 | result bytes | ${anchors.map((a) => `broker ÷ ${a} (click ms)`).join(' | ')} | snapshot → clicked ms | ${anchors.map((a) => `broker ÷ ${a}`).join(' | ')} | outcome |`);
  out.push(`|---|---|---:|---:|---:|${anchors.map(() => '---:').join('|')}|---:|${anchors.map(() => '---:').join('|')}|---|`);
  for (const page of PAGES.filter((p) => p.click)) {
    const rows = [[broker, false], ...(page.click.expect ? [[broker, true]] : []), ...anchors.map((a) => [a, false])];
    for (const [name, expect] of rows) {
      const xs = of(page.path, name, expect).filter((x) => !x.notFound);
      if (!xs.length) continue;
      const mine = name === broker;
      const label = mine ? `${name}${expect ? ', expected text' : ', no expectation'}` : name;
      const outcomes = [...new Set(xs.map((x) => x.outcome).filter(Boolean))].join('; ');
      out.push(`| ${page.path} | ${label} | ${fmtMs(median(xs.map((x) => x.clickMs)))} | ${fmtMs(quantile(xs.map((x) => x.clickMs), 0.9))} | ${range(xs.map((x) => x.clickBytes))} | ${anchors.map((a) => (mine ? vs(page.path, expect, a, (x) => x.clickMs) : '')).join(' | ')} | ${fmtMs(median(xs.map(total)))} | ${anchors.map((a) => (mine ? vs(page.path, expect, a, total) : '')).join(' | ')} | ${outcomes} |`);
    }
  }
  for (const page of PAGES.filter((p) => p.click)) {
    for (const s of servers) {
      const xs = of(page.path, s.name).filter((x) => x.findMs !== undefined);
      if (!xs.length) continue;
      out.push('');
      out.push(`${page.path} ${s.name}: "${page.click.name}" is past the snapshot's budgets in ${xs.length} of ${N} iterations; finding it by name (${s.snapshotTool} query) took ${fmtMs(median(xs.map((x) => x.findMs)))} ms median, p90 ${fmtMs(quantile(xs.map((x) => x.findMs), 0.9))}, ${range(xs.map((x) => x.findBytes))} B.`);
    }
  }
  for (const page of PAGES.filter((p) => p.click?.inFrame)) {
    out.push('');
    out.push(`${page.path}: the button "${page.click.name}" inside a same-origin iframe, by the snapshot's ref (tool calls: the snapshot, any find, the click)`);
    out.push('');
    out.push('| server | found in the snapshot | tool calls to click it | snapshot → clicked ms median |');
    out.push('|---|---:|---:|---:|');
    for (const s of servers) {
      const xs = of(page.path, s.name);
      const found = xs.filter((x) => !x.notFound);
      const calls = found.length ? median(found.map((x) => 2 + (x.findMs !== undefined ? 1 : 0))) : undefined;
      out.push(`| ${s.name} | ${found.length} of ${xs.length} | ${calls ?? 'not clicked'} | ${found.length ? fmtMs(median(found.map(total))) : '–'} |`);
    }
  }
  if (bigExpect) {
    out.push('');
    out.push(`/big broker mcp, once, a click with action.expected {text: "Target clicked"}: ${fmtMs(bigExpect.clickMs)} ms, ${fmtInt(bigExpect.clickBytes)} B, ${bigExpect.outcome}.`);
  }
  if (cold.length) {
    out.push('');
    out.push(`Cold start: a fresh server process to its first snapshot of /form (${COLD} each, servers in turn)`);
    out.push('');
    out.push(`| server | connected ms median | first snapshot ms median | all (first snapshot) | broker ÷ it |`);
    out.push('|---|---:|---:|---|---:|');
    const cm = (name, f) => median(cold.filter((c) => c.server === name).map(f));
    for (const s of servers) {
      const xs = cold.filter((c) => c.server === s.name);
      const r = s.name === broker ? '1' : `${(cm(broker, (c) => c.firstSnapshotMs) / cm(s.name, (c) => c.firstSnapshotMs)).toFixed(2)}×`;
      out.push(`| ${s.name} | ${fmtMs(cm(s.name, (c) => c.connectedMs))} | ${fmtMs(cm(s.name, (c) => c.firstSnapshotMs))} | ${xs.map((c) => fmtMs(c.firstSnapshotMs)).join(', ')} | ${r} |`);
    }
  }
  console.log(out.join('\n'));
  console.log('\nsamples ' + JSON.stringify({ samples, cold, bigExpect }));
}

(process.env.DSH_MCPBENCH_PROBE === '1' ? probe() : main()).catch((e) => {
  console.error(e?.stack ?? e);
  process.exit(1);
});
