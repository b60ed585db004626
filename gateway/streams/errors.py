"""The errors of resumable streams, one small tree.

    StreamsError                 anything a stream's own machinery refuses
    ├── EventTooLarge            the source sent one event block over the cap (remote)
    └── StreamTooLarge           the stream outgrew its byte cap, or the gateway's (local)

Both end the generation with status "failed" and a final OpenAI-style error event
(`events.error_event`), so a follower learns why. A shared store that does not answer
is `gateway.shared.SharedStateDown`, the gateway's one type for that; the HTTP face
of everything is `gateway.errors.APIError`, made in `routes` and `service`.
"""

from __future__ import annotations

__all__ = ["EventTooLarge", "StreamTooLarge", "StreamsError"]


class StreamsError(Exception):
    """Base of the errors below."""


class EventTooLarge(StreamsError):
    """One SSE event block held more than `limit` bytes without ending (the source's
    fault: a chat chunk is a few hundred bytes)."""

    code = "event_too_large"

    def __init__(self, size: int, limit: int, blocks: list[bytes] | None = None) -> None:
        super().__init__(f"an event block of at least {size} bytes is over the limit of {limit}")
        self.size = size
        self.limit = limit
        #: Whole blocks the same chunk completed before the oversized one.
        self.blocks = blocks or []


class StreamTooLarge(StreamsError):
    """Appending would take the stream past `limit` bytes: its own cap
    (`ResumeLimits.stream_bytes`) or, with `gateway_full`, the gateway's total."""

    code = "stream_too_large"

    def __init__(self, size: int, limit: int, *, gateway_full: bool = False) -> None:
        whose = "the gateway's buffer of" if gateway_full else "the limit of"
        super().__init__(f"the stream would hold {size} bytes, over {whose} {limit}")
        self.size = size
        self.limit = limit
        self.gateway_full = gateway_full
