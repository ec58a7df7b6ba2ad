// The extension's schema interpreter must agree with the Go validator on
// every conformance vector (protocol/testdata/vectors.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { validateEnvelope, validateHello, validateWelcome, validateParams, errorCodes } from '../lib/schema.js';

const vectors = JSON.parse(readFileSync(new URL('../../protocol/testdata/vectors.json', import.meta.url), 'utf8'));
const validators = { envelope: validateEnvelope, hello: validateHello, welcome: validateWelcome };
// Params vectors are named by method; their schema is under $defs.
const validatorOf = (kind) => validators[kind] ?? ((v) => validateParams(kind, v));

// A vector with a rule is refused by Go only by that rule past the schema
// (UTF-16 lengths, reserved IDs, frame and batch rules): the schema, and so
// this interpreter, accepts it.
test('every conformance vector gets the Go verdict', () => {
  const disagreements = [];
  const kinds = new Set();
  for (const [i, v] of vectors.entries()) {
    kinds.add(v.kind);
    const want = v.rule ? true : v.valid;
    let verdict;
    try {
      verdict = validatorOf(v.kind)(JSON.parse(v.json));
    } catch {
      verdict = false; // not JSON
    }
    if (verdict !== want) disagreements.push(`vector ${i} (${v.kind}): JS says ${verdict}, Go says ${v.valid} (rule ${v.rule}): ${v.json}`);
  }
  if (disagreements.length) console.log(disagreements.join('\n'));
  assert.equal(disagreements.length, 0);
  assert.equal(vectors.length >= 4800, true);
  assert.deepEqual([...kinds].sort(), ['browser.act', 'browser.batch', 'browser.observe', 'envelope', 'hello', 'welcome']);
});

test('params of an unknown method are refused', () => {
  assert.equal(validateParams('browser.nothing', {}), false);
});

test('the registry has the 25 reference codes and the 2 admission codes', () => {
  assert.equal(errorCodes.size, 27);
  for (const c of ['INTERNAL_ERROR', 'ADMISSION_PENDING', 'ADMISSION_DENIED']) assert.ok(errorCodes.has(c), c);
});

test('prototype keys are plain keys', () => {
  const env = JSON.parse('{"type":"cancel","id":"x","__proto__":{"ok":true}}');
  assert.equal(validateEnvelope(env), false);
  assert.equal(validateEnvelope({ type: 'cancel', id: 'x' }), true);
  assert.equal(validateEnvelope(JSON.parse('{"type":"response","id":"r","ok":false,"code":"toString"}')), false);
});
