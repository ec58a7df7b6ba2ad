// frames.list and capture over a FAKE tab whose frames, snapshot, boxes and
// screenshots come from serveFrames (fake-chrome.mjs). The encoder is a
// recorder: Node has no canvas.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, serveFrames, flush } from './fake-chrome.mjs';
import { BUDGET, spread } from '../lib/frames.js';
import { MAX_BRANCHES } from '../lib/capture.js';

const ORIGIN = 'https://a.test';
const OTHER = 'https://a.test:8443'; // another origin, same site: in process

// granted leases tab 1 showing page (origin ORIGIN unless given) and
// records every encode call.
async function granted(page = {}) {
  const encoded = [];
  let t;
  t = await setup({
    personal: true,
    encodeImage: async (png, size, rects, quality) => {
      encoded.push({ png, size, rects, quality });
      return t.jpeg(png, size, rects);
    },
  });
  t.jpeg = (png) => `jpeg(${png})`;
  t.encoded = encoded;
  t.chrome.addTab(1, 'https://a.test/', 'A');
  const { lease } = await t.grant(1);
  t.leaseOf = lease;
  t.page = { url: 'https://a.test/', origin: ORIGIN, frames: [], ...page };
  t.shots = serveFrames(t.chrome, 1, t.page);
  t.sent = (m) => t.chrome.commands.filter((c) => c.method === m);
  t.list = (params = { lease }) => t.call('frames.list', params);
  // capture advances the fake clock until the answer, so retries run.
  t.capture = async (params = { lease }) => {
    const id = t.request('capture', params);
    for (let i = 0; i < 20 && !t.port.response(id); i++) await t.timers.advance(10);
    return t.port.response(id);
  };
  return t;
}

test('an about:blank or srcdoc frame is of the origin its document has, not the one reported', async () => {
  const t = await granted({
    frames: [
      { owner: 11, origin: '://', selfOrigin: ORIGIN, frames: [sameOrigin(111)], box: [0, 0, 10, 10] }, // about:blank, written by the page
      { owner: 12, origin: '://', selfOrigin: 'null', box: [20, 0, 10, 10] }, // a sandboxed srcdoc
      { owner: 13, origin: '://', selfOrigin: OTHER, box: [40, 0, 10, 10] }, // made by another origin's script
      { owner: 14, origin: '://', selfOrigin: 'https://b.test', key: 'https://b.test/^0https://a.test', box: [60, 0, 10, 10] }, // another site's, partitioned
    ],
  });
  const from = t.chrome.commands.length;
  const r = await t.list();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(r.value.frames.map((f) => [f.frameId, f.origin]),
    [['F1', ORIGIN], ['C11', ORIGIN], ['C111', ORIGIN], ['C12', '://'], ['C13', OTHER], ['C14', 'https://b.test']]);
  // The proofs are asked at once, not one frame after another: each
  // frame's storage key, and where that is no origin alone, self.origin
  // in an isolated world of the frame; only where the reported origin is
  // not an HTTP(S) one.
  const proofs = t.chrome.commands.slice(from).map((c) => c.method).filter((m) => /^(Storage|Page\.createIsolatedWorld|Runtime\.evaluate)/.test(m));
  assert.deepEqual(proofs, [...Array(4).fill('Storage.getStorageKeyForFrame'), ...Array(2).fill('Page.createIsolatedWorld'), ...Array(2).fill('Runtime.evaluate')]);
  assert.deepEqual(t.sent('Storage.getStorageKeyForFrame').map((c) => c.params.frameId), ['C11', 'C12', 'C13', 'C14']);
  assert.deepEqual(t.sent('Page.createIsolatedWorld').map((c) => c.params), ['C12', 'C14'].map((frameId) => ({ frameId, worldName: 'dsh-broker' })));
  // A capture paints only the branches not of the page's origin.
  const shot = await t.capture();
  assert.equal(shot.ok, true, shot.code);
  assert.equal(shot.value.redaction.frames, 3);
  assert.equal(shot.value.redaction.regions, 3);
  // Reads and input in the blank frame go ahead as in any same-origin frame.
  t.chrome.cdp.set('Accessibility.getRootAXNode', () => ({ node: { nodeId: '1', role: { value: 'RootWebArea' }, name: { value: '' }, childIds: [] } }));
  const read = await t.call('ax.read', { lease: t.leaseOf, request: { frame: { frameId: 'C11', loaderId: 'L-C11' } } });
  assert.equal(read.ok, true, read.code);
  assert.equal(read.value.documentEpoch, 'C11:L-C11');
  const opaque = await t.call('ax.read', { lease: t.leaseOf, request: { frame: { frameId: 'C12', loaderId: 'L-C12' } } });
  assert.equal(opaque.code, 'POLICY_DENIED');
});

