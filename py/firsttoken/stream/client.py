"""The chat client: one request, streamed through a transport, assembled into updates.

The client never does I/O itself. It takes a `Transport` (the worker's `fetch` in the
page, a socket in end-to-end tests, canned chunks in unit tests), builds the HTTP
request in the API dialect the settings call for (`firsttoken.stream.dialects`), feeds
the response bytes to that dialect's pure `answer.AnswerStream`, and yields
what happened as typed events (`Response`, `BytesSeen`, `Text`, then `Finished`), which
the caller (`firsttoken.chat`) watches for text, for its rate limits and for silences.
Cancellation goes through an `AbortSignal` that the transport wires to its own
mechanism (an AbortController in the browser).
"""

from __future__ import annotations

import gzip as _gzip
import json
import re
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Mapping, Protocol, Union

from ..errors import Aborted, FirstTokenError, HTTPStatusError
from ..ratelimit import parse_retry_after_headers
from ..settings import ChatSettings
from . import dialects
from .answer import AnswerStream
from .completions import ChatStream
from .resume import stream_id_of
from .types import Completion, ContentDelta, ReasoningDelta, Update

__all__ = [
    "AbortSignal",
    "BytesSeen",
    "Finished",
    "HTTPRequest",
    "HTTPResponse",
    "Response",
    "StreamEvent",
    "Text",
    "Transport",
    "Timings",
    "build_request",
    "stream_chat",
]

#: How much of an error body we read: enough for any error object, bounded all the same.
MAX_ERROR_BODY = 64 * 1024
#: A non-streaming body is bounded too (a whole answer, as JSON).
MAX_JSON_BODY = 32 * 1024 * 1024
#: Below this a gzipped body saves less than a TCP segment, and costs its 20-byte frame.
GZIP_MIN_BYTES = 1024
#: zlib's default level: within a few percent of 9's size on chat JSON, at a fraction of
#: the time (measured: about 1 ms for 20 KB on CPython).
GZIP_LEVEL = 6


class AbortSignal:
    """Cancels one request. Transports register how to cancel with `on_abort`."""

    def __init__(self) -> None:
        self.aborted = False
        self._callbacks: list[Callable[[], Any]] = []

    def on_abort(self, callback: Callable[[], Any]) -> None:
        if self.aborted:
            callback()
        else:
            self._callbacks.append(callback)

    def abort(self) -> None:
        if self.aborted:
            return
        self.aborted = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def raise_if_aborted(self, partial: str = "") -> None:
        if self.aborted:
            raise Aborted("stopped", partial=partial)


@dataclass(frozen=True, slots=True)
class HTTPRequest:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes


class HTTPResponse(Protocol):
    status: int
    headers: Mapping[str, str]

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def read(self, limit: int) -> bytes: ...


class Transport(Protocol):
    async def send(self, request: HTTPRequest, abort: AbortSignal) -> HTTPResponse: ...


def build_request(
    messages: list[dict[str, Any]],
    settings: ChatSettings,
    *,
    api: str | None = None,
    refs: Mapping[int, str] | None = None,
    headers: Mapping[str, str] | None = None,
    gateway: bool = False,
    gzip: bool = False,
    reasoning: bool = True,
) -> HTTPRequest:
    """The streaming request for `messages`, in the dialect the settings and the model
    call for (`dialects.api_for`); Chat Completions asks for usage in a final chunk.

    `refs` (message index → `sha256:…`) sends those system messages as references the
    firsttoken gateway expands (bridge/PROTOCOL.md, "Cache references"); they carry no
    text, so a server that does not know the extension refuses them loudly rather
    than answering without the system prompt. `gateway`: the server is a gateway known
    to take references. `headers` are added (the client id). `gzip`: the server takes a
    gzipped body (`GatewayRefs.takes_gzip`); one of `GZIP_MIN_BYTES` or more goes so.
    `reasoning`: ask for the settings' reasoning (False once the server refused it).
    `api`: the dialect the caller decided (the request's, the one its preparation
    counted for: `Prepared.api`); by default the settings' (`dialects.api_for`).
    """
    api = api if api is not None else dialects.api_for(settings)
    body = dialects.request_body(messages, settings, api, refs=refs, gateway=gateway, reasoning=reasoning)
    sent_headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        **dialects.request_headers(settings, api),
        **settings.headers,
        **(headers or {}),
        **dialects.credentials(settings, api),
    }
    url = settings.base_url.rstrip("/") + dialects.request_path(api)
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    if gzip and len(data) >= GZIP_MIN_BYTES:
        # mtime=0: the same body compresses to the same bytes (and a retry is the same).
        data = _gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
        sent_headers["content-encoding"] = "gzip"
    return HTTPRequest("POST", url, sent_headers, data)


