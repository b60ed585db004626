"""Composition of the gateway: routes, the backend (simulator or upstream), middleware."""

from __future__ import annotations

import asyncio
import hmac
import os
import threading
import time
from urllib.parse import quote
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import static
from .boundary import ErrorBoundary
from .cache_refs import CLIENT_HEADER, AdvertiseRefs, RefLimits, RefStore, client_key, expand_refs, remember_system_messages
from .errors import APIError
from .guard import RequestGuard
from .headers import SecurityHeaders, content_security_policy
from .offload import Offload
from .server import StreamsPerClient
from .simulator import MODEL_IDS, DropConnection, SIM_HEADER, RateWindow, SimParams, Simulator
from .upstream import Upstream
from .validation import ChatRequest, parse_chat_request, read_body



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
    #: Never empty: `create_app` refuses "" (an empty key would admit everyone).
    client_key: str | None = field(default=None, repr=False)
    #: Host names this gateway answers to, besides localhost, 127.0.0.1 and ::1 (the
    #: bound host goes here); "*" turns the check off. See gateway/guard.py.
    allowed_hosts: tuple[str, ...] = ()
    #: Web origins other than the gateway's own that may call /v1/ (with CORS).
    allow_origins: tuple[str, ...] = ()
    #: Concurrent chat completions per client (API key, else address): gateway/server.py.
    streams_per_client: int = 256
    frame_ancestors: str = "'self'"
    #: Cache references (gateway/cache_refs.py): system messages sent once, then by hash.
    cache_refs: bool = True
    ref_limits: RefLimits = field(default_factory=RefLimits)


# Prompts larger than this are counted, and bodies larger than this parsed, in the worker
# process (gateway/offload.py).
_COUNT_IN_PROCESS_CHARS = 256 * 1024
_PARSE_IN_PROCESS_BYTES = 512 * 1024


def _default_counter(offload: Offload):
    """Exact prompt counts when firsttoken.tokens can load its data, else a rough one."""
    try:
        from firsttoken import tokens  # type: ignore[import-not-found]

        tokens.count_chat([{"role": "user", "content": "probe"}], "gpt-4o")
    except Exception:  # noqa: BLE001 - any failure means: fall back to the rough count
        return None

    def count(messages: list, model: str) -> int:
        size = sum(len(m.get("content") or "") if isinstance(m.get("content"), str) else 4096 for m in messages)
        if size > _COUNT_IN_PROCESS_CHARS:
            return offload.in_process(tokens.count_chat, messages, model)
        return tokens.count_chat(messages, model)

    return count


def create_app(config: GatewayConfig | None = None) -> Starlette:
    config = config or GatewayConfig()
    if config.client_key is not None and not config.client_key.strip():
        # Fail closed: an empty key compared with hmac would admit "Bearer " from anyone.
        raise ValueError("client_key is empty; give a real key, or None to accept any client")
    rate = RateWindow(config.rpm, config.tpm)
    offload = Offload()
    counter = _default_counter(offload)
    simulator = Simulator(
        config.sim, sleep=asyncio.sleep, rate=rate, **({"count_tokens": counter} if counter else {})
    )
    upstream = (
        Upstream(config.upstream, config.upstream_key, forward_client_auth=config.client_key is None,
                 secrets=(config.client_key,))
        if config.upstream else None
    )
    refs = RefStore(config.ref_limits) if config.cache_refs else None

    def authorize(request: Request) -> None:
        if not config.client_key:
            return
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {config.client_key}".encode()):
            raise APIError(401, "Incorrect API key provided.", code="invalid_api_key")

    # `parse` runs in the offload pool's threads; the store is not thread-safe.
    refs_lock = threading.Lock()

    def parse(body: bytes, client: str | None) -> tuple[bytes, ChatRequest]:
        if refs is not None:
            # References become text before anything else looks at the body: validation,
            # the simulator and an upstream only ever see plain OpenAI requests.
            with refs_lock:
                body = expand_refs(body, refs, client)
        if len(body) > _PARSE_IN_PROCESS_BYTES:
            # json.loads of megabytes holds the GIL for tens of ms in one call.
            chat = offload.in_process(parse_chat_request, body)
        else:
            chat = parse_chat_request(body)
        if refs is not None:
            with refs_lock:
                remember_system_messages(chat.messages, refs, client)
        return body, chat

    async def chat_completions(request: Request) -> Response:
        authorize(request)
        body = await read_body(request, config.max_body_bytes)
        client = None
        if refs is not None:
            client = client_key(request.headers.get("authorization"), request.headers.get(CLIENT_HEADER))
        # Parsing and validating a body of megabytes is CPU work: off the loop.
        body, chat = await offload.run(parse, body, client)
        if upstream is not None:
            return await upstream.forward(
                "/chat/completions", body, request.headers.get("authorization"), request.headers.get(SIM_HEADER)
            )
        params = simulator.params(request.headers.get(SIM_HEADER))
        simulator.check_status(params)
        simulator.check_request(chat)
        answer = await offload.run(simulator.prepare, chat, params)
        simulator.record(answer)  # before the headers, so that they report this request
        if not chat.stream:
            content = await offload.run(simulator.complete, chat, answer)
            return Response(content, media_type="application/json", headers=rate.headers())
        headers = rate.headers()
        return StreamingResponse(
            simulator.stream(chat, params, answer),
            media_type="text/event-stream; charset=utf-8",
            headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    def model_object(model_id: str, created: int) -> dict:
        return {"id": model_id, "object": "model", "created": created, "owned_by": "firsttoken"}

    async def models(request: Request) -> Response:
        authorize(request)
        if upstream is not None:
            return await upstream.get("/models", request.headers.get("authorization"))
        created = int(time.time())
        return JSONResponse({"object": "list", "data": [model_object(m, created) for m in MODEL_IDS]})

    async def model(request: Request) -> Response:
        authorize(request)
        model_id = request.path_params["model_id"]
        if upstream is not None:
            return await upstream.get(f"/models/{quote(model_id, safe='')}", request.headers.get("authorization"))
        if model_id not in MODEL_IDS:
            raise APIError(404, f"The model '{model_id[:100]}' does not exist or you do not have access to it.",
                           param="model", code="model_not_found")
        return JSONResponse(model_object(model_id, int(time.time())))

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "backend": "upstream" if upstream else "simulator", "pid": os.getpid()})

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

    @asynccontextmanager
    async def lifespan(app: Starlette):
        try:
            yield
        finally:
            offload.close()
            if upstream is not None:
                await upstream.aclose()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", model, methods=["GET"]),
            Route("/healthz", health, methods=["GET"]),
            *static.routes(),
        ],
        exception_handlers={APIError: api_error, HTTPException: http_error},
        lifespan=lifespan,
    )
    # Starlette runs the last added outermost: security headers on every answer (refusals
    # and 500s too), then the error boundary, then who may ask, then the limits.
    app.add_middleware(StreamsPerClient, limit=config.streams_per_client)
    if refs is not None:
        app.add_middleware(AdvertiseRefs)
    app.add_middleware(RequestGuard, hosts=config.allowed_hosts, origins=config.allow_origins)
    app.add_middleware(ErrorBoundary, passthrough=(DropConnection,))
    csp = content_security_policy(config.connect_src, config.frame_ancestors)
    app.add_middleware(SecurityHeaders, csp=csp)
    return app
