// dom.read and page.navigate: their request shapes and refusals. What the
// fixed DOM functions read and check in a page is proven by the
// real-Chromium suite (test/actions_test.go); here the fake stands in for
// the isolated world.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from './fake-chrome.mjs';

async function granted({ personal = true } = {}) {
  const t = await setup({ personal });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.facts = { found: true, connected: true, sameDocument: true, tag: 'input' };
  t.resolve = ({ backendNodeId, executionContextId }) => ({ object: { objectId: `${executionContextId}/${backendNodeId}` } });
  t.chrome.cdp.set('Page.createIsolatedWorld', () => ({ executionContextId: 5 }));
  t.chrome.cdp.set('DOM.resolveNode', (p) => t.resolve(p));
  t.chrome.cdp.set('Runtime.evaluate', ({ expression, contextId }) => ({ result: { type: 'object', objectId: `${contextId}/${expression === 'document' ? 1 : '?'}` } }));
  t.chrome.cdp.set('Runtime.callFunctionOn', () => ({ result: { value: t.facts } }));
  t.chrome.cdp.set('Runtime.releaseObjectGroup', () => ({}));
  t.read = (request) => t.call('dom.read', { lease, request: { documentEpoch: 'F1:L1', ...request } });
  t.navigate = (request) => t.call('page.navigate', { lease, request: { documentEpoch: 'F1:L1', ...request } });
  t.lease_ = lease;
  t.calls = (m) => t.chrome.commands.filter((c) => c.method === m).length;
  return t;
}

test('dom.read answers the facts of an element, or of the document', async () => {
  const t = await granted();
  assert.deepEqual((await t.read({ backendNodeId: 42 })).value, t.facts);
  assert.equal(t.chrome.commands.findLast((c) => c.method === 'DOM.resolveNode').params.backendNodeId, 42);
  await t.read({});
  // The document, evaluated in the isolated world: DOM.getDocument would
  // bind it to the DOM agent, and every hit test after would push a node
  // path to the session (see ax.js find).
  assert.deepEqual(t.chrome.commands.findLast((c) => c.method === 'Runtime.evaluate').params, { expression: 'document', contextId: 5, objectGroup: 'dsh-broker' });
  assert.equal(t.chrome.commands.findLast((c) => c.method === 'Runtime.callFunctionOn').params.objectId, '5/1');
  assert.equal(t.calls('DOM.getDocument'), 0);
  const worlds = t.chrome.commands.filter((c) => c.method === 'Page.createIsolatedWorld');
  assert.equal(worlds.length, 1, 'one isolated world per document, kept');
});

test('dom.read of a node that no longer exists is found:false', async () => {
  const t = await granted();
  t.resolve = () => { throw new Error('No node with given id found'); };
  assert.deepEqual((await t.read({ backendNodeId: 42 })).value, { found: false });
});

test('dom.read refuses another document and malformed requests', async () => {
  const t = await granted();
  assert.equal((await t.read({ backendNodeId: 42, documentEpoch: 'F1:L0' })).code, 'STALE_TARGET');
  for (const request of [
    { backendNodeId: 0 },
    { backendNodeId: '42' },
    { backendNodeId: 42, extra: 1 },
    { frame: { frameId: 'C1', loaderId: 'LC' } }, // a frame's document needs an element
    { backendNodeId: 42, frame: { frameId: 'C1' } },
    { documentEpoch: 7 },
  ]) assert.equal((await t.read(request)).code, 'INVALID_REQUEST', JSON.stringify(request));
});

test('page.navigate sends the tab to a credential-free HTTP(S) URL of its scope', async () => {
  const t = await granted();
  let sent;
  t.chrome.cdp.set('Page.navigate', (p) => { sent = p; return { frameId: 'F1', loaderId: 'L9' }; });
  assert.deepEqual((await t.navigate({ url: 'https://b.test' })).value, { url: 'https://b.test/', loaderId: 'L9' });
  assert.deepEqual(sent, { url: 'https://b.test/' });
  t.chrome.cdp.set('Page.navigate', () => ({ frameId: 'F1' })); // within the document
  assert.deepEqual((await t.navigate({ url: 'https://a.test/#x' })).value, { url: 'https://a.test/#x' });
  sent = undefined;
  for (const url of ['https://u:p@a.test/', 'file:///etc/passwd', 'javascript:1', 'chrome://settings', 'not a url']) {
    assert.equal((await t.navigate({ url })).code, 'POLICY_DENIED', url);
  }
  assert.equal((await t.navigate({ url: 'https://a.test/', documentEpoch: 'F1:old' })).code, 'STALE_TARGET');
  for (const request of [{ url: 1 }, { url: 'https://a.test/', extra: 1 }, { url: 'x'.repeat(8193) }]) {
    assert.equal((await t.navigate(request)).code, 'INVALID_REQUEST', JSON.stringify(request));
  }
});

