"""Nesting is bounded once, where the body is parsed (`gateway.validation.MAX_DEPTH`):
a body deeper than the bound is a 400 in every API, whichever field nests, and one
at the bound or under it is never a 500, however deep later steps take it.

Each body carries a prompt of at least 1,024 tokens, so the prefix cache serialises
its parts (the step that overflowed at about 984 levels: gateway/prefill.py)."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from gateway import GatewayConfig, create_app
from gateway.errors import APIError
from gateway.simulator import SimParams
from gateway.validation import MAX_DEPTH, decode_body

app = create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=1e6, tokens=5), precompressed=None))
client = TestClient(app, raise_server_exceptions=False, base_url="http://localhost",
                    headers={"content-type": "application/json"})

LONG = "a word " * 1_100  # well over 1,024 tokens in every encoding
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

Deep = Any
#: For each API, each place a client may nest: (API path, field, body with `deep` there).
FIELDS: list[tuple[str, str, Callable[[Deep], dict[str, Any]]]] = [
    ("/v1/chat/completions", "content part", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "user", "content": [{"type": "text", "text": LONG}, d]}]}),
    ("/v1/chat/completions", "a part's field", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "user", "content": [{"type": "text", "text": LONG, "extra": d}]}]}),
    ("/v1/chat/completions", "image_url", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "user", "content": [
            {"type": "text", "text": LONG}, {"type": "image_url", "image_url": d}]}]}),
    ("/v1/chat/completions", "image_url.url", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "user", "content": [
            {"type": "text", "text": LONG}, {"type": "image_url", "image_url": {"url": d}}]}]}),
    ("/v1/chat/completions", "message content", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "system", "content": LONG}, {"role": "user", "content": d}]}),
    ("/v1/chat/completions", "tools parameters", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "user", "content": LONG}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": d}}]}),
    ("/v1/chat/completions", "response_format schema", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "user", "content": LONG}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": d}}}),
    ("/v1/chat/completions", "metadata", lambda d: {
        "model": "gpt-4o", "messages": [{"role": "user", "content": LONG}], "metadata": d}),
    ("/v1/responses", "input item", lambda d: {
        "model": "gpt-4o", "input": [{"role": "user", "content": LONG}, d]}),
    ("/v1/responses", "input content part", lambda d: {
        "model": "gpt-4o", "input": [{"role": "user", "content": [{"type": "input_text", "text": LONG}, d]}]}),
    ("/v1/responses", "input_image image_url", lambda d: {
        "model": "gpt-4o", "input": [{"role": "user", "content": [
            {"type": "input_text", "text": LONG}, {"type": "input_image", "image_url": d}]}]}),
    ("/v1/responses", "instructions", lambda d: {
        "model": "gpt-4o", "instructions": d, "input": LONG}),
    ("/v1/responses", "tools parameters", lambda d: {
        "model": "gpt-4o", "input": LONG, "tools": [{"type": "function", "name": "f", "parameters": d}]}),
    ("/v1/responses", "text format schema", lambda d: {
        "model": "gpt-4o", "input": LONG, "text": {"format": {"type": "json_schema", "name": "s", "schema": d}}}),
    ("/v1/messages", "system block", lambda d: {
        "model": "claude-sonnet-4-5", "max_tokens": 16, "system": [{"type": "text", "text": LONG}, d],
        "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/messages", "message block", lambda d: {
        "model": "claude-sonnet-4-5", "max_tokens": 16,
        "messages": [{"role": "user", "content": [{"type": "text", "text": LONG}, d]}]}),
    ("/v1/messages", "image source data", lambda d: {
        "model": "claude-sonnet-4-5", "max_tokens": 16, "messages": [{"role": "user", "content": [
            {"type": "text", "text": LONG},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}}]}]}),
    ("/v1/messages", "tool input_schema", lambda d: {
        "model": "claude-sonnet-4-5", "max_tokens": 16, "messages": [{"role": "user", "content": LONG}],
        "tools": [{"name": "f", "input_schema": d}]}),
]


_OPEN = {"array": "[", "object": '{"n":', "part": '{"type":"text","text":"x","n":', "data": '{"type":"x_data","x":'}


def nested(levels: int, shape: str, leaf: Any) -> str:
    """The JSON text of `leaf` inside `levels` arrays, objects, text parts, parts of a
    type the prefix cache serialises ("data"), or arrays and objects by turns
    ("mixed"): built as text, since `json.dumps` itself would overflow at the depths
    walked here."""
    opens = [_OPEN["array" if i % 2 else "object"] if shape == "mixed" else _OPEN[shape] for i in range(levels)]
    return "".join(opens) + json.dumps(leaf) + "".join("]" if o == "[" else "}" for o in reversed(opens))


def depth(value: Any) -> int:
    """The levels of arrays and objects in `value`, level by level (the oracle: apart
    from the gateway's depth-first walk)."""
    levels, row = 0, [value]
    while row := [v for v in row if isinstance(v, (dict, list))]:
        levels += 1
        row = [item for v in row for item in (v.values() if isinstance(v, dict) else v)]
    return levels


_MARK = "\0deep"


def body_with(make: Callable[[Deep], dict[str, Any]], deep: str, stream: bool) -> str:
    """`make`'s body with the JSON text `deep` in its field, streamed or not."""
    return json.dumps({**make(_MARK), "stream": stream}).replace(json.dumps(_MARK), deep)


def slot_depth(make: Callable[[Deep], dict[str, Any]]) -> int:
    """The levels around the field: its value's first level is one more."""
    text = json.dumps(make(_MARK))
    before = text[:text.index(json.dumps(_MARK))]  # no string in these bodies holds a bracket
    return before.count("[") + before.count("{") - before.count("]") - before.count("}")


def post(path: str, body: str) -> Any:
    return client.post(path, content=body.encode())


def error_type(answer: Any) -> str:
    return answer.json()["error"]["type"]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(FIELDS),
    # Around the bound; well under it; where the parser accepted and a later step overflowed.
    offset=st.integers(-4, 4) | st.integers(-200, -100) | st.integers(975 - MAX_DEPTH, 992 - MAX_DEPTH),
    shape=st.sampled_from(["array", "object", "part", "data", "mixed"]),
    leaf=st.sampled_from(["x", PNG, {"type": "image_url", "image_url": {"url": PNG}}, {"type": "text", "text": "y"}]),
    stream=st.booleans(),
)
def test_deeper_than_the_bound_is_400_and_never_500_below(
        field: tuple[str, str, Callable[[Deep], dict[str, Any]]], offset: int, shape: str, leaf: Any, stream: bool) -> None:
    path, name, make = field
    # As many levels in the field as put the whole body at the bound + offset.
    levels = max(MAX_DEPTH + offset - slot_depth(make) - depth(leaf), 0)
    total = max(depth(make("x")), slot_depth(make) + levels + depth(leaf))
    answer = post(path, body_with(make, nested(levels, shape, leaf), stream))
    assert answer.status_code != 500, (name, total, answer.text[:300])
    if total > MAX_DEPTH:
        assert answer.status_code == 400 and error_type(answer) == "invalid_request_error", (name, total, answer.text[:300])
        assert "nested too deeply" in answer.json()["error"]["message"]
    else:
        assert answer.status_code in (200, 400), (name, total, answer.text[:300])


