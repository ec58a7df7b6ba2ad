// The Snug port's piece codec: pieces at and past their bound, reassembly
// in order only, and the relay bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SNUG, pieces, createAssembler, toBase64, fromBase64 } from '../lib/snug.js';

const bytes = (n, fill = 97) => new Uint8Array(n).fill(fill);

test('base64 round-trips every byte value', () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(fromBase64(toBase64(all)), all);
  assert.equal(toBase64(new Uint8Array(0)), '');
});

test('a message of exactly one piece, and one byte more', () => {
  const one = pieces('r', 1, bytes(SNUG.MAX_PIECE_BYTES));
  assert.equal(one.length, 1);
  assert.equal(one[0].last, true);
  const two = pieces('r', 2, bytes(SNUG.MAX_PIECE_BYTES + 1));
  assert.deepEqual(two.map((p) => [p.part, p.last, fromBase64(p.data).length]), [[0, false, SNUG.MAX_PIECE_BYTES], [1, true, 1]]);
  assert.equal(pieces('r', 3, new Uint8Array(0)).length, 1); // an empty message still travels
});

test('an 8 MiB message reassembles; pieces out of order discard it', () => {
  const msg = Uint8Array.from({ length: 8 << 20 }, (_, i) => i % 251);
  const ps = pieces('r', 7, msg);
  const assemble = createAssembler(SNUG.MAX_RELAY_BYTES);
  let out;
  for (const p of ps) out = assemble(p) ?? out;
  assert.deepEqual(out, msg);
  const again = createAssembler(SNUG.MAX_RELAY_BYTES);
  assert.equal(again(ps[0]), undefined);
  assert.equal(again(ps[2]), undefined); // part 1 skipped
  assert.equal(again(ps.at(-1)), undefined);
});

test('the relay bound: at it whole, one byte past it discarded', () => {
  const at = createAssembler(SNUG.MAX_RELAY_BYTES);
  let out;
  for (const p of pieces('r', 1, bytes(SNUG.MAX_RELAY_BYTES))) out = at(p) ?? out;
  assert.equal(out.length, SNUG.MAX_RELAY_BYTES);
  const past = createAssembler(SNUG.MAX_RELAY_BYTES);
  out = undefined;
  for (const p of pieces('r', 1, bytes(SNUG.MAX_RELAY_BYTES + 1))) out = past(p) ?? out;
  assert.equal(out, undefined);
});

test('a full piece is 512 KiB of base64: an event of it stays under the 1 MiB frame cap', () => {
  const p = pieces('0123456789abcdef0123456789abcdef0123', 1, bytes(SNUG.MAX_PIECE_BYTES, 0xff))[0];
  assert.equal(p.data.length, 512 << 10);
  const event = JSON.stringify({ type: 'event', event: SNUG.EVENT_FRAME, value: p });
  assert.ok(event.length < 600_000, `event of ${event.length} bytes`); // far under 1,048,575
});

// A FAKE chrome for the transport rules below: only to reach states the real
// broker does not produce on demand (an out-of-order request ID, a cancel
// while a tab opens). The real path is proven in real Chromium (test/snug_*).
import { createSnug } from '../lib/snug.js';
import { FakeTimers, flush } from './fake-chrome.mjs';

function fakeSnugChrome() {
  const listeners = (arr) => ({ addListener: (f) => arr.push(f) });
  const native = { sent: [], onMessage: [], onDisconnect: [], disconnected: false };
  const connects = [];
  const rules = [];
  const chrome = {
    runtime: {
      id: 'ext', getURL: (p) => `chrome-extension://ext/${p}`,
      connectNative: () => ({
        postMessage: (m) => native.sent.push(structuredClone(m)),
        disconnect: () => { native.disconnected = true; },
        onMessage: listeners(native.onMessage), onDisconnect: listeners(native.onDisconnect),
      }),
      onConnect: listeners(connects),
    },
    tabs: { create: () => new Promise(() => {}) }, // a tab that never finishes opening
    declarativeNetRequest: {
      getSessionRules: async () => rules,
      updateSessionRules: async ({ removeRuleIds = [], addRules = [] }) => {
        for (const id of removeRuleIds) rules.splice(0, rules.length, ...rules.filter((r) => r.id !== id));
        rules.push(...addRules);
      },
    },
  };
  const fromBroker = (m) => native.onMessage.forEach((f) => f(m));
  return { chrome, native, connects, rules, fromBroker };
}

