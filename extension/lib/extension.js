// createExtension wires the provider around an injected `chrome`: sw.js
// passes the real one, the Node tests a fake. Listeners are registered
// synchronously, as MV3 requires of a service worker's first turn.
import { CodeError, fail, isObject, orFail } from './errors.js';
import { createTransport } from './transport.js';
import { CAP, LIMITS, METHOD } from './protocol.js';
import { createGates, isHttp, originOf, tabOf, leaseInWindow } from './gate.js';
import { createApprovals, ADMIT_WINDOW } from './approval.js';
import { createConsents } from './consent.js';
import { createOwner } from './owner.js';
import * as ax from './ax.js';
import * as pageread from './pageread.js';
import * as input from './input.js';
import * as dom from './dom.js';
import { checkCdp } from './cdp.js';
import { topology } from './frames.js';
import { capture } from './capture.js';
import { encodeJpeg } from './image.js';

const CAPABILITIES = [CAP.LEASE_FENCING, CAP.LEASE_TAB_SCOPE, CAP.AX_READ, CAP.AX_FIND, CAP.INPUT_NAMED_KEYS,
  CAP.FRAMES_LIST, CAP.CAPTURE, CAP.AX_PAGE, CAP.FRAME_READ, CAP.FRAME_INPUT, CAP.ORDERED_IDS,
  CAP.DOM_READ, CAP.INPUT_SCROLL, CAP.INPUT_WHEEL, CAP.INPUT_SELECT, CAP.PAGE_NAVIGATE, CAP.OWNER_CONSOLE,
  CAP.DOM_HIT, CAP.INPUT_POINTER, CAP.INPUT_CHORD];
const REQUIRED_CAPABILITIES = [CAP.RUNTIME];

const clip = (s) => [...String(s)].slice(0, 256).join('') || 'unknown';

// browserIdentity names the browser for the hello: the first real brand
// (not GREASE, not the generic Chromium), and the full version from the UA.
function browserIdentity(nav) {
  const brands = nav?.userAgentData?.brands ?? [];
  const real = brands.filter((b) => !/not.?a.?brand/i.test(b.brand));
  const brand = real.find((b) => b.brand !== 'Chromium')?.brand ?? 'Chromium';
  const version = /Chrom(?:e|ium)\/([0-9.]+)/.exec(nav?.userAgent ?? '')?.[1] ?? real[0]?.version ?? 'unknown';
  return { brand: clip(brand), version: clip(version) };
}

// UNCANCELLED is the signal of calls no request waits for.
const UNCANCELLED = new AbortController().signal;

const nonEmpty = (v) => typeof v === 'string' && v !== '';

function parseLease(l) {
  if (!isObject(l) || !nonEmpty(l.id) || !nonEmpty(l.tab) || !nonEmpty(l.instanceId) || !nonEmpty(l.token) ||
      typeof l.origin !== 'string' || (l.scope !== 'origin' && l.scope !== 'tab') || !Number.isFinite(l.expiresAt)) {
    fail('INVALID_REQUEST');
  }
  return l;
}

