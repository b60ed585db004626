"""What the page's rendering fetches lazily (js/render/highlighter.js, math.js) is served
from this origin and kept by the service worker for offline use."""

from __future__ import annotations

import json
import re

import httpx
import pytest


@pytest.fixture
def client(gateway_url: str):
    with httpx.Client(base_url=gateway_url, timeout=30) as c:
        yield c


def test_the_highlight_core_is_served_as_an_es_module(client: httpx.Client) -> None:
    r = client.get("/vendor/highlight.js/core.js")
    assert r.status_code == 200 and "javascript" in r.headers["content-type"]
    assert r.text.rstrip().endswith("export default module.exports;")
    assert "require(" not in r.text  # a CommonJS file that needs nothing else
    again = client.get("/vendor/highlight.js/core.js", headers={"if-none-match": r.headers["etag"]})
    assert again.status_code == 304
    python = client.get("/vendor/highlight.js/languages/python.js")
    assert python.status_code == 200 and "export { python as default }" in python.text


def test_the_service_worker_keeps_every_language_katex_and_its_woff2_fonts(client: httpx.Client) -> None:
    body = client.get("/sw.js").text
    manifest = json.loads(re.match(r"self\.FIRSTTOKEN_BUILD = (\{.*?\});\n", body).group(1))
    assets = set(manifest["assets"])
    listed = re.findall(r"import\('\.\./\.\./(vendor/highlight\.js/languages/[\w-]+\.js)'\)",
                        client.get("/js/render/highlighter.js").text)
    assert len(listed) > 30 and set(listed) <= assets
    assert {"vendor/highlight.js/core.js", "vendor/katex/katex.mjs", "vendor/katex/katex.min.css"} <= assets
    fonts = {a for a in assets if a.startswith("vendor/katex/fonts/")}
    assert len(fonts) == 20 and all(f.endswith(".woff2") for f in fonts)
    for path in ("vendor/katex/katex.mjs", sorted(fonts)[0]):
        assert client.get("/" + path).status_code == 200
