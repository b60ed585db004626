"""Benchmark: a long system prompt sent the first time, then again (issue 8).

    .venv/bin/python bench/cache.py [--runs N]

The real page (index.html, its CSP, the Python core in its PyScript worker, IndexedDB)
in Debian's headless Chromium, against the real gateway on a loopback socket (built-in
model, answering 20 tokens at once: the answer is not what is measured). Each run takes
a new system prompt of at least 4,000 tokens (as sent, after compression: the
compression corpus' system prompts, tool schemas, prose and code, behind a line unique
to the run) and a short user message, and sends it twice:

  - first: nothing is cached: the core compresses and counts the system prompt, stores
    it in IndexedDB, and sends it in full (with the client id, so the gateway keeps it);
  - repeat: the same conversation again: the core takes the system message from the
    cache (its in-memory tier: the same session) and sends a reference
    (bridge/PROTOCOL.md, "Cache references").

After the runs the page is reloaded and each run's conversation is sent once more: the
system message then comes from IndexedDB (the memory tier is gone with the page). Those
figures are printed as a human line ("after reload"), not in the JSON.

Per request:
  - prepare_ms: the core's own measure of preparing the request (`chat.prepared`),
    cache lookup included;
  - request_bytes: the bytes of the request body as Chromium sent it (checked equal to
    what the core reports).
Medians over the runs. ratio_* = repeat / first (targets: both <= 0.1).

The requests go in through the page's protocol (JSON `chat.send` to the worker, as a
native host would send it, by the e2e tests' `PROTOCOL_SPY` init script), not through
the composer, so that every request holds just the system prompt and the user message. One
warm-up request with a short system prompt runs first, so that "first" is the first
request *with this system prompt* in a page in use: the page's tokenizer vocabulary
(loaded once per page, ~2.4 MB) and the IndexedDB connection (opened once) are not
charged to it. Their one-time cost is printed as the warm-up's prepare_ms.

Prints human lines, then LAST one JSON line:
    {"system_tokens", "first": {"prepare_ms", "request_bytes"},
     "repeat": {"prepare_ms", "request_bytes"}, "ratio_bytes", "ratio_prepare",
     "holds_by_construction"}
"""

from __future__ import annotations

import argparse
import gzip
import json
import secrets
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from firsttoken import tokens  # noqa: E402
from harness.chromium import ARGS, BOOT_TIMEOUT_MS, CHROMIUM  # noqa: E402
from harness.protocol_spy import PROTOCOL_SPY  # noqa: E402 - test-only: the page's protocol, to Playwright
from harness.servers import gateway  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "compress"
PARTS = [
    *sorted(CORPUS.glob("system-prompt-*.md")),
    *sorted(CORPUS.glob("json-tool-schema-*.md")),
    *sorted(CORPUS.glob("prose-*.md")),
    CORPUS / "code-python-01.md",
    CORPUS / "code-ts-01.md",
    CORPUS / "code-yaml-01.md",
]
MODEL = "gpt-4o"
USER = "Hi! What can you help me with today?"

def system_prompt(run: str) -> str:
    body = "\n\n".join(p.read_text() for p in PARTS)
    return f"Deployment {run}. You are the assistant of this deployment.\n\n{body}"


