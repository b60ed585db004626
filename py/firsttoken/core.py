"""The core: protocol messages in, protocol events out.

`Core.handle` takes one raw message (JSON text) and answers through `post`. It knows
nothing of workers or WebViews: `firsttoken.browser` wires it to PyScript's worker
channel, tests wire it to a list and a socket transport. Each `chat.send` runs until its
answer is complete; the adapter runs each `handle` call as its own task so that a
`chat.abort` can arrive while a reply streams.
"""

from __future__ import annotations

import platform
import sys
from typing import Any, Callable

from . import __version__
from .client import AbortSignal, ChatSettings, Timings, Transport, build_request, stream_chat
from .errors import FirstTokenError, InvalidMessage
from .protocol import PROTOCOL_VERSION, encode, parse_message

__all__ = ["Core"]


class Core:
    def __init__(
        self,
        *,
        post: Callable[[str], Any],
        transport: Transport,
        clock: Callable[[], float],
        boot: dict[str, Any] | None = None,
    ) -> None:
        self.post = post
        self.transport = transport
        self.clock = clock
        self.boot = boot or {}
        self._active: dict[str, AbortSignal] = {}

    async def handle(self, raw: str | dict[str, Any]) -> None:
        """Handle one message. Never raises: every failure becomes an event."""
        request_id = None
        try:
            if isinstance(raw, dict):
                request_id = raw.get("id") if isinstance(raw.get("id"), str) else None
            msg = parse_message(raw)
            request_id = msg.get("id")
            kind = msg["type"]
            if kind == "hello":
                self.post(encode("ready", request_id, **self._hello()))
            elif kind == "ping":
                self.post(encode("pong", request_id, t=self.clock()))
            elif kind == "chat.abort":
                signal = self._active.get(request_id)  # type: ignore[arg-type]
                if signal is not None:
                    signal.abort()
            elif kind == "chat.send":
                await self._chat(msg)
        except InvalidMessage as exc:
            self.post(encode("error", request_id, error=exc.to_dict()))
        except Exception as exc:  # noqa: BLE001 - the core must outlive any bug
            error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}", "partial": ""}
            self.post(encode("error", request_id, error=error))

    def _hello(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "versions": {
                "firsttoken": __version__,
                "python": platform.python_version(),
                "platform": sys.platform,
            },
            "boot": self.boot,
        }

    async def _chat(self, msg: dict[str, Any]) -> None:
        request_id: str = msg["id"]
        if request_id in self._active:
            raise InvalidMessage(f"request {request_id!r} is already running")
        settings = ChatSettings.from_dict(msg["settings"])
        signal = AbortSignal()
        self._active[request_id] = signal
        timings = Timings()
        seq = 0

        def on_text(text: str, reasoning: str) -> None:
            nonlocal seq
            seq += 1
            fields: dict[str, Any] = {"seq": seq, "text": text, "t": self.clock()}
            if reasoning:
                fields["reasoning"] = reasoning
            self.post(encode("chat.delta", request_id, **fields))

        try:
            request = build_request(msg["messages"], settings)
            completion = await stream_chat(
                self.transport, request, abort=signal, on_text=on_text, clock=self.clock, timings=timings
            )
            self.post(
                encode(
                    "chat.done",
                    request_id,
                    finish_reason=completion.finish_reason,
                    usage=completion.usage,
                    content=completion.content,
                    timings=timings.to_dict(),
                )
            )
        except FirstTokenError as exc:
            self.post(encode("chat.error", request_id, error=exc.to_dict(), timings=timings.to_dict()))
        finally:
            self._active.pop(request_id, None)
