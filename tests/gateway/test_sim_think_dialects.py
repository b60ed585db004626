"""`firsttoken-sim-think` on Responses and Messages, read by the official `openai`
(`responses.stream`) and `anthropic` (`messages.stream`) clients as they read the real
APIs: the reasoning item and its summary events, hidden thinking, encrypted content and
thinking signatures checked when they come back, reasoning in the usage, and an answer
cut while thinking."""

from __future__ import annotations

from typing import Any, Iterator

import anthropic
import openai
import pytest

SIM = "x-firsttoken-sim"
FAST = "ttft_ms=0,tps=100000,tokens=20,think_tokens=12,summary_ms=0"
THINK = "firsttoken-sim-think"
USER = "why do frames drop?"

_clients: list[Any] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


def oai(url: str, sim: str = FAST) -> openai.OpenAI:
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, default_headers={SIM: sim})
    _clients.append(client)
    return client


def claude(url: str, sim: str = FAST) -> anthropic.Anthropic:
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0, default_headers={SIM: sim})
    _clients.append(client)
    return client


# ---- Responses ----------------------------------------------------------------------------------


def test_responses_stream_reads_the_summary_then_the_answer(gateway_url: str) -> None:
    client = oai(gateway_url)
    types, summary, text = [], [], []
    with client.responses.stream(model=THINK, input=USER, reasoning={"effort": "low", "summary": "auto"},
                                 include=["reasoning.encrypted_content"]) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "response.reasoning_summary_text.delta":
                summary.append(event.delta)
            elif event.type == "response.output_text.delta":
                text.append(event.delta)
        final = stream.get_final_response()
    order = ["response.output_item.added", "response.reasoning_summary_part.added",
             "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
             "response.reasoning_summary_part.done", "response.output_item.done", "response.output_text.delta"]
    assert [types.index(t) for t in order] == sorted(types.index(t) for t in order)
    reasoning, message = final.output
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "".join(summary)
    assert reasoning.encrypted_content
    assert final.output_text == "".join(text) and text
    assert final.usage.output_tokens_details.reasoning_tokens == 12
    assert final.usage.output_tokens == 12 + 20

    # The item goes back as it came, and is taken; altered, it is OpenAI's 400.
    item = reasoning.model_dump(exclude_none=True)
    turn = [{"role": "user", "content": USER}, item, {"role": "assistant", "content": final.output_text},
            {"role": "user", "content": "and then?"}]
    assert client.responses.create(model=THINK, input=turn).output_text  # type: ignore[arg-type]
    item["encrypted_content"] = item["encrypted_content"][:-6] + "AAAAA="
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=THINK, input=turn)  # type: ignore[arg-type]
    assert caught.value.body["code"] == "invalid_encrypted_content"
    del item["encrypted_content"]
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=THINK, input=turn)  # type: ignore[arg-type]


def test_responses_without_summary_think_silently(gateway_url: str) -> None:
    client = oai(gateway_url)
    types = []
    with client.responses.stream(model=THINK, input=USER) as stream:
        for event in stream:
            types.append(event.type)
        final = stream.get_final_response()
    assert not [t for t in types if "summary" in t]
    assert final.output[0].type == "reasoning" and final.output[0].summary == []
    assert final.output[0].encrypted_content is None
    assert final.usage.output_tokens_details.reasoning_tokens == 12 and final.output_text


def test_responses_cut_while_thinking_is_incomplete_with_no_text(gateway_url: str) -> None:
    client = oai(gateway_url, FAST.replace("think_tokens=12", "think_tokens=100"))
    with client.responses.stream(model=THINK, input=USER, max_output_tokens=40,
                                 reasoning={"summary": "auto"}) as stream:
        events = list(stream)
    # The client's helper waits for `response.completed` only (as with the real API), so
    # the incomplete response is read from its own event.
    types = [event.type for event in events]
    final = events[-1].response  # type: ignore[union-attr]
    assert types[-1] == "response.incomplete" and "response.output_text.delta" not in types
    assert final.incomplete_details.reason == "max_output_tokens"
    assert [item.type for item in final.output] == ["reasoning"] and final.output_text == ""
    assert final.usage.output_tokens == final.usage.output_tokens_details.reasoning_tokens == 40