test('a frame document\'s origin is proved once, and again for the frame\'s next document', async () => {
  const blank = { owner: 11, origin: '://', selfOrigin: ORIGIN, box: [0, 0, 10, 10] };
  const t = await granted({ frames: [blank] });
  const proofs = () => t.sent('Storage.getStorageKeyForFrame').length;
  assert.equal((await t.list()).ok, true);
  t.chrome.cdp.set('Accessibility.getRootAXNode', () => ({ node: { nodeId: '1', role: { value: 'RootWebArea' }, name: { value: '' }, childIds: [] } }));
  const read = await t.call('ax.read', { lease: t.leaseOf, request: { frame: { frameId: 'C11', loaderId: 'L-C11' } } });
  assert.equal(read.ok, true, read.code);
  assert.equal((await t.list()).ok, true);
  assert.equal(proofs(), 1, 'the list, the read\'s checks before and after it, the next list');
  // The frame navigates: its new document, of another origin, is proved.
  Object.assign(blank, { loaderId: 'L-C11-2', selfOrigin: OTHER });
  const r = await t.list();
  assert.deepEqual(r.value.frames.map((f) => [f.frameId, f.origin]), [['F1', ORIGIN], ['C11', OTHER]]);
  assert.equal(proofs(), 2);
  const refused = await t.call('ax.read', { lease: t.leaseOf, request: { frame: { frameId: 'C11', loaderId: 'L-C11-2' } } });
  assert.equal(refused.code, 'POLICY_DENIED');
});

// afterShot runs fn(n) after the nth screenshot is taken, before it is answered:
// the page changes between the scene reads around it.
function afterShot(t, fn) {
  const shoot = t.chrome.cdp.get('Page.captureScreenshot');
  t.chrome.cdp.set('Page.captureScreenshot', (p, tabId) => {
    const r = shoot(p, tabId);
    fn(t.shots.n);
    return r;
  });
}

const sameOrigin = (owner, frames) => ({ owner, origin: ORIGIN, frames });

test('frames.list: the main frame first, then every frame, parents before children', async () => {
  const t = await granted({
    frames: [
      sameOrigin(11, [sameOrigin(111)]),
      { owner: 12, origin: OTHER },
      { owner: 14, origin: '://' },
    ],
  });
  const inProcess = [
    { frameId: 'F1', loaderId: 'L1', origin: ORIGIN, local: true },
    { frameId: 'C11', parentId: 'F1', loaderId: 'L-C11', origin: ORIGIN, local: true },
    { frameId: 'C111', parentId: 'C11', loaderId: 'L-C111', origin: ORIGIN, local: true },
    { frameId: 'C12', parentId: 'F1', loaderId: 'L-C12', origin: OTHER, local: true },
    { frameId: 'C14', parentId: 'F1', loaderId: 'L-C14', origin: '://', local: true },
  ];
  const trees = t.sent('Page.getFrameTree').length;
  const r = await t.list();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(r.value, { documentEpoch: 'F1:L1', url: 'https://a.test/', truncated: false, frames: inProcess });
  // One tree names the document and the frames, one after proves it.
  assert.equal(t.sent('Page.getFrameTree').length - trees, 2);
  assert.equal(t.sent('DOM.describeNode').length, 0);
  // The list reads no paint effects (a capture does): its snapshot asks
  // no computed style.
  assert.deepEqual(t.sent('DOMSnapshot.captureSnapshot').map((c) => c.params.computedStyles), [[]]);
  const shot = await t.capture();
  assert.equal(shot.ok, true, shot.code);
  assert.ok(t.sent('DOMSnapshot.captureSnapshot').slice(1).every((c) => c.params.computedStyles.includes('filter')));

  // An out-of-process frame is listed with the ID of its owner; what it
  // holds is out of sight, so the list may be incomplete.
  t.page.frames.splice(2, 0, { owner: 13, local: false, id: 'X13' });
  const oop = await t.list();
  assert.equal(oop.ok, true, oop.code);
  assert.deepEqual(oop.value, {
    documentEpoch: 'F1:L1', url: 'https://a.test/', truncated: true,
    frames: [...inProcess.slice(0, 4), { frameId: 'X13', parentId: 'F1', local: false }, inProcess[4]],
  });
  assert.ok(!JSON.stringify(oop.value).includes('owner'));
  // Only the out-of-process frame is described.
  assert.deepEqual(t.sent('DOM.describeNode').map((c) => c.params), [{ backendNodeId: 13 }]);

  // An owner that cannot be described is still listed, without an ID.
  t.chrome.cdp.set('DOM.describeNode', () => { throw new Error('No node with given id found'); });
  const blind = await t.list();
  assert.deepEqual(blind.value.frames[4], { parentId: 'F1', local: false });
});

