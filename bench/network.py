"""Benchmark: a first visit over a weak network, firsttoken's page against a stock PyScript page.

    .venv/bin/python bench/network.py [--runs N] [--profiles 4g,slow4g,3g]

Headless Chromium with DevTools network emulation (`Network.emulateNetworkConditions`,
through a CDP session on the page) at issue 13's three profiles:

    4g       9 Mbit/s down,  85 ms round trip
    slow4g   4 Mbit/s down, 150 ms
    3g     1.6 Mbit/s down, 300 ms

(upload at the same rate: a first visit uploads only request heads). Every run is a
first visit: a fresh browser context (empty HTTP cache, no service worker, no stored
snapshot). Both pages come from one server in this process (harness/bench_page.py: the
product gateway with its precompressed variants from build/encoded/, and the bench
folder in front of it), interleaved run by run:

- firsttoken: the product page at `/`;
- stock: bench/boot_stock.html, one `<script type="py">` on PyScript's main thread
  importing the same modules on the same Pyodide, its files from the same gateway with
  the same compression.

Per run it records:
- `bytes`: what the page's DevTools session saw arrive, headers and bodies as
  Chromium's network service counted them on the emulated link (CDP
  `Network.loadingFinished`/`dataReceived`), until Python is ready. That session sees
  the page's own requests (the runtime, which the page prefetches on a first visit),
  not all of its workers';
- `server_bytes`: what the server sent until Python was ready, counted in the server
  (every request: workers included); `settled_bytes`, the same once the service worker
  has installed the offline copy: what a first visit costs in all. Both are upper
  bounds, but for a snapshot the page declines: Chromium reads the socket ahead of the
  emulated link, so of its body only what the page read before deciding is counted
  (`served.probe_bytes`, in the boot record, scaled to the wire);
- `ready_ms`: navigation start → Python ready (the User Timing mark
  `firsttoken:python-ready` / `stock:python-ready`);
- `usable_ms` (firsttoken): navigation start → the first key typed lands in the message
  box. The driver types as soon as the box has focus, so this is an upper bound.

At 3G, a first visit's first prompt too (issue 45, item 2), both pages timed from
navigation start on the shaped link (bench/shaper.py: one user-space link per visit, the
3G profile's 1.6 Mbit/s down, 768 kbit/s up and 300 ms round trip below TCP, every new
connection charged its TCP and TLS 1.3 handshakes; not DevTools emulation, which delays
response headers, hides the server's wait and leaves a worker's fetches alone), on the
built-in model's default physics (no `x-firsttoken-sim`):

- `send_usable_ms_3g`: navigation start → Send works: the later of the page's first
  contentful paint (the composer shows) and the moment its script takes Send
  (`html[data-send-ready]`, set by js/boot/first-send.js, the product page's first step,
  inline in index.html with the first view's styles since issue 45's fix: docs/boot.md,
  "Send with the HTML alone");
- `first_token_from_nav_ms_3g`: navigation start → the first text of the answer in the
  DOM (a MutationObserver: the change the next paint shows), the prompt sent by the
  driver the moment Send works;
- `peer_send_usable_ms_3g`, `peer_first_token_from_nav_ms_3g`: the same for
  bench/first_prompt_peer.html, a plain JavaScript chat page (no Python, no framework,
  its script inline), the strongest plain page a user would pick, posting to the same
  gateway (its Send works at its `html[data-interactive]`);
- the ratios `send_usable_ratio_3g` and `first_token_from_nav_ratio_3g` (targets: ≤ 1.2
  each), and Send → first token for each page (`first_prompt_ttft_ms_3g`,
  `peer_first_prompt_ttft_ms_3g`).

`--only first-prompt` runs only these visits.

Prints one line per run, then LAST one JSON line with medians:
    {"first_visit_bytes", "ready_ms_4g", "ready_ms_slow4g", "ready_ms_3g",
     "stock_ready_ms_slow4g", "ratio_slow4g", "usable_ms_3g", ...,
     "send_usable_ms_3g", "peer_send_usable_ms_3g", "send_usable_ratio_3g",
     "first_token_from_nav_ms_3g", "peer_first_token_from_nav_ms_3g",
     "first_token_from_nav_ratio_3g", "first_prompt_ttft_ms_3g",
     "peer_first_prompt_ttft_ms_3g", "first_prompt_prepared_3g"}
`first_visit_bytes` is the largest per-profile median of `settled_bytes`: the
snapshot decision (js/boot/snapshot-pays.js) may differ between profiles.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from playwright.sync_api import BrowserContext, sync_playwright  # noqa: E402

from harness.bench_page import CHROMIUM, CHROMIUM_ARGS, bench_app  # noqa: E402
from harness.chromium import FIRST_PAINT  # noqa: E402
from bench.profiles import PROFILES  # noqa: E402
from bench.shaper import shaped_url  # noqa: E402
from harness.servers import serve_app  # noqa: E402

TIMEOUT_MS = 300_000
SNAPSHOT = "/py/firsttoken.snapshot"

WAIT_MARK = """([name, timeout]) => new Promise((resolve, reject) => {
  const found = () => performance.getEntriesByName(name)[0];
  if (found()) return resolve(found().startTime);
  const observer = new PerformanceObserver((list) => {
    const entry = list.getEntriesByName(name)[0];
    if (entry) { observer.disconnect(); resolve(entry.startTime); }
  });
  observer.observe({ type: 'mark' });
  setTimeout(() => reject(new Error(`no ${name} after ${timeout} ms`)), timeout);
})"""
# Once the service worker has every file of the build (its install done, not only begun).
SW_INSTALLED = """(timeout) => Promise.race([navigator.serviceWorker.ready.then(async () => {
  const names = await caches.keys();
  return names.some((n) => n.startsWith('firsttoken-assets-'));
}), new Promise((_, reject) => setTimeout(() => reject(new Error(`no service worker after ${timeout} ms`)), timeout))])"""
BOOT_DETAIL = "() => performance.getEntriesByName('firsttoken:python-ready')[0]?.detail ?? null"
# Before any page script: when the first key reached the message box.
TYPED_PROBE = """
document.addEventListener('input', (event) => {
  if (window.__benchTyped === undefined && event.target.id === 'prompt') window.__benchTyped = performance.now();
}, true);
"""
# Every boot line the page showed, in order (the progress test asks the same).
SEEN_PROBE = """
window.__benchLines = [];
new MutationObserver(() => {
  const text = document.getElementById('boot')?.textContent;
  if (text && window.__benchLines.at(-1) !== text) window.__benchLines.push(text);
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


# Before any page script: when the first prompt was sent (the form's submit) and when the
# first text of its answer reached the DOM (the product page's answer, or the peer's).
FIRST_PROMPT_PROBE = """
window.__firstPrompt = {};
window.__firstToken = new Promise((resolve) => { window.__firstPrompt.resolve = resolve; });
document.addEventListener('submit', () => { window.__firstPrompt.sent ??= performance.now(); }, true);
new MutationObserver(() => {
  const seen = window.__firstPrompt;
  if (seen.sent === undefined || seen.token !== undefined) return;
  const answer = document.querySelector('.msg[data-role="assistant"] .content, #answer');
  if (answer && answer.textContent.trim()) { seen.token = performance.now(); seen.resolve(); }
}).observe(document, { subtree: true, childList: true, characterData: true });
"""
FIRST_PROMPT = "Which of these is slowest on a phone: DNS, TLS, or the first byte? Answer in one line."
# Send, the moment it works: once the page's script takes it (`mark`) and the page has
# painted (the first contentful paint: before it, nothing shows to press). In the page,
# so that no driver round trip sits between the two; the click is a real one (the form's
# submit event, as a finger's tap gives).
SEND_WHEN_USABLE = """([mark, text, timeout]) => new Promise((resolve, reject) => {
  setTimeout(() => reject(new Error(`Send not usable after ${timeout} ms`)), timeout);
  const root = document.documentElement;
  const painted = FIRST_PAINT;
  const taken = new Promise((done) => {
    // Set before this ran: the mark's own value is when (both pages write
    // performance.now() into it); the time of this check would be the driver's delay.
    if (root.hasAttribute(mark)) return done(Number(root.getAttribute(mark)));
    new MutationObserver((_, observer) => {
      if (root.hasAttribute(mark)) { observer.disconnect(); done(performance.now()); }
    }).observe(root, { attributes: true, attributeFilter: [mark] });
  });
  Promise.all([painted, taken]).then(([paint, script]) => {
    document.getElementById('prompt').value = text;
    document.getElementById('send').click();
    resolve({ paint, script });
  });
})""".replace("FIRST_PAINT", FIRST_PAINT)
# A promise, not `wait_for_function`: the product page's CSP allows no eval. Each page
# wait here is bounded (a run once hung 7 minutes on one): a stuck page fails the run
# with what it waited for.
FIRST_TOKEN = """(timeout) => Promise.race([window.__firstToken.then(() => true), new Promise((_, reject) =>
  setTimeout(() => reject(new Error(`no first token after ${timeout} ms`)), timeout))])"""


class ServerBytes:
    """ASGI middleware: the bytes this server sent (status line and headers estimated,
    bodies exact), for every request: the service worker's and the workers' included.
    An upper bound of what a visit received: a body the page cancels (the snapshot it
    declines) counts what the server had written by then."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sent = 0
        self.snapshot = 0  # of which the install-time snapshot's body

    def reset(self) -> None:
        self.sent = self.snapshot = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        snapshot = scope.get("path") == SNAPSHOT

        async def counting(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.sent += 17 + sum(len(k) + len(v) + 4 for k, v in message.get("headers", [])) + 2
            elif message["type"] == "http.response.body":
                self.sent += len(message.get("body", b""))
                if snapshot:
                    self.snapshot += len(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, counting if scope["type"] == "http" else send)


class Meter:
    """Bytes on the wire, per request, as the network service reports them to DevTools
    (the page's session: its frame and its dedicated workers)."""

    def __init__(self) -> None:
        self.finished: dict[str, int] = {}
        self.partial: dict[str, int] = {}

    def attach(self, cdp: Any) -> None:
        cdp.on("Network.dataReceived", self._data)
        cdp.on("Network.loadingFinished", self._finished)

    def _data(self, event: dict) -> None:
        rid = event["requestId"]
        self.partial[rid] = self.partial.get(rid, 0) + int(event.get("encodedDataLength", 0))

    def _finished(self, event: dict) -> None:
        self.finished[event["requestId"]] = int(event.get("encodedDataLength", 0))

    def total(self) -> int:
        return sum(self.finished.values()) + sum(n for rid, n in self.partial.items() if rid not in self.finished)


def throttle(context: BrowserContext, profile: str) -> tuple[Any, Any, Meter]:
    """A page in `context` with `profile`'s network, and its byte meter."""
    # The downlink and round trip only: a first visit uploads request heads, so the
    # upload runs at the download's rate, as it always has here.
    down, rtt = PROFILES[profile].down_mbps, PROFILES[profile].rtt_ms
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    meter = Meter()
    meter.attach(cdp)
    cdp.send("Network.enable")
    rate = down * 1e6 / 8  # bytes per second
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": rtt, "downloadThroughput": rate, "uploadThroughput": rate,
    })
    return page, cdp, meter


def snapshot_wire_length() -> int:
    """The install-time snapshot's length as brotli (what Chromium is sent), or 0."""
    from gateway.precompressed import read_index

    entry = read_index(ROOT / "build" / "encoded").get(SNAPSHOT)
    variant = entry and entry.variants.get("br")
    return variant.length if variant else 0


def visit_firsttoken(context: BrowserContext, url: str, profile: str, server: ServerBytes) -> dict[str, Any]:
    page, _cdp, meter = throttle(context, profile)
    server.reset()
    page.goto(url + "/", wait_until="commit")
    page.wait_for_selector("#prompt:focus", timeout=TIMEOUT_MS)
    page.keyboard.type("x")
    page.wait_for_function("() => window.__benchTyped !== undefined", timeout=TIMEOUT_MS)
    usable = page.evaluate("() => window.__benchTyped")
    ready = page.evaluate(WAIT_MARK, ["firsttoken:python-ready", TIMEOUT_MS])
    ready_bytes = meter.total()
    boot = page.evaluate(BOOT_DETAIL)
    # A declined snapshot: the server wrote more of it than the page read (Chromium reads
    # the socket ahead of the emulated link); what crossed the link is what was read.
    declined = 0
    served = (boot or {}).get("served") or {}
    if served and not served.get("fetched") and server.snapshot:
        wire = snapshot_wire_length() or served["bytes"]
        declined = max(0, server.snapshot - round(served.get("probe_bytes", 0) * wire / served["bytes"]))
    ready_server = server.sent - declined
    lines = page.evaluate("() => window.__benchLines")
    # The rest of a first visit: the service worker fetches what the page needs offline.
    page.evaluate(SW_INSTALLED, TIMEOUT_MS)
    settled = server.sent - declined
    page.close()
    return {"ready_ms": round(ready, 1), "usable_ms": round(usable, 1), "bytes": ready_bytes,
            "server_bytes": ready_server, "settled_bytes": settled, "boot": boot, "lines": lines}


def visit_stock(context: BrowserContext, url: str, profile: str, server: ServerBytes) -> dict[str, Any]:
    page, _cdp, meter = throttle(context, profile)
    server.reset()
    page.goto(url + "/bench/boot_stock.html", wait_until="commit")
    ready = page.evaluate(WAIT_MARK, ["stock:python-ready", TIMEOUT_MS])
    result = {"ready_ms": round(ready, 1), "bytes": meter.total(), "server_bytes": server.sent}
    page.close()
    return result


def visit_first_prompt(context: BrowserContext, direct_url: str, path: str, mark: str) -> dict[str, Any]:
    """A first visit of `path` over its own shaped 3G link (TLS charged): Send pressed the
    moment it works; times from navigation start, and whether the prompt went through the
    gateway's preparation."""
    context.add_init_script(FIRST_PROMPT_PROBE)
    prepared: list[bool] = []
    with shaped_url(direct_url, PROFILES["3g"], tls=True) as (url, _link):
        page = context.new_page()
        page.on("request", lambda r: prepared.append("x-firsttoken-prepare" in r.headers)
                if r.method == "POST" and "/v1/" in r.url else None)
        page.goto(url + path, wait_until="commit")
        usable = page.evaluate(SEND_WHEN_USABLE, [mark, FIRST_PROMPT, TIMEOUT_MS])
        page.evaluate(FIRST_TOKEN, TIMEOUT_MS)
        seen = page.evaluate("() => ({ ...window.__firstPrompt, resolve: undefined, python: document.documentElement.dataset.python ?? null })")
        page.close()
    return {"send_usable_ms": round(max(usable["paint"], usable["script"]), 1), "paint_ms": round(usable["paint"], 1),
            "script_ms": round(usable["script"], 1), "first_token_ms": round(seen["token"], 1),
            "ttft_ms": round(seen["token"] - seen["sent"], 1), "sent_ms": round(seen["sent"], 1),
            "python": seen["python"], "prepared": prepared[:1] == [True]}


def summarise(lines: list[str]) -> list[str]:
    """The boot lines, each run of "Downloading…" ones shortened to its first and last."""
    out: list[str] = []
    run: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("Downloading"):
            run.append(line)
            continue
        out += run if len(run) <= 2 else [run[0], "…", run[-1]]
        run = []
        if line:
            out.append(line)
    return out


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=3, help="first visits per page and profile (medians)")
    p.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated, of " + ", ".join(PROFILES))
    p.add_argument("--only", choices=["first-prompt"], help="only the first prompt's visits (3G, shaped link)")
    args = p.parse_args(argv)
    if args.only:
        args.profiles = "3g"
    profiles = [name for name in args.profiles.split(",") if name]
    for name in profiles:
        if name not in PROFILES:
            p.error(f"unknown profile {name!r}")

    ours: dict[str, list[dict[str, Any]]] = {name: [] for name in profiles}
    stock: dict[str, list[dict[str, Any]]] = {name: [] for name in profiles}
    first_prompt: dict[str, list[dict[str, Any]]] = {"firsttoken": [], "peer": []}
    server = ServerBytes(bench_app({}))
    with serve_app(server) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            print(f"firsttoken: {url}/   stock: {url}/bench/boot_stock.html", flush=True)
            for i in range(args.runs):
                for name in profiles if not args.only else []:
                    for who in ("stock", "firsttoken"):
                        context = browser.new_context()
                        try:
                            if who == "stock":
                                stock[name].append(run := visit_stock(context, url, name, server))
                                print(f"{name} {i + 1} stock:      ready {run['ready_ms']:.0f} ms, "
                                      f"{run['bytes']:,} bytes ({run['server_bytes']:,} sent)", flush=True)
                            else:
                                context.add_init_script(TYPED_PROBE + SEEN_PROBE)
                                ours[name].append(run := visit_firsttoken(context, url, name, server))
                                boot = run["boot"] or {}
                                stages = " ".join(f"{k.removesuffix('_ms')}={boot[k]}" for k in (
                                    "assets_ms", "wasm_ms", "interpreter_ms", "ready_ms") if boot.get(k) is not None)
                                print(f"{name} {i + 1} firsttoken: ready {run['ready_ms']:.0f} ms, usable "
                                      f"{run['usable_ms']:.0f} ms, {run['bytes']:,} bytes ({run['server_bytes']:,} sent; "
                                      f"{run['settled_bytes']:,} with the service worker's install); ms after starting Python: {stages}; snapshot {boot.get('snapshot')}, served "
                                      f"{json.dumps(boot.get('served'))}; lines {summarise(run['lines'])}", flush=True)
                        finally:
                            context.close()
                if "3g" in profiles:
                    for who, path, mark in (("peer", "/bench/first_prompt_peer.html", "data-interactive"),
                                            ("firsttoken", "/", "data-send-ready")):
                        context = browser.new_context()
                        try:
                            first_prompt[who].append(run := visit_first_prompt(context, url, path, mark))
                        finally:
                            context.close()
                        print(f"3g {i + 1} first prompt, {who}: Send works at {run['send_usable_ms']:.0f} ms "
                              f"(painted {run['paint_ms']:.0f}, script {run['script_ms']:.0f}), first token at "
                              f"{run['first_token_ms']:.0f} ms from navigation start, {run['ttft_ms']:.0f} ms after "
                              f"Send; Python {run['python']}; prepared by the gateway: {run['prepared']}", flush=True)
        finally:
            browser.close()

    result: dict[str, Any] = {}
    per_profile: dict[str, Any] = {}
    for name in profiles if not args.only else []:
        ready = median([r["ready_ms"] for r in ours[name]])
        stock_ready = median([r["ready_ms"] for r in stock[name]])
        per_profile[name] = {
            "ready_ms": ready, "usable_ms": median([r["usable_ms"] for r in ours[name]]),
            "bytes": int(median([r["bytes"] for r in ours[name]])),
            "server_bytes": int(median([r["server_bytes"] for r in ours[name]])),
            "settled_bytes": int(median([r["settled_bytes"] for r in ours[name]])),
            "stock_ready_ms": stock_ready, "stock_bytes": int(median([r["bytes"] for r in stock[name]])),
            "stock_server_bytes": int(median([r["server_bytes"] for r in stock[name]])),
            "ratio": round(ready / stock_ready, 3),
            "snapshot_fetched": sum(bool((r["boot"] or {}).get("served", {}) and r["boot"]["served"].get("fetched"))
                                    for r in ours[name]),
        }
    if per_profile:
        result["first_visit_bytes"] = max(v["settled_bytes"] for v in per_profile.values())
    for name, v in per_profile.items():
        result[f"ready_ms_{name}"] = v["ready_ms"]
        result[f"stock_ready_ms_{name}"] = v["stock_ready_ms"]
        result[f"ratio_{name}"] = v["ratio"]
        result[f"usable_ms_{name}"] = v["usable_ms"]
        result[f"bytes_{name}"] = v["bytes"]
        result[f"sent_{name}"] = v["settled_bytes"]
        result[f"stock_bytes_{name}"] = v["stock_bytes"]
        result[f"snapshot_fetched_{name}"] = f"{v['snapshot_fetched']}/{len(ours[name])}"
    if first_prompt["firsttoken"]:
        ours, peer = first_prompt["firsttoken"], first_prompt["peer"]
        for key, field in (("send_usable_ms_3g", "send_usable_ms"), ("first_token_from_nav_ms_3g", "first_token_ms"),
                           ("first_prompt_ttft_ms_3g", "ttft_ms")):
            result[key] = median([r[field] for r in ours])
            result["peer_" + key] = median([r[field] for r in peer])
        result["send_usable_ratio_3g"] = round(result["send_usable_ms_3g"] / result["peer_send_usable_ms_3g"], 3)
        result["first_token_from_nav_ratio_3g"] = round(
            result["first_token_from_nav_ms_3g"] / result["peer_first_token_from_nav_ms_3g"], 3)
        result["first_prompt_prepared_3g"] = f"{sum(r['prepared'] for r in ours)}/{len(ours)}"
    result["runs"] = args.runs
    print(json.dumps(result))


if __name__ == "__main__":
    main()
