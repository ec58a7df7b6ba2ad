// The page read's driver (pageread.js) over a FAKE renderer: the reader's
// answer is scripted here (pagereader.js itself runs in real Chromium:
// test/bench/pagereader_test.go), the tags and the page's listeners are
// what DOMDebugger.getEventListeners would answer after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from './fake-chrome.mjs';
import { PAGE_READ } from '../lib/pageread.js';

// page scripts the renderer: nodes is the reader's answer (each {el: true}
// node is tagged with backend node ID 100 + its index), listeners the
// page's own (backend node ID -> types). A second pass (the reader called
// with listened elements) answers rerun(opts) when given. The document's
// own tag names backend node ID 1. The reader's object in its world is
// reader-<context>, and the reader answers the page's URL as url.
function page(t, { nodes, listeners = {}, rerun, frameOwners = 0, fail = false, url = 'https://a.test/' }) {
  const passes = [];
  t.chrome.cdp.set('Page.createIsolatedWorld', () => ({ executionContextId: 7 }));
  t.chrome.cdp.set('Runtime.evaluate', ({ expression, contextId }) => {
    if (expression.startsWith('globalThis.__dshPageReader')) { // the reader's definition, in its world
      assert.equal(contextId, 7);
      return { result: { type: 'function', objectId: `reader-${contextId}` } };
    }
    assert.equal(expression, 'document');
    return { result: { type: 'object', objectId: 'doc-1' } };
  });
  t.chrome.cdp.set('DOM.resolveNode', ({ backendNodeId, executionContextId }) => {
    assert.equal(executionContextId, 7);
    return { object: { objectId: `el-${backendNodeId}` } };
  });
  t.chrome.cdp.set('Runtime.releaseObject', () => ({}));
  t.chrome.cdp.set('Runtime.callFunctionOn', ({ executionContextId, objectId, arguments: args }) => {
    assert.equal(contextOf({ executionContextId, objectId }), 7);
    if (!args) return { result: { type: 'undefined' } }; // removeTags
    if (fail) return { exceptionDetails: { text: 'Uncaught' }, result: { type: 'object' } };
    const opts = args[0].value;
    passes.push({ opts, objects: args.slice(1).map((a) => a.objectId), tag: opts.tag, on: objectId ?? executionContextId });
    const answer = { url, ...(passes.length > 1 && rerun ? rerun(opts) : { nodes, truncated: false, frameOwners }) };
    return { result: { type: 'string', value: JSON.stringify(answer) } };
  });
  t.chrome.cdp.set('DOMDebugger.getEventListeners', ({ objectId, depth, pierce }) => {
    assert.deepEqual([objectId, depth, pierce], ['doc-1', -1, true]);
    const { tag, opts } = passes.at(-1);
    const answered = passes.length > 1 && rerun ? rerun(opts).nodes : nodes;
    const out = [{ type: `${tag}document`, backendNodeId: 1 }, { type: 'click', backendNodeId: 1 }];
    answered.forEach((n, i) => n.el && out.push({ type: `${tag}${i}`, backendNodeId: 100 + i }));
    for (const [id, types] of Object.entries(listeners)) for (const type of types) out.push({ type, backendNodeId: Number(id) });
    return { listeners: out };
  });
  return passes;
}

// contextOf is the context a call runs in: the one it names, or its
// object's (reader-<context>).
const contextOf = ({ executionContextId, objectId }) => executionContextId ?? Number(objectId?.replace(/^reader-/, ''));

async function granted(over = {}) {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/', 'A');
  const { lease } = await t.grant(1, over);
  t.lease = lease;
  t.read = (request = {}) => t.call('ax.read', { lease, request });
  t.methods = () => t.chrome.commands.map((c) => c.method);
  return t;
}

const button = { axId: 'p0', role: 'button', name: 'Add', ignored: false, props: { focusable: true }, el: true };
const text = { axId: 'p1', parentAxId: 'p0', role: 'StaticText', name: 'Add', ignored: false, props: {} };

