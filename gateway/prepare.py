"""`x-firsttoken-prepare: <level>`: the gateway prepares a prompt as the page's Python would.

A first visit on a slow link downloads Python for half a minute (docs/boot.md); a
prompt sent meanwhile should not wait for it. So the page, while its own Python is not
ready, posts the conversation as written to `POST /v1/chat/completions` with this
header, and the gateway runs on CPython the pipeline the page's core runs in the
browser (`firsttoken.prepare`, through the core's own `Preparer`): compress at
`<level>` (`off`, `safe`, `balanced`, `max`), count exactly, fit into the model's
budget. The prepared body then goes on like any other: flow control counts it, the
backend (the built-in model, or the upstream with the client's key as usual) answers
it. The answer, when streamed, is led by one named event

    event: firsttoken.prepared
    data: {"v":2,"type":"chat.prepared","compression":…,"prompt_tokens":…,…}

whose data is the core's `chat.prepared` (bridge/PROTOCOL.md) without an `id`: the page
paints it as it paints the core's. A named event is skipped by OpenAI-style clients,
which read only unnamed `data:` events; the official `openai` client does.

`PrepareChat` is an ASGI middleware between `ReadChat` (which left the body parsed in
the scope) and flow control (which then counts the prompt the model reads). It takes
the header on the three dialects' routes (`/v1/chat/completions`, `/v1/responses`,
`/v1/messages`): the page sends early in the API its settings pick (issue 45, item 2;
js/boot/first-send.js). Every dialect's prompt is read as Chat Completions messages
(`ChatRequest.messages`); the prepared ones go back into the dialect's prompt fields
through the core's own `request_body` (firsttoken.stream.dialects), so a Responses or
Messages prompt is written exactly as the page's Python writes it, and the body's other
fields (model, limits, reasoning) stay as sent. Preparing is CPU work: it runs off the
event loop.

What is decided, and where (issue 47, item 4): the route names the dialect, as the
page's "API" setting does, so the one table here (`_API`) only translates a route's
dialect into the core's name for it and hands it to the core as that setting; the
core's `Preparer` then decides everything a preparation depends on (the dialect by
`api_for`, the encoding, the budget) and carries it on `Prepared`, and the prompt is
written back in `prepared.api`, the core's decision, not re-derived here. The table
cannot go: the gateway's dialects are named by their routes ("chat", "responses",
"messages"), the core's by `firsttoken.settings.APIS`, and leaving the setting empty
would have the core pick by model name, which may differ from the route the client
chose (a Responses request for `gpt-4o` would be prepared as Chat Completions).

Refused, with OpenAI's error object: the header on another route, an unknown level
(400 `invalid_value`), and a conversation whose system messages and newest turn
cannot fit the model's context (400 `context_budget_exceeded`, as the core's error).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, AsyncIterable, AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from firsttoken.compress import LEVELS
from firsttoken.errors import ContextBudgetExceeded
from firsttoken.notices import Notices
from firsttoken.prepare.preparer import Preparer
from firsttoken.protocol import ChatPrepared
from firsttoken.settings import ChatSettings
from firsttoken.stream.dialects import request_body

from .chat_body import ChatBody, chat_of, set_chat
from .dialects import CHAT, MESSAGES, RESPONSES, error_response
from .errors import APIError, invalid
from .offload import Run, in_thread
from .validation import replay_body

__all__ = ["PREPARE_HEADER", "PREPARED_EVENT", "PrepareChat", "lead_with_prepared", "prepare_chat"]

PREPARE_HEADER = "x-firsttoken-prepare"
#: The SSE event name of the preparation's report.
PREPARED_EVENT = "firsttoken.prepared"
_STATE_KEY = "prepared"
#: Each route's dialect by its name in the core's settings (`ChatSettings.api`): the
#: client's choice handed to the core, which decides from it (the module's docstring).
_API = {CHAT.name: "chat_completions", RESPONSES.name: "responses", MESSAGES.name: "anthropic_messages"}
#: The fields that hold a Responses or Messages prompt: what preparing rewrites.
_PROMPT_FIELDS = frozenset({"input", "instructions", "messages", "system"})


def prepare_chat(read: ChatBody, level: str) -> tuple[ChatBody, ChatPrepared]:
    """`read` with its messages prepared at `level` as the page's core prepares them,
    and the report (`chat.prepared`, no id). Raises `ContextBudgetExceeded`."""
    chat = read.chat
    api = _API[read.dialect.name]
    settings = ChatSettings(model=chat.model, compress=level, max_tokens=chat.max_tokens, api=api)
    preparer = Preparer(clock=lambda: time.monotonic() * 1000.0, notices=Notices())
    # No storage behind this preparer (no cache): the coroutine never waits on I/O, so
    # it runs to its end here, in the pool thread that called this.
    prepared = asyncio.run(preparer.prepare(list(chat.messages), settings))
    if read.dialect is CHAT:
        data = {**chat.raw, "messages": prepared.messages}
    else:
        # The prompt's fields rewritten by the core's builder, the rest as sent.
        built = request_body(prepared.messages, settings, prepared.api, reasoning=False)
        data = {k: v for k, v in chat.raw.items() if k not in _PROMPT_FIELDS}
        data.update((k, v) for k, v in built.items() if k in _PROMPT_FIELDS)
    try:
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # lone surrogates from \u escapes: keep them escaped
        body = json.dumps(data, separators=(",", ":")).encode()
    report = ChatPrepared(
        compression=prepared.compression, saved=prepared.saved, saved_unit=prepared.saved_unit,
        budget=prepared.budget, window_known=prepared.window_known, prompt_tokens=prepared.prompt_tokens,
        exact=prepared.exact, dropped=prepared.dropped, truncated=prepared.truncated,
        prepare_ms=prepared.prepare_ms, request_bytes=len(body), images_dropped=prepared.images_dropped,
    )
    return ChatBody(read.dialect, read.dialect.check(data, body), body), report


class PrepareChat:
    """ASGI middleware: prepares the request's chat when it carries `x-firsttoken-prepare`
    (see the module's docstring); `run` does the CPU work off the event loop."""

    def __init__(self, app: ASGIApp, *, run: Run = in_thread) -> None:
        self.app = app
        self.run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        read = chat_of(scope)
        level = Headers(scope=scope).get(PREPARE_HEADER) if read is not None else None
        if read is None or level is None:
            await self.app(scope, receive, send)
            return
        try:
            prepared, report = await self._prepare(read, level.strip().lower())
        except APIError as error:
            await error_response(error, scope)(scope, receive, send)
            return
        set_chat(scope, prepared)
        scope["state"][_STATE_KEY] = report
        await self.app(scope, replay_body(prepared.body, receive), send)

    async def _prepare(self, read: ChatBody, level: str) -> tuple[ChatBody, ChatPrepared]:
        if level != "off" and level not in LEVELS:
            raise invalid(f"'{PREPARE_HEADER}' must be off or one of {', '.join(LEVELS)}; got '{level[:40]}'.",
                          param=PREPARE_HEADER, code="invalid_value")
        try:
            return await self.run(prepare_chat, read, level)
        except ContextBudgetExceeded as exc:
            raise APIError(400, exc.message or "The conversation does not fit the model's context.",
                           param="messages", code=exc.code) from None


def lead_with_prepared(scope: Scope, response: Response) -> Response:
    """`response` led by the `firsttoken.prepared` event, when the request was prepared
    and the answer is a stream that began (2xx, `text/event-stream`); else as it is (an
    error's body is the API's JSON, which an event would break)."""
    report: ChatPrepared | None = scope.get("state", {}).get(_STATE_KEY)
    if (
        report is None
        or not isinstance(response, StreamingResponse)
        or not 200 <= response.status_code < 300
        or not response.headers.get("content-type", "").startswith("text/event-stream")
    ):
        return response
    event = f"event: {PREPARED_EVENT}\ndata: {json.dumps(report.to_dict(), separators=(',', ':'))}\n\n".encode()
    response.body_iterator = _after(event, response.body_iterator)
    return response


async def _after(first: bytes, rest: AsyncIterable[Any]) -> AsyncIterator[Any]:
    yield first
    async for chunk in rest:
        yield chunk
