// The named-key table and the fenced input dispatch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { namedKeys, keyPair, characterKey } from '../lib/input.js';
import { setup } from './fake-chrome.mjs';

test('the named-key table has exactly the keys of the contract', () => {
  assert.deepEqual([...namedKeys.keys()], ['Enter', 'Tab', 'Escape', 'Space', 'ArrowUp', 'ArrowDown', 'ArrowLeft',
    'ArrowRight', 'Home', 'End', 'PageUp', 'PageDown', 'Backspace', 'Delete']);
  assert.deepEqual(Object.fromEntries([...namedKeys].map(([k, v]) => [k, v.keyCode])), {
    Enter: 13, Tab: 9, Escape: 27, Space: 32, ArrowUp: 38, ArrowDown: 40, ArrowLeft: 37, ArrowRight: 39,
    Home: 36, End: 35, PageUp: 33, PageDown: 34, Backspace: 8, Delete: 46,
  });
});

test('text keys send keyDown with text, the others rawKeyDown; Shift is modifier 8', () => {
  assert.deepEqual(keyPair(namedKeys.get('Enter')), [
    ['Input.dispatchKeyEvent', { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13, modifiers: 0, type: 'keyDown', text: '\r', unmodifiedText: '\r' }],
    ['Input.dispatchKeyEvent', { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13, modifiers: 0, type: 'keyUp' }],
  ]);
  const [[, down], [, up]] = keyPair(namedKeys.get('Tab'), 8);
  assert.deepEqual([down.type, down.key, down.modifiers, up.type, up.modifiers], ['rawKeyDown', 'Tab', 8, 'keyUp', 8]);
  assert.equal(keyPair(namedKeys.get('Space'))[0][1].key, ' ');
});

const target = { backendNodeId: 42, role: 'button', name: 'Save' };
const isHit = (fn) => fn.includes("relation: 'outside'");
const isCover = (fn) => fn.includes('const named');

// granted sets up a leased tab whose node 42 is a "Save" button.
async function granted() {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.lease = lease;
  const ax = { role: 'button', name: 'Save' };
  t.ax = ax;
  t.chrome.cdp.set('Accessibility.getPartialAXTree', ({ backendNodeId }) => ({
    nodes: backendNodeId === 42 ? [{ nodeId: '7', backendDOMNodeId: 42, ignored: false, role: { value: ax.role }, name: { value: ax.name } }] : [],
  }));
  t.chrome.cdp.set('DOM.getNodeForLocation', () => ({ backendNodeId: 42, frameId: 'F1' }));
  t.chrome.cdp.set('Page.getLayoutMetrics', () => ({ cssVisualViewport: { pageX: 0, pageY: 1000.5, scale: 1 } }));
  for (const m of ['Input.dispatchMouseEvent', 'Input.dispatchKeyEvent', 'Input.insertText', 'DOM.focus', 'Runtime.releaseObjectGroup']) t.chrome.cdp.set(m, () => ({}));
  // The isolated world: each fixed DOM function answers t.guard (a code, or
  // '' to go on), the hit test's relation check t.relation, and the cover
  // check the element to name.
  t.guard = '';
  t.relation = 'outside';
  t.chrome.cdp.set('Page.createIsolatedWorld', ({ frameId }) => ({ executionContextId: frameId === 'F1' ? 5 : 6 }));
  t.chrome.cdp.set('DOM.resolveNode', ({ backendNodeId, executionContextId }) => ({ object: { objectId: `${executionContextId}/${backendNodeId}` } }));
  t.chrome.cdp.set('Runtime.callFunctionOn', ({ functionDeclaration, objectId }) => {
    if (isHit(functionDeclaration)) return { result: { value: { relation: t.relation, pseudo: false } } };
    if (isCover(functionDeclaration)) return { result: { type: 'object', objectId: `cover-of-${objectId}` } };
    return { result: { value: t.guard } };
  });
  t.chrome.cdp.set('DOM.describeNode', ({ objectId }) => ({ node: { backendNodeId: 77, nodeName: 'DIV', localName: 'div', objectId } }));
  t.dispatched = () => t.chrome.commands.filter((c) => c.method.startsWith('Input.'));
  t.guards = () => t.chrome.commands.filter((c) => c.method === 'Runtime.callFunctionOn' && !isHit(c.params.functionDeclaration));
  t.input = (kind, request) => t.call(`input.${kind}`, { lease, request: { documentEpoch: 'F1:L1', target, ...request } });
  return t;
}

