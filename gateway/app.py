"""Composition of the gateway: routes, the backend (simulator or upstream), middleware."""

from __future__ import annotations

import asyncio
import hmac
import os
import threading
import time
from urllib.parse import quote
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import static
from .boundary import ErrorBoundary
from .cache_refs import AdvertiseRefs, ExpandRefs, RefLimits, RefStore, SharedRefStore
from .errors import APIError
from .guard import RequestGuard
from .headers import SecurityHeaders, content_security_policy
from .limits import Flow, FlowControl, FlowLimits, MemoryBuckets, RedisBuckets
from .offload import Offload
from .precompressed import Precompressed
from .report import report_routes
from .server import StreamsPerClient
from .shared import SharedState
from .simulator import MODEL_IDS, DropConnection, SIM_HEADER, SimParams, Simulator
from .streams import ResumeLimits, Streams, stream_routes
from .upstream import Upstream
from .validation import ChatRequest, parse_chat_request, read_body



@dataclass
class GatewayConfig:
    sim: SimParams = field(default_factory=SimParams)
    upstream: str | None = None
    upstream_key: str | None = field(default=None, repr=False)
    max_body_bytes: int = 4 * 1024 * 1024
    #: Flow control (gateway/limits): limits per client and for the gateway, the queue.
    limits: FlowLimits = field(default_factory=FlowLimits)
    #: Redis shared by gateway processes (rate buckets, cache references); None: memory.
    redis: str | None = None
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
    #: COOP/COEP on every response (cross-origin isolation). Off only to see the page as
    #: Android's WebView does, which is never isolated (gateway/headers.py).
    isolation: bool = True
    #: False: first visits fetch the install-time snapshot without timing the link first
    #: (gateway/snapshot.py says when that is right).
    snapshot_measure_link: bool = True
    #: Cache references (gateway/cache_refs.py): system messages sent once, then by hash.
    cache_refs: bool = True
    ref_limits: RefLimits = field(default_factory=RefLimits)
    #: Where `make` wrote the brotli/gzip variants of the runtime (gateway/encode.py);
    #: None serves identity only.
    precompressed: Path | None = static.ROOT / "build" / "encoded"
    #: The last benchmark report (`make report`), served at /report/ (gateway/report.py); None: not served.
    report_dir: Path | None = static.ROOT / "build" / "report"
    #: Resumable streams for firsttoken clients (gateway/streams): their bounds; None: off.
    resume: ResumeLimits | None = field(default_factory=ResumeLimits)


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
    offload = Offload()
    counter = _default_counter(offload)
    simulator = Simulator(config.sim, sleep=asyncio.sleep, **({"count_tokens": counter} if counter else {}))
    upstream = (
        Upstream(config.upstream, config.upstream_key, forward_client_auth=config.client_key is None,
                 secrets=(config.client_key,))
        if config.upstream else None
    )
    shared = SharedState(config.redis) if config.redis else None
    refs: RefStore | SharedRefStore | None = None
    if config.cache_refs:
        refs = SharedRefStore(shared, config.ref_limits) if shared else RefStore(config.ref_limits)
    # Redis down: closed by default in front of an upstream (its quota costs money),
    # open for the built-in model (nothing to protect but this process).
    limits = config.limits
    if limits.fail_open is None:
        limits = replace(limits, fail_open=config.upstream is None)
    streams = (
        Streams(config.resume, fail_open=bool(limits.fail_open), shared=shared, redis_url=config.redis)
        if config.resume is not None else None
    )

    def authorize(request: Request) -> None:
        if not config.client_key:
            return
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {config.client_key}".encode()):
            raise APIError(401, "Incorrect API key provided.", code="invalid_api_key")

    def parse(body: bytes) -> ChatRequest:
        if len(body) > _PARSE_IN_PROCESS_BYTES:
            # json.loads of megabytes holds the GIL for tens of ms in one call.
            return offload.in_process(parse_chat_request, body)
        return parse_chat_request(body)

    async def chat_completions(request: Request) -> Response:
        authorize(request)
        # Cache references were expanded by ExpandRefs, before flow control counted them.
        body = await read_body(request, config.max_body_bytes)
        # Parsing and validating a body of megabytes is CPU work: off the loop.
        chat = await offload.run(parse, body)
        if upstream is not None:
            response = await upstream.forward(
                "/chat/completions", body, request.headers.get("authorization"), request.headers.get(SIM_HEADER)
            )
        else:
            params = simulator.params(request.headers.get(SIM_HEADER))
            simulator.check_status(params)
            simulator.check_request(chat)
            answer = await offload.run(simulator.prepare, chat, params)
            if not chat.stream:
                content = await offload.run(simulator.complete, chat, answer)
                return Response(content, media_type="application/json")
            response = StreamingResponse(
                simulator.stream(chat, params, answer),
                media_type="text/event-stream; charset=utf-8",
                headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
            )
        # A firsttoken client's streamed answer runs apart from its connection, to be
        # resumed (gateway/streams); any other answer goes out as it is.
        if streams is not None and chat.stream:
            return await streams.detach(request, response)
        return response

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
        return JSONResponse({
            "ok": True, "backend": "upstream" if upstream else "simulator", "pid": os.getpid(), **await flow.health(),
        })

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
            if streams is not None:
                await streams.aclose()
            await flow.aclose()
            offload.close()
            if upstream is not None:
                await upstream.aclose()
            if shared is not None:
                await shared.aclose()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", model, methods=["GET"]),
            *(stream_routes(streams, authorize) if streams is not None else []),
            Route("/healthz", health, methods=["GET"]),
            *(report_routes(config.report_dir) if config.report_dir is not None else []),
            *static.routes(snapshot_measure_link=config.snapshot_measure_link),
        ],
        exception_handlers={APIError: api_error, HTTPException: http_error},
        lifespan=lifespan,
    )
    # Starlette runs the last added outermost. From the outside in: security headers on
    # every answer (refusals and 500s too); the error boundary; who may ask (Host, Origin,
    # content type: refused requests spend no budget and store no references); the
    # reference advert; streams per client; references expanded (so that flow control
    # counts what the model will read); flow control; the precompressed variants of the
    # static files (innermost: it asks the router again, as a HEAD, what it would serve).
    starlette_auth = lambda scope: authorize(Request(scope))  # noqa: E731
    if config.precompressed is not None:
        app.add_middleware(Precompressed, directory=config.precompressed)
    flow = Flow(
        limits=limits,
        buckets=RedisBuckets(shared) if shared else MemoryBuckets(),
        max_body_bytes=config.max_body_bytes,
        authorize=starlette_auth,
        shared=shared,
    )
    app.add_middleware(FlowControl, flow=flow)
    if refs is not None:
        app.add_middleware(ExpandRefs, store=refs, max_body_bytes=config.max_body_bytes,
                           authorize=starlette_auth, run=offload.run)
    app.add_middleware(StreamsPerClient, limit=config.streams_per_client)
    if refs is not None:
        app.add_middleware(AdvertiseRefs)
    app.add_middleware(RequestGuard, hosts=config.allowed_hosts, origins=config.allow_origins)
    app.add_middleware(ErrorBoundary, passthrough=(DropConnection,))
    csp = content_security_policy(config.connect_src, config.frame_ancestors)
    app.add_middleware(SecurityHeaders, csp=csp, isolation=config.isolation)
    # For the server, as it starts to stop (gateway/server.py, GatewayServer): ASGI's
    # lifespan says "shutdown" only after every open request has ended.
    app.state.begin_shutdown = streams.begin_shutdown if streams is not None else (lambda: None)
    return app
