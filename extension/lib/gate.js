// Gates: the extension's record of which tab is under which lease. Every
// debugger command goes through send(), which refuses once the gate is gone,
// so dropping a gate (synchronously) is what stops a lease.
import { fail } from './errors.js';
import { EVENT, LIMITS } from './protocol.js';

const MAX_LEASE_AHEAD_MS = LIMITS.LEASE_TTL_MS;
const PAGE_CHANGE_COALESCE_MS = 50;

export const isHttp = (url) => typeof url === 'string' && /^https?:\/\//i.test(url);

export function originOf(url) {
  try {
    return new URL(url).origin;
  } catch {
    return 'null';
  }
}

// tabOf maps a lease's tab handle "<instanceId>:<chromeTabId>" to the tab ID,
// or undefined when the lease names another instance.
export function tabOf(conn, lease) {
  const prefix = `${conn.instanceId}:`;
  if (lease.instanceId !== conn.instanceId || !lease.tab.startsWith(prefix)) return undefined;
  const rest = lease.tab.slice(prefix.length);
  return /^[0-9]{1,15}$/.test(rest) ? Number(rest) : undefined;
}

export const leaseInWindow = (lease, now) => lease.expiresAt > now && lease.expiresAt <= now + MAX_LEASE_AHEAD_MS;

