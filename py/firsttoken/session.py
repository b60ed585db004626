"""What one chat request needs of its core, and nothing else.

`firsttoken.core.Core` dispatches the page's messages; each `chat.send` becomes a
`firsttoken.chat.ChatRequest`, which needs the core's collaborators (its transport and
clock, its delta pacing, what each gateway holds, the cache, the calibration, the
governors, the notices) and its preparation. They are handed over as one `Session`, so
that a request never reaches into the core, and `chat` does not import `core`.

**One clock unit: milliseconds, as a float.** `clock` and `sleep` both speak it. Every
moment the core reports goes out in ms (`chat.delta` `t`, `chat.stall` `since`, the
timings), comparable with the page's clock (`performance.timeOrigin + now()`, epoch
ms with a fraction); and whole-ms moments add and subtract exactly in a float, where
seconds do not (0.3 s is 0.29999… of a second, and a threshold compared in seconds
can miss by one tick). Seconds remain only at the edges that speak them, converted
there: the settings and the wire's `*_s` fields, HTTP's rate-limit headers (the
governor's `now`), and the `asyncio.sleep` the core is given (`firsttoken.core`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:  # types only: none of these imports this module
    from .cache import Cache
    from .cache.refs import GatewayRefs
    from .notices import Notices
    from .pacing import DeltaPacer
    from .prepare import Prepared
    from .prepare.preparer import Decided
    from .protocol import Event
    from .ratelimit import Governor
    from .settings import ChatSettings
    from .stream.client import Transport
    from .tokens import Calibration

__all__ = ["Prepare", "Session"]

#: Compress, count and fit a conversation (`firsttoken.prepare`).
#: The third argument is what the preparation depends on, decided once by the request
#: (`firsttoken.prepare.preparer.decide`).
Prepare = Callable[[list[dict[str, Any]], "ChatSettings", "Decided"], Awaitable["Prepared"]]


@dataclass(frozen=True, slots=True)
class Session:
    """The collaborators a `ChatRequest` uses, shared by every request of one core."""

    transport: Transport
    #: Now, in milliseconds since the epoch.
    clock: Callable[[], float]
    #: Wait this many milliseconds (on the same clock).
    sleep: Callable[[float], Awaitable[Any]]
    post_event: Callable[[Event], None]
    pacer: DeltaPacer
    refs: GatewayRefs
    cache: Cache | None
    calibration: Calibration
    notices: Notices
    #: The rate-limit governor of one API (by base URL).
    governor: Callable[[str], Governor]
    prepare: Prepare
    #: `(base_url, model)` pairs whose server refused the reasoning parameters with a
    #: 400 (`firsttoken.chat`): asked without them for the core's life.
    reasoning_refused: set[tuple[str, str]] = field(default_factory=set)
    #: The benchmark seam: the server's send stamps in one network chunk (epoch ms),
    #: passed on with its text (`chat.delta` `stamps`), or None: no chunk is scanned.
    #: Only a benchmark sets it (`Core(stamps=...)`; `firsttoken.stream.client.sent_stamps`
    #: reads the built-in model's `stamp=1`).
    stamps: Callable[[bytes], list[float]] | None = None
