// Fixed DOM functions the broker may have run on one element, in an
// isolated world (page scripts cannot redefine what they read, and nothing
// the page defined runs): a bounded read of the element's facts (dom.read),
// and the last checks right before an input. The broker decides; these
// only read, or refuse with a code.
import { CodeError, fail, orFail } from './errors.js';

const WORLD = 'dsh-broker';

// Bounds of a contenteditable editing host the broker may fill or read.
export const HOST = { nodes: 4096, units: 100_000, depth: 64 };
export const MAX_OPTIONS = 256;
const MAX_LABEL = 1000;
const MAX_VALUE = 100_000;

// Shared helpers, inlined into each function below (they run in the page,
// not here).
const HELPERS = `
  const TEXT_TYPES = ['text', 'search', 'url', 'tel', 'email', 'number', 'password'];
  const kindOf = (el) => {
    if (el.localName === 'textarea') return 'textarea';
    if (el.localName === 'input') return TEXT_TYPES.includes(String(el.type).toLowerCase()) ? 'input' : '';
    const parent = el.parentElement ?? el.getRootNode().host;
    if (el.isContentEditable && !(parent && parent.isContentEditable)) return 'host';
    return '';
  };
  // disabledOf: :disabled, or inert or aria-disabled on the element or an
  // ancestor (across shadow roots and slots) within 64 levels; complete
  // says whether the walk reached the top.
  const disabledOf = (el) => {
    let disabled = !!el.matches?.(':disabled'), node = el, depth = 0;
    for (; node && depth < ${HOST.depth}; depth++, node = node.assignedSlot || node.parentElement || node.getRootNode().host) {
      if (node.inert || node.getAttribute?.('aria-disabled') === 'true') disabled = true;
    }
    return { disabled, complete: !node };
  };
  // hostText is an editing host's text, or undefined past the bounds.
  const hostText = (el) => {
    let nodes = 0;
    const walk = el.ownerDocument.createTreeWalker(el);
    while (walk.nextNode()) if (++nodes > ${HOST.nodes}) return undefined;
    if ((el.textContent ?? '').length > ${HOST.units}) return undefined;
    let depth = 0;
    for (let n = el; n; n = n.parentElement) if (++depth > ${HOST.depth}) return undefined;
    return el.innerText.replace(/\\n$/, '');
  };
  const position = (s) => ({ x: s.scrollLeft, y: s.scrollTop, scrollWidth: s.scrollWidth,
    scrollHeight: s.scrollHeight, clientWidth: s.clientWidth, clientHeight: s.clientHeight });
  const checkedOf = (el) => {
    if (el.localName === 'input' && el.type === 'checkbox') return el.indeterminate ? 'mixed' : el.checked;
    if (el.localName === 'input' && el.type === 'radio') return el.checked;
    const role = el.getAttribute('role');
    if (!['checkbox', 'switch', 'radio'].includes(role)) return undefined;
    const v = el.getAttribute('aria-checked');
    return v === 'true' ? true : v === 'false' ? false : v === 'mixed' ? 'mixed' : undefined;
  };`;

