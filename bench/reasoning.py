"""Benchmark: the first sign of thought, on a slow phone on a slow link (issue 48).

    .venv/bin/python bench/reasoning.py [--runs N] [--apis chat_completions,responses,anthropic_messages]

The real page (index.html, its CSP, the Python core in its worker) in Debian's headless
Chromium with a Pixel 7 profile and 4x CPU throttling (CDP, applied once Python is up),
against the real gateway's built-in reasoning model `firsttoken-sim-think` at medium
effort with summaries asked for, in each API, through the shaped link (bench/shaper.py,
`slow4g`, TLS handshakes charged; switched on once the pages have booted, as on a phone
that has the app open). The model's costs are its defaults: a first token after 1.1 s
plus prefill, a thinking phase whose length follows the effort, and the delay a summary
adds to the first answer token (gateway/simulator.py cites both figures). Every chunk is
stamped with its send time (`stamp=1`).

Peer, same run: the same page, the same requests (the same settings, so the same
reasoning parameters and the same summary cost on the server), painting the answer's
text only, as plain text, and nothing of the reasoning: what firsttoken did before this
issue, minus the markdown (bench/reasoning-peer.js as the entry instead of
js/page/main.js, served by Playwright as bench/render.py serves its peer). Runs alternate
page by page and API by API: the machine is shared, and load drifts within minutes.

Measured by the page (an init script, the same in both pages): the moment Send is
clicked; for each protocol event its arrival on the main thread; after every DOM change
in the reply, the end of the frame that showed it (a message posted from the
requestAnimationFrame callback after the change runs once that frame's style, layout and
paint are done, as js/render/reply-metrics.js measures); `layout-shift` entries
(PerformanceObserver) from Send to the reply's end. Per reply:

  - thinking_row_ms: Send to the first frame showing the Thinking row (`.thinking`);
  - first_reasoning_paint_ms: the first `chat.delta` carrying reasoning, as the core
    stamped its arrival (`t`, the worker's clock at the bytes), to the first frame
    showing reasoning text;
  - first_sign_ms: Send to that frame (the peer: Send to its first answer text's frame);
  - first_answer_ms: Send to the first frame showing answer text;
  - reasoning chunk→paint: each reasoning chunk's gateway stamp to the frame that showed
    it; the peer's answer chunk→paint is its plain-text figure;
  - layout_shift: the sum of layout-shift values without recent input, of everything
    but the streaming answer's own text: what the person was reading (the transcript,
    the thinking row, the reply's notes and actions) moving as the row changes phase or
    the answer starts. Shifts inside the answer's own text as its markdown takes shape
    (an open fence becoming a code block) are the answer being written, the subject of
    bench-render, and are summed apart as `answer_markdown_shift`; the plain-text peer
    has none by construction.

Then, per API, replies cut while thinking (`max_tokens` far below the thinking phase):
`empty_bubbles` counts those that ended with nothing to read (no answer text, and no
note saying the budget went to thinking with its Continue button).

Prints human lines, then LAST one JSON line with medians over runs and APIs (p95s are
of the per-reply values): `thinking_row_ms_p95`, `first_reasoning_paint_ms_p95`,
`first_sign_vs_peer_p50`, `answer_vs_peer_p50`, `reasoning_paint_ratio_p95`,
`layout_shift`, `empty_bubbles`, `by_api`, `targets`, `holds_by_construction` (what
cannot come out otherwise, issue 45).
Targets (issue 48): thinking_row_ms_p95 ≤ 100, first_reasoning_paint_ms_p95 ≤ 50,
first_sign_vs_peer_p50 ≤ 0.2, answer_vs_peer_p50 ≤ 1.05, reasoning_paint_ratio_p95 ≤ 1.1,
layout_shift = 0, empty_bubbles = 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from playwright.sync_api import BrowserContext, Page, sync_playwright  # noqa: E402

from bench.profiles import PROFILES  # noqa: E402
from bench.shaper import shaped_url  # noqa: E402
from harness.chromium import ARGS, CHROMIUM  # noqa: E402
from harness.servers import gateway  # noqa: E402

APIS = ("chat_completions", "responses", "anthropic_messages")
MODEL = "firsttoken-sim-think"
DEVICE = "Pixel 7"
THROTTLE = 4
BOOT_TIMEOUT_MS = 180_000
REPLY_TIMEOUT_MS = 600_000
PROMPT = "Plan a three-day trip to Kyoto for a family with two children, with a budget."
PAGE_ENTRY = 'src="js/page/main.js"'
PEER_ENTRY = "bench/reasoning-peer.js"

# The page's own instruments, the same in both pages, from before its first script (an
# init script runs ahead of the page's CSP). Each protocol event is kept with its
# arrival on the main thread; each change to the newest reply is followed by the end of
# the frame that showed it.
INSTRUMENTS = r"""
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const b = window.__bench = { events: [], frames: [], shifts: [], sendAt: null };
  const Native = window.MessageChannel;
  window.MessageChannel = class extends Native {
    constructor() {
      super();
      this.port1.addEventListener('message', (event) => {
        if (typeof event.data !== 'string' || event.data[0] !== '{') return;
        let msg;
        try { msg = JSON.parse(event.data); } catch { return; }
        if (!msg || typeof msg.type !== 'string' || !msg.type.startsWith('chat.')) return;
        b.events.push({ type: msg.type, id: msg.id, at: now(), t: msg.t, stamps: msg.stamps || [],
                        text: (msg.text || '').length, reasoning: (msg.reasoning || '').length,
                        finish: msg.finish_reason, timings: msg.timings, prepare_ms: msg.prepare_ms });
        if (msg.type === 'chat.done' || msg.type === 'chat.error') {
          const html = document.documentElement;
          html.dataset.benchFinished = `${html.dataset.benchFinished || ''} ${msg.id}`.trim();
        }
      });
    }
  };
  // What the newest reply shows, read after each change; the frame's end stamped.
  const ping = new Native();
  let pending = [];
  ping.port2.onmessage = () => {
    const at = now();
    for (const state of pending) b.frames.push({ ...state, at });
    pending = [];
  };
  const look = () => {
    const li = [...document.querySelectorAll('.msg[data-role="assistant"]')].at(-1);
    if (!li) return null;
    const row = li.querySelector('.thinking');
    const content = li.querySelector('.content');
    const preview = row ? (row.querySelector('.thinking-preview, .thinking-body')?.textContent || '') : '';
    return {
      row: !!row, phase: row?.dataset.phase || null,
      reasoning: preview.trim().length,
      answer: (content?.textContent || '').trim().length,
    };
  };
  new MutationObserver(() => {
    if (b.sendAt === null) return;
    const state = look();
    if (!state) return;
    pending.push(state);
    requestAnimationFrame(() => ping.port1.postMessage(0));
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true,
                         attributeFilter: ['data-phase'] });
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.hadRecentInput) continue;
      // What moved, named for the human lines: the node's tag, id and classes.
      const what = (e.sources || []).map((s) => {
        const n = s.node?.nodeType === 3 ? s.node.parentElement : s.node;
        const r = (x) => `${Math.round(x.y)}+${Math.round(x.height)}`;
        return n ? `${s.node.nodeType === 3 ? 'text in ' : ''}${r(s.previousRect)}->${r(s.currentRect)} ${n.nodeName.toLowerCase()}${n.id ? '#' + n.id : ''}${n.className && typeof n.className === 'string' ? '.' + n.className.trim().split(/\s+/).join('.') : ''}` : '?';
      });
      // A shift all of whose nodes are inside the streaming answer's own text is the
      // answer being written (a fence, a heading or a table taking shape as markdown
      // streams: bench-render's subject); any other moved what the person was reading.
      const live = [...document.querySelectorAll('.msg[data-role="assistant"]')].at(-1)?.querySelector(':scope > .content');
      const inAnswer = !!live && (e.sources || []).length > 0
        && e.sources.every((s) => s.node && live.contains(s.node));
      b.shifts.push({ at: performance.timeOrigin + e.startTime, value: e.value, what, inAnswer });
    }
  }).observe({ type: 'layout-shift', buffered: true });
})();
"""

SEND = """() => {
  const b = window.__bench;
  b.events.length = 0; b.frames.length = 0; b.shifts.length = 0;
  b.sendAt = performance.timeOrigin + performance.now();
  document.getElementById('send').click();
  return b.sendAt;
}"""


def settings_script(api: str, sim: str, max_tokens: int | None = None) -> str:
    # Summaries are on by default (Settings); the Thinking level is the conversation's,
    # chosen in the composer for each new chat (`Phone.reply`).
    settings = {"model": MODEL, "api": api, "headers": {"x-firsttoken-sim": sim},
                **({"max_tokens": max_tokens} if max_tokens else {})}
    return f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(json.dumps(settings))})"


def module(name: str) -> Any:
    """A route handler serving this checkout's `name` as a JavaScript module (one
    argument: Playwright passes the request too to a handler that takes two)."""

    def fulfill(route: Any) -> None:
        route.fulfill(path=str(ROOT / name), headers={"content-type": "text/javascript; charset=utf-8"})

    return fulfill


def serve_entry(context: BrowserContext, url: str, peer: bool) -> None:
    """The page's document through Playwright; for the peer, with bench/reasoning-peer.js
    as its entry (bench/render.py does the same for its plain-text peer)."""

    def document(route: Any) -> None:
        response = route.fetch()
        body = response.text()
        if PAGE_ENTRY not in body:
            raise RuntimeError(f"index.html has no {PAGE_ENTRY}: the peer cannot swap its entry")
        if peer:
            body = body.replace(PAGE_ENTRY, f'src="{PEER_ENTRY}"')
        headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-encoding")}
        route.fulfill(status=response.status, headers=headers, body=body)

    context.route(url + "/", document)
    # The entry and the module it imports, from this folder (the gateway serves no bench/).
    for name in (PEER_ENTRY, "bench/plain-text.js"):
        context.route(url + "/" + name, module(name))


class Phone:
    """One booted page (ours or the peer's) speaking one API, kept for every run."""

    def __init__(self, pw: Any, browser: Any, url: str, api: str, peer: bool, max_tokens: int | None = None) -> None:
        self.api, self.peer = api, peer
        self.context = browser.new_context(**pw.devices[DEVICE])
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.add_init_script(INSTRUMENTS)
        self.page.add_init_script(settings_script(api, "stamp=1", max_tokens))
        serve_entry(self.context, url, peer)
        self.page.goto(url + "/")
        self.page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached",
                                    timeout=BOOT_TIMEOUT_MS)
        if self.page.get_attribute("html", "data-python") != "ready":
            raise RuntimeError(f"Python did not start: {self.page.inner_text('#boot')}")
        self.cdp = self.context.new_cdp_session(self.page)
        # One reply first, unthrottled and unshaped, as in bench/render.py: the figures
        # are of a page in use, not of its first JIT, its vocabulary's first load or its
        # first visit's background work.
        self.reply("warm up", throttle=False)

    def reply(self, prompt: str, throttle: bool = True) -> dict[str, Any]:
        page = self.page
        page.get_by_role("button", name="New chat").first.click()
        # Medium, in the composer's Thinking control (a new chat starts at Auto).
        page.click("#thinking")
        page.click('#thinking-menu [data-level="medium"]')
        page.fill("#prompt", prompt)
        self.cdp.send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE if throttle else 1})
        try:
            before = page.locator('.msg[data-role="assistant"]').count()
            send_at = page.evaluate(SEND)
            # (The page's CSP forbids the eval that wait_for_function needs: locators only.)
            li = page.locator('.msg[data-role="assistant"]').nth(before)
            li.wait_for(state="attached")
            request_id = li.get_attribute("data-id")
            page.wait_for_selector(f'html[data-bench-finished~="{request_id}"]', state="attached", timeout=REPLY_TIMEOUT_MS)
            # The last frame after the end: the reply's ending painted.
            page.evaluate("() => new Promise((r) => requestAnimationFrame(() => setTimeout(() => r(true))))")
        finally:
            self.cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        data = page.evaluate("() => window.__bench")
        li = page.locator('.msg[data-role="assistant"]').last
        return {**measure(data, send_at, request_id), "state": li.get_attribute("data-state"),
                "readable": readable(li), "errors": list(self.errors)}

    def close(self) -> None:
        self.context.close()


