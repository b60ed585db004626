"""What `make report` measures in the real page (headless Chromium, Playwright, a real
gateway process): the boot timeline, and each reply's first token and first paint by
network profile × device profile.

* `boot_visits`: a first visit and a reload, each page's `ready.boot` record
  (bridge/PROTOCOL.md, "Boot") as the page placed it on its own timeline
  (js/boot/timeline.js): the `firsttoken:python-ready` mark's detail.
* `reply_grid`: per device profile (a Pixel 7 at 4× CPU throttling, a desktop at 1×), a
  page boots unthrottled (boot over a weak network is `make bench-network`'s subject),
  then, per network profile (the three profiles of `make bench-network`, made by a
  shaping proxy in front of the gateway, bench/shaper.py, which says why not DevTools'
  emulation), the composer sends prompts with pasted code and each reply's own metrics
  are read (`firsttoken:metrics`,
  js/render/reply-metrics.js): send → first token in the page (`send_to_first_delta_ms`)
  and send → first paint of the answer (`send_to_first_paint_ms`). CPU throttling
  (`Emulation.setCPUThrottlingRate`) slows the page's main thread; Chromium refuses it
  on the worker's target, so Python runs at full speed on both devices.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]

from e2e import percentile  # noqa: E402
from bench.profiles import PROFILES, Profile  # noqa: E402
from bench.shaper import LinkThread, shaped_url  # noqa: E402
from harness.servers import CHROMIUM, CHROMIUM_ARGS, gateway  # noqa: E402

#: name → (download Mbit/s, round trip ms) of bench/profiles.py; upload at the same rate,
#: as bench/network.py.
NETWORKS = {name: (p.down_mbps, p.rtt_ms) for name, p in PROFILES.items()}
#: name → (Playwright device descriptor or None for a desktop context, CPU slowdown).
DEVICES = {"pixel7-4x": ("Pixel 7", 4), "desktop-1x": (None, 1)}
BOOT_TIMEOUT_MS = 120_000
SIM = "ttft_ms=300,tps=200,tokens=60,chunk=1,stamp=1"
PROMPT = (ROOT / "tests" / "corpus" / "compress" / "code-python-02.md").read_text()

WAIT_READY = """([timeout]) => new Promise((resolve, reject) => {
  const seen = () => {
    const mark = performance.getEntriesByName('firsttoken:python-ready')[0];
    if (mark) { resolve(mark.detail ?? {}); return true; }
    return false;
  };
  if (seen()) return;
  const observer = new PerformanceObserver(() => { if (seen()) observer.disconnect(); });
  observer.observe({ type: 'mark' });
  setTimeout(() => reject(new Error(`Python not ready after ${timeout} ms`)), timeout);
})"""
SEND_AND_MEASURE = """() => new Promise((resolve) => {
  addEventListener('firsttoken:metrics', (e) => resolve(e.detail), { once: true });
  document.getElementById('send').click();
})"""


def settings_script(sim: str) -> str:
    settings = json.dumps({"headers": {"x-firsttoken-sim": sim}})
    return f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)})"


def _ready(page: Page) -> dict[str, Any]:
    boot = page.evaluate(WAIT_READY, [BOOT_TIMEOUT_MS])
    if page.get_attribute("html", "data-python") != "ready":
        raise RuntimeError(f"Python did not start: {page.inner_text('#boot')}")
    return boot


def boot_visits(browser: Browser, url: str) -> list[dict[str, Any]]:
    """The boot records of a first visit and of a reload, in one fresh profile."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url + "/")
        first = _ready(page)
        page.reload()
        again = _ready(page)
        return [{"visit": "first visit", **first}, {"visit": "reload", **again}]
    finally:
        context.close()


def _send(page: Page, text: str) -> dict[str, Any]:
    page.fill("#prompt", text)
    metrics = page.evaluate(SEND_AND_MEASURE)
    if metrics.get("send_to_first_paint_ms") is None:
        raise RuntimeError(f"a reply was not painted: {metrics}")
    return metrics


def reply_grid(browser: Browser, devices: dict[str, Any], url: str, proxy: LinkThread, prompts: int) -> list[dict[str, Any]]:
    """One row per (device, network): the replies' send → first token and → first paint.
    `devices`: Playwright's device descriptors; `url` goes through `proxy`."""
    rows: list[dict[str, Any]] = []
    for device, (descriptor, slowdown) in DEVICES.items():
        options = dict(devices[descriptor]) if descriptor else {}
        # No service worker: after boot it downloads the whole runtime for offline use
        # (~30 MB), which would share the shaped link with the replies measured here.
        context = browser.new_context(service_workers="block", **options)
        try:
            page = context.new_page()
            page.add_init_script(settings_script(SIM))
            page.goto(url + "/")
            _ready(page)
            _send(page, "warm up")  # the tokenizer vocabulary and the first paint's code, once
            cdp = context.new_cdp_session(page)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": slowdown})
            _send(page, "warm up, throttled")
            # Round-robin over the networks, so that a one-time cost or a busy moment of
            # this shared machine does not land on one cell.
            measured: dict[str, list[dict[str, Any]]] = {network: [] for network in NETWORKS}
            for i in range(prompts):
                for network, (down, rtt) in NETWORKS.items():
                    proxy.profile = Profile(down, down, rtt)
                    measured[network].append(_send(page, f"{PROMPT}\n\n(question {i} on {network})"))
                    proxy.profile = None
            for network, (down, rtt) in NETWORKS.items():
                replies = measured[network]
                rows.append({
                    "device": device, "network": network, "down_mbps": down, "rtt_ms": rtt, "cpu_slowdown": slowdown,
                    "ttft_ms": [m["send_to_first_delta_ms"] for m in replies],
                    "first_paint_ms": [m["send_to_first_paint_ms"] for m in replies],
                    "first_byte_ms": [m["send_to_first_byte_ms"] for m in replies],
                })
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        finally:
            proxy.profile = None
            context.close()
    return rows


def measure_page(prompts: int) -> dict[str, Any]:
    """Boot visits and the reply grid, on a fresh gateway process (built-in model)."""
    with gateway("--log-level", "warning") as direct, shaped_url(direct) as (url, proxy), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            boot = boot_visits(browser, url)
            grid = reply_grid(browser, pw.devices, url, proxy, prompts)
            version = browser.version
        finally:
            browser.close()
    return {"chromium": version, "boot": boot, "grid": grid, "sim": SIM, "prompts_per_cell": prompts}


def p95(values: list[float]) -> float:
    """The 95th percentile, as bench/e2e.py computes it."""
    value = percentile(values, 95)
    if value is None:
        raise ValueError("no values")
    return value
