"""The built-in model's costs end to end without a socket: its settings, the delay it
sleeps before the first event, and the cached tokens each dialect reports."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from gateway.dialects import CHAT, MESSAGES, RESPONSES, Dialect
from gateway.dialects.messages import cache_breakpoints
from gateway.errors import APIError
from gateway.simulator import SimParams, Simulator, check_sim_params, parse_sim_header

SYSTEM = "Rule {}: keep the frame budget under sixteen milliseconds. "
LONG = "".join(SYSTEM.format(i) for i in range(150))  # about 2,000 tokens
FAST = SimParams(ttft_ms=100, prefill_tps=10_000)
#: The share of a cached token's prefill that is left (OpenAI's measured rate: 0.18).
KEPT = 1 - FAST.cache_saving


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def no_sleep(seconds: float) -> None:
    pass


def simulator(clock: Clock | None = None) -> Simulator:
    return Simulator(SimParams(), sleep=no_sleep, clock=clock or Clock())


def chat(system: str = LONG, user: str = "what is a frame?") -> Any:
    body = {"model": "firsttoken-sim", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
    return CHAT.parse(json.dumps(body).encode())


# ---- settings ------------------------------------------------------------------------------


def test_the_header_sets_the_prefill_rate_and_the_cache() -> None:
    p = parse_sim_header("prefill_tps=0,cache=0,cache_min_tokens=2048,cache_step=64,cache_idle_s=5,cache_saving=0.5",
                         SimParams())
    assert (p.prefill_tps, p.cache, p.cache_min_tokens, p.cache_step, p.cache_idle_s) == (0, False, 2048, 64, 5)
    assert p.cache_saving == 0.5
    assert p.cache_rules().step == 64 and not p.cache_rules().enabled


@pytest.mark.parametrize("setting", ["prefill_tps=-1", "cache_step=8", "cache_min_tokens=0", "cache_idle_s=1e9",
                                     "cache=2", "prefill_tps=nan", "cache_saving=1.5",
                                     "cache_saving=-0.1"])
def test_a_setting_out_of_bounds_is_a_400(setting: str) -> None:
    with pytest.raises(APIError) as error:
        parse_sim_header(setting, SimParams())
    assert error.value.status == 400


def test_flags_are_held_to_the_headers_limits() -> None:
    check_sim_params(SimParams())
    with pytest.raises(APIError):
        check_sim_params(SimParams(prefill_tps=-5))
    with pytest.raises(APIError):
        check_sim_params(SimParams(cache_step=1))


# ---- the delay -----------------------------------------------------------------------------


def test_the_first_token_waits_for_the_whole_prompt_then_for_what_the_cache_lacks() -> None:
    sim = simulator()
    first = sim.prepare(chat(), FAST, "k-alice")
    tokens = first.outcome.prompt_tokens
    assert tokens > 1024 and first.outcome.cached_tokens == 0
    assert first.first_token_ms == pytest.approx(100 + tokens / 10)
    second = sim.prepare(chat(), FAST, "k-alice")
    cached = second.outcome.cached_tokens
    assert cached > 1024 and cached % 128 == 0 and tokens - cached < 128
    assert second.first_token_ms == pytest.approx(100 + (tokens - cached + cached * KEPT) / 10)
    assert 100 + (tokens - cached) / 10 < second.first_token_ms < first.first_token_ms


def test_a_cache_that_saves_the_whole_prefill_makes_a_hit_free_as_before() -> None:
    free = SimParams(ttft_ms=100, prefill_tps=10_000, cache_saving=1)
    sim = simulator()
    sim.prepare(chat(), free, "k-alice")
    second = sim.prepare(chat(), free, "k-alice")
    tokens, cached = second.outcome.prompt_tokens, second.outcome.cached_tokens
    assert second.first_token_ms == pytest.approx(100 + (tokens - cached) / 10)


def test_a_new_question_after_the_same_long_system_prompt_is_a_hit() -> None:
    sim = simulator()
    sim.prepare(chat(user="first question"), FAST, "k-alice")
    assert sim.prepare(chat(user="second, longer question"), FAST, "k-alice").outcome.cached_tokens >= 1024


def test_another_key_meets_a_cold_cache() -> None:
    sim = simulator()
    sim.prepare(chat(), FAST, "k-alice")
    assert sim.prepare(chat(), FAST, "k-bob").outcome.cached_tokens == 0


def test_a_short_prompt_is_never_cached() -> None:
    sim = simulator()
    sim.prepare(chat(system="Be brief."), FAST, "k-alice")
    answer = sim.prepare(chat(system="Be brief."), FAST, "k-alice")
    assert answer.outcome.cached_tokens == 0
    assert answer.first_token_ms == pytest.approx(100 + answer.outcome.prompt_tokens / 10)


def test_the_cache_forgets_an_idle_prompt() -> None:
    clock = Clock()
    sim = simulator(clock)
    sim.prepare(chat(), FAST, "k-alice")
    clock.now += 301
    assert sim.prepare(chat(), FAST, "k-alice").outcome.cached_tokens == 0


def test_without_the_cache_or_the_prefill_the_model_is_as_it_was() -> None:
    sim = simulator()
    off = SimParams(ttft_ms=300, prefill_tps=0, cache=False)
    sim.prepare(chat(), off, "k-alice")
    answer = sim.prepare(chat(), off, "k-alice")
    assert answer.outcome.cached_tokens == 0 and answer.first_token_ms == 300


def test_the_stream_sleeps_the_decided_delay_before_its_first_event() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    sim = Simulator(SimParams(), sleep=sleep, clock=Clock())
    req = chat()
    answer = sim.prepare(req, FAST, "k-alice")

    async def first_event() -> bytes:
        stream = sim.stream(CHAT.framing(req, answer.outcome), FAST, answer)
        event = await stream.__anext__()
        await stream.aclose()
        return event

    assert asyncio.run(first_event()).startswith(b"data: ")
    assert slept == [pytest.approx(answer.first_token_ms / 1000)]


# ---- usage, per dialect ------------------------------------------------------------------


def usage_of(dialect: Dialect, req: Any, answer: Any) -> dict[str, Any]:
    return json.loads(dialect.framing(req, answer.outcome).whole("done"))["usage"]


def test_chat_and_responses_report_the_cached_tokens_where_openai_does() -> None:
    sim = simulator()
    req = chat()
    sim.prepare(req, FAST, "k-alice")
    answer = sim.prepare(req, FAST, "k-alice")
    cached = answer.outcome.cached_tokens
    usage = usage_of(CHAT, req, answer)
    assert usage["prompt_tokens_details"]["cached_tokens"] == cached > 0
    assert usage["prompt_tokens"] == answer.outcome.prompt_tokens
    responses_req = RESPONSES.parse(json.dumps({"model": "firsttoken-sim", "instructions": LONG, "input": "hi"}).encode())
    sim.prepare(responses_req, FAST, "k-alice")
    again = sim.prepare(responses_req, FAST, "k-alice")
    details = usage_of(RESPONSES, responses_req, again)["input_tokens_details"]
    assert details["cached_tokens"] == again.outcome.cached_tokens > 0


def messages_request(system: Any, turns: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    body = {"model": "firsttoken-sim", "max_tokens": 50, "system": system,
            "messages": turns or [{"role": "user", "content": "what is a frame?"}], **extra}
    return MESSAGES.parse(json.dumps(body).encode())


MARKED = [{"type": "text", "text": "Be brief."}, {"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]


def test_messages_breakpoints_are_the_marked_blocks() -> None:
    turns = [{"role": "user", "content": [{"type": "text", "text": "a"},
                                          {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]}]
    assert cache_breakpoints(messages_request(MARKED, turns)) == [(0, 1), (1, 1)]
    assert cache_breakpoints(messages_request("plain", turns)) == [(1, 1)]
    assert cache_breakpoints(messages_request("plain")) == []
    assert cache_breakpoints(messages_request("plain", cache_control={"type": "ephemeral"})) == [(1, 0)]


def test_messages_write_at_a_breakpoint_then_read_and_split_the_input_as_anthropic_does() -> None:
    sim = simulator()
    req = messages_request(MARKED)
    first = sim.prepare(req, FAST, "k-alice", cache_breakpoints(req))
    usage = usage_of(MESSAGES, req, first)
    written = usage["cache_creation_input_tokens"]
    assert written > 1024 and usage["cache_read_input_tokens"] == 0
    assert usage["input_tokens"] + written == first.outcome.prompt_tokens
    second = sim.prepare(req, FAST, "k-alice", cache_breakpoints(req))
    usage = usage_of(MESSAGES, req, second)
    assert usage["cache_read_input_tokens"] == written and usage["cache_creation_input_tokens"] == 0
    assert usage["input_tokens"] + written == second.outcome.prompt_tokens
    assert second.first_token_ms == pytest.approx(100 + (second.outcome.prompt_tokens - written + written * KEPT) / 10)


def test_messages_without_cache_control_are_never_cached() -> None:
    sim = simulator()
    req = messages_request([{"type": "text", "text": LONG}])
    sim.prepare(req, FAST, "k-alice", cache_breakpoints(req))
    usage = usage_of(MESSAGES, req, sim.prepare(req, FAST, "k-alice", cache_breakpoints(req)))
    assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0
