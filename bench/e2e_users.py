"""The simulated users of `bench/e2e.py`: what they say, and the two clients they say it with.

Both kinds of user hold the same conversation (`Conversation`): one long system prompt
(an app's instructions with its tool schemas as pretty JSON, the compression corpus'
system prompts, tool schemas, prose and code), then user turns that paste code and a
JSON payload, each answered by the gateway's built-in model; every turn sends the whole
conversation so far, as chat clients do.

* `NaiveUser`: the official `openai` client (`AsyncOpenAI`), streaming, with its defaults:
  nothing compressed or counted, the full system prompt in every request, and its own
  retry of a 429 (two retries, honouring `retry-after-ms`/`retry-after` up to 60 s, else
  exponential backoff with jitter).
* `FirsttokenUser`: the core the page runs (`firsttoken.core.Core`), on CPython, given
  the `chat.send` messages the page would post to its worker: the prepare pipeline
  (compression at the page's default level, exact counts, fitting), the system-message
  cache with gateway references (an in-memory store: what a page session keeps in its
  memory tier), and the governor's pacing and retries. Its transport is
  `tests.socket_transport.SocketTransport`, the httpx adapter the core's gateway tests
  already use (`tests/gateway/test_core_over_sockets.py`): the same seam the page's
  fetch plugs into (`firsttoken.stream.client.Transport`), so nothing of the core is
  reimplemented here.

Each user is one "device": its own HTTP connection pool, its own API key, its own
counters. What a request cost is read off the wire, the same way for both kinds: httpx
event hooks see every attempt's request body (bytes uploaded) and every response's
status (429s), whoever decided to send it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "compress"
MODEL = "gpt-4o"

SYSTEM_PARTS = [
    *sorted(CORPUS.glob("system-prompt-*.md")),
    *sorted(CORPUS.glob("json-tool-schema-*.md")),
    *sorted(CORPUS.glob("prose-*.md")),
]
CODE = sorted(CORPUS.glob("code-*.md"))
JSON_PAYLOADS = sorted(CORPUS.glob("json-pretty-*.md"))


def system_prompt() -> str:
    """The app's instructions: the same for every user, as one deployment's would be."""
    body = "\n\n".join(p.read_text() for p in SYSTEM_PARTS)
    return f"You are the coding assistant of the Acme developer portal.\n\n{body}"


def user_turn(user: int, turn: int) -> str:
    """Turn `turn` of user `user`: a question with pasted code and a JSON payload."""
    code = CODE[(user * 3 + turn) % len(CODE)].read_text()
    payload = JSON_PAYLOADS[(user + turn) % len(JSON_PAYLOADS)].read_text()
    return f"{code}\n\nThis is the payload it was handling when it failed:\n\n{payload}"


@dataclass
class Record:
    """One user turn, as the user lived it: from pressing Send to the first token."""

    scenario: str
    kind: str
    user: int
    turn: int
    start_s: float  # since the run began
    run: int = 0
    ok: bool = False
    ttft_ms: float | None = None
    total_ms: float | None = None
    attempts: int = 0  # HTTP requests sent for this turn, retries included
    sends: int = 0  # times the user had to press Send (a failed turn is sent again)
    http_429: int = 0
    bytes_up: int = 0
    prompt_tokens: int | None = None  # as the gateway billed it (usage)
    completion_tokens: int | None = None
    waited_ms: float = 0.0  # firsttoken: paced in the client (chat.wait)
    prepare_ms: float | None = None  # firsttoken: compress + count + fit, in the core
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Wire:
    """What one user's HTTP client sent and got, counted by httpx event hooks."""

    requests: int = 0
    bytes_up: int = 0
    http_429: int = 0
    statuses: list[int] = field(default_factory=list)

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        async def on_request(request: httpx.Request) -> None:
            self.requests += 1
            self.bytes_up += len(request.content)

        async def on_response(response: httpx.Response) -> None:
            self.statuses.append(response.status_code)
            if response.status_code == 429:
                self.http_429 += 1

        timeout = httpx.Timeout(120.0, connect=10.0)
        return httpx.AsyncClient(timeout=timeout, event_hooks={"request": [on_request], "response": [on_response]}, **kwargs)

    def snapshot(self) -> tuple[int, int, int]:
        return self.requests, self.bytes_up, self.http_429

    def charge(self, record: Record, before: tuple[int, int, int]) -> None:
        requests, bytes_up, http_429 = self.snapshot()
        record.attempts += requests - before[0]
        record.bytes_up += bytes_up - before[1]
        record.http_429 += http_429 - before[2]


#: A turn that failed (its client gave up) is sent again by the user, at most this often.
USER_SENDS = 4


