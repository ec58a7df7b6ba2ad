// Prior consent from the popup: a restricted claim of an allowed tab, on
// the origin it was allowed for, is granted without the approval window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, flush } from './fake-chrome.mjs';

async function restricted() {
  const t = await setup();
  t.chrome.addTab(1, 'https://a.test/page', 'Page');
  await t.chrome.tabs.update(1, { active: true });
  // grantNow asks for a grant and answers nothing: it succeeds only without
  // a window.
  t.grantNow = async () => {
    const windows = t.chrome.windows_.length;
    const id = t.request('lease.grant', { lease: t.lease(1), client: { label: 'agent' } });
    for (let i = 0; i < 20 && !t.port.response(id); i++) await flush();
    return { response: t.port.response(id), asked: t.chrome.windows_.length > windows };
  };
  return t;
}

test('an allowed tab is granted at once, exact-origin, and shown as allowed', async () => {
  const t = await restricted();
  let state = await t.chrome.message({ type: 'popup.state' });
  assert.deepEqual(state.here, { tabId: 1, title: 'Page', origin: 'https://a.test', allowed: false });
  assert.equal(await t.chrome.message({ type: 'popup.allow', tabId: 1 }), true);
  state = await t.chrome.message({ type: 'popup.state' });
  assert.equal(state.here.allowed, true);
  const { response, asked } = await t.grantNow();
  assert.equal(asked, false, 'the approval window opened for an allowed tab');
  assert.equal(response.ok, true);
  assert.equal(t.ext.gates.get(1).scope, 'origin');
});

test('Stop forgets every consent; the next claim asks again', async () => {
  const t = await restricted();
  await t.chrome.message({ type: 'popup.allow', tabId: 1 });
  assert.equal((await t.grantNow()).response.ok, true);
  await t.chrome.message({ type: 'popup.stop' });
  assert.equal(t.ext.gates.get(1), undefined, 'Stop left the lease');
  const { asked } = await t.grantNow();
  assert.equal(asked, true, 'a claim after Stop was granted without asking');
});

test('leaving the origin forgets the consent, and a non-HTTP(S) tab cannot be allowed', async () => {
  const t = await restricted();
  await t.chrome.message({ type: 'popup.allow', tabId: 1 });
  t.chrome.navigateTab(1, 'https://a.test/other'); // same origin: kept
  assert.equal(t.ext.consents.origin(1), 'https://a.test');
  t.chrome.navigateTab(1, 'https://b.test/');
  t.chrome.navigateTab(1, 'https://a.test/'); // back again: still forgotten
  assert.equal(t.ext.consents.origin(1), undefined);
  assert.equal((await t.grantNow()).asked, true);

  t.chrome.addTab(2, 'chrome://settings');
  assert.equal(await t.chrome.message({ type: 'popup.allow', tabId: 2 }), false);
  assert.equal(await t.chrome.message({ type: 'popup.allow', tabId: 99 }), false); // no such tab
  t.chrome.closeTab(1);
  assert.equal(t.ext.consents.origin(1), undefined);
});