@pytest.mark.parametrize("path", sorted({path for path, _, _ in FIELDS}))
def test_the_depth_that_used_to_fail_is_400_in_every_api(path: str) -> None:
    """About 984 levels with a content part in a 1,024-token prompt: the parser took
    them, and the prefix cache's `json.dumps` overflowed (a 500, before the bound)."""
    for _, name, make in (f for f in FIELDS if f[0] == path):
        for shape in ("data", "object", "array"):
            for total in range(975, 993):
                answer = post(path, body_with(make, nested(total - slot_depth(make), shape, "x"), False))
                assert answer.status_code != 500, (name, shape, total, answer.text)
                assert answer.status_code == 400 and "nested too deeply" in answer.text, (name, shape, total, answer.text)


def test_at_the_bound_every_api_answers() -> None:
    for path, name, make in FIELDS:
        if name not in ("content part", "input content part", "message block"):
            continue
        text = body_with(make, nested(MAX_DEPTH - slot_depth(make), "part", "x"), True)
        assert depth(json.loads(text)) == MAX_DEPTH
        answer = post(path, text)
        assert answer.status_code == 200, (name, answer.text[:300])


@given(st.recursive(st.none() | st.integers(), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3)),
       st.integers(1, 12), st.sampled_from(["array", "object", "mixed"]))
def test_the_bound_counts_levels_as_the_oracle_does(value: Any, wrap: int, shape: str) -> None:
    """The gateway's walk agrees with the oracle at the edge of the bound."""
    raw = nested(MAX_DEPTH - wrap, shape, value).encode()
    body = json.loads(raw)
    if depth(body) > MAX_DEPTH:
        with pytest.raises(APIError, match="nested too deeply"):
            decode_body(raw)
    else:
        assert decode_body(raw) == body
