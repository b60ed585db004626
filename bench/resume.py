"""Benchmark: answers interrupted as a phone interrupts them, resumed against re-POSTed.

    .venv/bin/python bench/resume.py [--rounds N]

Real Chromium (a Pixel 7 context) talks to a real gateway process on the built-in
model at its default physics (a first token waits 1.1 s plus the prompt's prefill at
50k tokens/s, gateway/prefill.py; no override of either) through a loopback proxy shaped
as slow 4G (bench/shaper.py with bench/profiles.py's `slow4g`), every new connection
charged its TCP handshake and TLS 1.3's (`tls=True`: the client's first byte leaves two
round trips after it connected, as on an https:// origin). Each answer is interrupted
mid-way, once, in one of three ways, in turn:

- `offline`: the device loses its network for 2 s (the proxy resets every connection
  and refuses new ones; Chromium reports the device offline), then it is back;
- `frozen`: the app is suspended for 5 s, as iOS suspends a backgrounded app: the page
  is frozen (Page Lifecycle `freeze`, CDP `Page.setWebLifecycleState`) and the link is
  cut while it is (the proxy resets every connection and refuses new ones, as the
  system reclaims a suspended app's sockets), then the link is back and the page woken
  (`resume`). The device is not offline: the page learns of the loss from its failed
  stream, as a woken WebView does;
- `reload`: the page is reloaded (a WebView the OS killed and the user reopened).

Two clients, interleaved answer by answer, on two gateway processes that differ only
in `--no-resume`:

- firsttoken: the page as it is; the gateway keeps the answer going and the page
  resumes its stream from the last event it painted;
- re-POST: what a client without resumable streams does: its answer ends interrupted,
  the user taps Retry as soon as it is offered, and the prompt is POSTed again (the
  same page against a gateway that offers no resume, so both sides share everything
  else).

Per answer it records `back_to_paint_ms`: from the moment the interruption ends (back
online; woken; for a reload, Python ready again on the new page, the first moment
either client can act) to the next painted text of that answer (the page's
`data-paints` counter, timed in the page); the prompt tokens the answer was billed, from
the gateway's usage records (bench/usage_gateway.py: the built-in model's settled
usage of every answer it started, including those whose client went away before their
usage object arrived); and whether the finished text equals the built-in model's
uninterrupted answer to the same request.

Prints one line per answer, then LAST one JSON line:
    {"peer", "resumed_ms_p50", "resumed_ms_p95", "repost_ms_p50", "repost_ms_p95",
     "billed_prompt_ratio", "repost_billed_prompt_ratio", "uncached_prompt_ratio",
     "repost_uncached_prompt_ratio", "identical_pct", "by_kind", "holds_by_construction", ...}
`billed_prompt_ratio`: the prompt tokens the gateway billed for an answer ÷ the prompt
tokens of one uninterrupted answer (its first request's record), mean over answers;
`uncached_prompt_ratio` the same for the prompt tokens not read from the prefix cache
(which providers bill at a discount, and which cost prefill time). Both are counted
from what the gateway billed: neither holds by construction (a resumed answer that
re-POSTed, or a retry the cache served, would show).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

import httpx  # noqa: E402
from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from bench.profiles import PROFILES  # noqa: E402
from bench.shaper import LinkThread, shaped_url  # noqa: E402
from bench.usage_gateway import usage_gateway, usage_records  # noqa: E402
from gateway.simulator import SimParams  # noqa: E402
from harness.servers import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

SLOW_4G = PROFILES["slow4g"]
#: The built-in model's defaults, which both gateways run on (said in the JSON line).
MODEL = SimParams()
#: The built-in model at its default first-token cost (no `ttft_ms` or `prefill_tps`
#: here), streaming at a phone-readable pace, an answer long enough (15 s) to outlast
#: every interruption.
SIM = "tps=40,tokens=600"
ANSWER = '.msg[data-role="assistant"]'
KINDS = ("offline", "frozen", "reload")
PEER = "re-POST"
PROMPT = (ROOT / "tests" / "corpus" / "compress" / "code-python-02.md").read_text()
BOOT_TIMEOUT_MS = 120_000
WAIT_MS = 120_000

#: Records, in the page, when the last answer's `data-paints` changes (ms since the
#: epoch), into window.__paints, and says so with a `bench-paint` event; set again
#: after a reload.
WATCH_PAINTS = """() => {
  window.__paints = [];
  new MutationObserver(() => {
    const answers = document.querySelectorAll('.msg[data-role="assistant"]');
    const last = answers[answers.length - 1];
    if (last && last.dataset.paints !== window.__lastPaints) {
      window.__lastPaints = last.dataset.paints;
      window.__paints.push(performance.timeOrigin + performance.now());
      window.dispatchEvent(new Event('bench-paint'));
    }
  }).observe(document.getElementById('messages'), { subtree: true, attributes: true, attributeFilter: ['data-paints'] });
}"""
#: The first paint recorded after `t` (ms since the epoch), awaited on the paints' own
#: event (the page's CSP forbids Playwright's wait_for_function, which evaluates a
#: string); rejected after `ms`.
PAINT_AFTER = """([t, ms]) => new Promise((ok, no) => {
  const found = () => (window.__paints || []).find((p) => p > t);
  if (found()) return ok(found());
  const timer = setTimeout(() => no(new Error('no paint after the interruption in ' + ms + ' ms')), ms);
  window.addEventListener('bench-paint', function seen() {
    if (!found()) return;
    clearTimeout(timer);
    window.removeEventListener('bench-paint', seen);
    ok(found());
  });
})"""
#: Resolves once the last answer has painted `n` times; rejected after `ms`.
PAINTED = """([n, ms]) => new Promise((ok, no) => {
  const count = () => {
    const a = document.querySelectorAll('.msg[data-role="assistant"]');
    return a.length ? +(a[a.length - 1].dataset.paints || 0) : 0;
  };
  if (count() >= n) return ok();
  const timer = setTimeout(() => no(new Error('the answer painted fewer than ' + n + ' times in ' + ms + ' ms')), ms);
  const watch = new MutationObserver(() => {
    if (count() < n) return;
    clearTimeout(timer);
    watch.disconnect();
    ok();
  });
  watch.observe(document.getElementById('messages'),
                { subtree: true, childList: true, attributes: true, attributeFilter: ['data-paints'] });
})"""
NOW = "() => performance.timeOrigin + performance.now()"


def settings_script() -> str:
    settings = json.dumps({"headers": {"x-firsttoken-sim": SIM}})
    return f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)})"


def ready(page: Page) -> None:
    page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
    if page.get_attribute("html", "data-python") != "ready":
        raise RuntimeError(f"Python did not start: {page.inner_text('#boot')}")


def wait_state(page: Page, states: tuple[str, ...]) -> str:
    answer = page.locator(ANSWER).last
    expect(answer).to_have_attribute("data-state", re.compile("^(" + "|".join(states) + ")$"), timeout=WAIT_MS)
    return answer.get_attribute("data-state") or ""


def uninterrupted(url: str, body: dict[str, Any]) -> str:
    r = httpx.post(url + "/v1/chat/completions", headers={"x-firsttoken-sim": SIM}, json={**{k: v for k, v in body.items() if k != "stream_options"}, "stream": False}, timeout=120)
    r.raise_for_status()
    return r.json()["choices"][0]["message"]["content"]


def stored_answer(page: Page) -> str:
    return page.evaluate("""() => new Promise((ok, no) => {
      const r = indexedDB.open('firsttoken-conversations');
      r.onerror = () => no(r.error);
      r.onsuccess = () => {
        const tx = r.result.transaction(['messages', 'state']);
        const all = tx.objectStore('messages').getAll(), open = tx.objectStore('state').get('open');
        tx.oncomplete = () => {
          r.result.close();
          const c = all.result.find((m) => m.id === open.result) ?? all.result[0];
          const answers = c.messages.filter((m) => m.role === 'assistant');
          ok(answers[answers.length - 1].content);
        };
      };
    })""")


def interrupt(page: Page, proxy: LinkThread, kind: str) -> float:
    """Interrupt the answer streaming on `page`; returns when it ended (ms since the
    epoch), the moment from which the next paint is timed."""
    if kind == "offline":
        page.context.set_offline(True)
        proxy.cut()
        time.sleep(2.0)  # the scenario's length: the user walks through the tunnel
        proxy.restore()
        back = page.evaluate(NOW)
        page.context.set_offline(False)
        return back
    if kind == "frozen":
        cdp = page.context.new_cdp_session(page)
        page.evaluate("() => document.dispatchEvent(new Event('freeze'))")
        cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
        # iOS reclaims a suspended app's sockets: its connections are gone when it wakes,
        # and nothing arrives while it sleeps (issue 45: a link kept up fed the frozen
        # page deltas that a plain page would simply have painted on waking).
        proxy.cut()
        time.sleep(5.0)  # the scenario's length: the app sits in the background
        proxy.restore()
        cdp.send("Page.setWebLifecycleState", {"state": "active"})
        # Taken here, not in the page: once active, the page runs what it queued while
        # frozen before it would answer an evaluate. Same clock (the page's is the epoch's).
        back = time.time() * 1000.0
        page.evaluate("() => document.dispatchEvent(new Event('resume'))")
        cdp.detach()
        return back
    page.reload()
    page.evaluate(WATCH_PAINTS)
    ready(page)
    return page.evaluate(NOW)


def one_answer(page: Page, proxy: LinkThread, gateway: Any, kind: str, n: int, peer: bool) -> dict[str, Any]:
    posts: list[dict[str, Any]] = []

    def on_request(request: Any) -> None:
        if request.method == "POST" and request.url.endswith("/v1/chat/completions"):
            body = request.post_data_buffer or b"{}"
            # Gzipped to this gateway (it says it takes it): the JSON as the gateway reads it.
            posts.append(json.loads(gzip.decompress(body) if request.headers.get("content-encoding") == "gzip" else body))

    billed_before = len(usage_records(gateway))
    page.on("request", on_request)
    try:
        page.fill("#prompt", f"{PROMPT}\n\n(answer {n}: {kind})")
        page.get_by_role("button", name="Send", exact=True).click()
        page.evaluate(PAINTED, [5, WAIT_MS])
        back = interrupt(page, proxy, kind)
        if peer:
            # A client without resume: the answer ends interrupted (or failed offline);
            # the user taps Retry as soon as it is offered, which POSTs the prompt again.
            wait_state(page, ("interrupted", "error", "stopped"))
            page.locator(ANSWER).last.get_by_role("button", name="Retry", exact=True).click()
        painted = page.evaluate(PAINT_AFTER, [back, WAIT_MS])
        state = wait_state(page, ("done", "error", "interrupted", "stopped"))
        text = stored_answer(page)
    finally:
        page.remove_listener("request", on_request)
    # Read before the reference answer below, which the gateway bills too.
    billed = usage_records(gateway, at_least=billed_before + 1)[billed_before:]
    return {
        "client": PEER if peer else "firsttoken", "kind": kind, "state": state,
        "back_to_paint_ms": round(painted - back, 1), "posts": len(posts),
        "prompt_tokens": [r["prompt_tokens"] for r in billed],
        "cached_tokens": [r["cached_tokens"] for r in billed],
        "identical": state == "done" and bool(posts) and text == uninterrupted(gateway, posts[0]),
    }


def ratios(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """Mean over answers of the prompt tokens billed, and of those not read from the
    prefix cache, each ÷ the same for one uninterrupted answer (the answer's first
    request's record: what it would have cost had nothing interrupted it)."""
    if any(not r["prompt_tokens"] for r in rows):
        raise RuntimeError("an answer has no usage record: the gateway billed nothing for it")
    billed, uncached = [], []
    for r in rows:
        fresh = [p - c for p, c in zip(r["prompt_tokens"], r["cached_tokens"], strict=True)]
        billed.append(sum(r["prompt_tokens"]) / r["prompt_tokens"][0])
        uncached.append(sum(fresh) / fresh[0])
    return round(statistics.mean(billed), 3), round(statistics.mean(uncached), 3)


def run(rounds: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with (usage_gateway("--log-level", "warning") as resuming,
          usage_gateway("--log-level", "warning", "--no-resume") as plain,
          shaped_url(resuming, tls=True) as (url, proxy), shaped_url(plain, tls=True) as (peer_url, peer_proxy),
          sync_playwright() as pw):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = {}
        for peer, (base, link) in ((False, (url, proxy)), (True, (peer_url, peer_proxy))):
            # No service worker: it would download the runtime for offline use over the
            # shaped link while answers are measured.
            context = browser.new_context(service_workers="block", **pw.devices["Pixel 7"])
            page = context.new_page()
            page.add_init_script(settings_script())
            page.goto(base + "/")
            ready(page)
            page.evaluate(WATCH_PAINTS)
            link.profile = SLOW_4G
            pages[peer] = (page, link, resuming if not peer else plain)
        n = 0
        for _ in range(rounds):
            for kind in KINDS:
                for peer in (False, True):
                    page, link, direct = pages[peer]
                    n += 1
                    result = one_answer(page, link, direct, kind, n, peer)
                    print(json.dumps(result), flush=True)
                    results.append(result)
        browser.close()
    ours = [r for r in results if r["client"] == "firsttoken"]
    theirs = [r for r in results if r["client"] == PEER]

    def p(rows: list[dict[str, Any]], q: int) -> float:
        values = [r["back_to_paint_ms"] for r in rows]
        # Linear between closest ranks (statistics' "inclusive" method), as bench/e2e.py's.
        return round(values[0] if len(values) == 1 else statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1)

    by_kind = {
        kind: {
            "resumed_ms_p50": p([r for r in ours if r["kind"] == kind], 50),
            "repost_ms_p50": p([r for r in theirs if r["kind"] == kind], 50),
        }
        for kind in KINDS
    }
    billed, uncached = ratios(ours)
    repost_billed, repost_uncached = ratios(theirs)
    return {
        "peer": f"{PEER}: the same page on a --no-resume gateway, Retry tapped as soon as offered",
        "rounds": rounds,
        "answers": len(results),
        "profile": {"down_mbps": SLOW_4G.down_mbps, "up_mbps": SLOW_4G.up_mbps, "rtt_ms": SLOW_4G.rtt_ms, "tls": True},
        "model": {"ttft_ms": MODEL.ttft_ms, "prefill_tps": MODEL.prefill_tps},
        "resumed_ms_p50": p(ours, 50),
        "resumed_ms_p95": p(ours, 95),
        "repost_ms_p50": p(theirs, 50),
        "repost_ms_p95": p(theirs, 95),
        "resumed_vs_repost_p95": round(p(ours, 95) / p(theirs, 95), 3),
        "billed_prompt_ratio": billed,
        "repost_billed_prompt_ratio": repost_billed,
        "uncached_prompt_ratio": uncached,
        "repost_uncached_prompt_ratio": repost_uncached,
        "posts_per_answer": round(statistics.mean(r["posts"] for r in ours), 3),
        "repost_posts_per_answer": round(statistics.mean(r["posts"] for r in theirs), 3),
        "identical_pct": round(100 * sum(r["identical"] for r in ours) / len(ours), 1),
        "repost_identical_pct": round(100 * sum(r["identical"] for r in theirs) / len(theirs), 1),
        "by_kind": by_kind,
        # Issue 45, item 6: the peer's side of "billed once against twice" cannot come out
        # otherwise: a Retry posts the prompt again and the gateway bills every request's
        # prompt tokens, cached or not. Ours (billed_prompt_ratio) can fail; the peer's
        # cost that can vary is repost_uncached_prompt_ratio (its prefix cache).
        "holds_by_construction": ["repost_billed_prompt_ratio 2.0: a Retry posts the prompt again, and every prompt is billed"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of the three interruptions, per client")
    args = parser.parse_args()
    print(json.dumps(run(args.rounds)))


if __name__ == "__main__":
    main()