def send(page: Page, request_id: str, messages: list[dict], base_url: str) -> dict[str, Any]:
    """Post one `chat.send` to the worker; return its events once it finished."""
    msg = {"v": 1, "type": "chat.send", "id": request_id, "messages": messages,
           "settings": {"base_url": base_url, "model": MODEL}}
    page.evaluate("text => window.__ft.worker.postMessage(text)", json.dumps(msg))
    page.wait_for_selector(f'html[data-ft-finished~="{request_id}"]', state="attached", timeout=120_000)
    events = [e for e in page.evaluate("() => window.__ft.events") if e.get("id") == request_id]
    end = events[-1]
    if end["type"] != "chat.done":
        raise RuntimeError(f"{request_id} failed: {end}")
    return {e["type"]: e for e in events}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    firsts: list[dict] = []
    repeats: list[dict] = []
    system_tokens = 0
    systems: list[list[dict]] = []
    with gateway("--ttft-ms", "0", "--tps", "20000", "--tokens", "20") as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context().new_page()
        sent_bodies: list[bytes] = []
        page.on("request", lambda r: sent_bodies.append(r.post_data_buffer or b"") if r.url.endswith("/v1/chat/completions") else None)
        page.add_init_script(PROTOCOL_SPY)
        page.goto(url + "/")
        page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
        if page.get_attribute("html", "data-python") != "ready":
            raise RuntimeError(f"Python did not start: {page.inner_text('#boot')}")
        base_url = url + "/v1"
        warm_up = [{"role": "system", "content": "You are terse. " * 40}, {"role": "user", "content": USER}]
        warm = send(page, "warm", warm_up, base_url)
        print(f"warm-up (tokenizer vocabulary and IndexedDB opened once per page): "
              f"prepare {warm['chat.prepared']['prepare_ms']:.0f} ms", flush=True)
        for i in range(args.runs):
            system = system_prompt(f"{i}-{secrets.token_hex(4)}")
            messages = [{"role": "system", "content": system}, {"role": "user", "content": USER}]
            seen = len(sent_bodies)
            first = send(page, f"first{i}", messages, base_url)
            repeat = send(page, f"repeat{i}", messages, base_url)
            p1, p2 = first["chat.prepared"], repeat["chat.prepared"]
            # The core's own figure must be what Chromium really sent.
            sent = [len(b) for b in sent_bodies[seen:]]
            if sent != [p1["request_bytes"], p2["request_bytes"]]:
                raise RuntimeError(f"request sizes differ: Chromium sent {sent}, the core says "
                                   f"{[p1['request_bytes'], p2['request_bytes']]}")
            if (p1["cache"]["system"], p2["cache"]["system"]) != ("miss", "hit"):
                raise RuntimeError(f"unexpected cache use: {p1['cache']}, {p2['cache']}")
            firsts.append({"prepare_ms": p1["prepare_ms"], "request_bytes": p1["request_bytes"]})
            repeats.append({"prepare_ms": p2["prepare_ms"], "request_bytes": p2["request_bytes"]})
            print(f"run {i}: first {p1['prepare_ms']:7.1f} ms {p1['request_bytes']:6d} B · "
                  f"repeat {p2['prepare_ms']:6.1f} ms {p2['request_bytes']:5d} B "
                  f"({p1['cache']['store']})", flush=True)
            systems.append(messages)
            # What the system prompt costs as sent (compressed, in the page): counted
            # again here with tiktoken on CPython, independently of the page.
            # Gzipped to this gateway (it says it takes it): bytes as sent, JSON as read.
            body = sent_bodies[seen]
            system_tokens = tokens.count(json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)["messages"][0]["content"], MODEL)
            if system_tokens < 4000:
                raise RuntimeError(f"the system prompt is only {system_tokens} tokens")
        # A new session: the same conversations, now from IndexedDB.
        page.reload()
        page.wait_for_selector('html[data-python="ready"]', state="attached", timeout=BOOT_TIMEOUT_MS)
        send(page, "warm-again", warm_up, base_url)
        reloaded = []
        for i, messages in enumerate(systems):
            p = send(page, f"reloaded{i}", messages, base_url)["chat.prepared"]
            if (p["cache"]["system"], p["cache"]["source"], p["cache"]["store"]) != ("hit", "store", "indexeddb"):
                raise RuntimeError(f"after the reload, not a hit from IndexedDB: {p['cache']}")
            reloaded.append(p)
        browser.close()

    def median(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    first = {"prepare_ms": round(median(firsts, "prepare_ms"), 2), "request_bytes": int(median(firsts, "request_bytes"))}
    repeat = {"prepare_ms": round(median(repeats, "prepare_ms"), 2), "request_bytes": int(median(repeats, "request_bytes"))}
    result = {
        "system_tokens": system_tokens,
        "first": first,
        "repeat": repeat,
        "ratio_bytes": round(repeat["request_bytes"] / first["request_bytes"], 4),
        "ratio_prepare": round(repeat["prepare_ms"] / first["prepare_ms"], 4),
        # Issue 45, item 6: a check that cannot fail says so. The run stops unless the
        # repeat was a cache hit, and a hit sends a reference of a few hundred bytes in
        # place of a system prompt of at least 4,000 tokens, so ratio_bytes <= 0.1 holds
        # by construction: the figure shows the hit's size, the hit itself is the check.
        # ratio_prepare is measured and can fail.
        "holds_by_construction": ["ratio_bytes <= 0.1 (the run requires a cache hit, and a hit sends a reference)"],
    }
    after = statistics.median(p["prepare_ms"] for p in reloaded)
    print(f"after reload (hit from IndexedDB, text sent in full once per session): prepare {after:.1f} ms "
          f"(ratio {after / first['prepare_ms']:.3f}), {int(statistics.median(p['request_bytes'] for p in reloaded))} B")
    print(f"medians over {args.runs} runs; targets ratio_bytes <= 0.1 (by construction): {result['ratio_bytes'] <= 0.1}, "
          f"ratio_prepare <= 0.1: {result['ratio_prepare'] <= 0.1}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
