"""The native renderer's driver, and what every renderer's driver shares.

Each driver (here `NativeRenderer`; the pages' in `pages.py`) runs one reply at a time
and returns every chunk's latency from the gateway's send stamp to the end of the frame
that painted it, after checking what it measured: one sample per chunk sent, on the
server's clock, the reply finished.

`NativeRenderer` runs bench/native/gtk_renderer.py (a GTK 4 text view) under Xvfb with
Debian's Python, over JSON lines (harness/gtk.py's `GtkProcess`, the WebKit host's driver too).
"""

from __future__ import annotations

import math
import queue
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.gtk import GtkProcess

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


# ---- native ----------------------------------------------------------------------
class NativeRenderer(GtkProcess):
    """bench/native/gtk_renderer.py in its own process, driven over JSON lines."""

    def __init__(self, url: str, *, display: str, markdown: bool = False, started_timeout: float = 60) -> None:
        args = ["--url", url, "--size", "x".join(map(str, WINDOW))]
        if markdown:
            args.append("--markdown")
        self.markdown = markdown
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        # Xvfb has no GPU: draw in software (cairo), as the WebKit host composites in
        # software (HardwareAccelerationPolicy.NEVER). GTK's default GL renderer runs on
        # Mesa's llvmpipe here, which made frames 2–3× slower at 500 tok/s.
        super().__init__(GTK_RENDERER, args, display=display, env={"GSK_RENDERER": "cairo"})
        started = self._next(started_timeout)
        if started.get("event") != "started":
            raise BenchReplyError(f"the native renderer did not start: {started}")
        self.gtk_version: str = started["gtk"]

    def on_event(self, event: dict[str, Any]) -> None:
        self.events.put(event)

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
        self.command({"cmd": "stream", "sim": sim, "prompt": PROMPT})
        event = self._next(timeout)
        samples = event.pop("samples_ms")
        if event.get("unstamped") or len(samples) != tokens or event["chunks"] != tokens:
            raise BenchReplyError(f"native: {len(samples)} samples for {tokens} chunks: {event}")
        return Reply(samples, event["chunks"], event["frames"], extra=event)