@dataclass
class Timings:
    """Milliseconds on the caller's clock; None until the moment happens."""

    send: float | None = None
    headers: float | None = None
    first_byte: float | None = None
    #: The first text parsed, reasoning or answer (the first sign of thought).
    first_delta: float | None = None
    #: The first answer text parsed (after a reasoning model's thinking).
    first_text: float | None = None
    done: float | None = None
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("send", "headers", "first_byte", "first_delta", "first_text", "done", "bytes")}


async def _status_error(response: HTTPResponse, now: float) -> HTTPStatusError:
    try:
        body = await response.read(MAX_ERROR_BODY)
        error = json.loads(body).get("error")
    except Exception:  # noqa: BLE001 - an unreadable error body still is an HTTP error
        error = None
    error = error if isinstance(error, dict) else {}
    message = str(error.get("message") or f"The server answered HTTP {response.status}.")
    return HTTPStatusError(
        message,
        status=response.status,
        error=error,
        retry_after_s=parse_retry_after_headers(response.headers, now),
        headers=dict(response.headers),
    )


# ---- what one request yields ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Response:
    """The response's status and headers arrived (bytes too: the connection is alive)."""

    status: int
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class BytesSeen:
    """A network chunk arrived, text in it or not (a keep-alive comment is one): the
    connection is alive (`firsttoken.stall`'s byte clock; a `Text` is progress, its other
    clock). Comes before the chunk's `Text`."""


@dataclass(frozen=True, slots=True)
class Text:
    """Choice 0's text (and reasoning) from one network chunk. `sent_ms`: the server's
    send stamps in it; `event`: the number of the last stream event taken (0 unless the
    stream is numbered by a firsttoken gateway: `firsttoken.stream.resume`)."""

    text: str
    reasoning: str
    sent_ms: list[float]
    event: int


@dataclass(frozen=True, slots=True)
class Finished:
    """The answer is complete: the last event."""

    completion: Completion


StreamEvent = Union[Response, BytesSeen, Text, Finished]

_BYTES_SEEN = BytesSeen()

# The built-in model can stamp each chunk with the moment it was sent (`stamp=1`), so
# that benchmarks measure chunk-to-paint latency end to end. The stamps are picked out of
# the raw bytes, so the parser need not know of them; a stamp whose event is split across
# two network chunks counts with the first (on a local socket, one read holds whole events).
_SENT_STAMP = re.compile(rb'"x_firsttoken_sent_ms":\s*([0-9]{1,16}(?:\.[0-9]{1,9})?)[,}\s]')


def sent_stamps(chunk: bytes) -> list[float]:
    """The server's send stamps (ms since the epoch) in one network chunk, if any."""
    if b"x_firsttoken_sent_ms" not in chunk:  # the common case costs one scan
        return []
    return [float(m) for m in _SENT_STAMP.findall(chunk)]


def _no_stamps(chunk: bytes) -> list[float]:
    return []


def _text_of(
    updates: list[Update], clock: Callable[[], float], timings: Timings, stamps: list[float], event: int
) -> Text | None:
    """Choice 0's answer text and reasoning among `updates`, as one `Text` (None if
    neither). A chunk of reasoning only is a `Text` with empty `text`: the page paints
    reasoning from it (its first reasoning paint)."""
    content: list[str] = []
    reasoning: list[str] = []
    for update in updates:
        if isinstance(update, ContentDelta) and update.index == 0:
            content.append(update.text)
        elif isinstance(update, ReasoningDelta) and update.index == 0:
            reasoning.append(update.text)
    if not (content or reasoning):
        return None
    text = "".join(content)
    if timings.first_delta is None:
        timings.first_delta = clock()
    if text and timings.first_text is None:
        timings.first_text = timings.first_delta if not reasoning else clock()
    return Text(text, "".join(reasoning), stamps, event)


