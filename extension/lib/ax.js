// Bounded accessibility reads and literal searches. The extension only
// fetches and trims AX nodes; projection into observations is the broker's.
import { CodeError, fail, orFail } from './errors.js';
import { MAX_VALUE_BYTES } from './transport.js';
import { CONTROL_ROLES, LIMITS, OBSERVE } from './protocol.js';
import { OWNER_NAMES } from './frames.js';

// BUDGET bounds one read. calls counts the CDP calls a read makes, but for
// a wide node's children fetched one by one (READ.wide), which count as
// the one call that lists them all; a subtree read with one queryAXTree
// (READ.subtreeMin) is one call.
export const BUDGET = { nodes: 2048, calls: 512, depth: 64, bytes: 1 << 20 };
const MAX_MATCHES = 128;

// READ tunes how a document is read. Through chrome.debugger, a call costs
// about a millisecond and every byte of its answer costs too (AX nodes are
// large: a whole tree is about 400 bytes a node).
// - A small document is read with one Accessibility.getFullAXTree: one
//   call instead of one per node with children. The size is
//   Performance.getMetrics' Nodes, the DOM nodes of the renderer process
//   (never fewer than the document's), and past bulkMaxNodes the main
//   document's elements, up to bulkMaxNodes / 2 (small); a bigger
//   document, or one whose size is unknown, is walked, which skips
//   inline text boxes and stops at the budgets. prefetch is how many child
//   fetches the walk keeps in flight ahead of itself.
// - A node whose DOM subtree holds subtreeMin to subtreeMax nodes (the
//   clickable snapshot tells, once it came) has its whole AX subtree read
//   with one Accessibility.queryAXTree that names no name and no role,
//   instead of one getChildAXNodes per node with children in it; only in a
//   tab that is shown (Chromium never answers queryAXTree in another) and
//   a document without frames. subtreeWait (ms) bounds the wait for its
//   answer; one of up to subtreeAhead DOM nodes is also asked ahead.
// - A node of more than wide children has them fetched one by one as the
//   walk comes to them (by their DOM node: an AX node's ID is its DOM
//   node's), up to singles such fetches a read: a read that the
//   projection's budgets stop early skips most of them (on /big, after its
//   buttons come 1,000 paragraphs, which one call listed in 0.8 s).
// BENCHMARKS.md ("Reading the page") has the figures; benchmarks change
// these to compare the ways.
export const READ = {
  bulkMaxNodes: 700, prefetch: 8, wide: 64, singles: 64, subtreeMin: 12, subtreeMax: 400, subtreeAhead: 100, subtreeWait: 3000,
};
const PROPS = ['disabled', 'focusable', 'focused', 'editable', 'checked', 'expanded', 'hidden', 'required'];
const utf8 = new TextEncoder();

