// The fenced input seam: every check runs right before dispatch, and nothing
// is dispatched when one fails.
import { CodeError, fail, isObject, orFail } from './errors.js';
import { LIMITS, MODIFIERS, NAMED_KEYS } from './protocol.js';
import { callOn, mainFrame, ANIMATING, CHECKED_IS, COVER, GUARD_KEY, HIDDEN_IDENTITY, HIT, SCROLL_BY, SELECT_OPTION, TEXT_GUARD } from './dom.js';

const MAX_TEXT = LIMITS.MAX_ACTION_TEXT;
const CTRL = 2;
const SHIFT = 8;

// The modifier keys of a chord, as CDP key events need them, with their
// bit in the events' modifiers.
const modifierKeys = {
  Alt: { key: 'Alt', code: 'AltLeft', keyCode: 18, bit: 1 },
  Control: { key: 'Control', code: 'ControlLeft', keyCode: 17, bit: 2 },
  Meta: { key: 'Meta', code: 'MetaLeft', keyCode: 91, bit: 4 },
  Shift: { key: 'Shift', code: 'ShiftLeft', keyCode: 16, bit: 8 },
};
if (MODIFIERS.length !== 4 || !MODIFIERS.every((m) => m in modifierKeys)) {
  throw new Error('input: the modifier table differs from MODIFIERS in protocol.js');
}

// The keys of a US keyboard that type punctuation, by character: their
// code and virtual key code (unshifted and shifted characters share a key).
const punctuation = new Map();
for (const [chars, code, keyCode] of [
  [';:', 'Semicolon', 186], ['=+', 'Equal', 187], [',<', 'Comma', 188], ['-_', 'Minus', 189], ['.>', 'Period', 190],
  ['/?', 'Slash', 191], ['`~', 'Backquote', 192], ['[{', 'BracketLeft', 219], ['\\|', 'Backslash', 220],
  [']}', 'BracketRight', 221], ["'\"", 'Quote', 222],
  [')', 'Digit0', 48], ['!', 'Digit1', 49], ['@', 'Digit2', 50], ['#', 'Digit3', 51], ['$', 'Digit4', 52],
  ['%', 'Digit5', 53], ['^', 'Digit6', 54], ['&', 'Digit7', 55], ['*', 'Digit8', 56], ['(', 'Digit9', 57],
]) for (const c of chars) punctuation.set(c, { code, keyCode });

// characterKey is the key event of one character: a letter or digit names
// its key, punctuation its US key; any other character only its text.
// With Shift a letter is its capital, as a keyboard types it.
export function characterKey(ch, shift) {
  const key = shift && /^[a-z]$/.test(ch) ? ch.toUpperCase() : ch;
  if (/^[a-z]$/i.test(key)) return { key, code: `Key${key.toUpperCase()}`, keyCode: key.toUpperCase().charCodeAt(0), text: key };
  if (/^[0-9]$/.test(key)) return { key, code: `Digit${key}`, keyCode: key.charCodeAt(0), text: key };
  const p = punctuation.get(key);
  return { key, code: p?.code ?? '', keyCode: p?.keyCode ?? 0, text: key };
}

// chordEvents presses key with the modifiers held: each modifier goes down
// in MODIFIERS' order, the key down and up, the modifiers up in reverse. The
// key types its text only with no modifier but Shift.
function chordEvents(key, modifiers) {
  const mods = MODIFIERS.filter((m) => modifiers.includes(m));
  const steps = [];
  let mask = 0;
  const modifierEvent = (m, type) => ['Input.dispatchKeyEvent', {
    type, key: modifierKeys[m].key, code: modifierKeys[m].code, windowsVirtualKeyCode: modifierKeys[m].keyCode,
    nativeVirtualKeyCode: modifierKeys[m].keyCode, modifiers: mask,
  }];
  for (const m of mods) {
    mask |= modifierKeys[m].bit;
    steps.push(modifierEvent(m, 'rawKeyDown'));
  }
  const k = namedKeys.get(key) ?? characterKey(key, (mask & SHIFT) !== 0);
  const types = (mask & ~SHIFT) === 0;
  steps.push(...keyPair(types ? k : { ...k, text: undefined }, mask));
  for (const m of mods.reverse()) {
    mask &= ~modifierKeys[m].bit;
    steps.push(modifierEvent(m, 'keyUp'));
  }
  return steps;
}

