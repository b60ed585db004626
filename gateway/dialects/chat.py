"""OpenAI's Chat Completions on the wire: `POST /v1/chat/completions`.

Its request (OpenAI API reference, "Create chat completion"), what the built-in model
refuses of it, its answer (the `chat.completion` object, or `chat.completion.chunk`
events ending with `data: [DONE]`), and where its usage and text stand in an answer.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any, Sequence

from ..errors import APIError, invalid
from ..validation import ChatRequest, bad_image, check_object, decode_body, message_text
from .reasoning import EFFORTS, THINKING_MODEL
from .wire import Outcome, Stamp, json_string, last_total, new_id

__all__ = [
    "ChatFraming", "ROLES", "body_text", "check", "check_supported", "event_text", "parse", "refuse_bad_images",
    "usage_total",
]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


# ---- the request ----------------------------------------------------------------------


def parse(body: bytes) -> ChatRequest:
    """Validate a chat-completion body; raise `APIError` (400) on the first problem."""
    return check(decode_body(body), body)


def check(data: Any, body: bytes) -> ChatRequest:
    """Validate `data`, the decoded `body`; raise `APIError` (400) on the first problem."""
    data = check_object(data, body)

    model = data.get("model")
    if model is None:
        raise invalid("you must provide a model parameter", param="model", code="missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise invalid("model must be a non-empty string.", param="model", code="invalid_type")

    messages = data.get("messages")
    if messages is None:
        raise invalid("Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter")
    if not isinstance(messages, list) or not messages:
        raise invalid("'messages' must be a non-empty array.", param="messages", code="invalid_type")
    for i, message in enumerate(messages):
        _check_message(message, i)

    stream = data.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise invalid("'stream' must be a boolean.", param="stream", code="invalid_type")

    include_usage = False
    options = data.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise invalid("'stream_options' must be an object.", param="stream_options", code="invalid_type")
        if not stream:
            raise invalid(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                param="stream_options",
            )
        flag = options.get("include_usage", False)
        if not isinstance(flag, bool):
            raise invalid("'stream_options.include_usage' must be a boolean.", param="stream_options.include_usage", code="invalid_type")
        include_usage = flag

    max_tokens = None
    for name in ("max_completion_tokens", "max_tokens"):
        value = data.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise invalid(f"'{name}' must be a positive integer.", param=name, code="invalid_type")
        max_tokens = value if max_tokens is None else min(max_tokens, value)

    check_numbers(data, ("temperature", "top_p", "presence_penalty", "frequency_penalty"))

    for name, kind in (("response_format", dict), ("tools", list)):
        value = data.get(name)
        if value is not None and not isinstance(value, kind):
            raise invalid(f"'{name}' must be {'an object' if kind is dict else 'an array'}.", param=name, code="invalid_type")
    fmt = data.get("response_format")
    if fmt is not None and not isinstance(fmt.get("type"), str):
        raise invalid("Missing required parameter: 'response_format.type'.", param="response_format.type",
                      code="missing_required_parameter")

    n = data.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1 or n > 128):
        raise invalid("'n' must be an integer from 1 to 128.", param="n", code="invalid_type")

    effort = data.get("reasoning_effort")
    if effort is not None:
        check_effort(effort, "reasoning_effort")

    return ChatRequest(
        model=model,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        raw=data,
        format=fmt["type"] if fmt is not None else "text",
        tools=data.get("tools"),
        effort=effort,
    )


def check_effort(effort: Any, param: str) -> None:
    """OpenAI's 400 for a reasoning effort that is not one of its values."""
    if not isinstance(effort, str) or effort not in EFFORTS:
        raise invalid(f"Invalid value: '{str(effort)[:40]}'. Supported values are: "
                      + ", ".join(f"'{e}'" for e in EFFORTS[:-1]) + f", and '{EFFORTS[-1]}'.",
                      param=param, code="invalid_value")


def refuse_reasoning(req: ChatRequest, given: bool, param: str) -> None:
    """OpenAI's 400 for a reasoning parameter sent to a model that does not reason (what
    gpt-4o answers to `reasoning_effort`): only `firsttoken-sim-think` takes them."""
    if given and req.model != THINKING_MODEL:
        raise APIError(400, f"Unsupported parameter: '{param}' is not supported with this model.",
                       param=param, code="unsupported_parameter")


