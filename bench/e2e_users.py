"""The simulated users of `bench/e2e.py`: what they say, and the two clients they say it with.

Every kind of user holds the same conversation: one long system prompt (an app's
instructions with its tool schemas, the compression corpus' system prompts, tool
schemas, prose and code), then user turns that paste code and a JSON payload, each
answered by the gateway's built-in model; every turn sends the whole conversation so
far, as chat clients do. The tool schemas' JSON is minified in the system prompt every
client sends (`system_prompt()`): an app ships its own schemas as it likes, and pretty
JSON there would only have measured firsttoken's compression undoing what the app need
not have done (issue 45; `tool_json_share()` says what pretty JSON would have added).
The pasted payloads stay pretty: a person pastes what they have.

* `NaiveUser`: the official client of the API spoken, streaming, with its defaults:
  nothing compressed or counted, the full system prompt in every request, and its own
  retry of a 429 (two retries, honouring `retry-after-ms`/`retry-after` up to 60 s, else
  exponential backoff with jitter). Chat Completions and the Responses API go through
  `openai.AsyncOpenAI` (`chat.completions.create`, `responses.create`, each with
  `stream=True`; Responses gets the system prompt as `instructions`, as OpenAI's
  migration guide shows); Anthropic Messages through `anthropic.AsyncAnthropic`
  (`messages.stream`, the system prompt as `system`, `max_tokens` as a chat app sets it).
* The naive client's fair cousins (issue 45, item 4), each one change an app could make
  to the same official client (`PEERS`): `SdkGzipUser` ("SDK + gzip body": an httpx
  transport that gzips each request body, `GzipTransport`, which the firsttoken gateway
  takes as it takes the page's, RFC 9110 §8.4), `SdkPreconnectUser` ("SDK +
  preconnect": the connection opened when the app opens, by the same keyless
  `GET /v1/models` the page's warm-up makes), `SdkGzipPreconnectUser` (both), and on
  Messages `SdkCacheControlUser` ("Messages SDK + cache_control": the system prompt as
  one text block marked `cache_control: {"type": "ephemeral"}`, the one-line addition
  Anthropic's prompt-caching guide shows).
* `FirsttokenUser`: the core the page runs (`firsttoken.core.Core`), on CPython, given
  the `chat.send` messages the page would post to its worker (the API in its settings): the prepare pipeline
  (compression at the page's default level, exact counts, fitting), the system-message
  cache with gateway references (an in-memory store: what a page session keeps in its
  memory tier), and the governor's pacing and retries. Its transport is
  `harness.socket_transport.SocketTransport`, the httpx adapter the core's gateway tests
  already use (`tests/gateway/test_core_over_sockets.py`): the same seam the page's
  fetch plugs into (`firsttoken.stream.client.Transport`), so nothing of the core is
  reimplemented here.

Each user is one "device": its own HTTP connection pool, its own API key, its own
counters. What a request cost is read off the wire, the same way for both kinds: httpx
event hooks see every attempt's request body (bytes uploaded) and every response's
status (429s), whoever decided to send it.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "compress"
#: The model each API is spoken to with: OpenAI's two APIs with one model, so that only
#: the dialect differs between them; Messages with a Claude model, as its users would
#: (firsttoken then counts estimates: Claude's tokenizer is not public).
MODELS = {"chat_completions": "gpt-4o", "responses": "gpt-4o", "anthropic_messages": "claude-sonnet-4-5"}
APIS = tuple(MODELS)
#: What a chat app on Messages asks for at most (the API requires `max_tokens`).
MAX_TOKENS = 1024

SYSTEM_PARTS = [
    *sorted(CORPUS.glob("system-prompt-*.md")),
    *sorted(CORPUS.glob("json-tool-schema-*.md")),
    *sorted(CORPUS.glob("prose-*.md")),
]
CODE = sorted(CORPUS.glob("code-*.md"))
JSON_PAYLOADS = sorted(CORPUS.glob("json-pretty-*.md"))


_JSON_BLOCK = re.compile(r"```json\n(.*?)\n```", re.S)


def minify_json_blocks(text: str) -> str:
    """`text` with each fenced JSON block minified (no spaces after separators, no
    indentation); a block that does not parse is left as it is."""

    def minified(match: re.Match[str]) -> str:
        try:
            value = json.loads(match.group(1))
        except ValueError:
            return match.group(0)
        return "```json\n" + json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n```"

    return _JSON_BLOCK.sub(minified, text)


def system_prompt(minify_tools: bool = True) -> str:
    """The app's instructions: the same for every user, as one deployment's would be;
    the tool schemas' JSON minified unless `minify_tools` is false."""
    parts = [p.read_text() for p in SYSTEM_PARTS]
    if minify_tools:
        parts = [minify_json_blocks(t) if p.name.startswith("json-tool-schema-") else t for p, t in zip(SYSTEM_PARTS, parts)]
    body = "\n\n".join(parts)
    return f"You are the coding assistant of the Acme developer portal.\n\n{body}"