test('a click hit-tests in document coordinates, then sends one left press/release pair', async () => {
  const t = await granted();
  const r = await t.input('click', { x: 10.5, y: 20 });
  assert.deepEqual(r.value, { dispatched: true });
  const hit = t.chrome.commands.find((c) => c.method === 'DOM.getNodeForLocation');
  assert.deepEqual(hit.params, { x: 10, y: 1020, includeUserAgentShadowDOM: true }); // document coordinates
  assert.deepEqual(t.dispatched().map((c) => c.params), [
    { x: 10.5, y: 20, button: 'none', type: 'mouseMoved', buttons: 0 },
    { x: 10.5, y: 20, button: 'left', clickCount: 1, type: 'mousePressed', buttons: 1 },
    { x: 10.5, y: 20, button: 'left', clickCount: 1, type: 'mouseReleased', buttons: 0 },
  ]);
});

test('a stale epoch, a changed role or name, or a gone node dispatches nothing', async () => {
  const t = await granted();
  const before = t.chrome.commands.length;
  assert.equal((await t.input('click', { x: 1, y: 1, documentEpoch: 'F1:L0' })).code, 'STALE_TARGET');
  assert.equal(t.chrome.commands.length, before); // refused before any debugger call
  t.ax.name = 'Delete';
  assert.equal((await t.input('click', { x: 1, y: 1 })).code, 'STALE_TARGET');
  t.ax.name = 'Save';
  t.ax.role = 'link';
  assert.equal((await t.input('key', { key: 'Enter' })).code, 'STALE_TARGET');
  t.chrome.cdp.set('Accessibility.getPartialAXTree', () => { throw new Error('No node found for given backend id'); });
  assert.equal((await t.input('text', { text: 'x', mode: 'insert' })).code, 'STALE_TARGET');
  assert.equal(t.dispatched().length, 0);
});

test('an element that aria-hidden keeps out of the tree is checked by its identity in the DOM', async () => {
  const t = await granted();
  // The tree answers an ancestor only, as Chromium does for such a node.
  t.chrome.cdp.set('Accessibility.getPartialAXTree', () => ({ nodes: [{ nodeId: '1', backendDOMNodeId: 5, ignored: true, role: { value: 'none' } }] }));
  let dom = { role: 'button', name: 'Save' };
  const others = t.chrome.cdp.get('Runtime.callFunctionOn');
  t.chrome.cdp.set('Runtime.callFunctionOn', (params) => (params.functionDeclaration.includes('aria-hidden')
    ? { result: { value: dom } } : others(params)));
  t.relation = 'target';
  assert.deepEqual((await t.input('click', { x: 1, y: 1 })).value, { dispatched: true });
  for (const other of [{ role: 'button', name: 'Delete' }, { role: 'generic', name: 'Save' }, null]) {
    dom = other; // another identity, or an element aria-hidden no longer hides
    assert.equal((await t.input('click', { x: 1, y: 1 })).code, 'STALE_TARGET', JSON.stringify(other));
  }
  assert.equal(t.dispatched().length, 3);
});

