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
      onConnect: new FakeEvent(),
      id: 'fake-id',
      getURL: (path) => `chrome-extension://fake-id/${path}`,
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
      onUpdated: new FakeEvent(),
      get: async (id) => {
        if (!tabs.has(id)) throw new Error('No tab with id');
        return { ...tabs.get(id) };
      },
      query: async ({ active, windowId } = {}) => [...tabs.values()]
        .filter((t) => (active === undefined || t.active === active) && (windowId === undefined || t.windowId === windowId))
        .map((t) => ({ ...t })),
      update: async (id, props) => {
        if (!tabs.has(id)) throw new Error('No tab with id');
        Object.assign(tabs.get(id), props);
        return { ...tabs.get(id) };
      },
      create: async ({ url }) => {
        const id = 1000 + tabs.size;
        tabs.set(id, { id, url, title: '', active: true, windowId: 1 });
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
      update: async (id, props) => ({ id, ...props }),
      get: async (id) => {
        const w = c.windows_.find((x) => x.id === id && !x.closed);
        if (!w) throw new Error(`No window with id: ${id}.`);
        return { ...w };
      },
      getLastFocused: async () => ({ id: 1, type: 'normal' }), // every tab of the fake is in window 1
    },
    // Test helpers.
    addTab(id, url, title = `Tab ${id}`) {
      tabs.set(id, { id, url, title, active: false, windowId: 1 });
    },
    // navigateTab moves a tab to url, as chrome.tabs reports it.
    navigateTab(id, url) {
      tabs.get(id).url = url;
      c.tabs.onUpdated.emit(id, { url }, { ...tabs.get(id) });
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
  for (const m of ['Page.enable', 'DOM.enable', 'Accessibility.enable', 'Performance.enable']) cdp.set(m, () => ({}));
  cdp.set('Page.getFrameTree', (_, tabId) => ({
    frameTree: { frame: { id: `F${tabId}`, loaderId: 'L1', url: tabs.get(tabId).url } },
  }));
  return c;
}