test('frames.list and capture take exactly {lease}; a wrong token sends no debugger command', async () => {
  const t = await granted({ frames: [{ owner: 11, origin: OTHER, box: [0, 0, 10, 10] }] });
  const before = t.chrome.commands.length;
  for (const method of ['frames.list', 'capture']) {
    assert.equal((await t.call(method, { lease: t.leaseOf, request: {} })).code, 'INVALID_REQUEST', method);
    assert.equal((await t.call(method, { lease: t.leaseOf, extra: 1 })).code, 'INVALID_REQUEST', method);
    assert.equal((await t.call(method, {})).code, 'INVALID_REQUEST', method);
    assert.equal((await t.call(method, { lease: { ...t.leaseOf, token: 'wrong' } })).code, 'LEASE_REVOKED', method);
  }
  assert.equal(t.chrome.commands.length, before);
  assert.equal(t.encoded.length, 0);
  assert.equal((await t.list()).ok, true);
});

test(`frames.list stops at ${BUDGET.frames} frames`, async () => {
  const children = (n) => Array.from({ length: n }, (_, i) => sameOrigin(1000 + i));
  const t = await granted();
  // One container holding budget-1 children: exactly the budget.
  t.page.frames = [sameOrigin(11, children(BUDGET.frames - 1))];
  const at = (await t.list()).value;
  assert.equal(at.truncated, false);
  assert.equal(at.frames.length, 1 + BUDGET.frames);
  assert.equal(at.frames.at(-1).frameId, `C${1000 + BUDGET.frames - 2}`);
  // One more frame is left out.
  t.page.frames = [sameOrigin(11, children(BUDGET.frames))];
  const past = (await t.list()).value;
  assert.equal(past.truncated, true);
  assert.equal(past.frames.length, 1 + BUDGET.frames);
  assert.equal(past.frames.at(-1).frameId, `C${1000 + BUDGET.frames - 2}`);
  // The budget counts frames, not owners of the main document: 256 of them are fine.
  t.page.frames = children(MAX_BRANCHES);
  const flat = (await t.list()).value;
  assert.equal(flat.truncated, false);
  assert.equal(flat.frames.length, 1 + MAX_BRANCHES);
});

// chain nests n same-origin frames, each in the one before.
const chain = (n, owner = 500) => (n === 0 ? [] : [sameOrigin(owner, chain(n - 1, owner + 1))]);

test(`frames.list stops at depth ${BUDGET.depth}`, async () => {
  const t = await granted();
  t.page.frames = chain(BUDGET.depth);
  const at = (await t.list()).value;
  assert.equal(at.truncated, false);
  assert.equal(at.frames.length, 1 + BUDGET.depth);
  at.frames.slice(1).forEach((f, i) => assert.equal(f.parentId, at.frames[i].frameId));
  t.page.frames = chain(BUDGET.depth + 1);
  const past = (await t.list()).value;
  assert.equal(past.truncated, true);
  assert.equal(past.frames.length, 1 + BUDGET.depth);
});

