// Reading a document inside the page: the driver of pagereader.js.
//
// Through chrome.debugger a call costs about a millisecond and an answer of
// many small objects (AX nodes, a DOM snapshot) far more than the same
// bytes as one string (BENCHMARKS.md "Reading the page"). So a whole
// document is read by one function run in an isolated world of its frame
// (pageReader: the page's own scripts cannot reach that world's globals or
// prototypes), which answers one JSON string of nodes shaped as ax.js's
// read sends them. What a page script cannot see, CDP adds:
// - backend node IDs: pageReader tags each element it sends with a no-op
//   listener of its own type (tag + index), and one
//   DOMDebugger.getEventListeners of the document, asked right after it,
//   names the element of every tag;
// - the page's own listeners (a click listener makes an element
//   clickable): that same listener read has them. When one of them could
//   change the answer (a listened element the reader did not send, or sent
//   as other than a control), the listened elements are resolved into the
//   world and the reader runs again with them. The pierced listener read
//   reaches into child frames too: a listened element the second run
//   finds in another document is kept as foreign with the world, and
//   sends no later read of the document round again.
// The renderer runs one session's calls in turn, so a listener read sent
// after the reader sees its tags, and the frame tree asked after both
// (lastCall) names the document they read. A read in a world kept from an
// earlier read needs no frame tree: it calls the reader on its own object
// in that world (proof).
import { CodeError } from './errors.js';
import { isHttp } from './gate.js';
import { MAX_VALUE_BYTES } from './transport.js';
import { CONTROL_ROLES, LIMITS, OBSERVE } from './protocol.js';
import { pageReader, removeTags } from './pagereader.js';

// WORLD names the isolated world the reader runs in: Chromium keeps one
// world of a name per document, so every read of a document shares it.
const WORLD = 'dsh-reader';

// PAGE_READ tunes the read. on: whole documents are read in the page
// (tests and benchmarks of the AX read turn it off). listened: at most so
// many of the page's listened elements are passed to the reader (in the
// document's order); a reader that reads past the last of them, with more
// left, gives way to the AX read (Unreadable). warm: a new document's
// world runs the reader once when the page has loaded (warmOnce).
export const PAGE_READ = { on: true, listened: 64, warm: true };

const READER = String(pageReader);
// The reader is defined once in each world, as a global named after its
// source (a world outlives an update of the extension), and called by a
// short declaration: sent with every call, its source is compiled anew
// each time (2 to 10 ms).
const GLOBAL = `__dshPageReader${fnv(READER)}`;
const DEFINE = `globalThis.${GLOBAL} ??= ${READER}`;
const CALL = `function (...args) { const read = globalThis.${GLOBAL}; return read === undefined ? undefined : read(...args); }`;
// CALL_ON calls the reader on its own object (a kept world's reader).
const CALL_ON = 'function (...args) { return this(...args); }';
const REMOVE = String(removeTags);
const controlRoles = new Set(CONTROL_ROLES);
const utf8 = new TextEncoder();

// LISTENED are the event types whose listener can make an element
// clickable or its items draggable (ax.js PRESS_LISTENERS and
// GRAB_LISTENERS, and what Chromium counts as clickable).
const LISTENED = new Set(['click', 'dblclick', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'touchstart',
  'touchend', 'DOMActivate']);
const GRAB = new Set(['mousedown', 'pointerdown', 'touchstart']);

// Unreadable is a document the reader could not read; the caller reads
// it with the AX read instead.
export class Unreadable extends Error {}

