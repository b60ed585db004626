"""MessagesStream: Anthropic Messages streams, as the API and compatible servers send
them, decoded into the same updates and answer as a chat completion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firsttoken.errors import InvalidChunk, ResponseTooLarge, TruncatedStream, UpstreamError
from firsttoken.stream.messages import MessagesStream
from firsttoken.stream.types import (
    Completion,
    ContentDelta,
    FinishReason,
    ReasoningDelta,
    RoleDelta,
    StreamDone,
    ToolCallDelta,
    Update,
    UsageUpdate,
)
from tests.unit import stream_feed
from tests.unit.stream_feed import typed_sse

START_USAGE = {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100, "output_tokens": 1}
MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": START_USAGE,
}


def text(*deltas: str) -> tuple:
    return ("text", deltas)


def thinking(*deltas: str) -> tuple:
    return ("thinking", deltas)


def tool(tool_id: str, name: str, *deltas: str) -> tuple:
    return ("tool_use", tool_id, name, deltas)


def events(*blocks: tuple, stop: str | None = "end_turn", output_tokens: int = 15, end: bool = True) -> list[dict]:
    """The events the API sends for content `blocks`, in order, with pings between."""
    out: list[dict] = [{"type": "message_start", "message": MESSAGE}, {"type": "ping"}]
    for index, block in enumerate(blocks):
        kind = block[0]
        if kind == "text":
            out.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            out += [{"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": d}} for d in block[1]]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            out.append({"type": "content_block_start", "index": index, "content_block": start})
            out += [{"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": d}}
                    for d in block[1]]
            out.append({"type": "content_block_delta", "index": index,
                        "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}})
        elif kind == "redacted_thinking":
            out.append({"type": "content_block_start", "index": index,
                        "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}})
        else:
            _, tool_id, name, deltas = block
            out.append({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}})
            out += [{"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": d}}
                    for d in deltas]
        out.append({"type": "content_block_stop", "index": index})
        out.append({"type": "ping"})
    out.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens}})
    if end:
        out.append({"type": "message_stop"})
    return out


def assemble(body: bytes, **kw: Any) -> tuple[list[Update], Completion]:
    return stream_feed.assemble(MessagesStream, body, **kw)


HELLO = typed_sse(*events(text("Hel", "lo, ", "wörld 🙂\u2028")))


def test_a_plain_answer() -> None:
    updates, completion = assemble(HELLO)
    start = UsageUpdate(125, 1, 126, START_USAGE)
    end = UsageUpdate(125, 15, 140, {**START_USAGE, "output_tokens": 15})
    assert updates == [
        RoleDelta("assistant"),
        start,
        ContentDelta("Hel"),
        ContentDelta("lo, "),
        ContentDelta("wörld 🙂\u2028"),
        FinishReason("stop"),
        end,
        StreamDone(),
    ]
    assert completion.content == "Hello, wörld 🙂\u2028"
    assert (completion.id, completion.model, completion.finish_reason) == (MESSAGE["id"], MESSAGE["model"], "stop")
    assert json.loads(json.dumps(completion.to_dict()))["content"] == completion.content


def test_usage_counts_the_whole_prompt_and_keeps_anthropic_s_own() -> None:
    usage = assemble(HELLO)[1].usage
    assert usage is not None
    # input_tokens leaves out the cached part; OpenAI's prompt_tokens, and our count, do not.
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (125, 15, 140)
    assert usage["prompt_tokens_details"] == {"cached_tokens": 100}
    assert (usage["input_tokens"], usage["cache_read_input_tokens"], usage["output_tokens"]) == (25, 100, 15)


def test_cumulative_usage_replaces_and_keeps_what_was_left_out() -> None:
    evs = events(text("a"))
    evs[-2]["usage"] = {"output_tokens": 9, "input_tokens": 30, "cache_read_input_tokens": None,
                        "output_tokens_details": {"thinking_tokens": 4}}
    usage = assemble(typed_sse(*evs))[1].usage
    assert usage is not None and (usage["prompt_tokens"], usage["completion_tokens"]) == (130, 9)
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 4}


def test_thinking_then_text() -> None:
    body = typed_sse(*events(thinking("Let me ", "add."), ("redacted_thinking",), text("4")))
    updates, completion = assemble(body)
    assert [u for u in updates if isinstance(u, (ReasoningDelta, ContentDelta))] == [
        ReasoningDelta("Let me "), ReasoningDelta("add."), ContentDelta("4")]
    assert (completion.reasoning, completion.content) == ("Let me add.", "4")


def test_tool_use_blocks_are_tool_calls() -> None:
    body = typed_sse(*events(
        text("Checking."),
        tool("toolu_a", "get_weather", "", '{"city":', ' "Paris"}'),
        tool("toolu_b", "get_time"),
        stop="tool_use",
    ))
    updates, completion = assemble(body)
    assert ToolCallDelta(0, "toolu_a", "get_weather", "") in updates
    assert ToolCallDelta(1, None, None, "{}") in updates  # no arguments streamed: its input, {}
    assert completion.finish_reason == "tool_calls" and completion.content == "Checking."
    assert completion.tool_calls == [
        {"id": "toolu_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "toolu_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
    ]


def test_a_tool_input_sent_whole_at_its_start() -> None:
    evs = events(tool("toolu_a", "f"))
    evs[2]["content_block"]["input"] = {"q": "ö"}
    assert assemble(typed_sse(*evs))[1].tool_calls[0]["function"]["arguments"] == '{"q": "ö"}'


def test_a_server_tool_s_input_is_not_a_tool_call() -> None:
    evs = events(text("a"))
    server = [
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "web_search_tool_result", "content": []}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "citations_delta", "citation": {"type": "web_search_result_location"}}},
        {"type": "content_block_stop", "index": 2},
    ]
    completion = assemble(typed_sse(*evs[:-3], *server, *evs[-3:]))[1]
    assert completion.tool_calls == [] and completion.content == "a"


@pytest.mark.parametrize(
    "stop, finish",
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"),
     ("model_context_window_exceeded", "length"), ("tool_use", "tool_calls"), ("refusal", "content_filter"),
     ("pause_turn", "pause_turn")],
)
def test_stop_reasons(stop: str, finish: str) -> None:
    assert assemble(typed_sse(*events(text("a"), stop=stop)))[1].finish_reason == finish


def test_without_event_lines_and_with_crlf() -> None:
    body = typed_sse(*events(text("a", "b")), named=False).replace(b"\n", b"\r\n")
    assert assemble(body)[1].content == "ab"


def test_unknown_event_and_delta_types_are_skipped() -> None:
    evs = events(text("a", "b"))
    odd = [
        {"type": "x_new_event", "data": [1]},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "x_new_delta", "text": 5}},
        {"type": "content_block_start", "index": 7, "content_block": {"type": "x_new_block", "text": "not ours"}},
    ]
    body = typed_sse(*evs[:4], *odd, *evs[4:]) + b": comment\n\n"
    assert assemble(body)[1].content == "ab"


def test_anything_after_message_stop_is_ignored() -> None:
    updates, completion = assemble(HELLO + b"data: [DONE]\n\n" + typed_sse(*events(text("more"))))
    assert updates[-1] == StreamDone() and completion.content == "Hello, wörld 🙂\u2028"


# ---- hostile and broken streams ---------------------------------------------------------


def test_a_stream_without_message_stop_is_truncated_even_with_a_stop_reason() -> None:
    with pytest.raises(TruncatedStream) as info:
        assemble(typed_sse(*events(text("Once upon", " a time"), end=False)))
    assert info.value.partial == "Once upon a time"


def test_overloaded_mid_answer_is_an_upstream_error_like_a_529() -> None:
    evs = events(text("Half an "))[:4]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(UpstreamError) as info:
        assemble(typed_sse(*evs, error))
    assert info.value.partial == "Half an " and info.value.error == error["error"]
    assert info.value.status == 529 and info.value.message == "Overloaded"


@pytest.mark.parametrize(
    "data, status",
    [('{"type": "error", "error": {"type": "api_error", "message": "boom"}}', 500),
     ('{"error": {"message": "boom"}}', None), ('{"message": "boom"}', None), ("boom", None)],
)
def test_an_error_event_of_any_shape(data: str, status: int | None) -> None:
    stream = MessagesStream()
    stream.feed(typed_sse(*events(text("so far"))[:4]))
    with pytest.raises(UpstreamError) as info:
        stream.feed(b"event: error\ndata: " + data.encode() + b"\n\n")
    assert info.value.error["message"] == "boom" and info.value.partial == "so far" and info.value.status == status


@pytest.mark.parametrize(
    "data, says",
    [
        ("{not json", "not JSON"),
        ("[1]", "not list"),
        ('{"index": 0}', "without a type"),
        ('{"type": "message_start", "message": "m"}', "message_start.message is str"),
        ('{"type": "message_start", "message": {"role": 1}}', "message.role is int"),
        ('{"type": "message_start", "message": {"usage": []}}', "usage is not an object"),
        ('{"type": "content_block_start", "index": "0", "content_block": {"type": "text"}}', "index is not"),
        ('{"type": "content_block_start", "index": -1, "content_block": {"type": "text"}}', "index is not"),
        ('{"type": "content_block_start", "index": 0, "content_block": null}', "content_block is NoneType"),
        ('{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": 3}}', "text is int"),
        ('{"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "name": {}}}', "name is dict"),
        ('{"type": "content_block_delta", "index": 0, "delta": "x"}', "delta is str"),
        ('{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": null}}', "text is NoneType"),
        ('{"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": 1}}', "thinking is int"),
        ('{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": {}}}',
         "partial_json is dict"),
        ('{"type": "content_block_stop"}', "index is not"),
        ('{"type": "message_delta", "delta": []}', "delta is not an object"),
        ('{"type": "message_delta", "delta": {"stop_reason": 1}}', "stop_reason is int"),
        ('{"type": "message_delta", "delta": {}, "usage": 5}', "usage is not an object"),
    ],
)
def test_events_of_the_wrong_shape(data: str, says: str) -> None:
    stream = MessagesStream()
    stream.feed(typed_sse(*events(text("kept"))[:4]))
    with pytest.raises(InvalidChunk) as info:
        stream.feed(b"data: " + data.encode() + b"\n\n")
    assert says in info.value.message and info.value.partial == "kept"


def test_endless_empty_tool_calls_are_bounded_too() -> None:
    stream = MessagesStream(max_chars=10)
    starts = [{"type": "content_block_start", "index": i, "content_block": {"type": "tool_use"}} for i in range(20)]
    with pytest.raises(ResponseTooLarge):
        stream.feed(typed_sse(*starts))


def test_a_block_index_sent_again_starts_a_new_block() -> None:
    evs = events(tool("toolu_a", "f", '{"a": 1}'), tool("toolu_b", "g", '{"b": 2}'), text("x"), stop="tool_use")
    for e in evs:  # every block at index 0
        if "index" in e:
            e["index"] = 0
    completion = assemble(typed_sse(*evs))[1]
    assert [(c["id"], c["function"]["arguments"]) for c in completion.tool_calls] == [
        ("toolu_a", '{"a": 1}'), ("toolu_b", '{"b": 2}')]
    assert completion.content == "x"


# ---- properties: agreement with the anthropic client, fuzz -------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
_args = st.dictionaries(st.sampled_from(["city", "n", "ok", "ä"]), st.integers() | _text | st.booleans(), max_size=3)


@st.composite
def _tool_block(draw: st.DrawFn) -> tuple:
    whole = json.dumps(draw(_args), ensure_ascii=False)
    cuts = sorted(set(draw(st.lists(st.integers(0, len(whole)), max_size=3))))
    pieces = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)])]
    return tool(f"toolu_{draw(st.integers(0, 999))}", draw(st.sampled_from(["f", "get_2"])), *pieces)


_blocks = st.one_of(
    st.lists(_text, min_size=1, max_size=4).map(lambda d: text(*d)),
    st.lists(_text, min_size=1, max_size=3).map(lambda d: thinking(*d)),
    _tool_block(),
)


def anthropic_final(body: bytes) -> Any:
    """What the anthropic client's MessageStream makes of `body`."""
    import anthropic
    import httpx2

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = anthropic.Anthropic(api_key="k", base_url="http://api.test",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as s:
        return s.get_final_message()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_blocks, min_size=1, max_size=4), cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_property_agrees_with_the_anthropic_client(blocks: list[tuple], cuts: list[int]) -> None:
    stop = "tool_use" if any(b[0] == "tool_use" for b in blocks) else "end_turn"
    body = typed_sse(*events(*blocks, stop=stop))
    final = anthropic_final(body)

    completion = stream_feed.feed_cut(MessagesStream, body, cuts)

    assert completion.content == "".join(b.text for b in final.content if b.type == "text")
    assert completion.reasoning == "".join(b.thinking for b in final.content if b.type == "thinking")
    uses = [b for b in final.content if b.type == "tool_use"]
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in completion.tool_calls] == [
        (b.id, b.name, b.input) for b in uses
    ]
    assert completion.usage is not None and completion.usage["completion_tokens"] == final.usage.output_tokens
    assert completion.finish_reason == ("tool_calls" if final.stop_reason == "tool_use" else "stop")
