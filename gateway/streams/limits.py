"""The bounds of resumable streams (`--resume-*` flags), in one frozen value."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..options import option
from .events import DEFAULT_MAX_BLOCK_BYTES

_SECTION = "resumable streams"

__all__ = ["ResumeLimits"]


@dataclass(frozen=True, slots=True)
class ResumeLimits:
    #: (And its status for a poll.)
    ttl_s: float = field(default=600.0, metadata=option(
        "--resume-ttl-s", "seconds an ended stream's events are kept for a resume", section=_SECTION))
    max_s: float = field(default=900.0, metadata=option(
        "--resume-max-s", "seconds a generation may run before it is stopped, as a cancel", section=_SECTION))
    stream_bytes: int = field(default=8 * 1024 * 1024, metadata=option(
        "--resume-stream-bytes", "bytes of events one stream may hold; past it the answer stops and the stream "
        "fails with a stream_too_large error event", section=_SECTION))
    streams_per_client: int = field(default=16, metadata=option(
        "--resume-streams-per-client", "streams kept per client, live and ended; a new one drops the oldest ended "
        "first, and is served without resume when all are live", section=_SECTION))
    #: Events plus bookkeeping. With `--redis` only live streams are held here; Redis
    #: keeps the rest, bounded by its `maxmemory` (every key has a TTL, so a volatile-*
    #: policy can drop them).
    total_bytes: int = field(default=256 * 1024 * 1024, metadata=option(
        "--resume-total-bytes", "bytes all streams may hold in this process's memory (with --redis, the live ones); "
        "a new stream drops the oldest ended first, and is served without resume if still full", section=_SECTION))
    #: The largest single event block taken from a source (events.EventSplitter).
    event_bytes: int = DEFAULT_MAX_BLOCK_BYTES

    def __post_init__(self) -> None:
        if not (self.ttl_s > 0 and self.max_s > 0):
            raise ValueError("ttl_s and max_s must be positive")
        if min(self.stream_bytes, self.streams_per_client, self.total_bytes, self.event_bytes) < 1:
            raise ValueError("stream_bytes, streams_per_client, total_bytes and event_bytes must be positive")
