// The native connection to the broker: hello/welcome, envelope rules,
// per-connection limits and reconnection. One connection is current at a
// time; a closed connection's port can no longer reach anything.
import { validateEnvelope, validateWelcome, errorCodes } from './schema.js';
import { CodeError } from './errors.js';
import { CAP, LIMITS, OWNER } from './protocol.js';

const HOST = 'dev.dsh.broker';
const WELCOME_TIMEOUT_MS = LIMITS.HANDSHAKE_TIMEOUT_MS;
const MAX_IN_FLIGHT = LIMITS.MAX_IN_FLIGHT;
const MAX_REQUEST_IDS = LIMITS.MAX_TRANSPORT_IDS;
export const MAX_VALUE_BYTES = LIMITS.MAX_PROVIDER_ANSWER;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30000;
const PERSONAL_MODE = CAP.PERSONAL_MODE;
const ORDERED_IDS = CAP.ORDERED_IDS;
const ORDERED_ID = /^[1-9][0-9]{0,15}$/;
// Requests the extension sends the broker (the owner's console) wait this
// long for an answer, and at most this many are under way at once.
const CALL_TIMEOUT_MS = 10000;
const MAX_CALLS = 8;

const utf8 = new TextEncoder();

// createTransport wires one connection at a time. handle(conn, method,
// params, signal) answers broker requests; onClose(conn) runs synchronously
// on every teardown, before the port is dropped; onEvent(event, value)
// gets the broker's owner.changed events; onStatus() runs when the
// connection is welcomed or closes.
export function createTransport({ chrome, timers, uuid, hello, requiredCapabilities, handle, onClose,
  onEvent = () => {}, onStatus = () => {} }) {
  let current = null;
  let backoff = BACKOFF_MIN_MS;

  function connect() {
    const conn = {
      instanceId: uuid(),
      helloId: uuid(),
      port: null,
      welcomed: false,
      closed: false,
      personal: false,
      ids: new Set(), // every request ID seen on this connection (before ordered mode)
      ordered: false, // transport.ordered-ids.v1 negotiated
      highest: 0, // the highest request ID in ordered mode
      inFlight: new Map(), // request ID -> AbortController
      calls: new Map(), // our request ID -> {resolve, reject, timer}
      lastCall: 0, // our request IDs after the hello are 1, 2, 3, … (ordered IDs)
      timer: null,
    };
    current = conn;
    try {
      conn.port = chrome.runtime.connectNative(HOST);
    } catch {
      close(conn);
      return;
    }
    conn.port.onMessage.addListener((msg) => receive(conn, msg));
    conn.port.onDisconnect.addListener(() => {
      console.info('dsh: native port closed:', chrome.runtime.lastError?.message ?? 'no reason');
      close(conn);
    });
    conn.timer = timers.setTimeout(() => close(conn), WELCOME_TIMEOUT_MS);
    post(conn, { type: 'request', id: conn.helloId, method: 'hello', params: hello(conn.instanceId) });
  }

  function post(conn, envelope) {
    if (conn.closed) return;
    try {
      conn.port.postMessage(envelope);
    } catch {
      close(conn); // the port is already gone
    }
  }

  function receive(conn, msg) {
    if (conn.closed) return;
    if (!validateEnvelope(msg)) return close(conn);
    if (!conn.welcomed) return handshake(conn, msg);
    if (msg.type === 'request') return request(conn, msg);
    if (msg.type === 'cancel') return cancel(conn, msg.id);
    if (msg.type === 'response') return answered(conn, msg);
    if (msg.type === 'event' && msg.event === OWNER.CHANGED) return onEvent(msg.event, msg.value);
    close(conn); // the broker sends no other event, and no response to a request we never sent
  }

  // answered settles one of our calls. A late answer (the call gave up) is
  // ignored; an answer to an ID we never sent closes the connection.
  function answered(conn, msg) {
    const n = ORDERED_ID.test(msg.id) ? Number(msg.id) : 0;
    if (!(n >= 1 && n <= conn.lastCall)) return close(conn);
    const call = conn.calls.get(msg.id);
    if (!call) return;
    conn.calls.delete(msg.id);
    timers.clearTimeout(call.timer);
    if (msg.ok) call.resolve(msg.value);
    else call.reject(new CodeError(msg.code));
  }

  // call sends the broker a request (only the owner's console does) and
  // resolves with its value, or rejects with a CodeError: the broker's
  // code, CONNECTION_LOST, DEADLINE_EXCEEDED after 10 s, QUEUE_FULL past 8
  // calls under way.
  function call(method, params) {
    const conn = current;
    if (!conn?.welcomed || conn.closed) return Promise.reject(new CodeError('CONNECTION_LOST'));
    if (conn.calls.size >= MAX_CALLS) return Promise.reject(new CodeError('QUEUE_FULL'));
    const id = String(++conn.lastCall);
    return new Promise((resolve, reject) => {
      const timer = timers.setTimeout(() => {
        conn.calls.delete(id);
        reject(new CodeError('DEADLINE_EXCEEDED'));
      }, CALL_TIMEOUT_MS);
      conn.calls.set(id, { resolve, reject, timer });
      post(conn, { type: 'request', id, method, params });
    });
  }

  function handshake(conn, msg) {
    if (msg.type === 'response' && msg.id === conn.helloId) {
      const w = msg.value;
      const acceptable = msg.ok && validateWelcome(w) && w.version === 1 &&
        requiredCapabilities.every((c) => w.capabilities.includes(c));
      if (!acceptable) return close(conn);
      timers.clearTimeout(conn.timer);
      conn.welcomed = true;
      conn.personal = w.capabilities.includes(PERSONAL_MODE);
      // Both sides offered ordered IDs (our hello does): remember the
      // highest instead of every one.
      conn.ordered = w.capabilities.includes(ORDERED_IDS);
      backoff = BACKOFF_MIN_MS;
      onStatus();
      return;
    }
    // No operation before the welcome: refuse requests, close on anything else.
    if (msg.type === 'request' && remember(conn, msg.id)) return post(conn, failure(msg.id, 'POLICY_DENIED'));
    close(conn);
  }

  // remember records a request ID; reuse, or more IDs than we remember,
  // closes the connection rather than risk dispatching something twice. With
  // ordered IDs an ID must be a decimal integer above the highest so far,
  // and nothing else needs remembering.
  function remember(conn, id) {
    if (conn.ordered) {
      const n = ORDERED_ID.test(id) ? Number(id) : 0;
      if (!(n > conn.highest && n <= Number.MAX_SAFE_INTEGER) || conn.ids.has(id)) {
        close(conn);
        return false;
      }
      conn.highest = n;
      return true;
    }
    if (conn.ids.has(id) || conn.ids.size >= MAX_REQUEST_IDS) {
      close(conn);
      return false;
    }
    conn.ids.add(id);
    return true;
  }

  function request(conn, msg) {
    if (!remember(conn, msg.id)) return;
    if (conn.inFlight.size >= MAX_IN_FLIGHT) return close(conn);
    const ac = new AbortController();
    conn.inFlight.set(msg.id, ac);
    Promise.resolve()
      .then(() => handle(conn, msg.method, msg.params, ac.signal))
      .then((value) => success(msg.id, value), (err) => failure(msg.id, codeOf(err)))
      .then((envelope) => {
        if (conn.inFlight.get(msg.id) !== ac) return; // cancelled, or the connection closed
        conn.inFlight.delete(msg.id);
        post(conn, envelope);
      });
  }

  function cancel(conn, id) {
    const ac = conn.inFlight.get(id);
    if (!ac) return; // finished already, or never seen
    conn.inFlight.delete(id);
    ac.abort(new CodeError('CANCELLED'));
    post(conn, failure(id, 'CANCELLED'));
  }

  // close tears a connection down, exactly once. It runs for our own closes
  // too: Chrome fires onDisconnect only on the other end of a port.
  function close(conn) {
    if (conn.closed) return;
    conn.closed = true;
    timers.clearTimeout(conn.timer);
    for (const ac of conn.inFlight.values()) ac.abort(new CodeError('CONNECTION_LOST'));
    conn.inFlight.clear();
    for (const c of conn.calls.values()) {
      timers.clearTimeout(c.timer);
      c.reject(new CodeError('CONNECTION_LOST'));
    }
    conn.calls.clear();
    onClose(conn);
    try {
      conn.port?.disconnect();
    } catch {
      // already disconnected
    }
    if (current === conn) {
      current = null;
      timers.setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    }
    if (conn.welcomed) onStatus();
  }

  function emit(conn, event, value) {
    if (conn.welcomed) post(conn, { type: 'event', event, value });
  }

  function status() {
    if (!current || !current.port) return 'Disconnected';
    if (!current.welcomed) return 'Connecting';
    return current.personal ? 'Connected · Personal' : 'Connected';
  }

  // instance is the current connection's instance ID once welcomed.
  const instance = () => (current?.welcomed ? current.instanceId : undefined);

  return { connect, emit, status, call, instance };
}

function success(id, value) {
  let json;
  try {
    json = JSON.stringify(value ?? null);
  } catch {
    return failure(id, 'INTERNAL_ERROR');
  }
  if (utf8.encode(json).length > MAX_VALUE_BYTES) return failure(id, 'QUEUE_FULL');
  return { type: 'response', id, ok: true, value: value ?? null };
}

function failure(id, code) {
  return { type: 'response', id, ok: false, code };
}

function codeOf(err) {
  if (err instanceof CodeError && errorCodes.has(err.code)) return err.code;
  console.warn('dsh: internal error:', err);
  return 'INTERNAL_ERROR';
}