test('a branch cut by a budget is redacted: what it holds is unknown', async () => {
  const t = await granted();
  const children = (n) => Array.from({ length: n }, (_, i) => sameOrigin(1000 + i));
  const box = [0, 0, 100, 100];
  for (const [frames, regions] of [
    [[{ ...sameOrigin(11, children(BUDGET.frames - 1)), box }], 0],
    [[{ ...sameOrigin(11, children(BUDGET.frames)), box }], 1],
    [[{ ...chain(BUDGET.depth)[0], box }], 0],
    [[{ ...chain(BUDGET.depth + 1)[0], box }], 1],
  ]) {
    t.page.frames = frames;
    const r = await t.capture();
    assert.equal(r.ok, true, r.code);
    assert.equal(r.value.redaction.regions, regions);
  }
});

test(`more than ${MAX_BRANCHES} owners in the main document cannot be captured`, async () => {
  const t = await granted();
  const owners = (n) => Array.from({ length: n }, (_, i) => ({ owner: 1000 + i, local: false, box: [i, 0, 1, 1] }));
  t.page.frames = owners(MAX_BRANCHES);
  const at = await t.capture();
  assert.equal(at.ok, true, at.code);
  assert.equal(at.value.redaction.frames, MAX_BRANCHES);
  const encodes = t.encoded.length;
  t.page.frames = owners(MAX_BRANCHES + 1);
  assert.equal((await t.capture()).code, 'UNSUPPORTED_CAPABILITY');
  assert.equal(t.encoded.length, encodes);
  // The list is not refused: the frame budget truncates it.
  const list = (await t.list()).value;
  assert.equal(list.truncated, true);
  assert.equal(list.frames.length, 1 + BUDGET.frames);
});

test('a capture with nothing foreign encodes the viewport as it is', async () => {
  const t = await granted({
    viewport: { clientWidth: 1200, clientHeight: 700, pageX: 5, pageY: 300 },
    frames: [{ ...sameOrigin(11, [sameOrigin(111)]), box: [0, 0, 300, 200] }],
  });
  const r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(r.value, {
    documentEpoch: 'F1:L1', capturedAt: t.timers.now, mimeType: 'image/jpeg', data: 'jpeg(png1)',
    viewport: { width: 1200, height: 700, pageX: 5, pageY: 300 },
    redaction: { policy: 'cross-origin-frames', frames: 0, regions: 0 },
    url: 'https://a.test/',
  });
  assert.equal(t.encoded.length, 1);
  assert.deepEqual(t.encoded[0].png, 'png1');
  assert.deepEqual(t.encoded[0].size, { width: 1200, height: 700 });
  assert.deepEqual(t.encoded[0].rects, []);
  const shots = t.sent('Page.captureScreenshot');
  assert.equal(shots.length, 1);
  assert.equal(shots[0].params.format, 'png');
  assert.deepEqual(shots[0].params.clip, { x: 5, y: 300, width: 1200, height: 700, scale: 1 });
  assert.notEqual(shots[0].params.captureBeyondViewport, true);
});

test('each foreign branch is painted as one region of its root-level owner', async () => {
  const t = await granted({
    frames: [
      { owner: 11, origin: OTHER, box: [10.5, 20.25, 100, 50] }, // another origin, in process
      { owner: 12, local: false, box: [200, 0, 100, 100] }, // out of process
      { owner: 13, origin: '://', box: [400, 0, 50, 50] }, // opaque
      { ...sameOrigin(14, [{ owner: 141, origin: OTHER, frames: [sameOrigin(1411)] }, { owner: 142, local: false }]), box: [0, 300, 200, 200] },
      { ...sameOrigin(15, [sameOrigin(151)]), box: [500, 300, 100, 100] }, // same origin throughout
      { owner: 16, local: false, box: null }, // not rendered
      { owner: 17, local: false, box: [0, 900, 100, 100] }, // below the viewport
      { owner: 18, origin: OTHER, box: [-300, 0, 200, 100] }, // left of it
      { owner: 19, local: false, box: [-20, 700, 100, 200] }, // partly out
    ],
  });
  const r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(t.encoded[0].rects, [
    { x: 9, y: 19, width: 103, height: 53 },
    { x: 199, y: 0, width: 102, height: 101 },
    { x: 399, y: 0, width: 52, height: 51 },
    { x: 0, y: 299, width: 201, height: 202 },
    { x: 0, y: 699, width: 81, height: 101 },
  ]);
  // 1 + 1 + 1 + (14, 141, 1411, 142) + 1
  assert.deepEqual(r.value.redaction, { policy: 'cross-origin-frames', frames: 8, regions: 5 });
});

