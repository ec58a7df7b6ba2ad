// Grants, the approval window, gate checks, Stop, revocation and page-change
// events, against the FAKE chrome of fake-chrome.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, flush, fakeChrome } from './fake-chrome.mjs';
import { createExtension } from '../lib/extension.js';

test('tabs.list returns HTTP(S) tabs with instance handles', async () => {
  const t = await setup();
  t.chrome.addTab(1, 'https://a.test/x', 'A');
  t.chrome.addTab(2, 'chrome://settings/');
  t.chrome.addTab(3, 'file:///etc/passwd');
  t.chrome.addTab(4, 'http://127.0.0.1:8080/', 'Local');
  const r = await t.call('tabs.list');
  assert.deepEqual(r.value, [
    { id: `${t.instanceId}:1`, instanceId: t.instanceId, url: 'https://a.test/x', title: 'A' },
    { id: `${t.instanceId}:4`, instanceId: t.instanceId, url: 'http://127.0.0.1:8080/', title: 'Local' },
  ]);
});

test('a personal grant attaches, enables, activates the tab and sets the badge', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(7, 'https://a.test/', 'A');
  const { response } = await t.grant(7);
  assert.deepEqual(response.value, { granted: true, documentEpoch: 'F7:L1', url: 'https://a.test/', title: 'A' });
  assert.deepEqual(t.chrome.commands.map((c) => c.method), ['Page.enable', 'DOM.enable', 'Accessibility.enable', 'Performance.enable', 'Page.getFrameTree']);
  assert.equal(t.chrome.tabs_.get(7).active, true);
  assert.equal(t.chrome.badges.get(7), 'ON');
  assert.equal(t.chrome.windows_.length, 0);
  const state = await t.chrome.message({ type: 'popup.state' });
  assert.deepEqual(state.tabs, [{ tabId: 7, title: 'A', url: 'https://a.test/', scope: 'tab' }]);
});

test('grants that must fail leave nothing attached', async () => {
  const cases = [
    ['tab scope without personal mode', false, 'https://a.test/', { scope: 'tab' }, 'POLICY_DENIED'],
    ['a non-HTTP(S) tab', true, 'chrome://settings/', {}, 'POLICY_DENIED'],
    ['a file: tab', true, 'file:///page.html', {}, 'POLICY_DENIED'],
    ['another origin', false, 'https://a.test/', { origin: 'https://b.test' }, 'POLICY_DENIED'],
    ['a lease expiring too late', true, 'https://a.test/', { expiresAt: 1_000_000 + 5 * 60_000 + 1 }, 'POLICY_DENIED'],
    ['another instance', true, 'https://a.test/', { instanceId: 'other', tab: 'other:1' }, 'STALE_TARGET'],
  ];
  for (const [name, personal, url, over, code] of cases) {
    const t = await setup({ personal });
    t.chrome.addTab(1, url);
    const r = await t.call('lease.grant', { lease: t.lease(1, over), client: { label: 'agent' } });
    assert.equal(r.code, code, name);
    assert.equal(t.chrome.attached.size, 0, name);
    assert.equal(t.chrome.windows_.length, 0, name);
  }
});

test('a closed tab is STALE_TARGET; a gated tab is LEASE_BUSY', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const gone = await t.call('lease.grant', { lease: t.lease(2, { tab: `${t.instanceId}:2` }), client: { label: 'a' } });
  assert.equal(gone.code, 'STALE_TARGET');
  await t.grant(1);
  const busy = await t.call('lease.grant', { lease: t.lease(1, { id: 'second' }), client: { label: 'b' } });
  assert.equal(busy.code, 'LEASE_BUSY');
});

// ask starts a restricted grant and returns the approval window's request.
async function ask(t, tabId) {
  const id = t.request('lease.grant', { lease: t.lease(tabId), client: { label: 'Claude' } });
  await flush();
  await flush();
  const w = t.chrome.windows_.at(-1);
  return { id, w, req: new URL(w.url, 'x:/').searchParams.get('req') };
}

