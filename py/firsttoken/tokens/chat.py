"""Counting the tokens of a chat prompt, in any API dialect. See `firsttoken.tokens` for
the rules and their sources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from firsttoken.replay import CHAT_FIELDS as REPLAY_CHAT_FIELDS
from firsttoken.replay import ITEMS as REPLAY_ITEMS
from firsttoken.replay import replay_tokens
from firsttoken.tokens.encoders import Encoder, _count_with, get_encoder
from firsttoken.tokens.images import count_image_part
from firsttoken.tokens.models import ChatFormat, model_info, public_tokenizer

__all__ = [
    "IMAGE_TOKENS_DEFAULT",
    "IMAGE_TOKENS_LOW",
    "TOOL_CALL_OVERHEAD",
    "ChatCount",
    "count_chat",
    "count_chat_detailed",
]

#: An image at `"detail": "low"` on gpt-4o: the fixed price OpenAI documents. Image parts
#: are counted from their pixels by the model's rule (`firsttoken.tokens.images`); these
#: two figures are gpt-4o's reference points, kept for callers that name them.
IMAGE_TOKENS_LOW = 85
#: A 1024×1024 image at high detail on gpt-4o (85 + 4 tiles × 170).
IMAGE_TOKENS_DEFAULT = 765
#: Per tool call in an assistant message, on top of its name and arguments. Our estimate
#: of the wrapper the server adds; no published source gives this number.
TOOL_CALL_OVERHEAD = 7

Message = Mapping[str, Any]
#: Counts the tokens of one text (e.g. a memo over the encoder, so that a caller that
#: already counted a text does not pay for it again).
TextCount = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class ChatCount:
    """A chat prompt's token count, itemised. `total` = sum(messages) + tools + reply_priming.

    `exact` is True only when every part was counted by a rule the cookbook verified
    against the API (text content, names, a verified model family, no tools) and every
    image by its provider's documented rule; `notes` says what was estimated otherwise.
    `images`: the tokens of the image parts, within `total` (`Calibration` corrects them
    apart from the text).
    """

    total: int
    messages: tuple[int, ...]
    tools: int
    reply_priming: int
    encoding: str
    exact: bool
    notes: tuple[str, ...]
    images: int = 0


# What each API dialect's prompt costs beside its text, where it is not Chat Completions'
# verified rule. Responses: an input message item is rendered as a chat message is (the
# same model, the same frame: 3 tokens + role + content, 3 priming the reply), and the
# system messages, joined into `instructions`, are counted as the messages they were (a
# few tokens too many per system message after the first: the safe side). Nothing
# published compares this with the API's `input_tokens`, so the count is not exact
# (`POST /v1/responses/input_tokens` could check it). Anthropic: no tokenizer and no
# published frame at all.
_DIALECT_NOTES = {
    "responses": "Responses API: instructions and input items counted like chat messages (unverified)",
    "anthropic_messages": "Anthropic Messages: message overhead assumed like Chat Completions",
}


class _Counter:
    """Counts messages for one model and API dialect; collects notes on what was estimated."""

    def __init__(self, model: str, count: TextCount | None = None, api: str = "chat_completions") -> None:
        info = model_info(model)
        self.model = model
        # Anthropic's image blocks carry no detail: the page's `detail` is dropped on the way
        # (firsttoken.stream.dialects), so it is not counted either.
        self.detail_sent = api != "anthropic_messages"
        self.format: ChatFormat = info.chat_format
        self.encoder: Encoder = get_encoder(info.encoding)
        self._count = count
        self.notes: dict[str, None] = {}  # ordered set
        self.images = 0
        if not public_tokenizer(model):
            self.note(f"{model!r}: no public tokenizer; an estimate with {info.encoding}")
        elif not info.known:
            self.note(f"unknown model {model!r}: counted with o200k_base, formatted like gpt-4o")
        elif not info.chat_format.verified:
            self.note(f"{model!r}: message overhead assumed {info.chat_format.name}")
        if api in _DIALECT_NOTES:
            self.note(_DIALECT_NOTES[api])

    def note(self, text: str) -> None:
        self.notes[text] = None

    def text(self, value: str) -> int:
        if self._count is not None:
            return self._count(value)
        return _count_with(self.encoder, value)

    def content(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.text(content)
        if not isinstance(content, list):
            self.note(f"content of type {type(content).__name__} not counted")
            return 0
        if sum(1 for p in content if _part_text(p) is not None) > 1:
            # How the server joins several text parts is not published.
            self.note("several text parts: counted separately")
        return sum(self.part(p) for p in content)

    def part(self, part: Any) -> int:
        text = _part_text(part)
        if text is not None:
            return self.text(text)
        image = count_image_part(part, self.model, detail_sent=self.detail_sent)
        if image is not None:
            if image.note:
                self.note(image.note)
            self.images += image.tokens
            return image.tokens
        kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
        self.note(f"{kind} parts not counted")
        return 0

    def tool_call(self, call: Any) -> int:
        self.note(f"tool calls estimated as name + arguments + {TOOL_CALL_OVERHEAD}")
        function = call.get("function", call) if isinstance(call, Mapping) else {}
        return (
            self.text(str(function.get("name") or ""))
            + self.text(str(function.get("arguments") or ""))
            + TOOL_CALL_OVERHEAD
        )

    def message(self, message: Message) -> int:
        fmt = self.format
        n = fmt.tokens_per_message
        for key, value in message.items():
            if value is None:
                continue
            if key == "content":
                n += self.content(value)
            elif key == "role":
                n += self.text(str(value))
            elif key == "name":
                n += self.text(str(value)) + fmt.tokens_per_name
            elif key == "tool_calls":
                n += sum(self.tool_call(c) for c in value)
            elif key == "function_call":
                n += self.tool_call(value)
            elif key == REPLAY_ITEMS or key in REPLAY_CHAT_FIELDS:
                # What goes back of the reasoning (firsttoken.replay): text by the
                # encoder, opaque data at 4 characters a token.
                self.note("reasoning sent back: opaque parts estimated")
                n += replay_tokens({key: value}, self.text)
            elif isinstance(value, str):
                # The cookbook's rule encodes every string field; for fields like
                # tool_call_id the server's real rendering is unknown.
                self.note(f"field {key!r} counted as plain text")
                n += self.text(value)
            else:
                self.note(f"field {key!r} not counted")
        return n

    def tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        if not tools:
            return 0
        fmt = self.format
        self.note("tool schemas counted by the cookbook's approximation")
        n = 0
        for tool in tools:
            function = tool.get("function", tool)
            if tool.get("type", "function") != "function":
                self.note(f"tool type {tool.get('type')!r} counted like a function")
            n += fmt.func_init
            description = str(function.get("description") or "").removesuffix(".")
            n += self.text(f"{function.get('name', '')}:{description}")
            properties = (function.get("parameters") or {}).get("properties") or {}
            if properties:
                n += fmt.prop_init
                for key, prop in properties.items():
                    n += fmt.prop_key
                    if "enum" in prop:
                        n += fmt.enum_init
                        for item in prop["enum"]:
                            n += fmt.enum_item + self.text(str(item))
                    if "properties" in prop or "items" in prop or "anyOf" in prop:
                        self.note("nested schema parts not counted")
                    kind = prop.get("type", "")
                    if not isinstance(kind, str):
                        kind = ",".join(map(str, kind))
                    desc = str(prop.get("description") or "").removesuffix(".")
                    n += self.text(f"{key}:{kind}:{desc}")
        return n + fmt.func_end

    @property
    def exact(self) -> bool:
        return not self.notes


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            return part["text"]
        if kind == "refusal" and isinstance(part.get("refusal"), str):
            return part["refusal"]
    return None


def count_chat_detailed(
    messages: Sequence[Message],
    model: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    count: TextCount | None = None,
    api: str = "chat_completions",
) -> ChatCount:
    """Tokens of a chat prompt, per message, with notes on what was estimated.
    `count`, if given, counts each text instead of `model`'s encoder (it must agree
    with it: a memo over it, say). `api`: the dialect it is sent in
    (`firsttoken.settings.APIS`); only Chat Completions' overhead is verified."""
    counter = _Counter(model, count, api)
    per_message = tuple(counter.message(m) for m in messages)
    tool_tokens = counter.tools(tools)
    priming = counter.format.reply_priming
    return ChatCount(
        total=sum(per_message) + tool_tokens + priming,
        messages=per_message,
        tools=tool_tokens,
        reply_priming=priming,
        encoding=counter.encoder.name,
        exact=counter.exact,
        notes=tuple(counter.notes),
        images=counter.images,
    )


def count_chat(
    messages: Sequence[Message],
    model: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    count: TextCount | None = None,
    api: str = "chat_completions",
) -> int:
    """Prompt tokens the server will likely report for `messages` (+ `tools`) on `model`."""
    return count_chat_detailed(messages, model, tools, count=count, api=api).total