// emit(conn, event, value) sends an event on the gate's connection.
// onDocument is called with a gate whose main frame committed a new
// document (after its epoch is set), onLoad with a gate whose page fired
// its load event.
export function createGates({ chrome, timers, now, emit, onDocument = () => {}, onLoad = () => {} }) {
  const gates = new Map(); // tab ID -> gate
  const reserved = new Set(); // tab IDs with a grant under way
  const detaching = new Map(); // tab ID -> promise of our detach
  let swept = Promise.resolve();

  function badge(tabId, text) {
    chrome.action.setBadgeText({ tabId, text }).catch(() => {}); // the tab may be gone
  }

  function detach(tabId) {
    const p = chrome.debugger.detach({ tabId }).catch(() => {});
    detaching.set(tabId, p);
    p.then(() => detaching.get(tabId) === p && detaching.delete(tabId));
  }

  // add registers a gate right after attach, so page events reach it.
  function add(conn, tabId, lease) {
    const gate = {
      conn, tabId, handle: lease.tab, leaseId: lease.id, token: lease.token, title: '',
      scope: lease.scope, origin: lease.origin, expiresAt: 0, expiryTimer: null,
      epoch: null, mainFrameId: null, mainLoaderId: null, childFrames: new Set(), sequence: 0, changeTimer: null,
      queue: Promise.resolve(), dropped: false,
    };
    gates.set(tabId, gate);
    extend(gate, lease.expiresAt);
    badge(tabId, 'ON');
    return gate;
  }

  // end drops a gate: first synchronously (no command passes it after this),
  // then detaches and clears the badge. notify sends lease.revoked.
  function end(gate, notify) {
    if (gates.get(gate.tabId) !== gate) return;
    gate.dropped = true;
    gates.delete(gate.tabId);
    timers.clearTimeout(gate.expiryTimer);
    timers.clearTimeout(gate.changeTimer);
    if (notify) emit(gate.conn, EVENT.LEASE_REVOKED, { leaseId: gate.leaseId });
    detach(gate.tabId);
    badge(gate.tabId, '');
  }

  // The broker renews a lease by sending later expiresAt values; with none
  // by the latest one, the lease expires here too.
  function extend(gate, expiresAt) {
    if (expiresAt <= gate.expiresAt) return;
    gate.expiresAt = expiresAt;
    timers.clearTimeout(gate.expiryTimer);
    gate.expiryTimer = timers.setTimeout(() => end(gate, true), expiresAt - now());
  }

  // check is the synchronous gate check: own instance, same lease ID and
  // token, expiry within the window. Anything else is LEASE_REVOKED.
  function check(conn, lease) {
    const tabId = tabOf(conn, lease);
    const gate = gates.get(tabId);
    if (!gate || gate.conn !== conn || gate.leaseId !== lease.id || gate.token !== lease.token ||
        !leaseInWindow(lease, now())) fail('LEASE_REVOKED');
    return gate;
  }

  // authorize completes the check with the tab's existence and returns the tab.
  async function authorize(conn, lease, gate) {
    if (check(conn, lease) !== gate) fail('LEASE_REVOKED');
    const tab = await chrome.tabs.get(gate.tabId).catch(() => fail('LEASE_REVOKED'));
    confirm(conn, lease, gate);
    return tab;
  }

  // confirm completes the check without asking the tab: for a command
  // whose own debugger calls prove the tab is there (a detached or closed
  // tab fails them).
  function confirm(conn, lease, gate) {
    if (gate.dropped || check(conn, lease) !== gate) fail('LEASE_REVOKED');
    extend(gate, lease.expiresAt);
  }

  // run serializes commands per tab. A cancelled or aborted command frees the
  // queue at once, even if its debugger call never answers.
  function run(gate, signal, fn) {
    const task = gate.queue.then(() => {
      signal.throwIfAborted();
      return fn();
    });
    const bounded = new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      task.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
    gate.queue = bounded.catch(() => {});
    return bounded;
  }

  // send is the only way to reach a leased tab's debugger.
  async function send(gate, signal, method, params) {
    signal.throwIfAborted();
    if (gate.dropped) fail('LEASE_REVOKED');
    return chrome.debugger.sendCommand({ tabId: gate.tabId }, method, params);
  }

  // allowed: an origin lease ends when the main frame commits another
  // origin; no lease survives a non-HTTP(S) main document.
  const allowed = (gate, url) => isHttp(url) && (gate.scope === 'tab' || originOf(url) === gate.origin);

  function pageChanged(gate) {
    if (gate.changeTimer) return;
    gate.changeTimer = timers.setTimeout(() => {
      gate.changeTimer = null;
      if (gate.dropped) return;
      emit(gate.conn, EVENT.PAGE_CHANGED, { tab: gate.handle, leaseId: gate.leaseId, sequence: ++gate.sequence });
    }, PAGE_CHANGE_COALESCE_MS);
  }

  // setMainFrame records the main frame's document, and with the frame
  // tree's childFrames its child frames. A navigation that failed shows
  // Chrome's error page for the URL it could not reach: that URL is what
  // the lease is checked against.
  // gate.childFrames holds the IDs of the main document's child frames
  // (in its renderer, as the frame tree lists them): from every frame tree
  // the worker sees, and from the frame events in between. A frame tree
  // adds to it rather than replacing it, so that a frame attached while the
  // tree was on its way is not lost; a frame's detach removes it.
  function setMainFrame(gate, frame, childFrames = []) {
    if (frame.loaderId !== gate.mainLoaderId) gate.childFrames.clear();
    gate.mainFrameId = frame.id;
    gate.mainLoaderId = frame.loaderId;
    gate.epoch = `${frame.id}:${frame.loaderId}`;
    for (const c of childFrames) if (typeof c?.frame?.id === 'string') gate.childFrames.add(c.frame.id);
    return allowed(gate, frame.unreachableUrl ?? frame.url);
  }

  function onEvent(source, method, params) {
    const gate = gates.get(source.tabId);
    if (!gate) return;
    switch (method) {
      case 'Page.frameNavigated':
        if (params.frame.parentId) return;
        if (!setMainFrame(gate, params.frame)) return end(gate, true);
        badge(gate.tabId, 'ON'); // Chrome may reset a tab's badge when it navigates
        onDocument(gate);
        break;
      case 'Page.navigatedWithinDocument':
        if (params.frameId !== gate.mainFrameId) return;
        break;
      case 'Page.frameAttached':
        if (params.parentFrameId === gate.mainFrameId) gate.childFrames.add(params.frameId);
        return;
      case 'Page.frameDetached':
        gate.childFrames.delete(params.frameId);
        return;
      case 'Page.loadEventFired':
        onLoad(gate);
        break;
      case 'DOM.documentUpdated':
        break;
      default:
        return;
    }
    pageChanged(gate);
  }

  // A gate keeps its tab's title as Chrome reports it, for the commands
  // that do not ask the tab (confirm).
  function onTabUpdated(tabId, change) {
    const gate = gates.get(tabId);
    if (gate && typeof change?.title === 'string') gate.title = change.title;
  }

  // Tab closed, or someone else (DevTools, the user) detached the debugger.
  const endTab = (tabId) => {
    const gate = gates.get(tabId);
    if (gate) end(gate, true);
  };

  // sweep detaches what an earlier worker of this extension left attached;
  // grants wait for it (and for our own detaches) before attaching.
  function sweep() {
    swept = (async () => {
      for (const t of await chrome.debugger.getTargets()) {
        if (t.attached && t.tabId !== undefined && !gates.has(t.tabId)) detach(t.tabId);
      }
      for (const t of await chrome.tabs.query({})) badge(t.id, '');
    })().catch(() => {});
  }

  async function settled(tabId) {
    await swept;
    await detaching.get(tabId);
  }

  return {
    get: (tabId) => gates.get(tabId),
    list: () => [...gates.values()],
    busy: (tabId) => gates.has(tabId) || reserved.has(tabId),
    reserve: (tabId) => reserved.add(tabId),
    unreserve: (tabId) => reserved.delete(tabId),
    add, end, check, authorize, confirm, run, send, setMainFrame, allowed, settled, sweep, detach,
    onEvent, onTabUpdated,
    onDetach: (source) => endTab(source.tabId),
    onTabRemoved: endTab,
    dropConnection: (conn) => [...gates.values()].filter((g) => g.conn === conn).forEach((g) => end(g, false)),
    stopAll: () => [...gates.values()].forEach((g) => end(g, true)),
  };
}
