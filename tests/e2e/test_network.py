"""A first visit over a slow link, and bad input on the way, in real Chromium.

- On a throttled link (DevTools network emulation), the page declines the gateway's
  snapshot (js/boot/snapshot-pays.js), boots Python normally, makes its own snapshot
  afterwards, and the next visit restores that one.
- Meanwhile the boot line only moves forward, and shows "Downloading Python x of y MB"
  with a bar that never goes back, once, until the last byte.
- An Accept-Encoding the gateway does not offer, a truncated variant and a corrupt one
  on the gateway's disk: the page still boots, from identity bytes, with no error.

Compressed responses decoded through the service worker and offline are
tests/e2e/test_compressed.py's.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Response

from gateway.precompressed import read_index
from gateway.static import ROOT
from harness.chromium import BOOT_TIMEOUT_MS
from tests.e2e.visitor import Visitor
from harness.servers import copy_tree, gateway

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(70)]

WASM = "/vendor/pyodide/pyodide.asm.wasm"
STDLIB = "/vendor/pyodide/python_stdlib.zip"
SNAPSHOT = "/py/firsttoken.snapshot"
# A link where the 4.8 MB snapshot costs more than a plain boot, even on the busiest CPU
# (1.2 Mbit/s: ~32 s, against at most 8 × 2.5 s: js/boot/snapshot-pays.js).
SLOW = {"offline": False, "latency": 40, "downloadThroughput": 1.2e6 / 8, "uploadThroughput": 1.2e6 / 8}
# Every boot line and every bar value the page shows, in order, from before its scripts.
WATCH = """
window.__lines = [];
window.__bar = [];
new MutationObserver(() => {
  const text = document.getElementById('boot')?.textContent;
  if (text && window.__lines.at(-1) !== text) window.__lines.push(text);
  const bar = document.getElementById('boot-progress');
  if (bar && !bar.hidden && window.__bar.at(-1) !== bar.value) window.__bar.push(bar.value);
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""
STAGE_ORDER = [
    "Starting Python…", "Loading Python…", "Starting the interpreter…", "Restoring Python…",
    "Python started, loading firsttoken…", "Python started, saying hello…", "Python ready", "Ready",  # the header says Ready once Python is (js/page/page.js)
]
DOWNLOADING = re.compile(r"^Downloading Python (\d+\.\d) of (\d+\.\d) MB$")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    index = read_index(ROOT / "build" / "encoded")
    assert index.get(SNAPSHOT) and index[SNAPSHOT].variants, "no variants built: run `make` (build/encoded/)"
    with gateway("--ttft-ms", "0", "--tps", "500", measure_link=True) as base:
        yield base


def throttled(page: Page) -> None:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", SLOW)


def test_a_slow_link_skips_the_server_snapshot_and_progress_only_moves_forward(browser: Browser, url: str) -> None:
    context = browser.new_context()
    context.add_init_script(WATCH)
    visitor = Visitor(context, url)
    snapshot_responses: list[Response] = []
    context.on("response", lambda r: snapshot_responses.append(r) if r.url.endswith(SNAPSHOT) else None)
    original = visitor.visit

    try:
        page = context.new_page()
        page.on("console", visitor.console.on_console)
        page.on("pageerror", visitor.console.on_error)
        throttled(page)
        page.goto(url + "/", wait_until="commit")
        # The input takes typing while Python downloads.
        page.wait_for_selector("#prompt:focus", timeout=BOOT_TIMEOUT_MS)
        page.keyboard.type("early")
        boot = visitor.boot(page)
        assert page.input_value("#prompt") == "early"
        served = boot["served"]
        assert boot["snapshot"] == "none" and boot["snapshot_from"] is None, boot
        assert served["fetched"] is False and served["reason"] == "slow-link", served
        assert served["bytes"] > 1_000_000 and served["expected_ms"] > 2500, served
        lines = page.evaluate("() => window.__lines")
        bar = page.evaluate("() => window.__bar")
        # The page makes its own snapshot, with no network (the next visit restores it).
        visitor.wait_snapshot_stored(page)
        page.close()
        assert not visitor.console.page_errors, visitor.console.page_errors

        # Stage texts in their order; the byte count in one run, growing, before
        # anything past the download; the bar never back.
        downloading = [i for i, line in enumerate(lines) if DOWNLOADING.match(line)]
        assert downloading, lines
        assert downloading == list(range(downloading[0], downloading[-1] + 1)), lines
        counts = [float(DOWNLOADING.match(lines[i]).group(1)) for i in downloading]
        assert counts == sorted(counts) and counts[-1] > counts[0], lines
        total = float(DOWNLOADING.match(lines[downloading[-1]]).group(2))
        assert 2.0 < total < 8.0, lines  # the runtime as brotli, without the snapshot
        stages = [STAGE_ORDER.index(line) for line in lines if not DOWNLOADING.match(line)]
        assert stages == sorted(stages), lines
        assert lines[-1] == "Ready", lines
        assert bar and bar == sorted(bar) and 0 < bar[-1] <= 1, bar

        with original() as again:
            assert visitor.boot(again)["snapshot"] == "restored"
    finally:
        context.close()


def test_a_fast_link_restores_the_server_snapshot(browser: Browser, url: str) -> None:
    context = browser.new_context()
    visitor = Visitor(context, url)
    try:
        with visitor.visit() as page:
            boot = visitor.boot(page)
            assert boot["snapshot_from"] == "server", boot
            assert boot["served"]["fetched"] is True and boot["served"]["reason"] in ("fast-link", "link-unknown")
            assert page.locator("#boot-progress").is_hidden()
    finally:
        context.close()


def test_an_accept_encoding_the_gateway_does_not_offer_gets_identity(browser: Browser, url: str) -> None:
    # Playwright sets it on every request of the context: the page's and its workers'.
    context = browser.new_context(extra_http_headers={"Accept-Encoding": "zstd, compress;q=0.5"})
    visitor = Visitor(context, url)
    encodings: dict[str, Any] = {}
    context.on("response", lambda r: encodings.setdefault(r.url.removeprefix(url), r.headers.get("content-encoding")))
    try:
        page = context.new_page()
        page.on("pageerror", visitor.console.on_error)
        page.goto(url + "/", wait_until="domcontentloaded")
        page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached",
                               timeout=BOOT_TIMEOUT_MS)
        assert page.get_attribute("html", "data-python") == "ready", page.inner_text("#boot")
        # Restored or booted normally, as the link measured (18.8 MB of identity snapshot).
        assert visitor.boot(page)["snapshot"] in ("restored", "none")
        page.close()
        assert WASM in encodings and SNAPSHOT in encodings, encodings
        assert set(encodings.values()) == {None}, encodings
        assert not visitor.console.page_errors
    finally:
        context.close()


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway over a copy of the tree whose variants on disk are damaged: the wasm's
    brotli cut short, the standard library's with a byte flipped (same length)."""
    tree = copy_tree(tmp_path_factory.mktemp("damaged"))
    shutil.copytree(ROOT / "build" / "snapshot", tree / "build" / "snapshot")
    shutil.copytree(ROOT / "build" / "encoded", tree / "build" / "encoded")
    index = read_index(tree / "build" / "encoded")
    wasm = tree / "build" / "encoded" / index[WASM].variants["br"].file
    wasm.write_bytes(wasm.read_bytes()[: wasm.stat().st_size // 2])
    stdlib = tree / "build" / "encoded" / index[STDLIB].variants["br"].file
    data = bytearray(stdlib.read_bytes())
    data[len(data) // 2] ^= 0x5A
    stdlib.write_bytes(bytes(data))
    with gateway("--ttft-ms", "0", "--tps", "500", root=tree) as base:
        yield base


def test_damaged_variants_on_the_gateway_are_skipped_and_the_page_boots(browser: Browser, damaged: str) -> None:
    context = browser.new_context()
    visitor = Visitor(context, damaged)
    encodings: dict[str, Any] = {}
    context.on("response", lambda r: encodings.setdefault(r.url.removeprefix(damaged), r.headers.get("content-encoding")))
    try:
        with visitor.visit() as page:
            assert visitor.boot(page)["snapshot"] in ("restored", "none")
        assert encodings[WASM] is None and encodings[STDLIB] is None, encodings
        assert encodings[SNAPSHOT] == "br", encodings
        log = "".join(damaged.log)  # type: ignore[attr-defined]
        assert re.search(r"pyodide\.asm\.wasm\.br has \d+ bytes, the build wrote \d+; serving identity", log), log
        assert re.search(r"python_stdlib\.zip\.br is not the file the build wrote \(SHA-256\)", log), log
    finally:
        context.close()
