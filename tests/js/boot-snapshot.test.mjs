// The snapshot's own checks on Node (js/boot/snapshot.js), over fake responses: a packed
// heap comes back whole, and a stored body that is cut short, altered, unlabelled or
// unreadable is refused with its reason before Pyodide sees it; a body whose layout does
// not add up is refused too. The same checks on real Cache Storage, with the boot that
// follows each refusal: tests/e2e/test_boot.py (a corrupt entry and another build's).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SnapshotRejected, packHeap, sha256Hex, unpackInto, verifiedBody } from '../../js/boot/snapshot.js';

const heap = new Uint8Array(4096 * 6 + 16);
heap.set([1, 2, 3], 4096 * 2 + 7); // a page with something, between pages of zeros
heap.set([9], 4096 * 6 + 3); // the short last page
const files = [['firsttoken/__init__.py', new TextEncoder().encode('x = 1\n')]];
const body = packHeap(heap, files);
const labels = async () => ({
  'x-firsttoken-length': String(heap.byteLength), 'x-firsttoken-stored': String(body.byteLength),
  'x-firsttoken-sha256': await sha256Hex(body),
});
const stored = (bytes, headers) => new Response(bytes, { headers });

test('a packed heap and its files come back whole', async () => {
  const back = new Uint8Array(heap.byteLength);
  const got = await verifiedBody(stored(body, await labels()), async () => body);
  const unpacked = unpackInto(got, back).map(([name, bytes]) => [name, new TextDecoder().decode(bytes)]);
  assert.deepEqual(unpacked, [['firsttoken/__init__.py', 'x = 1\n']]);
  assert.ok(back.every((b, i) => b === heap[i]));
  assert.ok(body.byteLength < heap.byteLength);
});

test('a bad stored body is refused with its reason', async () => {
  const why = async (response, read) => {
    try {
      await verifiedBody(response, read);
      return 'accepted';
    } catch (e) {
      return e instanceof SnapshotRejected ? e.reason : String(e);
    }
  };
  const headers = await labels();
  const flipped = body.slice();
  flipped[flipped.length >> 1] ^= 0x5a;
  assert.deepEqual({
    truncated: await why(stored(body, headers), async () => body.slice(0, body.byteLength - 100)),
    corrupt: await why(stored(body, headers), async () => flipped),
    unlabelled: await why(stored(body, {}), async () => body),
    unreadable: await why(stored(body, headers), async () => { throw new Error('disk'); }),
  }, { truncated: 'truncated', corrupt: 'corrupt', unlabelled: 'unlabelled', unreadable: 'unreadable' });
});

test('a body whose layout does not add up is corrupt', () => {
  const layout = (mutate) => {
    const b = body.slice();
    mutate(new DataView(b.buffer));
    try {
      unpackInto(b, new Uint8Array(heap.byteLength));
      return 'accepted';
    } catch (e) {
      return e.reason;
    }
  };
  assert.deepEqual([
    layout((v) => v.setUint32(0, 0, true)), // not "FTS1"
    layout((v) => v.setUint32(8, v.getUint32(8, true) + 1, true)), // one page more than there is
    layout((v) => v.setUint32(16, 99, true)), // a page past the heap
  ], ['corrupt', 'corrupt', 'corrupt']);
});
