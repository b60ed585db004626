"""The generation: a source's answer run apart from any client's connection.

A source is the byte stream of an answer (the built-in model's `stream`, or the
upstream relay after redaction) and, for an upstream, a `close` that releases its
HTTP response. `start` runs it in a task of its own that splits it into events and
appends them to the stream's log (`log.StreamLog`); no client is ever awaited there,
so a slow or vanished reader slows nothing.

Stopped from outside with `stop(log, reason)`: the task is cancelled, which raises in
the source where it waits, and then `close` runs, which closes the upstream's
connection: the upstream sees the request aborted, as it would have seen a client
hang up before streams were resumable, and stops generating (and billing). Reasons:
a cancel (the route, here or through Redis from another process), `max_s` reached
(as a cancel), or the gateway shutting down with nobody reading (failed, with an
error event saying so).

How it ends, as the stream's status: the source ends ("completed", or "failed" if it
sent an error event), the source raises ("failed"; the exception is kept for the
POST's own response), an event or the stream outgrows its cap ("failed", after an
error event `event_too_large` / `stream_too_large`), or it is stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import AsyncIterator, Awaitable, Callable

from .errors import EventTooLarge, StreamTooLarge
from .events import EventSplitter, error_event
from .limits import ResumeLimits
from .log import CANCELLED, COMPLETED, FAILED, StreamLog

__all__ = ["STOP_CANCEL", "STOP_EXPIRED", "STOP_SHUTDOWN", "Close", "start", "stop"]

log_ = logging.getLogger("firsttoken.gateway.streams")

STOP_CANCEL = "cancel"
STOP_EXPIRED = "expired"
STOP_SHUTDOWN = "shutdown"

Close = Callable[[], Awaitable[None]]


def start(
    log: StreamLog,
    source: AsyncIterator[bytes],
    close: Close | None,
    limits: ResumeLimits,
    *,
    on_end: Callable[[StreamLog], None],
    wall: Callable[[], float] = time.time,
) -> None:
    """Run `source` into `log` in a task of its own, stopped after `limits.max_s`.
    `on_end(log)` runs once the log has ended (before `close` is awaited)."""
    loop = asyncio.get_running_loop()
    log.task = loop.create_task(_generate(log, source, close, limits.event_bytes, on_end, wall))
    log.timer = loop.call_later(limits.max_s, stop, log, STOP_EXPIRED)


def stop(log: StreamLog, reason: str) -> bool:
    """Stop `log`'s generation for `reason`; False if it was not running."""
    task = log.task
    if not log.live or task is None or task.done():
        return False
    if log.stop_reason is None:
        log.stop_reason = reason
    task.cancel()
    return True


async def _generate(
    log: StreamLog,
    source: AsyncIterator[bytes],
    close: Close | None,
    event_bytes: int,
    on_end: Callable[[StreamLog], None],
    wall: Callable[[], float],
) -> None:
    splitter = EventSplitter(event_bytes)
    status = FAILED
    try:
        async for chunk in source:
            blocks = splitter.feed(chunk)
            if blocks:
                log.append(blocks)
        status = FAILED if log.error_seen else COMPLETED
    except EventTooLarge as exc:
        try:
            if exc.blocks:
                log.append(exc.blocks)
        except StreamTooLarge:
            pass
        log.append_last(error_event(exc.code, f"The answer held an event of more than {exc.limit} bytes.", api=log.api))
    except StreamTooLarge as exc:
        why = "the gateway's buffer for resumable streams is full" if exc.gateway_full else f"over {exc.limit} bytes"
        log.append_last(error_event(exc.code, f"The answer was stopped: {why}.", api=log.api))
    except asyncio.CancelledError:
        if log.stop_reason is None:
            raise  # not ours to stop (the loop is closing): status stays failed
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        if log.stop_reason == STOP_SHUTDOWN:
            log.append_last(error_event("gateway_shutdown", "The gateway stopped before the answer was complete.",
                                            api=log.api))
        else:
            status = CANCELLED
    except Exception as exc:  # noqa: BLE001 - whatever the source raised fails the stream
        log.failure = exc
    finally:
        if log.timer is not None:
            log.timer.cancel()
        log.end(status, wall())
        on_end(log)
        await _close(source, close)


async def _close(source: AsyncIterator[bytes], close: Close | None) -> None:
    """Finish the source and release what it holds, whatever happens meanwhile: this is
    what aborts an upstream request."""
    aclose = getattr(source, "aclose", None)
    for step in (aclose, close):
        if step is None:
            continue
        try:
            await step()
        except BaseException as exc:  # noqa: BLE001 - a broken source must not stop the next step
            log_.debug("closing a stream's source: %s", type(exc).__name__)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