// clickables returns the backend node IDs of the elements of a frame's
// document that are clickable by the page's own doing, from one DOM
// snapshot and the document's event listeners: a listener of a press, a
// click or a double-click of its own (PRESS_LISTENERS; Chromium's
// isClickable besides, but not a label's own activation), the items of
// an element that listens for a press to start a drag or a swipe
// (GRAB_LISTENERS: its list items, or its children shaped alike, as a
// sortable list's; the element itself then only when Chromium counts it
// clickable), the root of an area whose cursor says it can be
// clicked or dragged (pointer, grab, move), a tab stop (tabindex ≥ 0), or
// an element the page lets be dragged (draggable="true"). The broker
// decides which of them get a ref. A snapshot that fails marks nothing; a
// listener read that fails marks what the snapshot shows.
//
// It returns {ids, hidden}: ids the marked elements' backend node IDs;
// hidden, of those that an aria-hidden="true" subtree keeps out of the
// accessibility tree although they are drawn (a box of some size), their
// identity as HIDDEN_IDENTITY (dom.js) reads it, by backend node ID: a
// person sees and clicks them (Ace's fold widgets, in a gutter hidden
// from screen readers). With counts, it also sets counts.frameOwners: the
// frame owner elements of that document (iframes and the like, shadow
// trees included; frames.js OWNER_NAMES), so that a page without any
// needs no frame list (absent when unknown).
//
// The listener read needs the document as an object. The main frame's
// (main) is its main world's document, asked before the snapshot, so that
// the listeners are read beside it: the renderer answers in turn, and
// they no longer wait for its answer. A child frame's comes from the
// snapshot. listed, when given, is called once every call the answer
// depends on is sent.
export async function clickables(send, frameId, counts, { main = false, listed = () => {} } = {}) {
  const out = new Set();
  const hidden = new Map();
  const early = main ? listenersOf(send, undefined, listed) : undefined;
  let snap;
  try {
    snap = await send('DOMSnapshot.captureSnapshot', { computedStyles: ['cursor'] });
  } catch (e) {
    await early;
    if (e instanceof CodeError) throw e;
    return { ids: out, hidden };
  }
  const strings = snap.strings ?? [];
  const str = (i) => (Number.isInteger(i) && i >= 0 && i < strings.length ? strings[i] : undefined);
  const doc = (snap.documents ?? []).find((d) => str(d.frameId) === frameId);
  if (!doc) {
    await early;
    return { ids: out, hidden };
  }
  const nodes = doc.nodes ?? {};
  const ids = nodes.backendNodeId ?? [];
  const listeners = await (early ?? listenersOf(send, ids[0], listed));
  const listened = new Set(nodes.isClickable?.index ?? []);
  const cursor = new Map(); // node index -> its cursor
  const drawn = new Set(); // node indexes with a box of some size
  doc.layout?.nodeIndex?.forEach((node, k) => {
    cursor.set(node, str(doc.layout.styles?.[k]?.[0]));
    const [, , width, height] = doc.layout.bounds?.[k] ?? [];
    if (width > 0 && height > 0) drawn.add(node);
  });
  const pointer = (i) => ['pointer', 'grab', 'move'].includes(cursor.get(i));
  const tag = (i) => str(nodes.nodeName?.[i])?.toUpperCase();
  const attr = (i, want) => {
    const attrs = nodes.attributes?.[i] ?? [];
    for (let a = 0; a + 1 < attrs.length; a += 2) if (str(attrs[a])?.toLowerCase() === want) return str(attrs[a + 1]);
    return undefined;
  };
  const listens = (i, types) => listeners.get(ids[i])?.some((type) => types.has(type)) === true;
  // ariaHidden: the element or an ancestor in its tree has
  // aria-hidden="true" (the walk stops at a shadow root, as Element.closest
  // does in HIDDEN_IDENTITY).
  const ariaHidden = (i) => {
    for (let k = i, steps = 0; k >= 0 && nodes.nodeType?.[k] === 1 && steps < 4096; k = nodes.parentIndex?.[k] ?? -1, steps++) {
      if (attr(k, 'aria-hidden')?.toLowerCase() === 'true') return true;
    }
    return false;
  };
  // The element children of each element that listens for a grab, by
  // their shape (tag and class).
  const grabbed = new Map(); // parent index -> Map(shape -> [child index])
  ids.forEach((_, i) => {
    const parent = nodes.parentIndex?.[i];
    if (nodes.nodeType?.[i] !== 1 || nodes.nodeType?.[parent] !== 1 || ['HTML', 'BODY'].includes(tag(parent)) || !listens(parent, GRAB_LISTENERS)) return;
    if (!grabbed.has(parent)) grabbed.set(parent, new Map());
    const shape = `${tag(i)} ${attr(i, 'class') ?? ''}`;
    const alike = grabbed.get(parent);
    alike.set(shape, [...(alike.get(shape) ?? []), i]);
  });
  const items = new Set();
  const holders = new Set(); // elements whose grab listener is for their items
  for (const [parent, alike] of grabbed) {
    for (const group of alike.values()) {
      for (const i of group) {
        if (group.length === 1 && tag(i) !== 'LI') continue;
        items.add(i);
        holders.add(parent);
      }
    }
  }
  ids.forEach((id, i) => {
    if (nodes.nodeType?.[i] !== 1) return;
    const tabindex = attr(i, 'tabindex');
    const marked = (tabindex !== undefined && Number.parseInt(tabindex, 10) >= 0) || attr(i, 'draggable') === 'true';
    const own = (listened.has(i) && tag(i) !== 'LABEL') || (listens(i, PRESS_LISTENERS) && !holders.has(i));
    if (!(own || marked || items.has(i) || (pointer(i) && !pointer(nodes.parentIndex?.[i])))) return;
    out.add(id);
    if (drawn.has(i) && ariaHidden(i)) hidden.set(id, hiddenIdentity(attr(i, 'role'), attr(i, 'aria-label'), attr(i, 'title')));
  });
  if (counts) {
    counts.frameOwners = frameOwners(doc, str);
    counts.sizes = subtreeSizes(nodes);
  }
  return { ids: out, hidden };
}

// hiddenIdentity is HIDDEN_IDENTITY (dom.js) of an element with these
// attributes (undefined when absent).
function hiddenIdentity(role, label, title) {
  const clean = (v) => (v ?? '').replace(/\s+/g, ' ').trim();
  return { role: clean(role).split(' ')[0].toLowerCase() || 'generic', name: clean(label) || clean(title) };
}

// PRESS_LISTENERS are the event types whose listener on an element makes
// it clickable; GRAB_LISTENERS those whose listener on an element makes
// its items draggable (a press there starts the drag).
const PRESS_LISTENERS = new Set(['click', 'dblclick', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'touchstart', 'touchend']);
const GRAB_LISTENERS = new Set(['mousedown', 'pointerdown', 'touchstart']);

// listenersOf returns the event types each element of a document listens
// to (backend node ID -> types), from one DOMDebugger.getEventListeners of
// the whole document (shadow trees included); an empty map when it cannot
// be read. The document is documentId's, or without one the main frame's
// (document in its main world: a page cannot shadow it). listed is called
// once the listener read is sent, or will never be.
async function listenersOf(send, documentId, listed) {
  const out = new Map();
  let objectId;
  try {
    if (documentId === undefined) {
      ({ result: { objectId } } = await send('Runtime.evaluate', { expression: 'document' }));
    } else if (Number.isInteger(documentId) && documentId > 0) {
      ({ object: { objectId } } = await send('DOM.resolveNode', { backendNodeId: documentId }));
    } else {
      return out;
    }
    const read = send('DOMDebugger.getEventListeners', { objectId, depth: -1, pierce: true });
    listed();
    const { listeners } = await read;
    for (const l of listeners ?? []) {
      if (!Number.isInteger(l?.backendNodeId) || typeof l.type !== 'string') continue;
      out.set(l.backendNodeId, [...(out.get(l.backendNodeId) ?? []), l.type]);
    }
  } catch (e) {
    if (e instanceof CodeError) throw e;
  } finally {
    listed();
    if (objectId !== undefined) send('Runtime.releaseObject', { objectId }).catch(() => {});
  }
  return out;
}