// READ returns the facts of an element (or of a document: its scroller).
// A password's value is never read.
export const READ = `function () {
  ${HELPERS}
  if (this.nodeType === 9) {
    return { found: true, connected: true, sameDocument: this === document, document: true,
      scroll: position(this.scrollingElement || this.documentElement) };
  }
  const el = this, kind = kindOf(el), type = el.localName === 'input' ? String(el.type).toLowerCase() : '';
  const out = { found: true, connected: el.isConnected === true, sameDocument: el.ownerDocument === document,
    tag: el.localName ?? '', type, role: el.getAttribute?.('role') ?? '', editable: kind,
    password: type === 'password', readOnly: !!el.readOnly, multiline: kind === 'textarea' || kind === 'host',
    focused: el.getRootNode().activeElement === el, native: type === 'checkbox' || type === 'radio' ? type : '',
    maxLength: kind === 'input' || kind === 'textarea' ? el.maxLength : -1 };
  const { disabled, complete } = disabledOf(el);
  out.disabled = disabled;
  out.disabledKnown = complete;
  out.enabledState = ['button', 'input', 'select', 'textarea', 'option', 'optgroup', 'fieldset'].includes(el.localName) ||
    /^(button|link|textbox|combobox|checkbox|radio|switch|tab|menuitem|menuitemcheckbox|menuitemradio|slider|spinbutton|treeitem|option)$/.test(out.role);
  const checked = checkedOf(el);
  if (checked !== undefined) out.checked = checked;
  if (kind === 'host') {
    const text = hostText(el);
    out.hostBounded = text !== undefined;
    if (text !== undefined) out.value = text;
  } else if (type !== 'password' && typeof el.value === 'string' && el.value.length <= ${MAX_VALUE}) {
    out.value = el.value;
  }
  if ((kind === 'input' || kind === 'textarea') && typeof el.selectionStart === 'number') {
    out.selection = { start: el.selectionStart, end: el.selectionEnd };
  }
  if (el.isConnected) {
    const r = el.getBoundingClientRect();
    out.visible = r.width > 0 && r.height > 0 && getComputedStyle(el).visibility === 'visible';
  } else {
    out.visible = false;
  }
  out.scroll = position(el);
  if (el.localName === 'select') {
    const clip = (s) => String(s).slice(0, ${MAX_LABEL});
    const options = [...el.options];
    out.select = { multiple: el.multiple, truncated: options.length > ${MAX_OPTIONS},
      options: options.slice(0, ${MAX_OPTIONS}).map((o) => ({ label: clip(o.label), value: clip(o.value),
        selected: o.selected, disabled: o.disabled || !!o.matches(':disabled') })) };
  }
  return out;
}`;

// TEXT_GUARD is the last check before text input, after the focus: the
// element is still an editable field of the kind the broker checked,
// enabled and focused; a single-line field gets no line break; the
// result fits maxlength; for an append, the value is still the prefix the
// broker read and the caret is put, and must stay, at its end. It returns
// a code, or '' to go on.
export const TEXT_GUARD = `function (mode, text, prefix) {
  ${HELPERS}
  const el = this, kind = kindOf(el);
  if (!el.isConnected) return 'STALE_TARGET';
  if (!kind || (el.localName === 'input' && String(el.type).toLowerCase() === 'password') || el.readOnly) return 'UNSUPPORTED_CAPABILITY';
  if (disabledOf(el).disabled) return 'NOT_ACTIONABLE';
  if (kind === 'input' && /[\\r\\n]/.test(text)) return 'UNSUPPORTED_CAPABILITY';
  if (el.getRootNode().activeElement !== el) return 'NOT_ACTIONABLE';
  const value = kind === 'host' ? hostText(el) : el.value;
  if (value === undefined) return 'UNSUPPORTED_CAPABILITY';
  const max = kind === 'host' ? -1 : el.maxLength;
  if (mode === 'replace' && max >= 0 && text.length > max) return 'NOT_ACTIONABLE';
  if (mode !== 'append') return '';
  if (value !== prefix) return 'STALE_TARGET';
  if (max >= 0 && prefix.length + text.length > max) return 'NOT_ACTIONABLE';
  if (kind === 'host') {
    const sel = el.ownerDocument.getSelection(), range = el.ownerDocument.createRange();
    range.selectNodeContents(el);
    range.collapse(false);
    sel.removeAllRanges();
    sel.addRange(range);
    const end = el.ownerDocument.createRange();
    end.selectNodeContents(el);
    end.collapse(false);
    const at = sel.rangeCount === 1 ? sel.getRangeAt(0) : null;
    return at && at.collapsed && at.compareBoundaryPoints(Range.START_TO_START, end) === 0 ? '' : 'NOT_ACTIONABLE';
  }
  if (typeof el.selectionStart !== 'number') return 'UNSUPPORTED_CAPABILITY';
  el.setSelectionRange(value.length, value.length);
  return el.selectionStart === value.length && el.selectionEnd === value.length ? '' : 'NOT_ACTIONABLE';
}`;