test('a whole document is read in the page: one reader call, its tags name the backend node IDs', async () => {
  const t = await granted();
  const passes = page(t, { nodes: [button, text], frameOwners: 2 });
  const before = t.chrome.commands.length;
  const r = await t.read();
  assert.deepEqual(r.value, {
    documentEpoch: 'F1:L1', url: 'https://a.test/', title: 'A', truncated: false, frameOwners: 2,
    nodes: [
      { axId: 'p0', role: 'button', name: 'Add', ignored: false, props: { focusable: true }, backendNodeId: 100 },
      { axId: 'p1', parentAxId: 'p0', role: 'StaticText', name: 'Add', ignored: false, props: {} },
    ],
  });
  assert.equal(passes.length, 1);
  assert.match(passes[0].tag, /^dsh[0-9a-f]{8}-$/);
  assert.deepEqual(passes[0].opts.budgets, { controls: 120, regions: 24, texts: 240, textBytes: 32768, nodeBytes: 40960 });
  // The world and the document's handle beside the first frame tree; the
  // listener read right behind the reader, the proving frame tree right
  // behind both, before any answer; then the tags go. The world and the
  // document's object are kept for the next read of the document.
  assert.deepEqual(t.methods().slice(before), [
    'Page.createIsolatedWorld', 'Runtime.evaluate', 'Page.getFrameTree', 'Runtime.evaluate',
    'Runtime.callFunctionOn', 'DOMDebugger.getEventListeners', 'Page.getFrameTree',
    'Runtime.callFunctionOn',
  ]);
  // The reader is defined in its world once, before its first call, and
  // called by a short declaration.
  const define = t.chrome.commands.slice(before)[3];
  assert.match(define.params.expression, /^globalThis\.__dshPageReader[0-9a-f]+ \?\?= function pageReader\(/);
  assert.ok(t.chrome.commands.slice(before)[4].params.functionDeclaration.length < 200);
  assert.equal(t.chrome.commands.slice(before).filter((c) => c.method.startsWith('Accessibility.') || c.method.startsWith('DOMSnapshot.')).length, 0);
});

test('the frame owners are at least the child frames the worker knows of (one in a closed shadow root is out of the reader\'s sight)', async () => {
  const t = await granted();
  const children = (n) => Array.from({ length: n }, (_, i) => ({ frame: { id: `C${i}`, loaderId: 'CL', url: 'https://b.test/' } }));
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: { frame: { id: 'F1', loaderId: 'L1', url: 'https://a.test/' }, childFrames: children(3) } }));
  page(t, { nodes: [button, text], frameOwners: 2 });
  assert.equal((await t.read()).value.frameOwners, 3, 'the first read\'s frame tree has more');
  // The next reads, in the kept world, ask no frame tree: the frame events
  // tell the gate of its child frames.
  const before = t.chrome.commands.length;
  t.chrome.event(1, 'Page.frameDetached', { frameId: 'C1', reason: 'remove' });
  t.chrome.event(1, 'Page.frameDetached', { frameId: 'C2', reason: 'swap' });
  assert.equal((await t.read()).value.frameOwners, 2, 'the reader has more');
  t.chrome.event(1, 'Page.frameAttached', { frameId: 'C3', parentFrameId: 'F1' });
  t.chrome.event(1, 'Page.frameAttached', { frameId: 'C4', parentFrameId: 'F1' });
  t.chrome.event(1, 'Page.frameAttached', { frameId: 'G1', parentFrameId: 'C3' }); // a grandchild: its owner is in C3
  assert.equal((await t.read()).value.frameOwners, 3, 'C0, C3 and C4');
  assert.equal(t.methods().slice(before).filter((m) => m === 'Page.getFrameTree').length, 0);
});

test('a listener of a control the reader sent, or of the document, needs no second pass', async () => {
  const t = await granted();
  const passes = page(t, { nodes: [button, text], listeners: { 100: ['click'] } });
  const r = await t.read();
  assert.equal(r.value.nodes[0].backendNodeId, 100);
  assert.equal(passes.length, 1);
  assert.equal(t.methods().filter((m) => m === 'DOM.resolveNode').length, 0);
});

