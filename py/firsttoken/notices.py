"""Notices: things the user should know that are not errors.

Three sources report them, each with a type of its own: the prompt cache falling back to
memory (`CacheDegraded`, from `firsttoken.cache`'s `on_notice`), counts that are
estimates (`TokensEstimated`): the page's tokenizer could not load (`counting_notice`),
or the model has no public tokenizer (Claude: `firsttoken.prepare.preparer`), and a
server refusing the reasoning parameters or the reasoning sent back (`ReasoningRefused`,
`ReplayDropped`: `firsttoken.chat` sends them at once, with the request it retries). They can happen at any moment (a background write failing), but
the page shows each beside a request, so they are collected here and go out once each,
as `notice` events (`firsttoken.protocol.Notice`), with the request during which they
happened (`firsttoken.chat`: after `chat.prepared`, and before the request's end).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Union

from .errors import FirstTokenError
from .protocol import Notice

__all__ = ["CacheDegraded", "ReasoningRefused", "ReplayDropped", "TokensEstimated", "UserNotice", "Notices",
           "counting_notice"]

#: Notices kept while no request takes them; more are dropped (each source reports a
#: condition once per session, so this is only a bound).
MAX_PENDING = 32


@dataclass(frozen=True, slots=True)
class CacheDegraded:
    """The prompt cache's store failed (`reason`: the `CacheError` code); prepared
    system messages are kept in `store` ("memory") for the rest of the session."""

    code: ClassVar[str] = "cache_degraded"

    reason: str
    message: str
    store: str = "memory"

    def to_event(self, request_id: str) -> Notice:
        return Notice(id=request_id, code=self.code, reason=self.reason, store=self.store, message=self.message)


@dataclass(frozen=True, slots=True)
class TokensEstimated:
    """Counts are estimates. `reason`: why; an error code (the tokenizer did not load),
    or `no_public_tokenizer` (the model's maker publishes none)."""

    code: ClassVar[str] = "tokens_estimated"

    reason: str
    message: str

    def to_event(self, request_id: str) -> Notice:
        return Notice(id=request_id, code=self.code, reason=self.reason, message=self.message)


@dataclass(frozen=True, slots=True)
class ReasoningRefused:
    """The server refused the reasoning parameters for this model with a 400 (`reason`:
    the parameter it named, if it did); the request was sent again without them, and
    so are the next ones to that server and model (`firsttoken.chat`)."""

    code: ClassVar[str] = "reasoning_unsupported"

    reason: str | None
    message: str

    def to_event(self, request_id: str) -> Notice:
        return Notice(id=request_id, code=self.code, reason=self.reason, message=self.message)


@dataclass(frozen=True, slots=True)
class ReplayDropped:
    """The server refused the reasoning sent back from earlier answers with a 400; the
    request was sent once more without it (`firsttoken.replay`)."""

    code: ClassVar[str] = "reasoning_replay_dropped"

    message: str

    def to_event(self, request_id: str) -> Notice:
        return Notice(id=request_id, code=self.code, message=self.message)


UserNotice = Union[CacheDegraded, ReasoningRefused, ReplayDropped, TokensEstimated]


class Notices:
    """Notices reported and not yet sent."""

    def __init__(self) -> None:
        self._pending: list[UserNotice] = []

    def add(self, notice: UserNotice) -> None:
        """Report one (PROTOCOL.md, `notice`)."""
        if len(self._pending) < MAX_PENDING:
            self._pending.append(notice)

    def take(self, request_id: str) -> list[Notice]:
        """The pending notices as events about `request_id`; none stay pending."""
        pending, self._pending = self._pending, []
        return [notice.to_event(request_id) for notice in pending]


def counting_notice(exc: Exception, *, cache: bool) -> TokensEstimated:
    """The notice that says counts have become estimates, and why."""
    reason = exc.code if isinstance(exc, FirstTokenError) else "tokenizer_error"
    detail = exc.message if isinstance(exc, FirstTokenError) else f"{type(exc).__name__}: {exc}"
    off = " The prompt cache and its gateway references are off until it does." if cache else ""
    return TokensEstimated(
        reason=reason, message=f"Token counts are estimates: the tokenizer did not load ({detail}).{off}"
    )
