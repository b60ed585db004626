"""Chat completions, assembled: SSE bytes in, typed updates out, one `Completion` at the end.

Sans-IO, like `sse`: `ChatStream.feed(bytes)` returns the updates those bytes
completed, `ChatStream.close()` returns the whole answer. `parse_completion()` reads a
non-streamed body into the same `Completion`.

The wire format is OpenAI's `chat.completion.chunk` stream
(https://platform.openai.com/docs/api-reference/chat-streaming): one JSON chunk per
`data:` line, `data: [DONE]` at the end. Servers that call themselves compatible differ
in details this module absorbs: reasoning text as `reasoning_content` (DeepSeek, vLLM)
or `reasoning` (OpenRouter, newer vLLM), tool calls without an `index`, a final
usage-only chunk with empty `choices`, an `{"error": ...}` chunk or an `event: error`
instead of an HTTP status once the stream has started.

Mistral's magistral models send `delta.content` as a list of typed parts: `text` parts
are content, `thinking` parts (whose `thinking` is a list of text parts, or a string)
are reasoning (docs.mistral.ai, "Reasoning": `ThinkChunk`).

Reasoning, in every shape a compatible server sends it (../shared/RESEARCH-REASONING.md
§1a): `reasoning_content` (DeepSeek, SGLang, llama.cpp, older vLLM), `reasoning`
(OpenRouter, Ollama's `/v1`, vLLM since PR#27752), `reasoning_details[]` (OpenRouter:
typed `reasoning.text` and `reasoning.summary`, shown; `reasoning.encrypted`, not),
Mistral's thinking parts, and `<think>` tags inline in a string `content`
(`think_tags.ThinkTagSplitter`, one per choice; `think_implicit`: the model sends only
the closing tag). OpenRouter sends the same text in `reasoning` and in
`reasoning_details`, so the details are shown only when no string field came.

What goes back (`Completion.replay`, choice 0's, as fields to set on the assistant
message on later turns): the `reasoning_details` (OpenRouter: "send reasoning_details
back on the assistant message to keep reasoning across tool calls"), merged from their
streamed fragments; and `reasoning_content` when the answer called tools and the
server named its reasoning so (DeepSeek V4: a tool-call turn's `reasoning_content`
"must" go back in later requests, else 400; plain turns' is ignored, so it is not
sent: api-docs.deepseek.com/guides/thinking_mode). Inline tags never go back: they
are stripped from the answer (hermes-agent PR#9306: models imitate re-sent tags).

Every failure is a firsttoken error carrying `partial`, the text of choice 0 so far.
The framing and the numbered events of a resumable stream (`firsttoken.stream.answer`)
and the assembly (`firsttoken.stream.assembly`) are every dialect's; what `chat.error`
keeps on an error or Stop is the stream's `partial`, and nothing else keeps a copy (the
page has the deltas). The
update and answer types live in `firsttoken.stream.types` and are re-exported here.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidChunk, ResponseTooLarge
from .answer import AnswerStream, loads, optional_int, optional_str, upstream_error
from .assembly import DEFAULT_MAX_CHARS, Answer
from .sse import ServerSentEvent
from .think_tags import ThinkTagSplitter
from .types import __all__ as _TYPES
from .types import (
    Choice,  # noqa: F401 - re-exported: `__all__` lists every type of .types
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

# The update and answer types are part of this module's surface too.
__all__ = ["DEFAULT_MAX_CHARS", "ChatStream", "parse_completion", *_TYPES]


def _content_parts(parts: list[Any], what: str, out: list[tuple[type, str]]) -> None:
    """Mistral's typed content parts, in order: text parts are content, thinking parts
    reasoning. Parts of other types (`reference`, images) are not text and are skipped."""
    for position, part in enumerate(parts):
        where = f"{what}.content[{position}]"
        if not isinstance(part, dict):
            raise InvalidChunk(f"{where} is {type(part).__name__}, not an object")
        kind = part.get("type")
        if kind == "text":
            text = optional_str(part, "text", where)
            if text:
                out.append((ContentDelta, text))
        elif kind == "thinking":
            thinking = part.get("thinking")
            if isinstance(thinking, str):
                if thinking:
                    out.append((ReasoningDelta, thinking))
            elif isinstance(thinking, list):
                for inner_position, inner in enumerate(thinking):
                    inner_where = f"{where}.thinking[{inner_position}]"
                    if not isinstance(inner, dict):
                        raise InvalidChunk(f"{inner_where} is {type(inner).__name__}, not an object")
                    if inner.get("type") == "text":
                        text = optional_str(inner, "text", inner_where)
                        if text:
                            out.append((ReasoningDelta, text))
            elif thinking is not None:
                raise InvalidChunk(f"{where}.thinking is {type(thinking).__name__}, not a list or a string")


#: Most `reasoning_details` entries kept for replay (after merging fragments); past it,
#: the details are no longer kept (a bound on what a server sending endless ones makes
#: us hold; each is counted against the answer's `max_chars` too).
MAX_DETAILS = 256
#: The string fields of a reasoning detail that arrive in fragments, to concatenate.
_DETAIL_TEXTS = ("text", "summary", "data")
#: A detail's shown text, by type (openrouter.ai/docs/use-cases/reasoning-tokens).
_DETAIL_SHOWN = {"reasoning.text": "text", "reasoning.summary": "summary"}


class _Reasoning:
    """A stream's reasoning state beyond the assembled text: the tag splitter of each
    choice, the reasoning details of choice 0 (for replay), and which field named it."""

    __slots__ = ("implicit", "splitters", "fielded", "details", "named_content", "resumed_thinking")

    def __init__(self, *, implicit: bool = False, answering: bool = False, thinking: bool = False) -> None:
        self.implicit = implicit
        self.splitters: dict[int, ThinkTagSplitter] = {}
        if answering:  # a resumed answer whose start was shown already
            self.splitters[0] = ThinkTagSplitter(answering=True)
        elif thinking:  # resumed while only reasoning was shown: inside `<think>`, if inline
            self.splitters[0] = ThinkTagSplitter(thinking=True)
        #: Until the stream says how its reasoning comes: a field's reasoning means the
        #: content is the answer, not the inside of a tag (`fielded_reasoning`).
        self.resumed_thinking = thinking and not answering
        self.fielded: set[int] = set()  # choices whose reasoning came in a field
        self.details: list[dict[str, Any]] = []
        self.named_content = False  # choice 0's reasoning came as `reasoning_content`

    def splitter(self, index: int) -> ThinkTagSplitter:
        splitter = self.splitters.get(index)
        if splitter is None:
            splitter = self.splitters[index] = ThinkTagSplitter(implicit=self.implicit and index not in self.fielded)
        return splitter

    def fielded_reasoning(self, index: int) -> None:
        # The server parsed the reasoning out itself: content has no implicit start.
        self.fielded.add(index)
        if index == 0 and self.resumed_thinking:
            # Resumed mid-reasoning that came in a field, not inline: content is answer.
            self.resumed_thinking = False
            self.splitters[0] = ThinkTagSplitter(answering=True)
        splitter = self.splitters.get(index)
        if splitter is not None and splitter.deciding:
            splitter.implicit = False

    def detail(self, answer: Answer, item: dict[str, Any]) -> None:
        """Keep one `reasoning_details` entry, merged into the last when it is a
        fragment of it (same `type` and `index`, as OpenRouter streams them)."""
        last = self.details[-1] if self.details else None
        size = sum(len(v) for v in item.values() if isinstance(v, str))
        if last is not None and last.get("type") == item.get("type") and last.get("index") == item.get("index"):
            answer.charge(size)
            for key, value in item.items():
                if key in _DETAIL_TEXTS and isinstance(value, str) and isinstance(last.get(key), str):
                    last[key] += value
                elif value is not None:
                    last[key] = value
        elif len(self.details) < MAX_DETAILS:
            answer.charge(size + 1)
            self.details.append(dict(item))

    def finish(self, answer: Answer, index: int, reason: str | None, out: list[Update]) -> None:
        """Choice `index` ended (`reason`): its held content, decided."""
        splitter = self.splitters.get(index)
        if splitter is not None:
            _pieces(answer, splitter.finish(cut=reason == "length"), index, out)

    def replay(self, answer: Answer) -> None:
        """Choice 0's replay parts, onto `answer` (once, at the end)."""
        if self.details:
            answer.replay.append({"reasoning_details": self.details})
        state = answer.choices.get(0)
        if self.named_content and state is not None and state.tool_calls:
            text = state.reasoning.value()
            if text:
                answer.add_replay({"reasoning_content": text}, len(text))


