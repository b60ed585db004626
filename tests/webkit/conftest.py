"""The page in WebKitGTK 6.0 (the engine of iOS's WKWebView), driven through the real
host at bridge/hosts/gtk/ under Xvfb, against a real gateway: the fixtures. What the
tests do with the page is in harness/webkit.py, the host's driver in harness/gtk.py."""

from __future__ import annotations

from typing import Iterator

import pytest

from harness.gtk import WebKitHost, Xvfb, webkit_available
from harness.webkit import assert_clean_console, boot


@pytest.fixture(scope="session")
def xvfb() -> Iterator[Xvfb]:
    missing = webkit_available()
    if missing:
        # Not a skip: `make test` installs WebKitGTK (`make webkit`), so its absence is a
        # broken machine, not an optional feature.
        pytest.fail(missing)
    with Xvfb() as server:
        yield server


@pytest.fixture(scope="module")
def host(xvfb: Xvfb, gateway_url: str) -> Iterator[WebKitHost]:
    """One booted page for a module's tests (each WebKit boot costs seconds)."""
    with WebKitHost(gateway_url + "/", display=xvfb.display) as h:
        boot(h)
        yield h
        print("\n".join(["--- WebKit console ---", *map(str, h.console)]))
        assert_clean_console(h)
