"""Reasoning that goes back: the replay parts of earlier answers, on later turns.

A reasoning model's answer may carry opaque parts that its API wants back on later
turns (`Completion.replay`, sent to the page as `chat.done.replay` and stored with the
answer): Anthropic's signed `thinking` and `redacted_thinking` blocks, Responses'
`reasoning` items with their `encrypted_content`, OpenRouter's `reasoning_details`,
DeepSeek's `reasoning_content` of a tool-call turn (bridge/PROTOCOL.md, "Reasoning").
The page keeps them as `replay: {"api", "model", "items"}` on the assistant message and
sends them with the conversation. This module is the one place that decides what of it
goes back, in three steps:

1. **Taken off** (`take_replay`), first thing, from every message of `chat.send` and
   `tokens.count` (`firsttoken.prepare`), before anything compresses or counts them:
   `replay` is not a chat message field, and no server would know it.
2. **Kept or dropped.** Items go back only to the API and model that made them
   (`replay.api` and `replay.model` equal the request's): signatures and encrypted
   reasoning are bound to the model (a switch gets a 400 or, on xAI, silently worse
   answers: ../shared/RESEARCH-REASONING.md §1b-1c), and each API has its own shape.
   Kept items ride on their message, so that compressing and fitting carry them with
   it (a message fitting drops takes its reasoning with it): on Chat Completions as the
   message fields they are (`CHAT_FIELDS`: the body is the messages, and the gateway's
   early prepare, gateway/prepare.py, sends them as they come out of here); on the
   other APIs under `ITEMS`, an internal key that `firsttoken.stream.dialects` puts
   where that API wants them, and never sends as is.
3. **Counted** (`replay_tokens`, from `firsttoken.tokens.chat`): what goes back is
   part of the prompt, so the fit counts it. Text (a thinking block's, a summary's,
   `reasoning_content`) is counted by the encoder; opaque data (`signature`,
   `encrypted_content`, redacted `data`) cannot be: it is counted at 4 characters a
   token, OpenAI's rule of thumb. The model reads the reasoning the data encrypts, and
   the base64 of encrypted text is longer than the text, so this errs on the safe
   (larger) side for the prompt's fit. Structure (`type`, `id`, `format`) is not
   counted. The count is then an estimate (`exact` false).

4. **Refused.** A server may still refuse what went back with a 400 (a signature
   from another account or key, encrypted content it cannot read: `about_replay`).
   The conversation must not be stuck on it: `firsttoken.chat` sends the request once
   more without any replay (`without_replay`), which every API takes (earlier turns'
   reasoning is then lost to the model, as after a model switch).

Reasoning *text* is never sent back: the page never puts it in `messages` (and the
fields it keeps it in, `reasoning` and `reasoning_ms`, are taken off here all the same:
vLLM reads an input message's `reasoning`, vllm#38488), and the tag splitter takes
inline `<think>` blocks out of the answer before it is stored.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "CHAT_FIELDS",
    "FIELD",
    "ITEMS",
    "MAX_ITEMS",
    "OPAQUE",
    "about_replay",
    "replay_chars",
    "replay_tokens",
    "take_replay",
    "without_replay",
]

#: The page's field on an assistant message (`chat.done.replay`, as stored).
FIELD = "replay"
#: Where kept items ride on a message inside the core (never sent as is).
ITEMS = "x_firsttoken_replay"
#: The message fields Chat Completions replay items set (OpenRouter, DeepSeek).
CHAT_FIELDS = ("reasoning_details", "reasoning_content")
#: Fields of a stored answer that are the page's, never a model's input.
_PAGE_FIELDS = ("reasoning", "reasoning_ms")
#: Fields whose strings are opaque data, not text the encoder can count.
OPAQUE = frozenset({"signature", "encrypted_content", "data"})
#: Fields that are structure, not content.
_STRUCTURE = frozenset({"type", "id", "format", "index", "status"})
#: Most items taken from one message (an answer has a few; a bound all the same).
MAX_ITEMS = 256
_CHARS_PER_TOKEN = 4
_TAKEN = (FIELD, ITEMS, *_PAGE_FIELDS)


def take_replay(messages: Sequence[Mapping[str, Any]], api: str, model: str) -> list[dict[str, Any]]:
    """`messages` without `replay`; an assistant message whose replay was made by `api`
    and `model` carries its items under `ITEMS`. Messages without `replay` are passed
    through unchanged (the same objects), so a conversation without it costs nothing."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if not any(key in message for key in _TAKEN):
            out.append(message)  # type: ignore[arg-type]
            continue
        replay = message.get(FIELD)
        clean = {k: v for k, v in message.items() if k not in _TAKEN}
        items = _items(replay, api, model) if message.get("role") == "assistant" else []
        if api == "chat_completions":
            for item in items:
                clean.update((key, item[key]) for key in CHAT_FIELDS if key in item)
        elif items:
            clean[ITEMS] = items
        out.append(clean)
    return out


def _items(replay: Any, api: str, model: str) -> list[dict[str, Any]]:
    if not isinstance(replay, Mapping) or replay.get("api") != api or replay.get("model") != model:
        return []
    items = replay.get("items")
    if not isinstance(items, list):
        return []
    return [dict(item) for item in items[:MAX_ITEMS] if isinstance(item, Mapping)]


def replay_tokens(items: Any, count: Callable[[str], int]) -> int:
    """The prompt tokens `items` add (module docstring, step 3); `count` counts text."""
    return _tokens(items, None, count)


def _tokens(value: Any, key: str | None, count: Callable[[str], int]) -> int:
    if isinstance(value, str):
        if key in _STRUCTURE or not value:
            return 0
        if key in OPAQUE:
            return -(-len(value) // _CHARS_PER_TOKEN)
        return count(value)
    if isinstance(value, Mapping):
        return sum(_tokens(v, k, count) for k, v in value.items())
    if isinstance(value, list):
        return sum(_tokens(v, key, count) for v in value)
    return 0


def replay_chars(items: Any) -> int:
    """Characters of `items`' strings, for a count without an encoder."""
    if isinstance(items, str):
        return len(items)
    if isinstance(items, Mapping):
        return sum(replay_chars(v) for k, v in items.items() if k not in _STRUCTURE)
    if isinstance(items, list):
        return sum(replay_chars(v) for v in items)
    return 0


#: Words of a 400's error that is about reasoning sent back, not a parameter:
#: Anthropic "Invalid `signature` in `thinking` block"; OpenAI's encrypted content
#: "could not be verified/decrypted" and "Item 'rs_…' of type 'reasoning' was provided
#: without its required following item", and for an item without its encrypted
#: content "Items are not persisted when `store` is set to false" (anomalyco/opencode
#: PR#2480); DeepSeek's `reasoning_content` "must be passed back".
_REPLAY_WORDS = ("signature", "encrypted", "redacted_thinking", "reasoning_content", "reasoning_details",
                 "of type 'reasoning'", "reasoning item", "thinking block", "passed back",
                 "not persisted when `store` is set to false")


def about_replay(error: Mapping[str, Any]) -> bool:
    """Whether an error object is about the reasoning a request sent back."""
    text = f"{error.get('param') or ''} {error.get('message') or ''}".lower()
    return any(word in text for word in _REPLAY_WORDS)


def without_replay(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """`messages` with nothing of earlier reasoning sent back, or None if they had none."""
    dropped = (ITEMS, *CHAT_FIELDS)
    if not any(key in m for m in messages for key in dropped):
        return None
    return [{k: v for k, v in m.items() if k not in dropped} if any(key in m for key in dropped) else m
            for m in messages]
