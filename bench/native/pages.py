"""The page's drivers: in WebKitGTK through the GTK host (bridge/hosts/gtk/host.py), the
iOS WKWebView analogue, under Xvfb; and in Debian's headless Chromium through
Playwright, with an optional CPU slowdown (CDP `Emulation.setCPUThrottlingRate`)
during the reply. Each runs replies in one booted page and returns a `Reply`.

The pages measure themselves (js/render/reply-metrics.js, the `firsttoken:metrics`
event). They get their settings as an embedding app would give them, with
`settings.set` over the host bridge (bridge/PROTOCOL.md, "Hosts"): the built-in model's
pacing (`x-firsttoken-sim`) and compression off, so that every renderer sends the very
same messages and so gets the very same answer. The plain-text peer is the page with
bench/render-plain.js as its entry, served by a gateway over a copy of the page's files
(`plain_page_tree`), so that WebKit, which no test can route, loads it as it is.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bench.native.renderers import PROMPT, WINDOW, BenchReplyError, Reply, percentile, sim_header
from harness.gtk import WebKitHost

ROOT = Path(__file__).resolve().parents[2]
PLAIN_ENTRY = ROOT / "bench" / "render-plain.js"
#: The page boots in seconds; on a loaded 2-core machine, WebKit's cold boot took 10–30 s.
BOOT_TIMEOUT_S = 180

__all__ = ["ChromiumPage", "WebKitPage", "plain_page_tree"]

# Expressions evaluated in the page (both engines await a promise).
SEND = """new Promise((resolve) => {
  addEventListener('firsttoken:metrics', (e) => resolve(e.detail), { once: true });
  const prompt = document.getElementById('prompt');
  prompt.value = %s;
  prompt.dispatchEvent(new Event('input', { bubbles: true }));
  document.getElementById('send').click();
})"""
CLEAR = "(document.getElementById('new-chat').click(), true)"
CLOCK_SKEW = "Date.now() - (performance.timeOrigin + performance.now())"
ANSWER_STATE = """(() => {
  const answer = document.querySelector('.msg[data-role="assistant"]');
  return answer && { state: answer.dataset.state, headings: answer.querySelectorAll('.content h2').length };
})()"""
# The interval between animation frames the engine gives this page, idle: its frame
# rate on this display (median of 30 frames, ms).
FRAME_INTERVAL = """new Promise((resolve) => {
  const times = [];
  const tick = (t) => {
    times.push(t);
    if (times.length < 31) return requestAnimationFrame(tick);
    const gaps = times.slice(1).map((x, i) => x - times[i]).sort((a, b) => a - b);
    resolve(gaps[15]);
  };
  requestAnimationFrame(tick);
})"""
WARM_UP_SIM = sim_header(1000, 200, ttft_ms=0)
# With `frames=True` (bench/native.py --frames): where a page's frames went while the
# reply streamed. Every animation frame is requested (so the page animates throughout,
# which changes what is measured a little, alike in both engines): the gap since the
# previous frame's callbacks, and the time from its callbacks to the end of its
# rendering (a message posted from the callback, as reply-metrics.js measures).
FRAMES_START = """(() => {
  const gaps = [], rendering = [], queued = [];
  let last = null, on = true;
  const channel = new MessageChannel();
  channel.port1.onmessage = () => {
    const at = queued.shift();
    if (last !== null) gaps.push(at - last);
    last = at;
    rendering.push(performance.now() - at);
  };
  const frame = () => {
    if (!on) return;
    queued.push(performance.now());
    channel.port2.postMessage(null);
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  window.__benchFrames = () => { on = false; return { gaps, rendering }; };
  return true;
})()"""
FRAMES_STOP = "window.__benchFrames()"
# A first visit goes on working once Python is ready: the service worker installs the
# offline copy (~32 MB into Cache Storage) and the page stores the snapshot it restored
# (js/boot/boot.js marks `firsttoken:boot:snapshot.stored`). Measured during
# that, a reply pays for it; an app's page in use has long finished. So wait for both,
# on their own signals (a deadline only in case one never comes); true: both came.
SETTLED = """Promise.race([
  Promise.all([
    navigator.serviceWorker ? navigator.serviceWorker.ready : null,
    new Promise((resolve) => {
      const ends = ['firsttoken:boot:snapshot.stored', 'firsttoken:boot:snapshot.failed'];
      const observer = new PerformanceObserver((list) => {
        if (list.getEntries().some((e) => ends.includes(e.name))) { observer.disconnect(); resolve(); }
      });
      observer.observe({ type: 'mark', buffered: true });
    }),
  ]).then(() => true),
  new Promise((resolve) => setTimeout(() => resolve(false), 60000)),
])"""


def _page_settings(sim: str) -> dict[str, Any]:
    # Compression off: the prompt reaches the model as the native renderer sends it, so
    # the answer (seeded by the prompt) is the same stream everywhere.
    return {"headers": {"x-firsttoken-sim": sim}, "compress": "off"}


def _checked(name: str, metrics: dict[str, Any], state: dict[str, Any] | None, tokens: int, plain: bool,
             skew: float) -> Reply:
    samples = metrics.get("chunk_to_paint_samples_ms") or []
    problems = []
    if metrics.get("chunk_clock") != "server":
        problems.append(f"clock {metrics.get('chunk_clock')!r}, not the server's stamps")
    # The page stamps every event it parses: the content chunks, and also the first
    # (the role), the last (finish_reason) and the usage chunk, painted with the text.
    if not tokens <= len(samples) <= tokens + 3:
        problems.append(f"{len(samples)} samples for {tokens} chunks")
    if not state or state["state"] != "done":
        problems.append(f"answer state {state}")
    elif (state["headings"] > 0) == plain:
        problems.append(f"the {'plain-text' if plain else 'markdown'} page painted {state['headings']} headings")
    if problems:
        raise BenchReplyError(f"{name}: " + "; ".join(problems))
    extra = {k: v for k, v in metrics.items() if k != "chunk_to_paint_samples_ms"}
    return Reply(samples, metrics["chunks"], clock_skew_ms=round(skew, 2), extra=extra)


def _frames(drawn: dict[str, list[float]]) -> dict[str, Any]:
    """The frame probe's summary: how many frames, their gaps and rendering (p50, p95)."""
    return {
        "count": len(drawn["rendering"]),
        "gap_ms": [round(percentile(drawn["gaps"], p) or 0, 1) for p in (50, 95)],
        "rendering_ms": [round(percentile(drawn["rendering"], p) or 0, 1) for p in (50, 95)],
    }


class WebKitPage:
    """The page in WebKitGTK through the real GTK host, one booted page for many replies."""

    def __init__(self, url: str, *, display: str, plain: bool = False, name: str = "webkit", settle: bool = True) -> None:
        self.name = name
        self.plain = plain
        # The same software drawing of the window as the native view's (`_gtk_env`).
        self.host = WebKitHost(url + "/", display=display, env={"GSK_RENDERER": "cairo"})
        self._settings = 0
        try:
            self.host.wait_for(lambda m: m.get("type") == "ready", BOOT_TIMEOUT_S)
            if self.host.eval("document.documentElement.dataset.python") != "ready":
                raise BenchReplyError(f"{name}: Python did not start")
            # (`settle=False`: a smoke test's few chunks, which need no quiet page.)
            self.settled = bool(self.host.eval(SETTLED, 90)) if settle else None
            self.frame_interval_ms = float(self.host.eval(FRAME_INTERVAL))
            self.reply(WARM_UP_SIM, 200)  # the paint path's first JIT is not what we measure
        except BaseException:
            self.host.close()
            raise

    @property
    def version(self) -> str:
        return self.host.webkit_version

    def _set(self, sim: str) -> None:
        self._settings += 1
        request = f"bench-settings-{self._settings}"
        start = len(self.host.messages)
        self.host.send({"type": "settings.set", "id": request, "settings": _page_settings(sim)})
        self.host.wait_for(lambda m: m.get("id") == request and m.get("type") in ("settings.applied", "error"), 30, start)

    def reply(self, sim: str, tokens: int, timeout: float = 300, frames: bool = False) -> Reply:
        self._set(sim)
        self.host.eval(CLEAR)
        skew = self.host.eval(CLOCK_SKEW)
        if frames:
            self.host.eval(FRAMES_START)
        metrics = self.host.eval(SEND % json.dumps(PROMPT), timeout)
        reply = _checked(self.name, metrics, self.host.eval(ANSWER_STATE), tokens, self.plain, skew)
        if frames:
            reply.extra["frames"] = _frames(self.host.eval(FRAMES_STOP))
        return reply

    def close(self) -> None:
        self.host.close()

    def __enter__(self) -> "WebKitPage":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# In Chromium the benchmark is the page's host, as the GTK host is in WebKit: the object a
# React Native WebView puts in the page (bridge/PROTOCOL.md, "Hosts"). Its
# postMessage(text) hands the text to a waiter only while the settings are being set;
# the chats the page relays to its host meanwhile cost it one call that returns at once.
# (The benchmark used to post `hello` to the page from the page itself, which the page
# ignores since a host channel is only for a host, bridge/page/hosts.js: it then waited
# for ever.)
CHROMIUM_HOST = """window.ReactNativeWebView = {
  postMessage: (text) => { if (window.__benchWaiter) window.__benchWaiter(text); },
};"""
CHROMIUM_SETTINGS = """([settings, id]) => new Promise((resolve) => {
  const done = (m) => { window.__benchWaiter = null; clearTimeout(timer); resolve(m); };
  const timer = setTimeout(() => done({ type: 'timeout', id }), 30000);
  window.__benchWaiter = (text) => {
    const m = JSON.parse(text);
    if (m.id === id && (m.type === 'settings.applied' || m.type === 'error')) done(m);
  };
  window.firsttoken.post(JSON.stringify({ type: 'settings.set', id, settings }));
})"""


class ChromiumPage:
    """The page in headless Chromium (a Playwright `Browser`), CPU-throttled by
    `throttle` during each measured reply only (as on a phone that opened the app)."""

    def __init__(self, browser: Any, url: str, *, plain: bool = False, throttle: float = 1, name: str = "chromium") -> None:
        self.name = name
        self.plain = plain
        self.throttle = throttle
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": WINDOW[0], "height": WINDOW[1]})
        self.context.add_init_script(CHROMIUM_HOST)
        self._settings = 0  # settings messages sent, for their ids (as WebKitPage)
        try:
            self.page = self.context.new_page()
            self.page.on("pageerror", lambda e: self.errors.append(str(e)))
            self.page.goto(url + "/")
            self.page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]',
                                        state="attached", timeout=BOOT_TIMEOUT_S * 1000)
            if self.page.get_attribute("html", "data-python") != "ready":
                raise BenchReplyError(f"{name}: Python did not start")
            self.cdp = self.context.new_cdp_session(self.page)
            self.settled = bool(self.page.evaluate(SETTLED))
            self.frame_interval_ms = float(self.page.evaluate(FRAME_INTERVAL))
            self.reply(WARM_UP_SIM, 200, throttled=False)
        except BaseException:
            self.context.close()
            raise

    def reply(self, sim: str, tokens: int, timeout: float = 300, frames: bool = False, throttled: bool = True) -> Reply:
        self._settings += 1
        answer = self.page.evaluate(CHROMIUM_SETTINGS, [_page_settings(sim), f"bench-settings-{self._settings}"])
        if answer.get("type") != "settings.applied":
            raise BenchReplyError(f"{self.name}: settings refused: {answer}")
        self.page.evaluate(CLEAR)
        rate = self.throttle if throttled else 1
        self.cdp.send("Emulation.setCPUThrottlingRate", {"rate": rate})
        try:
            skew = self.page.evaluate(CLOCK_SKEW)
            self.page.set_default_timeout(timeout * 1000)
            if frames:
                self.page.evaluate(FRAMES_START)
            metrics = self.page.evaluate(SEND % json.dumps(PROMPT))
            drawn = self.page.evaluate(FRAMES_STOP) if frames else None
        finally:
            self.cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        if self.errors:
            raise BenchReplyError(f"{self.name}: page errors {self.errors}")
        reply = _checked(self.name, metrics, self.page.evaluate(ANSWER_STATE), tokens, self.plain, skew)
        if drawn is not None:
            reply.extra["frames"] = _frames(drawn)
        return reply

    def close(self) -> None:
        self.context.close()

    def __enter__(self) -> "ChromiumPage":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- the plain-text peer's page ----------------------------------------------------