// subtreeSizes returns the number of DOM nodes under each node of a
// snapshot document (itself included), by backend node ID. The snapshot
// lists a node after its parent.
function subtreeSizes(nodes) {
  const ids = nodes.backendNodeId ?? [];
  const parents = nodes.parentIndex ?? [];
  const sizes = ids.map(() => 1);
  for (let i = ids.length - 1; i > 0; i--) {
    const p = parents[i];
    if (Number.isInteger(p) && p >= 0 && p < i) sizes[p] += sizes[i];
  }
  return new Map(ids.map((id, i) => [id, sizes[i]]));
}

// frameOwners counts a snapshot document's frame owners: the elements
// frames.js lists as owners (by name), and any element with a content
// document.
function frameOwners(doc, str) {
  const names = doc.nodes?.nodeName ?? [];
  const content = new Set(doc.nodes?.contentDocumentIndex?.index ?? []);
  let n = 0;
  names.forEach((name, i) => {
    if (OWNER_NAMES.has(str(name)?.toUpperCase()) || content.has(i)) n++;
  });
  return n;
}

// A Reader holds one read's budgets and its output.
class Reader {
  constructor(send, page, maxCalls = BUDGET.calls, reserve = 0) {
    this.send = send;
    this.calls = 0;
    this.singles = 0; // fetches of a wide node's children one by one (Walk.fetchKids), which calls does not count
    this.clickable = new Set(); // backend node IDs to mark clickable (clickables' ids)
    this.hidden = new Map(); // clickables' hidden: drawn, clickable, out of the AX tree
    this.maxCalls = maxCalls;
    this.nodes = [];
    this.truncated = false;
    // Node JSON is capped at 1 MiB, and further so that the whole value
    // (with `reserve` bytes of other fields) stays under the 900,000-byte
    // reply cap (else the read is useless).
    const frame = JSON.stringify({ ...page, truncated: false, nodes: [] });
    this.bytesLeft = Math.min(BUDGET.bytes, MAX_VALUE_BYTES - utf8.encode(frame).length - 8 - reserve);
    this.bytes = this.bytesLeft; // the node JSON budget, to add nodes again (Walk.settle)
    this.page = page;
    this.marking = undefined; // the clickable marks while they are read beside the walk (mark)
    this.marks = undefined; // clickables' answer, once settled
  }

  // mark reads the clickable marks of frameId's document (clickables)
  // beside the walk, so that the walk need not wait for the DOM snapshot,
  // the slowest call of a big page. Until they come, the walk adds nodes
  // unmarked and remembers them (marking.added); then it adds them again
  // with the marks (Walk.settle), as if they had been there from the
  // start. Their calls count as they are made, and the rest of
  // MARK_CALLS are kept for them until they are done, so that the walk
  // makes the calls it made when the marks came first. main: frameId is
  // the tab's main frame (clickables). m.listed resolves once every call
  // of the marks' answer is sent.
  mark(frameId, counts, main) {
    const m = { done: false, added: [], calls: 0 };
    let listed;
    m.listed = new Promise((resolve) => { listed = resolve; });
    const send = (method, params) => {
      m.calls++;
      return this.call(method, params);
    };
    m.promise = clickables(send, frameId, counts, { main, listed })
      .then((value) => { m.value = value; }, (e) => { m.error = e; })
      .finally(() => {
        m.done = true;
        listed();
      });
    this.marking = m;
  }

  // marksAhead is how many calls the marks may still make.
  get marksAhead() {
    return this.marking?.done === false ? Math.max(0, MARK_CALLS - this.marking.calls) : 0;
  }

  call(method, params) {
    this.calls++;
    return this.send(method, params);
  }

  stop() {
    this.truncated = true;
    return false;
  }

  get canCall() {
    return this.calls + this.marksAhead < this.maxCalls;
  }

  // add projects a non-ignored node; false when a budget stops the read.
  // A secret node (a password field) is returned without its value.
  add(n, parentAxId, secret) {
    const node = { axId: n.nodeId };
    if (parentAxId !== undefined) node.parentAxId = parentAxId;
    if (n.backendDOMNodeId !== undefined) node.backendNodeId = n.backendDOMNodeId;
    node.role = String(n.role?.value ?? '');
    node.name = String(n.name?.value ?? '');
    if (n.value?.value !== undefined && !secret) node.value = String(n.value.value);
    node.ignored = false;
    node.props = {};
    for (const p of n.properties ?? []) {
      if (PROPS.includes(p.name) && p.value?.value !== undefined) node.props[p.name] = p.value.value;
    }
    if (this.clickable.has(n.backendDOMNodeId)) {
      node.props.clickable = true;
      // A clickable element's title, which Chromium gives as its description.
      if (node.name === '' && n.description?.value !== undefined) node.description = String(n.description.value).slice(0, LIMITS.MAX_NAME_LENGTH);
    }
    return this.push(node);
  }

  // addHidden adds the clickable elements that an aria-hidden subtree keeps
  // out of the accessibility tree (none is a node of it), after the nodes
  // read, with their identity as HIDDEN_IDENTITY reads it; false when a
  // budget stops it.
  addHidden() {
    for (const [backendNodeId, { role, name }] of this.hidden) {
      if (name.length > LIMITS.MAX_NAME_LENGTH) continue;
      const node = { axId: `hidden-${backendNodeId}`, backendNodeId, role, name, ignored: false, props: { clickable: true } };
      if (!this.push(node)) return false;
    }
    return true;
  }

