// Handshake, envelope rules, per-connection limits and reconnection, against
// the FAKE chrome of fake-chrome.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, flush } from './fake-chrome.mjs';
import { validateHello, validateEnvelope } from '../lib/schema.js';

const closed = (t) => t.port.disconnected;

test('the hello is a valid provider hello with a fresh instance per connection', async () => {
  const t = await setup({ welcome: false });
  assert.equal(t.hello.type, 'request');
  assert.equal(t.hello.method, 'hello');
  assert.ok(validateHello(t.hello.params));
  assert.deepEqual(t.hello.params.capabilities, ['lease.fencing.v1', 'lease.tab-scope.v1', 'ax.read.v1', 'ax.find.v1', 'input.named-keys.v1',
    'frames.list.v1', 'capture.v1', 'ax.page.v1', 'ax.read-frame.v1', 'input.frame.v1', 'transport.ordered-ids.v1',
    'dom.read.v1', 'input.scroll.v1', 'input.wheel.v1', 'input.select.v1', 'page.navigate.v1', 'owner.console.v1',
    'dom.hit.v1', 'input.pointer.v1', 'input.chord.v1']);
  assert.deepEqual(t.hello.params.requiredCapabilities, ['runtime.v1']);
  assert.deepEqual(t.hello.params.instance, {
    id: t.instanceId, family: 'chromium', brand: 'Chromium', version: '156.0.8078.108', profileLabel: 'Default profile',
  });
  t.port.drop();
  await t.timers.advance(500);
  const next = t.chrome.ports[1].sent[0];
  assert.notEqual(next.params.instance.id, t.instanceId);
});

test('no welcome within 3 s closes the port', async () => {
  const t = await setup({ welcome: false });
  await t.timers.advance(2999);
  assert.equal(closed(t), false);
  await t.timers.advance(1);
  assert.equal(closed(t), true);
  assert.equal(t.ext.transport.status(), 'Disconnected');
});

for (const [name, value] of Object.entries({
  'a malformed welcome': { version: 1, capabilities: ['runtime.v1'] },
  'an extra welcome field': { version: 1, connectionEpoch: 'c', capabilities: ['runtime.v1'], token: 'x' },
  'another version': { version: 2, connectionEpoch: 'c', capabilities: ['runtime.v1'] },
  'a missing required capability': { version: 1, connectionEpoch: 'c', capabilities: ['broker.personal-mode.v1'] },
})) {
  test(`${name} closes the port`, async () => {
    const t = await setup({ welcome: false });
    t.port.receive({ type: 'response', id: t.hello.id, ok: true, value });
    assert.equal(closed(t), true);
  });
}

test('a rejected hello closes the port', async () => {
  const t = await setup({ welcome: false });
  t.port.receive({ type: 'response', id: t.hello.id, ok: false, code: 'PROTOCOL_MISMATCH' });
  assert.equal(closed(t), true);
});

test('a request before the welcome is refused and not dispatched', async () => {
  const t = await setup({ welcome: false });
  t.chrome.addTab(1, 'https://a.test/');
  const r = await t.call('tabs.list');
  assert.deepEqual(r, { type: 'response', id: r.id, ok: false, code: 'POLICY_DENIED' });
  assert.equal(closed(t), false);
  assert.equal(t.ext.transport.status(), 'Connecting');
});

test('anything else before the welcome closes the port', async () => {
  for (const msg of [
    { type: 'event', event: 'x', value: null },
    { type: 'response', id: 'other', ok: true, value: null },
    { type: 'cancel', id: 'x' },
    { type: 'request', id: 'r1', method: 'tabs.list' }, // malformed: no params
  ]) {
    const t = await setup({ welcome: false });
    t.port.receive(msg);
    assert.equal(closed(t), true, JSON.stringify(msg));
  }
});

