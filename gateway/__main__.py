"""`python -m gateway`: serve the page and the API endpoint (OpenAI's Chat Completions and
Responses, Anthropic's Messages)."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys

from .app import GatewayConfig, create_app
from .limits import FlowLimits
from .server import GatewayServer, ServerLimits, raise_fd_limit, uvicorn_config
from .errors import APIError
from .simulator import DropConnection, SimParams, check_sim_params
from .streams import ResumeLimits

_SIM = SimParams()
_FLOW = FlowLimits()
_SERVER = ServerLimits()
_RESUME = ResumeLimits()


class _QuietDrops(logging.Filter):
    """A simulated dropped connection is intended; don't log it as a crash."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while exc is not None:
            if isinstance(exc, DropConnection):
                return False
            exc = exc.__cause__ or exc.__context__
        return True


class _OneLinePerFailure(logging.Filter):
    """The error boundary (gateway/boundary.py) already logged a failed stream in one
    line; uvicorn's follow-up about the unfinished response adds nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "ASGI callable returned without completing response" not in record.getMessage()


class _ThrottledAcceptErrors(logging.Filter):
    """asyncio logs each failed accept() (descriptors exhausted) with a traceback; keep
    one such record per 10 s."""

    def __init__(self) -> None:
        super().__init__()
        self.last = -1e9

    def filter(self, record: logging.LogRecord) -> bool:
        if "socket.accept() out of system resource" not in record.getMessage():
            return True
        now = record.created
        if now - self.last < 10:
            return False
        self.last = now
        record.exc_info = None
        return True


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m gateway", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--upstream", default=os.environ.get("FIRSTTOKEN_UPSTREAM") or None,
                   help="base URL of a real API, e.g. https://api.openai.com/v1 or https://api.anthropic.com/v1; "
                        "each route goes to its route of the same name there")
    p.add_argument("--upstream-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the upstream API key (never logged)")
    p.add_argument("--anthropic-key-env", default="ANTHROPIC_API_KEY",
                   help="environment variable holding the key for the upstream's /messages route, sent as "
                        "x-api-key (never logged); unset: the upstream key")
    p.add_argument("--client-key-env", default=None,
                   help="environment variable holding a key that clients must present; the gateway "
                        "refuses to start if the variable is unset or empty (off without this flag)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a Host name the gateway answers to besides the bound host, localhost, "
                        "127.0.0.1 and ::1 (repeatable; '*' for any); see gateway/guard.py")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web origin (scheme://host:port) other than the gateway's own whose pages "
                        "may call /v1/ (repeatable; answered with CORS headers)")
    p.add_argument("--header-timeout", type=float, default=_SERVER.header_timeout_s,
                   help="seconds a connection has to send a request's head")
    p.add_argument("--body-timeout", type=float, default=_SERVER.body_timeout_s,
                   help="seconds a request has to send its body")
    p.add_argument("--keep-alive", type=int, default=_SERVER.keep_alive_s,
                   help="seconds an idle kept-alive connection stays open")
    p.add_argument("--max-connections", type=int, default=_SERVER.max_connections)
    p.add_argument("--streams-per-client", type=int, default=GatewayConfig.streams_per_client,
                   help="concurrent answers (all routes together) per client (API key, else address)")
    sim = p.add_argument_group(
        "built-in model",
        "what it costs (gateway/prefill.py): first token = --ttft-ms + uncached prompt tokens / --prefill-tps; "
        "each request may override these with the x-firsttoken-sim header (gateway/simulator.py)")
    sim.add_argument("--ttft-ms", type=float, default=_SIM.ttft_ms, help="the first token's base cost, in ms")
    sim.add_argument("--prefill-tps", type=float, default=_SIM.prefill_tps,
                     help="prompt tokens read per second before the first token; 0 = free")
    sim.add_argument("--tps", type=float, default=_SIM.tps, help="answer tokens per second")
    sim.add_argument("--chunk", type=int, default=_SIM.chunk, help="answer tokens per event")
    sim.add_argument("--tokens", type=int, default=_SIM.tokens, help="answer length")
    sim.add_argument("--no-prefix-cache", dest="prefix_cache", action="store_false",
                     help="no prefix cache: every prompt token is read every time")
    sim.add_argument("--cache-min-tokens", type=int, default=_SIM.cache_min_tokens,
                     help="the shortest prefix cached (OpenAI: 1,024)")
    sim.add_argument("--cache-step", type=int, default=_SIM.cache_step,
                     help="automatic cache hits grow in steps of this many tokens (OpenAI: 128)")
    sim.add_argument("--cache-idle-s", type=float, default=_SIM.cache_idle_s,
                     help="seconds a cached prefix survives unused (OpenAI: 5-10 minutes)")
    sim.add_argument("--think-budget", type=int, default=_SIM.think_budget,
                     help="tokens firsttoken-sim-think thinks at high effort (medium: half)")
    sim.add_argument("--summary-ms", type=float, default=_SIM.summary_ms,
                     help="the first-answer delay a requested reasoning summary costs, in ms")
    sim.add_argument("--cache-entries", type=int, default=GatewayConfig.sim_cache_entries,
                     help="cached prefixes (blocks) kept in all, least recently used dropped first")
    p.add_argument("--max-body-bytes", type=int, default=GatewayConfig.max_body_bytes)
    p.add_argument("--keepalive-s", type=float, default=GatewayConfig.keepalive_s,
                   help="an SSE comment ': keep-alive' after this many seconds of silence on every streamed answer "
                        "(0: none)")
    p.add_argument("--upstream-read-timeout-s", type=float, default=GatewayConfig.upstream_read_timeout_s,
                   help="how long an upstream may stay silent before the gateway gives up (a reasoning model "
                        "may think for minutes)")
    flow = p.add_argument_group("flow control", "rate limits on every /v1 request (README, Flow control); 0 = unlimited")
    flow.add_argument("--rpm", type=int, default=_FLOW.rpm, help="requests per minute, per client")
    flow.add_argument("--tpm", type=int, default=_FLOW.tpm, help="tokens per minute, per client")
    flow.add_argument("--gateway-rpm", type=int, default=_FLOW.gateway_rpm, help="requests per minute, all clients together")
    flow.add_argument("--gateway-tpm", type=int, default=_FLOW.gateway_tpm, help="tokens per minute, all clients together")
    flow.add_argument("--burst-s", type=float, default=_FLOW.burst_s,
                      help="a bucket holds this many seconds of its rate (60: a whole minute at once)")
    flow.add_argument("--queue-wait-s", type=float, default=_FLOW.queue_wait_s,
                      help="longest wait in the gateway's queue before a 429")
    flow.add_argument("--queue-max", type=int, default=_FLOW.queue_max, help="requests waiting at most, in all")
    flow.add_argument("--reserve-tokens", type=int, default=_FLOW.reserve_tokens,
                      help="completion tokens reserved for a request without max_tokens")
    flow.add_argument("--redis", default=os.environ.get("FIRSTTOKEN_REDIS") or None,
                      help="redis:// URL shared by gateway processes (limits, cache references); default: memory")
    flow.add_argument("--redis-fail", choices=("open", "closed"), default=None,
                      help="Redis down: admit without limits, or answer 503 (default: closed with --upstream, else open)")
    resume = p.add_argument_group(
        "resumable streams",
        "a firsttoken client's streamed answer runs on when its connection drops, to be resumed, "
        "polled or cancelled (gateway/streams); other clients are not affected")
    resume.add_argument("--no-resume", dest="resume", action="store_false",
                        help="stream every answer over its own connection only, as other clients get it")
    resume.add_argument("--resume-ttl-s", type=float, default=_RESUME.ttl_s,
                        help="seconds an ended stream's events are kept for a resume")
    resume.add_argument("--resume-max-s", type=float, default=_RESUME.max_s,
                        help="seconds a generation may run before it is stopped, as a cancel")
    resume.add_argument("--resume-stream-bytes", type=int, default=_RESUME.stream_bytes,
                        help="bytes of events one stream may hold; past it the answer stops and the stream "
                             "fails with a stream_too_large error event")
    resume.add_argument("--resume-streams-per-client", type=int, default=_RESUME.streams_per_client,
                        help="streams kept per client, live and ended; a new one drops the oldest ended first, "
                             "and is served without resume when all are live")
    resume.add_argument("--resume-total-bytes", type=int, default=_RESUME.total_bytes,
                        help="bytes all streams may hold in this process's memory (with --redis, the live ones); "
                             "a new stream drops the oldest ended first, and is served without resume if still full")
    p.add_argument("--connect-src", default=GatewayConfig.connect_src,
                   help="CSP connect-src: where the page may send requests")
    p.add_argument("--frame-ancestors", default=GatewayConfig.frame_ancestors,
                   help="CSP frame-ancestors: who may embed the page")
    p.add_argument("--no-isolation", dest="isolation", action="store_false",
                   help="serve the page without COOP/COEP (not cross-origin isolated, as Android's WebView always is)")
    p.add_argument("--no-precompressed", dest="precompressed", action="store_false",
                   help="serve the runtime as identity only, ignoring build/encoded/ (gateway/precompressed.py)")
    p.add_argument("--snapshot-always", dest="snapshot_measure_link", action="store_false",
                   help="first visits fetch the install-time snapshot without timing the link (a local or LAN gateway)")
    p.add_argument("--log-level", default="warning")
    args = p.parse_args(argv)

    client_key = None
    if args.client_key_env:
        client_key = os.environ.get(args.client_key_env, "")
        if not client_key.strip():
            # Fail closed: a gateway told to demand a key must not quietly serve everyone.
            p.exit(2, f"firsttoken gateway: --client-key-env {args.client_key_env}: the variable is "
                      "unset or empty; set it to the key clients must present, or drop the flag.\n")

    try:
        resume_limits = ResumeLimits(
            ttl_s=args.resume_ttl_s, max_s=args.resume_max_s, stream_bytes=args.resume_stream_bytes,
            streams_per_client=args.resume_streams_per_client, total_bytes=args.resume_total_bytes,
        )
    except ValueError as exc:
        p.error(f"--resume-*: {exc}")

    sim_params = SimParams(ttft_ms=args.ttft_ms, tps=args.tps, chunk=args.chunk, tokens=args.tokens,
                           prefill_tps=args.prefill_tps, cache=args.prefix_cache, cache_min_tokens=args.cache_min_tokens,
                           cache_step=args.cache_step, cache_idle_s=args.cache_idle_s,
                           think_budget=args.think_budget, summary_ms=args.summary_ms)
    try:
        check_sim_params(sim_params)
    except APIError as exc:
        p.error(exc.message)
    if args.cache_entries < 1:
        p.error("--cache-entries must be at least 1")
    if not (0 <= args.keepalive_s <= 3600):
        p.error("--keepalive-s must be within 0..3600")
    if not (1 <= args.upstream_read_timeout_s <= 86_400):
        p.error("--upstream-read-timeout-s must be within 1..86400")

    config = GatewayConfig(
        sim=sim_params,
        sim_cache_entries=args.cache_entries,
        upstream=args.upstream,
        upstream_key=os.environ.get(args.upstream_key_env) if args.upstream else None,
        anthropic_key=(os.environ.get(args.anthropic_key_env) or None) if args.upstream else None,
        max_body_bytes=args.max_body_bytes,
        keepalive_s=args.keepalive_s,
        upstream_read_timeout_s=args.upstream_read_timeout_s,
        limits=FlowLimits(
            rpm=args.rpm, tpm=args.tpm, gateway_rpm=args.gateway_rpm, gateway_tpm=args.gateway_tpm,
            burst_s=args.burst_s, queue_wait_s=args.queue_wait_s, queue_max=args.queue_max,
            reserve_tokens=args.reserve_tokens,
            fail_open=None if args.redis_fail is None else args.redis_fail == "open",
        ),
        redis=args.redis,
        connect_src=args.connect_src,
        frame_ancestors=args.frame_ancestors,
        isolation=args.isolation,
        snapshot_measure_link=args.snapshot_measure_link,
        client_key=client_key,
        allowed_hosts=(args.host, *args.allowed_host),
        allow_origins=tuple(args.allow_origin),
        streams_per_client=args.streams_per_client,
        resume=resume_limits if args.resume else None,
        **({} if args.precompressed else {"precompressed": None}),
    )
    limits = ServerLimits(
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        keep_alive_s=args.keep_alive,
        max_connections=args.max_connections,
    )
    # Room for every allowed connection, plus files and the upstream's sockets.
    raise_fd_limit(limits.max_connections + 256)

    # Bind first, then announce: the printed URL is a readiness marker (tests wait on it),
    # and port 0 gets a free port whose number we can print.
    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so (gateway/server.py).
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(1024)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    backend = f"upstream {config.upstream}" if config.upstream else "built-in model"
    print(f"firsttoken gateway ({backend}) listening on http://{shown}:{port}/", flush=True)

    app = create_app(config)
    server = GatewayServer(uvicorn_config(app, limits, log_level=args.log_level), begin_shutdown=app.state.begin_shutdown)
    # After uvicorn configured logging (Config() does), so the filters stay.
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    logging.getLogger("uvicorn.error").addFilter(_OneLinePerFailure())
    logging.getLogger("asyncio").addFilter(_ThrottledAcceptErrors())
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
