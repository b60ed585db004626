"""The one error tree of firsttoken.

Every error firsttoken raises is a `FirstTokenError`. Foreign errors (a `JsException`
from fetch, an IndexedDB `DOMException`, an `OSError`) are translated into this tree
at the adapter boundary, in one place each, never deeper.

    FirstTokenError
    ├── RemoteProtocolError          the peer (server, stream) broke a protocol
    │   ├── SSEError                 the byte stream is not acceptable SSE
    │   │   └── SSEBufferOverflow    a line or event passed its bound
    │   └── StreamError              the answer's stream is malformed (any dialect)
    │       ├── InvalidChunk         data that is not JSON, or not a chunk or event
    │       ├── UpstreamError        an error event or payload (mid-stream or as a body)
    │       ├── TruncatedStream      the stream ended before its end ([DONE], message_stop, …)
    │       └── ResponseTooLarge     the assembled answer passed its bound
    ├── HTTPStatusError              a non-2xx answer (status, rate-limit headers)
    ├── TransportError               the network failed (connect, reset, timeout)
    │   ├── StallTimeout             the server sent nothing for the stall limit
    │   └── Offline                  it failed while the device says it is offline
    ├── StreamGone                   a lost stream cannot be resumed: the gateway no longer has it
    ├── Aborted                      the user (or the page) stopped the request
    ├── LocalProtocolError           we were asked to do something invalid
    │   ├── InvalidMessage           a bridge/protocol message that does not validate
    │   ├── ContextBudgetExceeded    what must be sent does not fit the token budget
    │   └── InvalidImage             an image whose header does not read (not an image, truncated, corrupt)
    │       └── ImageTooLarge        an image declaring more pixels than may be decoded (a decompression bomb)
    ├── TokenizerError               unknown encoding, missing or corrupt BPE data
    └── CacheError                   storage failed or returned data that does not verify
        ├── CacheCorrupt             a record did not verify (not a store failure)
        ├── CacheUnavailable         storage cannot be opened or used (private mode, …)
        │   └── CacheTimeout         an operation did not finish in time
        ├── CacheQuotaExceeded       a write hit the storage quota
        ├── CacheConnectionLost      the connection closed under us (reopened once first)
        └── CacheVersionConflict     another tab opened a newer schema, or blocked ours

Errors that end a reply carry `partial`: the text received so far, so that nothing the
user already saw is lost (see `partial`).
"""

from __future__ import annotations

__all__ = [
    "FirstTokenError",
    "RemoteProtocolError",
    "SSEError",
    "SSEBufferOverflow",
    "StreamError",
    "InvalidChunk",
    "UpstreamError",
    "TruncatedStream",
    "ResponseTooLarge",
    "HTTPStatusError",
    "TransportError",
    "StallTimeout",
    "Offline",
    "StreamGone",
    "Aborted",
    "LocalProtocolError",
    "InvalidMessage",
    "ContextBudgetExceeded",
    "InvalidImage",
    "ImageTooLarge",
    "TokenizerError",
    "CacheError",
    "CacheCorrupt",
    "CacheUnavailable",
    "CacheTimeout",
    "CacheQuotaExceeded",
    "CacheConnectionLost",
    "CacheVersionConflict",
]


class FirstTokenError(Exception):
    """Base of every firsttoken error.

    `code` is a stable, machine-readable name sent over the message protocol;
    `partial` is the answer text received before the error (empty if none).
    """

    code = "error"

    def __init__(self, message: str = "", *, partial: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.partial = partial

    def to_dict(self) -> dict[str, object]:
        """The JSON form used by the message protocol's `error` event."""
        return {"code": self.code, "message": self.message, "partial": self.partial}


class RemoteProtocolError(FirstTokenError):
    """The remote side sent something the protocol does not allow."""

    code = "remote_protocol_error"


class SSEError(RemoteProtocolError):
    code = "sse_error"


class SSEBufferOverflow(SSEError):
    """A line or an event grew past its bound (`limit`, in bytes)."""

    code = "sse_buffer_overflow"

    def __init__(self, message: str = "", *, limit: int = 0, partial: str = "") -> None:
        super().__init__(message, partial=partial)
        self.limit = limit


class StreamError(RemoteProtocolError):
    code = "stream_error"


class InvalidChunk(StreamError):
    """A data payload that is not JSON, or not shaped like a chunk or event of its
    dialect (a chat-completion chunk, a Responses or Messages event)."""

    code = "invalid_chunk"


class UpstreamError(StreamError):
    """The server reported an error inside the stream or as the body.

    `error` is the server's own error object (`{"message", "type", "code", ...}`).
    `status` is the HTTP status the error stands for when its type says so (Anthropic's
    in-stream `overloaded_error` is its HTTP 529, `api_error` a 500; OpenAI Responses'
    `server_error` a 500), so that one arriving before any text is retried as that
    status would be; None when nothing says.
    """

    code = "upstream_error"

    def __init__(
        self, message: str = "", *, error: dict | None = None, status: int | None = None, partial: str = ""
    ) -> None:
        super().__init__(message, partial=partial)
        self.error = error or {}
        self.status = status

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "error": self.error, "status": self.status}


class TruncatedStream(StreamError):
    """The stream ended before its end (`[DONE]` or a finish_reason; a Responses
    stream's `response.completed` or `.incomplete`; a Messages stream's
    `message_stop`): the answer may be cut."""

    code = "truncated"


