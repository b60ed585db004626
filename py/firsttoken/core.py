"""The core: protocol messages in, protocol events out. Dispatch, and nothing else.

`Core.handle` takes one raw message (JSON text), validates it (`firsttoken.protocol`)
and hands it to what does the work; events go out through `post`, given once: an
adapter whose channel changes (the page hands over a port) switches it behind `post`. It knows nothing of
workers or WebViews: `firsttoken.browser` wires it to PyScript's worker channel, tests
wire it to a list and a socket transport. Each `chat.send` runs until its answer is
complete (`firsttoken.chat`); the adapter runs each `handle` call as its own task so
that a `chat.abort` can arrive while a reply streams.

What the core holds for the session, each used by every request: the transport and
clock, one rate-limit governor per API (`firsttoken.ratelimit`), the prompt cache and
what each gateway holds of it (`firsttoken.cache`), delta pacing
(`firsttoken.pacing`), pending notices (`firsttoken.notices`), the calibration of
prompt counts (`firsttoken.tokens.Calibration`) and the preparation of conversations
with what it keeps between them (`firsttoken.prepare.preparer`).
"""

from __future__ import annotations

import platform
import sys
from typing import Any, Awaitable, Callable

from . import __version__, tokens
from .cache import Cache
from .cache.refs import GatewayRefs
from .chat import ChatRequest
from .errors import FirstTokenError, InvalidMessage
from .notices import Notices
from .pacing import DeltaPacer
from .prepare.preparer import Preparer
from .protocol import (
    PROTOCOL_VERSION,
    ChatAbort,
    ChatReconnect,
    ChatSend,
    DeltaAck,
    ErrorEvent,
    Event,
    Hello,
    ImageSize,
    ImageSized,
    Ping,
    Pong,
    Ready,
    TokensCount,
    TokensCounted,
    encode,
    parse_request,
)
from .ratelimit import Governor
from .session import Session
from .stream.client import Transport

__all__ = ["Core"]


