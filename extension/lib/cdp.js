// The raw CDP seam: read-only helpers the broker uses for geometry and
// waits, each with the exact parameter shape it may carry.
import { fail, isObject } from './errors.js';

const nodeId = (v) => Number.isInteger(v) && v > 0;
const int32 = (v) => Number.isInteger(v) && Math.abs(v) < 2 ** 31; // CDP rejects fractions
const length = (v) => Number.isFinite(v) && Math.abs(v) <= 1e6;
const is = (want) => (v) => v === want;

// shape(required, optional) accepts an object with every required key, no
// key outside both, and each value passing its check.
const shape = (required, optional = {}) => (p) =>
  isObject(p) &&
  Object.keys(required).every((k) => Object.hasOwn(p, k)) &&
  Object.keys(p).every((k) =>
    Object.hasOwn(required, k) ? required[k](p[k]) : Object.hasOwn(optional, k) && optional[k](p[k]));

const allowlist = new Map([
  ['Page.getLayoutMetrics', shape({})],
  ['Page.getFrameTree', shape({})],
  ['DOM.getContentQuads', shape({ backendNodeId: nodeId })],
  ['DOM.scrollIntoViewIfNeeded', shape({ backendNodeId: nodeId }, { rect: shape({ x: length, y: length, width: length, height: length }) })],
  ['DOM.getNodeForLocation', shape({ x: int32, y: int32 }, { includeUserAgentShadowDOM: (v) => typeof v === 'boolean' })],
  ['Accessibility.getPartialAXTree', shape({ backendNodeId: nodeId, fetchRelatives: is(false) })],
  ['Runtime.evaluate', shape({ expression: is('document.readyState'), returnByValue: is(true) })],
]);

// checkCdp refuses a method outside the allowlist (UNSUPPORTED_CAPABILITY)
// or parameters outside its shape (POLICY_DENIED).
export function checkCdp(method, params) {
  const ok = allowlist.get(method);
  if (!ok) fail('UNSUPPORTED_CAPABILITY');
  if (!ok(params)) fail('POLICY_DENIED');
}
