"""Warming the connection in WebKitGTK (js/page/warm.js), through the real host: the app
asks at start (`connection.warm`), exactly one warm-up goes to the API's origin (the
page's own, made as it started with the composer focused, or the host's), and asking
again while the connection is warm sends nothing."""

from __future__ import annotations

import pytest

from harness.webkit import of
from harness.gtk import WebKitHost

pytestmark = pytest.mark.e2e


def warm(host: WebKitHost, request_id: str) -> bool:
    host.send({"v": 1, "type": "connection.warm", "id": request_id})
    return host.wait_for(of(host, request_id, "connection.warmed"))["sent"]


def test_a_host_warms_the_connection_once(host: WebKitHost) -> None:
    started = host.eval("document.documentElement.dataset.warmups ?? '0'")
    first = warm(host, "w1")
    # One warm-up in all, whoever made it: the page as it started, or this request.
    assert (started, first) in {("1", False), ("0", True)}
    assert host.eval("document.documentElement.dataset.warmups") == "1"
    assert warm(host, "w2") is False
    assert host.eval("document.documentElement.dataset.warmups") == "1"
