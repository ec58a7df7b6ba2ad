// The owner's console, worker side (lib/owner.js) and the requests the
// extension sends the broker for it (transport.call), against the FAKE
// chrome of fake-chrome.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, flush } from './fake-chrome.mjs';

// consolePort opens a console page's port to the worker (a fake port: the
// page side of chrome.runtime.connect).
function consolePort(t, url = 'chrome-extension://fake-id/console.html') {
  const listeners = { message: [], disconnect: [] };
  const port = {
    name: 'console',
    sender: { id: 'fake-id', url },
    got: [],
    disconnected: false,
    postMessage(msg) {
      if (this.disconnected) throw new Error('disconnected');
      this.got.push(structuredClone(msg));
    },
    disconnect() {
      this.disconnected = true;
    },
    onMessage: { addListener: (fn) => listeners.message.push(fn) },
    onDisconnect: { addListener: (fn) => listeners.disconnect.push(fn) },
    send(msg) {
      for (const fn of listeners.message) fn(structuredClone(msg));
    },
    close() {
      for (const fn of listeners.disconnect) fn();
    },
    reply(id) {
      return this.got.find((m) => m.id === id);
    },
  };
  t.chrome.runtime.onConnect.emit(port);
  return port;
}

// brokerRequest returns the last request the extension sent the broker.
const brokerRequest = (t, method) => t.port.sent.filter((m) => m.type === 'request' && m.method === method).at(-1);

async function settle(fn) {
  for (let i = 0; i < 20; i++) {
    const v = fn();
    if (v) return v;
    await flush();
  }
  return undefined;
}

test('the hello offers the console', async () => {
  const t = await setup();
  assert.ok(t.hello.params.capabilities.includes('owner.console.v1'));
});

test('console state: the broker is asked for owner.state, with ordered IDs, and the questions and tab titles added', async () => {
  const t = await setup({ ordered: true });
  t.chrome.addTab(1, 'https://a.test/x', 'Inbox');
  const p = consolePort(t);
  p.send({ id: 1, type: 'state' });
  const req = await settle(() => brokerRequest(t, 'owner.state'));
  assert.deepEqual(req, { type: 'request', id: '1', method: 'owner.state', params: {} });
  const state = { version: 'v', admission: 'open', clients: [], services: {} };
  t.port.receive({ type: 'response', id: '1', ok: true, value: state });
  const r = await settle(() => p.reply(1));
  assert.deepEqual(r, { id: 1, ok: true, value: { connection: 'Connected', owner: state, code: null, questions: [], consents: [],
    tabs: { [`${t.instanceId}:1`]: { title: 'Inbox', url: 'https://a.test/x' } } } });
  assert.equal(t.port.disconnected, false);

  // A refusal reaches the console as a code; IDs keep increasing.
  p.send({ id: 2, type: 'state' });
  const req2 = await settle(() => brokerRequest(t, 'owner.state')?.id === '2' && brokerRequest(t, 'owner.state'));
  t.port.receive({ type: 'response', id: req2.id, ok: false, code: 'POLICY_DENIED' });
  assert.equal((await settle(() => p.reply(2))).value.code, 'POLICY_DENIED');
});

test('a late answer is ignored; an answer to a request never sent closes the port; a closed port fails the calls', async () => {
  const t = await setup();
  const p = consolePort(t);
  p.send({ id: 1, type: 'log', query: { limit: 5 } });
  const req = await settle(() => brokerRequest(t, 'owner.log'));
  assert.deepEqual(req.params, { limit: 5 });
  await t.timers.advance(10_000);
  assert.deepEqual(await settle(() => p.reply(1)), { id: 1, ok: false, code: 'DEADLINE_EXCEEDED' });
  t.port.receive({ type: 'response', id: req.id, ok: true, value: {} }); // late
  assert.equal(t.port.disconnected, false);

  p.send({ id: 2, type: 'log', query: {} });
  await settle(() => brokerRequest(t, 'owner.log')?.id === '2');
  t.port.receive({ type: 'response', id: '99', ok: true, value: {} });
  assert.equal(t.port.disconnected, true);
  assert.deepEqual(await settle(() => p.reply(2)), { id: 2, ok: false, code: 'CONNECTION_LOST' });

  // Without a connection a call fails at once.
  p.send({ id: 3, type: 'log', query: {} });
  assert.deepEqual(await settle(() => p.reply(3)), { id: 3, ok: false, code: 'CONNECTION_LOST' });
});

