// The fenced input seam: every check runs right before dispatch, and nothing
// is dispatched when one fails.
import { CodeError, fail, isObject, orFail } from './errors.js';
import { LIMITS, NAMED_KEYS } from './protocol.js';
import { callOn, mainFrame, CHECKED_IS, SCROLL_BY, SELECT_OPTION, TEXT_GUARD } from './dom.js';

const MAX_TEXT = LIMITS.MAX_ACTION_TEXT;
const CTRL = 2;
const SHIFT = 8;

// The named keys the broker may press, as CDP key events need them.
export const namedKeys = new Map(Object.entries({
  Enter: { key: 'Enter', code: 'Enter', keyCode: 13, text: '\r' },
  Tab: { key: 'Tab', code: 'Tab', keyCode: 9 },
  Escape: { key: 'Escape', code: 'Escape', keyCode: 27 },
  Space: { key: ' ', code: 'Space', keyCode: 32, text: ' ' },
  ArrowUp: { key: 'ArrowUp', code: 'ArrowUp', keyCode: 38 },
  ArrowDown: { key: 'ArrowDown', code: 'ArrowDown', keyCode: 40 },
  ArrowLeft: { key: 'ArrowLeft', code: 'ArrowLeft', keyCode: 37 },
  ArrowRight: { key: 'ArrowRight', code: 'ArrowRight', keyCode: 39 },
  Home: { key: 'Home', code: 'Home', keyCode: 36 },
  End: { key: 'End', code: 'End', keyCode: 35 },
  PageUp: { key: 'PageUp', code: 'PageUp', keyCode: 33 },
  PageDown: { key: 'PageDown', code: 'PageDown', keyCode: 34 },
  Backspace: { key: 'Backspace', code: 'Backspace', keyCode: 8 },
  Delete: { key: 'Delete', code: 'Delete', keyCode: 46 },
}));
// The broker's list (protocol.js, generated from Go) and this table must
// name the same keys: fail loudly at load, not at the first press.
if (NAMED_KEYS.length !== namedKeys.size || !NAMED_KEYS.every((k) => namedKeys.has(k))) {
  throw new Error('input: the key table differs from NAMED_KEYS in protocol.js');
}
const selectAllKey = { key: 'a', code: 'KeyA', keyCode: 65 };

// keyPair is one keyDown/keyUp pair. Keys that type text send keyDown with
// the text; the others send rawKeyDown, as a real keyboard does.
export function keyPair({ key, code, keyCode, text }, modifiers = 0, commands) {
  const base = { key, code, windowsVirtualKeyCode: keyCode, nativeVirtualKeyCode: keyCode, modifiers };
  const down = text ? { ...base, type: 'keyDown', text, unmodifiedText: text } : { ...base, type: 'rawKeyDown' };
  if (commands) down.commands = commands;
  return [down, { ...base, type: 'keyUp' }].map((p) => ['Input.dispatchKeyEvent', p]);
}

const codePoints = (s) => [...s].length;

export function checkRequest(kind, r) {
  if (!validRequest(kind, r)) fail('INVALID_REQUEST');
}

const validFrame = (f) => isObject(f) && typeof f.frameId === 'string' && f.frameId !== '' &&
  typeof f.loaderId === 'string' && f.loaderId !== '' && Object.keys(f).length === 2;

const validTarget = (t) => isObject(t) && Number.isInteger(t.backendNodeId) && t.backendNodeId > 0 &&
  typeof t.role === 'string' && typeof t.name === 'string';
const validDelta = (d) => Number.isInteger(d) && Math.abs(d) <= LIMITS.MAX_SCROLL_DELTA;
const validDeltas = (r) => validDelta(r.deltaX) && validDelta(r.deltaY) && (r.deltaX !== 0 || r.deltaY !== 0);

