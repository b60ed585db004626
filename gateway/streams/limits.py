"""The bounds of resumable streams (`--resume-*` flags), in one frozen value."""

from __future__ import annotations

from dataclasses import dataclass

from .events import DEFAULT_MAX_BLOCK_BYTES

__all__ = ["ResumeLimits"]


@dataclass(frozen=True, slots=True)
class ResumeLimits:
    #: How long an ended stream's events are kept for a resume (and its status for a poll).
    ttl_s: float = 600.0
    #: A generation nobody cancels is stopped after this long, as a cancel.
    max_s: float = 900.0
    #: Bytes one stream may hold (its numbered events); past it the generation stops and
    #: the stream fails with a `stream_too_large` event.
    stream_bytes: int = 8 * 1024 * 1024
    #: Streams kept per client (live and ended); a new one drops the oldest ended first.
    streams_per_client: int = 16
    #: Bytes all streams of this process may hold in memory (events plus bookkeeping).
    #: With `--redis` only live streams are held here; Redis keeps the rest, bounded by
    #: its `maxmemory` (every key has a TTL, so a volatile-* policy can drop them).
    total_bytes: int = 256 * 1024 * 1024
    #: The largest single event block taken from a source (events.EventSplitter).
    event_bytes: int = DEFAULT_MAX_BLOCK_BYTES

    def __post_init__(self) -> None:
        if not (self.ttl_s > 0 and self.max_s > 0):
            raise ValueError("ttl_s and max_s must be positive")
        if min(self.stream_bytes, self.streams_per_client, self.total_bytes, self.event_bytes) < 1:
            raise ValueError("stream_bytes, streams_per_client, total_bytes and event_bytes must be positive")
