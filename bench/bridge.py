"""Benchmark: the host bridge, in WebKitGTK (the engine of iOS's WKWebView) and Chromium.

    .venv/bin/python bench/bridge.py [--runs N] [--pings N]

One product gateway (`python -m gateway`, with the install-time snapshot `make` bakes)
serves both engines in the same run:

- WebKitGTK through the real host (bridge/hosts/gtk/host.py) under Xvfb, on a
  persistent profile: a first launch (cold), then `--runs` relaunches on the same
  profile (warm: what an app's next start is).
- Chromium (Debian's, through Playwright): a first visit in a fresh context, then
  `--runs` new pages in that context (warm: HTTP cache, service worker, snapshot).
  Warm runs alternate engine by engine, so a noisy machine hurts both alike.

Measured:
- `*_rtt_*`: `--pings` round trips native → page → Python (`ping`) → page → native,
  each sent when the last came back. WebKit: timed in the host process, from the
  `evaluate_javascript` that posts the ping to the script message handler receiving
  the pong. Chromium: timed in the page through its own link, page → Python → page
  (no host hop: the page takes no host messages from its own window).
- `*_ready_*_ms`: navigation start → Python ready (the page's User Timing mark
  `firsttoken:python-ready`), medians; `webkit_warm_ratio` is WebKit's warm over
  Chromium's.
- `*_boot`: the page's `ready.boot` timeline (medians of the warm runs), to see where
  each engine's time goes (bridge/PROTOCOL.md, Boot).
- `webkit_page_rtt_*`: the same loop with `hello`, which the page's bridge answers
  itself (the replayed `ready`): native → page → native, without the worker.
- `webkit_exact_counts`: a host chat's `chat.prepared` had an exact `prompt_tokens`,
  with no JSC_useSharedArrayBuffer; `webkit_cache`: `chat.prepared.cache.system` of
  its repeat (`hit` is the goal).
- `webkit_bundle_ready_cold_ms`, `webkit_bundle_ready_warm_ms`: the page shipped in an
  app (`make bundle`), served by the host through its custom scheme with no page
  server: a first launch on a fresh profile, then `--runs` relaunches (medians).
- `webkit_host_first_delta_ms`: a host-sent chat, from the host's send to its first
  `chat.delta` back at the host; `webkit_page_first_delta_ms`: the page's own send,
  from Send to the first text parsed (its reply metrics).

Regressions are said, not left to be noticed (issue 47, item 9): `webkit_rtt_budget_ms`
is the host ping's p95 budget (5 ms: an app's round trip through Python must stay well
inside a 60 Hz frame, and the figure was 4.1 ms on 2026-12-02), `webkit_rtt_over_budget`
whether this run missed it, and a missed budget is printed as a REGRESSION line on
stderr. `webkit_python_rtt_p95_ms` is the ping's p95 less the page-only loop's (the
bridge without the worker), to see which side moved. The p95 of a thousand pings is
load-sensitive on this 2-core machine (several Xvfb, WebKit and Python processes share
it): on 2026-12-06 the issue's 7.3 ms did not reproduce on a quiet machine, at the
commit that filed it (3.9 ms) or after (3.6 ms); quote it with the load average.

Prints progress lines, then LAST one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RTT_BUDGET_MS = 5.0  # the host ping's p95 in WebKit (see the docstring)
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from playwright.sync_api import BrowserContext, sync_playwright  # noqa: E402

from harness.servers import CHROMIUM, CHROMIUM_ARGS, gateway  # noqa: E402
from harness.gtk import WebKitHost, Xvfb  # noqa: E402

BOOT_TIMEOUT_S = 180
WARM_UP = 100  # pings before the timed ones
READY_MARK = "performance.getEntriesByName('firsttoken:python-ready')[0]?.startTime ?? null"
STAGES = ("worker_ms", "assets_ms", "snapshot_ms", "wasm_ms", "interpreter_ms", "loader_ms", "entry_ms", "ready_ms")
SYSTEM = "You are the benchmark assistant of the firsttoken bridge; answer plainly. " * 6

# Chromium has no native host here: the pings go through the page's own link (the one
# its hosts use), page → Python → page. (They went through a MessagePort the page
# handed itself, as a stand-in host, until the page stopped taking its own window's
# messages as a host's: bridge/page/hosts.js.)
CHROMIUM_PINGS = """async (n) => {
  const { link } = await import(new URL('js/link/python-link.js', document.baseURI).href);
  const ms = [];
  for (let i = 0; i < n; i++) {
    const id = `p${i}`;
    const t0 = performance.now();
    await new Promise((resolve) => {
      const heard = (e) => {
        if (e.detail.type !== 'pong' || e.detail.id !== id) return;
        link.removeEventListener('message', heard);
        resolve();
      };
      link.addEventListener('message', heard);
      link.send({ type: 'ping', id });
    });
    ms.push(performance.now() - t0);
  }
  return ms;
}"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median_boot(boots: list[dict[str, Any]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key in STAGES:
        values = [b[key] for b in boots if isinstance(b.get(key), (int, float))]
        out[key] = round(statistics.median(values)) if values else None
    return out


