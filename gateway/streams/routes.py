"""The routes of resumable streams, under /v1 (same authorization as chat):

    GET  /v1/streams/{id}/events?after=N   replay after event N, then follow (SSE)
    GET  /v1/streams/{id}                  status (JSON, "firsttoken.stream")
    POST /v1/streams/{id}/cancel           stop the generation; status after

Only the client that started a stream may use it: the same `x-firsttoken-client` id
and the same Authorization as its POST (`access.Client.owner`). Anyone else, an id
that never was, and one that expired all get the same 404, so ids cannot be probed.

Where to resume: `after` in the query, else the `Last-Event-ID` header, which an
EventSource sends by itself when it reconnects (WHATWG HTML §9.2.4, "The
`Last-Event-ID` header": the last event ID string, our event number); the query wins
when both are there, 0 when neither is. Errors are OpenAI-style objects.
"""

from __future__ import annotations

import re
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import APIError, invalid
from ..shared import SharedStateDown
from .log import CANCELLED, StreamStatus
from .service import Streams, is_stream_id, owner_of, store_down

__all__ = ["parse_after", "stream_routes"]

# Event numbers are ASCII digits (int() would also take " 7", "٧" or "7_0"); 18 of
# them stay within a 64-bit integer, far above any stream's length.
_AFTER = re.compile(r"[0-9]{1,18}\Z")


def parse_after(request: Request) -> int:
    """The event number a resume starts after (a 400 for anything but one)."""
    raw = request.query_params.get("after")
    if raw is None:
        raw = request.headers.get("last-event-id")
    if raw is None:
        return 0
    if not _AFTER.match(raw):
        raise invalid("'after' (or Last-Event-ID) must be a non-negative integer: the number of the last event received.",
                      param="after", code="invalid_after")
    return int(raw)


def not_found() -> APIError:
    return APIError(404, "No stream with that id exists for this client (it may have expired).",
                    param="id", code="stream_not_found")


def stream_routes(streams: Streams) -> list[Route]:
    """The routes; `Access` (gateway/access.py) has authorised every request to them."""

    def who(request: Request) -> tuple[str, str]:
        stream_id = request.path_params["stream_id"]
        owner = owner_of(request)
        if owner is None or not is_stream_id(stream_id):
            raise not_found()
        return stream_id, owner

    async def find(stream_id: str, owner: str) -> StreamStatus:
        try:
            status = await streams.status(stream_id, owner)
        except SharedStateDown:
            raise store_down() from None
        if status is None:
            raise not_found()
        return status

    async def events(request: Request) -> Response:
        stream_id, owner = who(request)
        after = parse_after(request)
        status = await find(stream_id, owner)
        if status.status == CANCELLED:
            raise APIError(409, "This stream was cancelled; it cannot be resumed.", code="stream_cancelled")
        if after > status.last_event:
            raise invalid(f"'after' is past the last event of this stream ({status.last_event}).",
                          param="after", code="after_out_of_range")
        return streams.resume(stream_id, owner, after)  # type: ignore[return-value]

    async def status(request: Request) -> Response:
        stream_id, owner = who(request)
        return JSONResponse((await find(stream_id, owner)).body())

    async def cancel(request: Request) -> Response:
        stream_id, owner = who(request)
        try:
            status = await streams.cancel(stream_id, owner)
        except SharedStateDown:
            raise store_down() from None
        if status is None:
            raise not_found()
        return JSONResponse(status.body())

    return [
        Route("/v1/streams/{stream_id}/events", events, methods=["GET"]),
        Route("/v1/streams/{stream_id}/cancel", cancel, methods=["POST"]),
        Route("/v1/streams/{stream_id}", status, methods=["GET"]),
    ]
