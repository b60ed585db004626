"""`firsttoken-gateway` (or `python -m gateway`): serve the page and the API endpoint
(OpenAI's Chat Completions and Responses, Anthropic's Messages).

Every flag is declared on the configuration field it sets (gateway/options.py): the
gateway's (`GatewayConfig`), the built-in model's (`SimParams`), flow control's
(`FlowLimits`), resumable streams' (`ResumeLimits`), the server's (`ServerLimits`),
and how this process starts (`Launch`).
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import static
from .app import GatewayConfig, create_app
from .errors import APIError
from .limits import FlowLimits
from .options import check_bounds, option, parser, values
from .server import GatewayServer, ServerLimits, raise_fd_limit, uvicorn_config
from .simulator import DropConnection, SimParams, check_sim_params
from .streams import ResumeLimits

#: The sections of `--help`, in order: name → what they hold.
SECTIONS = {
    "built-in model": "what it costs (gateway/prefill.py): first token = --ttft-ms + uncached prompt tokens / "
                      "--prefill-tps; each request may override these with the x-firsttoken-sim header "
                      "(gateway/simulator.py)",
    "flow control": "rate limits on every /v1 request (docs/flow-control.md); 0 = unlimited",
    "resumable streams": "a firsttoken client's streamed answer runs on when its connection drops, to be resumed, "
                         "polled or cancelled (gateway/streams); other clients are not affected",
}


@dataclass(frozen=True, slots=True)
class Launch:
    """How this process starts: where it listens, which environment variables hold
    keys, which checkout it serves, what it logs."""

    host: str = field(default="127.0.0.1", metadata=option("--host", "the address to listen on"))
    port: int = field(default=8000, metadata=option("--port", "the port to listen on; 0 picks a free port"))
    upstream_key_env: str = field(default="OPENAI_API_KEY", metadata=option(
        "--upstream-key-env", "environment variable holding the upstream API key (never logged)"))
    anthropic_key_env: str = field(default="ANTHROPIC_API_KEY", metadata=option(
        "--anthropic-key-env", "environment variable holding the key for the upstream's /messages route, sent as "
        "x-api-key (never logged); unset: the upstream key"))
    client_key_env: str | None = field(default=None, metadata=option(
        "--client-key-env", "environment variable holding a key that clients must present; the gateway "
        "refuses to start if the variable is unset or empty (off without this flag)", type=str))
    root: Path | None = field(default=None, metadata=option(
        "--root", "the checkout whose page is served (index.html, js/, node_modules/, build/); default: the "
        "current directory if it holds index.html, else the tree the gateway package was installed from",
        type=Path, metavar="DIR"))
    report: bool = field(default=False, metadata=option(
        "--report", "serve the last benchmark report (make report: build/report/ under the root) at /report/",
        sets=True))
    log_level: str = field(default="warning", metadata=option(
        "--log-level", "uvicorn's log level: critical, error, warning, info, debug or trace"))


#: Every configuration with flags, in the order `--help` lists them.
CONFIGS = (Launch, ServerLimits, GatewayConfig, SimParams, FlowLimits, ResumeLimits)


def page_root(given: Path | None, cwd: Path | None = None) -> Path:
    """The checkout to serve: `given`, else the current directory when it holds the
    page (a checkout, as `make run` and an installed command run from one), else the
    tree this package came from (the checkout itself when it runs from one)."""
    if given is not None:
        return given.resolve()
    cwd = cwd or Path.cwd()
    return cwd.resolve() if (cwd / "index.html").is_file() else static.ROOT


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


@dataclass(frozen=True, slots=True)
class Setup:
    """What the command line asked for: how to start, the app's configuration, the
    server's limits."""

    launch: Launch
    config: GatewayConfig
    limits: ServerLimits


def command_line() -> argparse.ArgumentParser:
    """The parser of every flag (`--help` lists them all)."""
    prog = "firsttoken-gateway" if Path(sys.argv[0]).name == "firsttoken-gateway" else "python -m gateway"
    return parser(prog, (__doc__ or "").split("\n\n")[0], CONFIGS, SECTIONS)