test('a restricted grant asks in an approval window; Allow grants', async () => {
  const t = await setup();
  t.chrome.addTab(1, 'https://a.test:8443/page', 'Bank');
  const { id, w, req } = await ask(t, 1);
  assert.deepEqual({ type: w.type, width: w.width, height: w.height }, { type: 'popup', width: 500, height: 560 });
  assert.match(w.url, /^approve\.html\?req=/);
  assert.deepEqual(await t.chrome.message({ type: 'approval.get', req }), { client: 'Claude', title: 'Bank', origin: 'https://a.test:8443' });
  assert.equal(t.chrome.attached.size, 0);
  await t.chrome.message({ type: 'approval.answer', req, allow: true }, { tab: { windowId: w.id + 1 } }); // another window
  await flush();
  assert.equal(t.port.response(id), undefined);
  await t.chrome.message({ type: 'approval.answer', req, allow: true }, { tab: { windowId: w.id } });
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(t.port.response(id).value.granted, true);
  assert.equal(w.closed, true);
  assert.equal(await t.chrome.message({ type: 'approval.get', req }), null);
});

test('an answer that comes before the worker knows its window counts once the window is known to be the request\'s', async () => {
  for (const allow of [true, false]) {
    const t = await setup();
    t.chrome.addTab(1, 'https://a.test/page', 'Shop');
    // chrome.windows.create answers late: the page has loaded and been
    // answered by then (a busy browser, a quick click).
    const create = t.chrome.windows.create;
    let opened, url;
    t.chrome.windows.create = (opts) => new Promise((resolve) => {
      url = opts.url;
      opened = () => create(opts).then(resolve);
    });
    const id = t.request('lease.grant', { lease: t.lease(1), client: { label: 'Claude' } });
    for (let i = 0; i < 5; i++) await flush();
    const asked = new URL(url, 'x:/').searchParams.get('req');
    const mine = 100 + t.chrome.windows_.length; // the ID the fake gives the window about to open
    await t.chrome.message({ type: 'approval.answer', req: asked, allow: !allow }, { tab: { windowId: mine + 7 } }); // another window
    await t.chrome.message({ type: 'approval.answer', req: asked, allow }, { tab: { windowId: mine } });
    await t.chrome.message({ type: 'approval.answer', req: asked, allow: !allow }, { tab: { windowId: mine } }); // its second answer
    for (let i = 0; i < 5; i++) await flush();
    assert.equal(t.port.response(id), undefined, 'not before the window is known');
    await opened();
    for (let i = 0; i < 10; i++) await flush();
    const r = t.port.response(id);
    assert.equal(allow ? r?.value?.granted : r?.code, allow ? true : 'POLICY_DENIED', `allow=${allow}`);
    assert.equal(t.chrome.windows_.at(-1).closed, true);
  }
});

test('Deny, closing the window, or 60 s without an answer is POLICY_DENIED', async () => {
  const ways = {
    deny: (t, w, req) => t.chrome.message({ type: 'approval.answer', req, allow: false }, { tab: { windowId: w.id } }),
    close: (t, w) => t.chrome.windows.onRemoved.emit(w.id),
    timeout: (t) => t.timers.advance(60_000),
  };
  for (const [name, act] of Object.entries(ways)) {
    const t = await setup();
    t.chrome.addTab(1, 'https://a.test/');
    const { id, w, req } = await ask(t, 1);
    await t.timers.advance(59_000);
    assert.equal(t.port.response(id), undefined, name);
    await act(t, w, req);
    for (let i = 0; i < 5; i++) await flush();
    assert.equal(t.port.response(id)?.code, 'POLICY_DENIED', name);
    assert.equal(t.chrome.attached.size, 0, name);
    assert.equal(t.ext.gates.list().length, 0, name);
  }
});