test('bad console messages are refused, and only console.html may connect', async () => {
  const t = await setup();
  const p = consolePort(t);
  for (const [i, msg] of [{ type: 'nope' }, { type: 'log', query: { limit: -1 } }, { type: 'log', query: { agent: 7 } }, { type: 'stop', conn: 'x' }].entries()) {
    p.send({ id: i, ...msg });
    assert.equal((await settle(() => p.reply(i))).code, 'INVALID_REQUEST', JSON.stringify(msg));
  }
  assert.equal(t.port.sent.filter((m) => m.type === 'request' && m.method !== 'hello').length, 0);
  const other = consolePort(t, 'chrome-extension://fake-id/popup.html');
  assert.equal(other.disconnected, true);
});

test("the broker's owner.changed and every question asked or settled reach the console", async () => {
  const t = await setup();
  const p = consolePort(t);
  t.port.receive({ type: 'event', event: 'owner.changed', value: { topics: ['clients', 'log'] } });
  assert.deepEqual(p.got.at(-1), { type: 'changed', topics: ['clients', 'log'] });
  assert.equal(t.port.disconnected, false);

  // An admission question: listed, then answered from the console.
  const id = t.request('admission.request', { connection: { id: '7', label: 'claude (pid 4242)' } });
  await flush();
  await flush();
  assert.deepEqual(p.got.at(-1), { type: 'changed', topics: ['questions'] });
  p.send({ id: 1, type: 'state' });
  await settle(() => brokerRequest(t, 'owner.state'));
  t.port.receive({ type: 'response', id: brokerRequest(t, 'owner.state').id, ok: true, value: {} });
  const { questions } = (await settle(() => p.reply(1))).value;
  assert.equal(questions.length, 1);
  const q = questions[0];
  assert.deepEqual({ kind: q.kind, client: q.client, connection: q.connection, deadline: q.deadline - q.askedAt },
    { kind: 'admission', client: 'claude (pid 4242)', connection: '7', deadline: 60_000 });
  const w = t.chrome.windows_.at(-1);
  p.send({ id: 2, type: 'answer', req: q.req, allow: true });
  assert.deepEqual((await settle(() => p.reply(2))).value, { answered: true });
  assert.deepEqual((await settle(() => t.port.response(id))).value, { allowed: true });
  assert.equal(w.closed, true); // the window, the fallback, closes
  p.send({ id: 3, type: 'answer', req: q.req, allow: true });
  assert.deepEqual((await settle(() => p.reply(3))).value, { answered: false });

  // A closed console is told nothing more.
  p.close();
  const before = p.got.length;
  t.port.receive({ type: 'event', event: 'owner.changed', value: { topics: ['grants'] } });
  assert.equal(p.got.length, before);
});

test('a claim is answered from the console like in its window', async () => {
  const t = await setup();
  t.chrome.addTab(1, 'https://a.test/', 'Bank');
  const p = consolePort(t);
  const lease = t.lease(1);
  const id = t.request('lease.grant', { lease, client: { label: 'agent (pid 1)' } });
  await settle(() => p.got.some((m) => m.topics?.includes('questions')));
  p.send({ id: 1, type: 'state' });
  await settle(() => brokerRequest(t, 'owner.state'));
  t.port.receive({ type: 'response', id: brokerRequest(t, 'owner.state').id, ok: true, value: {} });
  const [q] = (await settle(() => p.reply(1))).value.questions;
  assert.deepEqual({ kind: q.kind, client: q.client, title: q.title, origin: q.origin }, { kind: 'claim', client: 'agent (pid 1)', title: 'Bank', origin: 'https://a.test' });
  p.send({ id: 2, type: 'answer', req: q.req, allow: false });
  const r = await settle(() => t.port.response(id));
  assert.equal(r.code, 'POLICY_DENIED');
  assert.equal(t.chrome.attached.size, 0);
});

test('Stop: one agent through the broker; Stop all here at once and at the broker', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  await t.grant(1);
  const p = consolePort(t);
  p.send({ id: 1, type: 'stop', conn: 4 });
  assert.deepEqual((await settle(() => brokerRequest(t, 'owner.stop'))).params, { conn: 4 });
  assert.equal(t.ext.gates.list().length, 1); // the broker revokes it (lease.revoke)
  p.send({ id: 2, type: 'stop' });
  await flush();
  assert.equal(t.ext.gates.list().length, 0);
  assert.equal(t.port.events('lease.revoked').length, 1);
  assert.deepEqual(brokerRequest(t, 'owner.stop').params, {});
});

