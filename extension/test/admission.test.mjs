// admission.request: the owner admits a broker client connection in the
// admission window (admit.html), against the FAKE chrome of fake-chrome.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, flush } from './fake-chrome.mjs';

const connection = { id: '7', label: 'claude (pid 4242)' };

// ask sends admission.request and returns the admission window's request.
async function ask(t, params = { connection }) {
  const id = t.request('admission.request', params);
  await flush();
  await flush();
  const w = t.chrome.windows_.at(-1);
  return { id, w, req: w && new URL(w.url, 'x:/').searchParams.get('req') };
}

async function settled(t, id) {
  for (let i = 0; i < 10 && !t.port.response(id); i++) await flush();
  return t.port.response(id);
}

test('Allow in the admission window answers allowed:true and closes it', async () => {
  const t = await setup();
  const { id, w, req } = await ask(t);
  assert.deepEqual({ type: w.type, width: w.width, height: w.height }, { type: 'popup', width: 500, height: 440 });
  assert.match(w.url, /^admit\.html\?req=/);
  assert.deepEqual(await t.chrome.message({ type: 'approval.get', req }), { client: 'claude (pid 4242)', connection: '7' });
  // Only the window opened for the question may answer it.
  await t.chrome.message({ type: 'approval.answer', req, allow: true }, { tab: { windowId: w.id + 1 } });
  await flush();
  assert.equal(t.port.response(id), undefined);
  await t.chrome.message({ type: 'approval.answer', req, allow: true }, { tab: { windowId: w.id } });
  assert.deepEqual((await settled(t, id)).value, { allowed: true });
  assert.equal(w.closed, true);
  assert.equal(await t.chrome.message({ type: 'approval.get', req }), null);
  assert.equal(t.chrome.attached.size, 0); // admission touches no tab
});

test('Deny, closing the window, or 60 s without an answer answers allowed:false', async () => {
  const ways = {
    deny: (t, w, req) => t.chrome.message({ type: 'approval.answer', req, allow: false }, { tab: { windowId: w.id } }),
    close: (t, w) => t.chrome.windows.onRemoved.emit(w.id),
    timeout: (t) => t.timers.advance(1_000),
  };
  for (const [name, act] of Object.entries(ways)) {
    const t = await setup({ personal: name === 'close' }); // the mode does not matter
    const { id, w, req } = await ask(t);
    await t.timers.advance(59_000);
    assert.equal(t.port.response(id), undefined, name);
    await act(t, w, req);
    const r = await settled(t, id);
    assert.deepEqual({ ok: r?.ok, value: r?.value }, { ok: true, value: { allowed: false } }, name);
    if (name !== 'close') assert.equal(w.closed, true, name); // the worker closes what the user left open
    assert.equal(await t.chrome.message({ type: 'approval.get', req }), null, name);
  }
});

test('a cancelled question closes its window', async () => {
  const t = await setup();
  const { id, w } = await ask(t);
  t.port.receive({ type: 'cancel', id });
  await flush();
  assert.equal(t.port.response(id).code, 'CANCELLED');
  assert.equal(w.closed, true);
});

test('admission.request without a connection id and label is INVALID_REQUEST, with no window', async () => {
  const t = await setup();
  for (const params of [{}, { connection: null }, { connection: { id: '7' } }, { connection: { label: 'x' } },
    { connection: { id: 7, label: 'x' } }, { connection: { id: '7', label: '' } }]) {
    const r = await t.call('admission.request', params);
    assert.equal(r.code, 'INVALID_REQUEST', JSON.stringify(params));
  }
  assert.equal(t.chrome.windows_.length, 0);
});

test('each question gets its own window and answer', async () => {
  const t = await setup();
  const a = await ask(t, { connection: { id: '1', label: 'same (pid 1)' } });
  const b = await ask(t, { connection: { id: '2', label: 'same (pid 1)' } });
  assert.notEqual(a.w.id, b.w.id);
  await t.chrome.message({ type: 'approval.answer', req: b.req, allow: false }, { tab: { windowId: b.w.id } });
  await t.chrome.message({ type: 'approval.answer', req: a.req, allow: true }, { tab: { windowId: a.w.id } });
  assert.deepEqual((await settled(t, a.id)).value, { allowed: true });
  assert.deepEqual((await settled(t, b.id)).value, { allowed: false });
});
