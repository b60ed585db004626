"""Anthropic's Messages API on the wire: `POST /v1/messages`.

Its request (Anthropic API reference, "Messages"): `model`, `max_tokens` (required),
`messages` (user and assistant turns, content a string or blocks), `system` (a string
or text blocks), `stream`. Its answer: a `message` object, or Server-Sent Events
(reference, "Streaming Messages"): `message_start`, `content_block_start`, `ping`,
`content_block_delta` (`text_delta`)…, `content_block_stop`, `message_delta` (the
`stop_reason` and the output's `usage`), `message_stop`. An error mid-stream is an
`error` event holding an error object. Its 400s say `<field path>: <problem>`, as
Anthropic's do; errors go out in Anthropic's shape (gateway/errors.py).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..errors import APIError, invalid, new_request_id
from ..validation import ChatRequest, bad_image, check_object, decode_body
from .reasoning import ANTHROPIC_EFFORTS, THINKING_MODEL, Signer, signature_valid
from .wire import Outcome, Stamp, compact, is_count, json_string, new_id, sse_event

__all__ = ["MessagesFraming", "body_text", "cache_breakpoints", "check", "check_supported", "event_text", "parse",
           "usage_total"]

ROLES = ("user", "assistant")
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}


# ---- the request ----------------------------------------------------------------------


def parse(body: bytes) -> ChatRequest:
    return check(decode_body(body), body)


def check(data: Any, body: bytes) -> ChatRequest:
    """Validate a Messages body (Anthropic's 400s); its prompt is `system` as a system
    message, then the turns."""
    data = check_object(data, body)
    model = _required(data, "model")
    if not isinstance(model, str) or not model:
        raise _bad("model", "Input should be a valid string")
    max_tokens = _required(data, "max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise _bad("max_tokens", "Input should be a valid integer")
    if max_tokens < 1:
        raise _bad("max_tokens", "Input should be greater than or equal to 1")

    prompt: list[dict[str, Any]] = []
    system = data.get("system")
    if isinstance(system, list):
        for i, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise _bad(f"system.{i}.type", "Input should be 'text'")
            if not isinstance(block.get("text"), str):
                raise _bad(f"system.{i}.text", "Input should be a valid string")
        if system:
            prompt.append({"role": "system", "content": [{"type": "text", "text": b["text"]} for b in system]})
    elif isinstance(system, str):
        if system:
            prompt.append({"role": "system", "content": system})
    elif system is not None:
        raise _bad("system", "Input should be a valid string or a list of text blocks")

    turns = _required(data, "messages")
    if not isinstance(turns, list):
        raise _bad("messages", "Input should be a valid list")
    if not turns:
        raise _bad("messages", "at least one message is required")
    prompt.extend(_turn(turn, i) for i, turn in enumerate(turns))

    stream = data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise _bad("stream", "Input should be a valid boolean")
    for name in ("temperature", "top_p", "top_k"):
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _bad(name, "Input should be a valid number")
    tools = data.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _bad("tools", "Input should be a valid list")

    effort, cap = _thinking(data, max_tokens)

    # Custom tools, in Chat Completions' form, to be counted as chat's are; Anthropic's
    # own tools (web search, bash) have no schema to count.
    functions = [{"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                                    "parameters": t["input_schema"]}}
                 for t in tools or () if isinstance(t, dict) and isinstance(t.get("input_schema"), dict)]
    return ChatRequest(model=model, messages=prompt, stream=bool(stream), include_usage=False,
                       max_tokens=max_tokens, raw=data, tools=functions or None, effort=effort, think_cap=cap)


#: `thinking.type` values (anthropic-sdk-python `types/thinking_config_*_param.py`).
THINKING_TYPES = ("adaptive", "disabled", "enabled")
#: The smallest `budget_tokens` Anthropic takes.
MIN_BUDGET = 1024


def _thinking(data: dict[str, Any], max_tokens: int) -> tuple[str | None, int | None]:
    """`thinking` and `output_config` checked (Anthropic's 400s): the effort they ask
    ("none" for disabled; adaptive thinks at `output_config.effort`, by default "high",
    Anthropic's default) and the budget that caps thinking (`budget_tokens`, which must
    be at least 1,024 and below `max_tokens`)."""
    effort: str | None = None
    cap = None
    config = data.get("output_config")
    asked = None
    if config is not None:
        if not isinstance(config, dict):
            raise _bad("output_config", "Input should be a valid dictionary")
        asked = config.get("effort")
        if asked is not None and asked not in ANTHROPIC_EFFORTS:
            raise _bad("output_config.effort", "Input should be " + ", ".join(f"'{e}'" for e in ANTHROPIC_EFFORTS[:-1])
                       + f" or '{ANTHROPIC_EFFORTS[-1]}'")
    thinking = data.get("thinking")
    if thinking is None:
        return asked, None
    if not isinstance(thinking, dict):
        raise _bad("thinking", "Input should be a valid dictionary")
    kind = thinking.get("type")
    if kind not in THINKING_TYPES:
        raise _bad("thinking.type", f"Input tag '{str(kind)[:40]}' found using 'type' does not match any of the "
                   "expected tags: 'adaptive', 'disabled', 'enabled'")
    display = thinking.get("display")
    if display is not None and display not in ("summarized", "omitted"):
        raise _bad(f"thinking.{kind}.display", "Input should be 'summarized' or 'omitted'")
    if kind == "disabled":
        return "none", None
    if kind == "adaptive":
        return asked or "high", None
    budget = thinking.get("budget_tokens")
    if budget is None:
        raise _bad("thinking.enabled.budget_tokens", "Field required")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise _bad("thinking.enabled.budget_tokens", "Input should be a valid integer")
    if budget < MIN_BUDGET:
        raise _bad("thinking.enabled.budget_tokens", f"Input should be greater than or equal to {MIN_BUDGET}")
    if budget >= max_tokens:
        raise invalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation "
                      "at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
                      param="max_tokens")
    effort, cap = asked, budget
    return effort, cap


def _required(data: dict[str, Any], name: str) -> Any:
    if name not in data:
        raise _bad(name, "Field required")
    return data[name]


def _bad(where: str, problem: str) -> APIError:
    return invalid(f"{where}: {problem}", param=where)


def _turn(turn: Any, i: int) -> dict[str, Any]:
    """Message `i`, checked, as a chat message for counting and answering: its text
    blocks as text; a tool's use or result as the text it carries; an image block as it
    is (counted from its pixels: firsttoken.tokens.images); other blocks uncounted."""
    where = f"messages.{i}"
    if not isinstance(turn, dict):
        raise _bad(where, "Input should be a valid dictionary")
    role = _required_in(turn, "role", where)
    if not isinstance(role, str) or role not in ROLES:
        raise _bad(f"{where}.role", "Input should be 'user' or 'assistant'")
    content = _required_in(turn, "content", where)
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        raise _bad(f"{where}.content", "Input should be a valid string or a list of content blocks")
    parts = []
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _bad(f"{where}.content.{j}", "Input should be a content block with a 'type'")
        kind = block["type"]
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise _bad(f"{where}.content.{j}.text", "Input should be a valid string")
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append(block)
        elif kind in ("tool_use", "tool_result", "thinking"):
            parts.append({"type": "text", "text": _carried_text(block)})
        else:
            parts.append({"type": kind})
    return {"role": role, "content": parts}


def _required_in(turn: dict[str, Any], name: str, where: str) -> Any:
    if name not in turn:
        raise _bad(f"{where}.{name}", "Field required")
    return turn[name]


def _carried_text(block: dict[str, Any]) -> str:
    kind = block["type"]
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input'), ensure_ascii=False)}"
    if kind == "thinking":
        return str(block.get("thinking") or "")
    content = block.get("content")
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return content if isinstance(content, str) else ""


def cache_breakpoints(req: ChatRequest) -> list[tuple[int, int]]:
    """The blocks `req` marks with `cache_control`, as (message, part) indices into
    `req.messages` (where `check` put them: the system blocks, one part each, in the
    first message; each turn's blocks, one part each, in the turns'), for the built-in
    model's prefix cache (gateway/prefill.py). A top-level `cache_control` marks the
    last block, as Anthropic's automatic caching places its breakpoint. Tools are
    refused, so no breakpoint stands on one."""
    raw, marks = req.raw, []
    first_turn = 0
    system = raw.get("system")
    if isinstance(system, list) and system:
        marks += [(0, j) for j, block in enumerate(system) if isinstance(block, dict) and block.get("cache_control")]
        first_turn = 1
    elif isinstance(system, str) and system:
        first_turn = 1
    for i, turn in enumerate(raw.get("messages") or ()):
        content = turn.get("content") if isinstance(turn, dict) else None
        if isinstance(content, list):
            marks += [(first_turn + i, j) for j, block in enumerate(content)
                      if isinstance(block, dict) and block.get("cache_control")]
    if raw.get("cache_control") and req.messages:
        content = req.messages[-1].get("content")
        marks.append((len(req.messages) - 1, len(content) - 1 if isinstance(content, list) and content else 0))
    return marks


# ---- what the built-in model refuses ------------------------------------------------------


def check_supported(req: ChatRequest) -> None:
    """Anthropic's 400s for what the built-in model cannot do: tools (and a
    `tool_choice` that would force one), extended thinking, and images it cannot read
    (firsttoken's code in `error.details.error_code`)."""
    raw = req.raw
    if raw.get("tools"):
        raise _bad("tools", "this model does not support tools")
    choice = raw.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        raise _bad("tool_choice", "this model does not support tools")
    thinking = raw.get("thinking")
    if req.model != THINKING_MODEL:
        if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"):
            raise _bad("thinking", "this model does not support extended thinking")
        if isinstance(raw.get("output_config"), dict) and raw["output_config"].get("effort") is not None:
            raise _bad("output_config.effort", "this model does not support effort")
    refuse_unsigned_thinking(raw.get("messages"))
    found = bad_image(raw.get("messages"), "messages", dotted=True)
    if found is not None:
        where, error = found
        raise invalid(f"{where}: {error.message}", param=where, code=error.code)


def refuse_unsigned_thinking(turns: Any) -> None:
    """Anthropic's 400s for a thinking block sent back without its `signature`, or with
    one this process did not make over exactly its text (the message every client meets
    when a proxy rewrites history: anthropics/anthropic-sdk-python#1598,
    anthropics/claude-code#10627)."""
    for i, turn in enumerate(turns if isinstance(turns, list) else ()):
        content = turn.get("content") if isinstance(turn, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if not (isinstance(block, dict) and block.get("type") == "thinking"):
                continue
            signature = block.get("signature")
            if signature is None:
                raise _bad(f"messages.{i}.content.{j}.thinking.signature", "Field required")
            thinking = block.get("thinking")
            if not isinstance(thinking, str) or not isinstance(signature, str) or not signature_valid(thinking, signature):
                raise invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block",
                              param=f"messages.{i}.content.{j}")


# ---- the answer ---------------------------------------------------------------------------


class MessagesFraming:
    """One answer as Messages events, or one `message` object. Each text delta is a
    pre-encoded head, the piece's JSON string and a tail; `stamp` adds
    `x_firsttoken_sent_ms` to each. Every answer carries a `request-id` header.

    An answer that thinks leads with a `thinking` block (index 0; the text is block 1):
    `thinking_delta` events with `display: "summarized"` (the default here, as on the
    Claude models before Opus 4.7), none with `"omitted"` (empty thinking, as Opus 4.7+
    default to: anthropics/claude-code#49268); then its `signature_delta` "just before
    the block's `content_block_stop`" (platform.claude.com streaming docs), an HMAC
    over the thinking text as sent (gateway/dialects/reasoning.py).
    """

    def __init__(self, req: ChatRequest, outcome: Outcome, *, stamp: Stamp = None) -> None:
        self.req, self.outcome, self.stamp = req, outcome, stamp
        self.headers = {"request-id": new_request_id()}
        self.id = new_id("msg_")
        given = req.raw.get("thinking")
        thinking: dict[str, Any] = given if isinstance(given, dict) else {}
        #: Whether the thinking is shown (the simulator charges a summary's delay for it).
        self.summary = outcome.thinks and thinking.get("display") != "omitted"
        self._text_index = 1 if outcome.thinks else 0
        self._answering = not outcome.thinks
        self._signer = Signer()
        self._delta_head = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
                            b'"delta":{"type":"text_delta","text":' % self._text_index)

    _THINKING_HEAD = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                      b'"delta":{"type":"thinking_delta","thinking":')

    def _usage(self, done: bool) -> dict[str, Any]:
        s = self.outcome
        # Anthropic's `input_tokens` are those after the last cache breakpoint: the
        # prompt is their sum with the cache's writes and reads (API reference,
        # "Messages", usage).
        usage: dict[str, Any] = {"input_tokens": s.prompt_tokens - s.cached_tokens - s.cache_write_tokens,
                                 "cache_creation_input_tokens": s.cache_write_tokens,
                                 "cache_read_input_tokens": s.cached_tokens,
                                 # message_start says 1, as the real API does: the output so far.
                                 "output_tokens": s.completion_tokens if done else 1}
        if done and s.thinks:
            # Thinking is billed as output (and counted in `output_tokens`); its raw count
            # (anthropic-sdk-python `types/output_tokens_details.py`).
            usage["output_tokens_details"] = {"thinking_tokens": s.reasoning_tokens}
        return usage

    def _message(self, content: list[dict[str, Any]], *, done: bool) -> dict[str, Any]:
        return {
            "id": self.id, "type": "message", "role": "assistant", "model": self.req.model, "content": content,
            "stop_reason": _STOP_REASONS.get(self.outcome.finish, "end_turn") if done else None, "stop_sequence": None,
            "usage": self._usage(done),
        }

    def _start(self, index: int, block: dict[str, Any]) -> bytes:
        return sse_event("content_block_start", compact({"type": "content_block_start", "index": index,
                                                         "content_block": block}))

    def opening(self) -> bytes:
        first = ({"type": "thinking", "thinking": "", "signature": ""} if self.outcome.thinks
                 else {"type": "text", "text": ""})
        return b"".join((
            sse_event("message_start", compact({"type": "message_start", "message": self._message([], done=False)})),
            self._start(0, first),
            sse_event("ping", b'{"type":"ping"}'),
        ))

    def reasoning(self, text: str) -> bytes:
        if not self.summary:
            return b""
        self._signer.update(text)
        stamp = b',"x_firsttoken_sent_ms":%r' % self.stamp() if self.stamp is not None else b""
        return self._THINKING_HEAD + json_string(text).encode() + b"}" + stamp + b"}\n\n"

    def _close_thinking(self) -> bytes:
        signature = compact({"type": "content_block_delta", "index": 0,
                             "delta": {"type": "signature_delta", "signature": self._signer.signature()}})
        return (sse_event("content_block_delta", signature)
                + sse_event("content_block_stop", b'{"type":"content_block_stop","index":0}'))

    def answer_start(self) -> bytes:
        self._answering = True
        return self._close_thinking() + self._start(1, {"type": "text", "text": ""})

    def delta(self, text: str) -> bytes:
        stamp = b',"x_firsttoken_sent_ms":%r' % self.stamp() if self.stamp is not None else b""
        return self._delta_head + json_string(text).encode() + b"}" + stamp + b"}\n\n"

    def closing(self) -> bytes:
        stop = {"stop_reason": _STOP_REASONS.get(self.outcome.finish, "end_turn"), "stop_sequence": None}
        usage = self._usage(True)
        del usage["input_tokens"], usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"]
        end = (sse_event("content_block_stop", b'{"type":"content_block_stop","index":%d}' % self._text_index)
               if self._answering else self._close_thinking())
        return b"".join((
            end,
            sse_event("message_delta", compact({"type": "message_delta", "delta": stop, "usage": usage})),
            sse_event("message_stop", b'{"type":"message_stop"}'),
        ))

    def failure(self, message: str, code: str) -> bytes:
        return sse_event("error", compact({"type": "error", "error": {"type": "api_error", "message": message}}))

    def whole(self, text: str, reasoning: str = "") -> bytes:
        content = []
        if self.outcome.thinks:
            shown = reasoning if self.summary else ""
            self._signer.update(shown)
            content.append({"type": "thinking", "thinking": shown, "signature": self._signer.signature()})
        if not self.outcome.cut_thinking:
            content.append({"type": "text", "text": text})
        return compact(self._message(content, done=True))


