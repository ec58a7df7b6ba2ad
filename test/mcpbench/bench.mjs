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
//   DSH_PAGES_ORIGIN      http://127.0.0.1:<port> serving /form, /counter, /big
//   DSH_CONTROL_URL       GET <it>/navigate?path=/big loads a page in the broker's tab
//   DSH_CHROMIUM_BIN      the Chromium binary the anchors launch
//   DSH_CHROMIUM_VERSION  its --version, for the report
//   DSH_MCPBENCH_N        measured iterations (default 15)
//   DSH_MCPBENCH_WARMUP   warm-up iterations, not counted (default 2)
//   DSH_MCPBENCH_PLAYWRIGHT_ARGS  extra flags for @playwright/mcp, split at
//                         spaces (e.g. "--timeout-settle 0")
//   DSH_MCPBENCH_DUMP     a directory: write there what each server answered
//                         (snapshot, find, click) in the last iteration
//
// Every iteration, for each page and each server in turn (the order rotates
// from one iteration to the next), it loads the page afresh (not timed),
// takes the snapshot a model would read (timed: bytes and milliseconds),
// and on /counter and /big clicks a button by the ref from that snapshot
// (timed) and checks with one more snapshot (not timed) that the click
// happened. It prints a Markdown table of medians and p90s with ratios to
// broker mcp, then one JSON line with every sample.
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
const WARMUP = Number(process.env.DSH_MCPBENCH_WARMUP || 2);
const DUMP = process.env.DSH_MCPBENCH_DUMP;
const PLAYWRIGHT_ARGS = (process.env.DSH_MCPBENCH_PLAYWRIGHT_ARGS ?? '').split(' ').filter(Boolean);
const SETTLE_MS = 250; // after each page load, for every server alike (not timed)

const log = (...a) => console.error('[mcpbench]', ...a);
const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const bytes = (s) => Buffer.byteLength(s, 'utf8');
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The tasks. click: the button's accessible name, and the text on the page
// once it has been clicked (the page is loaded afresh before each click).
// expect: broker mcp's click carries action.expected {text: after}, as its
// tool description advises. Not on /big: the broker checks the expected
// text against its bounded observation, which stops long before "Target",
// so the postcondition can never pass there (the act re-observes until its
// 10 s deadline and answers failed although the click happened).
const PAGES = [
  { path: '/form' },
  { path: '/counter', click: { name: 'Add one', after: 'Clicks: 1', before: 'Clicks: 0', expect: true } },
  { path: '/big', click: { name: 'Target', after: 'Target clicked', expect: false } },
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
    const claim = await this.call('browser_claim', { instanceId: env.instance, tab: env.tab });
    this.leaseId = claim.text.match(/leaseId=(\S+)/)?.[1] ?? this.fail('no leaseId', claim.text);
  }
  async load(path) {
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
  async click(target, click) {
    const action = { kind: 'click', ref: target.ref };
    if (click.expect) action.expected = { kind: 'text', text: click.after };
    const r = await this.call('browser_act', { leaseId: this.leaseId, documentEpoch: target.epoch, action });
    const want = click.expect ? /: succeeded \(dispatch observed, postcondition passed\)/ : /: unknown \(dispatch observed, postcondition unverified\)/;
    if (!want.test(r.text)) this.fail('click did not succeed', r.text);
    return r;
  }
  // clicked checks the page with a fresh observation (a query on /big,
  // whose full outline stops before the button).
  async clicked(click) {
    const { text } = click.name === 'Target' ? await this.find(click.after) : await this.snapshot();
    return click.name === 'Target' ? /1 match\b/.test(text) && text.includes(`button "${click.after}"`) : text.includes(click.after);
  }
}