// prepare asks, for frameId's document, the reader's world, the reader
// defined there as an object, and the document as an object in the main
// world (for the listener read). None reads anything of the page, so the
// worker sends them beside the first frame tree, before the tab is known
// to be the lease's, and the read itself starts with the reader. release
// drops the objects when no read follows.
function prepare(send, frameId) {
  const context = send('Page.createIsolatedWorld', { frameId, worldName: WORLD }).then((r) => r.executionContextId);
  // The reader is defined as soon as the world is known: this reaction,
  // the world's first, comes before any call of it.
  const reader = context.then((contextId) => send('Runtime.evaluate', { expression: DEFINE, contextId })).then((r) => r.result?.objectId);
  const document = send('Runtime.evaluate', { expression: 'document' }).then((r) => r.result?.objectId);
  for (const p of [context, reader, document]) p.catch(() => {});
  const release = () => {
    for (const p of [document, reader]) p.then((objectId) => objectId && send('Runtime.releaseObject', { objectId })).catch(() => {});
  };
  return { context, reader, document, release };
}

// proof answers what proves a read in a kept world (start): the reader
// was called on its own object, and a V8 object ID names the renderer
// process (its isolate) and the context the object lives in, so the call
// ran in the world of the document the world was kept for, or failed
// (after a navigation that context is gone, or in another process, or in
// a frame the tab's session no longer serves). Where a frame tree asked
// after a call is needed to name its document by a context ID (which a
// new renderer process may give again), the read's own answer names it
// here: a frame tree of the world's document, marked world, with the
// URL the reader saw and the child frames the gate knows of (a frame in a
// closed shadow root is out of the reader's sight). A reader that failed,
// or a document that is not HTTP(S) (Chrome's error page of a failed
// navigation is the lease's under the URL it could not reach), asks the
// frame tree after all.
function proof(send, gate, world, pass) {
  const tree = () => send('Page.getFrameTree');
  return pass.then(({ answer }) => {
    if (!isHttp(answer.url)) return tree();
    const at = world.epoch.indexOf(':');
    const frame = { id: world.epoch.slice(0, at), loaderId: world.epoch.slice(at + 1), url: answer.url };
    return { frameTree: { frame, childFrames: [...gate.childFrames].map((id) => ({ frame: { id } })) }, world: true };
  }, tree);
}

// A tab's document world: gate.world is {epoch, context, document,
// reader} (the reader's execution context, the document's object, the
// reader's object in the world) of the document of that epoch, once a
// read or renew proved it; any navigation of the main frame drops it
// (renew), and gate.worldGen counts those, so that a read that saw one
// does not keep what it proved of the document before. With it, a read
// sends the reader at once, proven by its own answer (proof): one round
// trip for a small page, with two calls in it.

// renew, on a navigation of the main frame, drops the tab's world and asks
// the new document's, kept if no other navigation came meanwhile and the
// frame tree asked right behind it names the document gate.epoch names.
// The tree is asked once the reader's object is made, so that it names
// the document the object was made in (proof).
export function renew(gate, send) {
  drop(gate, send);
  const gen = gate.worldGen;
  const prepared = prepare(send, gate.mainFrameId);
  const tree = prepared.reader.then(() => send('Page.getFrameTree'));
  Promise.all([prepared.context, prepared.document, prepared.reader, tree]).then(([context, document, reader, { frameTree }]) => {
    if (gate.worldGen === gen && `${frameTree.frame.id}:${frameTree.frame.loaderId}` === gate.epoch && typeof reader === 'string') {
      keep(gate, send, { epoch: gate.epoch, context, document, reader });
      warmOnce(gate, send);
    } else {
      prepared.release();
    }
  }).catch(() => prepared.release());
}

// loaded, on the page's load event, warms the reader in the document's
// world, once the world is kept too.
export function loaded(gate, send) {
  gate.loadedEpoch = gate.epoch;
  warmOnce(gate, send);
}

// warmOnce runs the reader once in the tab's world, when it is of the
// document that fired its load event and no read ran in it yet: the first
// call of the reader in a world compiles it and finds its way (about
// 1.3 ms of a small page's 1.7 ms in-page read, and 1 ms more of the call
// around it), and a document is read the first time while an agent waits.
// The run has budgets of one, so it reads next to nothing: a full read
// here slowed a page that renders after its load event (BENCHMARKS.md "The
// reader warmed on load").
function warmOnce(gate, send) {
  const world = gate.world;
  if (!PAGE_READ.warm || world === undefined || world.warmed || world.epoch !== gate.loadedEpoch) return;
  world.warmed = true;
  warm(send, world.context);
}