async function welcomed() {
  const f = fakeSnugChrome();
  const timers = new FakeTimers();
  let n = 0;
  createSnug(f.chrome, { timers, uuid: () => `u${++n}`, identity: { brand: 'Chromium', version: '1' } }).start();
  const hello = f.native.sent[0];
  assert.equal(hello.params.kind, 'snug');
  assert.deepEqual(hello.params.capabilities, ['snug.runner.v1', 'transport.ordered-ids.v1']);
  f.fromBroker({ type: 'response', id: hello.id, ok: true, value: { version: 1, connectionEpoch: 'e', capabilities: ['transport.ordered-ids.v1'] } });
  await flush();
  return f;
}

test('a cancel from the broker leaves the port open; an out-of-order request ID closes it', async () => {
  const f = await welcomed();
  f.fromBroker({ type: 'request', id: '5', method: SNUG.CALL_OPEN_TAB, params: { app: 'a' } });
  f.fromBroker({ type: 'cancel', id: '5' });
  await flush();
  assert.equal(f.native.disconnected, false);
  f.fromBroker({ type: 'request', id: '6', method: SNUG.CALL_DELIVER, params: { pieces: [] } });
  await flush();
  assert.deepEqual(f.native.sent.at(-1), { type: 'response', id: '6', ok: true, value: {} });
  f.fromBroker({ type: 'request', id: '6', method: SNUG.CALL_DELIVER, params: { pieces: [] } });
  await flush();
  assert.equal(f.native.disconnected, true);
});

test('a runner tab is walled before it attaches, and the wall goes with it', async () => {
  const f = await welcomed();
  const page = { sent: [], onMessage: [], onDisconnect: [] };
  const port = {
    name: SNUG.RUNNER_PORT, sender: { id: 'ext', url: 'chrome-extension://ext/snug/runner.html?app=a', tab: { id: 42 } },
    postMessage: (m) => page.sent.push(m), disconnect: () => {},
    onMessage: { addListener: (fn) => page.onMessage.push(fn) }, onDisconnect: { addListener: (fn) => page.onDisconnect.push(fn) },
  };
  f.connects.forEach((fn) => fn(port));
  page.onMessage.forEach((fn) => fn({ type: 'attach', app: 'a' }));
  await flush();
  assert.equal(f.rules.length, 1);
  assert.deepEqual(f.rules[0].condition, { tabIds: [42], excludedRequestDomains: ['cdn.jsdelivr.net', 'cdnjs.cloudflare.com', 'unpkg.com'] });
  const attach = f.native.sent.find((m) => m.method === SNUG.ATTACH);
  assert.equal(attach.params.app, 'a');
  // A page of another extension page, or another extension, is refused.
  let refused = false;
  f.connects.forEach((fn) => fn({ ...port, sender: { id: 'ext', url: 'chrome-extension://ext/popup.html', tab: { id: 43 } }, disconnect: () => { refused = true; } }));
  assert.equal(refused, true);
  page.onDisconnect.forEach((fn) => fn());
  await flush();
  assert.equal(f.rules.length, 0);
  assert.equal(f.native.sent.at(-1).event, SNUG.EVENT_DETACH);
});

// openRunner connects a fake runner page and attaches it; it returns the
// page's messages and the runner id the worker gave it.
async function openRunner(f) {
  const page = { sent: [], onMessage: [], onDisconnect: [] };
  const port = {
    name: SNUG.RUNNER_PORT, sender: { id: 'ext', url: 'chrome-extension://ext/snug/runner.html?app=a', tab: { id: 7 } },
    postMessage: (m) => page.sent.push(m), disconnect: () => {},
    onMessage: { addListener: (fn) => page.onMessage.push(fn) }, onDisconnect: { addListener: (fn) => page.onDisconnect.push(fn) },
  };
  f.connects.forEach((fn) => fn(port));
  page.onMessage.forEach((fn) => fn({ type: 'attach', app: 'a' }));
  await flush();
  page.runner = f.native.sent.find((m) => m.method === SNUG.ATTACH).params.runner;
  page.say = (m) => page.onMessage.forEach((fn) => fn(m));
  return page;
}