test('a click that would land on another element is NOT_ACTIONABLE', async () => {
  const t = await granted();
  t.chrome.cdp.set('DOM.getNodeForLocation', () => ({ backendNodeId: 99, frameId: 'F1' }));
  assert.equal((await t.input('click', { x: 5, y: 5 })).code, 'NOT_ACTIONABLE');
  assert.equal(t.dispatched().length, 0);
  const call = t.chrome.commands.find((c) => c.method === 'Runtime.callFunctionOn').params;
  assert.deepEqual([call.objectId, call.arguments], ['5/99', [{ objectId: '5/42' }]]);
  assert.ok(t.chrome.commands.some((c) => c.method === 'Runtime.releaseObjectGroup'));
  t.relation = 'inside'; // the hit node is inside the target (a span in a button)
  assert.equal((await t.input('click', { x: 5, y: 5 })).ok, true);
  // A label that activates the target counts only when the broker accepts it.
  t.relation = 'label';
  assert.equal((await t.input('click', { x: 5, y: 5 })).code, 'NOT_ACTIONABLE');
  assert.equal((await t.input('click', { x: 5, y: 5, accept: ['target', 'inside', 'label'] })).ok, true);
  t.relation = 'outside';
  assert.equal((await t.input('click', { x: 5, y: 5, accept: ['target', 'inside', 'label'] })).code, 'NOT_ACTIONABLE');
  t.relation = 'elsewhere'; // not a relation: outside
  assert.equal((await t.input('click', { x: 5, y: 5, accept: ['target', 'inside', 'label'] })).code, 'NOT_ACTIONABLE');
  assert.equal(t.dispatched().length, 6);
  t.chrome.cdp.set('DOM.getNodeForLocation', () => { throw new Error('No node found at given location'); });
  assert.equal((await t.input('click', { x: 5, y: 5 })).code, 'NOT_ACTIONABLE');
});

test('text modes: replace selects all, append goes to the end, insert types at the caret', async () => {
  const t = await granted();
  const steps = async (request) => {
    const from = t.chrome.commands.length;
    assert.equal((await t.input('text', request)).ok, true);
    return t.chrome.commands.slice(from).filter((c) => ['DOM.focus', 'Input.dispatchKeyEvent', 'Input.insertText'].includes(c.method) ||
      (c.method === 'Runtime.callFunctionOn' && !c.params.functionDeclaration.includes('for (let n = this')))
      .map((c) => c.method === 'Input.dispatchKeyEvent' ? `${c.params.type}:${c.params.key}:${c.params.commands ?? ''}`
        : c.method === 'Input.insertText' ? `insert:${c.params.text}`
          : c.method === 'Runtime.callFunctionOn' ? `guard:${c.params.arguments.map((a) => a.value).join(',')}` : c.method);
  };
  // The guard runs after the focus, right before the events, with the mode,
  // the text and an append's prefix; an append's guard puts the caret at
  // the end.
  assert.deepEqual(await steps({ text: 'hi', mode: 'replace' }), ['DOM.focus', 'guard:replace,hi,', 'rawKeyDown:a:selectAll', 'keyUp:a:', 'insert:hi']);
  assert.deepEqual(await steps({ text: '', mode: 'replace' }), ['DOM.focus', 'guard:replace,,', 'rawKeyDown:a:selectAll', 'keyUp:a:', 'rawKeyDown:Backspace:', 'keyUp:Backspace:']);
  assert.deepEqual(await steps({ text: '!', mode: 'append', prefix: 'Hi' }), ['DOM.focus', 'guard:append,!,Hi', 'insert:!']);
  assert.deepEqual(await steps({ text: 'x', mode: 'insert' }), ['DOM.focus', 'guard:insert,x,', 'insert:x']);
});

test('a guard that refuses dispatches nothing, with its code', async () => {
  const t = await granted();
  t.relation = 'inside';
  for (const code of ['NOT_ACTIONABLE', 'STALE_TARGET', 'UNSUPPORTED_CAPABILITY']) {
    t.guard = code;
    assert.equal((await t.input('text', { text: 'x', mode: 'append', prefix: '' })).code, code);
    assert.equal((await t.input('select', { option: { index: 1, label: 'Blue' } })).code, code);
    assert.equal((await t.input('click', { x: 1, y: 1, expectChecked: false })).code, code);
  }
  assert.equal(t.dispatched().length, 0);
  t.guard = 42; // not a code: the function broke
  assert.equal((await t.input('text', { text: 'x', mode: 'insert' })).code, 'STALE_TARGET');
});

test('a check click toggles only the state it was sent for', async () => {
  const t = await granted();
  t.relation = 'inside';
  t.guard = 'STALE_TARGET'; // the box was ticked meanwhile
  assert.equal((await t.input('click', { x: 1, y: 1, expectChecked: false })).code, 'STALE_TARGET');
  assert.equal(t.dispatched().length, 0);
  t.guard = '';
  assert.equal((await t.input('click', { x: 1, y: 1, expectChecked: false })).ok, true);
  assert.deepEqual(t.guards().at(-1).params.arguments, [{ value: false }]);
  assert.equal(t.dispatched().length, 3);
});