PAGE_ENTRY = 'src="js/page/main.js"'
PEER_ENTRY = "js/bench-render-plain.js"
PEER_IMPORT = "'../js/page/page.js'"
#: What the gateway serves, from the tree it runs in (gateway/static.py).
SERVED = ("gateway", "py", "js", "bridge/page", "index.html", "pyscript.toml", "sw.js")


def plain_page_tree(parent: Path) -> Path:
    """A copy of the page's files in which the entry is bench/render-plain.js: the
    plain-text peer, for a gateway to serve as it serves the page (`gateway(root=…)`).
    Shares node_modules and build/ (the install-time snapshot) with this checkout."""
    tree = parent / "plain-page"
    for name in SERVED:
        source, target = ROOT / name, tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    for name in ("node_modules", "build"):
        (tree / name).symlink_to(ROOT / name)
    index = (tree / "index.html").read_text(encoding="utf-8")
    entry = PLAIN_ENTRY.read_text(encoding="utf-8")
    if PAGE_ENTRY not in index or PEER_IMPORT not in entry:
        raise RuntimeError(f"index.html has no {PAGE_ENTRY}, or {PLAIN_ENTRY.name} no {PEER_IMPORT}: the peer cannot be built")
    (tree / "index.html").write_text(index.replace(PAGE_ENTRY, f'src="{PEER_ENTRY}"'), encoding="utf-8")
    # Served from js/ now: its import of the page's wiring, relative to there, and the
    # plain-text answers it imports from beside it (bench/plain-text.js).
    (tree / PEER_ENTRY).write_text(entry.replace(PEER_IMPORT, "'./page/page.js'"), encoding="utf-8")
    shutil.copy2(ROOT / "bench" / "plain-text.js", tree / "js" / "plain-text.js")
    return tree
