"""The boot line and the snapshot decision on Node: js/boot/progress.js (stages only move
forward; bytes shown while a first visit downloads, the bar never goes back) and
js/boot/snapshot-pays.js (the rule that decides whether the gateway's snapshot is worth
its bytes). The page showing them is tested in Chromium (tests/e2e/test_network.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")


def run(body: str) -> Any:
    script = (
        "import { BootProgress, STAGES, wireBytes } from './js/boot/progress.js';\n"
        "import { CPU_REFERENCE_PER_MS, cpuScale, cpuWhile, streamRate, snapshotPays, RESTORE_SAVES_MS } from './js/boot/snapshot-pays.js';\n"
        "const out = {};\n" + body + "\nconsole.log(JSON.stringify(out));\n"
    )
    done = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_stages_only_move_forward_whatever_order_they_arrive_in() -> None:
    out = run("""
const p = new BootProgress(0);
out.texts = [];
// A restore that failed reports runtime and wasm again; the link says hello late.
for (const stage of ['pyscript', 'runtime', 'wasm', 'snapshot', 'runtime', 'wasm', 'interpreter', 'bogus', 'hello', 'runtime', 'ready']) {
  p.stage(stage);
  out.texts.push(p.view().text);
}
out.order = STAGES.map(([, text]) => text);
""")
    ranks = [out["order"].index(t) for t in out["texts"]]
    assert ranks == sorted(ranks)
    assert out["texts"][-1] == "Python ready"
    assert out["texts"][0] == "Starting Python…"  # index.html's own first text: no step back


def test_bytes_show_once_every_length_is_known_and_the_bar_never_goes_back() -> None:
    out = run("""
const p = new BootProgress(2);
const views = [];
p.expect('a', 4_000_000);
views.push(p.view());                 // b's length unknown: no count yet
p.expect('b', 2_200_000);
p.add('a', 1_000_000);
views.push(p.view());
p.stage('runtime');
p.add('a', 2_100_000);
views.push(p.view());
p.expect('snapshot', 4_000_000);      // the total grows: the bar must not drop
views.push(p.view());
p.done('a'); p.done('b'); p.done('snapshot');
views.push(p.view());
p.expect('late', 1_000_000);          // after the last byte: never shown again
views.push(p.view());
out.views = views;
""")
    v = out["views"]
    assert v[0]["fraction"] is None and v[0]["text"] == "Starting Python…"
    assert v[1]["text"] == "Downloading Python 1.0 of 6.2 MB"
    assert v[2]["text"] == "Downloading Python 3.1 of 6.2 MB"
    fractions = [x["fraction"] for x in v[1:4]]
    assert fractions == sorted(fractions) and 0 < fractions[0]
    assert v[3]["text"].endswith("of 10.2 MB")
    assert v[4] == {"text": "Loading Python…", "stage": "runtime", "fraction": None}
    assert v[5]["fraction"] is None


def test_encoded_bytes_are_scaled_to_the_wire() -> None:
    out = run("""
const h = (o) => new Headers(o);
out.identity = wireBytes(h({ 'content-length': '100' }));
out.br = wireBytes(h({ 'content-length': '25', 'content-encoding': 'br', 'x-firsttoken-identity-length': '100' }));
out.unknown = wireBytes(h({ 'content-encoding': 'br' }));
out.unscaled = wireBytes(h({ 'content-length': '25', 'content-encoding': 'br' }));
""")
    assert out["identity"] == {"total": 100, "scale": 1}
    assert out["br"] == {"total": 25, "scale": 0.25}
    assert out["unknown"]["total"] == 0
    assert out["unscaled"] == {"total": 25, "scale": 0}  # counted whole when it ends


def test_the_snapshot_is_fetched_only_when_its_bytes_cost_less_than_a_plain_boot() -> None:
    out = run("""
const mbps = (m) => (m * 1e6) / 8 / 1000;   // bytes per ms
const snap = 4_820_000;
out.saves = RESTORE_SAVES_MS;
out.loopback = snapshotPays({ bytes: snap, rate: mbps(1000) });
out.g4 = snapshotPays({ bytes: snap, rate: mbps(9) });
out.g3 = snapshotPays({ bytes: snap, rate: mbps(1.6) });
const ref = CPU_REFERENCE_PER_MS;
out.g4busy = snapshotPays({ bytes: snap, rate: mbps(9), cpu: cpuScale(ref / 4) });
out.scales = [cpuScale(-1), cpuScale(ref * 2), cpuScale(ref / 4), cpuScale(ref / 1000)];
out.probe = await cpuWhile(Promise.resolve());                              // one slice, then done
out.probeLong = await cpuWhile(new Promise((r) => setTimeout(r, 30)));
out.capped = snapshotPays({ bytes: snap, rate: null, connection: { downlink: 10 } });
out.measuredWins = snapshotPays({ bytes: snap, rate: mbps(1000), connection: { downlink: 1.55 } });
out.netinfo = snapshotPays({ bytes: snap, rate: null, connection: { downlink: 1.5 } });
out.saveData = snapshotPays({ bytes: snap, rate: mbps(1000), connection: { saveData: true } });
out.unknown = snapshotPays({ bytes: snap, rate: null });
out.noLength = snapshotPays({ bytes: 0, rate: mbps(1) });
// The first chunk's arrival starts the clock: its bytes and the round trip before it do not count.
out.rate = streamRate([[1000, 65536], [1100, 50_000], [1250, 100_000]]);
out.burst = streamRate([[5, 65536], [5, 65536]]);
out.one = streamRate([[5, 65536]]);
out.nullBytes = snapshotPays({ bytes: null, rate: mbps(1) });
""")
    assert out["loopback"]["fetch"] is True and out["loopback"]["reason"] == "fast-link"
    assert out["g4"] == {"fetch": False, "reason": "slow-link", "expected_ms": round(4_820_000 / (9e6 / 8 / 1000)),
                         "saves_ms": out["saves"]}
    # A CPU four times slower than the reference: a restore saves four times as much.
    assert out["g4busy"]["fetch"] is True and out["g4busy"]["saves_ms"] == 4 * out["saves"]
    assert out["scales"] == [1, 1, 4, 8] and out["probe"] > 0 and out["probeLong"] > 0
    assert out["g3"]["fetch"] is False
    assert out["capped"]["fetch"] is True  # Chromium's 10 Mbit/s cap says nothing
    assert out["measuredWins"]["fetch"] is True  # a default estimate never overrules a measurement
    assert out["netinfo"]["fetch"] is False
    assert out["saveData"]["fetch"] is False and out["saveData"]["reason"] == "save-data"
    assert out["unknown"]["fetch"] is True and out["unknown"]["reason"] == "link-unknown"
    assert out["noLength"]["fetch"] is True
    assert out["rate"] == pytest.approx(150_000 / 250)
    assert out["burst"] is None or out["burst"] > 1e300  # Infinity (JSON: null): all at once
    assert out["one"] is None
    assert out["nullBytes"]["fetch"] is True
