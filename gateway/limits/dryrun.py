"""`?dry_run=true` on any dialect's route (`POST /v1/chat/completions`, `/v1/responses`,
`/v1/messages`): the seed article's step 1.

The request is read, its cache references expanded and validated exactly as a real one
(so a bad body gets the same 4xx), its prompt counted; then, instead of an answer, what
the gateway would do with it: its exact `prompt_tokens` (`estimated_tokens`, the
article's name), whether it fits the model's context with its `max_tokens`, and the
limiter's outlook (admit, queue for about N s, or refuse with a retry-after). Nothing
is generated, no bucket moves.
"""

from __future__ import annotations

import math
from urllib.parse import parse_qs
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from ..shared import SharedStateDown
from ..validation import ChatRequest

if TYPE_CHECKING:  # types only; none of these imports this module
    from .gcra import BucketView
    from .limiter import Ask, Outlook

__all__ = ["DryRun", "wants_dry_run"]


def wants_dry_run(scope: Scope) -> bool:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("dry_run", [])
    return any(v.lower() in ("true", "1") for v in values)


class DryRun:
    """`?dry_run=true`: the count and the limiter's outlook, nothing generated, nothing
    spent."""

    def __init__(
        self, chat: ChatRequest, *, object: str, ask: Ask, prompt_tokens: int, window: int | None,
        outlook: Callable[[Ask], Awaitable[Outlook]], fail_open: bool | None,
        headers: Callable[[Sequence[BucketView]], dict[str, str]],
    ) -> None:
        """`chat` and what flow control made of it (`ask` of the buckets, its
        `prompt_tokens`, the model's context `window`); `object` names the answer by
        dialect (`chat.completion.dry_run`, `response.dry_run`, `message.dry_run`);
        `outlook` asks the limiter without spending, `fail_open` is what a limiter that
        is down means, and `headers` are the rate-limit headers of a verdict's buckets."""
        self.chat, self.object, self.ask, self.prompt_tokens, self.window = chat, object, ask, prompt_tokens, window
        self.outlook, self.fail_open, self.headers = outlook, fail_open, headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chat, window = self.chat, self.window
        limiter: dict[str, Any] = {"action": "admit", "wait_s": 0.0}
        headers: dict[str, str] = {}
        if self.ask.ids:
            try:
                outlook = await self.outlook(self.ask)
            except SharedStateDown:
                limiter = {"action": "refuse" if self.fail_open is False else "admit", "wait_s": 0.0, "limiter": "down"}
            else:
                headers = self.headers(outlook.verdict.views)
                limiter = {"action": outlook.action, "wait_s": round(outlook.wait_s, 3) if math.isfinite(outlook.wait_s) else None}
                if outlook.action == "refuse":
                    limiter["retry_after_s"] = math.ceil(outlook.wait_s) if math.isfinite(outlook.wait_s) else None
        needed = self.prompt_tokens + (chat.max_tokens or 0)
        body = {
            "object": self.object,
            "model": chat.model,
            "prompt_tokens": self.prompt_tokens,
            "estimated_tokens": self.prompt_tokens,
            "max_tokens": chat.max_tokens,
            "context_window": window,
            # An unknown window (a model not in the table, no context_window): unknown.
            "fits": None if window is None else needed <= window if chat.max_tokens is not None else self.prompt_tokens < window,
            "limiter": limiter,
        }
        await JSONResponse(body, headers=headers)(scope, receive, send)