test('page.navigate keeps an origin lease on its origin; a failed navigation is NAVIGATION_FAILED', async () => {
  const t = await granted({ personal: false });
  let navigations = 0;
  t.chrome.cdp.set('Page.navigate', () => { navigations++; return { frameId: 'F1', loaderId: 'L2', errorText: 'net::ERR_CONNECTION_REFUSED' }; });
  assert.equal((await t.navigate({ url: 'https://b.test/' })).code, 'POLICY_DENIED');
  assert.equal(navigations, 0);
  assert.equal((await t.navigate({ url: 'https://a.test/other' })).code, 'NAVIGATION_FAILED');
  assert.equal(navigations, 1);
  t.chrome.cdp.set('Page.navigate', () => ({ frameId: 'F1', loaderId: 'L3', isDownload: true }));
  assert.equal((await t.navigate({ url: 'https://a.test/file.zip' })).code, 'NAVIGATION_FAILED');
});

test('a failed navigation to the lease origin keeps the gate: the error page is checked by the URL it could not reach', async () => {
  const t = await granted({ personal: false });
  t.chrome.event(1, 'Page.frameNavigated', { frame: { id: 'F1', loaderId: 'L2', url: 'chrome-error://chromewebdata/', unreachableUrl: 'https://a.test/down' } });
  assert.ok(t.ext.gates.get(1), 'the gate ended on an error page of its own origin');
  t.chrome.event(1, 'Page.frameNavigated', { frame: { id: 'F1', loaderId: 'L3', url: 'chrome-error://chromewebdata/', unreachableUrl: 'https://b.test/' } });
  assert.equal(t.ext.gates.get(1), undefined);
});

// The fixed functions run in the page; here on plain objects shaped like
// the nodes they walk.
import { HIT, COVER, SELECT_OPTION } from '../lib/dom.js';
const fn = (src) => new Function(`return (${src})`)();

test('HIT: the target, its pseudo-elements, what is inside it across shadow roots and slots, a label of it', () => {
  const hit = fn(HIT);
  const el = (localName, parentNode, extra = {}) => ({ nodeType: 1, localName, parentNode, ...extra });
  const body = el('body', null);
  const target = el('button', body);
  const icon = el('span', target);
  const relation = (node) => hit.call(node, target);
  assert.deepEqual(relation(target), { relation: 'target', pseudo: false });
  assert.deepEqual(relation({ element: target }), { relation: 'target', pseudo: true }); // a CSSPseudoElement
  assert.deepEqual(relation({ element: icon }), { relation: 'inside', pseudo: true });
  assert.deepEqual(relation(icon), { relation: 'inside', pseudo: false });
  // Inside a shadow root of the target.
  const root = { nodeType: 11, parentNode: null, host: target };
  assert.equal(relation(el('i', root)).relation, 'inside');
  // Light DOM shown through a slot in the target (which is in a shadow root).
  const host = el('fancy-button', body);
  const shadow = { nodeType: 11, parentNode: null, host };
  const inner = el('button', shadow);
  const slot = el('slot', inner);
  const slotted = el('span', host, { assignedSlot: slot });
  assert.equal(hit.call(slotted, inner).relation, 'inside');
  // A label whose control is the target, from inside it or its ::before.
  const box = el('input', body);
  const label = el('label', body, { control: box });
  const styled = el('span', label);
  assert.equal(hit.call(styled, box).relation, 'label');
  assert.equal(hit.call({ element: label }, box).relation, 'label');
  assert.equal(hit.call(styled, target).relation, 'outside'); // it is not that label's control
  // An overlay, a sibling, the target's ancestor.
  assert.equal(relation(el('div', body)).relation, 'outside');
  assert.equal(relation(body).relation, 'outside');
});

test('COVER names the nearest element a person would call something', () => {
  const cover = fn(COVER);
  const el = (localName, parentNode, attrs = []) => ({ nodeType: 1, localName, parentNode, hasAttribute: (a) => attrs.includes(a) });
  const body = el('body', null);
  const dialog = el('div', body, ['role', 'aria-label']);
  const p = el('p', dialog);
  assert.equal(cover.call(p), dialog);
  assert.equal(cover.call({ element: p }), dialog);
  const overlay = el('div', body);
  assert.equal(cover.call(overlay), overlay);
  const text = { nodeType: 3, parentElement: p, parentNode: p };
  assert.equal(cover.call(text), dialog);
  const button = el('button', overlay);
  assert.equal(cover.call(button), button);
});

test('SELECT_OPTION checks the value only when one is given', () => {
  const choose = fn(SELECT_OPTION);
  const events = [];
  const select = () => ({
    isConnected: true, localName: 'select', multiple: false, selectedIndex: 0, inert: false,
    matches: () => false, getAttribute: () => null, parentElement: null, assignedSlot: null, getRootNode: () => ({}),
    options: [{ label: 'Red', value: 'r', selected: true, disabled: false, matches: () => false },
      { label: 'Blue', value: 'b', selected: false, disabled: false, matches: () => false }],
    dispatchEvent: (e) => events.push(e.type),
  });
  globalThis.Event ??= class { constructor(type) { this.type = type; } };
  for (const [value, want] of [[undefined, ''], [null, ''], ['b', ''], ['x', 'STALE_TARGET']]) {
    const s = select();
    assert.equal(choose.call(s, 1, 'Blue', value), want, String(value));
    assert.equal(s.selectedIndex, want === '' ? 1 : 0);
  }
});