class NaiveUser:
    """The official `openai` client, as a straightforward app would use it."""

    kind = "naive"

    def __init__(self, base_url: str, user: int, sim: str) -> None:
        import openai  # the peer: only the benchmark needs it

        self.wire = Wire()
        self.http = self.wire.client()
        self.api = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=f"sk-bench-{user}", http_client=self.http,
                                      default_headers={"x-firsttoken-sim": sim})
        self.openai = openai
        self.history: list[dict[str, Any]] = [{"role": "system", "content": system_prompt()}]

    async def turn(self, record: Record, text: str) -> None:
        self.history.append({"role": "user", "content": text})
        start = time.perf_counter()
        before = self.wire.snapshot()
        answer: list[str] = []
        try:
            for _ in range(USER_SENDS):
                record.sends += 1
                answer.clear()
                try:
                    stream = await self.api.chat.completions.create(
                        model=MODEL, messages=self.history, stream=True, stream_options={"include_usage": True})
                    async for chunk in stream:
                        if chunk.choices and chunk.choices[0].delta.content:
                            if record.ttft_ms is None:
                                record.ttft_ms = (time.perf_counter() - start) * 1000
                            answer.append(chunk.choices[0].delta.content)
                        if chunk.usage is not None:
                            record.prompt_tokens = chunk.usage.prompt_tokens
                            record.completion_tokens = chunk.usage.completion_tokens
                    record.ok = True
                    break
                except self.openai.APIError as exc:
                    record.error = f"{type(exc).__name__}: {getattr(exc, 'status_code', '')}"
                    if answer:  # text arrived: keep it, as the user would
                        break
        finally:
            record.total_ms = (time.perf_counter() - start) * 1000
            self.wire.charge(record, before)
        self.history.append({"role": "assistant", "content": "".join(answer)})

    async def aclose(self) -> None:
        await self.api.close()
        await self.http.aclose()


class FirsttokenUser:
    """The page's core on CPython, sent what the page sends it."""

    kind = "firsttoken"

    def __init__(self, base_url: str, user: int, sim: str) -> None:
        import asyncio

        from firsttoken.cache import Cache, MemoryStore
        from firsttoken.core import Core
        from tests.socket_transport import SocketTransport

        self.wire = Wire()
        self.http = self.wire.client()
        self.events: list[dict[str, Any]] = []
        self.first_delta: float | None = None
        # The page's own gateway: the client id goes with the first request already.
        self.core = Core(post=self._post, transport=SocketTransport(self.http), clock=lambda: time.time() * 1000,
                         sleep=asyncio.sleep, cache=Cache(MemoryStore()), page_origin=base_url)
        self.settings = {"base_url": base_url + "/v1", "model": MODEL, "api_key": f"sk-bench-{user}",
                         "headers": {"x-firsttoken-sim": sim}}
        self.history: list[dict[str, Any]] = [{"role": "system", "content": system_prompt()}]
        self._seq = 0

    def _post(self, text: str) -> None:
        event = json.loads(text)
        if event.get("type") == "chat.delta" and self.first_delta is None:
            self.first_delta = time.perf_counter()
        self.events.append(event)

    async def turn(self, record: Record, text: str) -> None:
        self.history.append({"role": "user", "content": text})
        start = time.perf_counter()
        before = self.wire.snapshot()
        answer = ""
        self.first_delta = None
        try:
            for _ in range(USER_SENDS):
                record.sends += 1
                self._seq += 1
                request_id = f"r{self._seq}"
                self.events.clear()
                await self.core.handle({"v": 1, "type": "chat.send", "id": request_id,
                                        "messages": self.history, "settings": self.settings})
                mine = [e for e in self.events if e.get("id") == request_id]
                answer = "".join(e["text"] for e in mine if e["type"] == "chat.delta")
                for e in mine:
                    if e["type"] == "chat.prepared" and record.prepare_ms is None:
                        record.prepare_ms = e.get("prepare_ms")
                    elif e["type"] == "chat.wait":
                        record.waited_ms += e["wait_s"] * 1000
                end = mine[-1] if mine else {"type": "none"}
                if end["type"] == "chat.done":
                    usage = end.get("usage") or {}
                    record.prompt_tokens = usage.get("prompt_tokens")
                    record.completion_tokens = usage.get("completion_tokens")
                    record.ok = True
                    break
                error = end.get("error") or {}
                record.error = f"{error.get('code')}: {error.get('status', '')}"
                if answer:
                    break
        finally:
            if self.first_delta is not None:
                record.ttft_ms = (self.first_delta - start) * 1000
            record.total_ms = (time.perf_counter() - start) * 1000
            self.wire.charge(record, before)
        self.history.append({"role": "assistant", "content": answer})

    async def aclose(self) -> None:
        await self.http.aclose()


KINDS = {"naive": NaiveUser, "firsttoken": FirsttokenUser}
