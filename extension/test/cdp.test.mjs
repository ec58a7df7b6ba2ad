// The CDP allowlist and its parameter shapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkCdp } from '../lib/cdp.js';
import { setup } from './fake-chrome.mjs';

const code = (method, params) => {
  try {
    checkCdp(method, params);
    return 'ok';
  } catch (e) {
    return e.code;
  }
};

test('allowlisted methods with their exact shapes pass', () => {
  for (const [m, p] of [
    ['Page.getLayoutMetrics', {}],
    ['Page.getFrameTree', {}],
    ['DOM.getContentQuads', { backendNodeId: 4 }],
    ['DOM.scrollIntoViewIfNeeded', { backendNodeId: 4 }],
    ['DOM.scrollIntoViewIfNeeded', { backendNodeId: 4, rect: { x: 0, y: -300, width: 100.5, height: 330 } }],
    ['DOM.getNodeForLocation', { x: 10, y: 20 }],
    ['DOM.getNodeForLocation', { x: 0, y: -5, includeUserAgentShadowDOM: true }],
    ['Accessibility.getPartialAXTree', { backendNodeId: 9, fetchRelatives: false }],
    ['Runtime.evaluate', { expression: 'document.readyState', returnByValue: true }],
  ]) assert.equal(code(m, p), 'ok', m);
});

test('every other method is UNSUPPORTED_CAPABILITY', () => {
  for (const m of ['Input.dispatchMouseEvent', 'Input.insertText', 'Input.dispatchKeyEvent', 'Runtime.callFunctionOn',
    'Page.navigate', 'DOM.setAttributeValue', 'Accessibility.getFullAXTree', 'Target.createTarget', 'Network.getCookies',
    'constructor', '__proto__', 'toString', '', undefined, 7]) {
    assert.equal(code(m, {}), 'UNSUPPORTED_CAPABILITY', String(m));
  }
});

test('parameters outside the allowed shape are POLICY_DENIED', () => {
  for (const [m, p] of [
    ['Page.getLayoutMetrics', { extra: 1 }],
    ['Page.getFrameTree', null],
    ['DOM.getContentQuads', {}],
    ['DOM.getContentQuads', { backendNodeId: 0 }],
    ['DOM.getContentQuads', { backendNodeId: '4' }],
    ['DOM.getContentQuads', { backendNodeId: 4, objectId: 'x' }],
    ['DOM.getContentQuads', { nodeId: 4 }],
    ['DOM.scrollIntoViewIfNeeded', { backendNodeId: 4, rect: {} }],
    ['DOM.scrollIntoViewIfNeeded', { backendNodeId: 4, rect: { x: 0, y: 0, width: 1, height: 2, extra: 1 } }],
    ['DOM.scrollIntoViewIfNeeded', { backendNodeId: 4, rect: { x: 0, y: 0, width: 1, height: Infinity } }],
    ['DOM.scrollIntoViewIfNeeded', { backendNodeId: 4, rect: { x: 0, y: 0, width: 1, height: 1e7 } }],
    ['DOM.scrollIntoViewIfNeeded', { backendNodeId: 4, rect: { x: '0', y: 0, width: 1, height: 2 } }],
    ['DOM.getNodeForLocation', { x: 1.5, y: 2 }],
    ['DOM.getNodeForLocation', { x: 1 }],
    ['DOM.getNodeForLocation', { x: 1, y: 2, includeUserAgentShadowDOM: 'yes' }],
    ['DOM.getNodeForLocation', { x: 1, y: 2, ignorePointerEventsNone: true }],
    ['Accessibility.getPartialAXTree', { backendNodeId: 9 }],
    ['Accessibility.getPartialAXTree', { backendNodeId: 9, fetchRelatives: true }],
    ['Runtime.evaluate', { expression: 'document.cookie', returnByValue: true }],
    ['Runtime.evaluate', { expression: 'document.readyState' }],
    ['Runtime.evaluate', { expression: 'document.readyState', returnByValue: true, awaitPromise: true }],
    ['Runtime.evaluate', JSON.parse('{"expression":"document.readyState","returnByValue":true,"__proto__":{}}')],
  ]) assert.equal(code(m, p), 'POLICY_DENIED', `${m} ${JSON.stringify(p)}`);
});

test('the cdp method passes allowed calls through the gate, refuses the rest before it', async () => {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/');
  const { lease } = await t.grant(1);
  t.chrome.cdp.set('DOM.getContentQuads', (p) => ({ quads: [[p.backendNodeId]] }));
  assert.deepEqual((await t.call('cdp', { lease, method: 'DOM.getContentQuads', params: { backendNodeId: 5 } })).value, { quads: [[5]] });
  const before = t.chrome.commands.length;
  assert.equal((await t.call('cdp', { lease, method: 'Input.dispatchMouseEvent', params: { type: 'mousePressed', x: 1, y: 1 } })).code, 'UNSUPPORTED_CAPABILITY');
  assert.equal((await t.call('cdp', { lease, method: 'DOM.getContentQuads', params: { backendNodeId: 5, depth: 1 } })).code, 'POLICY_DENIED');
  assert.equal(t.chrome.commands.length, before);
});