class Playwright extends Server {
  constructor(dir) {
    super('@playwright/mcp', new StdioClientTransport({
      command: join(here, 'node_modules', '.bin', 'playwright-mcp'),
      args: ['--browser', 'chromium', '--executable-path', env.chromium, '--headless', '--isolated', '--no-sandbox', '--output-dir', dir, ...PLAYWRIGHT_ARGS],
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
    return click.name === 'Target' ? text.includes(`button "${click.after}"`) : text.includes(`"${click.after}"`);
  }
}

class DevTools extends Server {
  constructor(dir) {
    super('chrome-devtools-mcp', new StdioClientTransport({
      command: join(here, 'node_modules', '.bin', 'chrome-devtools-mcp'),
      args: ['--executablePath', env.chromium, '--headless', '--isolated', '--chromeArg=--no-sandbox',
        '--no-usage-statistics', '--no-performance-crux'],
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
    return click.name === 'Target' ? text.includes(`button "${click.after}"`) : text.includes(`"${click.after}"`);
  }
}

// task runs one page's task on one server and returns its sample.
async function task(server, page) {
  await server.load(page.path);
  await sleep(SETTLE_MS);
  const snap = await server.snapshot();
  const dump = (what, text) => {
    if (DUMP) writeFileSync(join(DUMP, `${server.name.replace(/\W+/g, '_')}${page.path.replace('/', '_')}_${what}.txt`), text);
  };
  dump('snapshot', snap.text);
  const sample = { server: server.name, page: page.path, snapBytes: snap.bytes, snapMs: snap.ms };
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
  if (!target) server.fail(`no button "${c.name}"`, snap.text);
  const click = await server.click(target, c);
  sample.clickMs = click.ms;
  sample.clickBytes = click.bytes;
  dump('click', click.text);
  if (!(await server.clicked(c))) throw new Error(`${server.name}: the click on "${c.name}" on ${page.path} did not happen`);
  return sample;
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
  const servers = [new Broker(), new Playwright(mk()), new DevTools(mk())];
  try {
    for (const s of servers) {
      const t0 = performance.now();
      await s.connect();
      log(`${s.name}: connected (${s.version}, ${s.tools} tools) in ${(performance.now() - t0).toFixed(0)} ms`);
    }
    const samples = [];
    for (let i = 0; i < WARMUP + N; i++) {
      for (const page of PAGES) {
        for (let k = 0; k < servers.length; k++) {
          const s = servers[(i + k) % servers.length];
          const sample = await task(s, page);
          if (i >= WARMUP) samples.push({ iter: i - WARMUP, ...sample });
        }
      }
      log(`iteration ${i + 1}/${WARMUP + N}${i < WARMUP ? ' (warm-up)' : ''} done`);
    }
    report(servers, samples);
  } finally {
    await Promise.allSettled(servers.map((s) => s.close()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

function report(servers, samples) {
  const broker = servers[0].name;
  const of = (page, server) => samples.filter((x) => x.page === page && x.server === server);
  // ratio is the anchor's median over broker mcp's, and (in brackets) the
  // median of the per-iteration ratios, whose pairs ran next to each other.
  const ratio = (page, server, f) => {
    const a = of(page, server).filter((x) => f(x) !== undefined);
    const b = of(page, broker).filter((x) => f(x) !== undefined);
    const r = median(a.map(f)) / median(b.map(f));
    if (server === broker) return '1';
    const pairs = a.map((x) => [f(x), b.find((y) => y.iter === x.iter)]).filter(([, y]) => y).map(([v, y]) => v / f(y));
    return `${r.toFixed(2)}× (${median(pairs).toFixed(2)}×)`;
  };
  const range = (xs) => {
    const lo = Math.min(...xs), hi = Math.max(...xs), m = median(xs);
    return lo === hi ? fmtInt(m) : `${fmtInt(m)} (${fmtInt(lo)}–${fmtInt(hi)})`;
  };
  const total = (x) => x.snapMs + (x.findMs ?? 0) + x.clickMs;
  const totalBytes = (x) => x.snapBytes + (x.findBytes ?? 0) + x.clickBytes;

  const out = [];
  out.push(`MCP servers side by side: ${N} iterations after ${WARMUP} warm-up, servers interleaved round-robin`);
  out.push(`Chromium: ${process.env.DSH_CHROMIUM_VERSION ?? env.chromium}; Node ${process.version}`);
  for (const s of servers) out.push(`- ${s.name}: ${s.version}; ${s.tools} tools, tools/list ${fmtInt(s.toolBytes)} B of JSON`);
  if (PLAYWRIGHT_ARGS.length) out.push(`- @playwright/mcp ran with the extra flags: ${PLAYWRIGHT_ARGS.join(' ')}`);
  out.push('');
  out.push('Snapshot (ratios to broker mcp: of the medians, and in brackets the median of per-iteration ratios)');
  out.push('');
  out.push('| page | server | tool | bytes | ÷ broker | ms median | p90 | ÷ broker |');
  out.push('|---|---|---|---:|---:|---:|---:|---:|');
  for (const page of PAGES) {
    for (const s of servers) {
      const xs = of(page.path, s.name);
      const bytesRatio = median(xs.map((x) => x.snapBytes)) / median(of(page.path, broker).map((x) => x.snapBytes));
      out.push(`| ${page.path} | ${s.name} | \`${s.snapshotTool}\` | ${range(xs.map((x) => x.snapBytes))} | ${s.name === broker ? '1' : `${bytesRatio.toFixed(2)}×`} | ${fmtMs(median(xs.map((x) => x.snapMs)))} | ${fmtMs(quantile(xs.map((x) => x.snapMs), 0.9))} | ${ratio(page.path, s.name, (x) => x.snapMs)} |`);
    }
  }
  out.push('');
  out.push('Click by the snapshot\'s ref; "snapshot → clicked" adds the snapshot (and broker mcp\'s find) to the click');
  out.push('');
  out.push('| page | server | tool | click ms median | p90 | ÷ broker | result bytes | snapshot → clicked ms | ÷ broker | snapshot → clicked bytes | ÷ broker |');
  out.push('|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const page of PAGES.filter((p) => p.click)) {
    for (const s of servers) {
      const xs = of(page.path, s.name);
      const tb = median(xs.map(totalBytes)) / median(of(page.path, broker).map(totalBytes));
      out.push(`| ${page.path} | ${s.name} | \`${s.clickTool}\` | ${fmtMs(median(xs.map((x) => x.clickMs)))} | ${fmtMs(quantile(xs.map((x) => x.clickMs), 0.9))} | ${ratio(page.path, s.name, (x) => x.clickMs)} | ${range(xs.map((x) => x.clickBytes))} | ${fmtMs(median(xs.map(total)))} | ${ratio(page.path, s.name, total)} | ${fmtInt(median(xs.map(totalBytes)))} | ${s.name === broker ? '1' : `${tb.toFixed(2)}×`} |`);
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
  console.log(out.join('\n'));
  console.log('\nsamples ' + JSON.stringify(samples));
}

main().catch((e) => {
  console.error(e?.stack ?? e);
  process.exit(1);
});
