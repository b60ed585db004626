"""The core's reasoning requests against the built-in model's own checks (the gateway's
dialects, in process): `firsttoken-sim-think` takes what the core asks in each API, and
the plain `firsttoken-sim` refuses it with a 400 the core takes for a refusal of the
parameter (so that it retries once without it), as a real API's would be."""

from __future__ import annotations

import json

import pytest

from firsttoken.settings import ChatSettings
from firsttoken.stream.dialects import reasoning_fields, reasoning_refused, request_body
from gateway.dialects import CHAT, MESSAGES, RESPONSES, Dialect
from gateway.errors import APIError

USER = [{"role": "user", "content": "what is a frame budget?"}]
DIALECTS = {"chat_completions": CHAT, "responses": RESPONSES, "anthropic_messages": MESSAGES}


def checked(dialect: Dialect, body: dict) -> None:
    dialect.check_supported(dialect.check(body, json.dumps(body).encode()))


@pytest.mark.parametrize("api", sorted(DIALECTS))
@pytest.mark.parametrize("setting", ["auto", "off", "low", "medium", "high"])
def test_the_thinking_model_takes_what_the_core_asks(api: str, setting: str) -> None:
    settings = ChatSettings(model="firsttoken-sim-think", reasoning=setting)
    checked(DIALECTS[api], request_body(USER, settings, api))


@pytest.mark.parametrize("api", sorted(DIALECTS))
def test_the_plain_model_refuses_it_in_words_the_core_reads(api: str) -> None:
    settings = ChatSettings(model="firsttoken-sim", reasoning="high")
    body = request_body(USER, settings, api)
    with pytest.raises(APIError) as caught:
        checked(DIALECTS[api], body)
    error = caught.value
    assert error.status == 400
    wire = error.anthropic_body("req_1")["error"] if api == "anthropic_messages" else error.body()["error"]
    assert reasoning_refused(wire, api, reasoning_fields(settings, api)), wire
    checked(DIALECTS[api], request_body(USER, settings, api, reasoning=False))  # and takes the retry
