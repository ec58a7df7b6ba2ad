// The Snug port's piece codec: pieces at and past their bound, reassembly
// in order only, and the relay bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SNUG, pieces, createAssembler, toBase64, fromBase64 } from '../lib/snug.js';

const bytes = (n, fill = 97) => new Uint8Array(n).fill(fill);

test('base64 round-trips every byte value', () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(fromBase64(toBase64(all)), all);
  assert.equal(toBase64(new Uint8Array(0)), '');
});

test('a message of exactly one piece, and one byte more', () => {
  const one = pieces('r', 1, bytes(SNUG.MAX_PIECE_BYTES));
  assert.equal(one.length, 1);
  assert.equal(one[0].last, true);
  const two = pieces('r', 2, bytes(SNUG.MAX_PIECE_BYTES + 1));
  assert.deepEqual(two.map((p) => [p.part, p.last, fromBase64(p.data).length]), [[0, false, SNUG.MAX_PIECE_BYTES], [1, true, 1]]);
  assert.equal(pieces('r', 3, new Uint8Array(0)).length, 1); // an empty message still travels
});

test('an 8 MiB message reassembles; pieces out of order discard it', () => {
  const msg = Uint8Array.from({ length: 8 << 20 }, (_, i) => i % 251);
  const ps = pieces('r', 7, msg);
  const assemble = createAssembler(SNUG.MAX_RELAY_BYTES);
  let out;
  for (const p of ps) out = assemble(p) ?? out;
  assert.deepEqual(out, msg);
  const again = createAssembler(SNUG.MAX_RELAY_BYTES);
  assert.equal(again(ps[0]), undefined);
  assert.equal(again(ps[2]), undefined); // part 1 skipped
  assert.equal(again(ps.at(-1)), undefined);
});

test('the relay bound: at it whole, one byte past it discarded', () => {
  const at = createAssembler(SNUG.MAX_RELAY_BYTES);
  let out;
  for (const p of pieces('r', 1, bytes(SNUG.MAX_RELAY_BYTES))) out = at(p) ?? out;
  assert.equal(out.length, SNUG.MAX_RELAY_BYTES);
  const past = createAssembler(SNUG.MAX_RELAY_BYTES);
  out = undefined;
  for (const p of pieces('r', 1, bytes(SNUG.MAX_RELAY_BYTES + 1))) out = past(p) ?? out;
  assert.equal(out, undefined);
});

test('a full piece is 512 KiB of base64: an event of it stays under the 1 MiB frame cap', () => {
  const p = pieces('0123456789abcdef0123456789abcdef0123', 1, bytes(SNUG.MAX_PIECE_BYTES, 0xff))[0];
  assert.equal(p.data.length, 512 << 10);
  const event = JSON.stringify({ type: 'event', event: SNUG.EVENT_FRAME, value: p });
  assert.ok(event.length < 600_000, `event of ${event.length} bytes`); // far under 1,048,575
});