test('the owner is asked in the runner tab; only the page answers, and a closed tab is a no', async () => {
  const f = await welcomed();
  const page = await openRunner(f);
  f.fromBroker({ type: 'request', id: '10', method: SNUG.CALL_CONFIRM,
    params: { runner: page.runner, kind: 'net', app: 'A', host: 'api.example.com', method: 'POST', url: 'https://api.example.com/x' } });
  await flush();
  const q = page.sent.find((m) => m.type === 'confirm');
  assert.equal(q.ask.url, 'https://api.example.com/x');
  page.say({ type: 'confirmed', id: 'nope', result: { allowed: true } }); // an unknown question changes nothing
  page.say({ type: 'confirmed', id: q.id, result: { allowed: true } });
  await flush();
  assert.deepEqual(f.native.sent.at(-1), { type: 'response', id: '10', ok: true, value: { allowed: true } });

  // Another runner's question, or an unknown runner: no.
  f.fromBroker({ type: 'request', id: '11', method: SNUG.CALL_CONFIRM, params: { runner: 'other', kind: 'openUrl', url: 'https://e.com/' } });
  await flush();
  assert.deepEqual(f.native.sent.at(-1), { type: 'response', id: '11', ok: true, value: { status: 'declined' } });

  // The tab closes with a question open: no.
  f.fromBroker({ type: 'request', id: '12', method: SNUG.CALL_CONFIRM, params: { runner: page.runner, kind: 'openUrl', url: 'https://e.com/' } });
  await flush();
  page.onDisconnect.forEach((fn) => fn());
  await flush();
  assert.deepEqual(f.native.sent.find((m) => m.id === '12'), { type: 'response', id: '12', ok: true, value: { status: 'declined' } });
});

test('a page calls only the connect flow, and only for its own runner', async () => {
  const f = await welcomed();
  const page = await openRunner(f);
  page.say({ type: 'call', id: '1', method: SNUG.APPROVE, params: { runner: 'someone-else', slot: 's', reviewed: '{}' } });
  page.say({ type: 'call', id: '2', method: SNUG.ATTACH, params: { app: 'b' } });
  await flush();
  const sent = f.native.sent.filter((m) => m.method === SNUG.APPROVE);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].params.runner, page.runner);
  assert.deepEqual(page.sent.find((m) => m.type === 'result' && m.id === '2'), { type: 'result', id: '2', ok: false, code: 'INVALID_REQUEST' });
  f.fromBroker({ type: 'response', id: sent[0].id, ok: false, code: 'POLICY_DENIED' });
  await flush();
  assert.deepEqual(page.sent.find((m) => m.type === 'result' && m.id === '1'), { type: 'result', id: '1', ok: false, code: 'POLICY_DENIED' });
});

test('the chat panel relays its operations only, bounded', async () => {
  const { chatEvent } = await import('../lib/snug.js');
  assert.deepEqual(chatEvent('r1', { op: 'send', id: 'm1', text: 'how many books?' }), { runner: 'r1', op: 'send', id: 'm1', text: 'how many books?' });
  assert.deepEqual(chatEvent('r1', { op: 'approve', proposal: 'ABC234', text: 'x' }), { runner: 'r1', op: 'approve', proposal: 'ABC234' });
  assert.deepEqual(chatEvent('r1', { op: 'decline', proposal: 'ABC234' }), { runner: 'r1', op: 'decline', proposal: 'ABC234' });
  assert.deepEqual(chatEvent('r1', { op: 'revert', version: 3 }), { runner: 'r1', op: 'revert', version: 3 });
  const at = 'x'.repeat(SNUG.MAX_CHAT_CHARS);
  assert.equal(chatEvent('r1', { op: 'send', id: 'm2', text: at }).text, at);
  for (const bad of [
    { op: 'send', id: 'm3', text: at + 'x' }, { op: 'send', id: 'm3', text: '  ' }, { op: 'send', text: 'hi' },
    { op: 'send', id: 'a b', text: 'hi' }, { op: 'approve' }, { op: 'approve', proposal: '../x' },
    { op: 'revert', version: 0 }, { op: 'revert', version: '2' }, { op: 'execute', proposal: 'ABC' }, null, 'send',
  ]) assert.equal(chatEvent('r1', bad), null, JSON.stringify(bad));
});
