"""`make bench-native` in small (bench/native.py): a few stamped chunks from a real
gateway into the native GTK view and into the page in WebKitGTK, under Xvfb, and what
each measured is real: one latency per chunk, on the wall clock the gateway stamped,
positive and bounded, painted in frames GTK paced."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from bench.native.pages import WebKitPage, plain_page_tree
from bench.native.renderers import NativeRenderer, percentile, sim_header
from harness.servers import gateway
from harness.gtk import Xvfb

CHUNKS = 30
TPS = 100
#: Latencies beyond this are not a slow machine but a broken measure (a wrong clock).
SANE_MS = 10_000


def assert_sane(samples: list[float], low: int, high: int) -> None:
    assert low <= len(samples) <= high, f"{len(samples)} samples for {CHUNKS} chunks"
    # The stamp and the paint are read from the same wall clock, the paint after the
    # send: a negative latency would be a clock mix-up (0.5 ms: the page's clock is a
    # monotonic one anchored to the wall clock at its start).
    assert min(samples) > -0.5, samples
    assert max(samples) < SANE_MS, samples


@pytest.mark.parametrize("markdown", [False, True], ids=["plain", "markdown"])
def test_native_view_measures_every_chunk_to_its_frame(xvfb: Xvfb, gateway_url: str, markdown: bool) -> None:
    with NativeRenderer(gateway_url, display=xvfb.display, markdown=markdown) as native:
        assert native.gtk_version.startswith("4.")
        reply = native.reply(sim_header(TPS, CHUNKS, ttft_ms=50), CHUNKS)
        second = native.reply(sim_header(TPS, CHUNKS, ttft_ms=50), CHUNKS)  # the view is reused
    for r in (reply, second):
        assert_sane(r.samples_ms, CHUNKS, CHUNKS)
        assert r.extra["chars"] == r.extra["text_chars"] > 0  # all of the text is in the view
        # Painted in frames, several chunks to a frame at most: never more frames than chunks.
        assert r.frames is not None and 1 <= r.frames <= CHUNKS
    assert reply.extra["chars"] == second.extra["chars"]  # the same prompt, the same stream


def test_the_page_in_webkit_measures_the_same_stream(xvfb: Xvfb, gateway_url: str) -> None:
    with WebKitPage(gateway_url, display=xvfb.display, settle=False) as page:
        reply = page.reply(sim_header(TPS, CHUNKS, ttft_ms=50), CHUNKS)
    # The page also stamps the role, finish and usage events (bench/native/pages.py).
    assert_sane(reply.samples_ms, CHUNKS, CHUNKS + 3)
    assert reply.extra["chunk_clock"] == "server"
    assert reply.extra["chunk_to_paint_ms"]["p95"] == pytest.approx(percentile(reply.samples_ms, 95), abs=0.1)
    # What was measured, not how fast: a skew is reported, and no more than a broken clock
    # would make it; frames came paced (a free-running loop gives them back to back).
    # Upper bounds on either (once 50 ms and 100 ms) measured the machine's load.
    assert reply.clock_skew_ms is not None and abs(reply.clock_skew_ms) < SANE_MS
    assert page.frame_interval_ms > 5


def test_the_plain_text_peer_is_served_as_the_page_is(tmp_path: Path) -> None:
    tree = plain_page_tree(tmp_path)
    with gateway(root=tree) as url:
        with urllib.request.urlopen(url + "/") as response:
            document = response.read().decode()
            csp = response.headers["content-security-policy"]
        with urllib.request.urlopen(url + "/js/bench-render-plain.js") as response:
            entry = response.read().decode()
        with urllib.request.urlopen(url + "/js/plain-text.js") as response:
            answers = response.read().decode()
    assert 'src="js/bench-render-plain.js"' in document and "js/page/main.js" not in document
    assert "from './page/page.js'" in entry and "from './plain-text.js'" in entry and "PlainText" in answers
    assert csp  # the gateway's own headers: the peer loads under the page's rules