  // addStub records an ignored node of a window: only its place in the tree.
  addStub(n, parentAxId) {
    const node = { axId: n.nodeId, ignored: true };
    if (parentAxId !== undefined) node.parentAxId = parentAxId;
    return this.push(node);
  }

  push(node) {
    if (this.nodes.length >= BUDGET.nodes) return this.stop();
    const size = utf8.encode(JSON.stringify(node)).length + 1;
    if (size > this.bytesLeft) return this.stop();
    this.bytesLeft -= size;
    this.nodes.push(node);
    return true;
  }

  // secret tells whether n may be a password field with a value. Chromium
  // masks password values, but masking is a browser setting, so the DOM
  // decides: a single-line editable field with a value is asked for its
  // input type, and one that cannot be asked counts as a password.
  async secret(n) {
    if (!this.mayBeSecret(n)) return false;
    if (n.backendDOMNodeId === undefined || !this.canCall) return true;
    try {
      const { node } = await this.call('DOM.describeNode', { backendNodeId: n.backendDOMNodeId });
      const attrs = node.attributes ?? [];
      const type = attrs.findIndex((a, i) => i % 2 === 0 && a.toLowerCase() === 'type');
      return node.nodeName === 'INPUT' && type >= 0 && String(attrs[type + 1]).toLowerCase() === 'password';
    } catch (e) {
      if (e instanceof CodeError) throw e;
      return true;
    }
  }

  // mayBeSecret: a single-line editable field with a value, which secret
  // asks the DOM about.
  mayBeSecret(n) {
    const prop = (name) => n.properties?.find((p) => p.name === name)?.value?.value;
    return n.value?.value !== undefined && prop('editable') !== undefined && prop('multiline') !== true;
  }

  result() {
    return { ...this.page, truncated: this.truncated, nodes: this.nodes };
  }
}

// read walks the AX tree depth-first from the root (or from the AX node of
// backendNodeId) with getRootAXNode / getPartialAXTree / getChildAXNodes,
// walking through ignored nodes without returning them. clickFrame is the
// frame whose document's clickable elements are marked (clickables),
// read beside the walk (Reader.mark).
// A read of a whole document that marks clickable elements also says how
// many frame owners it holds (frameOwners, when the snapshot told).
//
// lastCall, when given, is called once every call the answer depends on
// has been sent, before their answers came, and called again after any
// call that follows it. The caller asks for the frame tree there: the
// renderer handles one session's calls in turn (Page.getFrameTree,
// Accessibility.getFullAXTree, DOMSnapshot.captureSnapshot,
// DOMDebugger.getEventListeners and DOM.describeNode alike), so its answer
// names the document every one of them ran on, a round trip earlier than
// a frame tree asked after the read. Only a read of one getFullAXTree
// knows when it has sent its last call; a walk never calls it.
export async function read(send, page, backendNodeId, frameId, clickFrame = frameId, { shown = false, lastCall } = {}) {
  const whole = backendNodeId === undefined && clickFrame !== undefined;
  let unproven = 0; // calls sent since lastCall; a release reads nothing
  const counted = lastCall === undefined ? send : (method, params) => {
    if (method !== 'Runtime.releaseObject') unproven++;
    return send(method, params);
  };
  const r = new Reader(counted, page, BUDGET.calls, whole ? FRAME_OWNERS_BYTES : 0);
  // The document's size is asked first (Chromium sends it on its IO
  // channel, ahead of the session's other calls): the tree waits for it
  // alone.
  const bulk = backendNodeId === undefined ? small(r, frameId === undefined) : false;
  const counts = {};
  r.counts = counts;
  if (clickFrame !== undefined) r.mark(clickFrame, counts, frameId === undefined);
  const w = new Walk(r, { frameId, kept: new Kept() });
  let root;
  let proven; // once lastCall was called after the tree and the marks' calls
  if (await bulk) {
    const tree = w.all();
    if (lastCall !== undefined) {
      proven = (r.marking?.listed ?? Promise.resolve()).then(() => {
        unproven = 0;
        lastCall();
      });
    }
    root = await tree;
  } else {
    root = await w.root(backendNodeId);
  }
  // shown may still be asked (a promise): the walk needs it (subtree
  // reads), the calls before it do not.
  r.shown = await shown;
  await w.run([{ id: root.nodeId, depth: 1 }]);
  // A read of the whole document shows what the page draws and a person
  // clicks although aria-hidden keeps it from the tree.
  if (r.marks && backendNodeId === undefined) {
    r.hidden = r.marks.hidden;
    r.addHidden();
  }
  if (proven !== undefined) {
    await proven;
    if (unproven > 0) lastCall(); // a password field's check, or a child the tree did not hold
  }
  const out = r.result();
  if (whole && counts.frameOwners !== undefined) out.frameOwners = counts.frameOwners;
  return out;
}

// FRAME_OWNERS_BYTES is what frameOwners adds to a read's JSON at most.
const FRAME_OWNERS_BYTES = ',"frameOwners":'.length + 16;
// MARK_CALLS is how many calls clickables makes at most (the snapshot, the
// document as an object, DOMDebugger.getEventListeners,
// Runtime.releaseObject).
const MARK_CALLS = 4;