// CHECKED_IS: the element's checked state is still want (a check's click
// must toggle the state the broker saw).
export const CHECKED_IS = `function (want) {
  ${HELPERS}
  return this.isConnected && checkedOf(this) === want ? '' : 'STALE_TARGET';
}`;

// SELECT_OPTION selects option index of a single <select> when it is still
// labelled label (and, when value is a string, has exactly that value; a
// null argument arrives through CDP as undefined),
// enabled and not selected, then fires input and change as a user's choice
// does. Nothing changes when it returns a code.
export const SELECT_OPTION = `function (index, label, value) {
  ${HELPERS}
  if (!this.isConnected) return 'STALE_TARGET';
  if (this.localName !== 'select' || this.multiple) return 'UNSUPPORTED_CAPABILITY';
  if (disabledOf(this).disabled) return 'NOT_ACTIONABLE';
  const o = this.options[index];
  if (!o || o.label.slice(0, ${MAX_LABEL}) !== label || (typeof value === 'string' && o.value !== value) || o.selected) return 'STALE_TARGET';
  if (o.disabled || o.matches(':disabled')) return 'NOT_ACTIONABLE';
  this.selectedIndex = index;
  this.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  return '';
}`;

// The walks up the composed tree below stop after this many ancestors.
const MAX_ANCESTORS = 4096;

// HIT tells how the node an input at a point would reach (this: the node
// DOM.getNodeForLocation found) relates to target: 'target' (it, or one of
// its pseudo-elements, which Chromium reports as a CSSPseudoElement whose
// originating element is .element), 'inside' (a descendant, across shadow
// roots and the slots light DOM is shown in), 'label' (inside a label whose
// control is target: the click activates it), else 'outside'. It only
// reads; the broker decides which relations are the target's.
export const HIT = `function (target) {
  let el = this;
  const pseudo = el.nodeType === undefined && el.element !== undefined;
  if (pseudo) el = el.element;
  const up = (n) => n.assignedSlot || n.parentNode || n.host;
  if (el === target) return { relation: 'target', pseudo };
  for (let n = el, i = 0; n && i < ${MAX_ANCESTORS}; n = up(n), i++) if (n === target) return { relation: 'inside', pseudo };
  for (let n = el, i = 0; n && i < ${MAX_ANCESTORS}; n = up(n), i++) {
    if (n.localName === 'label' && n.control === target) return { relation: 'label', pseudo };
  }
  return { relation: 'outside', pseudo };
}`;

// COVER returns the element to name for what covers a target at a point
// (this: the node there): the nearest of it and its composed ancestors
// (within 32) that a person would call something — with a role, a label or
// a tab stop, or a control, link, dialog or disclosure — else the element
// itself.
export const COVER = `function () {
  let el = this;
  if (el.nodeType === undefined && el.element !== undefined) el = el.element;
  if (el.nodeType !== 1) el = el.parentElement ?? el;
  const up = (n) => n.assignedSlot || n.parentNode || n.host;
  const named = (n) => n.nodeType === 1 && (['role', 'aria-label', 'aria-labelledby', 'tabindex'].some((a) => n.hasAttribute(a)) ||
    ['button', 'a', 'input', 'select', 'textarea', 'summary', 'details', 'dialog', 'label'].includes(n.localName));
  for (let n = el, i = 0; n && i < 32; n = up(n), i++) if (named(n)) return n;
  return el;
}`;

// GUARD_KEY keeps the browser from acting on the next keydown of key in
// the target's window when the page leaves its default: a listener on the
// window, after the page's own, prevents the default then (the browser's
// shortcuts act only on keys whose default nobody prevented). It removes
// itself after that key, or after 2 s.
export const GUARD_KEY = `function (key) {
  const win = this.ownerDocument.defaultView, want = key.toLowerCase();
  const onKey = (e) => {
    if (String(e.key).toLowerCase() !== want) return;
    if (!e.defaultPrevented) e.preventDefault();
    win.removeEventListener('keydown', onKey);
  };
  win.addEventListener('keydown', onKey);
  setTimeout(() => win.removeEventListener('keydown', onKey), 2000);
  return '';
}`;