test('a listened element the reader did not send, or sent as no control, is passed to a second pass', async () => {
  for (const listeners of [{ 555: ['click'] }, { 101: ['mousedown'] }, { 100: ['pointerdown'] }]) {
    const t = await granted();
    const card = { axId: 'p0', role: 'generic', name: '', description: 'Open', ignored: false, props: { clickable: true }, el: true };
    const passes = page(t, {
      nodes: [button, { ...text, el: true }],
      listeners: { ...listeners, 600: ['keydown'] }, // not a press: never passed
      rerun: () => ({ nodes: [card, text], truncated: false, frameOwners: 0 }),
    });
    const r = await t.read();
    assert.equal(passes.length, 2, JSON.stringify(listeners));
    const [id, types] = Object.entries(listeners)[0];
    assert.deepEqual(passes[1].objects, [`el-${id}`]);
    assert.deepEqual(passes[1].opts.listened, [types]);
    assert.equal(passes[1].opts.listenedMore, false);
    assert.notEqual(passes[1].tag, undefined);
    assert.deepEqual(r.value.nodes[0], { axId: 'p0', role: 'generic', name: '', description: 'Open', ignored: false, props: { clickable: true }, backendNodeId: 100 });
    // The proving frame tree is asked again after the second pass.
    const methods = t.methods();
    assert.deepEqual(methods.slice(methods.lastIndexOf('DOMDebugger.getEventListeners') + 1, methods.lastIndexOf('Page.getFrameTree') + 1), ['Page.getFrameTree']);
  }
});

test('a listened element the second pass finds in another document (a child frame) sends no later read of the document round again, until the page adopts it', async () => {
  const t = await granted();
  loader(t);
  const foreignRerun = () => ({ nodes: [button, text], truncated: false, frameOwners: 1, foreign: [0] });
  // Backend node ID 101: the second node's, were it an element of the
  // document the reader sends.
  let passes = page(t, { nodes: [button, text], listeners: { 101: ['click'] }, rerun: foreignRerun });
  await t.read();
  assert.equal(passes.length, 2, 'the first read of the document goes round twice');
  assert.deepEqual(passes[1].objects, ['el-101']);
  passes = page(t, { nodes: [button, text], listeners: { 101: ['click'] }, rerun: foreignRerun });
  const r = await t.read();
  assert.equal(passes.length, 1, 'the next read does not');
  assert.equal(r.value.nodes[0].backendNodeId, 100);
  // The page moves the element into its own document: the reader sends it
  // (tagged: backend node ID 101), as no control, so its listener counts.
  const adopted = { axId: 'p1', role: 'generic', name: 'Moved', ignored: false, props: {}, el: true };
  const card = { ...adopted, props: { clickable: true } };
  passes = page(t, { nodes: [button, adopted], listeners: { 101: ['click'] }, rerun: () => ({ nodes: [button, card], truncated: false, frameOwners: 0 }) });
  const moved = await t.read();
  assert.equal(passes.length, 2);
  assert.deepEqual(moved.value.nodes[1].props, { clickable: true });
});

test('at most PAGE_READ.listened listened elements are passed; a reader that reads past them gives way to the AX read', async () => {
  // At the bound every listened element is passed and the answer stands;
  // one more, and the reader that read past the last one passed gives way.
  for (const count of [PAGE_READ.listened, PAGE_READ.listened + 1]) {
    const t = await granted();
    const listeners = Object.fromEntries(Array.from({ length: count }, (_, i) => [1000 + i, ['click']]));
    const passes = page(t, { nodes: [button], listeners, rerun: (opts) => ({ nodes: [button], truncated: false, incomplete: opts.listenedMore }) });
    t.chrome.cdp.set('Performance.getMetrics', () => ({ metrics: [{ name: 'Nodes', value: 10 }] }));
    t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ documents: [], strings: [] }));
    t.chrome.cdp.set('Accessibility.getFullAXTree', () => ({ nodes: [{ nodeId: '1', ignored: false, role: { value: 'RootWebArea' }, name: { value: 'A' }, backendDOMNodeId: 1 }] }));
    const r = await t.read();
    const past = count > PAGE_READ.listened;
    assert.equal(passes.length, 2, `${count}`);
    assert.deepEqual(passes[1].objects, Array.from({ length: PAGE_READ.listened }, (_, i) => `el-${1000 + i}`));
    assert.equal(passes[1].opts.listened.length, PAGE_READ.listened);
    assert.equal(passes[1].opts.listenedMore, past);
    if (past) {
      assert.deepEqual(r.value.nodes, [{ axId: '1', backendNodeId: 1, role: 'RootWebArea', name: 'A', ignored: false, props: {} }]);
    } else {
      assert.deepEqual(r.value.nodes, [{ axId: 'p0', role: 'button', name: 'Add', ignored: false, props: { focusable: true }, backendNodeId: 100 }]);
    }
    assert.equal(t.methods().includes('Accessibility.getFullAXTree'), past);
  }
});