// Kept counts what the broker's projection (browser/runtime/observe.go)
// keeps of a read, as it counts, so that a read stops once the projection
// could show no more: at MAX_CONTROLS controls and MAX_TEXT_FRAGMENTS text
// fragments. The projection also skips elements and text past its byte
// budgets, and would then keep fewer than these counts say: so the counts
// are trusted only while the bytes of every node that could be shown stay
// within those budgets (an upper bound of what the projection spends),
// and a read past them is not stopped early. Named regions are not waited
// for: a page of that many controls and fragments rarely has its landmarks
// after them, and the call budget gave them up anyway.
const BLANK = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/; // Go's unicode.IsSpace
const controlRoles = new Set(CONTROL_ROLES);
const CLICKABLE_NAME_BYTES = 3 * 100; // the broker names a clickable element in at most 100 UTF-16 units (maxClickableName)
class Kept {
  controls = 0;
  texts = 0;
  textBytes = 0; // every non-blank fragment's
  nodeBytes = 0; // every named or control node's, as the projection sizes an element

  // add counts a node the read returns; false once the projection is full.
  add(n) {
    if (n.props?.hidden === true) return true;
    const blank = BLANK.test(n.name);
    if (n.role === 'StaticText') {
      if (!blank) {
        this.texts++;
        this.textBytes += utf8.encode(n.name).length;
      }
    } else {
      const control = controlRoles.has(n.role) || (n.props?.focusable === true && !!n.props?.editable);
      // An element the page made clickable gets a ref unless a control is
      // inside it (which the read may not have reached yet): its bytes
      // count, at the most its name can take, but it is no control here.
      if (n.props?.clickable === true) this.nodeBytes += CLICKABLE_NAME_BYTES + 64;
      else if (control || !blank) this.nodeBytes += utf8.encode(n.name).length + 64 + utf8.encode(n.value ?? '').length;
      if (control && n.backendNodeId > 0 && n.name.length <= LIMITS.MAX_NAME_LENGTH) this.controls++;
    }
    return !(this.controls >= OBSERVE.MAX_CONTROLS && this.texts >= OBSERVE.MAX_TEXT_FRAGMENTS &&
      this.textBytes <= OBSERVE.MAX_TEXT_BYTES && this.nodeBytes <= OBSERVE.MAX_NODE_BYTES);
  }
}

// small reports whether the document is small enough to be read in one
// call (READ.bulkMaxNodes); a size it cannot learn is not small. The
// renderer's DOM nodes (Performance.getMetrics) are never fewer than the
// document's, but count every document of the process: the pages before
// it in the back-forward cache, other tabs of the site. Past the bound,
// the document's own elements decide (about two DOM nodes each: /big has
// 6,268 nodes, 3,119 elements), counted by an evaluation that V8 refuses
// to run if it could have a side effect: a page's own getElementsByTagName
// runs only if it has none (and can then only make its read cost more).
// main: the document is the main frame's.
async function small(r, main) {
  if (!(READ.bulkMaxNodes > 0)) return false;
  const size = async (answer) => {
    try {
      return await answer;
    } catch (e) {
      if (e instanceof CodeError) throw e; // the gate, or a cancel
      return undefined;
    }
  };
  const nodes = size(r.call('Performance.getMetrics')).then((res) => res?.metrics?.find((m) => m.name === 'Nodes')?.value);
  const elements = main ?
    size(r.call('Runtime.evaluate', { expression: ELEMENTS, returnByValue: true, throwOnSideEffect: true, silent: true })).then((res) => res?.result?.value) :
    Promise.resolve(undefined); // a child frame's document is not the main world's
  elements.catch(() => {}); // sent, but not waited for when the node count tells
  const n = await nodes;
  if (Number.isFinite(n) && n <= READ.bulkMaxNodes) return true;
  const k = await elements;
  return Number.isInteger(k) && k <= READ.bulkMaxNodes / 2;
}

// ELEMENTS counts the elements of the main frame's document (document
// cannot be shadowed in the main world).
const ELEMENTS = "document.getElementsByTagName('*').length";

// WINDOW is the budget of one page window (ax.page).
export const WINDOW = { calls: 128, maxNodes: 400 };
// MAX_CHAIN_BYTES bounds the JSON of a resume chain: 64 IDs of at most 64
// characters, quoted and separated, under its key.
const MAX_CHAIN_BYTES = 16 + BUDGET.depth * (64 * 6 + 3); // \u-escaped at worst

