// The Snug host's side of the service worker: a native port of its own
// (provider kind "snug") that carries the runner tabs' app frames to the
// broker's hub and the hub's answers back. A runner tab closing never
// drops the port; the port dropping tells every runner tab, and each one
// attaches again (its app reloads) once the port is back.
//
// Nothing here reads a frame: the hub parses and answers them (R1–R7).
// This file cuts messages into pieces and puts them back together, so that
// an 8 MiB db frame crosses the 1 MiB native-messaging limit.
import { validateEnvelope, validateWelcome } from './schema.js';

// The runner protocol's names and sizes (Go: package snug/apps; a Go test
// holds them equal).
export const SNUG = Object.freeze({
  HOST: 'dev.dsh.broker',
  KIND: 'snug',
  CAP_RUNNER: 'snug.runner.v1',
  ORDERED_IDS: 'transport.ordered-ids.v1',
  ATTACH: 'snug.attach',
  EVENT_FRAME: 'snug.frame',
  EVENT_LOAD: 'snug.load',
  EVENT_DETACH: 'snug.detach',
  EVENT_RESET_AGENT: 'snug.resetAgent',
  EVENT_CHAT: 'snug.chat',
  CALL_OPEN_TAB: 'snug.openTab',
  CALL_DELIVER: 'snug.deliver',
  CALL_CONFIRM: 'snug.confirm',
  CONNECTIONS: 'snug.connections',
  APPROVE: 'snug.connection.approve',
  REAPPROVE: 'snug.connection.reapprove',
  REVOKE: 'snug.connection.revoke',
  AUTHORIZE: 'snug.connection.authorize',
  COMPLETE: 'snug.connection.complete',
  CONFIRM_NET: 'net',
  CONFIRM_OPEN_URL: 'openUrl',
  ADMISSION_REQUEST: 'admission.request',
  PIECE_HTML: 'html',
  PIECE_FRAME: 'frame',
  PIECE_APP: 'app',
  PIECE_CLOSED: 'closed',
  PIECE_CHAT: 'chat',
  MAX_PIECE_BYTES: 393216,
  MAX_RELAY_BYTES: 9437184,
  MAX_RUNNERS: 32,
  MAX_CHAT_CHARS: 4000,
  RUNNER_PORT: 'snug-runner',
  RUNNER_PAGE: 'snug/runner.html',
  CDN_ALLOWLIST: Object.freeze(['cdn.jsdelivr.net', 'cdnjs.cloudflare.com', 'unpkg.com']),
});

// What a runner page may ask the broker, for its own app: the connect
// flow. The worker names the runner; the page cannot name another.
const PAGE_CALLS = new Set([SNUG.CONNECTIONS, SNUG.APPROVE, SNUG.REAPPROVE, SNUG.REVOKE, SNUG.AUTHORIZE, SNUG.COMPLETE]);

const WELCOME_TIMEOUT_MS = 3000;
const CALL_TIMEOUT_MS = 15000;
const MAX_IN_FLIGHT = 32;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30000;
const ORDERED_ID = /^[1-9][0-9]{0,15}$/;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

