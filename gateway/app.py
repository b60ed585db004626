"""Composition of the gateway: routes, the backend (simulator or upstream), middleware."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import static
from .cache_refs import CLIENT_HEADER, AdvertiseRefs, RefLimits, RefStore, client_key, expand_refs, remember_system_messages
from .errors import APIError
from .headers import SecurityHeaders, content_security_policy
from .simulator import MODEL_IDS, DropConnection, SIM_HEADER, RateWindow, SimParams, Simulator
from .upstream import Upstream
from .validation import parse_chat_request, read_body

log = logging.getLogger("firsttoken.gateway")


@dataclass
class GatewayConfig:
    sim: SimParams = field(default_factory=SimParams)
    upstream: str | None = None
    upstream_key: str | None = field(default=None, repr=False)
    max_body_bytes: int = 4 * 1024 * 1024
    rpm: int = 5_000
    tpm: int = 2_000_000
    connect_src: str = "'self' https: http://localhost:* http://127.0.0.1:*"
    #: When set, /v1/* requires `Authorization: Bearer <client_key>` (a gateway of one's own).
    client_key: str | None = field(default=None, repr=False)
    frame_ancestors: str = "'self'"
    #: COOP/COEP on every response (cross-origin isolation). Off only to see the page as
    #: Android's WebView does, which is never isolated (gateway/headers.py).
    isolation: bool = True
    #: Cache references (gateway/cache_refs.py): system messages sent once, then by hash.
    cache_refs: bool = True
    ref_limits: RefLimits = field(default_factory=RefLimits)


def _default_counter():
    """Exact prompt counts when firsttoken.tokens can load its data, else a rough one."""
    try:
        from firsttoken import tokens  # type: ignore[import-not-found]

        tokens.count_chat([{"role": "user", "content": "probe"}], "gpt-4o")
        return lambda messages, model: tokens.count_chat(messages, model)
    except Exception:  # noqa: BLE001 - any failure means: fall back to the rough count
        return None


def create_app(config: GatewayConfig | None = None) -> Starlette:
    config = config or GatewayConfig()
    rate = RateWindow(config.rpm, config.tpm)
    counter = _default_counter()
    simulator = Simulator(
        config.sim, sleep=asyncio.sleep, rate=rate, **({"count_tokens": counter} if counter else {})
    )
    upstream = Upstream(config.upstream, config.upstream_key) if config.upstream else None
    refs = RefStore(config.ref_limits) if config.cache_refs else None

    def authorize(request: Request) -> None:
        if not config.client_key:
            return
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {config.client_key}".encode()):
            raise APIError(401, "Incorrect API key provided.", code="invalid_api_key")

    async def chat_completions(request: Request) -> Response:
        authorize(request)
        body = await read_body(request, config.max_body_bytes)
        client = None
        if refs is not None:
            # References become text before anything else looks at the body: validation,
            # the simulator and an upstream only ever see plain OpenAI requests.
            client = client_key(request.headers.get("authorization"), request.headers.get(CLIENT_HEADER))
            body = expand_refs(body, refs, client)
        chat = parse_chat_request(body)
        if refs is not None:
            remember_system_messages(chat.messages, refs, client)
        if upstream is not None:
            return await upstream.forward(
                "/chat/completions", body, request.headers.get("authorization"), request.headers.get(SIM_HEADER)
            )
        params = simulator.params(request.headers.get(SIM_HEADER))
        simulator.check_status(params)
        if not chat.stream:
            return JSONResponse(simulator.complete(chat, params), headers=rate.headers())
        events = simulator.stream(chat, params)
        headers = rate.headers()
        return StreamingResponse(
            events,
            media_type="text/event-stream; charset=utf-8",
            headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def models(request: Request) -> Response:
        authorize(request)
        if upstream is not None:
            return await upstream.models(request.headers.get("authorization"))
        created = int(time.time())
        data = [{"id": m, "object": "model", "created": created, "owned_by": "firsttoken"} for m in MODEL_IDS]
        return JSONResponse({"object": "list", "data": data})

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "backend": "upstream" if upstream else "simulator"})

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, APIError)
        return exc.response()

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            error = APIError(404, f"Unknown request URL: {request.method} {request.url.path}.", code="unknown_url")
        elif exc.status_code == 405:
            error = APIError(405, f"Method {request.method} is not allowed on {request.url.path}.", code="method_not_allowed")
        else:
            error = APIError(exc.status_code, str(exc.detail))
        return error.response()

    async def server_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, DropConnection):
            raise exc  # intended: the connection must break, not end cleanly
        log.exception("unhandled error on %s", request.url.path)
        return APIError(500, "The gateway hit an internal error.", type="server_error").response()

    @asynccontextmanager
    async def lifespan(app: Starlette):
        try:
            yield
        finally:
            if upstream is not None:
                await upstream.aclose()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/healthz", health, methods=["GET"]),
            *static.routes(),
        ],
        exception_handlers={APIError: api_error, HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
    )
    csp = content_security_policy(config.connect_src, config.frame_ancestors)
    app.add_middleware(SecurityHeaders, csp=csp, isolation=config.isolation)
    if refs is not None:
        app.add_middleware(AdvertiseRefs)
    return app