def check_numbers(data: dict[str, Any], names: Sequence[str]) -> None:
    """Each of `names` in `data` absent, null or a finite number (OpenAI's 400 else)."""
    for name in names:
        value = data.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            raise invalid(f"'{name}' must be a number.", param=name, code="invalid_type")


def _check_message(message: Any, i: int) -> None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise invalid(f"'{where}' must be an object.", param=where, code="invalid_type")
    role = message.get("role")
    if role is None:
        raise invalid(f"Missing required parameter: '{where}.role'.", param=f"{where}.role", code="missing_required_parameter")
    if not isinstance(role, str) or role not in ROLES:  # a list or an object is not hashable
        raise invalid(
            f"Invalid value: '{str(role)[:40]}'. Supported values are: {', '.join(sorted(ROLES))}.",
            param=f"{where}.role",
            code="invalid_value",
        )
    content = message.get("content")
    if content is None:
        # Assistant turns that only call tools carry no content.
        if role == "assistant" and (message.get("tool_calls") or message.get("function_call")):
            return
        raise invalid(f"Missing required parameter: '{where}.content'.", param=f"{where}.content", code="missing_required_parameter")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise invalid(f"'{where}.content' must be a string or an array.", param=f"{where}.content", code="invalid_type")
    for j, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise invalid(
                f"'{where}.content[{j}]' must be an object with a 'type'.",
                param=f"{where}.content[{j}]",
                code="invalid_type",
            )
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise invalid(f"'{where}.content[{j}].text' must be a string.", param=f"{where}.content[{j}].text", code="invalid_type")


# ---- what the built-in model refuses ------------------------------------------------------


def check_supported(req: ChatRequest) -> None:
    """Refuse, as the real API does for a model without them, what the built-in model
    cannot do: more than one choice, tools, answer formats other than text and JSON
    objects, and images it cannot read (`refuse_bad_images`)."""
    n = req.raw.get("n")
    if n not in (None, 1):
        raise APIError(400, f"Unsupported value: 'n' does not support {n} with this model. Only the default (1) value is supported.",
                       param="n", code="unsupported_value")
    refuse_tools(req)
    refuse_reasoning(req, req.raw.get("reasoning_effort") is not None, "reasoning_effort")
    if req.format not in ("text", "json_object"):
        raise APIError(400, f"Invalid parameter: 'response_format' of type '{req.format}' is not supported with this model.",
                       param="response_format", code="unsupported_value")
    if req.format == "json_object" and not any("json" in message_text(m).lower() for m in req.messages):
        raise APIError(400, "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
                       param="messages", code="invalid_value")
    refuse_bad_images(req.raw.get("messages"), "messages")


def refuse_bad_images(turns: Any, name: str) -> None:
    """OpenAI's 400 for an image part that does not read as an image, or declares more
    pixels than may be decoded; its `code` is firsttoken's (`invalid_image`,
    `image_too_large`), its `param` the part."""
    found = bad_image(turns, name)
    if found is not None:
        where, error = found
        raise invalid(f"Invalid image in '{where}': {error.message}", param=where, code=error.code)


def refuse_tools(req: ChatRequest) -> None:
    """OpenAI's 400 for `tools`, and a `tool_choice` that would force a call."""
    if req.raw.get("tools"):
        raise APIError(400, "Unsupported parameter: 'tools' is not supported with this model.",
                       param="tools", code="unsupported_parameter")
    if req.raw.get("tool_choice") not in (None, "none", "auto"):
        raise APIError(400, "Unsupported parameter: 'tool_choice' is not supported with this model.",
                       param="tool_choice", code="unsupported_parameter")


# ---- the answer ---------------------------------------------------------------------------


