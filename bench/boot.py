"""Benchmark: time until Python is ready, firsttoken's page against a stock PyScript page.

    .venv/bin/python bench/boot.py [--runs N]

Both pages run the same Pyodide (node_modules/pyodide) in the same headless Chromium,
in one run, interleaved run by run so that a noisy machine hurts both alike:

- stock: bench/boot_stock.html, one `<script type="py">` (PyScript's main thread) that
  imports the modules py/boot.py imports and answers a protocol `hello` with `ready`
  through firsttoken.browser.start(); served by a bench-only server in this process.
- firsttoken: the product page, served by the product gateway (`python -m gateway`) in
  a subprocess, from a frozen copy of this working tree (so that an edit made while the
  benchmark runs cannot change the package and void the stored snapshot midway), with
  the install-time snapshot baked as `make` bakes it (`python -m gateway.build.bake`). Cold
  runs are also timed against a second copy without it, where a first visit boots
  Python normally (`cold_without_install_snapshot_ms`).

"Ready" is the moment Python has imported firsttoken and answered `hello`: the User
Timing mark `stock:python-ready` / `firsttoken:python-ready`, in ms since navigation
start, read from the page. Cold runs use a fresh browser context each (empty HTTP
cache, no service worker, no snapshot). Warm runs reuse one context per page after a
first visit, which for firsttoken stores the snapshot and installs the service worker
(the benchmark waits for both, on their marks, before timing anything).

`interactive_ms` (firsttoken only): DOMContentLoaded → the first key typed by the
driver lands in the focused message box, both on the page's clock. The key is sent as
soon as the driver sees DOMContentLoaded, so the figure includes the driver's own
round trip: it is an upper bound.

Prints one line per run, then LAST one JSON line with medians:
    {"stock_pyscript_warm_ms", "stock_pyscript_cold_ms", "cold_ms", "warm_ms",
     "ratio_warm", "interactive_ms", "cold_without_install_snapshot_ms", ...}
(`interactive_ms` is the median over every firsttoken run, cold and warm.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, expect, sync_playwright
from starlette.applications import Starlette
from starlette.responses import FileResponse
from starlette.routing import Mount, Route

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from gateway.static import Assets, PackageZip  # noqa: E402
from harness.servers import CHROMIUM, CHROMIUM_ARGS, copy_tree, gateway, serve_app  # noqa: E402

#: A cold boot takes 5–10 s on this machine; a stuck one fails the benchmark, not hangs it.
TIMEOUT_MS = 120_000

# Resolves with the mark's startTime (ms since navigation start) once it exists.
# Event-driven (PerformanceObserver), with a deadline so a page that never gets
# there fails the benchmark instead of hanging it.
WAIT_MARK = """([name, timeout]) => new Promise((resolve, reject) => {
  const now = () => performance.getEntriesByName(name)[0];
  if (now()) return resolve(now().startTime);
  const observer = new PerformanceObserver((list) => {
    const entry = list.getEntriesByName(name)[0];
    if (entry) { observer.disconnect(); resolve(entry.startTime); }
  });
  observer.observe({ type: 'mark' });
  setTimeout(() => reject(new Error(`no ${name} after ${timeout} ms: ` + document.querySelector('#boot')?.textContent)), timeout);
})"""
BOOT_DETAIL = "() => performance.getEntriesByName('firsttoken:python-ready')[0]?.detail ?? null"
# Installed before any page script: when DOMContentLoaded fired, and when the first
# key reached the message box (and whether it was focused then).
INTERACTIVE_PROBE = """
document.addEventListener('DOMContentLoaded', () => { window.__benchDCL = performance.now(); }, { once: true });
document.addEventListener('input', (event) => {
  if (window.__benchTyped === undefined && event.target.id === 'prompt') {
    window.__benchTyped = performance.now();
    window.__benchFocused = document.activeElement === event.target;
  }
}, true);
"""


# ---- servers -------------------------------------------------------------------------
@contextmanager
def stock_server() -> Iterator[str]:
    """The stock page, Pyodide, PyScript and the package zip, with the gateway's own
    caching headers (ETag + no-cache) but none of its isolation headers."""
    node_modules = ROOT / "node_modules"
    app = Starlette(routes=[
        Route("/", lambda request: FileResponse(ROOT / "bench" / "boot_stock.html", headers={"cache-control": "no-cache"})),
        Route("/py/firsttoken.zip", PackageZip(ROOT / "py" / "firsttoken").endpoint),
        Mount("/vendor/pyodide", app=Assets(directory=node_modules / "pyodide")),
        Mount("/vendor/pyscript", app=Assets(directory=node_modules / "@pyscript" / "core" / "dist")),
    ])
    with serve_app(app) as url:
        yield url


@contextmanager
def frozen_gateway(*, baked: bool) -> Iterator[str]:
    """The product gateway (`python -m gateway`) over a copy of this working tree, with
    node_modules linked; its base URL once it prints that it listens. `baked`: with the
    install-time snapshot, as `make` bakes it for the product (otherwise a first visit
    boots Python normally and makes its own snapshot)."""
    with tempfile.TemporaryDirectory(prefix="firsttoken-bench-") as tmp:
        copy = copy_tree(Path(tmp))
        if baked:
            subprocess.run([sys.executable, "-m", "gateway.build.bake", "--root", str(copy)], cwd=copy, check=True,
                           env={**os.environ, "PYTHONPATH": f"{copy / 'py'}{os.pathsep}{copy}"}, stdout=subprocess.DEVNULL)
        with gateway("--log-level", "error", root=copy) as url:
            yield url


# ---- one visit -----------------------------------------------------------------------
def visit_stock(context: BrowserContext, url: str) -> float:
    page = context.new_page()
    try:
        page.goto(url + "/", wait_until="domcontentloaded")
        return page.evaluate(WAIT_MARK, ["stock:python-ready", TIMEOUT_MS])
    finally:
        page.close()


def visit_firsttoken(context: BrowserContext, url: str, *, settle: bool = False) -> dict[str, Any]:
    """Open the page, type a key at DOMContentLoaded, wait for Python; the run's figures.
    `settle`: also wait until the snapshot is stored and the service worker is active."""
    page = context.new_page()
    try:
        page.goto(url + "/", wait_until="domcontentloaded")
        page.keyboard.type("x")
        expect(page.locator("#prompt")).to_have_value("x", timeout=TIMEOUT_MS)
        ready = page.evaluate(WAIT_MARK, ["firsttoken:python-ready", TIMEOUT_MS])
        probe = page.evaluate("() => [window.__benchDCL, window.__benchTyped, window.__benchFocused]")
        boot = page.evaluate(BOOT_DETAIL)
        if settle:
            if boot["snapshot"] != "restored":
                page.evaluate(WAIT_MARK, ["firsttoken:boot:snapshot.stored", TIMEOUT_MS])
            page.evaluate("() => navigator.serviceWorker.ready.then(() => true)")
        return {
            "ready_ms": ready,
            "interactive_ms": probe[1] - probe[0],
            "focused": probe[2],
            "boot": boot,
        }
    finally:
        page.close()


def new_context(browser: Browser, firsttoken: bool) -> BrowserContext:
    context = browser.new_context()
    if firsttoken:
        context.add_init_script(INTERACTIVE_PROBE)
    return context


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def describe(run: dict[str, Any]) -> str:
    boot = run["boot"]
    stages = " ".join(f"{k}={boot[k]}" for k in (
        "snapshot", "worker_ms", "snapshot_ms", "wasm_ms", "interpreter_ms", "import_ms", "ready_ms") if k in boot)
    return f"ready {run['ready_ms']:.0f} ms, interactive {run['interactive_ms']:.0f} ms ({stages})"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5, help="timed runs per page and mode (medians; at least 5)")
    p.add_argument("--only", choices=("cold", "warm"), help="one mode only (while developing; no JSON line)")
    args = p.parse_args(argv)

    stock_cold: list[float] = []
    stock_warm: list[float] = []
    ours_cold: list[dict[str, Any]] = []
    ours_cold_unbaked: list[dict[str, Any]] = []
    ours_warm: list[dict[str, Any]] = []
    with (stock_server() as stock_url, frozen_gateway(baked=True) as our_url,
          frozen_gateway(baked=False) as unbaked_url, sync_playwright() as pw):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            print(f"stock PyScript page: {stock_url}/   firsttoken: {our_url}/ (unbaked: {unbaked_url}/)", flush=True)
            for i in range(args.runs if args.only != "warm" else 0):
                for who in ("stock", "firsttoken", "unbaked"):
                    context = new_context(browser, who != "stock")
                    try:
                        if who == "stock":
                            stock_cold.append(ms := visit_stock(context, stock_url))
                            print(f"cold {i + 1} stock:      ready {ms:.0f} ms", flush=True)
                        else:
                            runs = ours_cold if who == "firsttoken" else ours_cold_unbaked
                            runs.append(run := visit_firsttoken(context, our_url if who == "firsttoken" else unbaked_url))
                            print(f"cold {i + 1} {who + ':':11} {describe(run)}", flush=True)
                    finally:
                        context.close()

            if args.only == "cold":
                print(f"cold medians: stock {median(stock_cold)} ms, firsttoken {median([r['ready_ms'] for r in ours_cold])} ms,"
                      f" without the install-time snapshot {median([r['ready_ms'] for r in ours_cold_unbaked])} ms")
                return
            stock_context = new_context(browser, False)
            our_context = new_context(browser, True)
            visit_stock(stock_context, stock_url)  # fills the HTTP cache
            first = visit_firsttoken(our_context, our_url, settle=True)  # stores the snapshot, installs the service worker
            print(f"first visit firsttoken: {describe(first)}", flush=True)
            for i in range(args.runs):
                stock_warm.append(ms := visit_stock(stock_context, stock_url))
                print(f"warm {i + 1} stock:      ready {ms:.0f} ms", flush=True)
                ours_warm.append(run := visit_firsttoken(our_context, our_url))
                print(f"warm {i + 1} firsttoken: {describe(run)}", flush=True)
            stock_context.close()
            our_context.close()
        finally:
            browser.close()

    if args.only == "warm":
        print(f"warm medians: stock {median(stock_warm)} ms, firsttoken {median([r['ready_ms'] for r in ours_warm])} ms")
        return
    restored = sum(r["boot"]["snapshot"] == "restored" for r in ours_warm)
    ours = ours_cold + ours_cold_unbaked + ours_warm
    result = {
        "stock_pyscript_warm_ms": median(stock_warm),
        "stock_pyscript_cold_ms": median(stock_cold),
        "cold_ms": median([r["ready_ms"] for r in ours_cold]),
        "warm_ms": median([r["ready_ms"] for r in ours_warm]),
        "ratio_warm": round(median([r["ready_ms"] for r in ours_warm]) / median(stock_warm), 3),
        "interactive_ms": median([r["interactive_ms"] for r in ours]),
        "cold_without_install_snapshot_ms": median([r["ready_ms"] for r in ours_cold_unbaked]),
        "interactive_max_ms": round(max(r["interactive_ms"] for r in ours), 1),
        "focused": all(r["focused"] for r in ours),
        "warm_snapshot_restored": f"{restored}/{len(ours_warm)}",
        "runs": args.runs,
    }
    print("warm firsttoken stages (median): " + ", ".join(
        f"{k} {median([r['boot'][k] for r in ours_warm if r['boot'].get(k) is not None])}"
        for k in ("worker_ms", "snapshot_ms", "wasm_ms", "interpreter_ms", "loader_ms", "ready_ms")
        if any(r["boot"].get(k) is not None for r in ours_warm)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