def tool_json_share() -> dict[str, int]:
    """What the tool schemas' pretty JSON would add to the system prompt: its tokens
    (o200k_base) and UTF-8 bytes, pretty and minified (the JSON line reports it)."""
    from firsttoken import tokens

    pretty, minified = system_prompt(minify_tools=False), system_prompt()
    return {"pretty_tokens": tokens.count(pretty, "o200k_base"), "minified_tokens": tokens.count(minified, "o200k_base"),
            "pretty_bytes": len(pretty.encode()), "minified_bytes": len(minified.encode())}


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
    cached_tokens: int | None = None  # of those, read from the server's prefix cache
    completion_tokens: int | None = None
    waited_ms: float = 0.0  # firsttoken: paced in the client (chat.wait)
    prepare_ms: float | None = None  # firsttoken: compress + count + fit, in the core
    error: str | None = None
    api: str = "chat_completions"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Wire:
    """What one user's HTTP client sent and got, counted by httpx event hooks."""

    requests: int = 0
    bytes_up: int = 0
    http_429: int = 0
    statuses: list[int] = field(default_factory=list)

    def client(self, http: Any = httpx, **kwargs: Any) -> Any:
        """An `http.AsyncClient` counting into this wire: httpx, or the `anthropic`
        client's own fork of it (httpx2, same API), which that client requires. A
        `transport` that changes the body (`GzipTransport`) corrects `bytes_up` itself:
        the hook sees the request before the transport does."""
        async def on_request(request: httpx.Request) -> None:
            self.requests += 1
            self.bytes_up += len(request.content)

        async def on_response(response: httpx.Response) -> None:
            self.statuses.append(response.status_code)
            if response.status_code == 429:
                self.http_429 += 1

        timeout = http.Timeout(120.0, connect=10.0)
        return http.AsyncClient(timeout=timeout, event_hooks={"request": [on_request], "response": [on_response]}, **kwargs)

    def snapshot(self) -> tuple[int, int, int]:
        return self.requests, self.bytes_up, self.http_429

    def charge(self, record: Record, before: tuple[int, int, int]) -> None:
        requests, bytes_up, http_429 = self.snapshot()
        record.attempts += requests - before[0]
        record.bytes_up += bytes_up - before[1]
        record.http_429 += http_429 - before[2]


#: A turn that failed (its client gave up) is sent again by the user, at most this often.
USER_SENDS = 4
#: What the gzipping transport leaves plain and at which level it packs, as firsttoken's
#: core does (firsttoken.stream.client: GZIP_MIN_BYTES, GZIP_LEVEL), so that the two
#: gzip alike and only who does it differs.
GZIP_MIN_BYTES = 1024
GZIP_LEVEL = 6