test('a reader that fails gives way to the AX read', async () => {
  const t = await granted();
  page(t, { nodes: [], fail: true });
  t.chrome.cdp.set('Performance.getMetrics', () => ({ metrics: [{ name: 'Nodes', value: 10 }] }));
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ documents: [], strings: [] }));
  t.chrome.cdp.set('Accessibility.getFullAXTree', () => ({ nodes: [{ nodeId: '1', ignored: false, role: { value: 'RootWebArea' }, name: { value: 'A' }, backendDOMNodeId: 1 }] }));
  const r = await t.read();
  assert.equal(r.ok, true);
  assert.equal(r.value.nodes[0].role, 'RootWebArea');
});

test('a reader that fails in a world already proven gives way to the AX read, which asks the tab it was not given', async () => {
  const t = await granted();
  const scripted = { nodes: [button, text] };
  page(t, scripted);
  await t.read();
  t.chrome.cdp.set('Runtime.callFunctionOn', ({ arguments: args }) => (args ? { exceptionDetails: { text: 'Uncaught' }, result: { type: 'object' } } : { result: { type: 'undefined' } }));
  t.chrome.cdp.set('Performance.getMetrics', () => ({ metrics: [{ name: 'Nodes', value: 10 }] }));
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ documents: [], strings: [] }));
  t.chrome.cdp.set('Accessibility.getFullAXTree', () => ({ nodes: [{ nodeId: '1', ignored: false, role: { value: 'RootWebArea' }, name: { value: 'A' }, backendDOMNodeId: 1 }] }));
  let asked = 0;
  const get = t.chrome.tabs.get;
  t.chrome.tabs.get = async (id) => {
    asked++;
    return get(id);
  };
  const r = await t.read();
  assert.equal(r.ok, true);
  assert.equal(r.value.nodes[0].role, 'RootWebArea');
  assert.equal(asked, 1);
});

test('an answer past the reply cap is cut and says truncated', async () => {
  const t = await granted();
  const big = Array.from({ length: 2000 }, (_, i) => ({ axId: `p${i}`, role: 'StaticText', name: 'x'.repeat(1000), ignored: false, props: {} }));
  page(t, { nodes: big });
  const r = await t.read();
  assert.equal(r.value.truncated, true);
  assert.ok(r.value.nodes.length > 0 && r.value.nodes.length < 2000);
  assert.ok(JSON.stringify(r.value).length < 900000);
});

// flush lets the fake's promises settle.
const flush = () => new Promise((resolve) => setImmediate(resolve));

// loader serves Page.getFrameTree with the current loader ID (a
// navigation changes it).
function loader(t) {
  const doc = { loaderId: 'L1' };
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: { frame: { id: 'F1', loaderId: doc.loaderId, url: 'https://a.test/' } } }));
  return doc;
}

// movingWorld serves the reader in one world at a time, {id} (a
// navigation gives the new document a world of its own): a call in any
// other fails as Chromium fails a call in a context that is gone.
function movingWorld(t, passes) {
  const world = { id: 7 };
  t.chrome.cdp.set('Page.createIsolatedWorld', () => ({ executionContextId: world.id }));
  t.chrome.cdp.set('Runtime.evaluate', ({ expression, contextId }) => (expression === 'document'
    ? { result: { type: 'object', objectId: 'doc-1' } }
    : { result: { type: 'function', objectId: `reader-${contextId}` } }));
  t.chrome.cdp.set('Runtime.callFunctionOn', (params) => {
    if (!params.arguments) return { result: { type: 'undefined' } };
    if (contextOf(params) !== world.id) throw new Error('Cannot find context with specified id');
    const opts = params.arguments[0].value;
    passes.push({ opts, objects: [], tag: opts.tag });
    return { result: { type: 'string', value: JSON.stringify({ nodes: [button, text], truncated: false, frameOwners: 0, url: 'https://a.test/' }) } };
  });
  return world;
}