def _pieces(answer: Answer, pieces: list[tuple[bool, str]], index: int, out: list[Update]) -> None:
    for is_reasoning, text in pieces:
        answer.add((ReasoningDelta if is_reasoning else ContentDelta)(text, index), out)


def _details(answer: Answer, reasoning: _Reasoning, details: Any, index: int, where: str, shown: bool,
             texts: list[tuple[type, str]]) -> None:
    """OpenRouter's `reasoning_details`: kept (choice 0) and, unless `shown` already as
    a string field, their text and summaries shown."""
    if not isinstance(details, list):
        raise InvalidChunk(f"{where}.reasoning_details is {type(details).__name__}, not a list")
    for position, item in enumerate(details):
        if not isinstance(item, dict):
            raise InvalidChunk(f"{where}.reasoning_details[{position}] is {type(item).__name__}, not an object")
        key = _DETAIL_SHOWN.get(item.get("type"))  # type: ignore[arg-type]
        if key is not None and not shown:
            text = optional_str(item, key, f"{where}.reasoning_details[{position}]")
            if text:
                texts.append((ReasoningDelta, text))
        if index == 0:
            reasoning.detail(answer, item)


def _apply(answer: Answer, obj: Any, out: list[Update], *, part: str, reasoning: _Reasoning) -> None:
    """Apply one chunk (`part="delta"`) or one whole body (`part="message"`) to `answer`;
    both entry points (`ChatStream`, `parse_completion`) share it."""
    if not isinstance(obj, dict):
        raise InvalidChunk(f"a chunk must be a JSON object, not {type(obj).__name__}")
    if obj.get("error") is not None:
        raise upstream_error(obj["error"])
    answer.identify(obj, ("id", "model", "system_fingerprint"))
    choices = obj.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list):
        raise InvalidChunk("choices is not a list")
    for item in choices:
        _apply_choice(answer, item, part, out, reasoning)
    usage = obj.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise InvalidChunk("usage is not an object")
        answer.usage = usage
        answer.add(
            UsageUpdate(
                optional_int(usage.get("prompt_tokens")),
                optional_int(usage.get("completion_tokens")),
                optional_int(usage.get("total_tokens")),
                usage,
            ),
            out,
        )