// SCROLL_BY scrolls the element, or for a document its scroller, at once.
export const SCROLL_BY = `function (dx, dy) {
  const s = this.nodeType === 9 ? (this.scrollingElement || this.documentElement) : this;
  s.scrollBy({ left: dx, top: dy, behavior: 'instant' });
  return '';
}`;

// HIDDEN_IDENTITY is the identity of an element that an aria-hidden="true"
// subtree keeps out of the accessibility tree (null for any other): its
// role attribute's first token (generic without one) and its aria-label,
// else its title, whitespace collapsed, as ax.js's hiddenIdentity derives
// them from a DOM snapshot.
export const HIDDEN_IDENTITY = `function () {
  if (this.nodeType !== 1 || !this.isConnected || !this.closest('[aria-hidden="true" i]')) return null;
  const attr = (name) => (this.getAttribute(name) ?? '').replace(/\\s+/g, ' ').trim();
  return { role: attr('role').split(' ')[0].toLowerCase() || 'generic', name: attr('aria-label') || attr('title') };
}`;

// ANIMATING tells, on a document, whether an animation of a finite length
// (a CSS transition, a list sliding its items aside) is running in it,
// once the page has drawn its next frame (at most 100 ms later: a hidden
// tab draws none): what the last input starts, a page often does in its
// next frame, and a busy renderer draws it late.
export const ANIMATING = `function () {
  return new Promise((resolve) => {
    const check = () => resolve(this.getAnimations().some((a) => a.playState === 'running' && Number.isFinite(a.effect?.getComputedTiming().endTime)));
    const late = setTimeout(check, 100);
    requestAnimationFrame(() => { clearTimeout(late); check(); });
  });
}`;

// worldsOf keeps one isolated world per frame document of a gate.
export function worldsOf(gate) {
  gate.worlds ??= new Map();
  return gate.worlds;
}

// mainFrame names the gate's main document as callOn takes a frame.
export const mainFrame = (gate) => ({ frameId: gate.mainFrameId, loaderId: gate.mainLoaderId });

// callOn runs fn (one of the functions above) with arguments args on the
// node backendNodeId (or, when it is undefined, the frame's document) in
// the isolated world of the frame {frameId, loaderId}, and returns its
// value. A node that is gone is STALE_TARGET.
export async function callOn(gate, send, frame, backendNodeId, fn, args = []) {
  const worlds = worldsOf(gate);
  const key = `${frame.frameId}:${frame.loaderId}`;
  for (let attempt = 0; ; attempt++) {
    let contextId = worlds.get(key);
    if (contextId === undefined) {
      ({ executionContextId: contextId } = await orFail(send('Page.createIsolatedWorld', { frameId: frame.frameId, worldName: WORLD }), 'STALE_TARGET'));
      if (worlds.size >= 16) worlds.clear();
      worlds.set(key, contextId);
    }
    let objectId;
    try {
      // The document is evaluated in the world, not read with
      // DOM.getDocument, which would bind it to the DOM agent anew (see
      // ax.js find).
      if (backendNodeId === undefined) {
        const { result, exceptionDetails } = await send('Runtime.evaluate', { expression: 'document', contextId, objectGroup: WORLD });
        if (exceptionDetails || !result?.objectId) throw new Error('no document');
        objectId = result.objectId;
      } else {
        ({ object: { objectId } } = await send('DOM.resolveNode', { backendNodeId, executionContextId: contextId, objectGroup: WORLD }));
      }
    } catch (e) {
      if (e instanceof CodeError) throw e;
      worlds.delete(key); // the world went with its document, or the node is gone
      if (attempt === 0) continue;
      const gone = new CodeError('STALE_TARGET');
      gone.gone = true;
      throw gone;
    }
    try {
      const res = await send('Runtime.callFunctionOn', {
        objectId, functionDeclaration: fn, arguments: args.map((value) => ({ value })), returnByValue: true, awaitPromise: true,
      });
      if (res.exceptionDetails) fail('STALE_TARGET');
      return res.result?.value;
    } finally {
      send('Runtime.releaseObjectGroup', { objectGroup: WORLD }).catch(() => {});
    }
  }
}

