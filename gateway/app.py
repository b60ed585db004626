"""Composition of the gateway: routes, the backend (simulator or upstream), middleware."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import static
from .cache_refs import AdvertiseRefs, ExpandRefs, RefLimits, RefStore, SharedRefStore
from .errors import APIError
from .headers import SecurityHeaders, content_security_policy
from .flow import Flow, FlowControl, FlowLimits, MemoryBuckets, RedisBuckets
from .shared import SharedState
from .simulator import MODEL_IDS, DropConnection, SIM_HEADER, SimParams, Simulator
from .upstream import Upstream
from .validation import parse_chat_request, read_body

log = logging.getLogger("firsttoken.gateway")


@dataclass
class GatewayConfig:
    sim: SimParams = field(default_factory=SimParams)
    upstream: str | None = None
    upstream_key: str | None = field(default=None, repr=False)
    max_body_bytes: int = 4 * 1024 * 1024
    #: Flow control (gateway/flow): limits per client and for the gateway, the queue.
    limits: FlowLimits = field(default_factory=FlowLimits)
    #: Redis shared by gateway processes (rate buckets, cache references); None: memory.
    redis: str | None = None
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
    counter = _default_counter()
    simulator = Simulator(config.sim, sleep=asyncio.sleep, **({"count_tokens": counter} if counter else {}))
    upstream = Upstream(config.upstream, config.upstream_key) if config.upstream else None
    shared = SharedState(config.redis) if config.redis else None
    refs: RefStore | SharedRefStore | None = None
    if config.cache_refs:
        refs = SharedRefStore(shared, config.ref_limits) if shared else RefStore(config.ref_limits)

    def authorize(request: Request) -> None:
        if not config.client_key:
            return
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {config.client_key}".encode()):
            raise APIError(401, "Incorrect API key provided.", code="invalid_api_key")

    async def chat_completions(request: Request) -> Response:
        authorize(request)
        # Cache references were expanded by ExpandRefs, before flow control counted them.
        body = await read_body(request, config.max_body_bytes)
        chat = parse_chat_request(body)
        if upstream is not None:
            return await upstream.forward(
                "/chat/completions", body, request.headers.get("authorization"), request.headers.get(SIM_HEADER)
            )
        params = simulator.params(request.headers.get(SIM_HEADER))
        simulator.check_status(params)
        if not chat.stream:
            return JSONResponse(simulator.complete(chat, params))
        events = simulator.stream(chat, params)
        return StreamingResponse(
            events,
            media_type="text/event-stream; charset=utf-8",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def models(request: Request) -> Response:
        authorize(request)
        if upstream is not None:
            return await upstream.models(request.headers.get("authorization"))
        created = int(time.time())
        data = [{"id": m, "object": "model", "created": created, "owned_by": "firsttoken"} for m in MODEL_IDS]
        return JSONResponse({"object": "list", "data": data})

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "backend": "upstream" if upstream else "simulator", **await flow.health()})

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
            await flow.aclose()
            if upstream is not None:
                await upstream.aclose()
            if shared is not None:
                await shared.aclose()

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
    # Outermost last. Flow control sees cache references already expanded (so it counts
    # what the model will read) and answers its 429s inside the headers middleware.
    starlette_auth = lambda scope: authorize(Request(scope))  # noqa: E731
    # Redis down: closed by default in front of an upstream (its quota costs money),
    # open for the built-in model (nothing to protect but this process).
    limits = config.limits
    if limits.fail_open is None:
        limits = replace(limits, fail_open=config.upstream is None)
    flow = Flow(
        limits=limits,
        buckets=RedisBuckets(shared) if shared else MemoryBuckets(),
        max_body_bytes=config.max_body_bytes,
        authorize=starlette_auth,
        shared=shared,
    )
    app.add_middleware(FlowControl, flow=flow)
    if refs is not None:
        app.add_middleware(ExpandRefs, store=refs, max_body_bytes=config.max_body_bytes, authorize=starlette_auth)
    csp = content_security_policy(config.connect_src, config.frame_ancestors)
    app.add_middleware(SecurityHeaders, csp=csp, isolation=config.isolation)
    if refs is not None:
        app.add_middleware(AdvertiseRefs)
    return app
