"""Conditional GET (gateway/conditional.py), RFC 9110 §13.1.2 and §15.4.5."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient

from gateway.conditional import cached_response, etag_of, none_match

TAG = etag_of(b"body")


@pytest.mark.parametrize("header, matches", [
    (None, False), ("", False), (TAG, True), ("W/" + TAG, True), ('"other", ' + TAG, True),
    ("*", True), ('"other"', False), (TAG[:-2] + '"', False),
])
def test_if_none_match_compares_weakly(header: str | None, matches: bool) -> None:
    assert none_match(header, TAG) is matches
    assert none_match(header, "W/" + TAG) is matches


def test_a_304_keeps_the_validator_and_the_caching_a_200_sends() -> None:
    async def endpoint(request: Request):
        return cached_response(request, b"body", media_type="text/plain")

    client = TestClient(Starlette(routes=[Route("/", endpoint)]))
    first = client.get("/")
    assert first.status_code == 200 and first.headers["etag"] == TAG and first.headers["cache-control"] == "no-cache"
    again = client.get("/", headers={"if-none-match": "W/" + TAG})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == TAG and again.headers["cache-control"] == "no-cache"