def test_responses_summary_delay_is_charged_before_the_answer(gateway_url: str) -> None:
    # The delay is decided, not timed: summary_ms sets it, and a 0 keeps tests fast.
    client = oai(gateway_url, FAST.replace("summary_ms=0", "summary_ms=1"))
    final = client.responses.create(model=THINK, input=USER, reasoning={"summary": "auto"})
    assert final.output[0].summary and final.output_text


def test_plain_model_refuses_reasoning_on_responses(gateway_url: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        oai(gateway_url).responses.create(model="firsttoken-sim", input=USER, reasoning={"effort": "low"})
    assert caught.value.body["param"] == "reasoning.effort"
    assert caught.value.body["code"] == "unsupported_parameter"


# ---- Messages -----------------------------------------------------------------------------------


def test_messages_stream_reads_thinking_and_its_signature(gateway_url: str) -> None:
    client = claude(gateway_url)
    kinds, thinking = [], []
    with client.messages.stream(model=THINK, max_tokens=4096, messages=[{"role": "user", "content": USER}],
                                thinking={"type": "enabled", "budget_tokens": 2048}) as stream:
        for event in stream:
            if event.type == "content_block_delta":
                kinds.append(event.delta.type)
            if event.type == "thinking":
                thinking.append(event.thinking)
        final = stream.get_final_message()
    # The signature comes once, just before the thinking block stops, before any text.
    assert kinds.count("signature_delta") == 1
    assert kinds.index("signature_delta") == kinds.count("thinking_delta")
    block, text = final.content
    assert block.type == "thinking" and block.thinking == "".join(thinking) and block.signature
    assert text.type == "text" and text.text
    assert final.usage.output_tokens == 12 + 20 and final.stop_reason == "end_turn"

    history = [{"role": "user", "content": USER},
               {"role": "assistant", "content": [block.model_dump(), {"type": "text", "text": text.text}]},
               {"role": "user", "content": "and then?"}]
    second = client.messages.create(model=THINK, max_tokens=4096, messages=history)  # type: ignore[arg-type]
    assert second.content[-1].text
    # Without the signature, and with an altered text: Anthropic's 400s.
    unsigned = {"type": "thinking", "thinking": block.thinking}
    history[1]["content"] = [unsigned, {"type": "text", "text": text.text}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model=THINK, max_tokens=4096, messages=history)  # type: ignore[arg-type]
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert "signature" in caught.value.body["error"]["message"]
    history[1]["content"] = [{**unsigned, "thinking": block.thinking + ".", "signature": block.signature},
                             {"type": "text", "text": text.text}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model=THINK, max_tokens=4096, messages=history)  # type: ignore[arg-type]
    assert caught.value.body["error"]["message"] == "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_messages_adaptive_omitted_sends_empty_thinking_with_a_signature(gateway_url: str) -> None:
    client = claude(gateway_url)
    with client.messages.stream(model=THINK, max_tokens=1000, messages=[{"role": "user", "content": USER}],
                                thinking={"type": "adaptive", "display": "omitted"},  # type: ignore[typeddict-item]
                                extra_body={"output_config": {"effort": "low"}}) as stream:
        kinds = [event.delta.type for event in stream if event.type == "content_block_delta"]
        final = stream.get_final_message()
    assert "thinking_delta" not in kinds and "signature_delta" in kinds
    assert final.content[0].type == "thinking" and final.content[0].thinking == "" and final.content[0].signature
    history = [{"role": "user", "content": USER},
               {"role": "assistant", "content": [final.content[0].model_dump(), {"type": "text", "text": "ok"}]},
               {"role": "user", "content": "more"}]
    assert client.messages.create(model=THINK, max_tokens=1000, messages=history).content  # type: ignore[arg-type]


def test_messages_cut_while_thinking_is_max_tokens_with_no_text(gateway_url: str) -> None:
    client = claude(gateway_url, FAST.replace("think_tokens=12", "think_tokens=100"))
    with client.messages.stream(model=THINK, max_tokens=30, messages=[{"role": "user", "content": USER}]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "max_tokens"
    assert [b.type for b in final.content] == ["thinking"] and final.content[0].signature
    assert final.usage.output_tokens == 30


@pytest.mark.parametrize("thinking, max_tokens, problem", [
    ({"type": "enabled", "budget_tokens": 1000}, 4096, "greater than or equal to 1024"),
    ({"type": "enabled", "budget_tokens": 2048}, 2048, "`max_tokens` must be greater than `thinking.budget_tokens`"),
    ({"type": "enabled"}, 4096, "Field required"),
    ({"type": "sometimes"}, 4096, "does not match"),
])
def test_messages_bad_thinking_is_anthropics_400(gateway_url: str, thinking: dict, max_tokens: int, problem: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude(gateway_url).messages.create(model=THINK, max_tokens=max_tokens, thinking=thinking,  # type: ignore[arg-type]
                                            messages=[{"role": "user", "content": USER}])
    assert problem in caught.value.body["error"]["message"]


def test_plain_model_keeps_refusing_thinking(gateway_url: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude(gateway_url).messages.create(model="firsttoken-sim", max_tokens=4096,
                                            thinking={"type": "enabled", "budget_tokens": 2048},
                                            messages=[{"role": "user", "content": USER}])
    assert caught.value.body["error"]["message"].startswith("thinking:")


def test_messages_disabled_does_not_think(gateway_url: str) -> None:
    final = claude(gateway_url).messages.create(model=THINK, max_tokens=100, thinking={"type": "disabled"},
                                                messages=[{"role": "user", "content": USER}])
    assert [b.type for b in final.content] == ["text"]


# ---- pacing, without a socket ----------------------------------------------------------------


def _paced(dialect_name: str, body: dict[str, Any], params: Any) -> tuple[list[float], list[bytes]]:
    """The sleeps a stream asks for and the bytes it yields, on a clock that moves only
    when the stream sleeps."""
    import asyncio
    import json

    from gateway.dialects import MESSAGES, RESPONSES
    from gateway.simulator import Simulator

    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    sim = Simulator(params, sleep=sleep, clock=lambda: now[0])
    dialect = {"responses": RESPONSES, "messages": MESSAGES}[dialect_name]
    req = dialect.parse(json.dumps(body).encode())
    answer = sim.prepare(req, params, "k")

    async def run() -> list[bytes]:
        return [chunk async for chunk in sim.stream(dialect.framing(req, answer.outcome), params, answer)]

    return slept, asyncio.run(run())


def test_a_summary_costs_summary_ms_before_the_answer_and_hidden_thinking_still_takes_time() -> None:
    from gateway.simulator import SimParams

    params = SimParams(ttft_ms=0, prefill_tps=0, tps=10, tokens=5, think_tokens=10, summary_ms=906)
    body = {"model": THINK, "input": USER, "stream": True, "reasoning": {"summary": "auto"}}
    slept, chunks = _paced("responses", body, params)
    assert pytest.approx(906 / 1000) in slept
    assert sum(slept) == pytest.approx(906 / 1000 + 14 / 10)  # 15 chunks at 10/s: the last is due at 1.4 s
    slept, chunks = _paced("responses", {**body, "reasoning": {"effort": "medium"}}, params)
    assert pytest.approx(906 / 1000) not in slept
    assert sum(slept) == pytest.approx(14 / 10)  # the hidden thinking's time passes all the same
    assert b"reasoning_summary" not in b"".join(chunks)
    body = {"model": THINK, "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": USER}]}
    slept, _ = _paced("messages", body, params)
    assert pytest.approx(906 / 1000) in slept


# ---- every length, every limit, every API (no socket) ---------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _events(raw: bytes) -> list[dict[str, Any]]:
    import json

    from firsttoken.stream.sse import SSEDecoder

    return [json.loads(e.data) for e in SSEDecoder().feed(raw) if e.data and e.data != "[DONE]"]


@settings(max_examples=60, deadline=None)
@given(think=st.integers(0, 30), tokens=st.integers(1, 20), limit=st.one_of(st.none(), st.integers(16, 60)),
       summary=st.booleans(), chunk=st.integers(1, 4))
def test_each_api_frames_any_thinking_and_any_limit_consistently(think: int, tokens: int, limit: int | None,
                                                                 summary: bool, chunk: int) -> None:
    from gateway.simulator import SimParams

    params = SimParams(ttft_ms=0, prefill_tps=0, tps=1e6, tokens=tokens, think_tokens=think, chunk=chunk, summary_ms=0)
    spent_thinking = min(think, limit) if limit is not None else think
    answer_room = tokens if limit is None else max(0, min(tokens, limit - think))
    cut = limit is not None and limit < think + tokens

    body: dict[str, Any] = {"model": THINK, "input": USER, "stream": True, "include": ["reasoning.encrypted_content"]}
    if summary:
        body["reasoning"] = {"summary": "auto"}
    if limit is not None:
        body["max_output_tokens"] = limit
    _, chunks = _paced("responses", body, params)
    events = _events(b"".join(chunks))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    final = events[-1]["response"]
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == spent_thinking
    assert final["usage"]["output_tokens"] == spent_thinking + answer_room
    assert final["status"] == ("incomplete" if cut else "completed")
    kinds = [item["type"] for item in final["output"]]
    assert kinds == (["reasoning"] if spent_thinking else []) + ([] if spent_thinking and limit is not None
                                                                   and limit <= think else ["message"])
    if spent_thinking:
        assert bool(final["output"][0]["summary"]) == summary and final["output"][0]["encrypted_content"]

    body = {"model": THINK, "max_tokens": limit or 4096, "stream": True, "messages": [{"role": "user", "content": USER}]}
    _, chunks = _paced("messages", body, params)
    events = _events(b"".join(chunks))
    starts = [e["index"] for e in events if e["type"] == "content_block_start"]
    stops = [e["index"] for e in events if e["type"] == "content_block_stop"]
    assert starts == stops == list(range(len(starts)))  # blocks open and close in order, once each
    signatures = [i for i, e in enumerate(events) if e["type"] == "content_block_delta"
                  and e["delta"]["type"] == "signature_delta"]
    assert len(signatures) == (1 if spent_thinking else 0)
    if signatures:
        assert events[signatures[0] + 1] == {"type": "content_block_stop", "index": 0}
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["usage"]["output_tokens"] == spent_thinking + answer_room
    assert delta["delta"]["stop_reason"] == ("max_tokens" if cut else "end_turn")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40), forged=st.text(max_size=80))
