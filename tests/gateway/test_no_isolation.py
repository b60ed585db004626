"""`--no-isolation`: the page without COOP/COEP, as Android's WebView sees it (never
cross-origin isolated); everything else it is sent stays the same."""

from __future__ import annotations

import httpx

from harness.servers import gateway


def test_no_isolation_drops_coop_and_coep_only() -> None:
    with gateway("--no-isolation") as url, httpx.Client(base_url=url, timeout=30) as client:
        for path in ("/", "/js/link/python-link.js", "/vendor/pyodide/pyodide.mjs", "/v1/models"):
            r = client.get(path)
            assert r.status_code == 200, path
            assert "cross-origin-opener-policy" not in r.headers, path
            assert "cross-origin-embedder-policy" not in r.headers, path
            assert r.headers["cross-origin-resource-policy"] == "same-origin", path
            assert "script-src 'self'" in r.headers["content-security-policy"], path