test('a document read once is read again in one round trip: the reader on its object in the kept world and the listener read, no frame tree; the tab is not asked', async () => {
  const t = await granted();
  loader(t);
  page(t, { nodes: [button, text] });
  const first = await t.read();
  let asked = 0;
  const get = t.chrome.tabs.get;
  t.chrome.tabs.get = async (id) => {
    asked++;
    return get(id);
  };
  const before = t.chrome.commands.length;
  const again = await t.read();
  // The reader, called on its object (its world's document is then the
  // one the read ran in: the proof), and the listener read; then the
  // tags' removal.
  assert.deepEqual(t.methods().slice(before), ['Runtime.callFunctionOn', 'DOMDebugger.getEventListeners', 'Runtime.callFunctionOn']);
  assert.equal(t.chrome.commands[before].params.objectId, 'reader-7');
  assert.equal(t.chrome.commands[before].params.executionContextId, undefined);
  assert.equal(asked, 0);
  assert.deepEqual(again.value, first.value);
  // The URL is the reader's: a document's URL changes without a new
  // document (history.pushState, a fragment).
  page(t, { nodes: [button, text], url: 'https://a.test/list?page=2#end' });
  const moved = await t.read();
  assert.equal(moved.value.url, 'https://a.test/list?page=2#end');
  assert.equal(moved.value.documentEpoch, first.value.documentEpoch);
  assert.equal(t.methods().slice(before).filter((m) => m === 'Page.getFrameTree').length, 0);
});

test('a read in a kept world whose reader answers no HTTP(S) URL, or fails, asks the frame tree that names the document', async () => {
  // Chrome's error page of a failed navigation is the lease's under the
  // URL it could not reach, which only the frame tree tells.
  const t = await granted();
  loader(t);
  page(t, { nodes: [button, text] });
  await t.read();
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: { frame: { id: 'F1', loaderId: 'L1', url: 'chrome-error://chromewebdata/', unreachableUrl: 'https://a.test/down' } } }));
  page(t, { nodes: [button, text], url: 'chrome-error://chromewebdata/' });
  const before = t.chrome.commands.length;
  const r = await t.read();
  assert.equal(r.value.url, 'https://a.test/down');
  assert.deepEqual(t.methods().slice(before), ['Runtime.callFunctionOn', 'DOMDebugger.getEventListeners', 'Page.getFrameTree', 'Runtime.callFunctionOn']);
  // Another origin's URL in the proof ends an origin lease, as a frame
  // tree naming it does.
  const other = await granted({ scope: 'origin' });
  loader(other);
  page(other, { nodes: [button, text] });
  await other.read();
  page(other, { nodes: [button, text], url: 'https://evil.test/' });
  assert.equal((await other.read()).code, 'LEASE_REVOKED');
});

test('the title of a read without the tab asked is the one Chrome last reported', async () => {
  const t = await granted();
  loader(t);
  page(t, { nodes: [button, text] });
  assert.equal((await t.read()).value.title, 'A');
  t.chrome.tabs_.get(1).title = 'B';
  t.chrome.tabs.onUpdated.emit(1, { title: 'B' }, { ...t.chrome.tabs_.get(1) });
  t.chrome.tabs.onUpdated.emit(1, { status: 'complete' }, { ...t.chrome.tabs_.get(1) });
  assert.equal((await t.read()).value.title, 'B');
});

test('a tab closed during a read in a proven world answers LEASE_REVOKED', async () => {
  const t = await granted();
  loader(t);
  page(t, { nodes: [button, text] });
  await t.read();
  // The tab goes as the reader is called: Chrome fails the call (and the
  // frame tree asked then) before the worker hears of the tab's end.
  const gone = () => {
    t.chrome.tabs_.delete(1);
    throw new Error('Debugger is not attached to the tab with id: 1.');
  };
  t.chrome.cdp.set('Runtime.callFunctionOn', gone);
  t.chrome.cdp.set('Page.getFrameTree', gone);
  const r = await t.read();
  assert.equal(r?.code, 'LEASE_REVOKED');
});