def say(text: str) -> None:
    print(text, flush=True)


# ---- WebKit ----------------------------------------------------------------------
def webkit_boot(url: str, display: str, profile: Path) -> tuple[WebKitHost, float, dict[str, Any]]:
    host = WebKitHost(url + "/", display=display, profile=profile)
    ready = host.wait_for(lambda m: m.get("type") == "ready", BOOT_TIMEOUT_S)
    return host, host.eval(READY_MARK), ready["boot"]


def webkit_chats(host: WebKitHost) -> dict[str, Any]:
    host.send({"type": "settings.set", "id": "s", "settings": {"system": SYSTEM}})
    prepared = []
    first_delta = []
    for request_id in ("k1", "k2"):
        start = len(host.messages)
        sent = time.perf_counter()
        host.send({"type": "chat.send", "id": request_id, "messages": [{"role": "user", "content": "measure me"}]})
        delta = host.wait_for(lambda m, rid=request_id: m.get("id") == rid and m.get("type") == "chat.delta", 60, start)
        first_delta.append((delta["_received"] - sent) * 1000)
        prepared.append(host.wait_for(lambda m, rid=request_id: m.get("id") == rid and m.get("type") == "chat.prepared", 60, start))
        host.wait_for(lambda m, rid=request_id: m.get("id") == rid and m.get("type") in ("chat.done", "chat.error"), 60, start)
    host.send({"type": "settings.set", "id": "s0", "settings": {"system": None}})
    start = len(host.messages)
    host.eval("(document.getElementById('prompt').value = 'measure the page', document.getElementById('composer').requestSubmit(), 1)")
    metrics = host.wait_for(lambda m: m.get("type") == "chat.metrics", 60, start)["metrics"]
    return {
        "webkit_exact_counts": prepared[0].get("exact") is True and isinstance(prepared[0].get("prompt_tokens"), int),
        "webkit_cache": (prepared[1].get("cache") or {}).get("system"),
        "webkit_host_first_delta_ms": round(first_delta[1], 1),
        "webkit_page_first_delta_ms": metrics.get("send_to_first_delta_ms"),
    }


def webkit_bundle_boots(display: str, runs: int) -> dict[str, Any]:
    """Python ready in WebKitGTK from the bundle (firsttoken://app/), cold then warm."""
    from gateway.build.bundle import build_bundle

    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "bundle"
        build_bundle(bundle)
        times = []
        for run in range(runs + 1):
            host = WebKitHost("firsttoken://app/index.html", display=display, profile=Path(tmp) / "profile", bundle=bundle)
            ready = host.wait_for(lambda m: m.get("type") == "ready", BOOT_TIMEOUT_S)
            times.append(host.eval(READY_MARK))
            if run == 0 and ready["boot"].get("snapshot_from") == "server":
                # The snapshot the bundle brought is kept in Cache Storage for the next
                # launch, when the engine gives a custom scheme one.
                try:
                    host.wait_for(lambda m: m.get("type") == "boot.progress"
                                  and str(m.get("stage", "")).startswith("snapshot."), 60)
                except TimeoutError:
                    say("webkit bundle: no snapshot stored (no Cache Storage for this scheme?)")
            host.close()
            say(f"webkit bundle {'cold' if run == 0 else 'warm'}: ready {times[-1]:.0f} ms  {ready['boot']}")
    return {"webkit_bundle_ready_cold_ms": round(times[0]), "webkit_bundle_ready_warm_ms": round(statistics.median(times[1:]))}