// setup starts an extension on the fake and returns the pieces tests use.
// encodeImage stands in for the canvas encoder (Node has none).
export async function setup({ welcome = true, personal = false, ordered = false, encodeImage } = {}) {
  const chrome = fakeChrome();
  const timers = new FakeTimers();
  let n = 0;
  const ext = createExtension(chrome, {
    timers,
    encodeImage,
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
      value: {
        version: 1, connectionEpoch: 'c1',
        capabilities: ['runtime.v1', ...(personal ? ['broker.personal-mode.v1'] : []), ...(ordered ? ['transport.ordered-ids.v1'] : [])],
      },
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

// serveFrames answers the frame, snapshot, box and screenshot commands of
// tabId from a compact page description, read afresh on every command so a
// test can change the page between two reads:
//
//   page = {url, origin, loaderId?, viewport?, frames: [frame...]}
//   frame = {owner, origin?, local?, id?, loaderId?, name?, box?, frames?}
//     owner   the backendNodeId of the owner element in its parent document
//     local   false: out of process. Page.getFrameTree and the snapshot leave
//             it and all below it out; only DOM.describeNode knows its ID.
//     origin  securityOrigin of an in-process frame ("://" for about:blank)
//     box     [x, y, width, height] of the owner's border box in viewport CSS
//             px; null or absent: not rendered (DOM.getBoxModel throws)
//     name    the owner's nodeName, IFRAME unless given
//   viewport  cssVisualViewport fields; defaults 1000x800 at 0,0, scale 1
//
// Frame IDs default to C<owner>, the root's to F<tabId>; a frame's loader
// ID to L-<its ID>. Screenshots answer
// "png1", "png2", ... in order.
export function serveFrames(chrome, tabId, page) {
  const rootId = () => `F${tabId}`;
  const idOf = (f) => f.id ?? `C${f.owner}`;
  const urlOf = (origin) => (origin === '://' ? 'about:blank' : `${origin}/`);
  const all = (frames = page.frames ?? []) => frames.flatMap((f) => [f, ...all(f.frames ?? [])]);
  const shots = { n: 0 };

  chrome.cdp.set('Page.getFrameTree', () => {
    const tree = (f, parentId) => ({
      frame: { id: idOf(f), parentId, loaderId: f.loaderId ?? `L-${idOf(f)}`, url: urlOf(f.origin), securityOrigin: f.origin },
      childFrames: (f.frames ?? []).filter((c) => c.local !== false).map((c) => tree(c, idOf(f))),
    });
    const root = { frame: { id: rootId(), loaderId: page.loaderId ?? 'L1', url: page.url, securityOrigin: page.origin } };
    const kids = (page.frames ?? []).filter((c) => c.local !== false).map((c) => tree(c, rootId()));
    return { frameTree: kids.length ? { ...root, childFrames: kids } : root };
  });

  // An about:blank or about:srcdoc frame (origin '://') has the origin
  // f.selfOrigin of its document, which self.origin says in an isolated
  // world of its frame. Its storage key is f.key, by default its origin
  // and a slash (none, for an opaque origin: the call fails).
  chrome.cdp.set('Storage.getStorageKeyForFrame', ({ frameId }) => {
    const f = all().find((x) => idOf(x) === frameId);
    const key = f?.key !== undefined ? f.key : /^https?:/.test(f?.selfOrigin ?? '') ? `${f.selfOrigin}/` : null;
    if (key === null) throw new Error('Frame has an opaque origin');
    return { storageKey: key };
  });
  const worlds = new Map();
  chrome.cdp.set('Page.createIsolatedWorld', ({ frameId }) => {
    const id = 900 + worlds.size;
    worlds.set(id, frameId);
    return { executionContextId: id };
  });
  chrome.cdp.set('Runtime.evaluate', ({ expression, contextId }) => {
    const f = all().find((x) => idOf(x) === worlds.get(contextId));
    if (expression !== 'self.origin' || !f) throw new Error('Cannot find context with specified id');
    return { result: { type: 'string', value: f.selfOrigin ?? 'null' } };
  });

  chrome.cdp.set('DOMSnapshot.captureSnapshot', ({ computedStyles }) => {
    if (!Array.isArray(computedStyles)) throw new Error('computedStyles required');
    const strings = [];
    const s = (v) => {
      const i = strings.indexOf(v);
      return i >= 0 ? i : strings.push(v) - 1;
    };
    const documents = [];
    let backend = 100000; // non-owner nodes
    // doc adds a document with html > body > (a div, a shadow root) holding
    // the owners, and returns its index.
    // Computed styles [filter, -webkit-box-reflect, backdrop-filter] of
    // element nodes: page.bodyStyle on the main document's BODY,
    // page.glassStyle on its DIV, f.style on an owner; 'none' elsewhere.
    const none = ['none', 'none', 'none'];
    function doc(frameId, url, frames, main = false) {
      const k = documents.length;
      const nodes = { parentIndex: [], nodeType: [], nodeName: [], backendNodeId: [], contentDocumentIndex: { index: [], value: [] } };
      const layout = { nodeIndex: [], styles: [] };
      documents.push({ documentURL: s(url), frameId: s(frameId), nodes, layout });
      const add = (parent, type, name, id = ++backend, style = none) => {
        nodes.parentIndex.push(parent);
        nodes.nodeType.push(type);
        nodes.nodeName.push(s(name));
        nodes.backendNodeId.push(id);
        const i = nodes.parentIndex.length - 1;
        if (type === 1) {
          layout.nodeIndex.push(i);
          layout.styles.push(computedStyles.map((_, j) => s(style[j] ?? 'none')));
        }
        return i;
      };
      add(-1, 9, '#document');
      const html = add(0, 1, 'HTML');
      const body = add(html, 1, 'BODY', undefined, main ? page.bodyStyle : none);
      add(body, 1, 'DIV', undefined, main ? page.glassStyle : none);
      const shadow = add(body, 11, '#document-fragment'); // shadow trees are flattened in
      (frames ?? []).forEach((f, i) => {
        const node = add(i % 2 ? shadow : body, 1, f.name ?? 'IFRAME', f.owner, f.style);
        if (f.local === false) return;
        const content = doc(idOf(f), urlOf(f.origin), f.frames);
        nodes.contentDocumentIndex.index.push(node);
        nodes.contentDocumentIndex.value.push(content);
      });
      return k;
    }
    doc(rootId(), page.url, page.frames, true);
    return { documents, strings };
  });

  chrome.cdp.set('DOM.getBoxModel', ({ backendNodeId }) => {
    const f = all().find((x) => x.owner === backendNodeId);
    if (!f?.box) throw new Error('Could not compute box model.');
    const [x, y, w, h] = f.box;
    const quad = [x, y, x + w, y, x + w, y + h, x, y + h];
    return { model: { content: quad, padding: quad, border: quad, margin: quad, width: w, height: h } };
  });

  chrome.cdp.set('DOM.describeNode', ({ backendNodeId }) => {
    const f = all().find((x) => x.owner === backendNodeId);
    if (!f) throw new Error('No node with given id found');
    return { node: { backendNodeId, nodeType: 1, nodeName: f.name ?? 'IFRAME', frameId: idOf(f) } };
  });

  chrome.cdp.set('Page.getLayoutMetrics', () => ({
    cssVisualViewport: { offsetX: 0, offsetY: 0, clientWidth: 1000, clientHeight: 800, pageX: 0, pageY: 0, scale: 1, zoom: 1, ...page.viewport },
  }));

  chrome.cdp.set('Page.captureScreenshot', () => ({ data: `png${++shots.n}` }));
  return shots;
}