def readable(li: Any) -> bool:
    """Whether an ended reply leaves the person something to read: answer text, or the
    note that the budget went to thinking, with the button that continues it."""
    answer = (li.locator(".content").first.text_content() or "").strip()
    if answer:
        return True
    return li.get_by_role("button", name="Continue with more room").count() > 0


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(data: dict[str, Any], send_at: float, request_id: str) -> dict[str, Any]:
    events = [e for e in data["events"] if e.get("id") == request_id]
    frames = data["frames"]
    deltas = [e for e in events if e["type"] == "chat.delta"]
    first = lambda pred: next((f["at"] for f in frames if pred(f)), None)  # noqa: E731
    row_at = first(lambda f: f["row"])
    reasoning_at = first(lambda f: f["reasoning"] > 0 and f["phase"] in ("reasoning", "done"))
    answer_at = first(lambda f: f["answer"] > 0)
    first_reasoning = next((d for d in deltas if d["reasoning"]), None)

    def chunk_to_paint(kind: str) -> list[float]:
        field = "text" if kind == "answer" else kind  # the delta's field, the frame's
        # Each chunk's gateway stamps against the first frame at or after its arrival
        # that shows more of its kind than the frame before it.
        out: list[float] = []
        shown = [(f["at"], f[kind]) for f in frames]
        for d in deltas:
            if not d[field] or not d["stamps"]:
                continue
            paint = next((at for at, length in shown if at >= d["at"] and length > 0), None)
            if paint is not None:
                out += [paint - stamp for stamp in d["stamps"]]
        return out

    since = [s for s in data["shifts"] if s["at"] >= send_at]
    moved = [s for s in since if not s["inAnswer"]]
    shifts = [s["value"] for s in moved]
    return {
        "thinking_row_ms": None if row_at is None else round(row_at - send_at, 1),
        "first_reasoning_paint_ms": (None if reasoning_at is None or first_reasoning is None
                                     else round(reasoning_at - first_reasoning["t"], 1)),
        "first_reasoning_arrival_ms": None if first_reasoning is None else round(first_reasoning["t"] - send_at, 1),
        "first_sign_ms": None if reasoning_at is None else round(reasoning_at - send_at, 1),
        "first_answer_ms": None if answer_at is None else round(answer_at - send_at, 1),
        "reasoning_c2p_ms": chunk_to_paint("reasoning"),
        "answer_c2p_ms": chunk_to_paint("answer"),
        "layout_shift": round(sum(shifts), 4),
        "shifted": sorted({w for s in moved for w in s["what"]}),
        "answer_markdown_shift": round(sum(s["value"] for s in since if s["inAnswer"]), 4),
        "finish": next((e.get("finish") for e in events if e["type"] == "chat.done"), None),
        # Where the time before the first byte went, on the worker's clock from Send.
        "legs_ms": legs(events, send_at),
    }