// readWindow reads the next window of a depth-first walk: up to maxNodes
// nodes after the node that `after` names (a chain of AX node ids from the
// walk's root down to it), or from the root. Ignored nodes come back as
// stubs, and every node names the node it was walked from, so that the
// broker can resume after any node it keeps. `resume` is the chain of the
// last node handled when the walk has more; its absence means the walk is
// done. A chain that no longer leads down the tree is STALE_TARGET: the page
// changed under the traversal.
export async function readWindow(send, page, { backendNodeId, after, maxNodes, frameId, clickFrame = frameId }) {
  const r = new Reader(send, page, WINDOW.calls, MAX_CHAIN_BYTES);
  if (clickFrame !== undefined) r.clickable = (await clickables((m, p) => r.call(m, p), clickFrame, undefined, { main: frameId === undefined })).ids;
  const w = new Walk(r, { window: true, maxNodes, frameId });
  const root = await w.root(backendNodeId);
  const stack = [];
  if (!after) {
    stack.push({ id: root.nodeId, depth: 1 });
  } else {
    if (after[0] !== root.nodeId || after.length > BUDGET.depth) fail('STALE_TARGET');
    let parent; // the nearest node on the chain that is returned, for AXRead's parentAxId
    for (let j = 0; j < after.length - 1; j++) {
      const n = w.known.get(after[j]);
      // The walk never goes below a StaticText or into a password field.
      if (!n || n.role?.value === 'StaticText' || (!n.ignored && (await r.secret(n)))) fail('STALE_TARGET');
      w.walkParent.set(after[j + 1], after[j]);
      const kids = n.childIds ?? [];
      const i = kids.indexOf(after[j + 1]);
      if (i < 0 || !(await w.children(n))) fail('STALE_TARGET');
      if (!n.ignored) parent = n.nodeId;
      // The later siblings of each level wait below the deeper levels.
      for (let k = kids.length - 1; k > i; k--) stack.push({ id: kids[k], depth: j + 2, parent, walkParent: n.nodeId });
    }
    if (!w.known.has(after.at(-1))) fail('STALE_TARGET');
    stack.push({ id: after.at(-1), depth: after.length, parent, walkParent: after.at(-2), resumed: true });
  }
  const more = await w.run(stack);
  const out = { ...r.result(), truncated: r.truncated };
  if (more) out.resume = w.chain();
  return out;
}

// Walk is one depth-first walk. Children are fetched ahead for the next
// entries of the walk, a few at a time: the walk stays depth-first, but its
// CDP round trips overlap.
class Walk {
  constructor(r, { window = false, maxNodes = Infinity, match, frameId, kept } = {}) {
    this.r = r;
    this.kept = kept; // a read the projection bounds (Kept)
    // frameId: the (in-process) child frame whose document is walked, else
    // the main frame's.
    this.frame = frameId === undefined ? {} : { frameId };
    this.window = window;
    this.maxNodes = maxNodes;
    this.match = match; // when set, only matching nodes are returned (findByWalk)
    this.known = new Map(); // AX node id -> node
    this.fetched = new Map(); // AX node id -> Promise of its children, or of the error
    this.wide = new Set(); // AX node ids whose children come one by one (fetchKids)
    this.singles = new Map(); // AX node id -> Promise of its fetch, a wide node's child
    this.allKids = new Map(); // AX node id -> Promise of getChildAXNodes, a wide node's that singles could not do
    this.walkParent = new Map(); // AX node id -> the id it was walked from
    this.last = undefined; // the last node handled completely
  }

  learn(nodes) {
    nodes?.forEach((n) => this.known.set(n.nodeId, n));
  }

  // all makes the whole tree of the document known with one
  // getFullAXTree, so that the walk over it needs no other call, and
  // returns its root.
  async all() {
    const { nodes } = await orFail(this.r.call('Accessibility.getFullAXTree', { ...this.frame }), 'STALE_TARGET');
    const root = nodes?.find((n) => n.parentId === undefined) ?? nodes?.[0];
    if (!root) fail('STALE_TARGET');
    this.learn(nodes);
    return root;
  }

  async root(backendNodeId) {
    let root;
    if (backendNodeId === undefined) {
      root = (await this.r.call('Accessibility.getRootAXNode', { ...this.frame })).node;
    } else {
      const res = await orFail(this.r.call('Accessibility.getPartialAXTree', { backendNodeId, fetchRelatives: false }), 'STALE_TARGET');
      this.learn(res.nodes);
      root = res.nodes?.find((n) => n.backendDOMNodeId === backendNodeId);
    }
    if (!root) fail('STALE_TARGET');
    this.learn([root]);
    return root;
  }

  needsKids(n, depth) {
    return depth < BUDGET.depth && n.role?.value !== 'StaticText' && (n.childIds ?? []).some((k) => !this.known.has(k));
  }

  fetchKids(id, ahead = false) {
    if (!this.fetched.has(id) && this.r.canCall) {
      const n = this.known.get(id);
      const kids = n?.childIds ?? [];
      const size = this.subtree(n);
      if (size >= READ.subtreeMin && size <= READ.subtreeMax) {
        // A big one is not asked ahead of the walk: a read that stops
        // before would leave the renderer busy with it, and the next read
        // waiting.
        if (ahead && size > READ.subtreeAhead) return undefined;
        // The whole subtree at once. Its ignored nodes come with their
        // role as the other calls give it (none), for the walk looks at
        // a role only to skip a StaticText's inline text boxes.
        const query = this.r.call('Accessibility.queryAXTree', { backendNodeId: n.backendDOMNodeId })
          .then((res) => (res.nodes ?? []).map((x) => (x.ignored ? { ...x, role: { type: 'role', value: 'none' } } : x)), (e) => {
            if (e instanceof CodeError) throw e; // the gate, or a cancel
            return undefined;
          });
        // A query that fails, or one in a tab hidden since it was asked,
        // which never answers: the children come the other way.
        let timer;
        const late = new Promise((resolve) => { timer = setTimeout(resolve, READ.subtreeWait); });
        this.fetched.set(id, Promise.race([query, late]).finally(() => clearTimeout(timer))
          .then((nodes) => nodes ?? this.r.call('Accessibility.getChildAXNodes', { id, ...this.frame }).then((res) => res.nodes ?? []))
          .catch((e) => (e instanceof Error ? e : new Error(String(e)))));
      } else if (this.kept && kids.length > READ.wide && this.r.singles < READ.singles && !kids.some((k) => this.known.has(k))) {
        // A wide node: its children come one by one (single), for the
        // one call they count as.
        this.r.calls++;
        this.wide.add(id);
        this.fetched.set(id, Promise.resolve([]));
      } else {
        this.fetched.set(id, this.r.call('Accessibility.getChildAXNodes', { id, ...this.frame })
          .then((res) => res.nodes ?? [], (e) => (e instanceof Error ? e : new Error(String(e)))));
      }
    }
    return this.fetched.get(id);
  }