test('wheel: a hit-tested point, then one mouseWheel sample', async () => {
  const t = await granted();
  t.relation = 'inside';
  assert.equal((await t.input('wheel', { x: 3, y: 4, deltaX: 0, deltaY: 120 })).ok, true);
  assert.deepEqual(t.dispatched().map((c) => c.params), [{ type: 'mouseWheel', x: 3, y: 4, deltaX: 0, deltaY: 120 }]);
  t.relation = 'outside';
  t.chrome.cdp.set('DOM.getNodeForLocation', () => ({ backendNodeId: 99, frameId: 'F1' }));
  assert.equal((await t.input('wheel', { x: 3, y: 4, deltaX: 0, deltaY: 120 })).code, 'NOT_ACTIONABLE');
  assert.equal(t.dispatched().length, 1);
});

test('scroll and select run their fixed function once, on the target or the document', async () => {
  const t = await granted();
  t.chrome.cdp.set('Runtime.evaluate', ({ expression, contextId }) => ({ result: { type: 'object', objectId: `${contextId}/${expression === 'document' ? 1 : '?'}` } }));
  assert.equal((await t.input('scroll', { target: undefined, deltaX: 0, deltaY: 300 })).ok, true);
  assert.equal((await t.input('scroll', { deltaX: -5, deltaY: 0 })).ok, true);
  assert.equal((await t.input('select', { option: { index: 2, label: 'Blue' } })).ok, true);
  assert.equal((await t.input('select', { option: { index: 2, label: 'Blue', value: '' } })).ok, true);
  const calls = t.guards().map((c) => [c.params.objectId, c.params.arguments.map((a) => a.value)]);
  assert.deepEqual(calls, [['5/1', [0, 300]], ['5/42', [-5, 0]], ['5/42', [2, 'Blue', null]], ['5/42', [2, 'Blue', '']]]);
  assert.equal(t.dispatched().length, 0); // no CDP input event: DOM functions
});

test('a key is DOM.focus then one pair from the table', async () => {
  const t = await granted();
  assert.equal((await t.input('key', { key: 'Tab', shift: true })).ok, true);
  assert.deepEqual(t.chrome.commands.slice(-3).map((c) => [c.method, c.params.type, c.params.modifiers]), [
    ['DOM.focus', undefined, undefined], ['Input.dispatchKeyEvent', 'rawKeyDown', 8], ['Input.dispatchKeyEvent', 'keyUp', 8],
  ]);
});