export function createExtension(chrome, {
  timers = globalThis,
  now = Date.now,
  uuid = () => crypto.randomUUID(),
  navigator = globalThis.navigator,
  encodeImage = encodeJpeg, // the Node tests pass a recorder: they have no canvas
} = {}) {
  const identity = browserIdentity(navigator);
  const consents = createConsents({ onChange: () => owner.changed(['consents']) });
  const approvals = createApprovals({ chrome, timers, uuid, now, onChange: () => owner.changed(['questions']) });
  const gates = createGates({
    chrome, timers, now,
    emit: (conn, event, value) => transport.emit(conn, event, value),
    // The reader's world of a new document is asked as it commits.
    onDocument: (gate) => {
      if (pageread.PAGE_READ.on) pageread.renew(gate, (method, p) => gates.send(gate, UNCANCELLED, method, p));
    },
    onLoad: (gate) => pageread.loaded(gate, (method, p) => gates.send(gate, UNCANCELLED, method, p)),
  });
  const transport = createTransport({
    chrome, timers, uuid,
    requiredCapabilities: REQUIRED_CAPABILITIES,
    hello: (instanceId) => ({
      bootstrap: 1, versions: [1], role: 'provider',
      capabilities: CAPABILITIES, requiredCapabilities: REQUIRED_CAPABILITIES,
      instance: { id: instanceId, family: 'chromium', ...identity, profileLabel: 'Default profile' },
    }),
    handle: (conn, method, params, signal) => {
      if (!Object.hasOwn(methods, method)) fail('INVALID_REQUEST');
      return methods[method](conn, params, signal);
    },
    onClose: (conn) => gates.dropConnection(conn),
    onEvent: (event, value) => owner.changed(Array.isArray(value?.topics) ? value.topics.filter((t) => typeof t === 'string') : []),
    onStatus: () => owner.changed(['connection']),
  });
  const owner = createOwner({ chrome, transport, approvals, gates, consents });

  const getTab = (tabId) => orFail(chrome.tabs.get(tabId), 'STALE_TARGET');

  // grantable: HTTP(S) only, and for an origin lease the lease's exact origin.
  function grantable(tab, lease) {
    if (!isHttp(tab.url) || (lease.scope === 'origin' && originOf(tab.url) !== lease.origin)) fail('POLICY_DENIED');
  }

  async function grant(conn, params, signal) {
    const lease = parseLease(params.lease);
    const label = params.client?.label;
    if (!nonEmpty(label)) fail('INVALID_REQUEST');
    const tabId = tabOf(conn, lease);
    if (tabId === undefined) fail('STALE_TARGET');
    if (lease.scope === 'tab' && !conn.personal) fail('POLICY_DENIED');
    if (!leaseInWindow(lease, now())) fail('POLICY_DENIED');
    if (gates.busy(tabId)) fail('LEASE_BUSY');
    gates.reserve(tabId);
    try {
      let tab = await getTab(tabId);
      grantable(tab, lease);
      // A tab the owner allowed beforehand, on that origin, is granted at
      // once; any other origin lease asks in the approval window.
      if (lease.scope === 'origin' && !consents.allows(tabId, lease.origin)) {
        const details = { client: label, title: tab.title ?? '', origin: originOf(tab.url) };
        if (!(await approvals.ask(details, signal))) fail('POLICY_DENIED');
        tab = await getTab(tabId); // it may have navigated while the user decided
        grantable(tab, lease);
        if (!leaseInWindow(lease, now())) fail('POLICY_DENIED');
      }
      await gates.settled(tabId);
      signal.throwIfAborted();
      await orFail(chrome.debugger.attach({ tabId }, '1.3'), 'POLICY_DENIED');
      if (signal.aborted) {
        gates.detach(tabId);
        signal.throwIfAborted();
      }
      const gate = gates.add(conn, tabId, lease);
      try {
        const send = (method) => gates.send(gate, signal, method, {});
        await send('Page.enable');
        await send('DOM.enable');
        await send('Accessibility.enable');
        await send('Performance.enable'); // the document's size, for the read (ax.js)
        const { frameTree } = await send('Page.getFrameTree');
        if (!gates.setMainFrame(gate, frameTree.frame, frameTree.childFrames)) fail('POLICY_DENIED');
        // queryAXTree never answers on a hidden tab.
        tab = await chrome.tabs.update(tabId, { active: true });
        gate.title = tab.title ?? '';
      } catch (e) {
        gates.end(gate, false);
        // The tab closed, or left the origin, while we attached.
        if (e.code === 'LEASE_REVOKED') fail('STALE_TARGET');
        throw e;
      }
      return { granted: true, documentEpoch: gate.epoch, url: tab.url, title: tab.title ?? '' };
    } finally {
      gates.unreserve(tabId);
    }
  }

  // admit asks the owner whether a client connection of the broker may use
  // the browser at all (the broker's --admission=prompt). Only Allow admits;
  // Deny, closing the window or 60 s answer allowed:false.
  async function admit(conn, params, signal) {
    const c = params.connection;
    if (!isObject(c) || !nonEmpty(c.id) || !nonEmpty(c.label)) fail('INVALID_REQUEST');
    const allowed = await approvals.ask({ client: c.label, connection: c.id }, signal, ADMIT_WINDOW);
    signal.throwIfAborted();
    return { allowed };
  }

  function revoke(conn, params) {
    const lease = parseLease(params.lease);
    const gate = gates.get(tabOf(conn, lease));
    if (gate?.conn === conn && gate.leaseId === lease.id && gate.token === lease.token) gates.end(gate, false);
    return { released: true };
  }

  // leased checks a request's shape (check throws INVALID_REQUEST and the
  // like), then runs fn in the tab's queue once the gate admits the lease.
  // A method whose fn starts with oneDocument asks the main frame's tree
  // (document: true) while the tab is looked up, not after: on a small page
  // each of those round trips is a tenth of the read.
  // early, when given, sends the calls a method's read starts with beside
  // those (its answer is the context's early). When they include the frame
  // tree that proves the read (a read in a world already proven:
  // pageread.start's after), that tree is the first one too, and the tab
  // is not asked: the debugger's answers prove it is there, and the gate
  // knows its title. It is asked only if the method fails, to answer
  // LEASE_REVOKED for a tab gone meanwhile. ctx.tab is then undefined.
  const leased = (check, fn, { document = false, early } = {}) => (conn, params, signal) => {
    const lease = parseLease(params.lease);
    check(params);
    const gate = gates.check(conn, lease);
    return gates.run(gate, signal, async () => {
      const send = (method, p) => gates.send(gate, signal, method, p);
      // Their answers are used only once the tab and the document are
      // proven (authorize or the calls themselves, oneDocument): a tab gone
      // meanwhile answers LEASE_REVOKED, and nothing read reaches the broker.
      const ahead = early?.(send, gate, params.request);
      const tree = document ? (ahead?.after ?? send('Page.getFrameTree')) : undefined;
      tree?.catch(() => {}); // a refused lease is answered by authorize, never by this
      const proven = ahead?.after !== undefined;
      let tab;
      try {
        if (proven) gates.confirm(conn, lease, gate);
        else tab = await gates.authorize(conn, lease, gate);
      } catch (e) {
        ahead?.release();
        throw e;
      }
      const page = { documentEpoch: gate.epoch, url: tab?.url ?? '', title: tab ? tab.title ?? '' : gate.title };
      try {
        return await fn({ gate, send, page, tab, tree, early: ahead, request: params.request, params });
      } catch (e) {
        if (proven && !(e instanceof CodeError)) await gates.authorize(conn, lease, gate);
        throw e;
      }
    });
  };

  // oneDocument labels a read with the document it came from. The epoch is
  // read from the browser before and after (Page.frameNavigated may arrive
  // after the new document's AX tree is already visible); a read that spans
  // a navigation is done again once, then refused STALE_TARGET. read gets
  // lastCall, to call once it has sent every call its answer depends on
  // (ax.read's lastCall): the frame tree after is asked there, not after
  // the answers came. It gets the frame tree before too (a promise), for a
  // read that needs the tree itself (frames, a child frame's checks).
  // A read in a kept world may stand in a tree of its own making
  // (pageread.proof, marked world): it names the document the read ran in,
  // which is the gate's already, so it is checked against the lease
  // without being recorded.
  async function oneDocument({ gate, send, page, tree }, read) {
    const current = async (asked = send('Page.getFrameTree')) => {
      const { frameTree, world } = await asked;
      const allowed = world ? gates.allowed(gate, frameTree.frame.url) : gates.setMainFrame(gate, frameTree.frame, frameTree.childFrames);
      if (!allowed) {
        gates.end(gate, true); // the tab left the lease's origin
        fail('LEASE_REVOKED');
      }
      return frameTree.frame;
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      const before = tree ?? send('Page.getFrameTree');
      tree = undefined; // asked once (leased), before the first read only
      const frame = await current(before);
      const epoch = `${frame.id}:${frame.loaderId}`;
      // The URL as the tab shows it: with its fragment, and for a failed
      // navigation the URL that could not be reached.
      const url = frame.unreachableUrl ?? frame.url + (frame.urlFragment ?? '');
      let asked; // the frame tree asked after the read's last call
      const lastCall = (tree) => {
        asked = tree ?? send('Page.getFrameTree'); // tree: one the read asked itself
        asked.catch(() => {}); // a read that failed meanwhile answers instead
      };
      const result = await read({ ...page, documentEpoch: epoch, url }, lastCall, before);
      const after = await current(asked);
      if (`${after.id}:${after.loaderId}` === epoch) return result;
    }
    fail('STALE_TARGET');
  }

  // sameOriginFrame returns a child frame's document {documentEpoch, url}
  // while it is the document the request names (else STALE_TARGET) and it
  // and every frame above it are of the main document's HTTP(S) origin
  // (else POLICY_DENIED), each proven as dom.frameOrigin proves it.
  // Out-of-process frames are not in the tree: STALE.
  async function sameOriginFrame({ gate, send }, want, tree = send('Page.getFrameTree', {})) {
    const { frameTree } = await tree;
    const path = (t, trail) => {
      if (t.frame.id === want.frameId) return [...trail, t.frame];
      for (const c of t.childFrames ?? []) {
        const found = path(c, [...trail, t.frame]);
        if (found) return found;
      }
      return undefined;
    };
    const frames = path(frameTree, []);
    if (!frames || frames.length < 2 || frames.at(-1).loaderId !== want.loaderId) fail('STALE_TARGET');
    const origin = originOf(frames[0].url);
    if (!isHttp(frames[0].url)) fail('POLICY_DENIED');
    const origins = await Promise.all(frames.map((f) => dom.frameOrigin(gate, send, f)));
    if (origins.some((o) => o !== origin)) fail('POLICY_DENIED');
    const f = frames.at(-1);
    return { documentEpoch: `${f.id}:${f.loaderId}`, url: f.url };
  }

  const validFrame = (f) => isObject(f) && nonEmpty(f.frameId) && nonEmpty(f.loaderId) && Object.keys(f).length === 2;
  const validNode = (id) => Number.isInteger(id) && id > 0;

  // inFrame runs read on a child frame's document, only while it and every
  // frame above it are of the main document's origin: checked before and
  // after, on the frame trees that prove the main document (oneDocument's
  // before and lastCall's), not on trees of their own.
  async function inFrame(ctx, page, frame, read, { before, lastCall } = {}) {
    const was = await sameOriginFrame(ctx, frame, before);
    const result = await read({ ...page, ...was });
    const asked = ctx.send('Page.getFrameTree', {});
    lastCall?.(asked);
    const after = await sameOriginFrame(ctx, frame, asked);
    if (after.documentEpoch !== was.documentEpoch) fail('STALE_TARGET');
    return result;
  }

  // readDocument reads the main frame's whole document in the page
  // (pageread.js), or where that cannot be done with the AX read. The
  // calls asked early (leased) serve the first attempt only: a second is
  // of another document.
  async function readDocument(ctx, page, lastCall) {
    const early = ctx.early;
    ctx.early = undefined;
    try {
      // The first frame tree names the first attempt's document only.
      return await pageread.read(ctx.send, ctx.gate, page, { early, lastCall, tree: early && ctx.tree });
    } catch (e) {
      if (!(e instanceof pageread.Unreadable)) throw e;
    }
    const shown = Promise.resolve(ctx.tab ?? getTab(ctx.gate.tabId)).then(notShown).then((hidden) => !hidden);
    return ax.read(ctx.send, page, undefined, undefined, ctx.gate.mainFrameId, { shown, lastCall });
  }

  // DOCUMENT marks a leased method whose fn starts with oneDocument.
  const DOCUMENT = { document: true };

  // onlyLease: the request is exactly {lease}.
  const onlyLease = (p) => {
    if (Object.keys(p).length !== 1) fail('INVALID_REQUEST');
  };

  // frameList reports the tab's frames: the main frame first, then every
  // frame owner's frame, parents before children. Metadata only.
  async function frameList(ctx) {
    return oneDocument(ctx, async (page, lastCall, tree) => {
      const t = await topology(ctx.send, { describe: true, paint: false, origin: (f) => dom.frameOrigin(ctx.gate, ctx.send, f), tree });
      if (`${t.root.frameId}:${t.root.loaderId}` !== page.documentEpoch) fail('STALE_TARGET');
      const main = { frameId: t.root.frameId, loaderId: t.root.loaderId, origin: t.root.origin, local: true };
      const frames = [main, ...t.frames.map(({ owner, ...f }) => f)];
      return { documentEpoch: page.documentEpoch, url: page.url, truncated: t.truncated, frames };
    });
  }

  // notShown: the tab is not the one shown in its window, or the window is
  // minimized. Chromium never answers queryAXTree or captureScreenshot there.
  async function notShown(tab) {
    const win = tab.windowId === undefined ? undefined : await chrome.windows.get(tab.windowId).catch(() => undefined);
    return !tab.active || win?.state === 'minimized';
  }

  async function shoot(ctx, page) {
    const shot = await capture(ctx.send, encodeImage, { now, timers, origin: (f) => dom.frameOrigin(ctx.gate, ctx.send, f) });
    if (shot.documentEpoch !== page.documentEpoch) fail('STALE_TARGET');
    return { ...shot, url: page.url };
  }

  const inputMethod = (kind) => leased(
    (p) => input.checkRequest(kind, p.request),
    (ctx) => {
      const { gate, send, request } = ctx;
      // In a child frame: its document, while it and the frames above it
      // are of the main document's origin.
      const current = request.frame ? async () => (await sameOriginFrame(ctx, request.frame)).documentEpoch : undefined;
      return input.dispatch(kind, gate, send, request, current, { now, timers });
    },
  );

  // onDocument runs read while the request's document (the main one, or a
  // same-origin child frame's) is the one it names, checked before and
  // after; read gets the frame to run DOM functions in.
  const onDocument = (ctx, read) => {
    const { frame, documentEpoch } = ctx.request;
    return oneDocument(ctx, async (page) => {
      if (!frame) {
        if (page.documentEpoch !== documentEpoch) fail('STALE_TARGET');
        return read(dom.mainFrame(ctx.gate));
      }
      return inFrame(ctx, page, frame, async (p) => {
        if (p.documentEpoch !== documentEpoch) fail('STALE_TARGET');
        return read(frame);
      });
    });
  };

  // navigate sends the tab to a credential-free HTTP(S) URL: for an origin
  // lease only on its origin. It answers the loader of the new document
  // (absent for a navigation within the document) and the URL as the
  // browser writes it; a navigation that fails or becomes a download is
  // NAVIGATION_FAILED, after the request was sent.
  async function navigate({ gate, send, page, request }) {
    const { frameTree } = await send('Page.getFrameTree', {});
    if (`${frameTree.frame.id}:${frameTree.frame.loaderId}` !== request.documentEpoch) fail('STALE_TARGET');
    let url;
    try {
      url = new URL(request.url);
    } catch {
      fail('POLICY_DENIED');
    }
    if (!isHttp(url.href) || url.username !== '' || url.password !== '') fail('POLICY_DENIED');
    if (gate.scope === 'origin' && url.origin !== gate.origin) fail('POLICY_DENIED');
    const res = await send('Page.navigate', { url: url.href });
    if (res.errorText || res.isDownload) fail('NAVIGATION_FAILED');
    return { url: url.href, ...(res.loaderId ? { loaderId: res.loaderId } : {}) };
  }

  const methods = {
    [METHOD.TABS_LIST]: async (conn) => (await chrome.tabs.query({}))
      .filter((t) => isHttp(t.url))
      .map((t) => ({ id: `${conn.instanceId}:${t.id}`, instanceId: conn.instanceId, url: t.url, title: t.title ?? '' })),
    [METHOD.ADMISSION_REQUEST]: admit,
    [METHOD.LEASE_GRANT]: grant,
    [METHOD.LEASE_REVOKE]: revoke,
    [METHOD.AX_READ]: leased(
      ({ request: r }) => {
        if (!isObject(r) || (r.backendNodeId !== undefined && !validNode(r.backendNodeId)) ||
            (r.frame !== undefined && !validFrame(r.frame))) fail('INVALID_REQUEST');
      },
      (ctx) => {
        const { frame: f, backendNodeId } = ctx.request;
        if (!f && backendNodeId === undefined && pageread.PAGE_READ.on) return oneDocument(ctx, (page, lastCall) => readDocument(ctx, page, lastCall));
        // Asked beside the read's first calls: only its walk needs it.
        const shown = notShown(ctx.tab).then((hidden) => !hidden);
        return oneDocument(ctx, (page, lastCall, before) => {
          if (!f) return ax.read(ctx.send, page, backendNodeId, undefined, ctx.gate.mainFrameId, { shown, lastCall });
          return inFrame(ctx, page, f, (p) => ax.read(ctx.send, p, backendNodeId, f.frameId), { before, lastCall });
        });
      },
      {
        ...DOCUMENT,
        // A whole document's read starts beside the tab check: with the
        // reader itself in the document's world once known, else with
        // asking for the world.
        early: (send, gate, r) => (pageread.PAGE_READ.on && isObject(r) && !r.frame && r.backendNodeId === undefined ? pageread.start(send, gate) : undefined),
      },
    ),
    [METHOD.AX_FIND]: leased(
      ({ request: r }) => {
        if (!isObject(r) || !nonEmpty(r.name) || (r.role !== undefined && !nonEmpty(r.role)) ||
            (r.backendNodeId !== undefined && !validNode(r.backendNodeId)) ||
            (r.frame !== undefined && !validFrame(r.frame))) fail('INVALID_REQUEST');
      },
      async (ctx) => {
        const { name, role, frame, backendNodeId: root } = ctx.request;
        const hidden = await notShown(ctx.tab);
        return oneDocument(ctx, (page, lastCall, before) => {
          if (!frame) return ax.find(ctx.send, page, name, role, { hidden, root });
          // In a child frame the search walks its tree (queryAXTree starts
          // from a document node of the main frame).
          return inFrame(ctx, page, frame, (p) => ax.find(ctx.send, p, name, role, { hidden: true, frameId: frame.frameId, root }),
            { before, lastCall });
        });
      },
      DOCUMENT,
    ),
    [METHOD.AX_PAGE]: leased(
      ({ request: r }) => {
        const id = (v) => typeof v === 'string' && v !== '' && v.length <= 64;
        if (!isObject(r) || (r.backendNodeId !== undefined && !(Number.isInteger(r.backendNodeId) && r.backendNodeId > 0)) ||
            (r.after !== undefined && !(Array.isArray(r.after) && r.after.length >= 1 && r.after.length <= ax.BUDGET.depth && r.after.every(id))) ||
            !(Number.isInteger(r.maxNodes) && r.maxNodes >= 1 && r.maxNodes <= ax.WINDOW.maxNodes) ||
            (r.frame !== undefined && !validFrame(r.frame)) ||
            Object.keys(r).some((k) => !['backendNodeId', 'after', 'maxNodes', 'frame'].includes(k))) fail('INVALID_REQUEST');
      },
      (ctx) => oneDocument(ctx, (page, lastCall, before) => {
        const { frame, ...request } = ctx.request;
        if (!frame) return ax.readWindow(ctx.send, page, { ...request, clickFrame: ctx.gate.mainFrameId });
        return inFrame(ctx, page, frame, (p) => ax.readWindow(ctx.send, p, { ...request, frameId: frame.frameId }), { before, lastCall });
      }),
      DOCUMENT,
    ),
    [METHOD.FRAMES_LIST]: leased(onlyLease, frameList, DOCUMENT),
    [METHOD.CAPTURE]: leased(onlyLease, async (ctx) => {
      // Chromium never answers a screenshot of a tab that is not shown.
      if (await notShown(ctx.tab)) fail('NOT_ACTIONABLE');
      return oneDocument(ctx, (page) => shoot(ctx, page));
    }, DOCUMENT),

    [METHOD.CDP]: leased((p) => checkCdp(p.method, p.params), ({ send, params }) => send(params.method, params.params)),
    [METHOD.INPUT_CLICK]: inputMethod('click'),
    [METHOD.INPUT_TEXT]: inputMethod('text'),
    [METHOD.INPUT_KEY]: inputMethod('key'),
    [METHOD.INPUT_WHEEL]: inputMethod('wheel'),
    [METHOD.INPUT_SCROLL]: inputMethod('scroll'),
    [METHOD.INPUT_SELECT]: inputMethod('select'),
    [METHOD.INPUT_HOVER]: inputMethod('hover'),
    [METHOD.INPUT_DRAG]: inputMethod('drag'),
    [METHOD.DOM_HIT]: leased(
      ({ request: r }) => {
        if (!isObject(r) || typeof r.documentEpoch !== 'string' || !validNode(r.backendNodeId) ||
            !Number.isFinite(r.x) || !Number.isFinite(r.y) || (r.frame !== undefined && !validFrame(r.frame)) ||
            Object.keys(r).some((k) => !['documentEpoch', 'backendNodeId', 'x', 'y', 'frame'].includes(k))) fail('INVALID_REQUEST');
      },
      (ctx) => onDocument(ctx, () => input.hitFacts(ctx.gate, ctx.send, ctx.request.backendNodeId, ctx.request.x, ctx.request.y, true)),
      DOCUMENT,
    ),
    [METHOD.DOM_READ]: leased(
      ({ request: r }) => {
        if (!isObject(r) || typeof r.documentEpoch !== 'string' ||
            (r.backendNodeId !== undefined && !(Number.isInteger(r.backendNodeId) && r.backendNodeId > 0)) ||
            (r.frame !== undefined && !(validFrame(r.frame) && r.backendNodeId !== undefined)) ||
            Object.keys(r).some((k) => !['documentEpoch', 'backendNodeId', 'frame'].includes(k))) fail('INVALID_REQUEST');
      },
      (ctx) => onDocument(ctx, (frame) => dom.read(ctx.gate, ctx.send, frame, ctx.request.backendNodeId)),
      DOCUMENT,
    ),
    [METHOD.PAGE_NAVIGATE]: leased(
      ({ request: r }) => {
        if (!isObject(r) || typeof r.documentEpoch !== 'string' || typeof r.url !== 'string' ||
            r.url.length > LIMITS.MAX_URL || Object.keys(r).length !== 2) fail('INVALID_REQUEST');
      },
      navigate,
    ),
    [METHOD.CONSOLE_OPEN]: () => owner.open(),
  };
  // Every provider method the broker calls (protocol.js) has a handler.
  for (const m of Object.values(METHOD)) {
    if (!Object.hasOwn(methods, m)) throw new Error(`extension: no handler for the provider method ${m}`);
  }

  // shownTab is the tab the popup speaks of: the active tab of the last
  // focused normal window (the popup's own window is not one).
  async function shownTab() {
    const win = await chrome.windows.getLastFocused({ windowTypes: ['normal'] }).catch(() => undefined);
    if (win?.id === undefined) return undefined;
    const [tab] = await chrome.tabs.query({ active: true, windowId: win.id });
    return tab;
  }

  async function popupState() {
    const tabs = await Promise.all(gates.list().map(async (g) => {
      const tab = await chrome.tabs.get(g.tabId).catch(() => ({}));
      return { tabId: g.tabId, title: tab.title ?? '', url: tab.url ?? '', scope: g.scope };
    }));
    const tab = await shownTab();
    const here = tab && isHttp(tab.url) ?
      { tabId: tab.id, title: tab.title ?? '', origin: originOf(tab.url), allowed: consents.allows(tab.id, originOf(tab.url)) } :
      undefined;
    return { status: transport.status(), tabs, here };
  }

  chrome.debugger.onEvent.addListener(gates.onEvent);
  chrome.debugger.onDetach.addListener(gates.onDetach);
  chrome.tabs.onRemoved.addListener(gates.onTabRemoved);
  chrome.tabs.onRemoved.addListener(consents.onRemoved);
  chrome.tabs.onUpdated.addListener(consents.onUpdated);
  chrome.tabs.onUpdated.addListener(gates.onTabUpdated);
  chrome.windows.onRemoved.addListener(approvals.onWindowRemoved);
  chrome.runtime.onConnect.addListener(owner.onConnect);
  chrome.runtime.onMessage.addListener((msg, sender, sendResponse) => {
    switch (msg?.type) {
      case 'approval.get':
      case 'approval.answer':
        sendResponse(approvals.onMessage(msg, sender));
        return false;
      case 'popup.state':
        popupState().then(sendResponse);
        return true; // answered asynchronously
      case 'popup.stop':
        gates.stopAll();
        consents.clear();
        sendResponse(true);
        return false;
      case 'popup.allow': // the owner allows the tab the popup showed, for its current origin
        chrome.tabs.get(msg.tabId).then((tab) => consents.allow(tab), () => false).then(sendResponse);
        return true;
      case 'popup.console':
        owner.open().then(() => sendResponse(true), () => sendResponse(false));
        return true;
    }
    return false;
  });

  return {
    // start connects at once; stale attachments of an earlier worker are
    // swept in parallel, and grants wait for the sweep.
    start() {
      gates.sweep();
      transport.connect();
    },
    transport,
    gates,
    // For the Snug host's port (lib/snug.js): the same owner questions,
    // the same browser identity.
    askOwner: (params, signal) => admit(null, params, signal),
    identity,
    consents,
  };
}
