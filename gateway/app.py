"""Composition of the gateway: the backend, the middleware from the outside in, the routes.

Each piece is one idea in a module of its own; this module only puts them in order.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
import os

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import static
from .access import Access
from .backends import Backend, SimulatedBackend, UpstreamBackend
from .boundary import ErrorBoundary
from .cache_refs import AdvertiseRefs, RefLimits, RefStore, SharedRefStore
from .chat_body import ReadChat, chat_of
from .counting import PromptCounter
from .dialects import DIALECTS, error_response
from .errors import APIError
from .guard import RequestGuard
from .headers import PagePolicy, SecurityHeaders
from .keepalive import KeepAlive
from .limits import Flow, FlowControl, FlowLimits, MemoryBuckets, RedisBuckets, StreamsPerClient
from .offload import Offload
from .options import option
from .prefill import DEFAULT_CACHE_ENTRIES
from .precompressed import Precompressed
from .prepare import PrepareChat, lead_with_prepared
from .report import report_routes
from .shared import SharedState
from .simulator import DropConnection, SimParams
from .streams import ResumeLimits, Streams, stream_routes
from .streams.response import EventStreamResponse
from .upstream import Upstream


@dataclass
class GatewayConfig:
    """What a gateway is: its backend, its limits, what it serves and to whom. Fields
    with a flag declare it (gateway/options.py; `python -m gateway --help`)."""

    sim: SimParams = field(default_factory=SimParams)
    #: Prefixes the built-in model's cache holds at most, in all (gateway/prefill.py).
    sim_cache_entries: int = field(default=DEFAULT_CACHE_ENTRIES, metadata=option(
        "--cache-entries", "cached prefixes (blocks) kept in all, least recently used dropped first",
        section="built-in model", within=(1, None)))
    upstream: str | None = field(default=None, metadata=option(
        "--upstream", "base URL of a real API, e.g. https://api.openai.com/v1 or https://api.anthropic.com/v1; "
        "each route goes to its route of the same name there (default: $FIRSTTOKEN_UPSTREAM, else the built-in model)",
        type=str, env="FIRSTTOKEN_UPSTREAM"))
    upstream_key: str | None = field(default=None, repr=False)
    #: The key for the upstream's Anthropic route (`/messages`), sent as `x-api-key`;
    #: None: `upstream_key` (gateway/upstream.py).
    anthropic_key: str | None = field(default=None, repr=False)
    max_body_bytes: int = field(default=4 * 1024 * 1024, metadata=option(
        "--max-body-bytes", "the largest request body taken, in bytes (gzipped ones as inflated); larger: 413"))
    #: Rate limits (gateway/limits): per client and for the gateway, the queue.
    limits: FlowLimits = field(default_factory=FlowLimits)
    #: Redis shared by gateway processes (rate buckets, cache references); None: memory.
    redis: str | None = field(default=None, metadata=option(
        "--redis", "redis:// URL shared by gateway processes (limits, cache references); default: $FIRSTTOKEN_REDIS, "
        "else memory", section="flow control", type=str, env="FIRSTTOKEN_REDIS"))
    connect_src: str = field(default="'self' https: http://localhost:* http://127.0.0.1:*", metadata=option(
        "--connect-src", "CSP connect-src: where the page may send requests"))
    #: When set, /v1/* requires `Authorization: Bearer <client_key>` or `x-api-key:
    #: <client_key>` (a gateway of one's own; gateway/access.py).
    #: Never empty: `create_app` refuses "" (an empty key would admit everyone).
    client_key: str | None = field(default=None, repr=False)
    #: Besides localhost, 127.0.0.1 and ::1 (`python -m gateway` adds the bound host);
    #: "*" turns the check off. See gateway/guard.py.
    allowed_hosts: tuple[str, ...] = field(default=(), metadata=option(
        "--allowed-host", "a Host name the gateway answers to besides the bound host, localhost, "
        "127.0.0.1 and ::1 (repeatable; '*' for any); see gateway/guard.py", many=True, metavar="NAME"))
    #: Web origins other than the gateway's own that may call /v1/ (with CORS).
    allow_origins: tuple[str, ...] = field(default=(), metadata=option(
        "--allow-origin", "a web origin (scheme://host:port) other than the gateway's own whose pages "
        "may call /v1/ (repeatable; answered with CORS headers)", many=True, metavar="ORIGIN"))
    #: Every dialect together, per API key, else address: gateway/limits/concurrency.py.
    streams_per_client: int = field(default=256, metadata=option(
        "--streams-per-client", "concurrent answers (all routes together) per client (API key, else address)"))
    frame_ancestors: str = field(default="'self'", metadata=option(
        "--frame-ancestors", "CSP frame-ancestors: who may embed the page"))
    #: COOP/COEP on every response (cross-origin isolation). Off only to see the page as
    #: Android's WebView does, which is never isolated (gateway/headers.py).
    isolation: bool = field(default=True, metadata=option(
        "--no-isolation", "serve the page without COOP/COEP (not cross-origin isolated, as Android's WebView "
        "always is)", sets=False))
    #: False: first visits fetch the install-time snapshot without timing the link first
    #: (gateway/snapshot.py says when that is right).
    snapshot_measure_link: bool = field(default=True, metadata=option(
        "--snapshot-always", "first visits fetch the install-time snapshot without timing the link (a local or "
        "LAN gateway)", sets=False))
    #: Cache references (gateway/cache_refs.py): system messages sent once, then by hash.
    cache_refs: bool = True
    ref_limits: RefLimits = field(default_factory=RefLimits)
    #: The checkout whose page this gateway serves: index.html, js/, bridge/page/, py/,
    #: node_modules/ and build/ (gateway/static.py; `--root`, docs/gateway.md).
    root: Path = static.ROOT
    #: Where `make` wrote the brotli/gzip variants of the runtime (gateway/build/encode.py),
    #: under the root; None serves identity only.
    precompressed: Path | None = field(default=static.ROOT / "build" / "encoded", metadata=option(
        "--no-precompressed", "serve the runtime as identity only, ignoring build/encoded/ "
        "(gateway/precompressed.py)", sets=None))
    #: The last benchmark report (`make report`), served at /report/ (gateway/report.py,
    #: `--report`); None: not served.
    report_dir: Path | None = None
    #: Resumable streams for firsttoken clients (gateway/streams): their bounds; None: off.
    resume: ResumeLimits | None = field(default_factory=ResumeLimits, metadata=option(
        "--no-resume", "stream every answer over its own connection only, as other clients get it",
        section="resumable streams", sets=None))
    #: A `: keep-alive` comment after this many seconds of silence on every streamed
    #: answer (gateway/keepalive.py); 0: none.
    keepalive_s: float = field(default=15.0, metadata=option(
        "--keepalive-s", "an SSE comment ': keep-alive' after this many seconds of silence on every streamed "
        "answer (0: none)", within=(0, 3600)))
    #: How long the upstream may stay silent, mid-answer or before its first byte, before
    #: the gateway gives up on it: minutes, for a reasoning model that thinks silently.
    upstream_read_timeout_s: float = field(default=600.0, metadata=option(
        "--upstream-read-timeout-s", "how long an upstream may stay silent before the gateway gives up (a reasoning "
        "model may think for minutes)", within=(1, 86_400)))


# Longer than 80 lines (issue 47, item 3), on purpose: the gateway's composition root,
# each layer made and wrapped around the next in the order a request passes them;
# what a layer does lives in its module, and in parts the order would be hidden.
def create_app(config: GatewayConfig | None = None) -> Starlette:
    config = config or GatewayConfig()
    if config.client_key is not None and not config.client_key.strip():
        # Fail closed: an empty key compared with hmac would admit "Bearer " from anyone.
        raise ValueError("client_key is empty; give a real key, or None to accept any client")
    offload = Offload()
    # Probed once; flow control counts each prompt, and the built-in model bills that count.
    counter = PromptCounter.load()
    backend: Backend = (
        UpstreamBackend(Upstream(config.upstream, config.upstream_key, anthropic_key=config.anthropic_key,
                                 forward_client_auth=config.client_key is None, secrets=(config.client_key,),
                                 timeout=config.upstream_read_timeout_s))
        if config.upstream else SimulatedBackend(config.sim, offload, config.sim_cache_entries, counter)
    )
    shared = SharedState(config.redis) if config.redis else None
    refs: RefStore | SharedRefStore | None = None
    if config.cache_refs:
        refs = SharedRefStore(shared, config.ref_limits) if shared else RefStore(config.ref_limits)
    limits = config.limits
    if limits.fail_open is None:
        limits = replace(limits, fail_open=backend.fail_open)
    flow = Flow(limits=limits, buckets=RedisBuckets(shared) if shared else MemoryBuckets(), counter=counter,
                run=offload.run, shared=shared)
    streams = (
        Streams(config.resume, fail_open=bool(limits.fail_open), shared=shared, redis_url=config.redis)
        if config.resume is not None else None
    )

    async def answer(request: Request) -> Response | EventStreamResponse:
        read = chat_of(request.scope)
        assert read is not None  # ReadChat read every dialect's body
        # A prompt the gateway prepared (x-firsttoken-prepare): its report leads the stream.
        response = lead_with_prepared(request.scope, await backend.answer(request, read))
        # A firsttoken client's streamed answer runs apart from its connection, to be
        # resumed (gateway/streams), in each API; any other answer goes out as it is.
        if streams is not None and read.chat.stream and read.dialect.resumable:
            return await streams.detach(request, response, read.dialect.name)
        return response

    async def models(request: Request) -> Response:
        return await backend.models(request)

    async def model(request: Request) -> Response:
        return await backend.model(request, request.path_params["model_id"])

    # The built-in model's held stalls (`hold=K`, gateway/simulator.py `Holds`): a test
    # ends the stall it asked for once it has seen the stream mid-way. Built-in model only.
    holds = backend.simulator.holds if isinstance(backend, SimulatedBackend) else None

    async def release_hold(request: Request) -> Response:
        if holds is None:
            return Response(status_code=404)
        holds.release(request.path_params["key"])
        return Response(status_code=204)

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "backend": backend.name, "pid": os.getpid(), **await flow.health()})

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, APIError)
        return error_response(exc, request.scope)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            error = APIError(404, f"Unknown request URL: {request.method} {request.url.path}.", code="unknown_url")
        elif exc.status_code == 405:
            error = APIError(405, f"Method {request.method} is not allowed on {request.url.path}.", code="method_not_allowed")
        else:
            error = APIError(exc.status_code, str(exc.detail))
        return error_response(error, request.scope)

    @asynccontextmanager
    async def lifespan(app: Starlette):
        try:
            yield
        finally:
            if streams is not None:
                await streams.aclose()
            await flow.aclose()
            offload.close()
            await backend.aclose()
            if shared is not None:
                await shared.aclose()

    # From the outside in.
    middleware = [
        # Security headers on every answer, refusals and 500s too.
        # The page's inline blocks allowed by their hashes, read from the page it serves.
        Middleware(SecurityHeaders, csp=PagePolicy(config.connect_src, config.frame_ancestors, config.root / "index.html"),
                   isolation=config.isolation),
        # Whatever escapes: one log line and a JSON 500.
        Middleware(ErrorBoundary, passthrough=(DropConnection,)),
        # A comment on every event stream that falls silent (a model thinking, an
        # upstream slow): the phone's connection stays up, its reader knows it is live.
        Middleware(KeepAlive, interval_s=config.keepalive_s),
        # Who may ask from a browser (Host, Origin, content type): refused requests spend
        # no budget and store no references.
        Middleware(RequestGuard, hosts=config.allowed_hosts, origins=config.allow_origins),
        # What this gateway takes (cache references, gzipped bodies), on every /v1/ answer
        # (refusals too).
        Middleware(AdvertiseRefs, refs=refs is not None),
        # The gateway's key, and who the client is, decided once.
        Middleware(Access, key=config.client_key),
        Middleware(StreamsPerClient, limit=config.streams_per_client),
        # The body of each dialect's request, read, parsed, its references expanded,
        # once (so that flow control counts what the model will read).
        Middleware(ReadChat, max_body_bytes=config.max_body_bytes, offload=offload, refs=refs),
        # A page whose Python is not ready yet asks the gateway to prepare its prompt
        # (compress, count, fit) as Python would, before flow control counts it.
        Middleware(PrepareChat, run=offload.run),
        Middleware(FlowControl, flow=flow),
        # The precompressed variants of the static files (innermost: it asks the router
        # again, as a HEAD, what it would serve).
        *([Middleware(Precompressed, directory=config.precompressed, run=offload.run)]
          if config.precompressed is not None else []),
    ]
    app = Starlette(
        routes=[
            *(Route(dialect.path, answer, methods=["POST"]) for dialect in DIALECTS),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", model, methods=["GET"]),
            *(stream_routes(streams) if streams is not None else []),
            Route("/healthz", health, methods=["GET"]),
            *([Route("/sim/release/{key:int}", release_hold, methods=["POST"])] if holds is not None else []),
            *(report_routes(config.report_dir) if config.report_dir is not None else []),
            *static.routes(root=config.root, snapshot_measure_link=config.snapshot_measure_link, run=offload.run),
        ],
        middleware=middleware,
        exception_handlers={APIError: api_error, HTTPException: http_error},
        lifespan=lifespan,
    )
    # For the server, as it starts to stop (gateway/server.py, GatewayServer): ASGI's
    # lifespan says "shutdown" only after every open request has ended.
    app.state.begin_shutdown = streams.begin_shutdown if streams is not None else (lambda: None)
    return app