test('after the welcome, responses and events from the broker close the port', async () => {
  for (const msg of [{ type: 'response', id: 'x', ok: true, value: 1 }, { type: 'event', event: 'lease.revoked', value: {} }]) {
    const t = await setup();
    assert.equal(t.ext.transport.status(), 'Connected');
    t.port.receive(msg);
    assert.equal(closed(t), true);
  }
});

test('personal mode shows in the status', async () => {
  const t = await setup({ personal: true });
  assert.equal(t.ext.transport.status(), 'Connected · Personal');
  assert.equal((await t.chrome.message({ type: 'popup.state' })).status, 'Connected · Personal');
});

test('unknown methods are INVALID_REQUEST; replies are valid envelopes', async () => {
  const t = await setup();
  const r = await t.call('browser.tabs');
  assert.equal(r.code, 'INVALID_REQUEST');
  assert.ok(t.port.sent.every(validateEnvelope));
});

// hang makes tabs.list wait until released, to keep operations in flight.
function hang(t) {
  const waiting = [];
  t.chrome.tabs.query = () => new Promise((resolve) => waiting.push(() => resolve([])));
  return () => waiting.forEach((release) => release());
}

test('32 operations in flight are fine; the 33rd closes the port', async () => {
  const t = await setup();
  const release = hang(t);
  for (let i = 0; i < 32; i++) t.request('tabs.list');
  await flush();
  assert.equal(closed(t), false);
  t.request('tabs.list');
  assert.equal(closed(t), true);
  release();
});

test('completed operations leave the in-flight count', async () => {
  const t = await setup();
  for (let i = 0; i < 100; i++) assert.equal((await t.call('tabs.list')).ok, true);
  assert.equal(closed(t), false);
});

test('a reused request ID closes the port without dispatching twice', async () => {
  const t = await setup();
  let queries = 0;
  t.chrome.tabs.query = async () => (queries++, []);
  await t.call('tabs.list');
  t.request('tabs.list', {}, 'q1');
  await flush();
  assert.equal(closed(t), true);
  assert.equal(queries, 1);
});

test('10,000 request IDs are remembered; the next one closes the port', async () => {
  const t = await setup();
  for (let i = 0; i < 10000; i++) {
    t.request('tabs.list', {}, `id-${i}`);
    if (i % 30 === 29) await flush();
  }
  await flush();
  assert.equal(closed(t), false);
  assert.equal(t.port.sent.filter((m) => m.type === 'response' && m.ok).length, 10000);
  t.request('tabs.list', {}, 'one-more');
  assert.equal(closed(t), true);
});

test('with ordered IDs, increasing IDs go past 10,000 and nothing else is remembered', async () => {
  const t = await setup({ ordered: true });
  let id = 0;
  for (let i = 0; i < 12000; i++) {
    id += 1 + (i % 3); // gaps are fine
    t.request('tabs.list', {}, String(id));
    if (i % 30 === 29) await flush();
  }
  await flush();
  assert.equal(closed(t), false);
  assert.equal(t.port.sent.filter((m) => m.type === 'response' && m.ok).length, 12000);
  t.request('tabs.list', {}, String(Number.MAX_SAFE_INTEGER));
  await flush();
  assert.equal(closed(t), false);
});

test('with ordered IDs, a reused, lower or malformed ID closes the port without dispatching', async () => {
  for (const bad of ['5', '4', '06', '0', '-6', '6.5', 'six', '1e3', String(Number.MAX_SAFE_INTEGER + 2)]) {
    const t = await setup({ ordered: true });
    let queries = 0;
    t.chrome.tabs.query = async () => (queries++, []);
    t.request('tabs.list', {}, '5');
    await flush();
    assert.equal(closed(t), false);
    t.request('tabs.list', {}, bad);
    await flush();
    assert.equal(closed(t), true, bad);
    assert.equal(queries, 1, bad);
  }
});

test('without ordered IDs in the welcome, the 10,000-ID set applies', async () => {
  const t = await setup();
  t.request('tabs.list', {}, '5');
  t.request('tabs.list', {}, '4'); // any order, any strings
  await flush();
  assert.equal(closed(t), false);
});