// Pointer inputs: a drag moves in this many steps from its start to its end.
const DRAG_STEPS = 10;
// At its end a drag holds, as a hand does, while the page's animations of a
// finite length run (a sortable list sliding its items aside, which ignores
// the pointer meanwhile), looking every SETTLE_POLL_MS; then it moves there
// once more, so that such a page sees where it ends, holds again while
// that move's effects run, and releases. Both holds last DRAG_SETTLE_MS at
// most together.
const DRAG_SETTLE_MS = 1000;
const SETTLE_POLL_MS = 16;
const SETTLE = 'settle';
// What the point of a pointer input may hit when the broker sends no accept
// list: the target or something inside it.
const DEFAULT_ACCEPT = ['target', 'inside'];
const RELATIONS = ['target', 'inside', 'label'];

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
const validPoint = (x, y) => Number.isFinite(x) && Number.isFinite(y);
const validAccept = (a) => a === undefined ||
  (Array.isArray(a) && a.length >= 1 && a.every((v, i) => RELATIONS.includes(v) && a.indexOf(v) === i));
// A chord's key: named, or one character (one UTF-16 unit) that is
// neither a control character nor white space (those are named keys).
const validChordKey = (key, modifiers) => namedKeys.has(key) ? modifiers.length >= 1 :
  typeof key === 'string' && key.length === 1 && /^[^\p{Cc}\p{Z}]$/u.test(key);
const validModifiers = (m) => Array.isArray(m) && m.length <= MODIFIERS.length &&
  m.every((v, i) => MODIFIERS.includes(v) && m.indexOf(v) === i);

// The fields of each kind's request besides documentEpoch, target and frame.
const FIELDS = {
  click: ['x', 'y', 'expectChecked', 'accept', 'count'],
  wheel: ['x', 'y', 'deltaX', 'deltaY', 'accept'],
  hover: ['x', 'y', 'accept'],
  drag: ['x', 'y', 'toX', 'toY', 'to', 'accept'],
  text: ['text', 'mode', 'prefix'],
  key: ['key', 'shift', 'modifiers', 'guard'],
  scroll: ['deltaX', 'deltaY'],
  select: ['option'],
};

function validRequest(kind, r) {
  if (!isObject(r) || typeof r.documentEpoch !== 'string') return false;
  // Every kind names its target but a scroll of the document.
  if (r.target === undefined ? kind !== 'scroll' : !validTarget(r.target)) return false;
  if (r.frame !== undefined && (!validFrame(r.frame) || kind === 'scroll' || kind === 'select' || kind === 'wheel')) return false;
  if (Object.keys(r).some((k) => !['documentEpoch', 'target', 'frame', ...FIELDS[kind]].includes(k))) return false;
  if (!validAccept(r.accept)) return false;
  switch (kind) {
    case 'click':
      return validPoint(r.x, r.y) && (r.count === undefined || r.count === 2) &&
        (r.expectChecked === undefined || typeof r.expectChecked === 'boolean' || r.expectChecked === 'mixed');
    case 'wheel':
      return validPoint(r.x, r.y) && validDeltas(r);
    case 'hover':
      return validPoint(r.x, r.y);
    case 'drag':
      return validPoint(r.x, r.y) && validPoint(r.toX, r.toY) && (r.to === undefined || validTarget(r.to));
    case 'text':
      return typeof r.text === 'string' && codePoints(r.text) <= MAX_TEXT && ['replace', 'insert', 'append'].includes(r.mode) &&
        (r.mode === 'append' ? typeof r.prefix === 'string' && r.prefix.length <= MAX_TEXT : r.prefix === undefined);
    case 'key':
      if (r.modifiers === undefined) return namedKeys.has(r.key) && (r.shift === undefined || typeof r.shift === 'boolean') && r.guard === undefined;
      return r.shift === undefined && validModifiers(r.modifiers) && validChordKey(r.key, r.modifiers) &&
        (r.guard === undefined || typeof r.guard === 'boolean');
    case 'scroll':
      return validDeltas(r);
    case 'select': {
      const o = r.option;
      return isObject(o) && Object.keys(o).every((k) => ['index', 'label', 'value'].includes(k)) && Number.isInteger(o.index) &&
        o.index >= 0 && typeof o.label === 'string' && o.label.length <= LIMITS.MAX_NAME_LENGTH &&
        (o.value === undefined || (typeof o.value === 'string' && o.value.length <= LIMITS.MAX_OPTION_VALUE));
    }
  }
  return false;
}