function warm(send, context) {
  const opts = { ...options(), budgets: { controls: 1, regions: 1, texts: 1, textBytes: 64, nodeBytes: 256 } };
  send('Runtime.callFunctionOn', {
    functionDeclaration: CALL, executionContextId: context, arguments: [{ value: opts }], returnByValue: true,
  }).catch(() => {});
  send('Runtime.callFunctionOn', { functionDeclaration: REMOVE, executionContextId: context }).catch(() => {});
}

function drop(gate, send) {
  gate.worldGen = (gate.worldGen ?? 0) + 1;
  const old = gate.world;
  gate.world = undefined;
  if (old) release(send, old);
}

function keep(gate, send, world) {
  const old = gate.world;
  if (old?.document === world.document) {
    old.warmed ||= world.warmed === true;
    return;
  }
  gate.world = world;
  if (old) release(send, old);
}

function release(send, world) {
  for (const objectId of [world.document, world.reader]) {
    if (objectId !== undefined) send('Runtime.releaseObject', { objectId }).catch(() => {});
  }
}

// start begins a whole document's read (extension.js leased): with the
// tab's world of the document the tab shows as far as the worker knows,
// the reader and the listener read, and what proves them (the read's only
// frame tree: the proof of the reader's call on its object, or a world
// kept without that object, a frame tree asked after both: a world serves
// one document, so the tree names the document it read, or the read is
// done again); else prepare, beside the first frame tree and the tab check.
export function start(send, gate) {
  const gen = gate.worldGen ?? 0;
  const world = gate.world;
  if (world === undefined || world.epoch !== gate.epoch) {
    const prepared = prepare(send, gate.mainFrameId);
    return { gen, prepared, release: prepared.release };
  }
  const opts = options();
  const pass = run(send, world, opts, []);
  const after = world.reader === undefined ? send('Page.getFrameTree') : proof(send, gate, world, pass);
  pass.catch(() => {});
  after.catch(() => {});
  return { gen, world, opts, pass, after, release: () => {} };
}