def configure(argv: list[str] | None = None) -> Setup:
    """The `Setup` the flags in `argv` give; exits with status 2 and a message on a
    flag it cannot take (as argparse does), and on a client key it was told to demand
    and cannot find."""
    p = command_line()
    args = p.parse_args(argv)
    check_bounds(p, args, CONFIGS)
    launch = Launch(**values(args, Launch))

    client_key = None
    if launch.client_key_env:
        client_key = os.environ.get(launch.client_key_env, "")
        if not client_key.strip():
            # Fail closed: a gateway told to demand a key must not quietly serve everyone.
            p.exit(2, f"firsttoken gateway: --client-key-env {launch.client_key_env}: the variable is "
                      "unset or empty; set it to the key clients must present, or drop the flag.\n")

    try:
        resume_limits = ResumeLimits(**values(args, ResumeLimits))
    except ValueError as exc:
        p.error(f"--resume-*: {exc}")
    sim_params = SimParams(**values(args, SimParams))
    try:
        check_sim_params(sim_params)
    except APIError as exc:
        p.error(exc.message)
    try:
        flow_limits = FlowLimits(**values(args, FlowLimits))
    except ValueError as exc:
        p.error(f"flow control: {exc}")

    root = page_root(launch.root)
    config = GatewayConfig(sim=sim_params, limits=flow_limits, root=root, **values(args, GatewayConfig))
    config = replace(
        config,
        upstream_key=os.environ.get(launch.upstream_key_env) if config.upstream else None,
        anthropic_key=(os.environ.get(launch.anthropic_key_env) or None) if config.upstream else None,
        client_key=client_key,
        allowed_hosts=(launch.host, *config.allowed_hosts),
        resume=resume_limits if config.resume is not None else None,
        # What `make` built under the root, as the checkout served.
        precompressed=root / "build" / "encoded" if config.precompressed is not None else None,
        report_dir=root / "build" / "report" if launch.report else None,
    )
    return Setup(launch, config, ServerLimits(**values(args, ServerLimits)))


def use_tokenizer_data_of(root: Path) -> None:
    """Point `firsttoken.tokens` at the checkout's vocabularies when it finds none of
    its own: an installed `firsttoken` looks beside its files, where no node_modules
    is. Set in the environment, so the counting worker process sees it too."""
    from firsttoken.tokens.bpe_data import DATA_ENV_VAR, data_dir

    vocabularies = root / "node_modules" / "tiktoken" / "encoders"
    if not os.environ.get(DATA_ENV_VAR) and not data_dir().is_dir() and vocabularies.is_dir():
        os.environ[DATA_ENV_VAR] = str(vocabularies)


def main(argv: list[str] | None = None) -> None:
    """The `firsttoken-gateway` command: configure, bind, announce, serve."""
    setup = configure(argv)
    launch, config, limits = setup.launch, setup.config, setup.limits
    use_tokenizer_data_of(config.root)
    # Room for every allowed connection, plus files and the upstream's sockets.
    raise_fd_limit(limits.max_connections + 256)

    # Bind first, then announce: the printed URL is a readiness marker (tests wait on it),
    # and port 0 gets a free port whose number we can print.
    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so (gateway/server.py).
    sock = socket.socket(socket.AF_INET6 if ":" in launch.host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((launch.host, launch.port))
    sock.listen(1024)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if not (config.root / "index.html").is_file():
        print(f"firsttoken gateway: no page at {config.root} (no index.html): serving the API only; "
              "run it from a checkout, or give --root", file=sys.stderr, flush=True)
    backend = f"upstream {config.upstream}" if config.upstream else "built-in model"
    print(f"firsttoken gateway ({backend}) listening on http://{shown}:{port}/", flush=True)

    app = create_app(config)
    server = GatewayServer(uvicorn_config(app, limits, log_level=launch.log_level), begin_shutdown=app.state.begin_shutdown)
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