def _apply_choice(answer: Answer, item: Any, part: str, out: list[Update], state: _Reasoning) -> None:
    if not isinstance(item, dict):
        raise InvalidChunk("a choice is not an object")
    index = item.get("index", 0)
    if type(index) is not int or index < 0:
        raise InvalidChunk("a choice index is not a non-negative integer")
    delta = item.get(part)
    if delta is None:
        delta = {}
    if not isinstance(delta, dict):
        raise InvalidChunk(f"choices[].{part} is not an object")
    answer.choice(index)  # a choice that sent nothing yet still exists
    role = optional_str(delta, "role", part)
    if role:
        answer.add(RoleDelta(role, index), out)
    # vLLM and DeepSeek name it reasoning_content, OpenRouter reasoning; a server
    # sending both sends the same text twice, so the first present one wins.
    reasoning = optional_str(delta, "reasoning_content", part)
    if reasoning:
        if index == 0:
            state.named_content = True
    else:
        reasoning = optional_str(delta, "reasoning", part)
    texts: list[tuple[type, str]] = []
    if reasoning:
        texts.append((ReasoningDelta, reasoning))
    details = delta.get("reasoning_details")
    if details is not None:
        _details(answer, state, details, index, part, bool(reasoning), texts)
    if texts:
        state.fielded_reasoning(index)
    content = delta.get("content")
    if isinstance(content, list):
        _content_parts(content, part, texts)
    elif content is not None and not isinstance(content, str):
        raise InvalidChunk(f"{part}.content is {type(content).__name__}, not a string or a list")
    for kind, text in texts:
        answer.add(kind(text, index), out)
    if isinstance(content, str) and content:
        _pieces(answer, state.splitter(index).feed(content), index, out)
    refusal = optional_str(delta, "refusal", part)
    if refusal:
        answer.add(RefusalDelta(refusal, index), out)
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidChunk("tool_calls is not a list")
        for position, call in enumerate(tool_calls):
            _apply_tool_call(answer, index, call, position, part, out)
    finish = optional_str(item, "finish_reason", "choices[]")
    if finish:
        state.finish(answer, index, finish, out)
        answer.add(FinishReason(finish, index), out)