// read reads the main frame's document (frameId) with pageReader and
// returns ax.js read's answer: {...page, truncated, nodes, frameOwners}.
// early is start's answer, when the worker asked it beside the tab check;
// only a world of the document the first frame tree names (page) is used.
// lastCall is called once every call the answer depends on is sent (with
// the frame tree already asked after them, when start asked it), and
// again after any that follows. tree, when given, is the frame tree that
// named page's document (or proof's, with the child frames the gate knows
// of): its child frames are frame owners too (one in a closed shadow root
// is out of the reader's sight, not of the tree's).
export async function read(send, gate, page, { early = start(send, gate), lastCall = () => {}, tree } = {}) {
  let world, opts, first, prepared;
  if (early.pass !== undefined && early.world.epoch === page.documentEpoch) {
    world = early.world;
    opts = early.opts;
    lastCall(early.after);
    first = await early.pass.catch((e) => {
      if (e instanceof CodeError) throw e;
      return undefined; // the world is gone: a new one
    });
  } else if (early.pass !== undefined) {
    early.pass.catch(() => {}); // of another document
  }
  if (first === undefined) {
    // A world of its own: the reader called by the world's context (its
    // object is not awaited), the frame tree asked after it proves it.
    prepared = early.prepared ?? prepare(send, gate.mainFrameId);
    let context, document;
    try {
      [context, document] = await Promise.all([prepared.context, prepared.document]);
    } catch (e) {
      if (e instanceof CodeError) throw e;
      throw new Unreadable(`no world: ${e?.message}`);
    }
    if (!Number.isInteger(context) || typeof document !== 'string') throw new Unreadable('no world');
    world = { context, document };
    opts = options();
    first = run(send, world, opts, []);
    lastCall();
    first = await first;
  }
  const { context, document } = world;
  let { answer, tagged, listened } = first;
  const foreign = (world.foreign ??= new Set());
  if (foreign.size > 0) for (const id of tagged.values()) foreign.delete(id); // in the document now (adopted)
  try {
    if (mustRerun(answer, tagged, listened, foreign)) {
      const ids = [...listened.keys()].slice(0, PAGE_READ.listened);
      const objects = await Promise.all(ids.map((backendNodeId) =>
        send('DOM.resolveNode', { backendNodeId, executionContextId: context }).then((r) => r.object?.objectId, (e) => {
          if (e instanceof CodeError) throw e;
          return undefined;
        })));
      const present = ids.filter((_, i) => objects[i] !== undefined);
      opts.listened = present.map((id) => listened.get(id));
      opts.listenedMore = listened.size > ids.length;
      const pass = run(send, world, opts, objects.filter((o) => o !== undefined));
      lastCall();
      ({ answer, tagged } = await pass);
      for (const objectId of objects) if (objectId !== undefined) send('Runtime.releaseObject', { objectId }).catch(() => {});
      if (foreign.size + present.length > MAX_FOREIGN) foreign.clear();
      for (const k of Array.isArray(answer.foreign) ? answer.foreign : []) if (present[k] !== undefined) foreign.add(present[k]);
      if (answer.incomplete) throw new Unreadable('more listened elements than a read passes');
    }
    const out = finish(page, answer, tagged);
    const frames = (await tree?.catch(() => undefined))?.frameTree?.childFrames?.length;
    if (out.frameOwners !== undefined && frames > out.frameOwners) out.frameOwners = frames;
    // The world served the document the first frame tree names; the
    // caller proves the same document after (oneDocument), or reads
    // again, as this read then does with a world of its own. That one's
    // reader object was made before the reader's first call, so the tree
    // that proved the read proves the object too.
    if (prepared !== undefined) world.reader = await prepared.reader.catch(() => undefined);
    if ((gate.worldGen ?? 0) === early.gen) keep(gate, send, { ...world, epoch: page.documentEpoch, warmed: true });
    return out;
  } finally {
    send('Runtime.callFunctionOn', { functionDeclaration: REMOVE, executionContextId: context }).catch(() => {});
    // A world of its own not kept; a kept world that was replaced or
    // dropped meanwhile had its objects released then (keep, drop).
    if (prepared !== undefined && gate.world?.document !== document) prepared.release();
  }
}

// options are the reader's for one read: a tag of its own, the
// observation's budgets, and a bound on its answer's bytes (the reply's,
// less what the page's URL and title may take: finish cuts to the exact
// bound).
function options() {
  return {
    tag: `dsh${crypto.randomUUID().slice(0, 8)}-`,
    budgets: {
      controls: OBSERVE.MAX_CONTROLS, regions: OBSERVE.MAX_REGIONS, texts: OBSERVE.MAX_TEXT_FRAGMENTS,
      textBytes: OBSERVE.MAX_TEXT_BYTES, nodeBytes: OBSERVE.MAX_NODE_BYTES,
    },
    maxNameLength: LIMITS.MAX_NAME_LENGTH,
    maxValueBytes: MAX_VALUE_BYTES - PAGE_BYTES,
    listened: [],
  };
}

// PAGE_BYTES is what an answer's other members take at most: the URL (at
// most MAX_URL, six bytes a character escaped), a title, the epoch.
const PAGE_BYTES = 6 * LIMITS.MAX_URL + 4096;