// toBase64 and fromBase64 convert bytes, in slices small enough for
// String.fromCharCode.
export function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function fromBase64(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// pieces cuts a message's UTF-8 bytes into pieces of a runner's message seq.
export function pieces(runner, seq, bytes) {
  const out = [];
  for (let part = 0, off = 0; ; part++) {
    const end = Math.min(bytes.length, off + SNUG.MAX_PIECE_BYTES);
    out.push({ runner, seq, part, last: end === bytes.length, data: toBase64(bytes.subarray(off, end)) });
    off = end;
    if (off === bytes.length) return out;
  }
}

// createAssembler puts pieces back together in order; a piece out of order
// or past maxBytes discards its message.
export function createAssembler(maxBytes) {
  let seq = null;
  let next = 0;
  let parts = [];
  let size = 0;
  return (p) => {
    if (p.part === 0) {
      seq = p.seq;
      next = 0;
      parts = [];
      size = 0;
    } else if (p.seq !== seq || p.part !== next) {
      seq = null;
      return undefined;
    }
    const bytes = fromBase64(p.data);
    size += bytes.length;
    if (size > maxBytes) {
      seq = null;
      return undefined;
    }
    parts.push(bytes);
    next++;
    if (!p.last) return undefined;
    const all = new Uint8Array(size);
    let off = 0;
    for (const b of parts) {
      all.set(b, off);
      off += b.length;
    }
    seq = null;
    parts = [];
    return all;
  };
}

const CHAT_OPS = ['send', 'approve', 'decline', 'revert'];
const CHAT_ID = /^[A-Za-z0-9_-]{1,64}$/;

// chatEvent checks what a runner page's chat panel sent and returns the
// EVENT_CHAT value for runner, or null: an operation of the panel, a
// message of 1 to MAX_CHAT_CHARS characters, ids of a few safe characters,
// a version number. The hub decides everything else.
export function chatEvent(runner, msg) {
  if (!CHAT_OPS.includes(msg?.op)) return null;
  const v = { runner, op: msg.op };
  switch (msg.op) {
    case 'send':
      if (!CHAT_ID.test(msg.id ?? '') || typeof msg.text !== 'string' || msg.text.trim() === '' || msg.text.length > SNUG.MAX_CHAT_CHARS) return null;
      return { ...v, id: msg.id, text: msg.text };
    case 'approve':
    case 'decline':
      return CHAT_ID.test(msg.proposal ?? '') ? { ...v, proposal: msg.proposal } : null;
    case 'revert':
      return Number.isSafeInteger(msg.version) && msg.version > 0 ? { ...v, version: msg.version } : null;
  }
  return null;
}

// createSnug wires the snug port and the runner tabs around an injected
// chrome. askOwner(params, signal) answers the broker's admission question
// (the same window the browser side shows).
export function createSnug(chrome, { timers = globalThis, uuid = () => crypto.randomUUID(), askOwner, identity } = {}) {
  const runners = new Map(); // runner id -> {id, port, app, seq, assembleIn, walled, questions}
  // Walls of an earlier worker's runner tabs go first: those pages lost
  // their ports with it, and wall again when reloaded.
  const swept = chrome.declarativeNetRequest.getSessionRules()
    .then((rules) => chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: rules.map((x) => x.id) }))
    .catch(() => {});
  let conn = null;
  let backoff = BACKOFF_MIN_MS;

  function connect() {
    const c = {
      port: null, welcomed: false, closed: false, helloId: uuid(), instanceId: uuid(),
      nextId: 0, highest: 0, pending: new Map(), inFlight: 0, timer: null,
    };
    conn = c;
    try {
      c.port = chrome.runtime.connectNative(SNUG.HOST);
    } catch {
      return close(c);
    }
    c.port.onMessage.addListener((msg) => receive(c, msg));
    c.port.onDisconnect.addListener(() => close(c));
    c.timer = timers.setTimeout(() => close(c), WELCOME_TIMEOUT_MS);
    post(c, {
      type: 'request', id: c.helloId, method: 'hello', params: {
        bootstrap: 1, versions: [1], role: 'provider', kind: SNUG.KIND,
        capabilities: [SNUG.CAP_RUNNER, SNUG.ORDERED_IDS],
        instance: { id: c.instanceId, family: 'chromium', ...identity, profileLabel: 'Default profile' },
      },
    });
  }

  function post(c, envelope) {
    if (c.closed) return false;
    try {
      c.port.postMessage(envelope);
      return true;
    } catch {
      close(c);
      return false;
    }
  }

  function close(c) {
    if (c.closed) return;
    c.closed = true;
    timers.clearTimeout(c.timer);
    for (const p of c.pending.values()) p.reject(new Error('CONNECTION_LOST'));
    c.pending.clear();
    try {
      c.port?.disconnect();
    } catch {
      // gone already
    }
    if (conn === c) {
      conn = null;
      for (const r of runners.values()) tell(r, { type: 'status', connected: false });
      timers.setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    }
  }

  function receive(c, msg) {
    if (c.closed) return;
    if (!validateEnvelope(msg)) return close(c);
    if (!c.welcomed) {
      if (msg.type !== 'response' || msg.id !== c.helloId || !msg.ok || !validateWelcome(msg.value) || msg.value.version !== 1) return close(c);
      timers.clearTimeout(c.timer);
      c.welcomed = true;
      c.ordered = msg.value.capabilities.includes(SNUG.ORDERED_IDS);
      backoff = BACKOFF_MIN_MS;
      for (const r of runners.values()) if (r.app !== null) attach(r); // the app reloads from the hub
      return;
    }
    if (msg.type === 'response') {
      const p = c.pending.get(msg.id);
      if (!p) return;
      c.pending.delete(msg.id);
      timers.clearTimeout(p.timer);
      return msg.ok ? p.resolve(msg.value) : p.reject(new Error(msg.code));
    }
    // A cancel (the broker gave up waiting) changes nothing here: the
    // answer, when it comes, is ignored. The broker sends this kind no events.
    if (msg.type === 'cancel') return;
    if (msg.type !== 'request') return close(c);
    // Request IDs from the broker increase (ordered IDs); anything else
    // closes the port rather than risk doing something twice.
    const n = ORDERED_ID.test(msg.id) ? Number(msg.id) : 0;
    if (!c.ordered || !(n > c.highest) || c.inFlight >= MAX_IN_FLIGHT) return close(c);
    c.highest = n;
    c.inFlight++;
    Promise.resolve()
      .then(() => handle(msg.method, msg.params))
      .then((value) => ({ type: 'response', id: msg.id, ok: true, value: value ?? null }),
        (e) => ({ type: 'response', id: msg.id, ok: false, code: codeOf(e) }))
      .then((envelope) => {
        c.inFlight--;
        post(c, envelope);
      });
  }

  function codeOf(e) {
    const code = e?.message;
    return ['INVALID_REQUEST', 'POLICY_DENIED', 'QUEUE_FULL', 'CANCELLED'].includes(code) ? code : 'INTERNAL_ERROR';
  }

  // call sends a request to the broker and resolves with its value.
  function call(method, params) {
    const c = conn;
    if (!c?.welcomed) return Promise.reject(new Error('CONNECTION_LOST'));
    const id = String(++c.nextId);
    return new Promise((resolve, reject) => {
      const timer = timers.setTimeout(() => {
        c.pending.delete(id);
        reject(new Error('DEADLINE_EXCEEDED'));
      }, CALL_TIMEOUT_MS);
      c.pending.set(id, { resolve, reject, timer });
      if (!post(c, { type: 'request', id, method, params })) reject(new Error('CONNECTION_LOST'));
    });
  }

  function emit(event, value) {
    const c = conn;
    if (c?.welcomed) post(c, { type: 'event', event, value });
  }

  async function handle(method, params) {
    switch (method) {
      case SNUG.CALL_DELIVER:
        if (!Array.isArray(params?.pieces)) throw new Error('INVALID_REQUEST');
        for (const p of params.pieces) deliver(p);
        return {};
      case SNUG.CALL_OPEN_TAB: {
        const app = params?.app;
        if (typeof app !== 'string' || app === '' || app.length > 128) throw new Error('INVALID_REQUEST');
        const tab = await chrome.tabs.create({ url: `${chrome.runtime.getURL(SNUG.RUNNER_PAGE)}?app=${encodeURIComponent(app)}`, active: true });
        return { tab: tab.id };
      }
      case SNUG.ADMISSION_REQUEST:
        if (!askOwner) throw new Error('INVALID_REQUEST');
        return askOwner(params, new AbortController().signal);
      case SNUG.CALL_CONFIRM:
        return confirm(params);
    }
    throw new Error('INVALID_REQUEST');
  }

  // confirm puts the owner's question in the runner tab's host chrome and
  // waits for the user's click there. A tab that is gone, or closes first,
  // answers no.
  function confirm(q) {
    const no = q?.kind === SNUG.CONFIRM_OPEN_URL ? { status: 'declined' } : { allowed: false };
    const r = runners.get(q?.runner);
    if (!r || (q.kind !== SNUG.CONFIRM_NET && q.kind !== SNUG.CONFIRM_OPEN_URL) || typeof q.url !== 'string') return no;
    const id = uuid();
    return new Promise((resolve) => {
      r.questions.set(id, { resolve, no, kind: q.kind });
      tell(r, { type: 'confirm', id, ask: q });
    });
  }

  function answer(r, msg) {
    const q = r.questions.get(msg.id);
    if (!q) return;
    r.questions.delete(msg.id);
    const res = msg.result;
    if (q.kind === SNUG.CONFIRM_NET) return q.resolve({ allowed: res?.allowed === true });
    q.resolve({ status: res?.status === 'opened' ? 'opened' : 'declined' });
  }

  // pageCall runs one connect-flow request of a runner page, for its own
  // runner, and answers the page.
  async function pageCall(r, msg) {
    const reply = (v) => tell(r, { type: 'result', id: msg.id, ...v });
    if (!PAGE_CALLS.has(msg.method) || typeof msg.params !== 'object' || msg.params === null) return reply({ ok: false, code: 'INVALID_REQUEST' });
    try {
      reply({ ok: true, value: await call(msg.method, { ...msg.params, runner: r.id }) });
    } catch (e) {
      reply({ ok: false, code: e.message });
    }
  }

  // deliver applies one piece from the hub to its runner tab.
  function deliver(p) {
    const r = runners.get(p?.runner);
    if (!r || typeof p.data !== 'string') return;
    if (p.kind === SNUG.PIECE_CLOSED) {
      tell(r, { type: 'closed', reason: fromUtf8.decode(fromBase64(p.data)) });
      return;
    }
    const bytes = r.assembleIn(p);
    if (!bytes) return;
    const text = fromUtf8.decode(bytes);
    switch (p.kind) {
      case SNUG.PIECE_HTML: return tell(r, { type: 'html', html: text });
      case SNUG.PIECE_FRAME: return tell(r, { type: 'frame', text });
      case SNUG.PIECE_APP: return tell(r, { type: 'app', display: JSON.parse(text) });
      case SNUG.PIECE_CHAT: return tell(r, { type: 'chat', item: JSON.parse(text) });
    }
  }

  function tell(r, msg) {
    try {
      r.port.postMessage(msg);
    } catch {
      // the tab is gone; its onDisconnect cleans up
    }
  }

  async function attach(r) {
    if (!conn?.welcomed) return tell(r, { type: 'status', connected: false });
    try {
      await r.walled; // the app's document comes only into a walled tab
      const app = await call(SNUG.ATTACH, { runner: r.id, app: r.app });
      tell(r, { type: 'attached', app });
    } catch (e) {
      tell(r, { type: 'error', code: e.message });
    }
  }

  // wall blocks every HTTP(S) and WebSocket request of a runner tab but the
  // CDN allowlist's, with a session rule keyed by the tab. It backs the
  // sandbox CSP where Chromium goes past it: a child frame the CSP refuses
  // still had its connection opened (a DNS lookup and a TCP handshake that
  // carry whatever the app put in the host name), unless the rule stops it.
  function wall(tabId) {
    if (tabId === undefined) return Promise.reject(new Error('POLICY_DENIED'));
    return swept.then(() => chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: [tabId], addRules: [{
      id: tabId, priority: 1, action: { type: 'block' },
      condition: { tabIds: [tabId], excludedRequestDomains: SNUG.CDN_ALLOWLIST },
    }] }));
  }

  function unwall(tabId) {
    if (tabId !== undefined) chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: [tabId] }).catch(() => {});
  }

  // A runner tab: its page connects a port named RUNNER_PORT.
  function onConnect(port) {
    if (port.name !== SNUG.RUNNER_PORT) return;
    const page = chrome.runtime.getURL(SNUG.RUNNER_PAGE);
    if (port.sender?.id !== chrome.runtime.id || !port.sender?.url?.startsWith(page)) return port.disconnect();
    if (runners.size >= SNUG.MAX_RUNNERS) {
      port.postMessage({ type: 'error', code: 'QUEUE_FULL' });
      return port.disconnect();
    }
    const tabId = port.sender.tab?.id;
    const r = { id: uuid(), port, app: null, seq: 0, assembleIn: createAssembler(SNUG.MAX_RELAY_BYTES), walled: wall(tabId),
      questions: new Map() };
    r.walled.catch(() => {}); // attach reports it
    runners.set(r.id, r);
    port.onDisconnect.addListener(() => {
      runners.delete(r.id);
      for (const q of r.questions.values()) q.resolve(q.no);
      r.questions.clear();
      emit(SNUG.EVENT_DETACH, { runner: r.id });
      unwall(tabId);
    });
    port.onMessage.addListener((msg) => fromPage(r, msg));
  }

  function fromPage(r, msg) {
    switch (msg?.type) {
      case 'attach':
        if (r.app !== null || typeof msg.app !== 'string' || msg.app === '' || msg.app.length > 128) return;
        r.app = msg.app;
        return attach(r);
      case 'load':
        return emit(SNUG.EVENT_LOAD, { runner: r.id });
      case 'resetAgent':
        return emit(SNUG.EVENT_RESET_AGENT, { runner: r.id });
      case 'confirmed':
        return answer(r, msg);
      case 'call':
        return pageCall(r, msg);
      case 'chat': {
        const v = chatEvent(r.id, msg);
        if (v) emit(SNUG.EVENT_CHAT, v);
        return;
      }
      case 'frame': {
        if (typeof msg.text !== 'string') return;
        const bytes = utf8.encode(msg.text);
        if (bytes.length > SNUG.MAX_RELAY_BYTES) return tell(r, { type: 'dropped', bytes: bytes.length });
        r.seq++;
        for (const p of pieces(r.id, r.seq, bytes)) emit(SNUG.EVENT_FRAME, p);
      }
    }
  }

  chrome.runtime.onConnect.addListener(onConnect);

  function status() {
    if (!conn?.port) return 'Disconnected';
    return conn.welcomed ? 'Connected' : 'Connecting';
  }

  return { start: connect, status, runners };
}