test('a tab that leaves the origin while the user decides is not granted', async () => {
  const t = await setup();
  t.chrome.addTab(1, 'https://a.test/');
  const { id, w, req } = await ask(t, 1);
  t.chrome.tabs_.get(1).url = 'https://evil.test/';
  await t.chrome.message({ type: 'approval.answer', req, allow: true }, { tab: { windowId: w.id } });
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(t.port.response(id).code, 'POLICY_DENIED');
  assert.equal(t.chrome.attached.size, 0);
});

test('a wrong token, instance, expiry or tab is LEASE_REVOKED with no debugger call', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.cdp.set('Page.getLayoutMetrics', () => ({ ok: 1 }));
  const before = t.chrome.commands.length;
  for (const bad of [
    { token: 'stolen' },
    { id: 'other-lease' },
    { instanceId: 'other', tab: 'other:1' },
    { tab: `${t.instanceId}:2` },
    { expiresAt: t.timers.now },
    { expiresAt: t.timers.now + 5 * 60_000 + 1 },
  ]) {
    const r = await t.call('cdp', { lease: { ...lease, ...bad }, method: 'Page.getLayoutMetrics', params: {} });
    assert.equal(r.code, 'LEASE_REVOKED', JSON.stringify(bad));
  }
  assert.equal(t.chrome.commands.length, before);
  const ok = await t.call('cdp', { lease, method: 'Page.getLayoutMetrics', params: {} });
  assert.deepEqual(ok.value, { ok: 1 });
});

// Beside the tree, a whole document's read asks for the reader's world and
// the document's handle (pageread.prepare): neither reads the page.
const EARLY = ['Page.createIsolatedWorld', 'Runtime.evaluate', 'Page.getFrameTree'];

test('a read asks the main frame\'s tree while the tab is looked up; a tab gone by then is LEASE_REVOKED', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  let release;
  const held = new Promise((resolve) => (release = resolve));
  const get = t.chrome.tabs.get;
  t.chrome.tabs.get = async (id) => {
    await held;
    return get(id);
  };
  const before = t.chrome.commands.length;
  const id = t.request('ax.read', { lease, request: {} });
  for (let i = 0; i < 5; i++) await flush();
  assert.deepEqual(t.chrome.commands.slice(before).map((c) => c.method), EARLY);
  assert.equal(t.port.response(id), undefined);
  t.chrome.tabs_.delete(1); // chrome.tabs.get fails: the tab is gone
  release();
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(t.port.response(id)?.code, 'LEASE_REVOKED');
  assert.deepEqual(t.chrome.commands.slice(before).map((c) => c.method), EARLY); // nothing read
});

test('input methods ask nothing of the debugger before the tab is looked up', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.tabs_.delete(1);
  const before = t.chrome.commands.length;
  const r = await t.call('cdp', { lease, method: 'Page.getLayoutMetrics', params: {} });
  assert.equal(r.code, 'LEASE_REVOKED');
  assert.equal(t.chrome.commands.length, before);
});

test('Stop revokes every lease at once', async () => {
  const t = await setup({ personal: true });
  for (const id of [1, 2, 3]) t.chrome.addTab(id, `https://t${id}.test/`);
  const leases = [];
  for (const id of [1, 2, 3]) leases.push((await t.grant(id)).lease);
  assert.equal(await t.chrome.message({ type: 'popup.stop' }), true);
  assert.equal(t.ext.gates.list().length, 0);
  assert.deepEqual(t.port.events('lease.revoked').map((e) => e.value), leases.map((l) => ({ leaseId: l.id })));
  await flush();
  assert.equal(t.chrome.attached.size, 0);
  assert.deepEqual([1, 2, 3].map((id) => t.chrome.badges.get(id)), ['', '', '']);
  assert.equal((await t.call('ax.read', { lease: leases[0], request: {} })).code, 'LEASE_REVOKED');
  assert.deepEqual((await t.chrome.message({ type: 'popup.state' })).tabs, []);
});