  // subtree returns the number of DOM nodes under n when its AX subtree
  // may be read with one queryAXTree (READ.subtreeMin), else 0.
  subtree(n) {
    const { shown, counts } = this.r;
    if (!this.kept || !shown || counts?.frameOwners !== 0 || !(n?.backendDOMNodeId > 0) || this.frame.frameId !== undefined) return 0;
    return counts.sizes?.get(n.backendDOMNodeId) ?? 0;
  }

  // single makes the node of the stack's top entry known, a child of a
  // wide node (fetchKids), with the next few such entries below it; it
  // returns the node, or undefined when it is gone.
  async single(stack) {
    for (let j = stack.length - 1; j >= 0 && j >= stack.length - 1 - READ.prefetch; j--) {
      const { id, walkParent } = stack[j];
      if (!this.known.has(id) && this.wide.has(walkParent) && !this.singles.has(id)) this.singles.set(id, this.fetchOne(id, walkParent));
    }
    const { id } = stack.at(-1);
    const err = await this.singles.get(id);
    if (err instanceof CodeError) throw err; // the gate, or a cancel
    return this.known.get(id);
  }

  // fetchOne fetches the AX node id, a child of parentId, by its DOM node;
  // a node that cannot be fetched so, or past READ.singles, comes with
  // all of parentId's children. It resolves to the error that stops the
  // read, if any.
  async fetchOne(id, parentId) {
    const r = this.r;
    const backendNodeId = Number(id);
    try {
      if (Number.isSafeInteger(backendNodeId) && backendNodeId > 0 && r.singles < READ.singles) {
        r.singles++;
        const res = await r.send('Accessibility.getPartialAXTree', { backendNodeId, fetchRelatives: false }).catch((e) => {
          if (e instanceof CodeError) throw e;
        });
        const n = res?.nodes?.find((x) => x.nodeId === id);
        if (n) return this.learn([n]);
      }
      if (!this.allKids.has(parentId)) this.allKids.set(parentId, r.send('Accessibility.getChildAXNodes', { id: parentId, ...this.frame }));
      this.learn((await this.allKids.get(parentId)).nodes);
    } catch (e) {
      if (e instanceof CodeError) return e;
      r.truncated = true; // the node went away under us: keep what we have
    }
    return undefined;
  }

  // children makes n's children known: true when they are, false when the
  // call budget is spent or n went away.
  async children(n) {
    if (!(n.childIds ?? []).some((k) => !this.known.has(k))) return true;
    const res = await this.fetchKids(n.nodeId);
    if (res === undefined) return false;
    if (res instanceof Error) {
      if (res instanceof CodeError) throw res; // the gate, or a cancel
      return false;
    }
    this.learn(res);
    return true;
  }

  // chain names the last node handled, from the root down.
  chain() {
    const out = [];
    for (let id = this.last; id !== undefined; id = this.walkParent.get(id)) out.unshift(id);
    return out;
  }

  // settle adds the nodes of a read again with the marks that came
  // (Reader.mark), from the start, and counts them anew; false when the
  // read stops within them.
  settle() {
    const r = this.r;
    const { value, error, added } = r.marking;
    r.marking = undefined;
    if (error) throw error;
    r.marks = value;
    r.clickable = value.ids;
    r.nodes = [];
    r.bytesLeft = r.bytes;
    this.kept = new Kept();
    for (const [n, parent, secret] of added) {
      if (!r.add(n, parent, secret)) return false;
      if (!this.kept.add(r.nodes.at(-1))) {
        r.truncated = true; // the projection is full: the rest could not be shown
        return false;
      }
    }
    return true;
  }