// events lists the CDP calls that make up one input, in order. A call that
// is a function instead runs in the page's isolated world on the target.
function events(kind, r) {
  const mouse = (type, x, y, extra) => ['Input.dispatchMouseEvent', { type, x, y, ...extra }];
  const move = (x, y, buttons = 0) => mouse('mouseMoved', x, y, { button: buttons ? 'left' : 'none', buttons });
  const press = (x, y, clickCount) => mouse('mousePressed', x, y, { button: 'left', buttons: 1, clickCount });
  const release = (x, y, clickCount) => mouse('mouseReleased', x, y, { button: 'left', buttons: 0, clickCount });
  switch (kind) {
    case 'click': {
      // The pointer comes to the point first, as a person's does; a
      // double-click is two press/release pairs, counting 1 then 2.
      const steps = [move(r.x, r.y), press(r.x, r.y, 1), release(r.x, r.y, 1)];
      if (r.count === 2) steps.push(press(r.x, r.y, 2), release(r.x, r.y, 2));
      return steps;
    }
    case 'hover':
      return [move(r.x, r.y)];
    case 'drag': {
      const steps = [move(r.x, r.y), press(r.x, r.y, 1)];
      for (let i = 1; i <= DRAG_STEPS; i++) {
        steps.push(move(r.x + ((r.toX - r.x) * i) / DRAG_STEPS, r.y + ((r.toY - r.y) * i) / DRAG_STEPS, 1));
      }
      steps.push([SETTLE], move(r.toX, r.toY, 1), [SETTLE], release(r.toX, r.toY, 1));
      return steps;
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
      if (r.modifiers !== undefined) return chordEvents(r.key, r.modifiers);
      return keyPair(namedKeys.get(r.key), r.shift ? SHIFT : 0);
    case 'scroll':
      return [[SCROLL_BY, [r.deltaX, r.deltaY]]];
    case 'select':
      return [[SELECT_OPTION, [r.option.index, r.option.label, r.option.value ?? null]]];
  }
}

// settle waits, until the time until at most, until no animation of a
// finite length runs in the frame's document; one it cannot ask about ends
// the wait.
async function settle(gate, send, frame, { now, timers }, until) {
  try {
    while (now() < until && (await callOn(gate, send, frame, undefined, ANIMATING)) === true) {
      await new Promise((resolve) => timers.setTimeout(resolve, SETTLE_POLL_MS));
    }
  } catch (e) {
    if (e instanceof CodeError && e.code !== 'STALE_TARGET') throw e; // the gate, or a cancel
  }
}

// hitFacts answers dom.hit: what an input at (x, y), viewport CSS pixels,
// would reach, relative to the element backendNodeId — {relation, pseudo}
// (HIT's facts), and for an outside one with describe, cover:{frameId,
// tag, backendNodeId?}, the element COVER names (not described when the
// hit is in another frame than the target: only its frame is said).
// Relations are decided in an isolated world, where page scripts cannot
// redefine parentNode to hide an overlay. A hit node that goes away is
// NOT_ACTIONABLE.
export async function hitFacts(gate, send, backendNodeId, x, y, describe = false) {
  // (x, y) is in viewport CSS pixels, but DOM.getNodeForLocation takes
  // document coordinates (Chromium 156): add the scroll offset.
  const { cssVisualViewport: view } = await orFail(send('Page.getLayoutMetrics', {}), 'NOT_ACTIONABLE');
  const at = { x: Math.floor(view.pageX + x), y: Math.floor(view.pageY + y), includeUserAgentShadowDOM: true };
  const hit = await orFail(send('DOM.getNodeForLocation', at), 'NOT_ACTIONABLE');
  if (hit.backendNodeId === backendNodeId) return { relation: 'target', pseudo: false };
  const frameId = hit.frameId ?? gate.mainFrameId;
  const objectGroup = 'dsh-hit-test';
  try {
    const { executionContextId } = await send('Page.createIsolatedWorld', { frameId, worldName: objectGroup });
    const resolve = async (id) => (await send('DOM.resolveNode', { backendNodeId: id, executionContextId, objectGroup })).object.objectId;
    const hitObject = await resolve(hit.backendNodeId);
    // The target is not a node of the hit's frame when something of
    // another frame is over it (or it is in a frame under the point).
    const targetObject = await resolve(backendNodeId).catch((e) => {
      if (e instanceof CodeError) throw e;
      return undefined;
    });
    if (targetObject === undefined) return { relation: 'outside', pseudo: false, ...(describe ? { cover: { frameId, tag: '' } } : {}) };
    const { result } = await send('Runtime.callFunctionOn', {
      objectId: hitObject, functionDeclaration: HIT, arguments: [{ objectId: targetObject }], returnByValue: true,
    });
    const facts = { relation: String(result?.value?.relation ?? 'outside'), pseudo: result?.value?.pseudo === true };
    if (!RELATIONS.includes(facts.relation)) facts.relation = 'outside';
    if (facts.relation !== 'outside' || !describe) return facts;
    const { result: cover } = await send('Runtime.callFunctionOn', { objectId: hitObject, functionDeclaration: COVER, objectGroup });
    const { node } = await send('DOM.describeNode', { objectId: cover.objectId });
    return { ...facts, cover: { frameId, tag: String(node.localName || node.nodeName || '').toLowerCase(), backendNodeId: node.backendNodeId } };
  } catch (e) {
    if (e instanceof CodeError) throw e;
    fail('NOT_ACTIONABLE'); // the hit node went away
  } finally {
    send('Runtime.releaseObjectGroup', { objectGroup }).catch(() => {});
  }
}

// hitTest requires an input at (x, y) to reach the target the way the
// broker accepted (accept: dom.hit relations), else NOT_ACTIONABLE.
async function hitTest(gate, send, backendNodeId, x, y, accept = DEFAULT_ACCEPT) {
  const { relation } = await hitFacts(gate, send, backendNodeId, x, y);
  if (!accept.includes(relation)) fail('NOT_ACTIONABLE');
}

// sameIdentity checks a target's role and name against the accessibility
// tree right before an input, else STALE_TARGET. An element that an
// aria-hidden subtree keeps out of the tree (the read added it for a
// person sees it: ax.js clickables) is checked against its identity in
// the DOM (HIDDEN_IDENTITY) instead.
async function sameIdentity(gate, send, frame, t) {
  const { nodes } = await orFail(send('Accessibility.getPartialAXTree', { backendNodeId: t.backendNodeId, fetchRelatives: false }), 'STALE_TARGET');
  const n = nodes?.find((x) => x.backendDOMNodeId === t.backendNodeId);
  if (n && !n.ignored) {
    if (String(n.role?.value ?? '') !== t.role || String(n.name?.value ?? '') !== t.name) fail('STALE_TARGET');
    return;
  }
  const dom = await callOn(gate, send, frame, t.backendNodeId, HIDDEN_IDENTITY);
  if (dom?.role !== t.role || dom?.name !== t.name) fail('STALE_TARGET');
}

// dispatch runs the checks of PROVIDER.md "Input" in order, then the events.
// The gate itself is checked by send() before every call. current() returns
// the epoch of the document the target is in now (the main document's, or
// the child frame's after its origin checks), before and after the checks.
// clock ({now, timers}) times a drag's hold at its end.
export async function dispatch(kind, gate, send, r, current = async () => gate.epoch, clock = { now: Date.now, timers: globalThis }) {
  const t = r.target;
  const frame = r.frame ?? mainFrame(gate);
  const guard = async (fn, args) => {
    const code = await callOn(gate, send, frame, t?.backendNodeId, fn, args);
    if (code !== '') fail(typeof code === 'string' ? code : 'STALE_TARGET');
  };
  if (r.documentEpoch !== (await current())) fail('STALE_TARGET');
  if (t) await sameIdentity(gate, send, frame, t);
  if (r.to) await sameIdentity(gate, send, frame, r.to);
  switch (kind) {
    case 'click':
    case 'wheel':
    case 'hover':
    case 'drag':
      await hitTest(gate, send, t.backendNodeId, r.x, r.y, r.accept);
      if (r.to) await hitTest(gate, send, r.to.backendNodeId, r.toX, r.toY, r.accept);
      if (r.expectChecked !== undefined) await guard(CHECKED_IS, [r.expectChecked]);
      break;
    case 'text':
      await orFail(send('DOM.focus', { backendNodeId: t.backendNodeId }), 'NOT_ACTIONABLE');
      await guard(TEXT_GUARD, [r.mode, r.text, r.prefix ?? '']);
      break;
    case 'key':
      await orFail(send('DOM.focus', { backendNodeId: t.backendNodeId }), 'NOT_ACTIONABLE');
      // The browser acts on some chords unless the page prevents their
      // default: the broker asks for a guard that prevents it then.
      if (r.guard) await guard(GUARD_KEY, [namedKeys.get(r.key)?.key ?? characterKey(r.key, r.modifiers.includes('Shift')).key]);
      break;
  }
  if (r.documentEpoch !== (await current())) fail('STALE_TARGET'); // navigated while we checked

  let sent = 0;
  let until; // the end of a drag's holds: DRAG_SETTLE_MS after the first
  try {
    for (const [step, params] of events(kind, r)) {
      if (step === SETTLE) {
        until ??= clock.now() + DRAG_SETTLE_MS;
        await settle(gate, send, frame, clock, until);
      } else if (step.startsWith('function')) {
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
