"""The gateway's advert: ``x-firsttoken-gateway: cache-refs=1, request-gzip=1`` on every
/v1/ answer, refusals too, which is how a client tells this gateway from any other and
learns what it takes: cache references (unless `--no-cache-refs`) and gzipped request
bodies (gateway/chat_body.py)."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from firsttoken.cache.refs import ADVERTISED, GATEWAY_HEADER, REQUEST_GZIP

__all__ = ["AdvertiseRefs"]


class AdvertiseRefs:
    """ASGI middleware: ``x-firsttoken-gateway: <capabilities>`` on every /v1/ response;
    `refs`: whether cache references are among them."""

    def __init__(self, app: ASGIApp, prefix: str = "/v1/", refs: bool = True) -> None:
        self.app = app
        self.prefix = prefix
        self.value = ", ".join([ADVERTISED, REQUEST_GZIP] if refs else [REQUEST_GZIP])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return

        async def advertise(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[GATEWAY_HEADER] = self.value
            await send(message)

        await self.app(scope, receive, advertise)