def legs(events: list[dict[str, Any]], send_at: float) -> dict[str, float | None]:
    prepared = next((e for e in events if e["type"] == "chat.prepared"), None)
    done = next((e for e in events if e["type"] == "chat.done"), None)
    timings = (done or {}).get("timings") or {}
    since = lambda t: None if t is None else round(t - send_at, 1)  # noqa: E731
    return {
        "prepared": since(prepared["at"]) if prepared else None,
        "prepare_ms": prepared.get("prepare_ms") if prepared else None,
        "request_sent": since(timings.get("send")),
        "headers": since(timings.get("headers")),
        "first_byte": since(timings.get("first_byte")),
        "first_delta": since(timings.get("first_delta")),
    }


def med(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--apis", default=",".join(APIS))
    parser.add_argument("--profile", default="slow4g", choices=sorted(PROFILES))
    parser.add_argument("--cut-max-tokens", type=int, default=64,
                        help="max_tokens of the replies cut while thinking (far below the thinking phase)")
    args = parser.parse_args()
    apis = [a for a in args.apis.split(",") if a]
    load_before = os.getloadavg()
    by_api: dict[str, Any] = {}
    ours_runs: dict[str, list[dict[str, Any]]] = {api: [] for api in apis}
    peer_runs: dict[str, list[dict[str, Any]]] = {api: [] for api in apis}
    empty = 0
    cut_replies = 0
    # How each API's short reply ended. On Messages the core keeps max_tokens at least
    # 1,024 above the thinking budget (Anthropic refuses less), and the built-in model
    # thinks within its budget, so that reply is not cut while thinking: said, not hidden.
    cut_finish: dict[str, str | None] = {}
    with gateway("--log-level", "warning", "--rpm", "100000", "--tpm", "100000000") as direct, \
            shaped_url(direct, None, tls=True) as (url, link), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        phones: dict[tuple[str, bool], Phone] = {}
        try:
            for api in apis:
                for peer in (False, True):
                    phones[api, peer] = Phone(pw, browser, url, api, peer)
                    print(f"booted {'peer' if peer else 'firsttoken'} on {api}", flush=True)
            link.profile = PROFILES[args.profile]
            for i in range(1, args.runs + 1):
                for api in apis:
                    for peer in (False, True):
                        run = phones[api, peer].reply(f"{PROMPT} (run {i})")
                        (peer_runs if peer else ours_runs)[api].append(run)
                        if run["state"] != "done" or run["errors"]:
                            raise RuntimeError(f"{api} {'peer' if peer else 'firsttoken'} run {i} failed: {run}")
                        print(f"{api} {'peer' if peer else 'firsttoken'} run {i}: row {run['thinking_row_ms']} ms, "
                              f"first reasoning paint {run['first_reasoning_paint_ms']} ms after its arrival "
                              f"({run['first_reasoning_arrival_ms']} ms after Send), first sign {run['first_sign_ms']} ms, "
                              f"first answer {run['first_answer_ms']} ms, reasoning c2p p95 "
                              f"{percentile(run['reasoning_c2p_ms'], 0.95)}, answer c2p p95 "
                              f"{percentile(run['answer_c2p_ms'], 0.95)}, layout shift {run['layout_shift']} {run['shifted']}; "
                              f"legs {run['legs_ms']}", flush=True)
            for phone in phones.values():
                phone.close()
            phones.clear()
            # Replies cut while thinking: nothing may end as an empty bubble.
            for api in apis:
                phone = Phone(pw, browser, url, api, False, max_tokens=args.cut_max_tokens)
                phones[api, False] = phone
                run = phone.reply(PROMPT)
                cut_finish[api] = run["finish"]
                if run["finish"] == "length":
                    cut_replies += 1
                # Any reply that ends with nothing to read counts, cut or not.
                empty += 0 if run["readable"] else 1
                print(f"{api} cut while thinking: finish {run['finish']}, readable {run['readable']}", flush=True)
        finally:
            for phone in phones.values():
                phone.close()
            browser.close()

    def api_summary(api: str) -> dict[str, Any]:
        ours, peer = ours_runs[api], peer_runs[api]
        sign = [o["first_sign_ms"] / p["first_answer_ms"] for o, p in zip(ours, peer, strict=True)
                if o["first_sign_ms"] and p["first_answer_ms"]]
        answer = [o["first_answer_ms"] / p["first_answer_ms"] for o, p in zip(ours, peer, strict=True)
                  if o["first_answer_ms"] and p["first_answer_ms"]]
        reasoning_c2p = [v for o in ours for v in o["reasoning_c2p_ms"]]
        peer_c2p = [v for p in peer for v in p["answer_c2p_ms"]]
        r95, p95 = percentile(reasoning_c2p, 0.95), percentile(peer_c2p, 0.95)
        return {
            "thinking_row_ms_p95": percentile([o["thinking_row_ms"] for o in ours if o["thinking_row_ms"] is not None], 0.95),
            "first_reasoning_paint_ms_p95": percentile(
                [o["first_reasoning_paint_ms"] for o in ours if o["first_reasoning_paint_ms"] is not None], 0.95),
            "first_sign_ms_p50": med([o["first_sign_ms"] for o in ours]),
            "peer_first_answer_ms_p50": med([p["first_answer_ms"] for p in peer]),
            "first_answer_ms_p50": med([o["first_answer_ms"] for o in ours]),
            "first_sign_vs_peer_p50": med(sign),
            "answer_vs_peer_p50": med(answer),
            "reasoning_c2p_p95_ms": r95,
            "peer_plain_c2p_p95_ms": p95,
            "reasoning_paint_ratio_p95": round(r95 / p95, 3) if r95 and p95 else None,
            "layout_shift": round(sum(o["layout_shift"] for o in ours), 4),
            "answer_markdown_shift": round(sum(o["answer_markdown_shift"] for o in ours), 4),
            "runs": len(ours),
        }

    for api in apis:
        by_api[api] = api_summary(api)
    every = [by_api[api] for api in apis]
    result = {
        "thinking_row_ms_p95": percentile([o["thinking_row_ms"] for api in apis for o in ours_runs[api]
                                           if o["thinking_row_ms"] is not None], 0.95),
        "first_reasoning_paint_ms_p95": percentile([o["first_reasoning_paint_ms"] for api in apis for o in ours_runs[api]
                                                    if o["first_reasoning_paint_ms"] is not None], 0.95),
        "first_sign_vs_peer_p50": med([s["first_sign_vs_peer_p50"] for s in every]),
        "answer_vs_peer_p50": med([s["answer_vs_peer_p50"] for s in every]),
        "reasoning_paint_ratio_p95": med([s["reasoning_paint_ratio_p95"] for s in every]),
        "layout_shift": round(sum(s["layout_shift"] for s in every), 4),
        "answer_markdown_shift": round(sum(s["answer_markdown_shift"] for s in every), 4),
        "empty_bubbles": empty,
        "cut_replies": cut_replies,
        "cut_finish": cut_finish,
        "by_api": by_api,
        "profile": args.profile,
        "cpu_throttle": THROTTLE,
        "runs": args.runs,
        "load_avg": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
    }
    result["targets"] = {
        "thinking_row_ms_p95": (result["thinking_row_ms_p95"] or 1e9) <= 100,
        "first_reasoning_paint_ms_p95": (result["first_reasoning_paint_ms_p95"] or 1e9) <= 50,
        "first_sign_vs_peer_p50": (result["first_sign_vs_peer_p50"] or 1e9) <= 0.2,
        "answer_vs_peer_p50": (result["answer_vs_peer_p50"] or 1e9) <= 1.05,
        "reasoning_paint_ratio_p95": (result["reasoning_paint_ratio_p95"] or 1e9) <= 1.1,
        "layout_shift": result["layout_shift"] == 0,
        "empty_bubbles": empty == 0,
    }
    # Issue 45, item 6: a target against a peer that cannot lose says so. The peer paints
    # nothing before the answer, so the first sign's ratio is the model's thinking time
    # (about 5 s at medium) read back: it fails only when reasoning is painted late (Chat
    # Completions, with no summary's delay behind its answer, reads 0.21-0.25). The
    # plain-text peer has no answer markdown to shift.
    result["holds_by_construction"] = [
        "first_sign_vs_peer_p50: the peer shows nothing before its answer; the ratio's size is the model's thinking time",
        "answer_markdown_shift: the plain-text peer has none",
    ]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