test('success values over 900,000 bytes are answered QUEUE_FULL', async () => {
  const t = await setup();
  const title = (n) => 'é'.repeat(n); // two bytes each
  t.chrome.addTab(1, 'https://a.test/', title(449_900));
  const fits = await t.call('tabs.list');
  assert.equal(fits.ok, true);
  t.chrome.addTab(2, 'https://a.test/', title(1000));
  assert.deepEqual(await t.call('tabs.list'), { type: 'response', id: 'q2', ok: false, code: 'QUEUE_FULL' });
});

test('a void result is sent as null', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.cdp.set('DOM.scrollIntoViewIfNeeded', () => undefined);
  const r = await t.call('cdp', { lease, method: 'DOM.scrollIntoViewIfNeeded', params: { backendNodeId: 3 } });
  assert.deepEqual(r, { type: 'response', id: r.id, ok: true, value: null });
});

test('cancel answers CANCELLED and drops the late result', async () => {
  const t = await setup();
  const release = hang(t);
  const id = t.request('tabs.list');
  t.port.receive({ type: 'cancel', id });
  release();
  await flush();
  const answers = t.port.sent.filter((m) => m.id === id);
  assert.deepEqual(answers, [{ type: 'response', id, ok: false, code: 'CANCELLED' }]);
  t.port.receive({ type: 'cancel', id: 'never-seen' }); // ignored
  assert.equal(closed(t), false);
});

test('reconnects with backoff 0.5 s doubling to 30 s, reset by a welcome', async () => {
  const t = await setup({ welcome: false });
  const delays = [];
  for (let i = 0; i < 9; i++) {
    const ports = t.chrome.ports.length;
    t.chrome.ports.at(-1).drop();
    let waited = 0;
    while (t.chrome.ports.length === ports) {
      await t.timers.advance(100);
      waited += 100;
    }
    delays.push(waited);
  }
  assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  const port = t.chrome.ports.at(-1);
  port.receive({ type: 'response', id: port.sent[0].id, ok: true, value: { version: 1, connectionEpoch: 'c', capabilities: ['runtime.v1'] } });
  port.drop();
  await t.timers.advance(500);
  assert.equal(t.chrome.ports.at(-1) !== port, true);
});

test('teardown drops every gate, detaches and clears badges; old-port messages do nothing', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  t.chrome.addTab(2, 'https://b.test/');
  const { lease } = await t.grant(1);
  await t.grant(2);
  assert.deepEqual([...t.chrome.attached], [1, 2]);
  assert.equal(t.chrome.badges.get(1), 'ON');

  t.port.receive({ type: 'event', event: 'x', value: 1 }); // a protocol violation: we close ourselves
  assert.equal(t.ext.gates.list().length, 0); // synchronously
  await flush();
  assert.deepEqual([...t.chrome.attached], []);
  assert.equal(t.chrome.badges.get(1), '');
  assert.equal(t.port.events('lease.revoked').length, 0);

  await t.timers.advance(500);
  const next = t.chrome.ports[1];
  next.receive({ type: 'response', id: next.sent[0].id, ok: true, value: { version: 1, connectionEpoch: 'c2', capabilities: ['runtime.v1', 'broker.personal-mode.v1'] } });
  const sentBefore = t.port.sent.length;
  let queries = 0;
  t.chrome.tabs.query = async () => (queries++, []);
  t.port.receive({ type: 'request', id: 'old', method: 'tabs.list', params: {} });
  t.port.drop(); // a late disconnect of the old port
  await flush();
  assert.equal(t.port.sent.length, sentBefore);
  assert.equal(queries, 0);
  assert.equal(next.disconnected, false);
  assert.equal(next.sent.length, 1);

  // The old lease names the old instance: the new connection refuses it.
  next.receive({ type: 'request', id: 'n1', method: 'ax.read', params: { lease, request: {} } });
  await flush();
  assert.equal(next.response('n1').code, 'LEASE_REVOKED');
});
