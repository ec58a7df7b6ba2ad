// The owner's console, service-worker side. Console pages (console.html)
// connect a port named "console"; through it they read the broker's state
// (owner.state), the activity log (owner.log) and the questions the
// extension holds, answer those questions, and press Stop. Every change —
// the broker's owner.changed events, a question asked or settled, the
// connection coming or going — is pushed to every open console, which
// then asks again: nothing is polled, and no page content is ever sent.
import { CodeError, fail, isObject } from './errors.js';
import { OWNER } from './protocol.js';
import { isHttp } from './gate.js';

export const CONSOLE_PAGE = 'console.html';
export const CONSOLE_PORT = 'console';

// createOwner wires the console; approvals is approval.js's, gates is
// gate.js's, consents is consent.js's, transport is transport.js's.
export function createOwner({ chrome, transport, approvals, gates, consents }) {
  const ports = new Set();

  function push(msg) {
    for (const port of ports) {
      try {
        port.postMessage(msg);
      } catch {
        ports.delete(port); // gone
      }
    }
  }

  // titles names this browser's open web tabs by their handles, for the
  // console (grants and log entries carry tab handles only). It is shown
  // live, never stored.
  async function titles() {
    const out = {};
    const instance = transport.instance();
    if (!instance) return out;
    for (const t of await chrome.tabs.query({})) {
      if (isHttp(t.url)) out[`${instance}:${t.id}`] = { title: t.title ?? '', url: t.url };
    }
    return out;
  }

  // allowed lists the tabs the owner allowed beforehand, titled.
  const allowed = () => Promise.all(consents.list().map(async (c) =>
    ({ ...c, title: (await chrome.tabs.get(c.tabId).catch(() => ({}))).title ?? '' })));

  const string = (v, max) => typeof v === 'string' && v.length <= max;
  const count = (v) => Number.isSafeInteger(v) && v > 0;

  // logQuery keeps only the fields owner.log takes.
  function logQuery(q) {
    if (!isObject(q)) fail('INVALID_REQUEST');
    const out = {};
    for (const k of ['agent', 'tab', 'origin']) {
      if (q[k] === undefined || q[k] === '') continue;
      if (!string(q[k], 4096)) fail('INVALID_REQUEST');
      out[k] = q[k];
    }
    for (const k of ['conn', 'since', 'before', 'limit']) {
      if (q[k] === undefined || q[k] === 0) continue;
      if (!count(q[k])) fail('INVALID_REQUEST');
      out[k] = q[k];
    }
    return out;
  }

  const handlers = {
    async state() {
      let owner = null;
      let code = null;
      try {
        owner = await transport.call(OWNER.STATE, {});
      } catch (e) {
        code = e instanceof CodeError ? e.code : 'INTERNAL_ERROR';
      }
      return { connection: transport.status(), owner, code, questions: approvals.list(), consents: await allowed(), tabs: await titles() };
    },
    log: (msg) => transport.call(OWNER.LOG, logQuery(msg.query ?? {})),
    // stop ends one agent's leases (conn), or every lease: here at once,
    // even with the broker out of reach, and at the broker. Stopping
    // everyone forgets every consent too, as the popup's Stop does.
    async stop(msg) {
      if (msg.conn === undefined) {
        gates.stopAll();
        consents.clear();
        return transport.call(OWNER.STOP, {}).catch(() => ({ stopped: 0 }));
      }
      if (!count(msg.conn)) fail('INVALID_REQUEST');
      return transport.call(OWNER.STOP, { conn: msg.conn });
    },
    // forget withdraws the owner's consent for one tab: its next claim asks.
    forget: (msg) => ({ forgotten: Number.isSafeInteger(msg.tabId) && consents.forget(msg.tabId) }),
    answer: (msg) => ({ answered: string(msg.req, 128) && approvals.answer(msg.req, msg.allow === true) }),
  };

  function onConnect(port) {
    if (port.name !== CONSOLE_PORT) return;
    if (port.sender?.id !== chrome.runtime.id || !port.sender?.url?.startsWith(chrome.runtime.getURL(CONSOLE_PAGE))) {
      port.disconnect(); // only the console page speaks this
      return;
    }
    ports.add(port);
    port.onDisconnect.addListener(() => ports.delete(port));
    port.onMessage.addListener(async (msg) => {
      let reply;
      try {
        if (!isObject(msg) || !Object.hasOwn(handlers, msg.type)) fail('INVALID_REQUEST');
        reply = { id: msg.id, ok: true, value: await handlers[msg.type](msg) };
      } catch (e) {
        reply = { id: msg?.id, ok: false, code: e instanceof CodeError ? e.code : 'INTERNAL_ERROR' };
      }
      try {
        port.postMessage(reply);
      } catch {
        ports.delete(port);
      }
    });
  }

  // open shows the console: the tab already open, or a new one.
  async function open() {
    const url = chrome.runtime.getURL(CONSOLE_PAGE);
    const tab = (await chrome.tabs.query({})).find((t) => t.url?.startsWith(url));
    if (tab) {
      await chrome.tabs.update(tab.id, { active: true });
      await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
    } else {
      await chrome.tabs.create({ url });
    }
    return { opened: true };
  }

  return {
    onConnect,
    open,
    // changed tells the consoles what changed: the broker's topics,
    // "questions", "consents", or "connection".
    changed: (topics) => push({ type: 'changed', topics }),
  };
}