def test_seals_verify_only_what_they_sealed_and_never_raise(text: str, forged: str) -> None:
    from gateway.dialects.reasoning import Signer, item_seal_valid, seal_item, signature_valid

    signer = Signer()
    signer.update(text)
    signature = signer.signature()
    assert signature_valid(text, signature)
    assert not signature_valid(text + "x", signature)
    assert not signature_valid(text, forged)
    token = seal_item("rs_1", text, 3)
    assert item_seal_valid({"id": "rs_1", "encrypted_content": token})
    assert not item_seal_valid({"id": "rs_2", "encrypted_content": token})
    assert not item_seal_valid({"id": "rs_1", "encrypted_content": forged})
    assert not item_seal_valid({"id": "rs_1", "encrypted_content": "ftk1." + forged + "." + forged})


@pytest.mark.parametrize("summary", [True, False])
def test_the_first_answer_header_is_when_the_stream_sends_the_first_answer_text(summary: bool) -> None:
    import asyncio
    import json

    from gateway.dialects import RESPONSES
    from gateway.simulator import SimParams, Simulator

    now = [0.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    params = SimParams(ttft_ms=200, prefill_tps=0, tps=50, tokens=5, think_tokens=7, chunk=2, summary_ms=906)
    sim = Simulator(params, sleep=sleep, clock=lambda: now[0])
    body = {"model": THINK, "input": USER, "stream": True, **({"reasoning": {"summary": "auto"}} if summary else {})}
    req = RESPONSES.parse(json.dumps(body).encode())
    answer = sim.prepare(req, params, "k")
    framing = RESPONSES.framing(req, answer.outcome)

    async def first_answer_at() -> float:
        async for chunk in sim.stream(framing, params, answer):
            if b"response.output_text.delta" in chunk:
                return now[0]
        raise AssertionError("no answer text")

    expected = sim.first_answer_ms(answer, params, framing.summary)
    assert expected == pytest.approx(200 + 4 * 2 / 50 * 1000 + (906 if summary else 0))
    assert asyncio.run(first_answer_at()) * 1000 == pytest.approx(expected)


def test_the_gateway_says_when_the_first_answer_token_is_due(gateway_url: str) -> None:
    import httpx

    r = httpx.post(gateway_url + "/v1/chat/completions", timeout=30,
                   headers={SIM: "ttft_ms=0,prefill_tps=0,tps=100000,tokens=2,think_tokens=100"},
                   json={"model": THINK, "messages": [{"role": "user", "content": USER}]})
    assert float(r.headers["x-firsttoken-sim-first-answer-ms"]) == pytest.approx(1.0)
    assert float(r.headers["x-firsttoken-sim-first-token-ms"]) == 0
