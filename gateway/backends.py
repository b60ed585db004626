"""What answers the API: the built-in model or an upstream one, behind one seam.

`create_app` picks one `Backend` and every route asks it; nothing else in the gateway
asks which it is. A backend answers a chat request already read, parsed and admitted
(gateway/chat_body.py, gateway/limits), and the model listings.

- `SimulatedBackend`: the built-in model (gateway/simulator.py), its CPU work (an
  answer's preparation, a non-streamed answer's encoding, a large prompt's count) off
  the event loop (gateway/offload.py).
- `UpstreamBackend`: a real OpenAI-compatible API (gateway/upstream.py), the body
  passed on as the client sent it (references expanded).

`fail_open` is what the backend makes of Redis being down, by default: open for the
built-in model (nothing to protect but this process), closed in front of an upstream
(its quota costs money).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from .chat_body import ChatBody
from .errors import APIError
from .offload import Offload
from .simulator import MODEL_IDS, SIM_HEADER, SimParams, Simulator
from .upstream import Upstream

__all__ = ["Backend", "SimulatedBackend", "UpstreamBackend"]

# Prompts larger than this are counted in the worker process (gateway/offload.py).
_COUNT_IN_PROCESS_CHARS = 256 * 1024


class Backend(Protocol):
    #: For /healthz: "simulator" or "upstream".
    name: str
    fail_open: bool

    async def chat(self, request: Request, read: ChatBody) -> Response: ...

    async def models(self, request: Request) -> Response: ...

    async def model(self, request: Request, model_id: str) -> Response: ...

    async def aclose(self) -> None: ...


class SimulatedBackend:
    name = "simulator"
    fail_open = True

    def __init__(self, params: SimParams, offload: Offload) -> None:
        self.offload = offload
        counter = _exact_counter(offload)
        self.simulator = Simulator(params, sleep=asyncio.sleep, **({"count_tokens": counter} if counter else {}))

    async def chat(self, request: Request, read: ChatBody) -> Response:
        simulator, chat = self.simulator, read.chat
        params = simulator.params(request.headers.get(SIM_HEADER))
        simulator.check_status(params)
        simulator.check_request(chat)
        answer = await self.offload.run(simulator.prepare, chat, params)
        if not chat.stream:
            content = await self.offload.run(simulator.complete, chat, answer)
            return Response(content, media_type="application/json")
        return StreamingResponse(
            simulator.stream(chat, params, answer),
            media_type="text/event-stream; charset=utf-8",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
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

    async def chat(self, request: Request, read: ChatBody) -> Response:
        return await self.upstream.forward(
            "/chat/completions", read.body, request.headers.get("authorization"), request.headers.get(SIM_HEADER)
        )

    async def models(self, request: Request) -> Response:
        return await self.upstream.get("/models", request.headers.get("authorization"))

    async def model(self, request: Request, model_id: str) -> Response:
        return await self.upstream.get(f"/models/{quote(model_id, safe='')}", request.headers.get("authorization"))

    async def aclose(self) -> None:
        await self.upstream.aclose()


def _model_object(model_id: str, created: int) -> dict:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "firsttoken"}


def _exact_counter(offload: Offload):
    """Exact prompt counts when firsttoken.tokens can load its data, else None (the
    simulator's rough count)."""
    try:
        from firsttoken import tokens  # type: ignore[import-not-found]

        tokens.count_chat([{"role": "user", "content": "probe"}], "gpt-4o")
    except Exception:  # noqa: BLE001 - any failure means: fall back to the rough count
        return None

    def count(messages: list, model: str) -> int:
        size = sum(len(m.get("content") or "") if isinstance(m.get("content"), str) else 4096 for m in messages)
        if size > _COUNT_IN_PROCESS_CHARS:
            return offload.in_process(tokens.count_chat, messages, model)
        return tokens.count_chat(messages, model)

    return count
