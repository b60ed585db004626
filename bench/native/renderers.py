"""The native renderer's driver, and what every renderer's driver shares.

Each driver (here `NativeRenderer`; the pages' in `pages.py`) runs one reply at a time
and returns every chunk's latency from the gateway's send stamp to the end of the frame
that painted it, after checking what it measured: one sample per chunk sent, on the
server's clock, the reply finished.

`NativeRenderer` runs bench/native/gtk_renderer.py (a GTK 4 text view) under Xvfb with
Debian's Python, over JSON lines.
"""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.webkit_host import SYSTEM_PYTHON

GTK_RENDERER = Path(__file__).with_name("gtk_renderer.py")
PROMPT = "Explain frame pacing with code and a table"
WINDOW = (1024, 768)

__all__ = ["PROMPT", "WINDOW", "BenchReplyError", "NativeRenderer", "Reply", "percentile", "sim_header"]


class BenchReplyError(RuntimeError):
    """A renderer failed, or measured something other than the stream it was given."""


@dataclass
class Reply:
    """One reply's measurements. `samples_ms`: each chunk's stamp → painted, in ms."""

    samples_ms: list[float]
    chunks: int
    frames: int | None = None
    #: How far the renderer's clock is from the machine's wall clock (ms; pages only:
    #: `Date.now() - (performance.timeOrigin + performance.now())`).
    clock_skew_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def sim_header(tps: float, tokens: int, ttft_ms: float = 300) -> str:
    """The built-in model's pacing: `tokens` one-token chunks at `tps`, each stamped."""
    return f"ttft_ms={ttft_ms:g},tps={tps:g},chunk=1,tokens={tokens},stamp=1"


def percentile(values: list[float], p: float) -> float | None:
    """The nearest-rank percentile, as js/render/reply-metrics.js computes it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def _gtk_env(display: str) -> dict[str, str]:
    return {
        **os.environ,
        "DISPLAY": display,
        "GDK_BACKEND": "x11",
        # Xvfb has no GPU: draw in software (cairo), as the WebKit host composites in
        # software (HardwareAccelerationPolicy.NEVER). GTK's default GL renderer runs on
        # Mesa's llvmpipe here, which made frames 2–3× slower at 500 tok/s.
        "GSK_RENDERER": "cairo",
        "GTK_A11Y": "none", "NO_AT_BRIDGE": "1",
    }


# ---- native ----------------------------------------------------------------------
class NativeRenderer:
    """bench/native/gtk_renderer.py in its own process, driven over JSON lines."""

    def __init__(self, url: str, *, display: str, markdown: bool = False, started_timeout: float = 60) -> None:
        argv = [SYSTEM_PYTHON, str(GTK_RENDERER), "--url", url, "--size", "x".join(map(str, WINDOW))]
        if markdown:
            argv.append("--markdown")
        self.markdown = markdown
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", env=_gtk_env(display),
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[str] = []
        self._readers = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._drain_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()
        started = self._next(started_timeout)
        if started.get("event") != "started":
            raise BenchReplyError(f"the native renderer did not start: {started}")
        self.gtk_version: str = started["gtk"]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.events.put({"event": "garbage", "line": line})
        self.events.put({"event": "exit"})

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            event = self.events.get(timeout=timeout)
        except queue.Empty:
            raise BenchReplyError(f"the native renderer said nothing in {timeout} s") from None
        if event.get("event") in ("exit", "error", "garbage"):
            raise BenchReplyError(f"native renderer: {event}\n" + "\n".join(self.stderr[-20:]))
        return event

    def reply(self, sim: str, tokens: int, timeout: float = 300) -> Reply:
        """Stream one answer into the view; its per-chunk latencies."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": "stream", "sim": sim, "prompt": PROMPT}) + "\n")
        self.proc.stdin.flush()
        event = self._next(timeout)
        samples = event.pop("samples_ms")
        if event.get("unstamped") or len(samples) != tokens or event["chunks"] != tokens:
            raise BenchReplyError(f"native: {len(samples)} samples for {tokens} chunks: {event}")
        return Reply(samples, event["chunks"], event["frames"], extra=event)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write('{"cmd": "close"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=15)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()

    def __enter__(self) -> "NativeRenderer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