class ResponseTooLarge(StreamError):
    """The assembled answer (text and tool-call arguments) passed `limit` characters."""

    code = "response_too_large"

    def __init__(self, message: str = "", *, limit: int = 0, partial: str = "") -> None:
        super().__init__(message, partial=partial)
        self.limit = limit

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "limit": self.limit}


class HTTPStatusError(FirstTokenError):
    """A non-2xx response. `retry_after_s` is set when the server said when to retry."""

    code = "http_status"

    def __init__(
        self,
        message: str = "",
        *,
        status: int,
        error: dict | None = None,
        retry_after_s: float | None = None,
        headers: dict[str, str] | None = None,
        partial: str = "",
    ) -> None:
        super().__init__(message, partial=partial)
        self.status = status
        self.error = error or {}
        self.retry_after_s = retry_after_s
        #: The response headers (rate-limit and retry hints), for the governor.
        self.headers = headers or {}

    def to_dict(self) -> dict[str, object]:
        return {
            **super().to_dict(),
            "status": self.status,
            "error": self.error,
            "retry_after_s": self.retry_after_s,
        }


class TransportError(FirstTokenError):
    code = "network"


class StallTimeout(TransportError):
    """No byte arrived for `timeout_s` seconds (settings `stall_timeout_s`), before the
    first byte or mid-stream: the request was ended (`firsttoken.stall`)."""

    code = "timeout"

    def __init__(self, message: str = "", *, timeout_s: float, partial: str = "") -> None:
        super().__init__(message, partial=partial)
        self.timeout_s = timeout_s

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "timeout_s": self.timeout_s}


class Offline(TransportError):
    """The request failed while the device reports no network (`navigator.onLine` false,
    read by the adapter at the failure). Never retried: a retry spent offline fails the
    same way and costs the attempts the governor allows for when the network is back;
    the page keeps the prompt until the `online` event instead (README, "Offline")."""

    code = "offline"


class StreamGone(FirstTokenError):
    """The answer's stream was lost and the gateway no longer has it to resume (it
    expired, the gateway restarted, it was cancelled): the answer ends here, with what
    arrived, and only the user's Retry sends the prompt again (bridge/PROTOCOL.md,
    "Resumable streams"). `status` is the gateway's answer to the resume (404, 409,
    400), or None when it could not be reached in time."""

    code = "stream_gone"

    def __init__(self, message: str = "", *, status: int | None = None, partial: str = "") -> None:
        super().__init__(message, partial=partial)
        self.status = status

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "status": self.status}


class Aborted(FirstTokenError):
    code = "aborted"


class LocalProtocolError(FirstTokenError):
    code = "local_protocol_error"


class InvalidMessage(LocalProtocolError):
    code = "invalid_message"


class ContextBudgetExceeded(LocalProtocolError):
    """The messages that may not be dropped (system messages, tool schemas, the newest
    user message cut to its minimum) need `required` tokens; only `available` are free."""

    code = "context_budget_exceeded"

    def __init__(
        self, message: str = "", *, required: int, available: int, partial: str = ""
    ) -> None:
        super().__init__(message, partial=partial)
        self.required = required
        self.available = available

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "required": self.required, "available": self.available}


class InvalidImage(LocalProtocolError):
    """An image part whose bytes do not read as a PNG, JPEG, WebP or GIF header
    (`firsttoken.image_header`): not an image, cut short, or corrupt. `format` is the
    format the bytes started as, when they got that far ("png", …), else None."""

    code = "invalid_image"

    def __init__(self, message: str = "", *, format: str | None = None, partial: str = "") -> None:
        super().__init__(message, partial=partial)
        self.format = format

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "format": self.format}


class ImageTooLarge(InvalidImage):
    """An image whose header declares `width` × `height` pixels, more than `limit`: a
    small file can declare gigapixels (a decompression bomb), so it is refused from its
    header, never decoded."""

    code = "image_too_large"

    def __init__(
        self, message: str = "", *, width: int, height: int, limit: int, format: str | None = None, partial: str = ""
    ) -> None:
        super().__init__(message, format=format, partial=partial)
        self.width = width
        self.height = height
        self.limit = limit

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "width": self.width, "height": self.height, "limit": self.limit}


class TokenizerError(FirstTokenError):
    code = "tokenizer_error"


class CacheError(FirstTokenError):
    code = "cache_error"


# The cache's errors (`firsttoken.cache`): a store adapter translates its backend's
# failures into these, in one place each (`firsttoken.browser.indexeddb`); `Cache`
# falls back to memory on any but `CacheCorrupt`, and its notice names the `code`.


class CacheCorrupt(CacheError):
    """A record did not verify against its hashes, or is not an entry at all."""

    code = "cache_corrupt"


class CacheUnavailable(CacheError):
    """The store cannot be opened or used (e.g. IndexedDB in a private window)."""

    code = "cache_unavailable"


class CacheTimeout(CacheUnavailable):
    code = "cache_timeout"


class CacheQuotaExceeded(CacheError):
    code = "cache_quota_exceeded"


class CacheConnectionLost(CacheError):
    """The connection was closed under us (WebKit does so when an app is backgrounded)."""

    code = "cache_connection_lost"


class CacheVersionConflict(CacheError):
    """Another tab holds a newer schema version, or blocked our upgrade."""

    code = "cache_version_conflict"
