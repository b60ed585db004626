"""Resumable streams: the wire names a firsttoken gateway and its clients share.

A firsttoken gateway runs a firsttoken client's chat completion apart from the
connection that asked for it (gateway/streams/), names it in the response header
`x-firsttoken-stream`, and numbers every SSE event (`id: n`, from 1). A client whose
connection was lost (the phone went offline, the page was frozen or reloaded) asks for
the events after the last one it took, instead of sending the prompt again: the prompt
is billed once, and the answer goes on where it stopped (bridge/PROTOCOL.md, "Resumable
streams"). Defined once here; the gateway imports them. Pure: no I/O.
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import quote

__all__ = [
    "STREAM_HEADER",
    "GONE_CODES",
    "events_url",
    "status_url",
    "cancel_url",
    "stream_id_of",
]

#: The response header naming a resumable stream.
STREAM_HEADER = "x-firsttoken-stream"

#: A resume answered with one of these error codes cannot succeed later either: the
#: stream is unknown (expired, a restarted gateway, another client's), was cancelled, or
#: does not have the events asked for.
GONE_CODES = frozenset({"stream_not_found", "stream_cancelled", "after_out_of_range", "invalid_after"})


def _stream(base_url: str, stream_id: str) -> str:
    return f"{base_url.rstrip('/')}/streams/{quote(stream_id, safe='')}"


def events_url(base_url: str, stream_id: str, after: int) -> str:
    """The stream's events after number `after`: replayed, then followed live."""
    return f"{_stream(base_url, stream_id)}/events?after={int(after)}"


def status_url(base_url: str, stream_id: str) -> str:
    """The stream's status (JSON): state, events and characters so far, finish reason."""
    return _stream(base_url, stream_id)


def cancel_url(base_url: str, stream_id: str) -> str:
    """POST: stop the generation (the gateway aborts its upstream request)."""
    return f"{_stream(base_url, stream_id)}/cancel"


def stream_id_of(headers: Mapping[str, str]) -> str | None:
    """The stream a response names, if any (header names in any case)."""
    for key, value in headers.items():
        if key.lower() == STREAM_HEADER:
            value = value.strip()
            # Bounded and plain: it goes into a URL path and into the page's storage.
            if 0 < len(value) <= 128 and value.isascii() and value.isprintable() and " " not in value:
                return value
            return None
    return None