class GzipTransport(httpx.AsyncBaseTransport):
    """An httpx transport that gzips each request body of `GZIP_MIN_BYTES` or more
    (`Content-Encoding: gzip`, RFC 9110 §8.4) before the real transport sends it: the
    few lines an app adds to the official client (`http_client=httpx.AsyncClient(
    transport=...)`). What it saved is taken off `wire.bytes_up`."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        if len(body) >= GZIP_MIN_BYTES and "content-encoding" not in request.headers:
            packed = gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)
            headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
            request = httpx.Request(request.method, request.url, headers=[*headers, ("content-encoding", "gzip")],
                                    content=packed, extensions=request.extensions)
            self.wire.bytes_up += len(packed) - len(body)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class NaiveUser:
    """The API's official client, as a straightforward app would use it; its subclasses
    (`PEERS`) each make one change an app could make."""

    kind = "naive"
    label = "SDK as is"
    #: Request bodies gzipped by the client's transport (`GzipTransport`).
    gzip = False
    #: The connection opened when the app opens (`open`).
    preconnect = False
    #: Messages: the system prompt marked `cache_control` (ephemeral).
    cache_control = False

    def __init__(self, base_url: str, user: int, sim: str, api: str = "chat_completions") -> None:
        self.wire = Wire()
        self.api_name = api
        self.model = MODELS[api]
        self.system = system_prompt()
        key, headers = f"sk-bench-{user}", {"x-firsttoken-sim": sim}
        if api == "anthropic_messages":
            import anthropic  # the peer: only the benchmark needs it
            import httpx2

            self.http = self.wire.client(httpx2)
            self.api = anthropic.AsyncAnthropic(base_url=base_url, api_key=key, http_client=self.http,
                                                default_headers=headers)
            self.errors: tuple[type[Exception], ...] = (anthropic.APIError,)
        else:
            import openai

            self.http = self.wire.client(transport=GzipTransport(self.wire)) if self.gzip else self.wire.client()
            self.api = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=key, http_client=self.http,
                                          default_headers=headers)
            self.errors = (openai.APIError,)
        # The conversation after the system prompt, which each API takes apart from it
        # (Chat Completions as its first message).
        self.history: list[dict[str, Any]] = []
        self.base_url = base_url

    async def open(self) -> None:
        """The app opens: a straightforward app does nothing before the first Send; one
        that preconnects makes the keyless `GET /v1/models` the page's warm-up makes
        (js/page/warm.js), on the client's own pool, its body read whole, so that Send
        finds the connection (TCP and TLS) open."""
        if self.preconnect:
            try:
                response = await self.http.get(self.base_url + "/v1/models", headers={"accept": "application/json"})
                await response.aread()
            except httpx.HTTPError:
                pass  # as the page: the turn will say so if it matters

    async def _stream(self, record: Record, start: float, answer: list[str]) -> None:
        """One request, streamed: text into `answer`, the first token's time and the usage
        into `record`."""

        def text(piece: str) -> None:
            if piece:
                if record.ttft_ms is None:
                    record.ttft_ms = (time.perf_counter() - start) * 1000
                answer.append(piece)

        def usage(prompt: int | None, completion: int | None, cached: int | None) -> None:
            record.prompt_tokens, record.completion_tokens, record.cached_tokens = prompt, completion, cached or 0

        if self.api_name == "chat_completions":
            messages = [{"role": "system", "content": self.system}, *self.history]
            stream = await self.api.chat.completions.create(
                model=self.model, messages=messages, stream=True, stream_options={"include_usage": True})
            async for chunk in stream:
                if chunk.choices:
                    text(chunk.choices[0].delta.content or "")
                if chunk.usage is not None:
                    details = chunk.usage.prompt_tokens_details
                    usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens, details and details.cached_tokens)
        elif self.api_name == "responses":
            stream = await self.api.responses.create(
                model=self.model, instructions=self.system, input=self.history, stream=True, store=False)
            async for event in stream:
                if event.type == "response.output_text.delta":
                    text(event.delta)
                elif event.type == "response.completed" and event.response.usage is not None:
                    u = event.response.usage
                    usage(u.input_tokens, u.output_tokens, u.input_tokens_details and u.input_tokens_details.cached_tokens)
        else:
            # Anthropic's prompt-caching guide: the system prompt as a text block with
            # `cache_control` (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching).
            system: Any = ([{"type": "text", "text": self.system, "cache_control": {"type": "ephemeral"}}]
                           if self.cache_control else self.system)
            async with self.api.messages.stream(
                    model=self.model, max_tokens=MAX_TOKENS, system=system, messages=self.history) as stream:
                async for piece in stream.text_stream:
                    text(piece)
                final = await stream.get_final_message()
                u = final.usage
                # Messages bills a cache read apart from `input_tokens`: the prompt is both.
                read = u.cache_read_input_tokens or 0
                usage(u.input_tokens + read + (u.cache_creation_input_tokens or 0), u.output_tokens, read)

    async def turn(self, record: Record, text: str) -> None:
        record.api = self.api_name
        self.history.append({"role": "user", "content": text})
        start = time.perf_counter()
        before = self.wire.snapshot()
        answer: list[str] = []
        try:
            for _ in range(USER_SENDS):
                record.sends += 1
                answer.clear()
                try:
                    await self._stream(record, start, answer)
                    record.ok = True
                    break
                except self.errors as exc:
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


class SdkGzipUser(NaiveUser):
    kind, label, gzip = "sdk_gzip", "SDK + gzip body", True


class SdkPreconnectUser(NaiveUser):
    kind, label, preconnect = "sdk_preconnect", "SDK + preconnect", True


class SdkGzipPreconnectUser(NaiveUser):
    kind, label, gzip, preconnect = "sdk_gzip_preconnect", "SDK + gzip body + preconnect", True, True


class SdkCacheControlUser(NaiveUser):
    kind, label, cache_control = "sdk_cache_control", "Messages SDK + cache_control", True


#: The fair peers (issue 45, item 4): name → (class, the APIs it applies to). gzip and
#: preconnect are the `openai` client's (Chat Completions and Responses); cache_control
#: is Messages'.
PEERS: dict[str, tuple[type[NaiveUser], tuple[str, ...]]] = {
    "sdk_gzip": (SdkGzipUser, ("chat_completions", "responses")),
    "sdk_preconnect": (SdkPreconnectUser, ("chat_completions", "responses")),
    "sdk_gzip_preconnect": (SdkGzipPreconnectUser, ("chat_completions", "responses")),
    "sdk_cache_control": (SdkCacheControlUser, ("anthropic_messages",)),
}


#: What the client does before a prompt leaves, step by step (the seed article's table):
#: each can be switched off, to measure its share (`bench/e2e.py --steps`). Counting and
#: fitting are not among them: the core prepares every prompt (it cannot send one it has
#: not counted), and the governor paces by those counts; their cost is `prepare_ms`.
#: `gzip`: request bodies gzipped to the page's own gateway (firsttoken.cache.refs
#: `takes_gzip`); off, every body goes plain, as to any other server.
STEPS = ("gzip", "compression", "cache", "governor", "warm")


def _no_pacing() -> Any:
    """A governor that never waits before sending and retries as the `openai` client does
    (two retries, honouring retry-after, else backoff): firsttoken without its pacing."""
    from firsttoken.ratelimit import Governor

    class NoPacing(Governor):
        def wait_before(self, estimated_tokens: int, now: float) -> float:
            return 0.0

    return NoPacing(max_attempts=3)


class FirsttokenUser:
    """The page's core on CPython, sent what the page sends it, with `steps` on (all by
    default: the page as it ships)."""

    kind = "firsttoken"

    def __init__(self, base_url: str, user: int, sim: str, api: str = "chat_completions",
                 steps: frozenset[str] = frozenset(STEPS)) -> None:
        import asyncio

        from firsttoken.cache import Cache, MemoryStore
        from firsttoken.core import Core
        from firsttoken.ratelimit import Governor
        from harness.socket_transport import SocketTransport

        self.wire = Wire()
        self.http = self.wire.client()
        self.events: list[dict[str, Any]] = []
        self.first_delta: float | None = None
        self.steps = steps
        self.base_url = base_url
        # The page's own gateway: the client id goes with the first request already.
        self.core = Core(post=self._post, transport=SocketTransport(self.http), clock=lambda: time.time() * 1000,
                         sleep=asyncio.sleep, cache=Cache(MemoryStore()) if "cache" in steps else None,
                         page_origin=base_url, governor=Governor if "governor" in steps else _no_pacing)
        if "gzip" not in steps:
            # The core's one question about gzip, answered no for every server.
            setattr(self.core.refs, "takes_gzip", lambda _base_url: False)  # noqa: B010
        self.api_name = api
        self.settings = {"base_url": base_url + "/v1", "model": MODELS[api], "api_key": f"sk-bench-{user}", "api": api,
                         "headers": {"x-firsttoken-sim": sim},
                         # The page's default level (js/page/settings.js), or none.
                         "compress": "balanced" if "compression" in steps else "off"}
        self.history: list[dict[str, Any]] = [{"role": "system", "content": system_prompt()}]
        self._seq = 0

    async def open(self) -> None:
        """The app opens and the composer gets focus: with the `warm` step, the page's
        warm-up (js/page/warm.js): one keyless `GET {base}/models` on this device's
        connection pool, its body read whole, so that Send finds the connection open."""
        if "warm" in self.steps:
            try:
                response = await self.http.get(self.settings["base_url"] + "/models", headers={"accept": "application/json"})
                await response.aread()
            except httpx.HTTPError:
                pass  # as the page: the chat will say so if it matters

    def _post(self, text: str) -> None:
        event = json.loads(text)
        if event.get("type") == "chat.delta" and self.first_delta is None:
            self.first_delta = time.perf_counter()
        self.events.append(event)

    async def turn(self, record: Record, text: str) -> None:
        record.api = self.api_name
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
                    details = usage.get("prompt_tokens_details") or {}
                    record.cached_tokens = details.get("cached_tokens") or usage.get("cache_read_input_tokens") or 0
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


KINDS: dict[str, Any] = {"naive": NaiveUser, "firsttoken": FirsttokenUser}
#: Every kind a run can have: the two above and the peers.
ALL_KINDS: dict[str, Any] = {**KINDS, **{name: cls for name, (cls, _) in PEERS.items()}}