test('malformed input requests are INVALID_REQUEST', async () => {
  const t = await granted();
  for (const [kind, request] of [
    ['key', { key: 'F5' }],
    ['key', { key: 'constructor' }],
    ['key', { key: 'Enter', shift: 'yes' }],
    ['text', { text: 'x', mode: 'overwrite' }],
    ['text', { text: 'x'.repeat(10001), mode: 'insert' }],
    ['click', { x: 'a', y: 1 }],
    ['click', { x: 1, y: 1, target: { backendNodeId: 0, role: 'button', name: 'Save' } }],
    ['click', { x: 1, y: 1, expectChecked: 'yes' }],
    ['click', { x: 1, y: 1, extra: 1 }],
    ['text', { text: 'x', mode: 'append' }], // no prefix
    ['text', { text: 'x', mode: 'replace', prefix: '' }],
    ['wheel', { x: 1, y: 1, deltaX: 0, deltaY: 0 }],
    ['wheel', { x: 1, y: 1, deltaX: 10001, deltaY: 0 }],
    ['wheel', { x: 1, y: 1, deltaX: 1.5, deltaY: 0 }],
    ['scroll', { deltaX: 0, deltaY: 0 }],
    ['scroll', { deltaX: 1, deltaY: 0, frame: { frameId: 'C1', loaderId: 'LC' } }],
    ['key', { key: 'Enter', target: undefined }],
    ['select', { option: { index: -1, label: 'a' } }],
    ['select', { option: { index: 0 } }],
    ['select', { option: { index: 0, label: 'a', value: 1 } }],
    ['select', { option: { index: 0, label: 'a', value: 'x'.repeat(1001) } }],
    ['select', { option: { index: 0, label: 'a', other: 'a' } }],
    ['click', { x: 1, y: 1, count: 3 }],
    ['click', { x: 1, y: 1, accept: [] }],
    ['click', { x: 1, y: 1, accept: ['target', 'target'] }],
    ['click', { x: 1, y: 1, accept: ['anywhere'] }],
    ['hover', { x: 1 }],
    ['hover', { x: 1, y: 1, count: 2 }],
    ['drag', { x: 1, y: 1, toX: 2 }],
    ['drag', { x: 1, y: 1, toX: 2, toY: Infinity }],
    ['drag', { x: 1, y: 1, toX: 2, toY: 2, to: { backendNodeId: 'x', role: 'button', name: 'Save' } }],
    ['key', { key: 'a' }], // a character without modifiers is a chord's
    ['key', { key: 'Enter', modifiers: [] }],
    ['key', { key: 'ab', modifiers: ['Control'] }],
    ['key', { key: ' ', modifiers: ['Control'] }],
    ['key', { key: '\u00a0', modifiers: ['Control'] }],
    ['key', { key: '\u0007', modifiers: [] }],
    ['key', { key: '😀', modifiers: [] }], // two UTF-16 units
    ['key', { key: 'a', modifiers: ['Ctrl'] }],
    ['key', { key: 'a', modifiers: ['Alt', 'Alt'] }],
    ['key', { key: 'a', modifiers: ['Alt', 'Control', 'Meta', 'Shift', 'Alt'] }],
    ['key', { key: 'a', modifiers: ['Control'], shift: true }],
    ['key', { key: 'Enter', guard: true }],
    ['key', { key: 'a', modifiers: ['Control'], guard: 'yes' }],
  ]) assert.equal((await t.input(kind, request)).code, 'INVALID_REQUEST', JSON.stringify(request));
  assert.equal((await t.input('text', { text: '😀'.repeat(10000), mode: 'insert' })).ok, true); // 10,000 characters
});

test('a failure before dispatch keeps its code; one midway is INTERNAL_ERROR', async () => {
  const t = await granted();
  t.chrome.cdp.set('DOM.focus', () => { throw new Error('Element is not focusable'); });
  assert.equal((await t.input('key', { key: 'Enter' })).code, 'NOT_ACTIONABLE');
  assert.equal(t.dispatched().length, 0);
  t.chrome.cdp.set('DOM.focus', () => ({}));
  let n = 0;
  t.chrome.cdp.set('Input.dispatchKeyEvent', () => {
    if (++n === 2) throw new Error('target crashed');
    return {};
  });
  assert.equal((await t.input('key', { key: 'Enter' })).code, 'INTERNAL_ERROR');
});

test('a navigation while the checks run dispatches nothing', async () => {
  const t = await granted();
  t.chrome.cdp.set('DOM.focus', () => {
    t.chrome.event(1, 'Page.frameNavigated', { frame: { id: 'F1', loaderId: 'L2', url: 'https://a.test/next' } });
    return {};
  });
  assert.equal((await t.input('text', { text: 'x', mode: 'insert' })).code, 'STALE_TARGET');
  assert.equal(t.dispatched().length, 0);
});

test('Stop between the checks and the events dispatches nothing', async () => {
  const t = await granted();
  t.chrome.cdp.set('DOM.focus', async () => {
    await t.chrome.message({ type: 'popup.stop' });
    return {};
  });
  assert.equal((await t.input('key', { key: 'Enter' })).code, 'LEASE_REVOKED');
  assert.equal(t.dispatched().length, 0);
});