class Core:
    """One session of the protocol: `handle` each message the page sends; events go to
    `post`. `transport` sends HTTP requests; `clock` (ms since the epoch) and `sleep`
    (seconds, as `asyncio.sleep`) are injected, so tests run on fake time. `stamps`:
    the benchmark seam (`Session.stamps`). `governor` makes one rate-limit governor
    per API; `prepare_encoder` loads a tokenizer before counting (the page's, lazily);
    `cache` keeps prepared system messages; `page_origin` is where the page came from.
    """

    def __init__(
        self,
        *,
        post: Callable[[str], Any],
        transport: Transport,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[Any]],
        boot: dict[str, Any] | None = None,
        governor: Callable[[], Governor] = Governor,
        prepare_encoder: Callable[[str], Awaitable[Any]] | None = None,
        cache: Cache | None = None,
        page_origin: str | None = None,
        stamps: Callable[[bytes], list[float]] | None = None,
    ) -> None:
        #: Where events go, as JSON text.
        self._post = post
        self.transport = transport
        #: Milliseconds since the epoch (comparable with the page's clock).
        self.clock = clock
        self.sleep = sleep
        self.boot = boot or {}
        # Prepared system messages (firsttoken.cache) and what each gateway holds of them
        # (firsttoken.cache.refs). `page_origin`: where the page came from, whose
        # gateway may be sent our client id before it has answered once.
        self.cache = cache
        self.refs = GatewayRefs(page_origin)
        self.notices = Notices()
        if cache is not None and cache.on_notice is None:
            cache.on_notice = self.notices.add
        #: Compress, count and fit, for sends and live counts alike (firsttoken.prepare).
        self.preparer = Preparer(clock=clock, notices=self.notices, cache=cache, load_encoder=prepare_encoder)
        self.calibration = tokens.Calibration()
        self.pacer = DeltaPacer(self.post_event)
        self._new_governor = governor
        self._governors: dict[str, Governor] = {}
        self._active: dict[str, ChatRequest] = {}
        #: What each chat request is given of this core (firsttoken.session).
        # The session's one clock unit is the millisecond (firsttoken.session): the
        # seconds of `sleep` are converted here, at the edge.
        self.session = Session(
            transport=transport, clock=clock, sleep=lambda ms: sleep(ms / 1000.0), post_event=self.post_event,
            pacer=self.pacer, refs=self.refs, cache=cache, calibration=self.calibration, notices=self.notices,
            governor=self.governor, prepare=self.preparer.prepare, stamps=stamps,
        )

    async def handle(self, raw: str | dict[str, Any]) -> None:
        """Handle one message. Never raises: every failure becomes an event."""
        request_id = None
        try:
            if isinstance(raw, dict):
                request_id = raw.get("id") if isinstance(raw.get("id"), str) else None
            msg = parse_request(raw)
            request_id = msg.id
            if isinstance(msg, Hello):
                self.pacer.enabled = msg.flow
                self.post_event(self._ready(msg.id))
            elif isinstance(msg, DeltaAck):
                self.pacer.ack()
            elif isinstance(msg, Ping):
                self.post_event(Pong(id=msg.id, t=self.clock()))
            elif isinstance(msg, ChatAbort):
                request = self._active.get(msg.id)
                if request is not None:
                    request.signal.abort()
            elif isinstance(msg, ChatReconnect):
                request = self._active.get(msg.id)
                if request is not None:
                    request.reconnect()
            elif isinstance(msg, ChatSend):
                await self._chat(msg)
            elif isinstance(msg, TokensCount):
                await self._count(msg)
            elif isinstance(msg, ImageSize):
                kept = tokens.image_tokens(msg.model, msg.width, msg.height, msg.detail)
                self.post_event(ImageSized(id=msg.id, width=kept.width, height=kept.height, tokens=kept.tokens,
                                           exact=kept.exact))
        except InvalidMessage as exc:
            self.post_event(ErrorEvent(id=request_id, error=exc.to_dict()))
        except Exception as exc:  # noqa: BLE001 - the core must outlive any bug
            error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}", "partial": ""}
            self.post_event(ErrorEvent(id=request_id, error=error))

    def post_event(self, event: Event) -> None:
        """Send one event to the page."""
        self._post(encode(event))

    def governor(self, base_url: str) -> Governor:
        """The rate-limit governor of one API: limits are per server (and per key, which
        a page talking to one base URL does not change mid-session)."""
        governor = self._governors.get(base_url)
        if governor is None:
            governor = self._governors[base_url] = self._new_governor()
        return governor

    def _ready(self, request_id: str | None) -> Ready:
        versions = {"firsttoken": __version__, "python": platform.python_version(), "platform": sys.platform}
        return Ready(id=request_id, protocol=PROTOCOL_VERSION, versions=versions, boot=self.boot)

    async def _chat(self, msg: ChatSend) -> None:
        if msg.id in self._active:
            raise InvalidMessage(f"request {msg.id!r} is already running")
        request = ChatRequest(self.session, msg)
        self._active[msg.id] = request
        try:
            await request.run()
        finally:
            self._active.pop(msg.id, None)

    async def _count(self, msg: TokensCount) -> None:
        """Live count for the composer (`firsttoken.prepare.preparer`), calibrated."""
        try:
            live = await self.preparer.count(msg.messages, msg.settings)
        except FirstTokenError as exc:  # e.g. an unknown compression level
            self.post_event(ErrorEvent(id=msg.id, error=exc.to_dict()))
            return
        self.post_event(TokensCounted(
            id=msg.id, tokens=live.tokens, budget=live.budget, exact=live.exact, uncompressed=live.uncompressed,
            calibrated=self.calibration.adjust(msg.settings.model, live.tokens, live.image_tokens), dropped=live.dropped,
        ))