# ---- reading an answer's cost (gateway/limits/usage.py) -------------------------------------


def usage_total(usages: Sequence[dict[str, Any]], streaming: bool) -> int | None:
    """Input tokens (cache writes and reads included) from the last usage that gives
    them, plus output tokens from the last that gives them. A stream says its output
    in `message_delta`, after `message_start`'s placeholder: a stream cut before it
    (one usage seen) reports nothing, and its text is counted instead."""
    if streaming and len(usages) < 2:
        return None
    given = None
    output = None
    for usage in reversed(usages):
        if given is None and is_count(usage.get("input_tokens")):
            given = sum(usage.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                        if is_count(usage.get(k)))
        if output is None and is_count(usage.get("output_tokens")):
            output = usage["output_tokens"]
    return given + output if given is not None and output is not None else None


def event_text(event: Any) -> str:
    """The text of a `content_block_delta` event's `text_delta`."""
    if not isinstance(event, dict) or event.get("type") != "content_block_delta":
        return ""
    delta = event.get("delta")
    if isinstance(delta, dict) and delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
        return delta["text"]
    return ""


def body_text(body: Any) -> str:
    """The text blocks of a whole `message`."""
    blocks = body.get("content") if isinstance(body, dict) else None
    return "".join(b["text"] for b in blocks or () if isinstance(b, dict) and b.get("type") == "text"
                   and isinstance(b.get("text"), str))
