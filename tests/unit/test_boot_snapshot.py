"""The snapshot's own checks on Node (js/boot/snapshot.js), over fake responses: a packed
heap comes back whole, and a stored body that is cut short, altered, unlabelled or
unreadable is refused with its reason before Pyodide sees it; a body whose layout does
not add up is refused too. The same checks on real Cache Storage, with the boot that
follows each refusal: tests/e2e/test_boot.py (a corrupt entry and another build's)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

SCRIPT = """
import { packHeap, unpackInto, sha256Hex, verifiedBody, SnapshotRejected } from './js/boot/snapshot.js';
const heap = new Uint8Array(4096 * 6 + 16);
heap.set([1, 2, 3], 4096 * 2 + 7);       // a page with something, between pages of zeros
heap.set([9], 4096 * 6 + 3);              // the short last page
const files = [['firsttoken/__init__.py', new TextEncoder().encode('x = 1\\n')]];
const body = packHeap(heap, files);
const digest = await sha256Hex(body);
const labels = { 'x-firsttoken-length': String(heap.byteLength), 'x-firsttoken-stored': String(body.byteLength), 'x-firsttoken-sha256': digest };
const stored = (bytes, headers = labels) => new Response(bytes, { headers });
const why = async (response, read) => {
  try { await verifiedBody(response, read); return 'accepted'; } catch (e) { return e instanceof SnapshotRejected ? e.reason : String(e); }
};
const out = {};
const back = new Uint8Array(heap.byteLength);
const got = await verifiedBody(stored(body), async () => body);
out.files = unpackInto(got, back).map(([name, bytes]) => [name, new TextDecoder().decode(bytes)]);
out.same = back.every((b, i) => b === heap[i]);
out.packedSmaller = body.byteLength < heap.byteLength;
const flipped = body.slice(); flipped[flipped.length >> 1] ^= 0x5a;
out.reasons = {
  truncated: await why(stored(body), async () => body.slice(0, body.byteLength - 100)),
  corrupt: await why(stored(body), async () => flipped),
  unlabelled: await why(stored(body, {}), async () => body),
  unreadable: await why(stored(body), async () => { throw new Error('disk'); }),
};
const layout = (mutate) => { const b = body.slice(); mutate(new DataView(b.buffer)); try { unpackInto(b, new Uint8Array(heap.byteLength)); return 'accepted'; } catch (e) { return e.reason; } };
out.layout = [
  layout((v) => v.setUint32(0, 0, true)),                    // not "FTS1"
  layout((v) => v.setUint32(8, v.getUint32(8, true) + 1, true)),  // one page more than there is
  layout((v) => v.setUint32(16, 99, true)),                  // a page past the heap
];
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def out() -> dict:
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", SCRIPT], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_packed_heap_and_its_files_come_back_whole(out: dict) -> None:
    assert out["same"] and out["packedSmaller"]
    assert out["files"] == [["firsttoken/__init__.py", "x = 1\n"]]


def test_a_bad_stored_body_is_refused_with_its_reason(out: dict) -> None:
    assert out["reasons"] == {"truncated": "truncated", "corrupt": "corrupt", "unlabelled": "unlabelled", "unreadable": "unreadable"}


def test_a_body_whose_layout_does_not_add_up_is_corrupt(out: dict) -> None:
    assert out["layout"] == ["corrupt", "corrupt", "corrupt"]
