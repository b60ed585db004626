"""Reasoning in every wire shape each dialect streams it in, fed every way (whole, a byte
at a time, cut in two anywhere), and the replay parts each answer keeps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firsttoken.errors import ResponseTooLarge
from firsttoken.stream.completions import ChatStream, parse_completion
from firsttoken.stream.messages import MessagesStream
from firsttoken.stream.responses import ResponsesStream
from firsttoken.stream.types import ContentDelta, ReasoningDelta
from tests.unit.stream_feed import assemble, typed_sse


def chat_sse(*deltas: dict[str, Any], finish: str = "stop") -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": d}]} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def texts(updates: list[Any]) -> list[tuple[str, str]]:
    return [("reasoning" if isinstance(u, ReasoningDelta) else "text", u.text)
            for u in updates if isinstance(u, (ReasoningDelta, ContentDelta))]


# ---- Chat Completions -------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_fields(field: str) -> None:
    updates, completion = assemble(ChatStream, chat_sse({field: "Hmm"}, {field: ", yes."}, {"content": "Yes"}))
    assert texts(updates) == [("reasoning", "Hmm"), ("reasoning", ", yes."), ("text", "Yes")]
    assert (completion.reasoning, completion.content, completion.replay) == ("Hmm, yes.", "Yes", ())


OPENROUTER = [  # as OpenRouter streams gpt-5: `reasoning` and `reasoning_details` side by side
    {"reasoning": "**Plan**", "reasoning_details": [
        {"type": "reasoning.summary", "summary": "**Plan**", "format": "openai-responses-v1", "index": 0}]},
    {"reasoning": " it.", "reasoning_details": [
        {"type": "reasoning.summary", "summary": " it.", "format": "openai-responses-v1", "index": 0}]},
    {"reasoning_details": [{"type": "reasoning.encrypted", "data": "gAAAAB", "id": "rs_1",
                            "format": "openai-responses-v1", "index": 1}]},
    {"content": "Done."},
]


def test_openrouter_reasoning_details_are_shown_once_and_kept_merged_for_replay() -> None:
    updates, completion = assemble(ChatStream, chat_sse(*OPENROUTER))
    assert texts(updates) == [("reasoning", "**Plan**"), ("reasoning", " it."), ("text", "Done.")]
    assert completion.replay == ({"reasoning_details": [
        {"type": "reasoning.summary", "summary": "**Plan** it.", "format": "openai-responses-v1", "index": 0},
        {"type": "reasoning.encrypted", "data": "gAAAAB", "id": "rs_1", "format": "openai-responses-v1", "index": 1},
    ]},)


def test_reasoning_details_alone_are_shown() -> None:
    body = chat_sse({"reasoning_details": [{"type": "reasoning.text", "text": "Think", "index": 0}]},
                    {"reasoning_details": [{"type": "reasoning.text", "text": "ing", "signature": "sig", "index": 0}]},
                    {"content": "ok"})
    updates, completion = assemble(ChatStream, body)
    assert completion.reasoning == "Thinking"
    assert completion.replay == ({"reasoning_details": [
        {"type": "reasoning.text", "text": "Thinking", "index": 0, "signature": "sig"}]},)


def test_deepseek_reasoning_content_is_kept_for_a_tool_call_turn_only() -> None:
    call = {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    _, with_tools = assemble(ChatStream, chat_sse({"reasoning_content": "Need f."}, call, finish="tool_calls"))
    assert with_tools.replay == ({"reasoning_content": "Need f."},)
    _, plain = assemble(ChatStream, chat_sse({"reasoning_content": "Easy."}, {"content": "4"}))
    assert plain.replay == ()  # DeepSeek ignores it on plain turns: not sent back
    _, named_otherwise = assemble(ChatStream, chat_sse({"reasoning": "Need f."}, call, finish="tool_calls"))
    assert named_otherwise.replay == ()


def test_mistral_thinking_parts() -> None:
    body = chat_sse({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Hmm"}]}]},
                    {"content": [{"type": "text", "text": "Yes"}]})
    updates, completion = assemble(ChatStream, body)
    assert texts(updates) == [("reasoning", "Hmm"), ("text", "Yes")]


def test_inline_tags_streamed() -> None:
    updates, completion = assemble(ChatStream, chat_sse({"content": "<thi"}, {"content": "nk>Hmm</think>"},
                                                        {"content": "\n\nYes"}))
    assert (completion.reasoning, completion.content) == ("Hmm", "Yes")
    assert completion.replay == ()  # inline reasoning never goes back


def test_a_whole_body_reads_reasoning_the_same_way() -> None:
    body = {"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "<think>Hmm</think>Yes",
        "reasoning_details": [{"type": "reasoning.encrypted", "data": "x", "index": 0}]}}]}
    completion = parse_completion(json.dumps(body))
    assert (completion.reasoning, completion.content) == ("Hmm", "Yes")
    assert completion.replay == ({"reasoning_details": [{"type": "reasoning.encrypted", "data": "x", "index": 0}]},)


def test_replay_parts_count_against_the_answer_bound() -> None:
    body = chat_sse({"reasoning_details": [{"type": "reasoning.encrypted", "data": "x" * 500, "index": 0}]})
    stream = ChatStream(max_chars=100)
    with pytest.raises(ResponseTooLarge):
        stream.feed(body)


# ---- Responses ------------------------------------------------------------------------------


ITEM = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "**Plan** it."}],
        "encrypted_content": "gAAAAB-complete", "status": "completed"}


def responses(*events: dict[str, Any]) -> bytes:
    return typed_sse({"type": "response.created", "response": {"id": "resp_1", "model": "o4-mini"}}, *events,
                     {"type": "response.completed", "response": {"id": "resp_1", "usage": {
                         "input_tokens": 5, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 7}}}})


def test_responses_summary_deltas_and_the_completed_item_kept() -> None:
    body = responses(
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB-partial"}},
        {"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
         "part": {"type": "summary_text", "text": ""}},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
         "delta": "**Plan**"},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
         "delta": " it."},
        {"type": "response.reasoning_summary_text.done", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
         "text": "**Plan** it."},
        {"type": "response.output_item.done", "output_index": 0, "item": ITEM},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Done."},
    )
    updates, completion = assemble(ResponsesStream, body)
    assert texts(updates) == [("reasoning", "**Plan**"), ("reasoning", " it."), ("text", "Done.")]
    assert completion.replay == (ITEM,)  # from output_item.done: the complete encrypted_content
    assert completion.usage["completion_tokens_details"] == {"reasoning_tokens": 7}


def test_responses_hidden_reasoning_is_kept_though_nothing_is_shown() -> None:
    hidden = {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAC"}
    body = responses({"type": "response.output_item.done", "output_index": 0, "item": hidden},
                     {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Hi"})
    updates, completion = assemble(ResponsesStream, body)
    assert texts(updates) == [("text", "Hi")] and completion.replay == (hidden,)


def test_responses_reasoning_text_and_items_without_deltas() -> None:
    raw = {"type": "reasoning", "id": "rs_3", "summary": [], "content": [{"type": "reasoning_text", "text": "raw"}]}
    body = responses({"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "delta": "gpt-oss"},
                     {"type": "response.output_item.done", "output_index": 0, "item": {**raw, "id": "rs_0"}},
                     {"type": "response.output_item.done", "output_index": 1, "item": raw})
    updates, completion = assemble(ResponsesStream, body)
    # The first item's text came as deltas; the second's only in its item.
    assert texts(updates) == [("reasoning", "gpt-oss"), ("reasoning", "\n\nraw")]
    assert [item["id"] for item in completion.replay] == ["rs_0", "rs_3"]


# ---- Messages -------------------------------------------------------------------------------


def anthropic(*events: dict[str, Any], stop: str = "end_turn") -> bytes:
    return typed_sse(
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "role": "assistant",
                                              "usage": {"input_tokens": 10, "output_tokens": 1}}},
        *events,
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 30}},
        {"type": "message_stop"},
    )


def block(index: int, start: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "content_block_start", "index": index, "content_block": start},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index}]


def test_messages_thinking_signature_and_redacted_blocks_kept_in_order() -> None:
    body = anthropic(
        *block(0, {"type": "thinking", "thinking": "", "signature": ""},
               {"type": "thinking_delta", "thinking": "Let me"}, {"type": "thinking_delta", "thinking": " see."},
               {"type": "signature_delta", "signature": "EqQBCkYIB"}),
        *block(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
        *block(2, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Yes."}),
    )
    updates, completion = assemble(MessagesStream, body)
    assert texts(updates) == [("reasoning", "Let me"), ("reasoning", " see."), ("text", "Yes.")]
    assert completion.replay == (
        {"type": "thinking", "thinking": "Let me see.", "signature": "EqQBCkYIB"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
    )


def test_messages_omitted_thinking_is_kept_by_its_signature_and_an_unsigned_block_is_not() -> None:
    body = anthropic(
        *block(0, {"type": "thinking", "thinking": ""}, {"type": "signature_delta", "signature": "sig"}),
        *block(1, {"type": "thinking", "thinking": ""}, {"type": "thinking_delta", "thinking": "cut"}),
        stop="max_tokens",
    )
    _, completion = assemble(MessagesStream, body)
    assert completion.replay == ({"type": "thinking", "thinking": "", "signature": "sig"},)
    assert (completion.content, completion.finish_reason) == ("", "length")


def test_responses_deltas_without_an_output_index_are_not_shown_again_from_the_item() -> None:
    body = responses({"type": "response.reasoning_summary_text.delta", "summary_index": 0, "delta": "**Plan** it."},
                     {"type": "response.output_item.done", "output_index": 0, "item": ITEM})
    updates, completion = assemble(ResponsesStream, body)
    assert texts(updates) == [("reasoning", "**Plan** it.")] and completion.replay == (ITEM,)
