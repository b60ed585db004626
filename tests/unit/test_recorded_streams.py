"""Streams recorded from real providers (tests/fixtures/streams/, each file's source in
SOURCES.md), decoded by firsttoken's dialect decoders whole, split at every byte (every
97th in the large ones), and one byte at a time: the same answer each way, and the
answer the official client assembles from the same bytes (expected.json, made by
expected.py with `openai` and `anthropic`). Where the official client fails on a stream
a provider really sent, firsttoken assembles it; where the stream carries an error,
firsttoken raises its typed error with the text before it kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from firsttoken.errors import FirstTokenError, UpstreamError
from firsttoken.stream.dialects import stream_for

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
EXPECTED: dict[str, Any] = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))
FILES = sorted(p.relative_to(HERE).as_posix() for p in HERE.glob("*/*.sse"))

#: The official client's finish names, per dialect, in firsttoken's (Chat Completions') terms.
FINISH = {
    "end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
    "incomplete": "length",
}
#: Streams on which the official client fails, though nothing in them is an error:
#: firsttoken assembles these (checked against what is in them below).
SDK_FAILS = {
    "chat_completions/mistral-tool-call-no-index.sse",  # tool calls without `index`
    "chat_completions/mistral-magistral-thinking-list-content-short.sse",  # list content
    "responses/github-copilot-reasoning-summary-id-rotation.sse",  # ids change mid-stream
    "responses/openai-incomplete-max-output-tokens.sse",  # ends with response.incomplete
}
#: Streams whose thinking the official client drops (list content after a first "").
SDK_DROPS_REASONING = {"chat_completions/mistral-magistral-thinking-list-content.sse"}


def decode(name: str, pieces: list[bytes]) -> tuple[Any, FirstTokenError | None]:
    stream = stream_for(name.split("/")[0])
    try:
        for piece in pieces:
            stream.feed(piece)
        return stream.close(), None
    except FirstTokenError as exc:
        return None, exc


def outcome(name: str, pieces: list[bytes]) -> dict[str, Any]:
    answer, error = decode(name, pieces)
    if error is not None:
        return {"error": type(error).__name__, "partial": error.partial}
    return {"content": answer.content, "reasoning": answer.reasoning, "finish": answer.finish_reason,
            "tool_calls": [(c["function"]["name"], c["function"]["arguments"]) for c in answer.tool_calls]}


def splits(data: bytes) -> list[list[bytes]]:
    step = 1 if len(data) <= 8192 else 97
    return [[data[:i], data[i:]] for i in range(1, len(data), step)]


@pytest.mark.parametrize("name", FILES)
def test_every_split_gives_the_same_answer(name: str) -> None:
    data = (HERE / name).read_bytes()
    whole = outcome(name, [data])
    assert outcome(name, [data[i : i + 1] for i in range(len(data))]) == whole
    for pieces in splits(data):
        assert outcome(name, pieces) == whole, len(pieces[0])


def _reasoning(value: Any) -> str:
    if isinstance(value, dict):
        return "".join(v for v in value.values() if isinstance(v, str))
    return value or ""


@pytest.mark.parametrize("name", FILES)
def test_the_answer_is_the_official_clients(name: str) -> None:
    want = EXPECTED[name]
    got = outcome(name, [(HERE / name).read_bytes()])
    # The client's stream helper raises at `length` by design, having assembled the answer.
    refused_length = want.get("sdk_error", "").startswith("LengthFinishReasonError")
    if "sdk_error" in want and name not in SDK_FAILS and not refused_length:
        # An error the server sent: typed, with what came before it kept.
        assert "error" in got, got
        assert got["error"] == UpstreamError.__name__, got
        assert got["partial"] == want["before_error"]["content"]
        return
    assert "error" not in got, got
    if name in SDK_FAILS:
        assert got["content"] or got["reasoning"] or got["tool_calls"], got
        if "content" in want.get("before_error", {}):
            assert got["content"].startswith(want["before_error"]["content"])
        return
    assert got["content"] == (want["content"] or "")
    if name not in SDK_DROPS_REASONING:
        assert got["reasoning"] == _reasoning(want["reasoning"])
    else:
        assert got["reasoning"] and not want["reasoning"]
    assert got["tool_calls"] == [(c["name"], c["arguments"]) for c in want["tool_calls"]]
    finish = want["finish"]
    if finish == "completed":  # Responses: the status, not a reason
        finish = "tool_calls" if want["tool_calls"] else "stop"
    if finish is not None:
        assert got["finish"] == FINISH.get(finish, finish)