// run runs the reader once in world ({context, document, reader}: on its
// object when there is one), then the listener read right behind it, and
// answers the reader's answer, the backend node ID of each tagged node
// (by index), and the page's own listeners that matter (backend node ID
// -> types, in the document's order).
async function run(send, world, opts, objects) {
  const on = world.reader === undefined
    ? { functionDeclaration: CALL, executionContextId: world.context }
    : { functionDeclaration: CALL_ON, objectId: world.reader };
  const reader = send('Runtime.callFunctionOn', {
    ...on,
    arguments: [{ value: opts }, ...objects.map((objectId) => ({ objectId }))],
    returnByValue: true,
  });
  const listeners = send('DOMDebugger.getEventListeners', { objectId: world.document, depth: -1, pierce: true });
  let answer;
  try {
    const r = await reader;
    if (r.exceptionDetails || typeof r.result?.value !== 'string') throw new Unreadable('the reader failed');
    answer = JSON.parse(r.result.value);
    if (!Array.isArray(answer?.nodes)) throw new Unreadable('the reader answered no nodes');
  } catch (e) {
    listeners.catch(() => {});
    if (e instanceof CodeError || e instanceof Unreadable) throw e;
    throw new Unreadable(`the reader failed: ${e?.message}`);
  }
  const tagged = new Map(); // node index -> backend node ID
  const listened = new Map(); // backend node ID -> types
  let documentId;
  for (const l of (await listeners).listeners ?? []) {
    if (!Number.isInteger(l?.backendNodeId) || typeof l.type !== 'string') continue;
    if (l.type.startsWith(opts.tag)) {
      const what = l.type.slice(opts.tag.length);
      if (what === 'document') documentId = l.backendNodeId;
      else if (/^\d+$/.test(what)) tagged.set(Number(what), l.backendNodeId);
    } else if (LISTENED.has(l.type)) {
      listened.set(l.backendNodeId, [...(listened.get(l.backendNodeId) ?? []), l.type]);
    }
  }
  listened.delete(documentId); // a listener of the document marks no element
  return { answer, tagged, listened };
}

// MAX_FOREIGN bounds the listened elements of other documents a world
// keeps.
const MAX_FOREIGN = 1024;

// mustRerun tells whether the page's listeners could change the reader's
// answer: a listened element it did not send, one it sent as other than a
// control (a listener makes it clickable), or a control listening for a
// grab (its items become draggable); not an element of another document
// (foreign).
function mustRerun(answer, tagged, listened, foreign) {
  if (listened.size === 0) return false;
  const sent = new Map(); // backend node ID -> node
  for (const [i, id] of tagged) sent.set(id, answer.nodes[i]);
  for (const [id, types] of listened) {
    if (foreign.has(id)) continue;
    const n = sent.get(id);
    if (n === undefined || !controlRoles.has(n?.role) || types.some((t) => GRAB.has(t))) return true;
  }
  return false;
}

// answerBytes is what the nodes of an answer about page may take, their
// backend node IDs included (ax.js Reader's bytes).
function answerBytes(page) {
  const frame = JSON.stringify({ ...page, truncated: false, nodes: [], frameOwners: 0 });
  return Math.min(1 << 20, MAX_VALUE_BYTES - utf8.encode(frame).length - 32);
}

// finish gives each tagged node its backend node ID and keeps the answer
// within what one reply carries (as ax.js Reader.push does).
function finish(page, answer, tagged) {
  let left = answerBytes(page);
  let truncated = answer.truncated === true;
  const nodes = [];
  for (const [i, n] of answer.nodes.entries()) {
    if (n === null || typeof n !== 'object') continue;
    const { el, ...node } = n;
    if (el && tagged.has(i)) node.backendNodeId = tagged.get(i);
    const size = utf8.encode(JSON.stringify(node)).length + 1;
    if (size > left) {
      truncated = true;
      break;
    }
    left -= size;
    nodes.push(node);
  }
  const out = { ...page, truncated, nodes };
  if (Number.isInteger(answer.frameOwners) && answer.frameOwners >= 0) out.frameOwners = answer.frameOwners;
  return out;
}

// fnv is the 32-bit FNV-1a hash of s's UTF-16 units, in hex.
function fnv(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16);
}