test('under an opaque main origin (CSP sandbox) no frame is of its origin', async () => {
  const t = await granted({
    origin: 'null',
    frames: [{ owner: 11, origin: 'null', box: [0, 0, 10, 10] }, { owner: 12, origin: ORIGIN, box: [20, 0, 10, 10] }],
  });
  const r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(r.value.redaction, { policy: 'cross-origin-frames', frames: 2, regions: 2 });
});

test('a viewport wider than 1,200 px is scaled down, and so are the regions', async () => {
  const t = await granted({
    viewport: { clientWidth: 2400, clientHeight: 1000, pageX: 0, pageY: 40 },
    frames: [{ owner: 11, local: false, box: [10.4, 20, 100, 50] }, { owner: 12, local: false, box: [2300, 900, 200, 200] }],
  });
  const r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(t.sent('Page.captureScreenshot')[0].params.clip, { x: 0, y: 40, width: 2400, height: 1000, scale: 0.5 });
  assert.deepEqual(t.encoded[0].size, { width: 1200, height: 500 });
  assert.deepEqual(t.encoded[0].rects, [{ x: 4, y: 9, width: 53, height: 27 }, { x: 1149, y: 449, width: 51, height: 51 }]);
  assert.deepEqual(r.value.viewport, { width: 2400, height: 1000, pageX: 0, pageY: 40 });
});

for (const [name, change] of Object.entries({
  'a foreign box moves': (t) => (t.page.frames[0].box[0] += 1),
  'a new iframe appears': (t) => t.page.frames.push({ owner: 900 + t.shots.n, local: false, box: [0, 0, 5, 5] }),
  'a foreign frame navigates': (t) => (t.page.frames[0].origin = t.page.frames[0].origin === ORIGIN ? OTHER : ORIGIN),
  'the viewport scrolls': (t) => (t.page.viewport.pageY += 10),
  'the viewport resizes': (t) => (t.page.viewport.clientHeight -= 1),
})) {
  test(`${name} on every attempt: STALE_TARGET after three, no image`, async () => {
    const t = await granted({ viewport: { pageY: 0, clientHeight: 800 }, frames: [{ owner: 11, origin: OTHER, box: [0, 0, 100, 100] }] });
    afterShot(t, () => change(t));
    const id = t.request('capture', { lease: t.leaseOf });
    await t.timers.advance(0);
    assert.equal(t.shots.n, 1);
    await t.timers.advance(59); // the retry waits 60 ms
    assert.equal(t.shots.n, 1);
    await t.timers.advance(1);
    assert.equal(t.shots.n, 2);
    await t.timers.advance(60);
    assert.equal(t.port.response(id).code, 'STALE_TARGET');
    assert.equal(t.shots.n, 3);
    assert.equal(t.encoded.length, 0);
  });
}

test('a page that changes during the first attempt only is captured on the second', async () => {
  const t = await granted({ frames: [{ owner: 11, local: false, box: [0, 0, 100, 100] }] });
  afterShot(t, (n) => n === 1 && (t.page.frames[0].box = [50, 50, 100, 100]));
  const r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.equal(r.value.data, 'jpeg(png2)');
  assert.deepEqual(t.encoded.map((e) => [e.png, e.rects]), [['png2', [{ x: 49, y: 49, width: 102, height: 102 }]]]);
});

test('a same-origin frame that moves does not hold the capture up', async () => {
  const t = await granted({ frames: [{ ...sameOrigin(11), box: [0, 0, 100, 100] }] });
  afterShot(t, () => (t.page.frames[0].box[0] += 1));
  const r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.equal(t.shots.n, 1);
});