// tupleOrigin: an HTTP(S) origin as scheme://host[:port]. CDP reports opaque
// origins as "null" or "://"; those are never equal to anything.
export const tupleOrigin = (o) => typeof o === 'string' && /^https?:\/\/[^/?#\s]+$/.test(o);

// frameOrigin is the origin of a frame's document ({id, loaderId,
// securityOrigin} of Page.getFrameTree): its securityOrigin when that is an
// HTTP(S) origin. Chromium 156 reports "://" for about:blank and
// about:srcdoc documents whatever origin they have (they inherit their
// creator's): for those, the origin the browser keeps the frame's storage
// under (Storage.getStorageKeyForFrame, answered by the browser process,
// which the page cannot touch) when that key is an origin alone (a
// first-party frame); else (a key of another top-level site or with a
// nonce, or none: an opaque origin) the origin the document itself has,
// self.origin read in an isolated world of its frame (page scripts cannot
// redefine it there) — an opaque one (a sandboxed frame's) stays what was
// reported. A document's origin is the one it was created with for as long
// as it lives (document.domain does not change it), so an HTTP(S) origin
// read once is kept with the frame's document (gate.frameOrigins, by frame
// and loader ID): the checks before and after a frame's read, and the frame
// list they follow, read it once.
export async function frameOrigin(gate, send, f) {
  if (tupleOrigin(f.securityOrigin)) return f.securityOrigin;
  const key = `${f.id}:${f.loaderId}`;
  const known = (gate.frameOrigins ??= new Map());
  if (known.has(key)) return known.get(key);
  const origin = (await keyOrigin(send, f)) ?? (await selfOrigin(gate, send, f, key));
  if (!tupleOrigin(origin)) return f.securityOrigin;
  if (known.size >= 16) known.clear();
  known.set(key, origin);
  return origin;
}

// keyOrigin is the origin of frame f's storage key when the key is that
// origin alone ("https://a.test/"), else undefined.
async function keyOrigin(send, f) {
  try {
    const { storageKey } = await send('Storage.getStorageKeyForFrame', { frameId: f.id });
    return /^(https?:\/\/[^/?#\s^]+)\/$/.exec(storageKey ?? '')?.[1];
  } catch (e) {
    if (e instanceof CodeError) throw e;
    return undefined; // an opaque origin has no key to give
  }
}

// selfOrigin reads self.origin in an isolated world of frame f's document.
async function selfOrigin(gate, send, f, key) {
  const worlds = worldsOf(gate);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      let contextId = worlds.get(key);
      if (contextId === undefined) {
        ({ executionContextId: contextId } = await send('Page.createIsolatedWorld', { frameId: f.id, worldName: WORLD }));
        if (worlds.size >= 16) worlds.clear();
        worlds.set(key, contextId);
      }
      const { result } = await send('Runtime.evaluate', { expression: 'self.origin', contextId, returnByValue: true });
      return result?.value;
    } catch (e) {
      if (e instanceof CodeError) throw e;
      worlds.delete(key); // the world went with its document
    }
  }
  return undefined;
}

// read answers dom.read: the facts of the node, or {found:false} when its
// backend ID resolves to nothing in a fresh world (it no longer exists).
export async function read(gate, send, frame, backendNodeId) {
  try {
    return await callOn(gate, send, frame, backendNodeId, READ);
  } catch (e) {
    if (e.gone && backendNodeId !== undefined) return { found: false };
    throw e;
  }
}