// The fields of each kind's request besides documentEpoch, target and frame.
const FIELDS = {
  click: ['x', 'y', 'expectChecked'],
  wheel: ['x', 'y', 'deltaX', 'deltaY'],
  text: ['text', 'mode', 'prefix'],
  key: ['key', 'shift'],
  scroll: ['deltaX', 'deltaY'],
  select: ['option'],
};

function validRequest(kind, r) {
  if (!isObject(r) || typeof r.documentEpoch !== 'string') return false;
  // Every kind names its target but a scroll of the document.
  if (r.target === undefined ? kind !== 'scroll' : !validTarget(r.target)) return false;
  if (r.frame !== undefined && (!validFrame(r.frame) || kind === 'scroll' || kind === 'select' || kind === 'wheel')) return false;
  if (Object.keys(r).some((k) => !['documentEpoch', 'target', 'frame', ...FIELDS[kind]].includes(k))) return false;
  switch (kind) {
    case 'click':
      return Number.isFinite(r.x) && Number.isFinite(r.y) &&
        (r.expectChecked === undefined || typeof r.expectChecked === 'boolean' || r.expectChecked === 'mixed');
    case 'wheel':
      return Number.isFinite(r.x) && Number.isFinite(r.y) && validDeltas(r);
    case 'text':
      return typeof r.text === 'string' && codePoints(r.text) <= MAX_TEXT && ['replace', 'insert', 'append'].includes(r.mode) &&
        (r.mode === 'append' ? typeof r.prefix === 'string' && r.prefix.length <= MAX_TEXT : r.prefix === undefined);
    case 'key':
      return namedKeys.has(r.key) && (r.shift === undefined || typeof r.shift === 'boolean');
    case 'scroll':
      return validDeltas(r);
    case 'select':
      return isObject(r.option) && Object.keys(r.option).length === 2 && Number.isInteger(r.option.index) &&
        r.option.index >= 0 && typeof r.option.label === 'string' && r.option.label.length <= LIMITS.MAX_NAME_LENGTH;
  }
  return false;
}

// events lists the CDP calls that make up one input, in order. A call that
// is a function instead runs in the page's isolated world on the target.
function events(kind, r) {
  switch (kind) {
    case 'click': {
      const at = { x: r.x, y: r.y, button: 'left', clickCount: 1 };
      return [
        ['Input.dispatchMouseEvent', { ...at, type: 'mousePressed', buttons: 1 }],
        ['Input.dispatchMouseEvent', { ...at, type: 'mouseReleased', buttons: 0 }],
      ];
    }
    case 'wheel':
      return [['Input.dispatchMouseEvent', { type: 'mouseWheel', x: r.x, y: r.y, deltaX: r.deltaX, deltaY: r.deltaY }]];
    case 'text': {
      const steps = [];
      if (r.mode === 'replace') steps.push(...keyPair(selectAllKey, CTRL, ['selectAll']));
      // append: TEXT_GUARD put the caret at the end.
      if (r.mode === 'replace' && r.text === '') steps.push(...keyPair(namedKeys.get('Backspace')));
      else if (r.text !== '') steps.push(['Input.insertText', { text: r.text }]);
      return steps;
    }
    case 'key':
      return keyPair(namedKeys.get(r.key), r.shift ? SHIFT : 0);
    case 'scroll':
      return [[SCROLL_BY, [r.deltaX, r.deltaY]]];
    case 'select':
      return [[SELECT_OPTION, [r.option.index, r.option.label]]];
  }
}

// Whether the hit node is the target or inside it, across shadow roots.
const INSIDE = 'function (target) { for (let n = this; n; n = n.parentNode || n.host) if (n === target) return true; return false; }';

