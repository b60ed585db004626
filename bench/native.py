"""Benchmark: chunk→paint of one stamped stream, native against the page in WebKit and Chromium.

    .venv/bin/python bench/native.py [--runs N] [--rates 50,500] [--tokens 400,2000]

The article's "native 3–8 ms against 45–280 ms in a mobile WebView", measured here in
one run, on one machine, from one gateway (`python -m gateway`, the built-in model,
`stamp=1`: every one-token chunk carries its send time). Renderers (bench/native/):

    native            a GTK 4 text view (bench/native/gtk_renderer.py), plain text
    native-markdown   the same view styled as markdown with text tags
    webkit            the page in WebKitGTK 6.0 through the GTK host (the WKWebView analogue)
    webkit-plain      the plain-text peer page (bench/render-plain.js) in WebKitGTK
    chromium          the page in headless Chromium (Playwright), 1x CPU
    chromium-4x       the same at 4x CPU throttling (CDP), during the reply
    chromium-plain    the plain-text peer page in Chromium, 1x

The GTK and WebKit windows (1024x768) share one Xvfb screen; GTK paces both with its
frame clock at 60 Hz (Xvfb reports no refresh rate, so GTK uses its 16.7 ms default;
the median interval between idle animation frames is printed per renderer). Headless
Chromium runs at its default frame rate, 60 Hz, with the same viewport.

Measured from each chunk's gateway stamp (`time.time()`, epoch ms) to the end of the
frame that painted it: GTK's frame clock `after-paint` for the native view, the page's
own measure for pages (js/render/reply-metrics.js: a message posted from the
requestAnimationFrame callback that changed the DOM runs once that frame's rendering is
done). Every clock is this machine's CLOCK_REALTIME: the gateway's and the native
view's `time.time()`, the pages' `performance.timeOrigin + now()`, whose distance from
`Date.now()` is measured before each reply and reported (`clock_skew_ms`).

Each run opens every renderer in turn (a fresh process or page, the order rotated from
run to run so that the machine's noise falls on all), streams one warm-up reply, then
one reply per rate. Per renderer and rate: p50 and p95 are medians over runs of each
run's percentile; max is over all runs. Every sample goes to build/bench/native.json
(`{"renderers": {name: {"50": [ms, …], "500": […]}}, "machine", "date", …}`, read by
`make report` for the CDF).

Prints progress lines, then LAST one JSON line with `<renderer>_{p50,p95,max}_ms_<rate>`
(`-` as `_`), `webkit_vs_native_p95_<rate>` (target at 50 tok/s: ≤ 1.5),
`<engine>_vs_<engine>_plain_p95_<rate>` (the page against the same engine's plain-text
peer) and the machine's load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.native.pages import ChromiumPage, WebKitPage, plain_page_tree  # noqa: E402
from bench.native.renderers import NativeRenderer, Reply, percentile, sim_header  # noqa: E402
from harness.servers import CHROMIUM, CHROMIUM_ARGS, gateway  # noqa: E402
from harness.gtk import Xvfb  # noqa: E402

RENDERERS = ("native", "native-markdown", "webkit", "webkit-plain", "chromium", "chromium-4x", "chromium-plain")
OUT = ROOT / "build" / "bench" / "native.json"
SCREEN = "1280x800x24"
THROTTLE = 4
# The gateway's own limits must not pace the benchmark.
GATEWAY_ARGS = ("--rpm", "100000", "--tpm", "100000000")


def opener(name: str, urls: dict[str, str], display: str, browser: Any, throttle: float) -> Callable[[], Any]:
    """How to open renderer `name` (a context manager with `reply(sim, tokens)`)."""
    plain = name.endswith("-plain")
    url = urls["plain" if plain else "page"]
    if name == "native":
        return lambda: NativeRenderer(urls["page"], display=display)
    if name == "native-markdown":
        return lambda: NativeRenderer(urls["page"], display=display, markdown=True)
    if name.startswith("webkit"):
        return lambda: WebKitPage(url, display=display, plain=plain, name=name)
    if name.startswith("chromium"):
        rate = throttle if name.endswith("-4x") else 1
        return lambda: ChromiumPage(browser, url, plain=plain, throttle=rate, name=name)
    raise ValueError(f"unknown renderer {name!r}")


def describe(name: str, tps: int, run: int, reply: Reply) -> str:
    s = reply.samples_ms
    extra = reply.extra
    legs = extra.get("chunk_legs_ms")
    frames = reply.frames if reply.frames is not None else extra.get("paints")
    return (
        f"{name:16} {tps:4} tok/s run {run}: chunk→paint p50 {percentile(s, 50):.1f} p95 {percentile(s, 95):.1f} "
        f"max {max(s):.1f} ms over {len(s)} chunks"
        + (f", {frames} frames" if frames is not None else "")
        + (f"; legs p50/p95 {legs}" if legs else "")
        + (f"; clock skew {reply.clock_skew_ms} ms" if reply.clock_skew_ms is not None else "")
        + (f"; frames probed {extra['frames']}" if isinstance(extra.get("frames"), dict) else "")
    )


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": model, "system": platform.platform(), "python": platform.python_version()}


def key(name: str) -> str:
    return name.replace("-", "_")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rates", default="50,500", help="tokens per second, comma-separated")
    parser.add_argument("--tokens", default="400,2000", help="chunks per reply, one per rate (8 s at 50, 4 s at 500)")
    parser.add_argument("--renderers", default=",".join(RENDERERS))
    parser.add_argument("--throttle", type=float, default=THROTTLE, help="the CPU slowdown of chromium-4x")
    parser.add_argument("--out", type=Path, default=OUT, help="where every sample goes (JSON)")
    parser.add_argument("--frames", action="store_true",
                        help="also probe the pages' animation frames while they stream (gaps, rendering); "
                             "it keeps them animating, so figures differ a little from a plain run")
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    tokens = [int(n) for n in args.tokens.split(",")]
    if len(tokens) != len(rates):
        parser.error("--tokens needs one count per rate")
    names = [n for n in args.renderers.split(",") if n]
    for name in names:
        if name not in RENDERERS:
            parser.error(f"unknown renderer {name!r}; known: {', '.join(RENDERERS)}")

    samples: dict[str, dict[str, list[float]]] = {n: {str(r): [] for r in rates} for n in names}
    per_run: dict[str, dict[str, list[dict[str, float]]]] = {n: {str(r): [] for r in rates} for n in names}
    skews: list[float] = []
    frame_intervals: dict[str, list[float]] = {}
    versions: dict[str, str] = {}
    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="firsttoken-native-") as tmp, \
            gateway(*GATEWAY_ARGS) as page_url, \
            gateway(*GATEWAY_ARGS, root=plain_page_tree(Path(tmp))) as plain_url, \
            Xvfb(SCREEN) as xvfb, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        versions["chromium"] = browser.version
        urls = {"page": page_url, "plain": plain_url}
        try:
            for run in range(1, args.runs + 1):
                shift = (run - 1) % len(names)
                for name in names[shift:] + names[:shift]:
                    with opener(name, urls, xvfb.display, browser, args.throttle)() as renderer:
                        if isinstance(renderer, NativeRenderer):
                            versions["gtk"] = renderer.gtk_version
                        elif isinstance(renderer, WebKitPage):
                            versions["webkit"] = renderer.version
                        if getattr(renderer, "settled", True) is False:
                            print(f"{name}: the page's first-visit work (offline copy, snapshot) did not end in 60 s", flush=True)
                        interval = getattr(renderer, "frame_interval_ms", None)
                        if interval is not None:
                            frame_intervals.setdefault(name, []).append(interval)
                        for tps, n in zip(rates, tokens):
                            probe = {"frames": True} if args.frames and not isinstance(renderer, NativeRenderer) else {}
                            reply = renderer.reply(sim_header(tps, n), n, **probe)
                            print(describe(name, tps, run, reply), flush=True)
                            samples[name][str(tps)] += reply.samples_ms
                            per_run[name][str(tps)].append({
                                "p50": percentile(reply.samples_ms, 50), "p95": percentile(reply.samples_ms, 95),
                                "max": max(reply.samples_ms),
                                "legs": reply.extra.get("chunk_legs_ms"),
                            })
                            if reply.extra.get("frame_interval_ms"):  # the native view's, while it streamed
                                frame_intervals.setdefault(name, []).append(reply.extra["frame_interval_ms"])
                            if reply.clock_skew_ms is not None:
                                skews.append(reply.clock_skew_ms)
        finally:
            browser.close()
    load_after = os.getloadavg()

    summary: dict[str, Any] = {}
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        table[name] = {}
        for tps in rates:
            runs = per_run[name][str(tps)]
            figures = {
                "p50": round(statistics.median(r["p50"] for r in runs), 1),
                "p95": round(statistics.median(r["p95"] for r in runs), 1),
                "max": round(max(r["max"] for r in runs), 1),
            }
            legs = [r["legs"] for r in runs if r.get("legs")]
            if legs:  # a page's: where its time went (gateway → core → page → painted), p50 / p95
                figures["legs_ms"] = {
                    leg: [round(statistics.median(r[leg][i] for r in legs), 1) for i in (0, 1)] for leg in ("core", "page", "paint")
                }
            table[name][str(tps)] = figures
            for stat in ("p50", "p95", "max"):
                summary[f"{key(name)}_{stat}_ms_{tps}"] = figures[stat]
    for tps in rates:
        native = summary.get(f"native_p95_ms_{tps}")
        for other in ("webkit", "chromium", "chromium_4x"):
            value = summary.get(f"{other}_p95_ms_{tps}")
            if native and value is not None:
                summary[f"{other}_vs_native_p95_{tps}"] = round(value / native, 2)
        # Each engine's page against its own plain-text peer (issue 28's figure for WebKit:
        # what the page adds to the engine's floor, which is not the page's to lower).
        for engine in ("webkit", "chromium"):
            page, plain = summary.get(f"{engine}_p95_ms_{tps}"), summary.get(f"{engine}_plain_p95_ms_{tps}")
            if page is not None and plain:
                summary[f"{engine}_vs_{engine}_plain_p95_{tps}"] = round(page / plain, 2)

    load = [round(load_before[0], 1), round(load_after[0], 1)]
    record = {
        "renderers": {name: {rate: [round(x, 2) for x in xs] for rate, xs in by_rate.items()} for name, by_rate in samples.items()},
        "figures": table,
        "machine": {**machine(), "load_avg": load, **versions},
        "date": started.isoformat(timespec="seconds"),
        "runs": args.runs,
        "tokens": dict(zip(map(str, rates), tokens)),
        "frame_interval_ms": {n: round(statistics.median(v), 2) for n, v in frame_intervals.items()},
        "clock_skew_ms": [min(skews), max(skews)] if skews else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record), encoding="utf-8")
    print(f"every sample: {args.out}", flush=True)
    print(json.dumps({
        **summary,
        "runs": args.runs,
        "tokens": record["tokens"],
        "frame_interval_ms": record["frame_interval_ms"],
        "clock_skew_ms": record["clock_skew_ms"],
        "versions": versions,
        # 1-minute load average of this (shared, 2-core) machine before and after.
        "load_avg": load,
    }))


if __name__ == "__main__":
    sys.exit(main())
