"""The built-in reasoning model, `firsttoken-sim-think`, on Chat Completions: a thinking
phase as `delta.reasoning_content` (or inline `<think>` tags), its length by effort, its
tokens in the usage and against the output limit; the plain model refuses the effort."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from gateway.dialects.reasoning import EFFORT_SHARE

SIM = "x-firsttoken-sim"
FAST = "ttft_ms=0,tps=100000,tokens=30"
THINK = "firsttoken-sim-think"
ASK = [{"role": "user", "content": "think about latency"}]


@pytest.fixture
def client(gateway_url: str):
    with httpx.Client(base_url=gateway_url, timeout=30) as c:
        yield c


def chunks(body: str) -> list[dict]:
    lines = [line[len("data: "):] for line in body.split("\n") if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def stream(client: httpx.Client, sim: str = FAST, **body) -> list[dict]:
    r = client.post("/v1/chat/completions", headers={SIM: sim},
                    json={"model": THINK, "messages": ASK, "stream": True,
                          "stream_options": {"include_usage": True}, **body})
    assert r.status_code == 200, r.text
    return chunks(r.text)


def split(events: list[dict]) -> tuple[str, str, list[int]]:
    """(reasoning, content, the order: 0 for a reasoning chunk, 1 for content)."""
    reasoning, content, order = [], [], []
    for c in events:
        for choice in c["choices"]:
            delta = choice["delta"]
            if delta.get("reasoning_content"):
                reasoning.append(delta["reasoning_content"])
                order.append(0)
            if delta.get("content"):
                content.append(delta["content"])
                order.append(1)
    return "".join(reasoning), "".join(content), order


def test_think_model_is_listed(client: httpx.Client) -> None:
    ids = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert THINK in ids and "firsttoken-sim" in ids


def test_thinks_first_then_answers_and_counts_reasoning_as_output(client: httpx.Client) -> None:
    events = stream(client)
    reasoning, content, order = split(events)
    assert reasoning and content
    assert order == sorted(order)  # every reasoning chunk before the first answer chunk
    usage = events[-1]["usage"]
    medium = round(400 * EFFORT_SHARE["medium"])
    assert usage["completion_tokens_details"]["reasoning_tokens"] == medium
    assert usage["completion_tokens"] == medium + 30
    assert [c["choices"][0]["finish_reason"] for c in events if c["choices"]][-1] == "stop"


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_effort_sets_the_length(client: httpx.Client, effort: str) -> None:
    usage = stream(client, reasoning_effort=effort)[-1]["usage"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] == round(400 * EFFORT_SHARE[effort])


def test_effort_none_does_not_think(client: httpx.Client) -> None:
    events = stream(client, reasoning_effort="none")
    reasoning, content, _ = split(events)
    assert reasoning == "" and content
    assert events[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0


def test_sim_fields_think_tokens_and_think_off(client: httpx.Client) -> None:
    assert stream(client, FAST + ",think_tokens=7")[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 7
    reasoning, _, _ = split(stream(client, FAST + ",think=0"))
    assert reasoning == ""
    # think=1 makes the plain model think too (it still refuses reasoning_effort).
    r = client.post("/v1/chat/completions", headers={SIM: FAST + ",think=1,think_tokens=5"},
                    json={"model": "firsttoken-sim", "messages": ASK, "stream": True})
    assert split(chunks(r.text))[0]


def test_cut_while_thinking_is_length_with_no_content(client: httpx.Client) -> None:
    events = stream(client, max_completion_tokens=50)
    reasoning, content, _ = split(events)
    assert reasoning and content == ""
    assert [c["choices"][0]["finish_reason"] for c in events if c["choices"]][-1] == "length"
    usage = events[-1]["usage"]
    assert usage["completion_tokens"] == usage["completion_tokens_details"]["reasoning_tokens"] == 50


def test_think_tags_inline(client: httpx.Client) -> None:
    events = stream(client, FAST + ",think_tags=1,think_tokens=12")
    reasoning, content, _ = split(events)
    assert reasoning == ""
    assert content.startswith("<think>") and "</think>\n\n" in content
    inner, answer = content[len("<think>"):].split("</think>\n\n")
    assert inner.strip() and answer.strip()


def test_echo_and_stamp_with_thinking(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: FAST + ",echo=1,stamp=1,think_tokens=6"},
                    json={"model": THINK, "messages": [{"role": "user", "content": "say exactly this"}],
                          "stream": True})
    events = chunks(r.text)
    reasoning, content, _ = split(events)
    assert content == "say exactly this" and reasoning
    assert all("x_firsttoken_sent_ms" in c for c in events)


def test_whole_answer_carries_reasoning_content(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: FAST + ",think_tokens=9"},
                    json={"model": THINK, "messages": ASK})
    message = r.json()["choices"][0]["message"]
    assert message["reasoning_content"] and message["content"]
    assert r.json()["usage"]["completion_tokens_details"]["reasoning_tokens"] == 9


def test_same_prompt_same_thinking(client: httpx.Client) -> None:
    assert split(stream(client))[0] == split(stream(client))[0]


def test_plain_model_refuses_reasoning_effort_as_openai_does(gateway_url: str) -> None:
    client = openai.OpenAI(base_url=gateway_url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="firsttoken-sim", messages=ASK, reasoning_effort="low")
    error = caught.value.body
    assert error["param"] == "reasoning_effort" and error["code"] == "unsupported_parameter"


def test_bad_effort_is_400(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", json={"model": THINK, "messages": ASK, "reasoning_effort": "lots"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "reasoning_effort"
    r = client.post("/v1/chat/completions", json={"model": THINK, "messages": ASK, "reasoning_effort": 3})
    assert r.status_code == 400


def test_openai_client_reads_reasoning_content(gateway_url: str) -> None:
    client = openai.OpenAI(base_url=gateway_url + "/v1", api_key="x", max_retries=0,
                           default_headers={SIM: FAST + ",think_tokens=8"})
    reasoning, content = [], []
    for chunk in client.chat.completions.create(model=THINK, messages=ASK, stream=True, reasoning_effort="high"):
        for choice in chunk.choices:
            extra = getattr(choice.delta, "reasoning_content", None)
            if extra:
                reasoning.append(extra)
            if choice.delta.content:
                content.append(choice.delta.content)
    assert reasoning and content