test('a navigation drops the world and asks the new document\'s; a world of another document is never used', async () => {
  const t = await granted();
  const doc = loader(t);
  const world = movingWorld(t, page(t, { nodes: [button, text] }));
  await t.read();
  // The page navigates: the event renews the world (context 8).
  doc.loaderId = 'L2';
  world.id = 8;
  const before = t.chrome.commands.length;
  t.chrome.event(1, 'Page.frameNavigated', { frame: { id: 'F1', loaderId: 'L2', url: 'https://a.test/next' } });
  for (let i = 0; i < 10; i++) await flush();
  // The frame tree that proves the world is asked once the reader's object
  // is made in it.
  assert.deepEqual(t.methods().slice(before).filter((m) => m !== 'Runtime.releaseObject'), ['Page.createIsolatedWorld', 'Runtime.evaluate', 'Runtime.evaluate', 'Page.getFrameTree']);
  // At the load event the reader runs once in the new world, with budgets
  // of one, and its tags are taken away; once only.
  const load = t.chrome.commands.length;
  t.chrome.event(1, 'Page.loadEventFired', { timestamp: 1 });
  t.chrome.event(1, 'Page.loadEventFired', { timestamp: 2 });
  for (let i = 0; i < 10; i++) await flush();
  const [warm, untag, ...more] = t.chrome.commands.slice(load);
  assert.deepEqual(more, []);
  assert.equal(warm.method, 'Runtime.callFunctionOn');
  assert.equal(warm.params.executionContextId, 8);
  assert.deepEqual(warm.params.arguments[0].value.budgets, { controls: 1, regions: 1, texts: 1, textBytes: 64, nodeBytes: 256 });
  assert.equal(untag.method, 'Runtime.callFunctionOn');
  assert.equal(untag.params.executionContextId, 8);
  assert.equal(untag.params.arguments, undefined);
  const mid = t.chrome.commands.length;
  const r = await t.read();
  assert.equal(r.value.documentEpoch, 'F1:L2');
  assert.equal(r.value.nodes[0].backendNodeId, 100);
  assert.equal(t.methods().slice(mid).filter((m) => m === 'Page.createIsolatedWorld').length, 0, 'the renewed world serves');
  assert.ok(t.chrome.commands.slice(mid).filter((c) => c.method === 'Runtime.callFunctionOn' && c.params.arguments).every((c) => c.params.objectId === 'reader-8'));
  // A navigation the worker has not heard of: the first frame tree names
  // another document than the world's, the read asks for a new world.
  doc.loaderId = 'L3';
  world.id = 9;
  const late = t.chrome.commands.length;
  const r2 = await t.read();
  assert.equal(r2.value.documentEpoch, 'F1:L3');
  assert.equal(t.methods().slice(late).filter((m) => m === 'Page.createIsolatedWorld').length, 1);
  assert.equal(r2.value.nodes[0].backendNodeId, 100);
});

test('the reader is warmed once the world is kept and the page loaded, whichever comes last, and never in a world a read used', async () => {
  const t = await granted();
  const doc = loader(t);
  const world = movingWorld(t, page(t, { nodes: [button, text] }));
  await t.read();
  const warms = (from) => t.chrome.commands.slice(from).filter((c) => c.method === 'Runtime.callFunctionOn' && c.params.arguments?.[0]?.value?.budgets?.controls === 1);
  // The load event comes before the new world is kept: warmed when it is.
  doc.loaderId = 'L2';
  world.id = 8;
  let from = t.chrome.commands.length;
  t.chrome.event(1, 'Page.frameNavigated', { frame: { id: 'F1', loaderId: 'L2', url: 'https://a.test/next' } });
  t.chrome.event(1, 'Page.loadEventFired', { timestamp: 1 });
  for (let i = 0; i < 10; i++) await flush();
  assert.equal(warms(from).length, 1);
  assert.equal(warms(from)[0].params.executionContextId, 8);
  // A world a read used before the load event is not warmed at it.
  doc.loaderId = 'L3';
  world.id = 9;
  from = t.chrome.commands.length;
  t.chrome.event(1, 'Page.frameNavigated', { frame: { id: 'F1', loaderId: 'L3', url: 'https://a.test/last' } });
  for (let i = 0; i < 10; i++) await flush();
  await t.read();
  t.chrome.event(1, 'Page.loadEventFired', { timestamp: 2 });
  for (let i = 0; i < 10; i++) await flush();
  assert.equal(warms(from).length, 0);
});
