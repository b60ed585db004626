"""Benchmark: answers interrupted as a phone interrupts them, resumed against retried.

    .venv/bin/python bench/resume.py [--rounds N]

Real Chromium (a Pixel 7 context) talks to a real gateway process on the built-in
model through a loopback proxy shaped as slow 4G (bench/shaper.py with
bench/profiles.py's `slow4g`: 4 Mbit/s down, 0.75 Mbit/s up, 150 ms round trip, and a
new connection's handshake). Each answer is interrupted mid-way, once, in one of three
ways, in turn:

- `offline`: the device loses its network for 2 s (the proxy resets every connection
  and refuses new ones; Chromium reports the device offline), then it is back;
- `frozen`: the page is frozen for 5 s, as a backgrounded WebView is (Page Lifecycle
  `freeze`, CDP `Page.setWebLifecycleState`), then woken (`resume`);
- `reload`: the page is reloaded (a WebView the OS killed and the user reopened).

Two clients, interleaved answer by answer, on two gateway processes that differ only
in `--no-resume`:

- firsttoken: the page as it is; the gateway keeps the answer going and the page
  resumes its stream from the last event it painted;
- peer (today's behaviour before resume): the answer ends interrupted; the user taps
  Retry as soon as it is offered, which sends the prompt again.

Per answer it records `back_to_paint_ms`: from the moment the interruption ends (back
online; woken; for a reload, Python ready again on the new page, the first moment
either client can act) to the next painted text of that answer (the page's
`data-paints` counter, timed in the page); the POSTs the answer cost (each one bills
the prompt again); and whether the finished text equals the built-in model's
uninterrupted answer to the same request.

Prints one line per answer, then LAST one JSON line:
    {"resumed_ms_p50", "resumed_ms_p95", "peer_retry_ttft_ms_p50", "peer_retry_ttft_ms_p95",
     "billed_prompt_ratio", "peer_billed_prompt_ratio", "identical_pct", "by_kind", ...}
`billed_prompt_ratio`: prompt tokens billed per answer ÷ those of one uninterrupted
answer (POSTs × the request's `usage.prompt_tokens`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

import httpx  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402

from e2e import percentile  # noqa: E402
from bench.profiles import PROFILES  # noqa: E402
from bench.shaper import LinkThread, shaped_url  # noqa: E402
from harness.servers import CHROMIUM, CHROMIUM_ARGS, gateway  # noqa: E402

SLOW_4G = PROFILES["slow4g"]
#: The built-in model at its default first-token time, streaming at a phone-readable pace,
#: an answer long enough (15 s) to outlast every interruption.
SIM = "tps=40,tokens=600"
ANSWER = '.msg[data-role="assistant"]'
KINDS = ("offline", "frozen", "reload")
PROMPT = (ROOT / "tests" / "corpus" / "compress" / "code-python-02.md").read_text()
BOOT_TIMEOUT_MS = 120_000

#: Records, in the page, when the last answer's `data-paints` changes (ms since the
#: epoch), into window.__paints; set again after a reload.
WATCH_PAINTS = """() => {
  window.__paints = [];
  new MutationObserver(() => {
    const answers = document.querySelectorAll('.msg[data-role="assistant"]');
    const last = answers[answers.length - 1];
    if (last && last.dataset.paints !== window.__lastPaints) {
      window.__lastPaints = last.dataset.paints;
      window.__paints.push(performance.timeOrigin + performance.now());
    }
  }).observe(document.getElementById('messages'), { subtree: true, attributes: true, attributeFilter: ['data-paints'] });
}"""
NOW = "() => performance.timeOrigin + performance.now()"


def settings_script() -> str:
    settings = json.dumps({"headers": {"x-firsttoken-sim": SIM}})
    return f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)})"


def ready(page: Page) -> None:
    page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
    if page.get_attribute("html", "data-python") != "ready":
        raise RuntimeError(f"Python did not start: {page.inner_text('#boot')}")


def last_answer(page: Page):
    return page.locator(ANSWER).last


def wait_state(page: Page, states: str, timeout_ms: int = 120_000) -> str:
    page.wait_for_function(
        f"(s) => {{ const a = document.querySelectorAll('{ANSWER}'); const l = a[a.length - 1];"
        " return l && s.split(',').includes(l.dataset.state); }", arg=states, timeout=timeout_ms)
    return last_answer(page).get_attribute("data-state") or ""


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


def interrupt(page: Page, proxy: LinkThread, kind: str, peer: bool) -> float:
    """Interrupt the answer streaming on `page`; returns when it ended (ms since the
    epoch, page clock), the moment from which the next paint is timed."""
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
        time.sleep(5.0)  # the scenario's length: the app sits in the background
        cdp.send("Page.setWebLifecycleState", {"state": "active"})
        # Taken here, not in the page: once active, the page runs what it queued while
        # frozen (deltas a live connection brought) before it would answer an evaluate.
        back = time.time() * 1000.0
        page.evaluate("() => document.dispatchEvent(new Event('resume'))")
        cdp.detach()
        return back
    page.reload()
    page.evaluate(WATCH_PAINTS)
    ready(page)
    return page.evaluate(NOW)


def one_answer(page: Page, proxy: LinkThread, url: str, kind: str, n: int, peer: bool) -> dict[str, Any]:
    posts: list[dict[str, Any]] = []

    def on_request(request: Any) -> None:
        if request.method == "POST" and request.url.endswith("/v1/chat/completions"):
            body = request.post_data_buffer or b"{}"
            # Gzipped to this gateway (it says it takes it): the JSON as the gateway reads it.
            posts.append(json.loads(gzip.decompress(body) if request.headers.get("content-encoding") == "gzip" else body))

    page.on("request", on_request)
    try:
        page.fill("#prompt", f"{PROMPT}\n\n(answer {n}: {kind})")
        page.get_by_role("button", name="Send", exact=True).click()
        page.wait_for_function(
            f"() => {{ const a = document.querySelectorAll('{ANSWER}'); const l = a[a.length - 1];"
            " return l && +(l.dataset.paints || 0) >= 5; }", timeout=120_000)
        back = interrupt(page, proxy, kind, peer)
        if peer:
            # Today's behaviour: the answer ends interrupted (or failed offline); the user
            # taps Retry as soon as it is offered.
            wait_state(page, "interrupted,error,stopped")
            last_answer(page).get_by_role("button", name="Retry", exact=True).click()
        page.wait_for_function(
            "(t) => (window.__paints || []).some((p) => p > t)", arg=back, timeout=120_000)
        painted = page.evaluate("(t) => window.__paints.find((p) => p > t)", back)
        state = wait_state(page, "done,error,interrupted,stopped")
        text = stored_answer(page)
    finally:
        page.remove_listener("request", on_request)
    return {
        "client": "peer" if peer else "firsttoken", "kind": kind, "state": state,
        "back_to_paint_ms": round(painted - back, 1), "posts": len(posts),
        "identical": state == "done" and bool(posts) and text == uninterrupted(url, posts[0]),
    }


def run(rounds: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with (gateway("--log-level", "warning") as resuming, gateway("--log-level", "warning", "--no-resume") as plain,
          shaped_url(resuming) as (url, proxy), shaped_url(plain) as (peer_url, peer_proxy),
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
    theirs = [r for r in results if r["client"] == "peer"]

    def p(rows: list[dict[str, Any]], q: float) -> float:
        return round(percentile([r["back_to_paint_ms"] for r in rows], q), 1)

    by_kind = {
        kind: {
            "resumed_ms_p50": p([r for r in ours if r["kind"] == kind], 50),
            "peer_retry_ttft_ms_p50": p([r for r in theirs if r["kind"] == kind], 50),
        }
        for kind in KINDS
    }
    return {
        "rounds": rounds,
        "answers": len(results),
        "profile": {"down_mbps": SLOW_4G.down_mbps, "up_mbps": SLOW_4G.up_mbps, "rtt_ms": SLOW_4G.rtt_ms},
        "resumed_ms_p50": p(ours, 50),
        "resumed_ms_p95": p(ours, 95),
        "peer_retry_ttft_ms_p50": p(theirs, 50),
        "peer_retry_ttft_ms_p95": p(theirs, 95),
        "resumed_vs_retry_p95": round(p(ours, 95) / p(theirs, 95), 3),
        "billed_prompt_ratio": round(statistics.mean(r["posts"] for r in ours), 3),
        "peer_billed_prompt_ratio": round(statistics.mean(r["posts"] for r in theirs), 3),
        "identical_pct": round(100 * sum(r["identical"] for r in ours) / len(ours), 1),
        "by_kind": by_kind,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of the three interruptions, per client")
    args = parser.parse_args()
    print(json.dumps(run(args.rounds)))


if __name__ == "__main__":
    main()