test('input in a child frame: only on its document, while it and the frames above it are of the main origin', async () => {
  const t = await granted();
  const frame = (id, origin, loaderId, childFrames = []) => ({ frame: { id, loaderId, url: `${origin}/x`, securityOrigin: origin }, childFrames });
  const tree = frame('F1', 'https://a.test', 'L1', [frame('C1', 'https://a.test', 'LC'), frame('C2', 'https://b.test', 'L2')]);
  tree.frame.url = 'https://a.test/';
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: tree }));
  const click = (documentEpoch, f) => t.input('click', { documentEpoch, x: 5, y: 5, frame: f });

  assert.deepEqual((await click('C1:LC', { frameId: 'C1', loaderId: 'LC' })).value, { dispatched: true });
  assert.equal(t.dispatched().length, 3);
  for (const [epoch, f, code] of [
    ['C2:L2', { frameId: 'C2', loaderId: 'L2' }, 'POLICY_DENIED'], // another origin
    ['C1:old', { frameId: 'C1', loaderId: 'old' }, 'STALE_TARGET'], // the frame shows another document
    ['F1:L1', { frameId: 'C1', loaderId: 'LC' }, 'STALE_TARGET'], // the main document's epoch for a frame
    ['C1:LC', { frameId: 'C1' }, 'INVALID_REQUEST'],
  ]) {
    assert.equal((await click(epoch, f)).code, code, `${epoch} ${JSON.stringify(f)}`);
  }
  assert.equal(t.dispatched().length, 3, 'input was sent after a refusal');
  // Text and keys go into the frame the same way, after focusing the target.
  assert.equal((await t.input('text', { documentEpoch: 'C1:LC', text: 'x', mode: 'insert', frame: { frameId: 'C1', loaderId: 'LC' } })).ok, true);
  assert.equal((await t.input('key', { documentEpoch: 'C2:L2', key: 'Enter', frame: { frameId: 'C2', loaderId: 'L2' } })).code, 'POLICY_DENIED');
  assert.deepEqual(t.dispatched().slice(3).map((c) => c.method), ['Input.insertText']);
});

test('a double-click is two press/release pairs counting 1 then 2; a hover only moves', async () => {
  const t = await granted();
  assert.equal((await t.input('click', { x: 3, y: 4, count: 2 })).ok, true);
  assert.deepEqual(t.dispatched().map((c) => `${c.params.type}:${c.params.clickCount ?? ''}:${c.params.buttons}`),
    ['mouseMoved::0', 'mousePressed:1:1', 'mouseReleased:1:0', 'mousePressed:2:1', 'mouseReleased:2:0']);
  const before = t.dispatched().length;
  assert.equal((await t.input('hover', { x: 7, y: 8 })).ok, true);
  assert.deepEqual(t.dispatched().slice(before).map((c) => c.params), [{ type: 'mouseMoved', x: 7, y: 8, button: 'none', buttons: 0 }]);
  // Both are hit-tested first.
  t.chrome.cdp.set('DOM.getNodeForLocation', () => ({ backendNodeId: 99, frameId: 'F1' }));
  assert.equal((await t.input('hover', { x: 7, y: 8 })).code, 'NOT_ACTIONABLE');
  assert.equal((await t.input('click', { x: 7, y: 8, count: 2 })).code, 'NOT_ACTIONABLE');
  assert.equal(t.dispatched().length, before + 1);
});