test('lease.revoke releases without an event, also when already gone', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  assert.deepEqual((await t.call('lease.revoke', { lease: { ...lease, token: 'wrong' } })).value, { released: true });
  assert.equal(t.ext.gates.list().length, 1);
  assert.deepEqual((await t.call('lease.revoke', { lease })).value, { released: true });
  assert.equal(t.ext.gates.list().length, 0);
  assert.deepEqual((await t.call('lease.revoke', { lease })).value, { released: true });
  assert.equal(t.port.events().length, 0);
  await flush();
  assert.equal(t.chrome.attached.size, 0);
});

test('a closed tab, a foreign detach and expiry end the lease with lease.revoked', async () => {
  const ends = {
    'tab closed': (t) => t.chrome.closeTab(1),
    'detached by someone else': (t) => t.chrome.debugger.onDetach.emit({ tabId: 1 }, 'canceled_by_user'),
    expiry: (t) => t.timers.advance(60_000),
  };
  for (const [name, end] of Object.entries(ends)) {
    const t = await setup({ personal: true });
    t.chrome.addTab(1, 'https://a.test/');
    const { lease } = await t.grant(1);
    await end(t);
    assert.deepEqual(t.port.events('lease.revoked').map((e) => e.value), [{ leaseId: lease.id }], name);
    assert.equal(t.ext.gates.list().length, 0, name);
  }
});

test('leased commands renew the expiry', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.cdp.set('Page.getLayoutMetrics', () => ({}));
  await t.timers.advance(50_000);
  await t.call('cdp', { lease: { ...lease, expiresAt: t.timers.now + 60_000 }, method: 'Page.getLayoutMetrics', params: {} });
  await t.timers.advance(50_000);
  assert.equal(t.port.events('lease.revoked').length, 0);
  await t.timers.advance(10_000);
  assert.equal(t.port.events('lease.revoked').length, 1);
});

const navigated = (url, loaderId, parentId) => ({ frame: { id: parentId ? 'child' : 'F1', loaderId, url, ...(parentId && { parentId }) } });

test('an origin lease ends when the main frame commits another origin', async () => {
  const t = await setup();
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.event(1, 'Page.frameNavigated', navigated('https://evil.test/', 'L9', 'F1')); // a child frame: fine
  t.chrome.event(1, 'Page.frameNavigated', navigated('https://a.test/next', 'L2'));
  assert.equal(t.ext.gates.get(1).epoch, 'F1:L2');
  t.chrome.event(1, 'Page.frameNavigated', navigated('https://evil.test/', 'L3'));
  assert.deepEqual(t.port.events('lease.revoked').map((e) => e.value), [{ leaseId: lease.id }]);
  assert.equal(t.ext.gates.list().length, 0);
});

test('a tab lease follows the tab across origins, but not off HTTP(S)', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  await t.grant(1);
  t.chrome.event(1, 'Page.frameNavigated', navigated('https://b.test/', 'L2'));
  assert.equal(t.ext.gates.list().length, 1);
  t.chrome.event(1, 'Page.frameNavigated', navigated('data:text/html,hi', 'L3'));
  assert.equal(t.ext.gates.list().length, 0);
});

test('page.changed is coalesced within 50 ms and counts per lease from 1', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.event(1, 'Page.frameNavigated', navigated('https://a.test/2', 'L2'));
  t.chrome.event(1, 'DOM.documentUpdated', {});
  t.chrome.event(1, 'Page.loadEventFired', {});
  t.chrome.event(1, 'Network.requestWillBeSent', {}); // not a page change
  await t.timers.advance(49);
  assert.equal(t.port.events('page.changed').length, 0);
  await t.timers.advance(1);
  t.chrome.event(1, 'Page.navigatedWithinDocument', { frameId: 'other' }); // a child frame: ignored
  t.chrome.event(1, 'Page.navigatedWithinDocument', { frameId: 'F1' });
  await t.timers.advance(50);
  assert.deepEqual(t.port.events('page.changed').map((e) => e.value), [
    { tab: lease.tab, leaseId: lease.id, sequence: 1 },
    { tab: lease.tab, leaseId: lease.id, sequence: 2 },
  ]);
  assert.equal(t.chrome.badges.get(1), 'ON');
});

