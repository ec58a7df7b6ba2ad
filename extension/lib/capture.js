// Screenshots of the leased tab's visual viewport with every visible frame
// branch that is not provably of the main document's origin painted black
// here, before the image leaves the browser. Anything this cannot establish
// — the topology, a box, a steady page — fails the capture; it never sends
// an image it could not redact.
import { CodeError, fail } from './errors.js';
import { topology, rethrowCode } from './frames.js';
import { LIMITS } from './protocol.js';

export const MAX_DATA = LIMITS.MAX_SCREENSHOT_DATA; // base64 characters
const MAX_WIDTH = 1200; // CSS pixels: wider viewports are scaled down
const QUALITY = 0.7;
const ATTEMPTS = 3;
const RETRY_MS = 60;
// A screenshot of a tab that stops being shown never answers; give up well
// before the broker's 10 s deadline.
const SHOT_TIMEOUT_MS = 5000;
export const MAX_BRANCHES = 256; // frame owners in the main document

// capture takes one screenshot. send is the gated debugger seam; encode(png,
// size, rects, quality) draws the PNG at size, paints rects black and returns
// base64 JPEG (image.js). The scene (topology, viewport, boxes of foreign
// branches) is read before and after the screenshot and must not change in
// between; a page that keeps changing fails STALE_TARGET after three tries.
// origin proves a frame document's origin (topology).
export async function capture(send, encode, { now, timers, origin }) {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (attempt > 0) await new Promise((resolve) => timers.setTimeout(resolve, RETRY_MS));
    const before = await scene(send, origin);
    const vp = before.viewport;
    const scale = Math.min(1, MAX_WIDTH / vp.width);
    const shot = await within(timers, SHOT_TIMEOUT_MS, 'NOT_ACTIONABLE', send('Page.captureScreenshot', {
      format: 'png',
      clip: { x: vp.pageX, y: vp.pageY, width: vp.width, height: vp.height, scale },
      captureBeyondViewport: false,
    }));
    const capturedAt = now();
    const after = await scene(send, origin);
    if (JSON.stringify(after) !== JSON.stringify(before)) continue;

    const size = { width: Math.max(1, Math.round(vp.width * scale)), height: Math.max(1, Math.round(vp.height * scale)) };
    const rects = [];
    let frames = 0;
    before.foreign.forEach(({ box, count }) => {
      const r = box && imageRect(box, scale, size);
      if (!r) return;
      rects.push(r);
      frames += count;
    });
    const data = await encode(shot.data, size, rects, QUALITY);
    if (typeof data !== 'string' || data.length > MAX_DATA) fail('QUEUE_FULL');
    return {
      documentEpoch: before.documentEpoch,
      capturedAt,
      mimeType: 'image/jpeg',
      data,
      viewport: vp,
      redaction: { policy: 'cross-origin-frames', frames, regions: rects.length },
    };
  }
  fail('STALE_TARGET');
}

// scene is what the image depends on besides pixels.
async function scene(send, origin) {
  const topo = await topology(send, { origin });
  if (topo.branches.length > MAX_BRANCHES) fail('UNSUPPORTED_CAPABILITY'); // too many boxes to read one by one
  const { cssVisualViewport: v } = await send('Page.getLayoutMetrics', {});
  // Under pinch zoom the boxes and the clip would not agree; refuse rather
  // than guess.
  if (v.scale !== 1 || !(v.clientWidth > 0) || !(v.clientHeight > 0)) fail('UNSUPPORTED_CAPABILITY');
  const foreign = [];
  for (const b of topo.branches) {
    if (!b.foreign) continue;
    // A filter or reflection that can carry the frame's pixels anywhere
    // cannot be painted over.
    if (!Number.isFinite(b.spill)) fail('UNSUPPORTED_CAPABILITY');
    foreign.push({ owner: b.owner, count: b.frames, box: grow(await box(send, b.owner), b.spill) });
  }
  return {
    documentEpoch: `${topo.root.frameId}:${topo.root.loaderId}`,
    branches: topo.branches.map((b) => [b.owner, b.foreign, b.frames]),
    viewport: { width: v.clientWidth, height: v.clientHeight, pageX: v.pageX, pageY: v.pageY },
    foreign,
  };
}

// box is an owner's border box in viewport CSS pixels, or null when it has
// none (it is not rendered).
async function box(send, backendNodeId) {
  const res = await send('DOM.getBoxModel', { backendNodeId }).catch(rethrowCode);
  const q = res?.model?.border;
  if (!Array.isArray(q) || q.length !== 8 || !q.every(Number.isFinite)) return null;
  const xs = [q[0], q[2], q[4], q[6]];
  const ys = [q[1], q[3], q[5], q[7]];
  return { x0: Math.min(...xs), y0: Math.min(...ys), x1: Math.max(...xs), y1: Math.max(...ys) };
}

// grow widens a box by d on every side.
const grow = (b, d) => b && (d > 0 ? { x0: b.x0 - d, y0: b.y0 - d, x1: b.x1 + d, y1: b.y1 + d } : b);

// imageRect maps a viewport box to image pixels, grown by a pixel each way
// against scaling and JPEG bleed, clipped to the image; null when nothing of
// it is visible.
export function imageRect(b, scale, size) {
  const x0 = Math.max(0, Math.floor(b.x0 * scale) - 1);
  const y0 = Math.max(0, Math.floor(b.y0 * scale) - 1);
  const x1 = Math.min(size.width, Math.ceil(b.x1 * scale) + 1);
  const y1 = Math.min(size.height, Math.ceil(b.y1 * scale) + 1);
  if (x1 <= x0 || y1 <= y0 || b.x1 <= b.x0 || b.y1 <= b.y0) return null;
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

// within settles as promise does, or fails code after ms.
function within(timers, ms, code, promise) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = timers.setTimeout(() => reject(new CodeError(code)), ms);
  });
  return Promise.race([promise, expired]).finally(() => timers.clearTimeout(timer));
}