test('a drag presses on the target, moves in ten steps to the drop point, holds while the page animates, and releases there', async () => {
  const t = await granted();
  // The page animates for three looks after the last step.
  let animating = 0;
  const isAnimating = (fn) => fn.includes('getAnimations');
  t.chrome.cdp.set('Runtime.evaluate', ({ expression, contextId }) => ({ result: { type: 'object', objectId: `${contextId}/${expression === 'document' ? 1 : '?'}` } }));
  const others = t.chrome.cdp.get('Runtime.callFunctionOn');
  t.chrome.cdp.set('Runtime.callFunctionOn', (params) => {
    if (!isAnimating(params.functionDeclaration)) return others(params);
    assert.equal(params.objectId, '5/1'); // on the document, in the isolated world
    return { result: { value: animating-- > 0 } };
  });
  const to = { backendNodeId: 43, role: 'listitem', name: 'Slot' };
  t.chrome.cdp.set('Accessibility.getPartialAXTree', ({ backendNodeId }) => ({
    nodes: [{ backendDOMNodeId: backendNodeId, ignored: false, role: { value: backendNodeId === 42 ? 'button' : 'listitem' }, name: { value: backendNodeId === 42 ? 'Save' : 'Slot' } }],
  }));
  let at = 42;
  t.chrome.cdp.set('DOM.getNodeForLocation', () => ({ backendNodeId: at, frameId: 'F1' }));
  t.chrome.cdp.set('DOM.getNodeForLocation', ({ y }) => ({ backendNodeId: y === 1000 ? 42 : at, frameId: 'F1' }));
  at = 43;
  animating = 3;
  // The hold waits on the extension's clock: it runs while the drag does.
  const drag = async (request) => {
    const id = t.request('input.drag', { lease: t.lease, request: { documentEpoch: 'F1:L1', target, ...request } });
    for (let i = 0; i < 200 && !t.port.response(id); i++) await t.timers.advance(16);
    return t.port.response(id);
  };
  assert.equal((await drag({ x: 0, y: 0, toX: 100, toY: 50, to })).ok, true);
  const steps = t.chrome.commands.filter((c) => c.method.startsWith('Input.') || isAnimating(c.params?.functionDeclaration ?? ''))
    .map((c) => (c.method.startsWith('Input.') ? `${c.params.type}@${c.params.x},${c.params.y}/${c.params.buttons}` : 'animating?'));
  assert.deepEqual(steps, ['mouseMoved@0,0/0', 'mousePressed@0,0/1',
    ...Array.from({ length: 10 }, (_, i) => `mouseMoved@${(i + 1) * 10},${(i + 1) * 5}/1`),
    'animating?', 'animating?', 'animating?', 'animating?', 'mouseMoved@100,50/1', 'animating?', 'mouseReleased@100,50/0']);
  // The drop point is hit-tested against the element it drops on, whose
  // identity is checked too.
  at = 99;
  assert.equal((await t.input('drag', { x: 0, y: 0, toX: 100, toY: 50, to })).code, 'NOT_ACTIONABLE');
  assert.equal((await t.input('drag', { x: 0, y: 0, toX: 100, toY: 50, to: { ...to, name: 'Other' } })).code, 'STALE_TARGET');
  // By an offset: no drop target, no check there.
  assert.equal((await t.input('drag', { x: 0, y: 0, toX: 100, toY: 50 })).ok, true);
  assert.equal(t.dispatched().length, 28);
  // An animation that never ends holds the drag for DRAG_SETTLE_MS (1 s)
  // only, both holds together.
  animating = Infinity;
  const start = t.timers.now;
  assert.equal((await drag({ x: 0, y: 0, toX: 100, toY: 50 })).ok, true);
  assert.ok(t.timers.now - start >= 1000 && t.timers.now - start < 1100, `${t.timers.now - start} ms`);
  assert.equal(t.dispatched().length, 42);
});

test('a chord holds its modifiers around the key; a character types only without Control, Alt or Meta', async () => {
  const t = await granted();
  const keys = async (request) => {
    const from = t.chrome.commands.length;
    assert.equal((await t.input('key', request)).ok, true, JSON.stringify(request));
    return t.chrome.commands.slice(from).filter((c) => c.method === 'Input.dispatchKeyEvent')
      .map((c) => `${c.params.type}:${c.params.key}:${c.params.code}:${c.params.windowsVirtualKeyCode}:${c.params.modifiers}:${c.params.text ?? ''}`);
  };
  assert.deepEqual(await keys({ key: 'f', modifiers: ['Control'] }),
    ['rawKeyDown:Control:ControlLeft:17:2:', 'rawKeyDown:f:KeyF:70:2:', 'keyUp:f:KeyF:70:2:', 'keyUp:Control:ControlLeft:17:0:']);
  assert.deepEqual(await keys({ key: 'o', modifiers: [] }), ['keyDown:o:KeyO:79:0:o', 'keyUp:o:KeyO:79:0:']);
  assert.deepEqual(await keys({ key: 'a', modifiers: ['Shift'] }),
    ['rawKeyDown:Shift:ShiftLeft:16:8:', 'keyDown:A:KeyA:65:8:A', 'keyUp:A:KeyA:65:8:', 'keyUp:Shift:ShiftLeft:16:0:']);
  // Modifiers go down in a fixed order whatever the request's, and up in reverse.
  assert.deepEqual(await keys({ key: 'ArrowUp', modifiers: ['Shift', 'Alt'] }),
    ['rawKeyDown:Alt:AltLeft:18:1:', 'rawKeyDown:Shift:ShiftLeft:16:9:', 'rawKeyDown:ArrowUp:ArrowUp:38:9:', 'keyUp:ArrowUp:ArrowUp:38:9:',
      'keyUp:Shift:ShiftLeft:16:1:', 'keyUp:Alt:AltLeft:18:0:']);
  assert.deepEqual(await keys({ key: 'Enter', modifiers: ['Meta'] }),
    ['rawKeyDown:Meta:MetaLeft:91:4:', 'rawKeyDown:Enter:Enter:13:4:', 'keyUp:Enter:Enter:13:4:', 'keyUp:Meta:MetaLeft:91:0:']);
  assert.deepEqual(await keys({ key: 'é', modifiers: [] }), ['keyDown:é::0:0:é', 'keyUp:é::0:0:']);
  // No guard unless asked; with one, GUARD_KEY runs on the target right
  // before the events, for the key as the page sees it.
  const guards = () => t.guards().filter((c) => c.params.functionDeclaration.includes('defaultPrevented'));
  assert.equal(guards().length, 0);
  await keys({ key: 'h', modifiers: ['Control', 'Shift'], guard: true });
  assert.deepEqual(guards().map((c) => [c.params.objectId, c.params.arguments]), [['5/42', [{ value: 'H' }]]]);
});