  // run walks from the stack's entries; it returns true when it stopped
  // with more to walk (a window that is full or out of calls).
  async run(stack) {
    const r = this.r;
    let returned = 0;
    while (stack.length) {
      // Near the call budget, the marks' calls are waited for, so that the
      // budget is spent as when the marks came first.
      if (r.marking?.done === false && r.calls + r.marksAhead + READ.prefetch + 2 >= r.maxCalls) await r.marking.promise;
      if (r.marking?.done && !this.settle()) break;
      const entry = stack[stack.length - 1];
      const { id, depth, parent, walkParent, resumed } = entry;
      const n = this.known.get(id) ?? (this.wide.has(walkParent) ? await this.single(stack) : undefined);
      if (!n) {
        stack.pop(); // a child the browser no longer reports
        continue;
      }
      if (this.window && !resumed && returned >= this.maxNodes) return true;
      stack.pop();
      this.walkParent.set(id, walkParent);
      let parentOfChildren = parent;
      if (!n.ignored) {
        // Inline text boxes repeat their StaticText parent's name: skipping
        // them leaves the budgets to nodes that carry something.
        if (n.role?.value === 'InlineTextBox') continue;
        if (this.window && !resumed && r.mayBeSecret(n) && !r.canCall && r.nodes.length > 0) {
          // Out of calls to ask whether it is a password field: the next
          // window asks, rather than hiding its value.
          stack.push(entry);
          return true;
        }
        const secret = await r.secret(n);
        if (r.marking) {
          // Without its marks a read may stop elsewhere than with them: it
          // stops once they say so.
          r.marking.added.push([n, parent, secret]);
          const incomplete = r.truncated;
          if (!(r.add(n, parent, secret) && this.kept.add(r.nodes.at(-1)))) {
            r.truncated = incomplete;
            await r.marking.promise;
            if (!this.settle()) break;
          }
        } else if (!resumed && (!this.match || this.match(n))) {
          const incomplete = r.truncated;
          if (!r.add(n, this.window ? walkParent : parent, secret)) {
            if (!this.window) break;
            if (r.nodes.length > 0) {
              stack.push(entry);
              r.truncated = incomplete;
              return true; // the window is full: the next one starts here
            }
            this.last = id; // a node too big for any window: skip it
            continue;
          }
          returned++;
          if (this.kept && !this.kept.add(r.nodes.at(-1))) {
            r.truncated = true; // the projection is full: the rest could not be shown
            break;
          }
        }
        this.last = id;
        if (secret) continue; // a password field's inner text is its value
        parentOfChildren = n.nodeId;
      } else {
        if (this.window && !resumed) {
          const incomplete = r.truncated;
          if (!r.addStub(n, walkParent)) {
            stack.push(entry);
            r.truncated = incomplete;
            return true;
          }
        }
        this.last = id;
      }
      // A StaticText's children are InlineTextBoxes, which repeat its name:
      // fetching them would spend a third of the call budget on nothing.
      if (n.role?.value === 'StaticText') continue;
      const kids = n.childIds ?? [];
      if (kids.length === 0) continue;
      if (depth >= BUDGET.depth) {
        r.truncated = true;
        continue;
      }
      if (this.needsKids(n, depth)) {
        const own = this.fetchKids(n.nodeId);
        for (let j = stack.length - 1; j >= 0 && j >= stack.length - READ.prefetch; j--) {
          const next = this.known.get(stack[j].id);
          if (next && this.needsKids(next, stack[j].depth)) this.fetchKids(next.nodeId, true);
        }
        const res = await own;
        if (res === undefined) {
          // The call budget is spent: a window resumes after n; a read is
          // incomplete.
          if (this.window) return true;
          r.truncated = true;
          continue;
        }
        if (res instanceof Error) {
          if (res instanceof CodeError) throw res; // the gate, or a cancel
          r.truncated = true; // the node went away under us: keep what we have
          continue;
        }
        this.learn(res);
      }
      for (let i = kids.length - 1; i >= 0; i--) {
        stack.push({ id: kids[i], depth: depth + 1, parent: parentOfChildren, walkParent: n.nodeId });
      }
    }
    if (r.marking) {
      await r.marking.promise;
      this.settle();
    }
    return false;
  }
}

const FIND_GROUP = 'dsh-find';

// find is a literal, case-sensitive search by accessible name (and role),
// in the document or under the element of backend node root.
export async function find(send, page, name, role, { hidden = false, frameId, root } = {}) {
  if (hidden) return findByWalk(send, page, name, role, frameId, root);
  const r = new Reader(send, page);
  const params = { accessibleName: name };
  if (role !== undefined) params.role = role;
  let nodes;
  if (root !== undefined) {
    ({ nodes } = await r.call('Accessibility.queryAXTree', { ...params, backendNodeId: root }));
  } else {
    // The document as an object, not by DOM.getDocument: that would bind
    // the document to the DOM agent anew, and the next DOM.getNodeForLocation
    // (the hit test of every pointer input) would then push the path to the
    // node it hits, with every sibling on the way (thousands on a long
    // page), to this session. document is unforgeable: a page cannot
    // shadow it in the main world.
    const { result } = await r.call('Runtime.evaluate', { expression: 'document', objectGroup: FIND_GROUP });
    try {
      ({ nodes } = await r.call('Accessibility.queryAXTree', { ...params, objectId: result.objectId }));
    } finally {
      r.send('Runtime.releaseObjectGroup', { objectGroup: FIND_GROUP }).catch(() => {});
    }
  }
  const matches = (nodes ?? []).filter((n) => !n.ignored);
  if (matches.length > MAX_MATCHES) r.truncated = true;
  for (const n of matches.slice(0, MAX_MATCHES)) {
    if (!r.add(n, n.parentId, await r.secret(n))) break;
  }
  return r.result();
}

// findByWalk is find for a tab that is not shown, where Chromium never
// answers queryAXTree, and for a child frame: the bounded walk of read,
// keeping only the nodes whose name (and role) match. Matches past the walk's budgets are not
// found, and the result says truncated.
async function findByWalk(send, page, name, role, frameId, backendNodeId) {
  const r = new Reader(send, page);
  const match = (n) => String(n.name?.value ?? '') === name && (role === undefined || n.role?.value === role);
  const w = new Walk(r, { match, frameId });
  const root = await w.root(backendNodeId);
  await w.run([{ id: root.nodeId, depth: 1 }]);
  if (r.nodes.length > MAX_MATCHES) {
    r.nodes.length = MAX_MATCHES;
    r.truncated = true;
  }
  return r.result();
}
