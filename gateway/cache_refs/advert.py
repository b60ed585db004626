"""The cache-reference advert: ``x-firsttoken-gateway: cache-refs=1`` on every /v1/
answer, refusals too, which is how a client tells this gateway from any other."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from firsttoken.cache.refs import ADVERTISED, GATEWAY_HEADER

__all__ = ["AdvertiseRefs"]


class AdvertiseRefs:
    """ASGI middleware: ``x-firsttoken-gateway: cache-refs=1`` on every /v1/ response."""

    def __init__(self, app: ASGIApp, prefix: str = "/v1/") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return

        async def advertise(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[GATEWAY_HEADER] = ADVERTISED
            await send(message)

        await self.app(scope, receive, advertise)
