"""Benchmark: a 12 MP phone photo sent on slow 4G (issue 27).

    .venv/bin/python bench/images.py [--runs N] [--profile slow4g]

The real page in Debian's headless Chromium (a Pixel 7's screen), against the real
gateway's built-in model with its default costs (a first token waits 1.1 s plus the
prompt it has not cached), through a shaped link (bench/shaper.py, `slow4g`: 0.75
Mbit/s up, 150 ms RTT) switched on once the page has booted unshaped.

The photo is made here: 4032 × 3024 (12 MP, a phone's main camera), with the detail
that makes a camera's JPEG large (sensor noise over shapes and gradients), quality 92,
with EXIF. Each run, interleaved:

  - firsttoken: the photo is attached in the composer (the picker's input), shrunk in
    the worker to the size the model keeps (`image.size`), then sent with its text;
  - peer: a naive client, the same page and core, sending the original file as a data
    URL (its `chat.send` posted to the worker as a host would, so nothing shrinks it).

Per run: bytes up (the request body as Chromium sent it), Send → first token (from the
click, or the post, to the first `chat.delta`, on the page's clock), and for
firsttoken the prepare time in the worker (`data-prepare-ms`: file to JPEG) and the
longest main-thread task while preparing (Long Tasks API: only tasks of 50 ms or more
are reported, so 0 means none reached 50 ms). Medians over the runs; the ratios are
firsttoken / peer.

Targets (issue 27): bytes up ≤ 0.1× the peer's, Send → first token ≤ 0.25×, longest
main-thread task ≤ 50 ms.

Prints human lines, then LAST one JSON line:
    {"profile", "photo_bytes", "firsttoken": {"bytes_up", "ttft_ms", "prepare_ms",
     "longest_task_ms", "attach_to_first_token_ms"}, "peer": {"bytes_up", "ttft_ms"},
     "ratio_bytes", "ratio_ttft", "targets_met"}
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import statistics
import tempfile
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from PIL import Image, ImageDraw  # noqa: E402
from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from bench.profiles import PROFILES  # noqa: E402
from bench.shaper import shaped_url  # noqa: E402
from harness.chromium import ARGS, BOOT_TIMEOUT_MS, CHROMIUM  # noqa: E402
from harness.protocol_spy import PROTOCOL_SPY  # noqa: E402 - test-only: the page's protocol, to Playwright
from harness.servers import gateway  # noqa: E402

MODEL = "firsttoken-sim"
TEXT = "What does this receipt say?"

# Long tasks on the main thread, kept from the start (buffered), with their start time.
LONG_TASKS = """
window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longTasks.push({ start: e.startTime, duration: e.duration });
}).observe({ type: 'longtask', buffered: true });
"""


def photo(width: int = 4032, height: int = 3024, seed: int = 7) -> bytes:
    """A camera-like 12 MP JPEG: shapes and gradients under sensor noise (noise is what
    makes a phone's JPEG weigh megabytes), with an EXIF block as a phone writes one."""
    base = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    draw = ImageDraw.Draw(base)
    for i in range(40):
        x, y = (i * 977 + seed * 131) % width, (i * 613 + seed * 71) % height
        draw.rectangle((x, y, x + 400, y + 250), fill=((i * 53) % 256, (i * 97) % 256, (i * 151) % 256))
        draw.text((x + 20, y + 20), f"ITEM {i:02d}  {i * 3.15:8.2f}", fill=(0, 0, 0))
    noise = Image.effect_noise((width, height), 48).convert("RGB")
    image = Image.blend(base, noise, 0.25)
    exif = Image.Exif()
    exif[0x0110] = "Pixel 7"
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 24.0), 3: "E", 4: (2.0, 21.0, 3.0)}
    out = io.BytesIO()
    image.save(out, "JPEG", quality=92, exif=exif)
    return out.getvalue()


def first_token_ms(page: Page, request_id: str, sent_at: float) -> float:
    page.wait_for_selector(f'html[data-ft-finished~="{request_id}"]', state="attached", timeout=300_000)
    events = [e for e in page.evaluate("() => window.__ft.events") if e.get("id") == request_id]
    if events[-1]["type"] != "chat.done":
        raise RuntimeError(f"{request_id} failed: {events[-1]}")
    first = next(e for e in events if e["type"] == "chat.delta")
    return first["t"] - sent_at


def ours(page: Page, photo_file: Path) -> dict[str, Any]:
    page.evaluate("() => { window.__longTasks.length = 0; }")
    attached_at = page.evaluate("() => performance.timeOrigin + performance.now()")
    # A file on disk, as the picker gives it (handed to Chromium by path: a buffer would
    # be decoded from base64 by Playwright's script in the page, a long task of its own).
    page.set_input_files("#attach-input", files=[photo_file])
    thumb = page.locator("#attachments li.attachment:not([data-pending])")
    expect(thumb).to_have_count(1, timeout=120_000)
    prepare_ms = float(thumb.get_attribute("data-prepare-ms") or "nan")
    page.fill("#prompt", TEXT)
    sent_at = page.evaluate("""() => {
      const t = performance.timeOrigin + performance.now();
      document.getElementById('send').click();
      return t;
    }""")
    request_id = page.locator('.msg[data-role="assistant"]').last.get_attribute("data-id")
    ttft = first_token_ms(page, request_id, sent_at)
    # Long tasks from the attach to the thumbnail (the preparing), on the page's clock.
    until = attached_at - page.evaluate("performance.timeOrigin") + prepare_ms
    tasks = page.evaluate("() => window.__longTasks")
    since = attached_at - page.evaluate("performance.timeOrigin")
    longest = max((t["duration"] for t in tasks if t["start"] + t["duration"] >= since and t["start"] <= until), default=0)
    return {"ttft_ms": ttft, "prepare_ms": prepare_ms, "longest_task_ms": longest,
            "attach_to_first_token_ms": ttft + (sent_at - attached_at)}


