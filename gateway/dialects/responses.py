"""OpenAI's Responses API on the wire: `POST /v1/responses`.

Its request (OpenAI API reference, "Create a model response"): `model`, `input` (a
string, or a list of input items), `instructions`, `max_output_tokens`, `stream`,
`text.format`. Its answer: a `response` object, or Server-Sent Events each named by
its `type` and numbered by `sequence_number` (reference, "Streaming events"):
`response.created`, `response.in_progress`, `response.output_item.added`,
`response.content_part.added`, `response.output_text.delta`…,
`response.output_text.done`, `response.content_part.done`,
`response.output_item.done`, then `response.completed` (or `response.incomplete` when
`max_output_tokens` cut it). No `[DONE]`. An error mid-stream is an `error` event.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from ..errors import APIError, invalid
from ..validation import ChatRequest, check_object, decode_body, message_text
from .chat import check_effort, check_numbers, refuse_bad_images, refuse_reasoning, refuse_tools
from .reasoning import item_seal_valid, seal_item
from .wire import Outcome, Stamp, compact, json_string, last_total, new_id, sse_event

__all__ = ["ResponsesFraming", "body_text", "check", "check_supported", "event_text", "parse", "usage_total"]

ROLES = ("assistant", "system", "developer", "user")
#: The smallest `max_output_tokens` the API takes.
MIN_OUTPUT_TOKENS = 16
_TEXT_PARTS = frozenset({"input_text", "output_text"})
#: `reasoning.summary` values (openai-python `types/shared/reasoning.py`).
SUMMARIES = ("auto", "concise", "detailed")
ENCRYPTED = "reasoning.encrypted_content"
_HEX = "0123456789abcdef"


# ---- the request ----------------------------------------------------------------------


def parse(body: bytes) -> ChatRequest:
    return check(decode_body(body), body)


def check(data: Any, body: bytes) -> ChatRequest:
    """Validate a Responses body (OpenAI's 400s, naming the `param`); its prompt is
    `instructions` as a system message, then `input`."""
    data = check_object(data, body)
    model = data.get("model")
    if model is None:
        raise invalid("Missing required parameter: 'model'.", param="model", code="missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise _type("model", "a non-empty string", model)

    messages: list[dict[str, Any]] = []
    instructions = data.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _type("instructions", "a string", instructions)
    if instructions:
        messages.append({"role": "system", "content": instructions})

    given = data.get("input")
    if given is None:
        raise invalid("Missing required parameter: 'input'.", param="input", code="missing_required_parameter")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list):
        if not given:
            raise invalid("Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty "
                          "array instead.", param="input", code="empty_array")
        messages.extend(_item(item, i) for i, item in enumerate(given))
    else:
        raise _type("input", "a string or an array of input items", given)

    stream = data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise _type("stream", "a boolean", stream)

    max_tokens = data.get("max_output_tokens")
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise _type("max_output_tokens", "an integer", max_tokens)
        if max_tokens < MIN_OUTPUT_TOKENS:
            raise invalid(f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= "
                          f"{MIN_OUTPUT_TOKENS}, but got {max_tokens} instead.",
                          param="max_output_tokens", code="integer_below_min_value")

    check_numbers(data, ("temperature", "top_p"))
    tools = data.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _type("tools", "an array", tools)
    text = data.get("text")
    if text is not None and not isinstance(text, dict):
        raise _type("text", "an object", text)
    fmt = text.get("format") if text else None
    if fmt is not None and not (isinstance(fmt, dict) and isinstance(fmt.get("type"), str)):
        raise invalid("Missing required parameter: 'text.format.type'.", param="text.format.type",
                      code="missing_required_parameter")

    reasoning = data.get("reasoning")
    effort = None
    if reasoning is not None:
        if not isinstance(reasoning, dict):
            raise _type("reasoning", "an object", reasoning)
        effort = reasoning.get("effort")
        if effort is not None:
            check_effort(effort, "reasoning.effort")
        summary = reasoning.get("summary")
        if summary is not None and summary not in SUMMARIES:
            raise invalid(f"Invalid value: '{str(summary)[:40]}'. Supported values are: 'auto', 'concise', and "
                          "'detailed'.", param="reasoning.summary", code="invalid_value")
    include = data.get("include")
    if include is not None:
        if not isinstance(include, list):
            raise _type("include", "an array", include)
        for i, name in enumerate(include):
            if not isinstance(name, str):
                raise _type(f"include[{i}]", "a string", name)

    # Function tools, in Chat Completions' form, to be counted as chat's are; built-in
    # tools (web search, files) have no schema to count.
    functions = [{"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters") if k in t}}
                 for t in tools or () if isinstance(t, dict) and t.get("type") == "function"]
    return ChatRequest(model=model, messages=messages, stream=bool(stream), include_usage=False,
                       max_tokens=max_tokens, raw=data, format=fmt["type"] if fmt else "text", tools=functions or None,
                       effort=effort)


def _type(param: str, expected: str, value: Any) -> APIError:
    got = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
           dict: "an object"}.get(type(value), "null")
    return invalid(f"Invalid type for '{param}': expected {expected}, but got {got} instead.",
                   param=param, code="invalid_type")


def _item(item: Any, i: int) -> dict[str, Any]:
    """Input item `i`, checked, as a chat message for counting and answering. Messages
    keep their role and text; other items (function calls and their outputs,
    reasoning) pass unchecked but for a `type`, and count as the text they carry."""
    where = f"input[{i}]"
    if not isinstance(item, dict):
        raise _type(where, "an object", item)
    kind = item.get("type")
    if kind is not None and not isinstance(kind, str):
        raise _type(f"{where}.type", "a string", kind)
    if "role" not in item and kind in (None, "message"):
        raise invalid(f"Missing required parameter: '{where}.role'.", param=f"{where}.role", code="missing_required_parameter")
    if kind == "reasoning":
        # Counted as its summary text (its encrypted content is the model's, not the prompt's words).
        summary = item.get("summary")
        text = " ".join(p["text"] for p in summary if isinstance(p, dict) and isinstance(p.get("text"), str)) \
            if isinstance(summary, list) else ""
        return {"role": "assistant", "content": text}
    if "role" not in item:
        text = " ".join(v for k, v in item.items() if k in ("name", "arguments", "output", "text") and isinstance(v, str))
        return {"role": "tool" if kind.endswith("_output") else "assistant", "content": text}  # type: ignore[union-attr]
    role = item["role"]
    if not isinstance(role, str) or role not in ROLES:
        raise invalid(f"Invalid value: '{str(role)[:40]}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.",
                      param=f"{where}.role", code="invalid_value")
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        if content is None:
            raise invalid(f"Missing required parameter: '{where}.content'.", param=f"{where}.content",
                          code="missing_required_parameter")
        raise _type(f"{where}.content", "a string or an array", content)
    parts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _type(f"{where}.content[{j}]", "an object with a 'type'", part)
        if part["type"] in _TEXT_PARTS:
            if not isinstance(part.get("text"), str):
                raise _type(f"{where}.content[{j}].text", "a string", part.get("text"))
            parts.append({"type": "text", "text": part["text"]})
        elif part["type"] == "input_image":
            # Kept as it is: counted from its pixels by the model's rule (firsttoken.tokens.images).
            parts.append(part)
        else:
            parts.append({"type": part["type"]})
    return {"role": role, "content": parts}


# ---- what the built-in model refuses ------------------------------------------------------


def check_supported(req: ChatRequest) -> None:
    """OpenAI's 400s for what the built-in model cannot do: tools, state kept between
    requests (it keeps none: `previous_response_id`, `conversation`, `background`,
    stored `prompt` templates), formats other than text and JSON objects, and images it
    cannot read."""
    refuse_tools(req)
    reasoning = req.raw.get("reasoning") or {}
    for name in ("effort", "summary"):
        refuse_reasoning(req, reasoning.get(name) is not None, f"reasoning.{name}")
    refuse_foreign_reasoning(req.raw.get("input"))
    previous = req.raw.get("previous_response_id")
    if previous is not None:
        raise invalid(f"Previous response with id '{str(previous)[:80]}' not found.",
                      param="previous_response_id", code="previous_response_not_found")
    for name in ("conversation", "prompt", "background"):
        if req.raw.get(name) not in (None, False):
            raise APIError(400, f"Unsupported parameter: '{name}' is not supported with this model.",
                           param=name, code="unsupported_parameter")
    if req.format not in ("text", "json_object"):
        raise APIError(400, f"Invalid parameter: 'text.format' of type '{req.format}' is not supported with this model.",
                       param="text.format", code="unsupported_value")
    if req.format == "json_object" and not any("json" in message_text(m).lower() for m in req.messages):
        raise invalid("Response input messages must contain the word 'json' in some form to use 'text.format' of type "
                      "'json_object'.", param="input", code="invalid_value")
    refuse_bad_images(req.raw.get("input"), "input")


def refuse_foreign_reasoning(given: Any) -> None:
    """OpenAI's 400s for a reasoning item sent back that the model cannot take: one
    without `encrypted_content` (the built-in model stores nothing, as under `store:
    false`: anomalyco/opencode PR#2480), and one whose `encrypted_content` this process
    did not make for it (openai/codex#8145, #35334: `invalid_encrypted_content`)."""
    for item in given if isinstance(given, list) else ():
        if not (isinstance(item, dict) and item.get("type") == "reasoning"):
            continue
        item_id = str(item.get("id") or "")[:80]
        if item.get("encrypted_content") is None:
            raise invalid(f"Item with id '{item_id}' not found. Items are not persisted when `store` is set to false. "
                          "Try again with `store` set to true, or remove this item from your input.", param="input")
        if not item_seal_valid(item):
            raise invalid(f"The encrypted content for item {item_id} could not be verified. Reason: Encrypted content "
                          "could not be decrypted or parsed.", code="invalid_encrypted_content")


# ---- the answer ---------------------------------------------------------------------------


class ResponsesFraming:
    """One answer as Responses events, or one `response` object.

    The text is kept as it goes out: the closing events repeat it whole, as the real
    API's do (bounded by the answer's length, at most the built-in model's `tokens`).
    Each delta event is a pre-encoded head, its number, a middle, the piece's JSON
    string and a tail; `stamp` adds `x_firsttoken_sent_ms` to each.

    An answer that thinks leads with a reasoning item (output 0; the message is output
    1). With `reasoning.summary` asked, its thinking streams as the summary events
    (`response.reasoning_summary_part.added`, `…summary_text.delta`…, `…text.done`,
    `…part.done`; openai-python `types/responses/response_reasoning_summary_*_event.py`);
    without, it is silent, as OpenAI's hidden reasoning is. The finished item
    (`response.output_item.done`) carries `encrypted_content` when `include` asks for
    `reasoning.encrypted_content`: the seal (gateway/dialects/reasoning.py) that lets it
    come back in a later turn's `input`.
    """

    def __init__(self, req: ChatRequest, outcome: Outcome, *, stamp: Stamp = None) -> None:
        self.req, self.outcome, self.stamp = req, outcome, stamp
        self.headers: dict[str, str] = {}
        self.id = new_id("resp_", 48, _HEX)
        self.item_id = new_id("msg_", 48, _HEX)
        self.reasoning_id = new_id("rs_", 48, _HEX)
        self.created = int(time.time())
        self._sequence = 0
        self._texts: list[str] = []
        self._thoughts: list[str] = []
        given = req.raw.get("reasoning")
        asked: dict[str, Any] = given if isinstance(given, dict) else {}
        self._summary_kind = asked.get("summary")
        #: Whether the thinking streams as a summary (the simulator then charges the
        #: summary's delay before the answer).
        self.summary = outcome.thinks and self._summary_kind is not None
        self._seal = ENCRYPTED in (req.raw.get("include") or ())
        self._index = 1 if outcome.thinks else 0
        self._answering = not outcome.thinks
        self._reasoning_item: dict[str, Any] | None = None
        self._delta_head = (b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
                            b'"sequence_number":')
        self._delta_middle = (b',"item_id":"' + self.item_id.encode() + b'","output_index":%d' % self._index
                              + b',"content_index":0,"delta":')
        self._summary_head = (b'event: response.reasoning_summary_text.delta\ndata: {"type":'
                              b'"response.reasoning_summary_text.delta","sequence_number":')
        self._summary_middle = b',"item_id":"' + self.reasoning_id.encode() + b'","output_index":0,"summary_index":0,"delta":'

    @property
    def _complete(self) -> bool:
        return self.outcome.finish != "length"

    def _event(self, name: str, fields: dict[str, Any]) -> bytes:
        event = sse_event(name, compact({"type": name, "sequence_number": self._sequence, **fields}))
        self._sequence += 1
        return event

    def _item(self, status: str, text: str | None) -> dict[str, Any]:
        content = [] if text is None else [_output_text(text)]
        return {"id": self.item_id, "type": "message", "status": status, "content": content, "role": "assistant"}

    def _reasoning(self, summary: str | None) -> dict[str, Any]:
        """The reasoning item; `summary` None while it is under way."""
        item: dict[str, Any] = {"id": self.reasoning_id, "type": "reasoning", "summary": []}
        if summary is not None:
            if self.summary:
                item["summary"] = [{"type": "summary_text", "text": summary}]
            if self._seal:
                item["encrypted_content"] = seal_item(self.reasoning_id, summary, self.outcome.reasoning_tokens)
        return item

    def _response(self, output: list[dict[str, Any]], *, done: bool) -> dict[str, Any]:
        raw, s = self.req.raw, self.outcome
        status = "in_progress" if not done else "completed" if self._complete else "incomplete"
        usage = None
        if done:
            usage = {"input_tokens": s.prompt_tokens, "input_tokens_details": {"cached_tokens": s.cached_tokens, "cache_write_tokens": 0},
                     "output_tokens": s.completion_tokens, "output_tokens_details": {"reasoning_tokens": s.reasoning_tokens},
                     "total_tokens": s.prompt_tokens + s.completion_tokens}
        effort = self.req.effort or ("medium" if s.thinks else None)
        return {
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "background": False, "error": None,
            "incomplete_details": None if not done or self._complete else {"reason": "max_output_tokens"},
            "instructions": raw.get("instructions"), "max_output_tokens": raw.get("max_output_tokens"),
            "model": self.req.model, "output": output, "parallel_tool_calls": True, "previous_response_id": None,
            "reasoning": {"effort": effort, "summary": self._summary_kind}, "store": raw.get("store", True),
            "temperature": raw.get("temperature", 1.0), "text": {"format": {"type": self.req.format}},
            "tool_choice": raw.get("tool_choice", "auto"), "tools": [], "top_p": raw.get("top_p", 1.0),
            "truncation": "disabled", "usage": usage, "user": raw.get("user"), "metadata": raw.get("metadata") or {},
        }

    def _open_message(self) -> bytes:
        place = {"item_id": self.item_id, "output_index": self._index, "content_index": 0}
        return b"".join((
            self._event("response.output_item.added", {"output_index": self._index, "item": self._item("in_progress", None)}),
            self._event("response.content_part.added", {**place, "part": _output_text("")}),
        ))

    def opening(self) -> bytes:
        started = self._response([], done=False)
        events = [self._event("response.created", {"response": started}),
                  self._event("response.in_progress", {"response": started})]
        if self.outcome.thinks:
            events.append(self._event("response.output_item.added", {"output_index": 0, "item": self._reasoning(None)}))
            if self.summary:
                events.append(self._event("response.reasoning_summary_part.added", {
                    "item_id": self.reasoning_id, "output_index": 0, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}))
        else:
            events.append(self._open_message())
        return b"".join(events)

    def reasoning(self, text: str) -> bytes:
        if not self.summary:
            return b""
        self._thoughts.append(text)
        stamp = b',"x_firsttoken_sent_ms":%r' % self.stamp() if self.stamp is not None else b""
        event = (self._summary_head + b"%d" % self._sequence + self._summary_middle + json_string(text).encode()
                 + stamp + b"}\n\n")
        self._sequence += 1
        return event

    def _close_reasoning(self) -> bytes:
        text = "".join(self._thoughts)
        events = []
        if self.summary:
            place = {"item_id": self.reasoning_id, "output_index": 0, "summary_index": 0}
            events += [self._event("response.reasoning_summary_text.done", {**place, "text": text}),
                       self._event("response.reasoning_summary_part.done",
                                   {**place, "part": {"type": "summary_text", "text": text}})]
        self._reasoning_item = self._reasoning(text)
        events.append(self._event("response.output_item.done", {"output_index": 0, "item": self._reasoning_item}))
        return b"".join(events)

    def answer_start(self) -> bytes:
        self._answering = True
        return self._close_reasoning() + self._open_message()

    def delta(self, text: str) -> bytes:
        self._texts.append(text)
        stamp = b',"x_firsttoken_sent_ms":%r' % self.stamp() if self.stamp is not None else b""
        event = (self._delta_head + b"%d" % self._sequence + self._delta_middle + json_string(text).encode()
                 + b',"logprobs":[]' + stamp + b"}\n\n")
        self._sequence += 1
        return event

    def closing(self) -> bytes:
        events = []
        if self.outcome.thinks and not self._answering:  # cut while thinking: no message
            events.append(self._close_reasoning())
        output = [self._reasoning_item] if self._reasoning_item is not None else []
        if self._answering:
            text = "".join(self._texts)
            place = {"item_id": self.item_id, "output_index": self._index, "content_index": 0}
            item = self._item("completed" if self._complete else "incomplete", text)
            events += [
                self._event("response.output_text.done", {**place, "text": text, "logprobs": []}),
                self._event("response.content_part.done", {**place, "part": _output_text(text)}),
                self._event("response.output_item.done", {"output_index": self._index, "item": item}),
            ]
            output.append(item)
        events.append(self._event("response.completed" if self._complete else "response.incomplete",
                                  {"response": self._response(output, done=True)}))
        return b"".join(events)

    def failure(self, message: str, code: str) -> bytes:
        return self._event("error", {"code": code, "message": message, "param": None})

    def whole(self, text: str, reasoning: str = "") -> bytes:
        output = []
        if self.outcome.thinks:
            output.append(self._reasoning(reasoning if self.summary else ""))
        if not self.outcome.cut_thinking:
            output.append(self._item("completed" if self._complete else "incomplete", text))
        return compact(self._response(output, done=True))


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


# ---- reading an answer's cost (gateway/limits/usage.py) -------------------------------------


def usage_total(usages: Sequence[dict[str, Any]], streaming: bool) -> int | None:
    """The last usage's `total_tokens`, else its input plus output tokens, or None."""
    return last_total(usages, ("input_tokens", "output_tokens"))


def event_text(event: Any) -> str:
    """The text of a `response.output_text.delta` event."""
    if isinstance(event, dict) and event.get("type") == "response.output_text.delta" and isinstance(event.get("delta"), str):
        return event["delta"]
    return ""


def body_text(body: Any) -> str:
    """The output text of a whole `response`."""
    pieces = []
    for item in body.get("output") or () if isinstance(body, dict) else ():
        for part in item.get("content") or () if isinstance(item, dict) else ():
            if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                pieces.append(part["text"])
    return "".join(pieces)

