"""`x-firsttoken-prepare` on Responses and Messages (issue 45, item 2), over real
sockets: the gateway prepares the prompt of either dialect as the page's core would for
that API (compressed, counted), writes it back in the dialect's own fields through the
core's `request_body`, and leads the stream with `firsttoken.prepared`; the dialect's
own events follow, and its other fields are kept."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Iterator

import httpx
import pytest

from firsttoken.notices import Notices
from firsttoken.prepare.preparer import Preparer
from firsttoken.settings import ChatSettings
from gateway.app import GatewayConfig, create_app
from gateway.prepare import PREPARE_HEADER, PREPARED_EVENT
from harness.servers import serve_app
from harness.sse import sse_events as events

SIM = "x-firsttoken-sim"
SYSTEM = "You are terse.\n\n\n\nAnswer   in   one   line."
QUESTION = "Now this:\n```python\n# a comment that goes\ndef f(x):\n\n    return x  # and this\n```"


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    with serve_app(create_app(GatewayConfig(precompressed=None))) as url:
        yield url


def core_count(api: str) -> int:
    """The prompt tokens the page's core counts for the conversation in `api`."""
    preparer = Preparer(clock=lambda: 0.0, notices=Notices())
    settings = ChatSettings(model="firsttoken-sim", compress="balanced", api=api)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    return asyncio.run(preparer.prepare(messages, settings)).prompt_tokens


@pytest.mark.parametrize("path, api, body, text_event", [
    ("/v1/responses", "responses",
     {"model": "firsttoken-sim", "instructions": SYSTEM, "input": [{"role": "user", "content": QUESTION}],
      "stream": True, "store": False, "max_output_tokens": 400},
     "response.output_text.delta"),
    ("/v1/messages", "anthropic_messages",
     {"model": "firsttoken-sim", "system": SYSTEM, "messages": [{"role": "user", "content": QUESTION}],
      "max_tokens": 400, "stream": True},
     "content_block_delta"),
])
def test_a_prompt_in_either_dialect_is_prepared_and_answered_in_it(
        sim: str, path: str, api: str, body: dict[str, Any], text_event: str) -> None:
    r = httpx.post(sim + path, headers={PREPARE_HEADER: "balanced", SIM: "ttft_ms=0,tps=100000"}, json=body, timeout=30)
    assert r.status_code == 200, r.text
    got = events(r.text)
    assert got[0][0] == PREPARED_EVENT
    report = json.loads(got[0][1])
    assert report["type"] == "chat.prepared"
    # Compressed (the comments and blank lines), and counted as the core counts it.
    assert report["compression"] and report["compression"]["saved_tokens"] > 0
    assert report["prompt_tokens"] == core_count(api)
    # The dialect's own events follow, with text in them.
    names = [json.loads(data).get("type") for _, data in got[1:] if data.startswith("{")]
    assert text_event in names


def test_a_bad_level_is_refused_on_messages_too(sim: str) -> None:
    r = httpx.post(sim + "/v1/messages", headers={PREPARE_HEADER: "huge"},
                   json={"model": "firsttoken-sim", "messages": [{"role": "user", "content": "hi"}],
                         "max_tokens": 10, "stream": True})
    # Anthropic's error object (a `type`, no `code`), naming the header.
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "invalid_request_error"
    assert PREPARE_HEADER in r.json()["error"]["message"]