test('characterKey names the US key of a character', () => {
  assert.deepEqual(characterKey('z', false), { key: 'z', code: 'KeyZ', keyCode: 90, text: 'z' });
  assert.deepEqual(characterKey('z', true), { key: 'Z', code: 'KeyZ', keyCode: 90, text: 'Z' });
  assert.deepEqual(characterKey('7', true), { key: '7', code: 'Digit7', keyCode: 55, text: '7' });
  assert.deepEqual(characterKey('?', false), { key: '?', code: 'Slash', keyCode: 191, text: '?' });
  assert.deepEqual(characterKey('"', false), { key: '"', code: 'Quote', keyCode: 222, text: '"' });
  assert.deepEqual(characterKey('\\', false), { key: '\\', code: 'Backslash', keyCode: 220, text: '\\' });
  assert.deepEqual(characterKey('ß', false), { key: 'ß', code: '', keyCode: 0, text: 'ß' });
});

test('dom.hit says how the node at a point relates to the target, and names what covers it', async () => {
  const t = await granted();
  const hit = (request) => t.call('dom.hit', { lease: t.lease, request: { documentEpoch: 'F1:L1', backendNodeId: 42, x: 5, y: 6, ...request } });
  assert.deepEqual((await hit({})).value, { relation: 'target', pseudo: false });
  t.chrome.cdp.set('DOM.getNodeForLocation', () => ({ backendNodeId: 99, frameId: 'F1' }));
  t.relation = 'label';
  assert.deepEqual((await hit({})).value, { relation: 'label', pseudo: false });
  t.relation = 'outside';
  assert.deepEqual((await hit({})).value, { relation: 'outside', pseudo: false, cover: { frameId: 'F1', tag: 'div', backendNodeId: 77 } });
  const cover = t.chrome.commands.findLast((c) => c.method === 'DOM.describeNode').params;
  assert.deepEqual(cover, { objectId: 'cover-of-5/99' });
  // Over a node of another frame, where the target is no node: only the frame is said.
  t.chrome.cdp.set('DOM.getNodeForLocation', () => ({ backendNodeId: 99, frameId: 'C9' }));
  t.chrome.cdp.set('DOM.resolveNode', ({ backendNodeId, executionContextId }) => {
    if (executionContextId === 6 && backendNodeId === 42) throw new Error('Node with given id does not belong to the document');
    return { object: { objectId: `${executionContextId}/${backendNodeId}` } };
  });
  assert.deepEqual((await hit({})).value, { relation: 'outside', pseudo: false, cover: { frameId: 'C9', tag: '' } });
  assert.equal((await hit({ documentEpoch: 'F1:L0' })).code, 'STALE_TARGET');
  for (const bad of [{ x: 'a' }, { backendNodeId: 0 }, { extra: 1 }, { frame: { frameId: 'C1' } }]) {
    assert.equal((await hit(bad)).code, 'INVALID_REQUEST', JSON.stringify(bad));
  }
  assert.equal(t.dispatched().length, 0);
});