async def stream_chat(
    transport: Transport,
    request: HTTPRequest,
    *,
    abort: AbortSignal,
    clock: Callable[[], float],
    timings: Timings | None = None,
    stream: AnswerStream | None = None,
    stamps: Callable[[bytes], list[float]] | None = None,
) -> AsyncIterator[StreamEvent]:
    """Send `request` and yield what happens: `Response` once, then per network chunk
    `BytesSeen` and, when it carried text, `Text`; `Finished` with the assembled
    completion last. Errors are firsttoken errors carrying `partial`, the answer so far
    as the stream assembled it. `clock`: milliseconds since the epoch (an HTTP-date in
    `retry-after` is measured against it when the response has no `Date`). `stream`:
    what reads the answer, in the request's dialect (`dialects.stream_for`), or the
    answer this response continues (a resumed stream: `firsttoken.stream.resume`); by
    default a new chat completion. `stamps`: the benchmark seam (`sent_stamps`, set by
    whoever measures): each chunk's server send stamps, carried on its `Text`; None
    scans nothing.
    """
    read_stamps = stamps or _no_stamps
    timings = timings if timings is not None else Timings()
    timings.send = clock()
    # The answer is assembled by `stream` alone; here only what went out is counted.
    if stream is None:
        stream = ChatStream()
    else:
        stream.reconnect()
    delivered = len(stream.partial)  # characters of choice 0's text yielded as `Text`
    try:
        response = await transport.send(request, abort)
        timings.headers = clock()
        yield Response(response.status, response.headers)
        if not 200 <= response.status < 300:
            raise await _status_error(response, clock() / 1000.0)
        if stream_id_of(response.headers) is not None:
            stream.sequenced = True  # numbered events: each is taken once
        content_type = {k.lower(): v for k, v in response.headers.items()}.get("content-type", "")
        if "text/event-stream" not in content_type:
            # Some servers ignore stream=true; a JSON body is the same answer in one piece.
            body = await response.read(MAX_JSON_BODY)
            timings.first_byte = timings.first_delta = clock()
            completion = stream.parse_body(body)
            if completion.content:
                timings.first_text = timings.first_delta
            if completion.content or completion.reasoning:
                yield Text(completion.content, completion.reasoning or "", [], 0)
            timings.done = clock()
            yield Finished(completion)
            return
        async for chunk in response.chunks():
            if abort.aborted:
                raise Aborted("stopped", partial=stream.partial)
            if timings.first_byte is None:
                timings.first_byte = clock()
            timings.bytes += len(chunk)
            yield _BYTES_SEEN
            try:
                updates = stream.feed(chunk)
            except FirstTokenError:
                # Text that came in the same network chunk as an error still reaches
                # the page, so that what the server sent before failing stays on screen.
                missing = stream.partial[delivered:]
                if missing:
                    yield Text(missing, "", read_stamps(chunk), stream.last_event)
                raise
            text = _text_of(updates, clock, timings, read_stamps(chunk), stream.last_event)
            if text is not None:
                delivered += len(text.text)
                yield text
        if abort.aborted:
            raise Aborted("stopped", partial=stream.partial)
        # What the stream held back to the end (an answer's start that might have been a
        # `<think>` tag, unclosed reasoning) goes out as text before the end.
        text = _text_of(stream.finish(), clock, timings, [], stream.last_event)
        if text is not None:
            yield text
        completion = stream.close()
        timings.done = clock()
        yield Finished(completion)
    except FirstTokenError as exc:
        if abort.aborted and not isinstance(exc, Aborted):
            raise Aborted("stopped", partial=stream.partial) from exc
        if not exc.partial:
            exc.partial = stream.partial
        raise