async function hitTest(gate, send, backendNodeId, x, y) {
  // (x, y) is in viewport CSS pixels, but DOM.getNodeForLocation takes
  // document coordinates (Chromium 156): add the scroll offset.
  const { cssVisualViewport: view } = await orFail(send('Page.getLayoutMetrics', {}), 'NOT_ACTIONABLE');
  const at = { x: Math.floor(view.pageX + x), y: Math.floor(view.pageY + y), includeUserAgentShadowDOM: true };
  const hit = await orFail(send('DOM.getNodeForLocation', at), 'NOT_ACTIONABLE');
  if (hit.backendNodeId === backendNodeId) return;
  // Ancestry is decided in an isolated world, where page scripts cannot
  // redefine parentNode to hide an overlay.
  const objectGroup = 'dsh-hit-test';
  try {
    const { executionContextId } = await send('Page.createIsolatedWorld', { frameId: hit.frameId ?? gate.mainFrameId, worldName: objectGroup });
    const resolve = async (id) => (await send('DOM.resolveNode', { backendNodeId: id, executionContextId, objectGroup })).object.objectId;
    const hitObject = await resolve(hit.backendNodeId);
    const targetObject = await resolve(backendNodeId);
    const { result } = await send('Runtime.callFunctionOn', {
      objectId: hitObject, functionDeclaration: INSIDE, arguments: [{ objectId: targetObject }], returnByValue: true,
    });
    if (result.value !== true) fail('NOT_ACTIONABLE');
  } catch (e) {
    if (e instanceof CodeError) throw e;
    fail('NOT_ACTIONABLE'); // the hit node is in another frame, or went away
  } finally {
    send('Runtime.releaseObjectGroup', { objectGroup }).catch(() => {});
  }
}

// dispatch runs the checks of PROVIDER.md "Input" in order, then the events.
// The gate itself is checked by send() before every call. current() returns
// the epoch of the document the target is in now (the main document's, or
// the child frame's after its origin checks), before and after the checks.
export async function dispatch(kind, gate, send, r, current = async () => gate.epoch) {
  const t = r.target;
  const frame = r.frame ?? mainFrame(gate);
  const guard = async (fn, args) => {
    const code = await callOn(gate, send, frame, t?.backendNodeId, fn, args);
    if (code !== '') fail(typeof code === 'string' ? code : 'STALE_TARGET');
  };
  if (r.documentEpoch !== (await current())) fail('STALE_TARGET');
  if (t) {
    const { nodes } = await orFail(send('Accessibility.getPartialAXTree', { backendNodeId: t.backendNodeId, fetchRelatives: false }), 'STALE_TARGET');
    const n = nodes?.find((x) => x.backendDOMNodeId === t.backendNodeId);
    if (!n || n.ignored || String(n.role?.value ?? '') !== t.role || String(n.name?.value ?? '') !== t.name) fail('STALE_TARGET');
  }
  switch (kind) {
    case 'click':
    case 'wheel':
      await hitTest(gate, send, t.backendNodeId, r.x, r.y);
      if (r.expectChecked !== undefined) await guard(CHECKED_IS, [r.expectChecked]);
      break;
    case 'text':
      await orFail(send('DOM.focus', { backendNodeId: t.backendNodeId }), 'NOT_ACTIONABLE');
      await guard(TEXT_GUARD, [r.mode, r.text, r.prefix ?? '']);
      break;
    case 'key':
      await orFail(send('DOM.focus', { backendNodeId: t.backendNodeId }), 'NOT_ACTIONABLE');
      break;
  }
  if (r.documentEpoch !== (await current())) fail('STALE_TARGET'); // navigated while we checked

  let sent = 0;
  try {
    for (const [step, params] of events(kind, r)) {
      if (step.startsWith('function')) {
        // A fixed function on the target: a code means it changed nothing.
        const code = await callOn(gate, send, frame, t?.backendNodeId, step, params);
        if (code !== '') fail(sent === 0 && typeof code === 'string' ? code : 'INTERNAL_ERROR');
      } else {
        await send(step, params);
      }
      sent++;
    }
  } catch (e) {
    if (sent === 0 && e instanceof CodeError) throw e;
    fail('INTERNAL_ERROR'); // part of the input may have happened: the outcome is unknown
  }
  return { dispatched: true };
}
