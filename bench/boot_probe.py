"""Benchmark: the steps of a warm boot one at a time, in WebKitGTK and in Chromium.

    .venv/bin/python bench/boot_probe.py [--runs N]

bench/boot_probe.html starts a module worker (bench/boot_probe_worker.mjs) that times,
with the page's own functions (js/boot/snapshot.js): fetching, validating and compiling
Pyodide's wasm (buffered, again in the same process, streaming), whether a compiled
module can be kept (IndexedDB) or posted to another thread (structured clone); storing the gateway's snapshot as
the page does, then looking it up, reading its body (FileReaderSync of the blob, and
`Response.arrayBuffer()`, alternately, three times each), hashing it and unpacking it.
Served cross-origin isolated, as the page is. Each engine runs `--runs` times, each in
a new process (WebKit: a new host; Chromium: a new browser).

Prints each run's figures, then LAST one JSON line: the per-engine medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from harness.bench_page import bench_app, bench_page  # noqa: E402
from harness.servers import serve_app  # noqa: E402
from harness.gtk import WebKitHost, Xvfb  # noqa: E402


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, list):
            out[key] = round(statistics.median([v for r in runs for v in r[key]]), 1)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = round(statistics.median([r[key] for r in runs]), 1)
        else:
            out[key] = value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"webkit": [], "chromium": []}
    with serve_app(bench_app({}, isolated=True)) as base, Xvfb() as xvfb:
        for _ in range(args.runs):
            with WebKitHost(base + "/bench/boot_probe.html", display=xvfb.display) as host:
                host.wait_event(lambda e: e["event"] == "load", 120)
                result = host.eval("window.probe", timeout=600)
            print("webkit", json.dumps(result), flush=True)
            runs["webkit"].append(result)
            with bench_page(isolated=True) as page:
                result = page.run("/bench/boot_probe.html")
            print("chromium", json.dumps(result), flush=True)
            runs["chromium"].append(result)
    print(json.dumps({engine: medians(r) for engine, r in runs.items()}))


if __name__ == "__main__":
    main()
