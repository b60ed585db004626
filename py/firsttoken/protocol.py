"""The firsttoken message protocol, version 2: one definition per message type.

One protocol everywhere: main thread ↔ worker, page ↔ iOS/Android host, page ↔
embedding window (bridge/PROTOCOL.md). A message is one JSON object with a `type`;
requests carry an `id` chosen by the sender, and every event about that request carries
the same `id`.

Each message type is one frozen dataclass here, registered under its wire name:

* a **request** (page → core, `REQUESTS`) is validated by `parse_request`, which checks
  the envelope and then the type's own fields (`Request.from_fields`), and returns the
  typed request;
* an **event** (core → page, `EVENTS`) is made by constructing its class and encoded by
  `encode`: the fields are the dataclass's, in order; the few marked optional
  (`OMIT_EMPTY`) are left out when empty.

`tests/unit/test_protocol.py` checks these definitions against PROTOCOL.md's tables, both
ways. Pure: no I/O.

**Versions.** Version 2 renamed one event (`RENAMED_EVENTS`: `chat.resume`, which meant
"text came again after a stall" beside resumable streams, is `chat.stall.cleared`).
The previous version stays accepted for one version (`ACCEPTED_VERSIONS`): the core
takes requests of either, and the page speaks to each host in the version the host's
own messages carry, with version 1's names (bridge/page/hosts.js; bridge/PROTOCOL.md,
"Versions").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Callable, ClassVar, TypeVar, dataclass_transform

from .errors import InvalidMessage
from .settings import ChatSettings

__all__ = [
    "PROTOCOL_VERSION",
    "ACCEPTED_VERSIONS",
    "RENAMED_EVENTS",
    "MAX_MESSAGE_BYTES",
    "REQUESTS",
    "EVENTS",
    "Message",
    "Request",
    "Event",
    # requests
    "Hello",
    "Ping",
    "DeltaAck",
    "ChatSend",
    "ChatAbort",
    "ChatReconnect",
    "TokensCount",
    "ImageSize",
    "ResumeFrom",
    # events
    "Ready",
    "Pong",
    "ErrorEvent",
    "TokensCounted",
    "ImageSized",
    "Notice",
    "ChatPrepared",
    "ChatWait",
    "ChatRetry",
    "ChatDelta",
    "ChatStall",
    "ChatStallCleared",
    "ChatStreamed",
    "ChatReconnecting",
    "ChatDone",
    "ChatError",
    # functions
    "parse_request",
    "encode",
]

PROTOCOL_VERSION = 2
#: Versions a receiver takes: this one and the one before it, for one version.
ACCEPTED_VERSIONS = (1, 2)
#: Events renamed in this version, with their name in the version before: a peer that
#: speaks that version is sent the old name (bridge/PROTOCOL.md, "Versions").
RENAMED_EVENTS = {"chat.stall.cleared": "chat.resume"}

#: A message larger than this, in bytes of UTF-8, is refused, whatever its type (a long
#: conversation with a long system prompt fits easily; a runaway host does not get to
#: exhaust memory). The page counts the same way (js/link/protocol.js is generated from
#: this module: gateway/build/protocol_js.py).
MAX_MESSAGE_BYTES = 8 * 1024 * 1024

JSON = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """What every message has: its type (the class's `TYPE`) and an optional `id`."""

    TYPE: ClassVar[str] = ""
    id: str | None = None


class Request(Message):
    """A message the core accepts (page → core)."""

    __slots__ = ()

    @classmethod
    def from_fields(cls, msg: JSON) -> "Request":
        """The typed request from a message whose envelope is valid; raises
        `InvalidMessage` saying which field is wrong. Types with fields override it."""
        return cls(id=msg.get("id"))


class Event(Message):
    """A message the core sends (core → page)."""

    __slots__ = ()

    #: Fields left out of the JSON when empty (None, "", an empty list).
    OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset()
    _FIELDS: ClassVar[tuple[tuple[str, bool], ...]] = ()

    def to_dict(self) -> JSON:
        """The JSON object: `v`, `type`, `id` (when set), then the fields."""
        out: JSON = {"v": PROTOCOL_VERSION, "type": self.TYPE}
        if self.id is not None:
            out["id"] = self.id
        for name, omit_empty in self._FIELDS:
            value = getattr(self, name)
            if not (omit_empty and not value):
                out[name] = value
        return out


#: Request types by wire name.
REQUESTS: dict[str, type[Request]] = {}
#: Event types by wire name.
EVENTS: dict[str, type[Event]] = {}

_M = TypeVar("_M", bound=Message)


@dataclass_transform(frozen_default=True, kw_only_default=True)
def _message(name: str) -> Callable[[type[_M]], type[_M]]:
    """Make a class a frozen message dataclass registered as `name`."""

    def register(cls: type[_M]) -> type[_M]:
        cls = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(cls)
        cls.TYPE = name
        if issubclass(cls, Event):
            cls._FIELDS = tuple((f.name, f.name in cls.OMIT_EMPTY) for f in dataclasses.fields(cls) if f.name != "id")
            registry: dict[str, Any] = EVENTS
        else:
            registry = REQUESTS
        if name in registry:
            raise RuntimeError(f"message type {name!r} is defined twice")
        registry[name] = cls
        return cls

    return register


# ---- requests (page → core) ----------------------------------------------------------


@_message("hello")
class Hello(Request):
    """The page is listening; the core answers `ready`. `flow`: delta flow control."""

    flow: bool = False

    @classmethod
    def from_fields(cls, msg: JSON) -> "Hello":
        return cls(id=msg.get("id"), flow=msg.get("flow") is True)


@_message("ping")
class Ping(Request):
    """Answered with `pong`."""


@_message("delta.ack")
class DeltaAck(Request):
    """The page took the last `chat.delta` (only with flow control)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ResumeFrom:
    """`chat.send.resume`: take up an answer whose stream a firsttoken gateway still
    runs (`stream`, from `chat.stream`), after event `after` (the last one the page
    painted, from `chat.delta.event`); `text` is what the page shows of it so far;
    `thinking`: the page shows reasoning and no answer text yet, so a model that thinks
    inline (`<think>` in Chat Completions content) is taken up inside its reasoning, not
    as answer. Nothing is prepared and nothing is sent again: the prompt was billed once."""

    stream: str
    after: int
    text: str
    thinking: bool = False

    #: Longest stream id taken (the gateway's are about 30 characters).
    MAX_STREAM_ID = 128

    @classmethod
    def from_field(cls, value: Any) -> "ResumeFrom":
        if not isinstance(value, dict):
            raise InvalidMessage("'resume' must be an object")
        stream, after, text = value.get("stream"), value.get("after", 0), value.get("text", "")
        if not isinstance(stream, str) or not 0 < len(stream) <= cls.MAX_STREAM_ID or not stream.isascii():
            raise InvalidMessage("'resume.stream' must be a stream id")
        if type(after) is not int or after < 0:
            raise InvalidMessage("'resume.after' must be a non-negative integer")
        if not isinstance(text, str):
            raise InvalidMessage("'resume.text' must be a string")
        thinking = value.get("thinking", False)
        if type(thinking) is not bool:
            raise InvalidMessage("'resume.thinking' must be a boolean")
        return cls(stream=stream, after=after, text=text, thinking=thinking)


@_message("chat.send")
class ChatSend(Request):
    """Send a conversation; answered by `chat.prepared`, `chat.delta`*, then `chat.done`
    or `chat.error` (with `chat.wait`, `chat.retry`, `chat.stream`, `chat.reconnecting`
    and `notice` as they happen). With `resume`, take up an answer already streaming on
    the gateway instead (no `chat.prepared`)."""

    id: str
    messages: list[JSON]
    settings: ChatSettings
    resume: ResumeFrom | None = None

    @classmethod
    def from_fields(cls, msg: JSON) -> "ChatSend":
        resume = msg.get("resume")
        return cls(id=msg["id"], messages=_messages(msg), settings=_settings(msg),
                   resume=None if resume is None else ResumeFrom.from_field(resume))


@_message("chat.abort")
class ChatAbort(Request):
    """Stop the running `chat.send` with the same `id` (and its stream on the gateway)."""

    id: str


@_message("chat.reconnect")
class ChatReconnect(Request):
    """The connection of the running `chat.send` with the same `id` may be dead (the
    page was frozen, the device came back online): resume its stream now."""

    id: str


@_message("tokens.count")
class TokensCount(Request):
    """Count a conversation (the composer's live count); answered by `tokens.counted`."""

    messages: list[JSON]
    settings: ChatSettings

    @classmethod
    def from_fields(cls, msg: JSON) -> "TokensCount":
        return cls(id=msg.get("id"), messages=_messages(msg), settings=_settings(msg))


@_message("image.size")
class ImageSize(Request):
    """The size `model` keeps of a `width` × `height` image sent at `detail`, asked by the
    page before it resizes a photo (js/images/shrink.js); answered by `image.sized`."""

    model: str
    width: int
    height: int
    detail: str | None = None

    #: Larger sides are refused: no image format the providers take declares more
    #: (PNG's 2^31-1 aside, which no decoder would hold).
    MAX_SIDE = 1 << 20

    @classmethod
    def from_fields(cls, msg: JSON) -> "ImageSize":
        model, detail = msg.get("model"), msg.get("detail")
        if not isinstance(model, str):
            raise InvalidMessage("'image.size' needs a string 'model'")
        sides = {}
        for name in ("width", "height"):
            value = msg.get(name)
            if type(value) is not int or not 0 < value <= cls.MAX_SIDE:
                raise InvalidMessage(f"'image.size' needs '{name}', a whole number of pixels from 1 to {cls.MAX_SIDE}")
            sides[name] = value
        if detail is not None and not isinstance(detail, str):
            raise InvalidMessage("'detail' must be a string")
        return cls(id=msg.get("id"), model=model, detail=detail, **sides)


def _messages(msg: JSON) -> list[JSON]:
    messages = msg.get("messages")
    if not isinstance(messages, list):
        raise InvalidMessage(f"'{msg['type']}' needs 'messages' of type list")
    if not messages:
        raise InvalidMessage("'messages' is empty")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise InvalidMessage(f"messages[{i}] needs a string 'role'")
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise InvalidMessage(f"messages[{i}].content must be a string, an array or null")
    return messages


def _settings(msg: JSON) -> ChatSettings:
    settings = msg.get("settings")
    if not isinstance(settings, dict):
        raise InvalidMessage(f"'{msg['type']}' needs 'settings' of type dict")
    # Lenient within the object: a value of the wrong type is taken as not set.
    return ChatSettings.from_dict(settings)


def parse_request(raw: str | JSON) -> Request:
    """Validate one incoming request; raise `InvalidMessage` saying what is wrong."""
    if isinstance(raw, str):
        # A character is 1 to 4 bytes of UTF-8, so only a long text needs encoding. A lone
        # surrogate counts 3, as the page's TextEncoder writes it (U+FFFD).
        if len(raw) * 4 > MAX_MESSAGE_BYTES and len(raw.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
            raise InvalidMessage(f"message is larger than {MAX_MESSAGE_BYTES} bytes")
        try:
            msg = json.loads(raw)
        except (ValueError, RecursionError):
            raise InvalidMessage("message is not valid JSON") from None
    else:
        msg = raw
    if not isinstance(msg, dict):
        raise InvalidMessage("message must be a JSON object")
    kind = msg.get("type")
    if not isinstance(kind, str):
        raise InvalidMessage("message has no string 'type'")
    version = msg.get("v", PROTOCOL_VERSION)
    # `True == 1` in Python: a boolean is no version.
    if isinstance(version, bool) or version not in ACCEPTED_VERSIONS:
        raise InvalidMessage(f"unsupported protocol version {version!r}; this core speaks {PROTOCOL_VERSION}"
                             f" (and {ACCEPTED_VERSIONS[0]})")
    cls = REQUESTS.get(kind)
    if cls is None:
        raise InvalidMessage(f"unknown message type {kind[:60]!r}")
    request_id = msg.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise InvalidMessage("'id' must be a string")
    if kind.startswith("chat.") and not request_id:
        raise InvalidMessage(f"'{kind}' needs an 'id'")
    return cls.from_fields(msg)


# ---- events (core → page) ------------------------------------------------------------


@_message("ready")
class Ready(Event):
    """The answer to `hello`: the core is up."""

    protocol: int
    versions: JSON
    boot: JSON


@_message("pong")
class Pong(Event):
    """The answer to `ping`: the core's clock (ms since the epoch)."""

    t: float


@_message("error")
class ErrorEvent(Event):
    """A message that could not be handled (`invalid_message`), or a bug (`internal`)."""

    error: JSON


@_message("tokens.counted")
class TokensCounted(Event):
    """The answer to `tokens.count`: the count of what a send would carry (compressed
    and fitted, as `chat.prepared.prompt_tokens`), beside the count as written."""

    tokens: int
    budget: int
    exact: bool
    uncompressed: int
    calibrated: int
    dropped: list[int]


@_message("image.sized")
class ImageSized(Event):
    """The answer to `image.size`: the `width` × `height` the model keeps (the image
    resized to it costs what the original does: `firsttoken.tokens.image_target_size`),
    its `tokens`, and whether that count is `exact` (`tokens.image_tokens`)."""

    width: int
    height: int
    tokens: int
    exact: bool


@_message("notice")
class Notice(Event):
    """Something the user should know that is not an error, beside the request during
    which it happened (e.g. `cache_degraded`: the prompt cache fell back to memory)."""

    OMIT_EMPTY = frozenset({"reason", "store"})

    code: str
    message: str
    reason: str | None = None
    store: str | None = None


@_message("chat.prepared")
class ChatPrepared(Event):
    """What was done to the conversation before it left: compression, count, fit, cache."""

    OMIT_EMPTY = frozenset({"cache"})

    compression: JSON | None
    saved: list[int | None]
    saved_unit: str
    budget: int
    window_known: bool
    prompt_tokens: int | None
    exact: bool
    dropped: list[int]
    truncated: list[JSON]
    cache: JSON | None = None
    prepare_ms: float
    request_bytes: int
    images_dropped: int = 0


@_message("chat.wait")
class ChatWait(Event):
    """The request waits for an exhausted rate-limit window before it is sent."""

    wait_s: float
    reason: str
    quota: JSON


@_message("chat.retry")
class ChatRetry(Event):
    """An attempt failed before any text arrived; the request is sent again after `wait_s`."""

    attempt: int
    status: int | None
    wait_s: float
    error: JSON
    quota: JSON


@_message("chat.delta")
class ChatDelta(Event):
    """Answer text (and reasoning) from one network chunk, or several merged (flow control)."""

    OMIT_EMPTY = frozenset({"reasoning", "stamps", "event"})

    seq: int
    text: str
    t: float
    reasoning: str = ""
    stamps: Sequence[float] = ()
    #: The last stream event this text completes (a resumable stream's `id`; 0: none):
    #: the page keeps it with the text, and a resume asks for what comes after it.
    event: int = 0


@_message("chat.stall")
class ChatStall(Event):
    """No text (answer or reasoning) has arrived for `waiting_s` seconds (since `since`,
    core clock ms); sent when the notice threshold passes, then once per whole second
    while it lasts. `connected`: bytes (a keep-alive, the headers) came within it: the
    server is there and its model is thinking (`firsttoken.stall`)."""

    OMIT_EMPTY = frozenset({"connected"})

    since: float
    waiting_s: int
    timeout_s: float
    connected: bool = False


@_message("chat.stall.cleared")
class ChatStallCleared(Event):
    """Text arrives again after a `chat.stall`, which lasted `stalled_s` seconds. (In
    version 1, `chat.resume`: `RENAMED_EVENTS`.)"""

    stalled_s: float


@_message("chat.stream")
class ChatStreamed(Event):
    """The answer runs on the gateway as resumable stream `stream`
    (`firsttoken.stream.resume`): if the connection is lost, it goes on there.
    `status_url` and `client` (the `x-firsttoken-client` id it belongs to) let a native
    host poll its status while its WebView is suspended."""

    OMIT_EMPTY = frozenset({"client"})

    stream: str
    status_url: str
    client: str = ""


@_message("chat.reconnecting")
class ChatReconnecting(Event):
    """The answer's connection was lost (`reason`: an error code); its stream is taken
    up again after event `after` in `wait_s` seconds, or at once on `chat.reconnect`."""

    after: int
    attempt: int
    wait_s: float
    reason: str


@_message("chat.done")
class ChatDone(Event):
    """The answer is complete. Its text is what the deltas carried: it is not repeated.
    `replay`: `{"api", "model", "items"}`, the opaque parts of its reasoning that go
    back to the same API and model on later turns (`firsttoken.replay`); left out when
    there are none."""

    OMIT_EMPTY = frozenset({"replay"})

    finish_reason: str | None
    usage: JSON | None
    timings: JSON
    quota: JSON
    attempts: int
    prompt: JSON
    request_bytes: int
    replay: JSON | None = None


@_message("chat.error")
class ChatError(Event):
    """The request ended without a complete answer; `error.partial` is what arrived."""

    error: JSON
    timings: JSON
    quota: JSON


def encode(event: Event) -> str:
    """One outgoing event as JSON text."""
    return json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":"))
