"""Real servers and the browser for tests and benchmarks: gateway processes started and
awaited on their readiness line (the URL they print), never on a sleep; any ASGI app
served in a thread on a loopback socket; how to start Debian's Chromium here; and the
built-in model's held stalls, which a test ends (`hold_at`, `release`)."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx

ROOT = Path(__file__).resolve().parents[1]


def copy_tree(parent: Path) -> Path:
    """This working tree under `parent`, without build products (so: no install-time
    snapshot) and caches, node_modules linked: for a gateway of its own (tests, bench)."""
    copy = parent / "tree"
    anywhere = shutil.ignore_patterns(".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".hypothesis")

    def ignore(folder: str, names: list[str]) -> set[str]:
        # The build products are the top-level build/; gateway/build/ is source.
        return set(anywhere(folder, names)) | ({"build"} if Path(folder) == ROOT else set())

    shutil.copytree(ROOT, copy, ignore=ignore)
    (copy / "node_modules").symlink_to(ROOT / "node_modules")
    return copy


READY = re.compile(r"listening on (http://\S+?)/?$")

CHROMIUM = os.environ.get("FIRSTTOKEN_CHROMIUM", "/usr/bin/chromium")
# Chromium must not reach for Google's hosts: this machine has no network but the
# registries, and those attempts only slow every start (see shared FACTS).
#
# Chromium 156's new headless mode still builds the browser's own UI, and with it
# preloads the omnibox popup (a WebUI page, in a renderer of its own) and works on it
# whenever a tab opens: 84 CPU-s of a full `make test` that was CPU-bound at 1,170 CPU-s
# (per-process sampling, 2026-12-03). No test or benchmark has an omnibox.
#
# Chromium reads only the last `--disable-features`, and Playwright passes its own list
# (`chromiumSwitches.ts`), so ours is its list for the pinned version plus these;
# tests/e2e/test_browser_flags.py checks, from the browser's own command line, that
# nothing of Playwright's list is dropped.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding",
    "ThirdPartyStoragePartitioning", "AvoidCorsURLLoaderRestartOnRedirect", "TcpPortRandomizationWin",
    "OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch",
    "msForceBrowserSignIn", "msEdgeUpdateLaunchServicesPreferredVersion",
)
NO_OMNIBOX_POPUP = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "WebUIOmniboxFullPopup")
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-features=" + ",".join((*PLAYWRIGHT_DISABLED_FEATURES, *NO_OMNIBOX_POPUP)),
]

# The browser tests drive Chromium's headless shell (Debian's `chromium-headless-shell`,
# the same release as `chromium`): the content layer alone, with no browser UI, which is
# what Playwright itself runs for headless Chromium by default. The page meets the same
# engine (Blink, V8, the network service, service workers, IndexedDB); what it lacks is
# the browser's own layer (its settings, incognito's defaults, chrome:// pages). Per boot
# it costs a tenth less CPU, and a page that opens and closes half as much; a whole
# `make test` used 903 busy CPU-s with it against 1,031-1,114 with the full browser
# (2026-12-04), on a suite that is CPU-bound on two cores. Tests of the browser layer's
# own behaviour (a cross-site frame's storage blocked as Chrome blocks it,
# tests/e2e/test_storage_blocked.py; these flags, tests/e2e/test_browser_flags.py) and
# every benchmark (paint latency against native, boot against stock PyScript: what a
# user's Chrome does) run the full browser, `CHROMIUM`.
HEADLESS_SHELL = os.environ.get("FIRSTTOKEN_HEADLESS_SHELL", "/usr/bin/chromium-headless-shell")
#: The shell is headless only (Playwright adds `--headless`); the rest as for the full
#: browser, but for V8's WebAssembly tiers. Liftoff, V8's baseline wasm compiler, alone:
#: every page of a test boots Python and lives a few seconds, and V8 spent ~0.2 s of CPU
#: per boot and ~0.5 s on the first answer recompiling the interpreter's hot functions
#: with TurboFan, code a page that short never earns back (its wasm code cache keeps
#: them only after 2 s). What the tests check is behaviour, the same on either tier.
#: Test files run alone, twice each way (busy CPU-s of the whole machine, 2026-12-04):
#: test_actions 118 and 103 with against 132 and 121 without; test_conversations with
#: test_page 113 and 106 against 133 and 193; the same wall time. Benchmarks run the
#: full browser, with V8's defaults, as a user's Chrome does.
HEADLESS_SHELL_ARGS = [arg for arg in CHROMIUM_ARGS if not arg.startswith("--headless")] + ["--js-flags=--liftoff-only"]


@contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """Serve an ASGI app in a thread of this process; yield its base URL.

    The socket listens before the server thread starts, so the URL is usable at once:
    the kernel queues a connection until uvicorn accepts it (nothing waits on a flag).
    """
    import uvicorn  # only where an app is served in-process

    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY only then (else 40 ms of Nagle per response).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


class Gateway(str):
    """The base URL (no trailing slash), with everything the process printed in `log`;
    `kill()` ends the process at once, as a crash or the OS would (no graceful end)."""

    log: list[str]
    proc: subprocess.Popen

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


@contextmanager
def _process(argv: list[str], ready: Callable[[str], Any], name: str, **popen: Any) -> Iterator[tuple[Any, list[str], subprocess.Popen]]:
    """Run `argv` until the block ends; yield (what `ready` found in its first matching
    output line, every line so far, the process). Readiness is a line the program prints, never a
    delay. Its output is drained on a thread for as long as it runs (a full pipe would
    block it) into that list, so tests can check what it logged."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)
    drain = None
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        for line in proc.stdout:  # blocks until the program says it is ready, or exits
            seen.append(line)
            found = ready(line.strip())
            if found:
                break
        else:
            raise RuntimeError(f"{name} exited before it was ready:\n" + "".join(seen))
        drain = threading.Thread(target=lambda: seen.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
        drain.start()
        yield found, seen, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            if drain is not None:
                drain.join(timeout=10)
            proc.stdout.close()


@contextmanager
def gateway(*args: str, env: dict[str, str] | None = None, root: Path = ROOT,
            measure_link: bool = False) -> Iterator[Gateway]:
    """Run `python -m gateway --port 0 …`; yield its base URL (no trailing slash), ready
    once it printed it. `root` is the tree it serves (a copy of this one, for boot
    tests); `.log` holds what it printed. First visits fetch the install-time snapshot
    without timing the link (`--snapshot-always`: a loaded test machine would make that
    decision a coin toss), unless `measure_link` (the tests of that decision)."""
    flags = () if measure_link else ("--snapshot-always",)
    with _process(
        [sys.executable, "-m", "gateway", "--port", "0", *flags, *args], READY.search, "gateway",
        cwd=root, env={**os.environ, "PYTHONPATH": f"{root / 'py'}{os.pathsep}{root}", **(env or {})},
    ) as (match, seen, proc):
        url = Gateway(match.group(1))
        url.log = seen
        url.proc = proc
        yield url


REDIS_SERVER = os.environ.get("FIRSTTOKEN_REDIS_SERVER", "/usr/bin/redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"PING\r\n")
        return s.recv(64).startswith(b"+PONG")


@contextmanager
def redis_server(tmp: Path) -> Iterator[str]:
    """Debian's redis-server on a free loopback port, its files in `tmp`; yields its URL.

    Ready when it prints "Ready to accept connections" (awaited on its output, as the
    gateway's URL is), then confirmed with PING. Nothing persisted; `maxmemory` with a
    volatile-lru policy, as README ("Flow control") recommends, so every key the gateway
    writes (all have TTLs) is evictable.
    """
    port = _free_port()
    argv = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp), "--save", "",
            "--appendonly", "no", "--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru", "--loglevel", "notice"]
    with _process(argv, lambda line: "Ready to accept connections" in line, "redis-server"):
        if not _ping(port):
            raise RuntimeError("redis-server does not answer PING")
        yield f"redis://127.0.0.1:{port}/0"


#: A held stall's bound (gateway/simulator.py `Holds`): longer than a test may run, so
#: that a held answer goes on only when the test releases it.
HOLD_MS = 600_000


def hold_at(stall_after: int) -> tuple[str, int]:
    """The built-in model's settings (for `steer`) that hold an answer after
    `stall_after` chunks until the test calls `release(gateway_url, key)`, whether
    before or during the stall (each release lets one held stall go); and the key."""
    key = secrets.randbelow(10**9) + 1
    return f"stall_ms={HOLD_MS},stall_after={stall_after},hold={key}", key


def release(gateway_url: str, key: int) -> None:
    """Let the answer held on `key` go on (`hold_at`)."""
    r = httpx.post(f"{gateway_url}/sim/release/{key}", timeout=30)
    assert r.status_code == 204, r.text
