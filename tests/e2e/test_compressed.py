"""A first visit over compressed responses (gateway/precompressed.py), then the same page
offline from what the service worker kept of them: decoded bodies, with no header left
claiming an encoding they no longer have.

The gateway serves this checkout, with the variants and the install-time snapshot
`make` built into build/.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Response

from gateway.precompressed import read_index
from gateway.static import ROOT
from tests.e2e.visitor import Visitor
from harness.servers import gateway

pytestmark = pytest.mark.e2e

WASM = "/vendor/pyodide/pyodide.asm.wasm"
SNAPSHOT = "/py/firsttoken.snapshot"
# What the service worker keeps of a few files, as the page's caches see it.
KEPT = """async (paths) => {
  const name = (await caches.keys()).find((n) => n.startsWith('firsttoken-assets-'));
  const cache = await caches.open(name);
  const out = {};
  for (const path of paths) {
    const hit = await cache.match(new URL(path.slice(1), location.href).href);
    out[path] = hit && {
      encoding: hit.headers.get('content-encoding'),
      length: hit.headers.get('content-length'),
      bytes: (await hit.arrayBuffer()).byteLength,
    };
  }
  return out;
}"""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    index = read_index(ROOT / "build" / "encoded")
    assert index.get(WASM) and index[WASM].variants, "no variants built: run `make` (build/encoded/)"
    with gateway("--ttft-ms", "0", "--tps", "500") as base:
        yield base


def test_the_page_boots_from_compressed_responses_and_again_offline(browser: Browser, url: str) -> None:
    index = read_index(ROOT / "build" / "encoded")
    context = browser.new_context()
    visitor = Visitor(context, url)
    responses: list[Response] = []

    def seen(response: Response) -> None:
        responses.append(response)

    context.on("response", seen)
    try:
        with visitor.visit() as page:
            first = visitor.boot(page)
            visitor.wait_snapshot_stored(page)
            visitor.wait_service_worker(page)
        assert first["snapshot_from"] == "server", first  # the install-time snapshot, compressed
        encodings = {r.url.removeprefix(url): r.headers.get("content-encoding")
                     for r in responses if r.url.startswith(url) and not r.from_service_worker and r.status == 200}
        assert encodings[WASM] in ("br", "gzip"), encodings
        assert encodings[SNAPSHOT] in ("br", "gzip"), encodings
        for path, coding in encodings.items():
            if path in index and index[path].variants:
                assert coding in index[path].variants, (path, coding)

        # The service worker's copies: decoded, and saying so.
        kept_paths = [WASM, "/js/page/main.js"]
        plain = {p: len(httpx.get(url + p, headers={"accept-encoding": "identity"}).content) for p in kept_paths}
        with visitor.visit() as page:
            kept = page.evaluate(KEPT, kept_paths)
        for path in kept_paths:
            assert kept[path]["encoding"] is None and kept[path]["bytes"] == plain[path], (path, kept[path])
            assert kept[path]["length"] in (None, str(plain[path])), (path, kept[path])

        responses.clear()
        context.set_offline(True)
        try:
            with visitor.visit() as page:
                assert visitor.boot(page)["snapshot"] == "restored"
                assert page.evaluate("crossOriginIsolated")
                page.keyboard.type("offline")
                assert page.input_value("#prompt") == "offline"
        finally:
            context.set_offline(False)
        same_origin = [r for r in responses if r.url.startswith(url)]
        assert same_origin and all(r.from_service_worker for r in same_origin)
    finally:
        context.close()
    assert not visitor.console.page_errors
