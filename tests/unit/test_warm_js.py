"""js/page/warm.js in Node, on a fake clock and a fake fetch: a warm-up goes to the API's
origin as one keyless `GET {base}/models`, not again while that origin had a request
in the last minute (a warm-up or a chat), again after it, per origin, and never for a
base URL that is not http(s)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from harness.servers import ROOT

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

SCRIPT = """
import { Warmer, WARM_FOR_MS } from './js/page/warm.js';
let t = 0;
let base = 'https://api.example/v1/';
const sent = [];
const fetch = (url, init) => { sent.push({ url, headers: init.headers, at: t });
  return Promise.resolve({ arrayBuffer: () => Promise.resolve(new ArrayBuffer(0)) }); };
const w = new Warmer(() => ({ base_url: base }), { fetch, now: () => t });
const log = [];
log.push(w.warm());                       // cold: goes
t += 1000; log.push(w.warm());            // warm: not again
t += WARM_FOR_MS - 1000 - 1; log.push(w.warm());   // 1 ms short of a minute: still warm
t += 1; log.push(w.warm());               // a minute since the last: goes
t += 30_000; w.used();                    // a chat went
t += WARM_FOR_MS - 1; log.push(w.warm()); // within a minute of the chat: warm
base = 'http://127.0.0.1:9/v1'; log.push(w.warm());   // another origin: cold
base = 'javascript:alert(1)'; log.push(w.warm());
base = 'not a url'; log.push(w.warm());
console.log(JSON.stringify({ log, sent, count: w.sent, window: WARM_FOR_MS }));
"""


def test_warm_ups_go_once_per_cold_origin() -> None:
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", SCRIPT],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(done.stdout)
    assert out["log"] == [True, False, False, True, False, True, False, False]
    assert [s["url"] for s in out["sent"]] == [
        "https://api.example/v1/models", "https://api.example/v1/models", "http://127.0.0.1:9/v1/models"]
    assert out["count"] == 3 and out["window"] == 60_000
    # No key, nothing but what asks for JSON: a simple request, no CORS preflight.
    assert all(s["headers"] == {"accept": "application/json"} for s in out["sent"])