# ---- Chromium --------------------------------------------------------------------
def chromium_boot(context: BrowserContext, url: str) -> tuple[Any, float, dict[str, Any]]:
    page = context.new_page()
    page.goto(url + "/")
    page.wait_for_selector('html[data-python="ready"]', state="attached", timeout=BOOT_TIMEOUT_S * 1000)
    boot = page.evaluate("performance.getEntriesByName('firsttoken:python-ready')[0].detail")
    return page, page.evaluate(READY_MARK), boot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="warm runs per engine")
    parser.add_argument("--pings", type=int, default=1000)
    args = parser.parse_args()
    result: dict[str, Any] = {}
    warm: dict[str, list[float]] = {"webkit": [], "chromium": []}
    boots: dict[str, list[dict[str, Any]]] = {"webkit": [], "chromium": []}
    with tempfile.TemporaryDirectory() as tmp, gateway() as url, Xvfb() as xvfb, sync_playwright() as pw:
        profile = Path(tmp) / "webkit-profile"
        # Cold: first launch / first visit; each then keeps its snapshot for the warm runs.
        host, ready_ms, boot = webkit_boot(url, xvfb.display, profile)
        say(f"webkit {host.webkit_version} cold: ready {ready_ms:.0f} ms  {boot}")
        result["webkit_version"] = host.webkit_version
        result["webkit_ready_cold_ms"] = round(ready_ms)
        host.wait_for(lambda m: m.get("type") == "boot.progress" and m.get("stage") == "snapshot.stored", 120)
        # The service worker's install precaches the whole runtime (32 MB, hashed): not
        # during the pings. Then a few pings warm the path up, untimed.
        host.eval("navigator.serviceWorker ? navigator.serviceWorker.ready.then(() => true) : false", timeout=120)
        host.ping_loop(WARM_UP)
        rtt = host.ping_loop(args.pings)
        result["webkit_rtt_p50_ms"] = round(percentile(rtt, 0.5), 3)
        result["webkit_rtt_p95_ms"] = round(percentile(rtt, 0.95), 3)
        say(f"webkit rtt over {len(rtt)} pings: p50 {result['webkit_rtt_p50_ms']} ms, p95 {result['webkit_rtt_p95_ms']} ms")
        # The same without Python: `hello`, answered by the page's bridge with `ready`.
        rtt = host.ping_loop(args.pings, kind="hello")
        result["webkit_page_rtt_p50_ms"] = round(percentile(rtt, 0.5), 3)
        result["webkit_page_rtt_p95_ms"] = round(percentile(rtt, 0.95), 3)
        say(f"webkit rtt native → page → native: p50 {result['webkit_page_rtt_p50_ms']} ms, p95 {result['webkit_page_rtt_p95_ms']} ms")
        result.update(webkit_chats(host))
        host.close()

        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        result["chromium_version"] = browser.version
        context = browser.new_context()
        page, ready_ms, boot = chromium_boot(context, url)
        say(f"chromium cold: ready {ready_ms:.0f} ms  {boot}")
        result["chromium_ready_cold_ms"] = round(ready_ms)
        page.evaluate("new Promise((resolve) => performance.getEntriesByName('firsttoken:boot:snapshot.stored').length ? resolve() :"
                      " new PerformanceObserver((l, o) => { if (l.getEntriesByName('firsttoken:boot:snapshot.stored').length) { o.disconnect(); resolve(); } }).observe({ type: 'mark' }))")
        page.evaluate("navigator.serviceWorker.ready.then(() => true)")
        page.evaluate(CHROMIUM_PINGS, WARM_UP)
        rtt = page.evaluate(CHROMIUM_PINGS, args.pings)
        result["chromium_rtt_p50_ms"] = round(percentile(rtt, 0.5), 3)
        result["chromium_rtt_p95_ms"] = round(percentile(rtt, 0.95), 3)
        say(f"chromium rtt over {len(rtt)} pings: p50 {result['chromium_rtt_p50_ms']} ms, p95 {result['chromium_rtt_p95_ms']} ms")
        page.close()

        for run in range(args.runs):
            host, ready_ms, boot = webkit_boot(url, xvfb.display, profile)
            host.close()
            warm["webkit"].append(ready_ms)
            boots["webkit"].append(boot)
            say(f"run {run + 1}: webkit warm ready {ready_ms:.0f} ms  {boot}")
            page, ready_ms, boot = chromium_boot(context, url)
            page.close()
            warm["chromium"].append(ready_ms)
            boots["chromium"].append(boot)
            say(f"run {run + 1}: chromium warm ready {ready_ms:.0f} ms  {boot}")
        context.close()
        browser.close()
        result.update(webkit_bundle_boots(xvfb.display, args.runs))
    for engine in ("webkit", "chromium"):
        result[f"{engine}_ready_warm_ms"] = round(statistics.median(warm[engine]))
        result[f"{engine}_boot"] = median_boot(boots[engine])
    result["webkit_warm_ratio"] = round(result["webkit_ready_warm_ms"] / result["chromium_ready_warm_ms"], 2)
    result["webkit_python_rtt_p95_ms"] = round(result["webkit_rtt_p95_ms"] - result["webkit_page_rtt_p95_ms"], 3)
    result["webkit_rtt_budget_ms"] = RTT_BUDGET_MS
    result["webkit_rtt_over_budget"] = result["webkit_rtt_p95_ms"] > RTT_BUDGET_MS
    result["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    if result["webkit_rtt_over_budget"]:
        print(f"REGRESSION: WebKit host ping p95 {result['webkit_rtt_p95_ms']} ms > {RTT_BUDGET_MS} ms "
              f"(page-only loop {result['webkit_page_rtt_p95_ms']} ms, load {result['load_avg']})", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
