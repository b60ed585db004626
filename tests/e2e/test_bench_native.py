"""`make bench-native`'s Chromium renderer in small (bench/native/pages.py): the benchmark
is the page's host, as the GTK host is in WebKit (tests/webkit/test_native_smoke.py);
its settings reach the page, which streams the stamped chunks and measures each one."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from bench.native.pages import ChromiumPage
from bench.native.renderers import percentile, sim_header

pytestmark = pytest.mark.e2e

CHUNKS = 30


def test_the_page_in_chromium_takes_the_benchmarks_settings_and_measures_every_chunk(browser: Browser,
                                                                                      gateway_url: str) -> None:
    with ChromiumPage(browser, gateway_url) as page:
        # Each reply sets the settings again, over the host channel, and is answered.
        replies = [page.reply(sim_header(100, CHUNKS, ttft_ms=50), CHUNKS) for _ in range(2)]
    for reply in replies:
        # One latency per chunk (and the role, finish and usage events the page stamps),
        # on the clock the gateway stamped: none negative, none absurd.
        assert CHUNKS <= len(reply.samples_ms) <= CHUNKS + 3
        assert reply.extra["chunk_clock"] == "server"
        assert min(reply.samples_ms) > -0.5 and max(reply.samples_ms) < 10_000
        assert reply.extra["chunk_to_paint_ms"]["p95"] == pytest.approx(percentile(reply.samples_ms, 95), abs=0.1)