test('commands on one tab run one at a time', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  let running = 0;
  let most = 0;
  t.chrome.cdp.set('Page.getLayoutMetrics', async () => {
    most = Math.max(most, ++running);
    await flush();
    running--;
    return {};
  });
  const ids = [1, 2, 3].map(() => t.request('cdp', { lease, method: 'Page.getLayoutMetrics', params: {} }));
  for (let i = 0; i < 20; i++) await flush();
  assert.ok(ids.every((id) => t.port.response(id)?.ok));
  assert.equal(most, 1);
});

test('a cancelled command frees the tab queue even if the debugger never answers', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.cdp.set('Page.getLayoutMetrics', () => new Promise(() => {}));
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: {} }));
  const stuck = t.request('cdp', { lease, method: 'Page.getLayoutMetrics', params: {} });
  const next = t.request('cdp', { lease, method: 'Page.getFrameTree', params: {} });
  await flush();
  t.port.receive({ type: 'cancel', id: stuck });
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(t.port.response(stuck).code, 'CANCELLED');
  assert.equal(t.port.response(next).ok, true);
});

test('at start, attachments an earlier worker left are detached before any grant', async () => {
  const chrome = fakeChrome();
  chrome.addTab(1, 'https://a.test/');
  chrome.attached.add(1); // left by a worker that died
  chrome.debugger.getTargets = async () => [{ tabId: 1, attached: true, type: 'page' }, { attached: false, tabId: 2 }];
  createExtension(chrome, { timers: { setTimeout: () => 0, clearTimeout() {} }, uuid: () => 'u' }).start();
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(chrome.attached.size, 0);
  assert.equal(chrome.badges.get(1), '');
});

test('a gate knows its main document\'s child frames: from the frame trees it sees and the frame events between them', async () => {
  const { createGates } = await import('../lib/gate.js');
  const chrome = fakeChrome();
  const timers = { setTimeout: () => 0, clearTimeout: () => {} };
  const gates = createGates({ chrome, timers, now: () => 0, emit: () => {} });
  const gate = gates.add({}, 1, { tab: 'i:1', id: 'l', token: 1, scope: 'origin', origin: 'https://a.test', expiresAt: 60_000 });
  const ids = () => [...gate.childFrames].sort();
  const child = (id) => ({ frame: { id, loaderId: 'CL', url: 'https://a.test/c' } });
  assert.equal(gates.setMainFrame(gate, { id: 'F', loaderId: 'L1', url: 'https://a.test/' }, [child('A'), child('B')]), true);
  assert.deepEqual(ids(), ['A', 'B']);
  gates.onEvent({ tabId: 1 }, 'Page.frameAttached', { frameId: 'C', parentFrameId: 'F' });
  gates.onEvent({ tabId: 1 }, 'Page.frameAttached', { frameId: 'D', parentFrameId: 'C' }); // C's child
  gates.onEvent({ tabId: 1 }, 'Page.frameDetached', { frameId: 'A', reason: 'remove' });
  assert.deepEqual(ids(), ['B', 'C']);
  // A tree of the same document adds what it lists: a frame attached while
  // the tree was on its way stays.
  gates.onEvent({ tabId: 1 }, 'Page.frameAttached', { frameId: 'E', parentFrameId: 'F' });
  gates.setMainFrame(gate, { id: 'F', loaderId: 'L1', url: 'https://a.test/' }, [child('B'), child('C')]);
  assert.deepEqual(ids(), ['B', 'C', 'E']);
  // A new document starts with none of the old one's.
  gates.onEvent({ tabId: 1 }, 'Page.frameNavigated', { frame: { id: 'F', loaderId: 'L2', url: 'https://a.test/next' } });
  assert.deepEqual(ids(), []);
  gates.setMainFrame(gate, { id: 'F', loaderId: 'L3', url: 'https://a.test/last' }, [child('G')]);
  assert.deepEqual(ids(), ['G']);
});
