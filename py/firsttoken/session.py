"""What one chat request needs of its core, and nothing else.

`firsttoken.core.Core` dispatches the page's messages; each `chat.send` becomes a
`firsttoken.chat.ChatRequest`, which needs the core's collaborators (its transport and
clock, its delta pacing, what each gateway holds, the cache, the calibration, the
governors, the notices) and its preparation. They are handed over as one `Session`, so
that a request never reaches into the core, and `chat` does not import `core`.
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
    from .protocol import Event
    from .ratelimit import Governor
    from .settings import ChatSettings
    from .stream.client import Transport
    from .tokens import Calibration

__all__ = ["Prepare", "Session"]

#: Compress, count and fit a conversation (`firsttoken.prepare`).
Prepare = Callable[[list[dict[str, Any]], "ChatSettings"], Awaitable["Prepared"]]


@dataclass(frozen=True, slots=True)
class Session:
    """The collaborators a `ChatRequest` uses, shared by every request of one core."""

    transport: Transport
    #: Milliseconds since the epoch.
    clock: Callable[[], float]
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