test('a pinch-zoomed viewport is UNSUPPORTED_CAPABILITY', async () => {
  const t = await granted({ viewport: { scale: 1.5 } });
  assert.equal((await t.capture()).code, 'UNSUPPORTED_CAPABILITY');
  assert.equal(t.shots.n, 0);
  assert.equal(t.encoded.length, 0);
});

test('an image over 800,000 base64 characters is QUEUE_FULL; exactly 800,000 is sent', async () => {
  const t = await granted();
  t.jpeg = () => 'x'.repeat(800_000);
  const at = await t.capture();
  assert.equal(at.ok, true, at.code);
  assert.equal(at.value.data.length, 800_000);
  t.jpeg = () => 'x'.repeat(800_001);
  assert.equal((await t.capture()).code, 'QUEUE_FULL');
  t.jpeg = () => undefined;
  assert.equal((await t.capture()).code, 'QUEUE_FULL');
});

for (const [name, drop] of Object.entries({
  'Stop in the popup': (t) => t.chrome.message({ type: 'popup.stop' }),
  'the gate ending': (t) => t.ext.gates.end(t.ext.gates.get(1), true),
})) {
  test(`${name} before a box is read fails the capture LEASE_REVOKED`, async () => {
    const t = await granted({ frames: [{ owner: 11, local: false, box: [0, 0, 100, 100] }] });
    const metrics = t.chrome.cdp.get('Page.getLayoutMetrics');
    t.chrome.cdp.set('Page.getLayoutMetrics', (p, tabId) => {
      drop(t);
      return metrics(p, tabId);
    });
    const r = await t.capture();
    assert.equal(r.code, 'LEASE_REVOKED');
    assert.equal(t.sent('DOM.getBoxModel').length, 0); // refused by the gate
    assert.equal(t.shots.n, 0);
    assert.equal(t.encoded.length, 0);
    assert.deepEqual(t.port.events('lease.revoked').map((e) => e.value), [{ leaseId: 'lease-1' }]);
  });
}

test('a lease dropped while a box is read (the debugger errs) fails the capture too', async () => {
  const t = await granted({ frames: [{ owner: 11, local: false, box: [0, 0, 100, 100] }] });
  t.chrome.cdp.set('DOM.getBoxModel', () => {
    t.chrome.message({ type: 'popup.stop' });
    throw new Error('Debugger is not attached to the tab');
  });
  const r = await t.capture();
  assert.equal(r.code, 'LEASE_REVOKED');
  assert.equal(t.encoded.length, 0);
});

test('a tab that is not shown is NOT_ACTIONABLE at once, with no screenshot', async () => {
  const t = await granted();
  t.chrome.tabs_.get(1).active = false;
  assert.equal((await t.call('capture', { lease: t.leaseOf })).code, 'NOT_ACTIONABLE');
  t.chrome.tabs_.get(1).active = true;
  const w = await t.chrome.windows.create({ type: 'normal', state: 'minimized' });
  t.chrome.tabs_.get(1).windowId = w.id;
  assert.equal((await t.call('capture', { lease: t.leaseOf })).code, 'NOT_ACTIONABLE');
  assert.equal(t.shots.n, 0);
  t.chrome.windows_.at(-1).state = 'normal';
  assert.equal((await t.capture()).ok, true);
  assert.equal(t.encoded.length, 1);
});

test('a screenshot that never answers gives up after 5 s, NOT_ACTIONABLE', async () => {
  const t = await granted();
  t.chrome.cdp.set('Page.captureScreenshot', () => new Promise(() => {}));
  const id = t.request('capture', { lease: t.leaseOf });
  await flush();
  assert.equal(t.shots.n, 0);
  assert.equal(t.sent('Page.captureScreenshot').length, 1);
  await t.timers.advance(4999);
  assert.equal(t.port.response(id), undefined);
  await t.timers.advance(1);
  assert.equal(t.port.response(id).code, 'NOT_ACTIONABLE');
  assert.equal(t.encoded.length, 0);
  // The tab's queue is free again.
  serveFrames(t.chrome, 1, t.page);
  assert.equal((await t.capture()).ok, true);
});

