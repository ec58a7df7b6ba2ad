// FAKE browser for the Node tests. It stands in for `chrome` and the clock
// only to reach states a real broker and browser never produce on demand
// (a malformed welcome, a 33rd operation, a debugger that never answers).
// Real behaviour is proven by the real-Chromium suite, not here.
import { createExtension } from '../lib/extension.js';

export const flush = () => new Promise((resolve) => setImmediate(resolve));

class FakeEvent {
  listeners = [];
  addListener(fn) {
    this.listeners.push(fn);
  }
  removeListener(fn) {
    this.listeners = this.listeners.filter((l) => l !== fn);
  }
  emit(...args) {
    return this.listeners.map((fn) => fn(...args));
  }
}

// FakeTimers is a manual clock: nothing fires until advance().
export class FakeTimers {
  now = 1_000_000;
  #timers = new Map();
  #seq = 0;
  setTimeout = (fn, ms) => {
    this.#timers.set(++this.#seq, { at: this.now + ms, fn });
    return this.#seq;
  };
  clearTimeout = (id) => this.#timers.delete(id);
  async advance(ms) {
    const end = this.now + ms;
    for (;;) {
      const due = [...this.#timers].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.#timers.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
      await flush();
    }
    this.now = end;
    await flush();
  }
}

class FakePort {
  sent = [];
  disconnected = false;
  onMessage = new FakeEvent();
  onDisconnect = new FakeEvent();
  postMessage(msg) {
    if (this.disconnected) throw new Error('Attempting to use a disconnected port object');
    this.sent.push(structuredClone(msg));
  }
  disconnect() {
    this.disconnected = true;
  }
  // The broker's side.
  receive(msg) {
    this.onMessage.emit(structuredClone(msg));
  }
  drop() {
    this.disconnected = true;
    this.onDisconnect.emit(this);
  }
  response(id) {
    return this.sent.find((m) => m.type === 'response' && m.id === id);
  }
  events(name) {
    return this.sent.filter((m) => m.type === 'event' && (!name || m.event === name));
  }
}

export function fakeChrome() {
  const tabs = new Map();
  const cdp = new Map(); // method -> (params, tabId) => result
  const c = {
    tabs_: tabs,
    ports: [],
    commands: [], // every debugger.sendCommand: {tabId, method, params}
    attached: new Set(),
    badges: new Map(),
    windows_: [],
    cdp,
    runtime: {
      lastError: undefined,
      onMessage: new FakeEvent(),
      connectNative: () => {
        const p = new FakePort();
        c.ports.push(p);
        return p;
      },
    },
    debugger: {
      onEvent: new FakeEvent(),
      onDetach: new FakeEvent(),
      attach: async ({ tabId }, version) => {
        if (version !== '1.3' || !tabs.has(tabId) || c.attached.has(tabId)) throw new Error('cannot attach');
        c.attached.add(tabId);
      },
      detach: async ({ tabId }) => {
        if (!c.attached.delete(tabId)) throw new Error('not attached');
      },
      getTargets: async () => [],
      sendCommand: async ({ tabId }, method, params) => {
        c.commands.push({ tabId, method, params });
        if (!c.attached.has(tabId)) throw new Error('not attached');
        const fn = cdp.get(method);
        if (!fn) throw new Error(`fake: no CDP answer for ${method}`);
        return fn(params, tabId);
      },
    },
    tabs: {
      onRemoved: new FakeEvent(),
      get: async (id) => {
        if (!tabs.has(id)) throw new Error('No tab with id');
        return { ...tabs.get(id) };
      },
      query: async () => [...tabs.values()].map((t) => ({ ...t })),
      update: async (id, props) => {
        if (!tabs.has(id)) throw new Error('No tab with id');
        Object.assign(tabs.get(id), props);
        return { ...tabs.get(id) };
      },
    },
    action: {
      setBadgeText: async ({ tabId, text }) => {
        c.badges.set(tabId, text);
      },
    },
    windows: {
      onRemoved: new FakeEvent(),
      create: async (opts) => {
        const w = { id: 100 + c.windows_.length, ...opts };
        c.windows_.push(w);
        return w;
      },
      remove: async (id) => {
        const w = c.windows_.find((x) => x.id === id);
        if (w) w.closed = true;
      },
    },
    // Test helpers.
    addTab(id, url, title = `Tab ${id}`) {
      tabs.set(id, { id, url, title, active: false });
    },
    closeTab(id) {
      tabs.delete(id);
      c.attached.delete(id);
      c.tabs.onRemoved.emit(id, {});
    },
    event(tabId, method, params) {
      c.debugger.onEvent.emit({ tabId }, method, params);
    },
    // message sends an extension-page message to the worker.
    async message(msg, sender = {}) {
      let answer;
      const async = c.runtime.onMessage.emit(msg, sender, (r) => (answer = r)).some((r) => r === true);
      if (async) for (let i = 0; i < 10; i++) await flush();
      return answer;
    },
  };
  for (const m of ['Page.enable', 'DOM.enable', 'Accessibility.enable']) cdp.set(m, () => ({}));
  cdp.set('Page.getFrameTree', (_, tabId) => ({
    frameTree: { frame: { id: `F${tabId}`, loaderId: 'L1', url: tabs.get(tabId).url } },
  }));
  return c;
}

// setup starts an extension on the fake and returns the pieces tests use.
export async function setup({ welcome = true, personal = false } = {}) {
  const chrome = fakeChrome();
  const timers = new FakeTimers();
  let n = 0;
  const ext = createExtension(chrome, {
    timers,
    now: () => timers.now,
    uuid: () => `uuid-${++n}`,
    navigator: { userAgent: 'Mozilla/5.0 Chrome/156.0.8078.108 Safari/537.36', userAgentData: { brands: [{ brand: 'Chromium', version: '156' }, { brand: 'Not-A.Brand', version: '24' }] } },
  });
  ext.start();
  await flush();
  const t = { chrome, timers, ext, port: chrome.ports[0] };
  t.hello = t.port.sent[0];
  t.instanceId = t.hello.params.instance.id;
  if (welcome) {
    t.port.receive({
      type: 'response', id: t.hello.id, ok: true,
      value: { version: 1, connectionEpoch: 'c1', capabilities: personal ? ['runtime.v1', 'broker.personal-mode.v1'] : ['runtime.v1'] },
    });
  }
  let seq = 0;
  // request sends one request without waiting; call waits for its answer.
  t.request = (method, params = {}, id = `q${++seq}`) => {
    t.port.receive({ type: 'request', id, method, params });
    return id;
  };
  t.call = async (method, params = {}) => {
    const id = t.request(method, params);
    for (let i = 0; i < 50; i++) {
      const r = t.port.response(id);
      if (r) return r;
      await flush();
    }
    return undefined;
  };
  t.lease = (tabId, over = {}) => ({
    id: `lease-${tabId}`, tab: `${t.instanceId}:${tabId}`, instanceId: t.instanceId, token: `token-${tabId}`,
    origin: new URL(chrome.tabs_.get(tabId)?.url ?? 'https://gone.test/').origin,
    scope: personal ? 'tab' : 'origin', expiresAt: timers.now + 60_000, ...over,
  });
  // grant grants a lease in personal mode (no window) or by clicking Allow.
  t.grant = async (tabId, over = {}) => {
    const lease = t.lease(tabId, over);
    const id = t.request('lease.grant', { lease, client: { label: 'agent' } });
    await flush();
    if (lease.scope === 'origin') {
      await flush();
      const w = chrome.windows_.at(-1);
      await chrome.message({ type: 'approval.answer', req: new URL(w.url, 'x:/').searchParams.get('req'), allow: true }, { tab: { windowId: w.id } });
    }
    for (let i = 0; i < 20 && !t.port.response(id); i++) await flush();
    return { lease, response: t.port.response(id) };
  };
  return t;
}
