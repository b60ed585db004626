"""ResponsesStream: OpenAI Responses API streams, as the API and compatible servers send
them, decoded into the same updates and answer as a chat completion."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firsttoken.errors import InvalidChunk, ResponseTooLarge, TruncatedStream, UpstreamError
from firsttoken.stream.responses import MAX_PARTS, ResponsesStream
from firsttoken.stream.types import (
    Completion,
    ContentDelta,
    FinishReason,
    ReasoningDelta,
    RefusalDelta,
    RoleDelta,
    StreamDone,
    ToolCallDelta,
    Update,
    UsageUpdate,
)
from tests.unit import stream_feed
from tests.unit.stream_feed import typed_sse

USAGE = {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 8},
    "output_tokens": 87,
    "output_tokens_details": {"reasoning_tokens": 64},
    "total_tokens": 123,
}
RESPONSE = {
    "id": "resp_67ccd2bed1ec8190",
    "object": "response",
    "created_at": 1741476542,
    "model": "gpt-5-2025-08-07",
    "status": "in_progress",
    "output": [],
    "usage": None,
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "instructions": "You are terse.",
}


def message(*deltas: str) -> tuple:
    return ("message", "output_text", deltas)


def refusal(*deltas: str) -> tuple:
    return ("message", "refusal", deltas)


def reasoning(*parts: tuple[str, ...]) -> tuple:
    return ("reasoning", parts)


def call(call_id: str, name: str, *deltas: str) -> tuple:
    return ("function_call", call_id, name, deltas)


def events(*items: tuple, end: str = "completed", usage: dict | None = USAGE, incomplete: str | None = None) -> list[dict]:
    """The events the API sends for output `items`, in order, with their `.done` events
    and a closing `response.<end>` whose response holds the whole output."""
    seq = itertools.count()
    out: list[dict] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append({"type": kind, "sequence_number": next(seq), **fields})

    emit("response.created", response=RESPONSE)
    emit("response.in_progress", response=RESPONSE)
    output = []
    for i, item in enumerate(items):
        where = {"output_index": i}
        if item[0] == "message":
            _, part_type, deltas = item
            item_id = f"msg_{i}"
            text = "".join(deltas)
            field = "text" if part_type == "output_text" else "refusal"
            part = {"type": part_type, field: text, **({"annotations": []} if part_type == "output_text" else {})}
            whole = {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
            emit("response.output_item.added", item={**whole, "status": "in_progress", "content": []}, **where)
            at = {"item_id": item_id, **where, "content_index": 0}
            emit("response.content_part.added", part={**part, field: ""}, **at)
            name = "response.output_text" if part_type == "output_text" else "response.refusal"
            extra = {"logprobs": []} if part_type == "output_text" else {}
            for d in deltas:
                emit(f"{name}.delta", delta=d, **at, **extra)
            emit(f"{name}.done", **{field: text}, **at, **extra)
            emit("response.content_part.done", part=part, **at)
        elif item[0] == "reasoning":
            _, parts = item
            item_id = f"rs_{i}"
            summary = [{"type": "summary_text", "text": "".join(p)} for p in parts]
            whole = {"id": item_id, "type": "reasoning", "summary": summary}
            emit("response.output_item.added", item={**whole, "summary": []}, **where)
            for s, deltas in enumerate(parts):
                at = {"item_id": item_id, **where, "summary_index": s}
                emit("response.reasoning_summary_part.added", part={"type": "summary_text", "text": ""}, **at)
                for d in deltas:
                    emit("response.reasoning_summary_text.delta", delta=d, **at)
                emit("response.reasoning_summary_text.done", text="".join(deltas), **at)
                emit("response.reasoning_summary_part.done", part=summary[s], **at)
        else:
            _, call_id, fn, deltas = item
            item_id = f"fc_{i}"
            whole = {"id": item_id, "type": "function_call", "status": "completed", "call_id": call_id,
                     "name": fn, "arguments": "".join(deltas)}
            emit("response.output_item.added", item={**whole, "status": "in_progress", "arguments": ""}, **where)
            for d in deltas:
                emit("response.function_call_arguments.delta", delta=d, item_id=item_id, **where)
            emit("response.function_call_arguments.done", arguments=whole["arguments"], item_id=item_id, **where)
        emit("response.output_item.done", item=whole, **where)
        output.append(whole)
    status = {"completed": "completed", "incomplete": "incomplete", "failed": "failed"}[end]
    final = {**RESPONSE, "status": status, "output": output, "usage": usage}
    if incomplete is not None:
        final["incomplete_details"] = {"reason": incomplete}
    emit(f"response.{end}", response=final)
    return out


def assemble(body: bytes, **kw: Any) -> tuple[list[Update], Completion]:
    return stream_feed.assemble(ResponsesStream, body, **kw)


HELLO = typed_sse(*events(message("Hel", "lo, ", "wörld 🙂\u2028")))


def test_a_plain_answer() -> None:
    updates, completion = assemble(HELLO)
    assert updates == [
        RoleDelta("assistant"),
        ContentDelta("Hel"),
        ContentDelta("lo, "),
        ContentDelta("wörld 🙂\u2028"),
        FinishReason("stop"),
        UsageUpdate(36, 87, 123, USAGE),
        StreamDone(),
    ]
    assert completion.content == "Hello, wörld 🙂\u2028"
    assert (completion.id, completion.model, completion.finish_reason) == (RESPONSE["id"], RESPONSE["model"], "stop")
    assert json.loads(json.dumps(completion.to_dict()))["content"] == completion.content


def test_usage_in_chat_completions_names_with_the_response_s_own_kept() -> None:
    usage = assemble(HELLO)[1].usage
    assert usage is not None
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (36, 87, 123)
    assert usage["prompt_tokens_details"] == {"cached_tokens": 8}
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 64}
    assert usage["input_tokens"] == 36 and usage["input_tokens_details"] == USAGE["input_tokens_details"]


def test_without_event_lines_and_with_crlf() -> None:
    body = typed_sse(*events(message("a", "b")), named=False).replace(b"\n", b"\r\n")
    assert assemble(body)[1].content == "ab"


def test_reasoning_summary_parts_are_paragraphs() -> None:
    body = typed_sse(*events(reasoning(("**Plan**",), ("Add ", "them.")), message("4")))
    updates, completion = assemble(body)
    assert updates[:3] == [ReasoningDelta("**Plan**"), ReasoningDelta("\n\nAdd "), ReasoningDelta("them.")]
    assert (completion.reasoning, completion.content) == ("**Plan**\n\nAdd them.", "4")


def test_raw_reasoning_text() -> None:
    body = typed_sse(
        {"type": "response.reasoning_text.delta", "item_id": "rs", "output_index": 0, "content_index": 0, "delta": "hm"},
        {"type": "response.reasoning_text.delta", "item_id": "rs", "output_index": 0, "content_index": 0, "delta": "m"},
        {"type": "response.reasoning_text.done", "item_id": "rs", "output_index": 0, "content_index": 0, "text": "hmm"},
        *events(message("ok"))[2:],
    )
    assert assemble(body)[1].reasoning == "hmm"


def test_function_calls_take_call_id_and_name_from_their_item() -> None:
    body = typed_sse(*events(
        message("Checking."),
        call("call_a", "get_weather", '{"city":', ' "Paris"}'),
        call("call_b", "get_time", '{"tz": "CET"}'),
    ))
    updates, completion = assemble(body)
    assert ToolCallDelta(0, "call_a", "get_weather", "") in updates
    assert ToolCallDelta(1, None, None, '{"tz": "CET"}') in updates
    assert completion.finish_reason == "tool_calls" and completion.content == "Checking."
    assert completion.tool_calls == [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": '{"tz": "CET"}'}},
    ]


def test_refusal() -> None:
    updates, completion = assemble(typed_sse(*events(refusal("I can't ", "help."))))
    assert RefusalDelta("I can't ") in updates
    assert (completion.refusal, completion.content) == ("I can't help.", "")


@pytest.mark.parametrize(
    "reason, finish",
    [("max_output_tokens", "length"), ("content_filter", "content_filter"), ("max_messages", "max_messages"), (None, "length")],
)
def test_incomplete(reason: str | None, finish: str) -> None:
    body = typed_sse(*events(message("Once upon"), end="incomplete", incomplete=reason))
    completion = assemble(body)[1]
    assert (completion.finish_reason, completion.content) == (finish, "Once upon")


def test_a_server_that_sends_only_done_events() -> None:
    only_done = [e for e in events(message("a", "b"), call("c", "f", "{}")) if not e["type"].endswith(".delta")]
    completion = assemble(typed_sse(*only_done))[1]
    assert completion.content == "ab"
    assert completion.tool_calls[0]["function"]["arguments"] == "{}"


def test_done_events_never_double_the_text() -> None:
    completion = assemble(typed_sse(*events(message("a", "b"), call("c", "f", "{", "}"))))[1]
    assert completion.content == "ab" and completion.tool_calls[0]["function"]["arguments"] == "{}"


def test_unknown_and_other_event_types_are_skipped() -> None:
    evs = events(message("a", "b"))
    odd = [
        {"type": "response.output_text.annotation.added", "output_index": 0, "annotation": {"type": "url_citation"}},
        {"type": "response.web_search_call.searching", "output_index": 1, "item_id": "ws"},
        {"type": "response.x_new_thing", "whatever": [1, {"a": None}]},
        {"type": "response.output_item.added", "output_index": 1, "item": {"type": "web_search_call", "id": "ws"}},
    ]
    body = typed_sse(*evs[:4], *odd, *evs[4:]) + b": keep-alive\n\nevent: ping\ndata: {}\n\n"
    assert assemble(body)[1].content == "ab"


def test_anything_after_the_end_is_ignored() -> None:
    body = HELLO + b"data: [DONE]\n\n" + typed_sse(*events(message("more")))
    updates, completion = assemble(body)
    assert updates[-1] == StreamDone() and completion.content == "Hello, wörld 🙂\u2028"


def test_done_before_the_end_is_not_an_end() -> None:
    evs = events(message("a"))
    with pytest.raises(TruncatedStream):
        assemble(typed_sse(*evs[:-1]) + b"data: [DONE]\n\n")


# ---- hostile and broken streams ---------------------------------------------------------


def test_a_failed_response() -> None:
    evs = events(message("Half an "))[:-1]
    error = {"code": "server_error", "message": "The model failed to generate a response."}
    failed = {"type": "response.failed", "sequence_number": 99,
              "response": {**RESPONSE, "status": "failed", "error": error}}
    with pytest.raises(UpstreamError) as info:
        assemble(typed_sse(*evs, failed))
    assert info.value.partial == "Half an " and info.value.error == error
    assert info.value.status == 500 and info.value.message == error["message"]


def test_an_error_event_mid_answer() -> None:
    evs = events(message("Half an "))[:-1]
    error = {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.", "param": None, "sequence_number": 9}
    with pytest.raises(UpstreamError) as info:
        assemble(typed_sse(*evs, error))
    assert info.value.partial == "Half an " and info.value.error["message"] == "Slow down."
    assert info.value.status == 429 and info.value.to_dict()["status"] == 429


@pytest.mark.parametrize("data", ['{"error": {"message": "boom", "code": "x"}}', '{"message": "boom"}', "boom"])
def test_an_error_event_of_any_shape(data: str) -> None:
    stream = ResponsesStream()
    stream.feed(typed_sse(*events(message("so far"))[:5]))
    with pytest.raises(UpstreamError) as info:
        stream.feed(b"event: error\ndata: " + data.encode() + b"\n\n")
    assert info.value.error["message"] == "boom" and info.value.partial == "so far" and info.value.status is None


@pytest.mark.parametrize(
    "data, says",
    [
        ("{not json", "not JSON"),
        ("[1]", "not list"),
        ('"text"', "not str"),
        ('{"delta": "x"}', "without a type"),
        ('{"type": 5}', "without a type"),
        ('{"type": "response.output_text.delta", "delta": 5}', "response.output_text.delta.delta is int"),
        ('{"type": "response.output_text.delta"}', "delta is NoneType"),
        ('{"type": "response.refusal.delta", "delta": ["x"]}', "response.refusal.delta.delta is list"),
        ('{"type": "response.output_text.done", "text": {}}', "text is dict"),
        ('{"type": "response.reasoning_summary_text.delta", "delta": null}', "delta is NoneType"),
        ('{"type": "response.function_call_arguments.delta", "delta": {"a": 1}}', "delta is dict"),
        ('{"type": "response.output_item.added", "item": "x"}', "item is str"),
        ('{"type": "response.output_item.added", "item": {"type": "function_call", "name": 3}}', "item.name is int"),
        ('{"type": "response.output_item.added", "item": {"type": "message", "role": []}}', "item.role is list"),
        ('{"type": "response.created", "response": []}', "response is list"),
        ('{"type": "response.completed", "response": {"usage": 7}}', "usage is not an object"),
        ('{"type": "response.completed"}', "response is NoneType"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ],
)
def test_events_of_the_wrong_shape(data: str, says: str) -> None:
    stream = ResponsesStream()
    stream.feed(typed_sse(*events(message("kept"))[:5]))
    with pytest.raises(InvalidChunk) as info:
        stream.feed(b"data: " + data.encode() + b"\n\n")
    assert says in info.value.message and info.value.partial == "kept"


def test_endless_empty_tool_calls_are_bounded_too() -> None:
    stream = ResponsesStream(max_chars=10)
    added = [{"type": "response.output_item.added", "output_index": i, "item": {"type": "function_call"}}
             for i in range(20)]
    with pytest.raises(ResponseTooLarge):
        stream.feed(typed_sse(*added))


def test_done_events_past_the_parts_remembered_add_nothing() -> None:
    deltas = [{"type": "response.output_text.delta", "output_index": i, "content_index": 0, "delta": "d"}
              for i in range(MAX_PARTS + 5)]
    done = {"type": "response.output_text.done", "output_index": MAX_PARTS + 1, "content_index": 0, "text": "d"}
    stream = ResponsesStream()
    stream.feed(typed_sse(*deltas, done))
    assert stream.partial == "d" * (MAX_PARTS + 5)


def test_a_long_closing_event_fits() -> None:
    # response.completed repeats the whole answer: a 2 MB answer must not overflow there.
    text = "y" * 2_000_000
    completion = stream_feed.run(ResponsesStream, [typed_sse(*events(message(text)))])[1]
    assert completion is not None and completion.content == text


# ---- properties: agreement with openai-python, fuzz ---------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
_deltas = st.lists(_text, min_size=1, max_size=4).map(tuple)
_items = st.one_of(
    _deltas.map(lambda d: message(*d)),
    st.lists(_deltas, min_size=1, max_size=3).map(lambda parts: reasoning(*parts)),
    st.tuples(st.sampled_from(["f", "get_2"]), st.lists(_text, max_size=3)).map(
        lambda t: call(f"call_{len(t[1])}", t[0], *t[1])
    ),
)


def openai_final(body: bytes) -> Any:
    """What openai-python's Responses stream helper makes of `body`."""
    import httpx2
    import openai

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = openai.OpenAI(api_key="k", base_url="http://api.test/v1",
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with client.responses.stream(model="gpt-5", input="hi") as stream:
        texts = [e.snapshot for e in stream if e.type == "response.output_text.delta"]
        return stream.get_final_response(), texts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(_items, min_size=1, max_size=4), cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_property_agrees_with_openai_python(items: list[tuple], cuts: list[int]) -> None:
    # Call ids must differ, as the API's do.
    items = [call(f"call_{i}", item[2], *item[3]) if item[0] == "function_call" else item for i, item in enumerate(items)]
    body = typed_sse(*events(*items))
    final, snapshots = openai_final(body)

    completion = stream_feed.feed_cut(ResponsesStream, body, cuts)

    assert completion.content == final.output_text
    if snapshots:
        assert completion.content.endswith(snapshots[-1])
    calls = [o for o in final.output if o.type == "function_call"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in completion.tool_calls] == [
        (c.call_id, c.name, c.arguments) for c in calls
    ]
    summaries = ["".join(s.text for s in o.summary) for o in final.output if o.type == "reasoning"]
    assert completion.reasoning.replace("\n\n", "") == "".join(summaries).replace("\n\n", "")
    assert completion.usage is not None and completion.usage["prompt_tokens"] == final.usage.input_tokens
    assert completion.finish_reason == ("tool_calls" if calls else "stop")