// Chromium reports nodeName as written for elements of an XML document:
// in an XHTML page (application/xhtml+xml) an out-of-process iframe is
// "iframe", with no content document (checked on Chromium 156).
test('an out-of-process iframe of an XHTML document is listed and painted', async () => {
  const t = await granted({ frames: [{ owner: 11, local: false, name: 'iframe', box: [0, 0, 300, 200] }] });
  const r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(t.encoded[0].rects, [{ x: 0, y: 0, width: 301, height: 201 }]);
  assert.deepEqual((await t.list()).value.frames.slice(1), [{ frameId: 'C11', parentId: 'F1', local: false }]);
});

test('the hello advertises frames.list.v1 and capture.v1', async () => {
  const t = await setup({ welcome: false });
  assert.ok(t.hello.params.capabilities.includes('frames.list.v1'));
  assert.ok(t.hello.params.capabilities.includes('capture.v1'));
});

test('spread: how far a filter can move a pixel', () => {
  for (const [filter, want] of [
    ['none', 0], ['', 0], [undefined, 0],
    ['invert(1)', 0], ['grayscale(1) brightness(0.5) opacity(0.3) hue-rotate(90deg)', 0],
    ['blur(4px)', 12], ['blur(0px)', 0], ['blur(1.5px) invert(1)', 4.5],
    ['drop-shadow(rgb(0, 0, 0) 2px -3px 4px)', 2 + 3 + 12],
    ['blur(2px) drop-shadow(rgba(0, 0, 0, 0.5) 1px 1px 0px)', 6 + 2],
    ['url("#tile")', Infinity], ['blur(1px) url("https://x.test/f.svg#a")', Infinity],
    ['blur(1e400px)', Infinity],
  ]) assert.equal(spread(filter), want, String(filter));
});

test('filters and reflections that carry a foreign frame beyond its box widen its region, or fail the capture', async () => {
  const frame = (style) => ({ owner: 11, origin: OTHER, box: [100, 100, 100, 50], style });
  // A blurred owner: the region grows by three radii.
  let t = await granted({ frames: [frame(['blur(4px)', 'none', 'none'])] });
  let r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(t.encoded[0].rects, [{ x: 87, y: 87, width: 126, height: 76 }]);
  // A blurred ancestor (the body) does the same; a color filter adds nothing.
  t = await granted({ frames: [frame()], bodyStyle: ['invert(1) blur(2px)', 'none', 'none'] });
  r = await t.capture();
  assert.deepEqual(t.encoded[0].rects, [{ x: 93, y: 93, width: 114, height: 64 }]);
  t = await granted({ frames: [frame()], bodyStyle: ['invert(1)', 'none', 'none'] });
  r = await t.capture();
  assert.deepEqual(t.encoded[0].rects, [{ x: 99, y: 99, width: 102, height: 52 }]);
  // A frosted-glass backdrop anywhere on the page may smear what is behind it.
  t = await granted({ frames: [frame()], glassStyle: ['none', 'none', 'blur(10px)'] });
  r = await t.capture();
  assert.deepEqual(t.encoded[0].rects, [{ x: 69, y: 69, width: 162, height: 112 }]);
  // An SVG filter or a reflection can put the pixels anywhere: no image.
  for (const page of [
    { frames: [frame(['none', 'below 10px none', 'none'])] },
    { frames: [frame()], bodyStyle: ['url("#tile")', 'none', 'none'] },
    { frames: [frame()], glassStyle: ['none', 'none', 'url("#f")'] },
  ]) {
    t = await granted(page);
    r = await t.capture();
    assert.equal(r.code, 'UNSUPPORTED_CAPABILITY', JSON.stringify(page));
    assert.equal(t.encoded.length, 0);
  }
  // The same effects on a page whose frames are all its own: nothing to hide.
  t = await granted({ frames: [{ owner: 12, origin: ORIGIN, box: [0, 0, 10, 10], style: ['url("#tile")', 'below', 'none'] }] });
  r = await t.capture();
  assert.equal(r.ok, true, r.code);
  assert.deepEqual(t.encoded[0].rects, []);
});
