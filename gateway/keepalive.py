"""SSE keep-alive comments on every streamed answer that falls silent.

A reasoning model may send nothing for a minute and more (79 s over Chat Completions in
BerriAI/litellm#36992; 300 s of silence ended a client's idle timer in
AntigmaLabs/ante#186). Phones, carrier NATs and proxies drop a connection that is
silent that long, and a client cannot tell a model still thinking from a dead link. So
every `text/event-stream` response the gateway sends (the built-in model's, an
upstream's relayed, a resumable stream's and its replays) carries a comment after each
`interval_s` of silence (WHATWG HTML §9.2.6: a line starting with a colon is ignored),
`: keep-alive`.

Where it may go: an SSE comment is a line of its own, so it is written only where a line
starts.
- At an event's end (the bytes so far end with a blank line, or nothing was sent yet):
  `: keep-alive\\n\\n`, a whole block that dispatches nothing (its data is empty:
  §9.2.6, "dispatch the event", step 2) and that every SSE reader skips (the `openai`
  and `anthropic` clients' decoders, firsttoken's `sse.py`).
- Inside an event, after a line end: `: keep-alive\\n` alone, never a blank line, which
  would dispatch the event half-made.
- Inside a line, or after a CR that a LF may yet follow (§9.2.5: CRLF is one line end):
  nothing; the next interval looks again. An upstream cut in the middle of a line is
  rare (servers write whole events).

One ASGI middleware, one idea: the app's own sends and the timer's go through one lock,
so a comment never lands inside another message.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BOUNDARY_COMMENT", "KeepAlive", "LINE_COMMENT", "comment_after"]

BOUNDARY_COMMENT = b": keep-alive\n\n"
LINE_COMMENT = b": keep-alive\n"
#: The last bytes sent that decide where a comment may go.
_TAIL = 4


def comment_after(tail: bytes) -> bytes:
    """The comment that may follow a stream whose last bytes are `tail` (b"": nothing
    sent yet), or b"" where none may (see the module's docstring)."""
    if not tail or tail.endswith((b"\n\n", b"\r\n\r\n", b"\r\r", b"\n\r\n")):
        return BOUNDARY_COMMENT
    if tail.endswith(b"\n"):
        return LINE_COMMENT
    return b""


class KeepAlive:
    """Sends `: keep-alive` on an event-stream response after each `interval_s` of
    silence; 0 turns it off."""

    def __init__(self, app: ASGIApp, *, interval_s: float = 15.0) -> None:
        self.app = app
        self.interval_s = interval_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.interval_s <= 0:
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        lock = asyncio.Lock()
        state: dict[str, Any] = {"last": loop.time(), "tail": b"", "done": False, "ticker": None}

        async def tick() -> None:
            interval = self.interval_s
            while True:
                await asyncio.sleep(max(state["last"] + interval - loop.time(), 0.0))
                async with lock:
                    if state["done"]:
                        return
                    if loop.time() - state["last"] < interval:
                        continue  # the app spoke meanwhile
                    comment = comment_after(state["tail"])
                    state["last"] = loop.time()
                    if not comment:
                        continue
                    try:
                        await send({"type": "http.response.body", "body": comment, "more_body": True})
                    except Exception:  # noqa: BLE001 - the client has gone; the app learns it on its own send
                        state["done"] = True
                        return
                    state["tail"] = (state["tail"] + comment)[-_TAIL:]

        async def send_through(message: Message) -> None:
            async with lock:
                kind = message["type"]
                if kind == "http.response.start":
                    content_type = next((v for k, v in message.get("headers", ()) if k.lower() == b"content-type"), b"")
                    if content_type.lower().startswith(b"text/event-stream"):
                        state["ticker"] = asyncio.create_task(tick())
                    state["last"] = loop.time()
                elif kind == "http.response.body":
                    body = message.get("body", b"")
                    if body:  # an empty body message puts no byte on the wire: still silent
                        state["tail"] = (state["tail"] + body)[-_TAIL:]
                        state["last"] = loop.time()
                    if not message.get("more_body", False):
                        state["done"] = True
                await send(message)

        try:
            await self.app(scope, receive, send_through)
        finally:
            state["done"] = True
            ticker = state["ticker"]
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