def _apply_tool_call(answer: Answer, choice: int, call: Any, position: int, part: str, out: list[Update]) -> None:
    if not isinstance(call, dict):
        raise InvalidChunk("a tool call is not an object")
    call_id = optional_str(call, "id", "tool_calls[]")
    index = call.get("index")
    if index is None:
        # A whole message lists its calls in order. A stream without indexes
        # (some compatible servers) starts a new call whenever a new id appears.
        if part == "message":
            index = position
        else:
            calls = answer.choice(choice).tool_calls
            last = max(calls, default=None)
            new_call = last is None or (call_id and call_id != calls[last].id)
            index = (0 if last is None else last + 1) if new_call else last
    if type(index) is not int or index < 0:
        raise InvalidChunk("a tool call index is not a non-negative integer")
    function = call.get("function")
    if function is None:
        function = {}
    if not isinstance(function, dict):
        raise InvalidChunk("tool_calls[].function is not an object")
    name = optional_str(function, "name", "function")
    arguments = function.get("arguments")
    if isinstance(arguments, (dict, list)):
        arguments = json.dumps(arguments, ensure_ascii=False)  # a few servers send parsed JSON
    elif arguments is not None and not isinstance(arguments, str):
        raise InvalidChunk("function.arguments is not a string")
    kind = optional_str(call, "type", "tool_calls[]")
    answer.add(ToolCallDelta(index, call_id or None, name or None, arguments or "", choice), out)
    if kind:
        answer.tool_call(choice, index).type = kind


class ChatStream(AnswerStream):
    """A streamed chat completion: feed the response body, get updates, then close.

    >>> stream = ChatStream()
    >>> stream.feed(b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\\n\\n')
    [ContentDelta(text='Hi', index=0)]
    >>> stream.feed(b"data: [DONE]\\n\\n")
    [StreamDone()]
    >>> stream.close().content
    'Hi'
    """

    _END = "[DONE] or a finish_reason"

    def __init__(self, *, think_implicit: bool = False, thinking: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        #: `think_implicit`: the model opens its reasoning without a tag (R1-style:
        #: `tokens.models.opens_thinking_implicitly`), so its content starts as reasoning.
        #: `thinking`: resumed (`prefix`, `after`) while the page showed only reasoning,
        #: so inline content goes on as reasoning until its closing tag.
        self._reasoning = _Reasoning(implicit=think_implicit, answering=bool(kw.get("prefix")), thinking=thinking)

    def _event(self, event: ServerSentEvent, out: list[Update]) -> None:
        if event.event == "error":
            # Some servers report a failure after the 200 as its own event type.
            try:
                payload = json.loads(event.data)
            except (ValueError, RecursionError):
                payload = event.data
            if isinstance(payload, dict) and payload.get("error") is not None:
                payload = payload["error"]
            raise upstream_error(payload)
        if event.event != "message":
            return  # other event types are not chunks (EventSource would not either)
        if event.data.strip() == "[DONE]":
            self._done = True
            out.append(StreamDone())
            return
        _apply(self._answer, loads(event.data), out, part="delta", reasoning=self._reasoning)

    def _finish(self, out: list[Update]) -> None:
        # Choices the server ended without a finish_reason: their held content now.
        answer = self._answer
        for index in sorted(self._reasoning.splitters):
            state = answer.choices.get(index)
            self._reasoning.finish(answer, index, state.finish_reason if state else None, out)
        self._reasoning.replay(answer)

    def _complete(self) -> bool:
        # Servers that omit [DONE] are common; a finish_reason says the answer ended.
        return self._done or self._answer.finished

    def parse_body(self, body: bytes) -> Completion:
        # Some compatible servers ignore `stream: true` and answer in one piece.
        return parse_completion(body, max_chars=self._answer.max_chars, think_implicit=self._reasoning.implicit)


def parse_completion(body: bytes | str, *, max_chars: int = DEFAULT_MAX_CHARS, think_implicit: bool = False) -> Completion:
    """A non-streamed `chat.completion` body (some servers ignore `stream: true`).

    Raises `UpstreamError` for an `{"error": ...}` body and `InvalidChunk` for anything
    that is not a completion object.
    """
    obj = loads(body)
    if (
        isinstance(obj, dict)
        and obj.get("error") is None
        and not isinstance(obj.get("choices"), list)
    ):
        raise InvalidChunk("not a chat completion: no choices list")
    answer = Answer(max_chars)
    reasoning = _Reasoning(implicit=think_implicit)
    try:
        _apply(answer, obj, [], part="message", reasoning=reasoning)
        for index in sorted(reasoning.splitters):
            if not answer.choice(index).finish_reason:
                reasoning.finish(answer, index, None, [])
        reasoning.replay(answer)
    except (InvalidChunk, ResponseTooLarge) as exc:
        exc.partial = answer.partial()
        raise
    return answer.build()