test('the console lists the tabs allowed beforehand, titled; Forget takes one back and the next claim asks; Stop all forgets all', async () => {
  const t = await setup();
  t.chrome.addTab(1, 'https://a.test/x', 'Inbox');
  t.chrome.addTab(2, 'https://b.test/', 'Bank');
  const p = consolePort(t);
  for (const id of [1, 2]) assert.equal(await t.chrome.message({ type: 'popup.allow', tabId: id }), true);
  assert.ok(p.got.some((m) => m.type === 'changed' && m.topics.includes('consents')), 'allowing did not tell the console');
  p.send({ id: 1, type: 'state' });
  await settle(() => brokerRequest(t, 'owner.state'));
  t.port.receive({ type: 'response', id: brokerRequest(t, 'owner.state').id, ok: true, value: {} });
  assert.deepEqual((await settle(() => p.reply(1))).value.consents,
    [{ tabId: 1, origin: 'https://a.test', title: 'Inbox' }, { tabId: 2, origin: 'https://b.test', title: 'Bank' }]);

  p.send({ id: 2, type: 'forget', tabId: 1 });
  assert.deepEqual((await settle(() => p.reply(2))).value, { forgotten: true });
  assert.equal(t.ext.consents.origin(1), undefined);
  assert.equal(t.ext.consents.origin(2), 'https://b.test');
  p.send({ id: 3, type: 'forget', tabId: 1 });
  assert.deepEqual((await settle(() => p.reply(3))).value, { forgotten: false });
  p.send({ id: 4, type: 'forget', tabId: '2' });
  assert.deepEqual((await settle(() => p.reply(4))).value, { forgotten: false });
  assert.equal(t.ext.consents.origin(2), 'https://b.test');

  // The claim of a forgotten tab asks the owner again.
  await t.chrome.tabs.update(1, { active: true });
  const windows = t.chrome.windows_.length;
  t.request('lease.grant', { lease: t.lease(1), client: { label: 'agent' } });
  for (let i = 0; i < 20 && t.chrome.windows_.length === windows; i++) await flush();
  assert.equal(t.chrome.windows_.length, windows + 1, 'a forgotten tab was granted without asking');

  p.send({ id: 5, type: 'stop' });
  await flush();
  assert.deepEqual(t.ext.consents.list(), []);
});

test('console.open opens the console tab, then focuses it', async () => {
  const t = await setup();
  const r = await t.call('console.open');
  assert.deepEqual(r.value, { opened: true });
  const tabs = [...t.chrome.tabs_.values()].filter((x) => x.url === 'chrome-extension://fake-id/console.html');
  assert.equal(tabs.length, 1);
  await t.call('console.open');
  assert.equal([...t.chrome.tabs_.values()].filter((x) => x.url === 'chrome-extension://fake-id/console.html').length, 1);
});

test('words for the owner: what an agent may do, for how long, what it did', async () => {
  const w = await import('../lib/words.js');
  assert.equal(w.LEASE_MINUTES, 5);
  assert.equal(w.left(1000 + 245_000, 1000), '4 min 05 s left');
  assert.equal(w.left(1000, 2000), 'expired');
  assert.match(w.mayDo('origin', 'https://bank.test'), /click, type .* only while it shows https:\/\/bank\.test$/);
  assert.match(w.mayDo('tab', 'https://bank.test'), /whatever web page/);
  assert.equal(w.describeAction({ kind: 'fill', role: 'textbox', name: 'Password', textLength: 12 }), 'fill textbox “Password” with 12 characters');
  assert.equal(w.describeAction({ kind: 'press', role: 'button', name: 'Go', key: 'Enter', step: 1 }), 'batch step 2: press Enter on button “Go”');
  assert.equal(w.describeAction({ kind: 'click' }), 'click an element no longer on the page');
  assert.equal(w.describeResult({ state: 'done', outcome: 'failed', dispatch: 'notDispatched', code: 'STALE_TARGET' }),
    'refused: nothing was sent to the page (STALE_TARGET)');
  assert.equal(w.describeResult({ state: 'done', outcome: 'unknown', dispatch: 'observed' }), 'done (the agent asked for no check)');
  assert.equal(w.describeResult({ state: 'done', outcome: 'unknown', dispatch: 'dispatched', code: 'INTERNAL_ERROR' }),
    'sent to the page; what it did is not known (INTERNAL_ERROR)');
  assert.match(w.describeResult({ state: 'interrupted' }), /the input may have happened/);
  assert.equal(w.tabNumber('abc:12'), '12');
});
