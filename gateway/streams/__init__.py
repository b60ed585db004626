"""Resumable chat streams: an answer outlives its client's connection.

On a phone a streamed answer is cut whenever the app is backgrounded or the network
changes. For a firsttoken client (one that sends `x-firsttoken-client`), the gateway
runs each streamed answer apart from the connection, numbers its Server-Sent Events
(`id: 1`, `id: 2`, …) and keeps them, so the same client can resume after the last
event it saw, poll the answer's status, or cancel it (bridge/PROTOCOL.md, "Resumable
streams"; routes in `routes`). Every other client gets the stream exactly as before.

Each decision lives in one module:

- `events`:   event blocks split from any byte stream, numbered, read for facts (pure);
- `errors`:   the small error tree (an event or a stream over its cap);
- `limits`:   the bounds (`--resume-*`);
- `log`:      one stream's numbered events and status, and its followers' reading;
- `memory`:   this process's streams: per-client and total bounds, TTL reaping;
- `redis`:    streams shared by gateway processes through Redis (`--redis`);
- `run`:      the generation task, its stop (cancel, `max_s`, shutdown) and the
              closing of its source, which aborts an upstream request;
- `response`: the ASGI response that follows a log (the POST's keeps its ASGI call
              until the answer ends, for metering);
- `service`:  `Streams`, what the app calls: detach an answer, status, cancel, resume;
- `routes`:   the HTTP face, `GET /v1/streams/{id}[/events]`, `POST …/cancel`.
"""

from .limits import ResumeLimits
from .routes import stream_routes
from .service import STREAM_HEADER, Streams

__all__ = ["STREAM_HEADER", "ResumeLimits", "Streams", "stream_routes"]
