"""The official `openai` package, pointed at our gateway, as a peer would use it."""

from __future__ import annotations

import openai
import pytest

SIM = "x-firsttoken-sim"
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "what is a frame budget?"}]


@pytest.fixture
def client(gateway_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway_url + "/v1", api_key="not-needed", max_retries=0)


def test_openai_client_streams_a_completion_unchanged(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="firsttoken-sim",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={SIM: "ttft_ms=0,tps=5000,chunk=3"},
    )
    pieces, finish, usage = [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            finish = choice.finish_reason or finish
    whole = client.chat.completions.create(model="firsttoken-sim", messages=MESSAGES, extra_headers={SIM: "ttft_ms=0"})
    assert len(pieces) > 10
    assert "".join(pieces) == whole.choices[0].message.content
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens == whole.usage.completion_tokens
    assert usage.prompt_tokens == whole.usage.prompt_tokens > 0


def test_openai_client_sees_typed_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="firsttoken-sim", messages=MESSAGES, extra_headers={SIM: "status=429"})
    assert info.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="firsttoken-sim", messages=[])
    with pytest.raises(openai.APIError):
        stream = client.chat.completions.create(
            model="firsttoken-sim", messages=MESSAGES, stream=True, extra_headers={SIM: "ttft_ms=0,error_after=2"}
        )
        for _ in stream:
            pass


def test_openai_client_lists_models(client: openai.OpenAI) -> None:
    assert "firsttoken-sim" in [m.id for m in client.models.list()]
