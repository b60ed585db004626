"""The API dialects a chat request speaks: which one, what each sends, what reads its answer.

| `api` | path | the conversation as | key sent as | answer read by |
|---|---|---|---|---|
| `chat_completions` | `/chat/completions` | `messages` | `Authorization: Bearer` | `completions.ChatStream` |
| `responses` | `/responses` | `instructions` + `input` | `Authorization: Bearer` | `responses.ResponsesStream` |
| `anthropic_messages` | `/messages` | `system` + `messages` | `x-api-key` | `messages.MessagesStream` |

Every request is built here from the same inputs: the conversation as the page keeps it
(OpenAI chat messages, prepared: `firsttoken.prepare`), the settings, and the gateway
references of its leading system messages (`firsttoken.cache.refs`). The decisions:

* **Which dialect** (`api_for`): the `api` setting when the user chose one; else the
  one the model is served on when only one serves it (o3-pro, gpt-5-pro, … on
  Responses; Claude on Messages: `tokens.models.api_of_model`), since any other would
  only fail; else Chat Completions, which every compatible server speaks.
* **System messages.** Responses and Messages take them apart from the conversation, in
  `instructions` / `system`, wherever they stood (Messages has no other place for them;
  Responses takes the same rule, so both read alike). To any server they go as the one
  text the API documents, joined by a blank line (`SYSTEM_SEPARATOR`). To a firsttoken
  gateway known to take references (`gateway`), they go as a list, one entry a message,
  so that the gateway can store each text and expand each reference in place, then
  join them the same way: Responses as leading `input` items (`{"role", "content"} |
  {"role", "x_firsttoken_ref"}`: the API takes system and developer messages there as it
  takes `instructions`), Messages as `system` blocks (`{"type": "text", "text"} |
  {"type": "text", "x_firsttoken_ref"}`) (bridge/PROTOCOL.md, "Cache references"). A
  server that does not know the extension refuses a reference rather than answering
  without it.
* **Responses** is sent with `store: false`: nothing is kept on OpenAI's side, and no
  `previous_response_id` is sent. That would need `store: true` (the conversation kept
  on the server for 30 days), would make what the model sees differ from what was
  counted and fitted here (the client owns the history, compresses and fits it each
  turn), and saves bytes but not tokens (the earlier input is billed again all the same).
* **Messages** demands `max_tokens`: without the setting it is the reply reserve the
  prompt was fitted around (`tokens.reply_reserve`: 4096, or a quarter of a small
  window), so that prompt and reply fit the window together, which newer Claude models
  check before they answer. Consecutive messages of one role are merged (the API wants
  turns to alternate), tool results become `tool_result` blocks of a user turn and
  empty messages are left out (the API refuses empty text). Straight from the browser
  to Anthropic (a key is set), the request carries the header by which Anthropic allows
  cross-origin calls with a user's own key.
* **Reasoning** (the `reasoning` and `reasoning_summary` settings; the family table
  `tokens.models.reasoning_model`; `firsttoken.stream.reasoning`): Chat Completions gets
  `reasoning_effort` when the setting is not "auto" ("off" as the family's lowest:
  "none", "minimal" for gpt-5, "low" where thinking cannot stop; DeepSeek's
  `thinking: {"type": "disabled"}` instead); Responses, for a reasoning model or a
  set effort, `reasoning: {effort?, summary: "auto"}` and, since it is sent with
  `store: false`, `include: ["reasoning.encrypted_content"]` (the only way a later turn
  can carry the reasoning: openai-python `response_create_params.py`); Messages,
  `thinking` as the model takes it: adaptive (`{"type": "adaptive"}` with
  `output_config.effort`) where `enabled` is refused or deprecated, else `enabled` with
  `budget_tokens` by effort (`tokens.budget.THINKING_RESERVE`) and `max_tokens` above it
  (the API demands `budget_tokens` < `max_tokens`), each with `display: "summarized"`
  ("omitted" without a summary: the newest Claude models omit it by default), and
  `{"type": "disabled"}` for "off" where the model allows it. `reasoning=False` leaves
  all of it out: the server refused it once (`firsttoken.chat`).
* **Replay** (`firsttoken.replay`): an assistant message's kept replay items go back
  where the API wants them: Messages, its blocks first in that assistant turn's
  content; Responses, its reasoning items as input items just before the message's
  own item (and its function calls); Chat Completions, its fields
  (`reasoning_details`, `reasoning_content`) on the message, set there already.
* **Resumable streams** are every dialect's: a firsttoken gateway numbers the events of
  any stream it relays, and `answer.AnswerStream` takes each once, whatever they say;
  the resume itself carries the same credentials (`credentials`).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..cache.refs import REF_FIELD
from ..replay import ITEMS as REPLAY_ITEMS
from ..settings import APIS, ChatSettings
from ..tokens.budget import thinking_reserve
from ..tokens.models import api_of_model, opens_thinking_implicitly
from .answer import AnswerStream
from .completions import ChatStream
from .messages import MessagesStream
from .reasoning import anthropic_thinking, reasoning_fields, reasoning_refused
from .responses import ResponsesStream

__all__ = [
    "ANTHROPIC_VERSION",
    "SYSTEM_SEPARATOR",
    "api_for",
    "completion_reserve",
    "credentials",
    "reasoning_fields",
    "reasoning_refused",
    "request_body",
    "request_headers",
    "request_path",
    "stream_for",
]

CHAT, RESPONSES, MESSAGES = APIS

#: The Messages API version we speak (its streaming events and errors).
ANTHROPIC_VERSION = "2023-06-01"
#: Between system messages joined into one `instructions` / `system` text.
SYSTEM_SEPARATOR = "\n\n"

_SYSTEM_ROLES = frozenset({"system", "developer"})
_PATHS = {CHAT: "/chat/completions", RESPONSES: "/responses", MESSAGES: "/messages"}
_STREAMS: dict[str, type[AnswerStream]] = {CHAT: ChatStream, RESPONSES: ResponsesStream, MESSAGES: MessagesStream}

Message = Mapping[str, Any]


def api_for(settings: ChatSettings) -> str:
    """The dialect a request speaks: the setting, else the model's only API, else Chat
    Completions."""
    return settings.api or api_of_model(settings.model) or CHAT


def stream_for(api: str, model: str = "", **kw: Any) -> AnswerStream:
    """A new stream reading `api`'s answer from `model` (`kw`: `AnswerStream`'s: bounds,
    `prefix`, `after`). On Chat Completions, a model that opens its reasoning without a
    tag has its answer start as reasoning (`think_tags`), and a stream resumed while only
    reasoning was shown (`thinking`) goes on inside it. The other APIs type their
    reasoning blocks, so the events after a cut say what they are by themselves."""
    thinking = bool(kw.pop("thinking", False))
    if api == CHAT:
        return ChatStream(think_implicit=opens_thinking_implicitly(model), thinking=thinking, **kw)
    return _STREAMS[api](**kw)


def request_path(api: str) -> str:
    return _PATHS[api]


def credentials(settings: ChatSettings, api: str) -> dict[str, str]:
    """The header that carries the key, as `api` wants it (none without a key)."""
    if not settings.api_key:
        return {}
    if api == MESSAGES:
        return {"x-api-key": settings.api_key}
    return {"authorization": f"Bearer {settings.api_key}"}


def request_headers(settings: ChatSettings, api: str) -> dict[str, str]:
    """The headers `api` needs beside content type, credentials and the settings' own."""
    if api != MESSAGES:
        return {}
    headers = {"anthropic-version": ANTHROPIC_VERSION}
    if settings.api_key:
        # Anthropic refuses cross-origin calls unless asked for them: the page calls it
        # with the user's own key, which is what the header exists for.
        headers["anthropic-dangerous-direct-browser-access"] = "true"
    return headers