def peer(page: Page, data: bytes, n: int) -> dict[str, Any]:
    url = "data:image/jpeg;base64," + base64.b64encode(data).decode()
    request_id = f"peer{n}"
    # Its upload alone takes over a minute on slow 4G: the core's stall timeout (60 s with
    # no byte back) would end it first, so it waits as long as the naive client would.
    settings = {"model": MODEL, "base_url": page.url.rstrip("/") + "/v1", "stall_timeout_s": 600, "stall_notice_s": 600}
    msg = {"v": 1, "type": "chat.send", "id": request_id, "settings": settings,
           "messages": [{"role": "user", "content": [{"type": "text", "text": TEXT},
                                                     {"type": "image_url", "image_url": {"url": url, "detail": "high"}}]}]}
    sent_at = page.evaluate("""(text) => {
      const t = performance.timeOrigin + performance.now();
      window.__ft.worker.postMessage(text);
      return t;
    }""", json.dumps(msg))
    return {"ttft_ms": first_token_ms(page, request_id, sent_at)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", default="slow4g", choices=sorted(PROFILES))
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    data = photo()
    photo_file = Path(tempfile.mkdtemp(prefix="bench-images-")) / "PXL_0001.jpg"
    photo_file.write_bytes(data)
    print(f"photo: 4032×3024 JPEG, {len(data):,} bytes ({len(data) * 4 / 3:,.0f} as a data URL)", flush=True)
    rows: dict[str, list[dict[str, Any]]] = {"firsttoken": [], "peer": []}
    # The peer's upload is the original photo as a data URL, past the gateway's default
    # 4 MiB body limit; the providers take far more (OpenAI's vision guide: "up to 50 MB
    # total payload size per request"), so the gateway does here too.
    with gateway("--log-level", "warning", "--max-body-bytes", str(32 * 1024 * 1024)) as direct, shaped_url(direct) as (url, link), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(service_workers="block", **pw.devices["Pixel 7"])
        page = context.new_page()
        bodies: list[int] = []
        page.on("request", lambda r: bodies.append(len(r.post_data_buffer or b""))
                if r.url.endswith("/v1/chat/completions") else None)
        page.add_init_script(PROTOCOL_SPY)
        page.add_init_script(LONG_TASKS)
        page.goto(url + "/")
        page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
        if page.get_attribute("html", "data-python") != "ready":
            raise RuntimeError(f"Python did not start: {page.inner_text('#boot')}")
        # The tokenizer's vocabulary is fetched with the first count (once per page, and
        # by the service worker for later visits): loaded before the link is shaped, so
        # that the first run does not pay for it.
        page.fill("#prompt", "warm up")
        expect(page.locator("#count")).to_have_attribute("data-exact", "true", timeout=120_000)
        page.fill("#prompt", "")
        link.profile = profile
        for n in range(args.runs):
            for who in ("firsttoken", "peer"):
                seen = len(bodies)
                row = ours(page, photo_file) if who == "firsttoken" else peer(page, data, n)
                row["bytes_up"] = bodies[seen] if len(bodies) > seen else 0
                rows[who].append(row)
                print(f"run {n} {who:10s} " + " ".join(f"{k} {v:,.0f}" for k, v in row.items()), flush=True)
            page.locator("#new-chat").click()  # each run a conversation of one photo
        browser.close()

    def median(who: str, key: str) -> float:
        return round(statistics.median(r[key] for r in rows[who]), 1)

    result: dict[str, Any] = {
        "profile": args.profile,
        "photo_bytes": len(data),
        "firsttoken": {k: median("firsttoken", k) for k in ("bytes_up", "ttft_ms", "prepare_ms", "longest_task_ms",
                                                           "attach_to_first_token_ms")},
        "peer": {k: median("peer", k) for k in ("bytes_up", "ttft_ms")},
    }
    result["ratio_bytes"] = round(result["firsttoken"]["bytes_up"] / result["peer"]["bytes_up"], 4)
    result["ratio_ttft"] = round(result["firsttoken"]["ttft_ms"] / result["peer"]["ttft_ms"], 4)
    result["targets_met"] = {
        "bytes": result["ratio_bytes"] <= 0.1,
        "ttft": result["ratio_ttft"] <= 0.25,
        "longest_task": result["firsttoken"]["longest_task_ms"] <= 50,
    }
    print(f"medians over {args.runs} runs on {args.profile}; targets: {result['targets_met']}")
    print(json.dumps(result))
    sys.exit(0)


if __name__ == "__main__":
    main()