class ChatFraming:
    """One answer as `chat.completion.chunk` events, or one `chat.completion` object.

    Every content event is a pre-encoded head, the piece's JSON string and a tail (in
    OpenAI's field order): a fresh `json.dumps` of a dict per event held the stream to
    about 22,000 events a second. `stamp` adds `x_firsttoken_sent_ms` to every chunk.
    """

    def __init__(self, req: ChatRequest, outcome: Outcome, *, stamp: Stamp = None) -> None:
        self.req, self.outcome, self.stamp = req, outcome, stamp
        #: Response headers of this answer: none beyond the usual.
        self.headers: dict[str, str] = {}
        #: Chat Completions has no summary: its reasoning is the thinking itself.
        self.summary = False
        self.id = new_id("chatcmpl-")
        self.created = int(time.time())
        self._base = json.dumps({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": req.model,
            "system_fingerprint": "fp_firsttoken_sim",
        }, separators=(",", ":"))[:-1].encode()
        self._usage_null = b',"usage":null' if req.include_usage else b""
        self._head = self._base + b',"choices":[{"index":0,"delta":{"content":'
        self._tail = b'},"logprobs":null,"finish_reason":null}]' + self._usage_null
        # Thinking goes out as DeepSeek's and vLLM<0.16's `delta.reasoning_content`
        # (api-docs.deepseek.com/guides/thinking_mode), the field most servers use; or
        # inline between `<think>` tags in `content` (Ollama, llama.cpp without a
        # reasoning parser), the first piece opening the tag, `answer_start` closing it.
        self._reasoning_head = (self._head if outcome.think_tags
                                else self._base + b',"choices":[{"index":0,"delta":{"content":null,"reasoning_content":')
        self._tag_open = outcome.think_tags

    def _close(self, body: bytes) -> bytes:
        stamp = b',"x_firsttoken_sent_ms":%r' % self.stamp() if self.stamp is not None else b""
        return b"data: " + body + stamp + b"}\n\n"

    def _choice(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        return self._close(self._base + b',"choices":' + json.dumps(choices, separators=(",", ":")).encode() + self._usage_null)

    def _usage(self) -> dict[str, Any]:
        # The details as OpenAI sends them (API reference, "The chat completion object":
        # `prompt_tokens_details.cached_tokens`, the prompt tokens read from its cache).
        s = self.outcome
        return {"prompt_tokens": s.prompt_tokens, "completion_tokens": s.completion_tokens,
                "total_tokens": s.prompt_tokens + s.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": s.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": s.reasoning_tokens, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}

    def opening(self) -> bytes:
        return self._choice({"role": "assistant", "content": "", "refusal": None})

    def delta(self, text: str) -> bytes:
        return self._close(self._head + json_string(text).encode() + self._tail)

    def reasoning(self, text: str) -> bytes:
        if self._tag_open:
            self._tag_open = False
            text = "<think>" + text
        return self._close(self._reasoning_head + json_string(text).encode() + self._tail)

    def answer_start(self) -> bytes:
        return self.delta("</think>\n\n") if self.outcome.think_tags else b""

    def closing(self) -> bytes:
        events = [self._choice({}, self.outcome.finish)]
        if self.req.include_usage:
            events.append(self._close(self._base + b',"choices":[],"usage":' + json.dumps(self._usage()).encode()))
        events.append(b"data: [DONE]\n\n")
        return b"".join(events)

    def failure(self, message: str, code: str) -> bytes:
        error = {"message": message, "type": "server_error", "param": None, "code": code}
        return b"data: " + json.dumps({"error": error}).encode() + b"\n\n"

    def whole(self, text: str, reasoning: str = "") -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if self.outcome.thinks:
            if self.outcome.think_tags:
                message["content"] = f"<think>{reasoning}" + ("" if self.outcome.cut_thinking else f"</think>\n\n{text}")
            else:
                message["reasoning_content"] = reasoning
        body = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.req.model,
            "system_fingerprint": "fp_firsttoken_sim",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.outcome.finish,
                }
            ],
            "usage": self._usage(),
        }
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


# ---- reading an answer's cost (gateway/limits/usage.py) -------------------------------------


def usage_total(usages: Sequence[dict[str, Any]], streaming: bool) -> int | None:
    """The tokens the last usage object reports (`total_tokens`, else prompt plus
    completion), or None."""
    return last_total(usages, ("prompt_tokens", "completion_tokens"))


def event_text(event: Any) -> str:
    """Choice text of one streamed chunk."""
    return _choice_text(event, "delta")


def body_text(body: Any) -> str:
    """Choice text of a whole `chat.completion`."""
    return _choice_text(body, "message")


def _choice_text(data: Any, where: str) -> str:
    pieces = []
    for choice in data.get("choices") or () if isinstance(data, dict) else ():
        holder = choice.get(where) if isinstance(choice, dict) else None
        content = holder.get("content") if isinstance(holder, dict) else None
        if isinstance(content, str):
            pieces.append(content)
    return "".join(pieces)
