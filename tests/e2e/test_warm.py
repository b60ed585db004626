"""Warming the connection before Send (js/page/warm.js), in Chromium: the composer's
focus opens the connection to the API with one keyless `GET /models`; more focus and
typing do not repeat it while the connection is warm, a chat counts as use, the
warm-up is never a chat request, and a host's `connection.warm` at app start does the
same for where its settings point."""

from __future__ import annotations

import socket
from typing import Any

from playwright.sync_api import Page, Request, expect

from harness.chromium import wait_ready
from tests.e2e.native_host import as_host, host_message, post


def _is_models(request: Request) -> bool:
    return request.url.endswith("/models")


def _api_requests(page: Page) -> list[dict[str, Any]]:
    """Every request the page and its worker send to an API path (/v1/…), in order."""
    seen: list[dict[str, Any]] = []
    page.on("request", lambda r: seen.append({"method": r.method, "url": r.url, "headers": r.headers,
                                              "body": r.post_data}) if "/v1/" in r.url else None)
    return seen


def test_focus_warms_the_connection_once_and_never_with_a_chat(page: Page, gateway_url: str) -> None:
    seen = _api_requests(page)
    # The composer has focus as the page starts: that is the app opening.
    with page.expect_request(_is_models) as warm:
        page.goto(gateway_url + "/")
    request = warm.value
    assert request.method == "GET" and request.url == gateway_url + "/v1/models"
    assert request.post_data is None
    assert "authorization" not in request.headers and "x-api-key" not in request.headers
    expect(page.locator("html")).to_have_attribute("data-warmups", "1")
    wait_ready(page)
    # The person leaves the box, comes back and types: the connection is warm.
    prompt = page.locator("#prompt")
    prompt.blur()
    prompt.focus()
    prompt.press_sequentially("what does a warm connection save?")
    # Then sends. Any warm-up the focus or the keys made was sent before this chat.
    with page.expect_request(lambda r: r.url.endswith("/v1/chat/completions")):
        page.get_by_role("button", name="Send", exact=True).click()
    assert [r["method"] + " " + r["url"].removeprefix(gateway_url) for r in seen] == [
        "GET /v1/models", "POST /v1/chat/completions"]
    expect(page.locator("html")).to_have_attribute("data-warmups", "1")


def _closed_port() -> int:
    """A local port nothing listens on: a request there is made, and refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_host_warms_the_connection_at_app_start(page: Page, gateway_url: str) -> None:
    as_host(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    expect(page.locator("html")).to_have_attribute("data-warmups", "1")
    # Warm already (the page's own warm-up at start): nothing goes.
    post(page, {"type": "connection.warm", "id": "w1"})
    assert host_message(page, "connection.warmed", "w1") == {"v": 1, "type": "connection.warmed", "id": "w1",
                                                             "sent": False}
    # The host points the page at another API: that origin's connection is cold.
    other = f"http://127.0.0.1:{_closed_port()}/v1"
    post(page, {"type": "settings.set", "id": "s", "settings": {"base_url": other}})
    host_message(page, "settings.applied", "s")
    with page.expect_request(_is_models) as warm:
        post(page, {"type": "connection.warm", "id": "w2"})
    assert warm.value.url == other + "/models" and warm.value.method == "GET"
    assert host_message(page, "connection.warmed", "w2")["sent"] is True
    expect(page.locator("html")).to_have_attribute("data-warmups", "2")