def completion_reserve(settings: ChatSettings, api: str, *, reasoning: bool = True) -> int:
    """The completion tokens a rate limit counts against a request as it starts: the cap
    its body sends, or 0 when it sends none (the server's own default is not known here).

    OpenAI's token limits count a request's prompt plus its `max_tokens` (or
    `max_completion_tokens`) when it is admitted ("Rate limits" guide: "your rate limit is
    calculated as the maximum of max_tokens and the estimated number of tokens based on
    the character count of your request"); Anthropic estimates output tokens from
    `max_tokens` at the start of each request ("Rate limits": OTPM). The firsttoken gateway
    reserves the same way (gateway/limits). Pacing on the prompt alone would send a
    request the window cannot hold: on Messages, whose `max_tokens` is always sent
    (4,096 here), that was 4 to 6 429s a run in `make bench-e2e`'s queueing scenario.

    With no cap sent, a model that thinks still gets the room its reasoning takes
    (`tokens.budget.thinking_reserve`, by effort) counted: reasoning is output the
    window pays for all the same, and thousands of tokens of it arrive before any answer.
    """
    if api == MESSAGES:
        return anthropic_thinking(settings, reasoning)[2]
    return settings.max_tokens or thinking_reserve(settings)


def request_body(
    messages: list[dict[str, Any]],
    settings: ChatSettings,
    api: str,
    *,
    refs: Mapping[int, str] | None = None,
    gateway: bool = False,
    reasoning: bool = True,
) -> dict[str, Any]:
    """The streaming request body of `messages` in `api`. `refs` (message index →
    `sha256:…`) sends those system messages as gateway references; `gateway`: the server
    takes references (system texts that the API joins are then kept apart for it).
    `reasoning`: ask for the settings' reasoning (False: the server refused it)."""
    refs = refs or {}
    if api == CHAT:
        body: dict[str, Any] = {
            "model": settings.model,
            "messages": [_as_ref(m, refs[i]) if i in refs else m for i, m in enumerate(messages)],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if settings.max_tokens:
            body["max_completion_tokens"] = settings.max_tokens
        if reasoning:
            body.update(reasoning_fields(settings, api))
        return body
    system = [(i, m) for i, m in enumerate(messages) if m.get("role") in _SYSTEM_ROLES]
    rest = [m for m in messages if m.get("role") not in _SYSTEM_ROLES]
    apart = gateway or bool(refs)
    if api == RESPONSES:
        body = {"model": settings.model, "input": list(_responses_input(rest)), "stream": True, "store": False}
        if system and apart:
            # Input items of their own: the API takes system and developer messages there
            # as it takes `instructions`, and the gateway expands references in place.
            lead = _system(system, refs, apart, lambda m: {"role": m["role"], "content": _text(m)})
            body["input"] = [*lead, *body["input"]]
        elif system:
            body["instructions"] = _system(system, refs, apart, lambda m: {"role": m["role"], "content": _text(m)})
        if settings.max_tokens:
            body["max_output_tokens"] = settings.max_tokens
        if reasoning:
            body.update(reasoning_fields(settings, api))
        return body
    thinking, output_config, max_tokens = anthropic_thinking(settings, reasoning)
    body = {
        "model": settings.model,
        "messages": _cache_last(_anthropic_turns(rest)),
        "max_tokens": max_tokens,
        "stream": True,
    }
    if thinking is not None:
        body["thinking"] = thinking
    if output_config is not None:
        body["output_config"] = output_config
    if system:
        lead = _system(system, refs, apart, lambda m: {"type": "text", "text": _text(m)}, "text")
        blocks = [{"type": "text", "text": lead}] if isinstance(lead, str) else lead
        body["system"] = [*blocks[:-1], {**blocks[-1], "cache_control": EPHEMERAL}]
    return body


#: Anthropic's prompt cache (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching)
#: caches only up to blocks marked `cache_control`, unlike OpenAI's, which caches every
#: long prompt by itself. So the Messages body marks two: the end of the system prompt
#: (the same in every request of a conversation, and across conversations) and the end
#: of the last turn (the next request reads the whole conversation so far from the
#: cache: a hit is looked for up to 20 blocks before a breakpoint). A cached read costs
#: 0.1× an input token and cuts the prefill; a write costs 1.25× (5-minute lifetime),
#: which a conversation's next turn, usually within minutes, pays back. Prompts under
#: the model's minimum (1,024 tokens; 2,048 for Haiku) are not cached and cost nothing
#: more.
EPHEMERAL = {"type": "ephemeral"}


def _cache_last(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`turns` with a cache breakpoint on the last block of the last turn."""
    if not turns:
        return turns
    last = turns[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    if not blocks:
        return turns
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return [*turns[:-1], {**last, "content": blocks}]


def _as_ref(message: Mapping[str, Any], ref: str, text_field: str = "content") -> dict[str, Any]:
    # No text beside the reference: a server that does not know it refuses it.
    out = {k: v for k, v in message.items() if k != text_field}
    out[REF_FIELD] = ref
    return out


def _system(
    system: Sequence[tuple[int, Message]],
    refs: Mapping[int, str],
    apart: bool,
    entry: Callable[[Message], dict[str, Any]],
    text_field: str = "content",
) -> str | list[dict[str, Any]]:
    """The system messages (with their indices) as the one text the API takes, or kept
    apart for a gateway: a list of `entry`s, each in full or as its reference."""
    if not apart:
        return SYSTEM_SEPARATOR.join(_text(m) for _, m in system)
    return [_as_ref(entry(m), refs[i], text_field) if i in refs else entry(m) for i, m in system]


def _text(message: Message) -> str:
    """A message's text: its string content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return SYSTEM_SEPARATOR.join(texts)
    return ""


def _replay_items(message: Message) -> list[dict[str, Any]]:
    items = message.get(REPLAY_ITEMS)
    return items if isinstance(items, list) else []


def _function(call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, Mapping) else None
    return function if isinstance(function, dict) else {}


# ---- Responses input items -----------------------------------------------------------


def _responses_input(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Chat messages as Responses input items: a message for its text (parts as
    `input_text` / `output_text`, images as `input_image`), a `function_call` item per
    tool call, a `function_call_output` item per tool result."""
    for m in messages:
        role = m.get("role")
        if role == "tool":
            yield {"type": "function_call_output", "call_id": str(m.get("tool_call_id") or ""), "output": _text(m)}
            continue
        content = m.get("content")
        if isinstance(content, list):
            text_type = "output_text" if role == "assistant" else "input_text"
            content = [_responses_part(p, text_type) for p in content]
        if content or m.get("tool_calls"):
            # The reasoning items that led to this message come just before it; one
            # "provided without its required following item" is refused (coder/mux
            # PR#59), so an answer cut while thinking sends none.
            for item in _replay_items(m):
                if item.get("type") == "reasoning":
                    yield item
        if content:
            yield {"role": role, "content": content}
        for call in m.get("tool_calls") or ():
            function = _function(call)
            yield {
                "type": "function_call",
                "call_id": str(call.get("id") or ""),
                "name": str(function.get("name") or ""),
                "arguments": str(function.get("arguments") or ""),
            }


def _responses_part(part: Any, text_type: str) -> Any:
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind == "text":
        return {"type": text_type, "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        image = image if isinstance(image, Mapping) else {"url": image}
        return {"type": "input_image", "image_url": image.get("url"), "detail": image.get("detail") or "auto"}
    return part  # input_text, input_file, …: already a Responses part


# ---- Anthropic turns -------------------------------------------------------------------


_THINKING_BLOCKS = ("thinking", "redacted_thinking")


def _anthropic_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as alternating Anthropic turns of content blocks; a turn of one text
    block is sent as a string."""
    turns: list[dict[str, Any]] = []
    for m in messages:
        role = "assistant" if m.get("role") == "assistant" else "user"
        if m.get("role") == "tool":
            blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": str(m.get("tool_call_id") or ""), "content": _text(m)}]
        else:
            blocks = _anthropic_blocks(m.get("content"))
            for call in m.get("tool_calls") or ():
                function = _function(call)
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except (TypeError, ValueError, RecursionError):
                    arguments = None
                blocks.append({
                    "type": "tool_use",
                    "id": str(call.get("id") or ""),
                    "name": str(function.get("name") or ""),
                    "input": arguments if isinstance(arguments, dict) else {},
                })
            if blocks and role == "assistant":
                # Thinking blocks lead their assistant turn, as the answer had them (a
                # turn of thinking alone, an answer cut while thinking, sends none).
                blocks[:0] = [item for item in _replay_items(m) if item.get("type") in _THINKING_BLOCKS]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        content = turn["content"]
        if len(content) == 1 and content[0].get("type") == "text":
            turn["content"] = content[0]["text"]
    return turns


def _anthropic_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            blocks.append(_anthropic_image(part.get("image_url")))
        else:
            blocks.append(dict(part))  # already an Anthropic block (image, document, …)
    return blocks


def _anthropic_image(image: Any) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, Mapping) else image
    url = str(url or "")
    if url.startswith("data:") and ";base64," in url:
        media_type, _, data = url[len("data:"):].partition(";base64,")
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}
