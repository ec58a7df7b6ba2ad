// The frame topology of a leased tab, read in one DOMSnapshot: which frames
// exist, which documents we can see, and for each frame owner in the main
// document whether everything it shows is of the main document's origin.
//
// Page.getFrameTree lists only frames in the tab's own renderer process;
// out-of-process frames (other sites, sandboxed frames) and everything inside
// them are missing from it. DOMSnapshot lists every frame owner element of
// every document we can see — shadow trees flattened, closed ones included —
// and links an owner to its content document only when that document is
// in-process. An owner without a visible document is therefore treated as
// foreign: we cannot tell what it shows.
import { CodeError, fail } from './errors.js';
import { tupleOrigin } from './dom.js';

export const BUDGET = { frames: 256, depth: 32 };

// PAINT_STYLES are the computed styles read with the snapshot, in this order.
const PAINT_STYLES = ['filter', '-webkit-box-reflect', 'backdrop-filter'];

// spread returns how far (CSS px) a filter can move a pixel: blur and
// drop-shadow by their radii and offsets (three radii: a Gaussian's tail),
// url() (an SVG filter) anywhere. The other filter functions change colors
// in place.
export function spread(filter) {
  if (!filter || filter === 'none') return 0;
  if (/url\(/i.test(filter)) return Infinity;
  const px = (s) => [...s.matchAll(/-?[\d.]+(?:e[+-]?\d+)?px/gi)].map((m) => Math.abs(parseFloat(m[0])));
  let reach = 0;
  for (const m of filter.matchAll(/blur\(([^()]*)\)/gi)) reach += 3 * Math.max(0, ...px(m[1]));
  for (const m of filter.matchAll(/drop-shadow\(((?:[^()]|\([^()]*\))*)\)/gi)) {
    const [x = 0, y = 0, b = 0] = px(m[1]);
    reach += x + y + 3 * b;
  }
  return Number.isFinite(reach) ? reach : Infinity;
}

// Elements that can show another document or a plugin.
export const OWNER_NAMES = new Set(['IFRAME', 'FRAME', 'OBJECT', 'EMBED', 'FENCEDFRAME', 'PORTAL']);

// topology reads the tab's frames. describe: look up the frame ID of owners
// whose document we cannot see (one DOM.describeNode each, sent at once),
// for an inventory whose IDs stay stable; a capture does not need them.
// paint: read the paint effects that carry a frame's pixels beyond its box
// (a branch's spill), which only a capture needs: the computed styles
// are a tenth of the snapshot's time on a page of Swagger UI's size
// (BENCHMARKS.md). Without them a branch's spill is undefined.
// origin proves the origin of a frame's document ({id, loaderId,
// securityOrigin}, see dom.frameOrigin; the frames' proofs are asked at
// once); without it a frame's securityOrigin is taken as is. tree, when
// given, is a Page.getFrameTree already asked (the one that named the
// document: a frame attached after it is not in it, so is out of sight
// here, as one out of process is).
//
// It returns {root, frames, branches, truncated}:
//   root      {frameId, loaderId, origin}
//   frames    [{frameId?, parentId, loaderId?, origin?, local, owner}] without the root,
//             parents before children
//   branches  the owners in the main document, in document order:
//             [{owner, foreign, frames, spill}] — foreign when any frame in
//             the branch is out of sight, opaque, or of another origin; spill
//             is how far (CSS px, maybe Infinity) the page's filters and
//             reflections may carry its pixels beyond its box (with paint)
//   truncated frames may exist that are not listed: beyond the budgets, or
//             inside a frame we cannot see (their branches are foreign)
export async function topology(send, { describe = false, paint = true, origin = async (f) => f.securityOrigin, tree } = {}) {
  const [{ frameTree }, snapshot] = await Promise.all([
    tree ?? send('Page.getFrameTree', {}),
    send('DOMSnapshot.captureSnapshot', { computedStyles: paint ? PAINT_STYLES : [] }),
  ]);
  const local = new Map(); // frame ID -> {loaderId, origin} of in-process frames
  const unproven = []; // frames whose reported origin is not an HTTP(S) one
  (function index(t) {
    local.set(t.frame.id, { loaderId: t.frame.loaderId, origin: t.frame.securityOrigin });
    if (!tupleOrigin(t.frame.securityOrigin) && unproven.length < BUDGET.frames) unproven.push(t.frame);
    for (const c of t.childFrames ?? []) index(c);
  })(frameTree);
  await Promise.all(unproven.map(async (f) => {
    local.get(f.id).origin = await origin(f);
  }));
  const rootFrame = frameTree.frame;
  const root = { frameId: rootFrame.id, loaderId: rootFrame.loaderId, origin: rootFrame.securityOrigin };
  const sameOrigin = (o) => tupleOrigin(o) && tupleOrigin(root.origin) && o === root.origin;

  const strings = snapshot.strings ?? [];
  const docs = snapshot.documents ?? [];
  const str = (i) => (Number.isInteger(i) && i >= 0 && i < strings.length ? strings[i] : undefined);
  const rootDoc = docs.findIndex((d) => str(d.frameId) === root.frameId);
  if (rootDoc < 0) fail('STALE_TARGET'); // the main document changed between the two reads

  const frames = [];
  let truncated = false;
  const seenDocs = new Set([rootDoc]);

  // owners lists a document's frame owners: [{owner, content?}] where
  // content is the index of an in-process content document.
  function owners(docIndex) {
    const nodes = docs[docIndex].nodes ?? {};
    const names = nodes.nodeName ?? [];
    const backend = nodes.backendNodeId ?? [];
    const content = new Map();
    const cdi = nodes.contentDocumentIndex ?? { index: [], value: [] };
    cdi.index?.forEach((node, k) => content.set(node, cdi.value[k]));
    const out = [];
    names.forEach((name, i) => {
      // XML documents (XHTML, SVG) report tag names in lower case.
      if (OWNER_NAMES.has(str(name)?.toUpperCase()) || content.has(i)) out.push({ node: i, owner: backend[i], content: content.get(i) });
    });
    return out;
  }

  // Paint effects of the main document that can carry a frame's pixels
  // outside its box: filters and reflections of the owner or an ancestor,
  // and backdrop filters anywhere (over the frame).
  const styles = new Map(); // node index -> [filter, reflect, backdrop]
  const layout = docs[rootDoc].layout ?? {};
  layout.nodeIndex?.forEach((node, k) => styles.set(node, (layout.styles?.[k] ?? []).map(str)));
  const parents = docs[rootDoc].nodes?.parentIndex ?? [];
  // spill is how far (CSS px) the owner's ancestors may move its pixels.
  const spill = (node) => {
    let reach = 0;
    for (let i = node, steps = 0; i >= 0 && steps < 4096; i = parents[i] ?? -1, steps++) {
      const [filter, reflect] = styles.get(i) ?? [];
      reach += spread(filter) + (reflect && reflect !== 'none' ? Infinity : 0);
    }
    return reach;
  };
  let backdrop = 0;
  for (const [, v] of styles) backdrop = Math.max(backdrop, spread(v[2]));

  // visit adds one owner's frame and everything below it; returns whether
  // all of it is in sight and of the root's origin, and how many frames it
  // holds (frames beyond the budgets count one per owner).
  function visit({ owner, content }, parentId, depth) {
    if (frames.length >= BUDGET.frames || depth >= BUDGET.depth) {
      truncated = true;
      return { clean: false, count: 1 };
    }
    const doc = content !== undefined && !seenDocs.has(content) ? docs[content] : undefined;
    const frameId = doc ? str(doc.frameId) : undefined;
    const known = frameId !== undefined ? local.get(frameId) : undefined;
    if (!known) {
      // Its own frames, if any, are out of sight too.
      truncated = true;
      frames.push({ parentId, local: false, owner });
      return { clean: false, count: 1 };
    }
    seenDocs.add(content);
    frames.push({ frameId, parentId, loaderId: known.loaderId, origin: known.origin, local: true, owner });
    let clean = sameOrigin(known.origin);
    let count = 1;
    for (const child of owners(content)) {
      const below = visit(child, frameId, depth + 1);
      clean &&= below.clean;
      count += below.count;
    }
    return { clean, count };
  }

  const branches = owners(rootDoc).map((o) => {
    const { clean, count } = visit(o, root.frameId, 0);
    return { owner: o.owner, foreign: !clean, frames: count, spill: paint ? spill(o.node) + backdrop : undefined };
  });
  if (describe) {
    // Out-of-sight frames get their IDs from their owner elements.
    await Promise.all(frames.filter((f) => !f.local).map(async (f) => {
      const node = await send('DOM.describeNode', { backendNodeId: f.owner }).then((r) => r.node, rethrowCode);
      if (typeof node?.frameId === 'string') f.frameId = node.frameId;
    }));
  }
  return { root, frames, branches, truncated };
}

// rethrowCode keeps a decided failure (a dropped gate, a cancel) and turns a
// debugger error into undefined: the node is gone or has no box.
export function rethrowCode(e) {
  if (e instanceof CodeError) throw e;
  return undefined;
}
