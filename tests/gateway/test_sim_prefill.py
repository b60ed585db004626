"""The built-in model's prefill and prefix cache over a real socket, as the official
`openai` and `anthropic` clients parse them: a repeated long prompt comes back with
cached tokens (a multiple of 128) in each dialect's usage and a shorter first-token
delay in `x-firsttoken-sim-first-token-ms`; a short prompt, another key, or a prompt
without `cache_control` on Messages, with none. The delay is asserted as the
gateway decided it, never timed: the machine is shared and noisy."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import anthropic
import openai
import pytest

from gateway.prefill import CACHE_SAVING
from gateway.simulator import FIRST_TOKEN_HEADER, SIM_HEADER

MODEL = "firsttoken-sim"
# A million prompt tokens a second: the delay in ms is the uncached tokens / 1000.
SIM = "ttft_ms=0,tps=100000,tokens=20,prefill_tps=1000000"
LONG = "".join(f"Rule {i}: keep the frame budget under sixteen milliseconds. " for i in range(150))

_clients: list[Any] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


def new_key() -> str:
    """A key of its own per test: the cache is per key, and the gateway is shared."""
    return f"sk-prefill-{uuid.uuid4().hex}"


def oai(url: str, key: str) -> openai.OpenAI:
    client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, default_headers={SIM_HEADER: SIM})
    _clients.append(client)
    return client


def streamed_chat(client: openai.OpenAI, system: str, user: str = "what is a frame?") -> tuple[Any, float]:
    """One streamed chat completion: its usage (as the client parsed it) and the delay
    the gateway decided before its first token."""
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, stream=True, stream_options={"include_usage": True},
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
    delay = float(raw.headers[FIRST_TOKEN_HEADER])
    usage = None
    for chunk in raw.parse():
        usage = chunk.usage or usage
    assert usage is not None
    return usage, delay


def test_a_repeated_long_prompt_is_read_from_the_cache_in_128_token_steps(gateway_url: str) -> None:
    client = oai(gateway_url, new_key())
    first, first_delay = streamed_chat(client, LONG)
    assert first.prompt_tokens > 1024
    assert first.prompt_tokens_details is not None and first.prompt_tokens_details.cached_tokens == 0
    assert first_delay == pytest.approx(first.prompt_tokens / 1000, abs=0.001)
    second, second_delay = streamed_chat(client, LONG, "and a frame budget?")
    cached = second.prompt_tokens_details.cached_tokens  # type: ignore[union-attr]
    assert cached >= 1024 and cached % 128 == 0 and cached < second.prompt_tokens
    # A cached token costs what its prefill keeps after the cache's saving (OpenAI's
    # measured rate, gateway/prefill.py): cheaper than reading it, not free.
    kept = 1 - CACHE_SAVING
    assert second_delay == pytest.approx((second.prompt_tokens - cached + cached * kept) / 1000, abs=0.001)
    assert (second.prompt_tokens - cached) / 1000 < second_delay < first_delay / 3


def test_a_short_prompt_is_never_cached(gateway_url: str) -> None:
    client = oai(gateway_url, new_key())
    streamed_chat(client, "Be brief.")
    usage, delay = streamed_chat(client, "Be brief.")
    assert usage.prompt_tokens_details.cached_tokens == 0  # type: ignore[union-attr]
    assert delay == pytest.approx(usage.prompt_tokens / 1000, abs=0.001)


def test_another_key_does_not_read_what_one_key_cached(gateway_url: str) -> None:
    streamed_chat(oai(gateway_url, new_key()), LONG)
    usage, _ = streamed_chat(oai(gateway_url, new_key()), LONG)
    assert usage.prompt_tokens_details.cached_tokens == 0  # type: ignore[union-attr]


def test_a_whole_chat_completion_reports_the_cached_tokens_too(gateway_url: str) -> None:
    client = oai(gateway_url, new_key())
    messages: Any = [{"role": "system", "content": LONG}, {"role": "user", "content": "hi"}]
    client.chat.completions.create(model=MODEL, messages=messages)
    usage = client.chat.completions.create(model=MODEL, messages=messages).usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens % 128 == 0 and usage.prompt_tokens_details.cached_tokens >= 1024


def test_responses_streams_report_the_cached_tokens_in_input_tokens_details(gateway_url: str) -> None:
    client = oai(gateway_url, new_key())

    def completed_usage() -> Any:
        usage = None
        for event in client.responses.create(model=MODEL, instructions=LONG, input="what is a frame?", stream=True):
            if event.type == "response.completed":
                usage = event.response.usage
        assert usage is not None
        return usage

    assert completed_usage().input_tokens_details.cached_tokens == 0
    usage = completed_usage()
    cached = usage.input_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0 and cached <= usage.input_tokens


def claude(url: str, key: str) -> anthropic.Anthropic:
    client = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, default_headers={SIM_HEADER: SIM})
    _clients.append(client)
    return client


def test_messages_cache_only_at_cache_control_and_report_as_anthropic_does(gateway_url: str) -> None:
    client = claude(gateway_url, new_key())
    marked: Any = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
    turns: Any = [{"role": "user", "content": "what is a frame?"}]
    with client.messages.stream(model=MODEL, max_tokens=20, system=marked, messages=turns) as stream:
        first = stream.get_final_message().usage
    assert first.cache_creation_input_tokens and first.cache_creation_input_tokens > 1024
    assert first.cache_read_input_tokens == 0
    second = client.messages.create(model=MODEL, max_tokens=20, system=marked, messages=turns).usage
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    assert second.input_tokens == first.input_tokens  # the tokens after the breakpoint
    unmarked: Any = [{"type": "text", "text": LONG}]
    client.messages.create(model=MODEL, max_tokens=20, system=unmarked, messages=turns)
    plain = client.messages.create(model=MODEL, max_tokens=20, system=unmarked, messages=turns).usage
    assert plain.cache_read_input_tokens == plain.cache_creation_input_tokens == 0
