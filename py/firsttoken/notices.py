"""Notices: things the user should know that are not errors.

Two sources report them: the prompt cache falling back to memory
(`firsttoken.cache`, `on_notice`), and counting falling back to estimates when the
page's tokenizer could not load (`counting_notice`). They can happen at any moment (a background write
failing), but the page shows each beside a request, so they are collected here and go
out once each, as `notice` events, with the request during which they happened
(`firsttoken.chat`: after `chat.prepared`, and before the request's end).
"""

from __future__ import annotations

from typing import Any, Mapping

from .protocol import Notice

__all__ = ["Notices", "counting_notice"]

#: Notices kept while no request takes them; more are dropped (each source reports a
#: condition once per session, so this is only a bound).
MAX_PENDING = 32


class Notices:
    """Notices reported and not yet sent."""

    def __init__(self) -> None:
        self._pending: list[Mapping[str, Any]] = []

    def add(self, notice: Mapping[str, Any]) -> None:
        """Report one: `{code, message, reason?, store?}` (PROTOCOL.md, `notice`)."""
        if len(self._pending) < MAX_PENDING:
            self._pending.append(notice)

    def take(self, request_id: str) -> list[Notice]:
        """The pending notices as events about `request_id`; none stay pending."""
        pending, self._pending = self._pending, []
        return [Notice(id=request_id, **notice) for notice in pending]


def counting_notice(exc: Exception, *, cache: bool) -> dict[str, Any]:
    """The `notice` that says counts have become estimates, and why."""
    from .errors import FirstTokenError

    reason = exc.code if isinstance(exc, FirstTokenError) else "tokenizer_error"
    detail = exc.message if isinstance(exc, FirstTokenError) else f"{type(exc).__name__}: {exc}"
    off = " The prompt cache and its gateway references are off until it does." if cache else ""
    return {
        "code": "tokens_estimated",
        "reason": reason,
        "message": f"Token counts are estimates: the tokenizer did not load ({detail}).{off}",
    }
