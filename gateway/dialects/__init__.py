"""The API dialects the gateway speaks, one definition each, found by route.

| route                       | dialect                         | errors    | resumable |
|-----------------------------|---------------------------------|-----------|-----------|
| `POST /v1/chat/completions` | OpenAI Chat Completions (`chat`) | OpenAI    | yes       |
| `POST /v1/responses`        | OpenAI Responses (`responses`)   | OpenAI    | yes       |
| `POST /v1/messages`         | Anthropic Messages (`messages`)  | Anthropic | yes       |

A `Dialect` brings together what differs between them, each piece in its module:

- the request: `check` validates a decoded body into one `validation.ChatRequest`
  (its prompt as chat messages, so that counting and the built-in model read every
  dialect alike); `parse` does it from bytes, in the worker process for large bodies;
- where its system texts stand, for cache references (`ref_sites`, gateway/cache_refs.py);
- what the built-in model refuses of it (`check_supported`), as the real API would;
- its answer on the wire (`framing`): a sans-IO `Framing` per answer, text in, bytes
  out, thinking included (gateway/dialects/reasoning.py: who thinks, how long, the
  seals); the built-in model's pacing (gateway/simulator.py) is the same for all three;
- how the built-in model's prefix cache reads it (`cache_breakpoints`): automatically
  (None), as OpenAI caches, or only at the blocks it marks, as Anthropic's
  `cache_control` does (gateway/prefill.py);
- where its usage and text stand in an answer (`usage_total`, `event_text`,
  `body_text`), for flow control to settle what an answer cost
  (gateway/limits/usage.py);
- its vendor (`vendor`): the shape of its errors (gateway/errors.py, `error_response`
  here) and the headers an upstream wants (gateway/upstream.py);
- its upstream route (`upstream_path`), the route of the same name;
- whether a firsttoken client's streamed answer is resumable (gateway/streams): all
  three are; a stream's events are read for its status in the dialect's own shape
  (gateway/streams/events.py, by the dialect's `name`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from starlette.responses import Response
from starlette.types import Scope

from .. import cache_refs
from ..errors import ANTHROPIC, OPENAI, APIError
from ..validation import ChatRequest
from . import chat, messages, responses

__all__ = ["CHAT", "DIALECTS", "MESSAGES", "RESPONSES", "Dialect", "Framing", "dialect_at", "error_response"]


class Framing(Protocol):
    """One answer in a dialect's wire format, made per answer (it holds its ids, its
    event numbers, the text so far). Sans-IO: text in, bytes out."""

    #: Response headers of this answer (Anthropic's `request-id`).
    headers: dict[str, str]
    #: Whether its thinking streams as a summary the client asked for (the built-in
    #: model then charges the summary's first-answer delay, `summary_ms`).
    summary: bool

    def opening(self) -> bytes:
        """The events before the first piece of text."""

    def delta(self, text: str) -> bytes:
        """One piece of text as an event."""

    def reasoning(self, text: str) -> bytes:
        """One piece of thinking as an event, or b"" where the API hides it (the time
        it takes passes all the same)."""

    def answer_start(self) -> bytes:
        """The events between the thinking and the answer's first piece (the end of the
        thinking block or item, its seal, the answer's opening)."""

    def closing(self) -> bytes:
        """The events after the last piece: why it ended, its usage, the end."""

    def failure(self, message: str, code: str) -> bytes:
        """An error event in the middle of the stream (its end)."""

    def whole(self, text: str, reasoning: str = "") -> bytes:
        """The whole answer, its thinking (`reasoning`) with it, as one JSON body
        (`stream` false)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """One API dialect (see the module's docstring)."""

    name: str
    path: str
    upstream_path: str
    vendor: str
    parse: Callable[[bytes], ChatRequest]
    check: Callable[[Any, bytes], ChatRequest]
    ref_sites: Callable[[Any], list[cache_refs.Site]]
    check_supported: Callable[[ChatRequest], None]
    #: `framing(req, outcome, stamp=None)`: one answer's `Framing`.
    framing: Callable[..., Framing]
    usage_total: Callable[[Sequence[dict[str, Any]], bool], int | None]
    event_text: Callable[[Any], str]
    body_text: Callable[[Any], str]
    #: The `object` of a dry run's answer (gateway/limits/dryrun.py).
    dry_run_object: str
    resumable: bool
    #: The blocks a request marks for caching, as (message, part), or None: cache
    #: automatically.
    cache_breakpoints: Callable[[ChatRequest], list[tuple[int, int]] | None]


def _automatic(req: ChatRequest) -> None:
    """No breakpoints: the prefix cache works without being asked (OpenAI's)."""
    return None


def _dialect(module: Any, *, name: str, path: str, vendor: str, framing: Callable[..., Framing],
             ref_sites: Callable[[Any], list[cache_refs.Site]], dry_run_object: str, resumable: bool = False,
             cache_breakpoints: Callable[[ChatRequest], list[tuple[int, int]] | None] = _automatic) -> Dialect:
    """A dialect from its module, which names its pieces alike (`parse`, `check`,
    `check_supported`, `usage_total`, `event_text`, `body_text`). Its upstream route is
    its own without `/v1`: an upstream's base URL ends in `/v1`."""
    return Dialect(
        name=name, path=path, upstream_path=path.removeprefix("/v1"), vendor=vendor, parse=module.parse,
        check=module.check, ref_sites=ref_sites, check_supported=module.check_supported, framing=framing,
        usage_total=module.usage_total, event_text=module.event_text, body_text=module.body_text,
        dry_run_object=dry_run_object, resumable=resumable, cache_breakpoints=cache_breakpoints,
    )


CHAT = _dialect(chat, name="chat", path="/v1/chat/completions", vendor=OPENAI, framing=chat.ChatFraming,
                ref_sites=cache_refs.chat_sites, dry_run_object="chat.completion.dry_run", resumable=True)
RESPONSES = _dialect(responses, name="responses", path="/v1/responses", vendor=OPENAI, framing=responses.ResponsesFraming,
                     ref_sites=cache_refs.responses_sites, dry_run_object="response.dry_run", resumable=True)
MESSAGES = _dialect(messages, name="messages", path="/v1/messages", vendor=ANTHROPIC, framing=messages.MessagesFraming,
                    ref_sites=cache_refs.messages_sites, dry_run_object="message.dry_run", resumable=True,
                    cache_breakpoints=messages.cache_breakpoints)

DIALECTS = (CHAT, RESPONSES, MESSAGES)
_BY_PATH = {d.path: d for d in DIALECTS}


def dialect_at(path: str) -> Dialect | None:
    """The dialect whose route `path` is, or None."""
    return _BY_PATH.get(path)


def error_response(error: APIError, scope: Scope) -> Response:
    """`error` in the shape of the route asked: Anthropic's under `/v1/messages` (its
    sub-routes too, which answer 404 in the shape their client parses), OpenAI's
    everywhere else."""
    path = scope.get("path", "")
    anthropic = path == MESSAGES.path or path.startswith(MESSAGES.path + "/")
    return error.response(ANTHROPIC if anthropic else OPENAI)
