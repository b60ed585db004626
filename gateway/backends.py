"""What answers the API: the built-in model or an upstream one, behind one seam.

`create_app` picks one `Backend` and every route asks it; nothing else in the gateway
asks which it is. A backend answers a request of any dialect (gateway/dialects)
already read, parsed and admitted (gateway/chat_body.py, gateway/limits), and the
model listings.

- `SimulatedBackend`: the built-in model (gateway/simulator.py), one answer paced the
  same way in every dialect and framed in the dialect's wire format, its CPU work (an
  answer's preparation, a non-streamed answer's encoding, a large prompt's count and
  token ids) off the event loop (gateway/offload.py). Its prefix cache is the client's
  account's (gateway/access.py: the API key's hash, else the address), never a
  firsttoken client's own id: every client of one key meets the same server.
- `UpstreamBackend`: a real API (gateway/upstream.py): each route's body passed on as
  the client sent it (references expanded) to the upstream's route of the same name.

`fail_open` is what the backend makes of Redis being down, by default: open for the
built-in model (nothing to protect but this process), closed in front of an upstream
(its quota costs money).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Iterator, Protocol
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from .access import client_of
from .chat_body import ChatBody
from .counting import PromptCounter
from .errors import ANTHROPIC, APIError
from .offload import Offload
from .prefill import DEFAULT_CACHE_ENTRIES
from .simulator import FIRST_ANSWER_HEADER, FIRST_TOKEN_HEADER, MODEL_IDS, SIM_HEADER, SimParams, Simulator, render_ids, wall_clock_ms
from .upstream import Upstream

if TYPE_CHECKING:  # types only
    from .dialects import Framing

__all__ = ["Backend", "SimulatedBackend", "UpstreamBackend"]

# Prompts larger than this are counted in the worker process (gateway/offload.py).
_COUNT_IN_PROCESS_CHARS = 256 * 1024


class Backend(Protocol):
    #: For /healthz: "simulator" or "upstream".
    name: str
    fail_open: bool

    async def answer(self, request: Request, read: ChatBody) -> Response: ...

    async def models(self, request: Request) -> Response: ...

    async def model(self, request: Request, model_id: str) -> Response: ...

    async def aclose(self) -> None: ...


class SimulatedBackend:
    name = "simulator"
    fail_open = True

    def __init__(self, params: SimParams, offload: Offload, cache_entries: int = DEFAULT_CACHE_ENTRIES,
                 counter: PromptCounter | None = None) -> None:
        self.offload = offload
        counter = counter or PromptCounter.load()
        # Exact counts when firsttoken.tokens loads, else the simulator's rough one.
        exact = {"count_tokens": _counting_off_loop(offload, counter)} if counter.exact else {}
        self.simulator = Simulator(params, sleep=asyncio.sleep, render=_render_off_loop(offload),
                                   cache_entries=cache_entries, **exact)

    async def answer(self, request: Request, read: ChatBody) -> Response:
        simulator, chat = self.simulator, read.chat
        params = simulator.params(request.headers.get(SIM_HEADER))
        simulator.check_status(params)
        read.dialect.check_supported(chat)
        # The prompt's count, when flow control made one (gateway/counting.py).
        answer = await self.offload.run(simulator.prepare, chat, params, client_of(request.scope).account,
                                        read.dialect.cache_breakpoints(chat), read.prompt_tokens)
        framing = read.dialect.framing(chat, answer.outcome, stamp=wall_clock_ms if params.stamp else None)
        headers = {**framing.headers, FIRST_TOKEN_HEADER: f"{answer.first_token_ms:.3f}",
                   FIRST_ANSWER_HEADER: f"{simulator.first_answer_ms(answer, params, framing.summary):.3f}"}
        if not chat.stream:
            content = await self.offload.run(_whole, framing, answer.pieces, answer.thinking)
            return Response(content, media_type="application/json", headers=headers)
        return StreamingResponse(
            simulator.stream(framing, params, answer),
            media_type="text/event-stream; charset=utf-8",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no", **headers},
        )

    async def models(self, request: Request) -> Response:
        created = int(time.time())
        return JSONResponse({"object": "list", "data": [_model_object(m, created) for m in MODEL_IDS]})

    async def model(self, request: Request, model_id: str) -> Response:
        if model_id not in MODEL_IDS:
            raise APIError(404, f"The model '{model_id[:100]}' does not exist or you do not have access to it.",
                           param="model", code="model_not_found")
        return JSONResponse(_model_object(model_id, int(time.time())))

    async def aclose(self) -> None:
        pass


class UpstreamBackend:
    name = "upstream"
    fail_open = False

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    async def answer(self, request: Request, read: ChatBody) -> Response:
        dialect = read.dialect
        return await self.upstream.forward(dialect.upstream_path, read.body, request.headers,
                                           anthropic=dialect.vendor == ANTHROPIC)

    async def models(self, request: Request) -> Response:
        return await self.upstream.get("/models", request.headers)

    async def model(self, request: Request, model_id: str) -> Response:
        return await self.upstream.get(f"/models/{quote(model_id, safe='')}", request.headers)

    async def aclose(self) -> None:
        await self.upstream.aclose()


def _whole(framing: Framing, pieces: Iterator[str], thinking: Iterator[str]) -> bytes:
    """A non-streamed answer, its thinking with it, encoded (CPU work: off the loop)."""
    reasoning = "".join(thinking)
    return framing.whole("".join(pieces), reasoning)


def _model_object(model_id: str, created: int) -> dict:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "firsttoken"}


def _large(messages: list) -> bool:
    """Whether a prompt is large enough that its encoding belongs in the worker process."""
    size = sum(len(m.get("content") or "") if isinstance(m.get("content"), str) else 4096 for m in messages)
    return size > _COUNT_IN_PROCESS_CHARS


def _render_off_loop(offload: Offload):
    """The simulator's prompt rendering, a large prompt's in the worker process (its
    encoding holds the GIL as counting does)."""

    def render(messages: list, model: str):
        if _large(messages):
            return offload.in_process(render_ids, messages, model)
        return render_ids(messages, model)

    return render


def _counting_off_loop(offload: Offload, counter: PromptCounter):
    """The exact prompt count, a large prompt's in the worker process."""

    def count(messages: list, model: str) -> int:
        if _large(messages):
            return offload.in_process(counter.chat, messages, model)
        return counter.chat(messages, model)

    return count
