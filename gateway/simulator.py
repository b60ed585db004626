"""The built-in model: deterministic answers, a real server's costs, injectable faults.

The answer is derived from the prompt alone (a hash seeds the generator), so the same
prompt always gets the same text, in every dialect: tests can assert on it and prompt
caches can be exercised. This module makes the text and paces it; how it is framed on
the wire (Chat Completions chunks, Responses events, Anthropic Messages events) is the
dialect's `Framing` (gateway/dialects), sans-IO. Pacing (time to first token, tokens per second, tokens per chunk) and faults
are set per process by command-line flags and per request by the header

    x-firsttoken-sim: ttft_ms=1100,prefill_tps=50000,tps=40,chunk=1,tokens=200

The first token costs what a real server's does (gateway/prefill.py): the base
`ttft_ms`, plus the prompt tokens the prefix cache does not hold read at `prefill_tps`
(0: reading is free). The cache follows OpenAI's rules on Chat Completions and
Responses, Anthropic's `cache_control` on Messages, per API key and model:
    prefill_tps=N       prompt tokens read per second (default 50000; 0 = free)
    cache=0|1           the prefix cache off or on (default 1)
    cache_min_tokens=N  the shortest prefix cached (default 1024)
    cache_step=N        automatic hits grow in steps of N tokens (default 128)
    cache_idle_s=S      a prefix unused this long is gone (default 300)
    cache_saving=F      the share of a token's prefill a cache hit saves (default
                        0.82, OpenAI's measured rate: gateway/prefill.py; 1 = free)
The delay decided comes back in the `x-firsttoken-sim-first-token-ms` response header
(and when the first answer token is due, after any thinking, in
`x-firsttoken-sim-first-answer-ms`),
and the tokens read from the cache in the usage, as the real APIs report them.

Faults, by the same header:
    drop_after=N      drop the connection after N content chunks (no clean end)
    error_after=N     send the dialect's error event after N content chunks, then end
    status=429        answer at once with that status (429 carries rate-limit headers)
    retry_after=S     the retry-after seconds sent with status=429/503/529 (default 1)
    stall_ms=N        stall N ms, after `stall_after` content chunks (default 0)
    hold=K            end that stall early when a client posts /sim/release/K (K > 0;
                      each post lets one such stall go, held now or next): a test
                      holds the stream mid-way, looks, and lets it go, with no time
                      window to race (`Holds`); `stall_ms` still bounds it
    stamp=1           add "x_firsttoken_sent_ms" (wall-clock ms) to every chunk (every
                      text delta, in Responses and Messages), for measuring
                      chunk-to-paint latency in benchmarks
    echo=1            answer with the last user message verbatim (in word pieces, paced
                      as above), so that tests can make the model say given text

Thinking (`firsttoken-sim-think`, gateway/dialects/reasoning.py): a thinking phase
paced like the answer, before it, as long as the effort asked says; each dialect shows
it as its API does (Chat `delta.reasoning_content`, Responses summary events or
nothing, Messages `thinking_delta` or an empty block) and counts it as output:
    think=0|1         force the thinking phase off or on (default: by the model)
    think_tokens=N    think exactly N tokens, whatever the effort
    think_budget=N    the tokens "high" effort thinks (default 400; medium half)
    think_tags=1      Chat Completions: the thinking inline in `content` as
                      `<think>…</think>`, as servers without a reasoning parser send it
    summary_ms=N      the first-answer delay a requested summary costs (Responses
                      `reasoning.summary`, Messages `display: "summarized"`; default
                      906: bolna-ai/bolna PR#891 measured gpt-5.4-mini's first answer
                      token on OpenAI's SSE at 2,034 ms with `summary: "auto"` against
                      1,128 ms without)
Drop, error and stall counts (`drop_after`, `error_after`, `stall_after`) count every
chunk, thinking chunks included, so a fault can strike while the model thinks.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field, fields, replace
from itertools import islice
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Iterator

from firsttoken.tokens import estimate_tokens

from .dialects.reasoning import THINKING_MODEL, thinking_tokens
from .dialects.wire import Outcome, json_string
from .errors import APIError, invalid
from .options import option
from .prefill import (CACHE_SAVING, DEFAULT_CACHE_ENTRIES, Breakpoint, CacheRules, PrefixCache, RenderedPrompt,
                      cache_use, first_token_ms, render_prompt, rough_encode)
from .validation import ChatRequest, message_text

if TYPE_CHECKING:  # types only
    from .dialects import Framing

SIM_HEADER = "x-firsttoken-sim"
#: The response header saying how long the built-in model waited before its first token
#: (ms): what tests assert instead of timing a noisy machine.
FIRST_TOKEN_HEADER = "x-firsttoken-sim-first-token-ms"
#: ... and before its first answer token (ms): after the thinking and a summary's delay
#: (the same as the first token's for an answer that does not think).
FIRST_ANSWER_HEADER = "x-firsttoken-sim-first-answer-ms"
MODEL_IDS = ("firsttoken-sim", "firsttoken-sim-mini", THINKING_MODEL)


@dataclass(frozen=True, slots=True)
class SimParams:
    """How the built-in model behaves (see the module's docstring). The first-token
    defaults are the line through OpenAI's measured time to first token by prompt
    length, and its prompt-caching rules: sources in gateway/prefill.py."""

    ttft_ms: float = field(default=1100.0, metadata=option("--ttft-ms", "the first token's base cost, in ms", section="built-in model"))
    tps: float = field(default=40.0, metadata=option("--tps", "answer tokens per second", section="built-in model"))
    chunk: int = field(default=1, metadata=option("--chunk", "answer tokens per event", section="built-in model"))
    tokens: int = field(default=160, metadata=option("--tokens", "answer length", section="built-in model"))
    drop_after: int | None = None
    error_after: int | None = None
    status: int | None = None
    retry_after: float = 1.0
    stall_ms: float = 0.0
    stall_after: int = 0
    hold: int = 0
    stamp: bool = False
    echo: bool = False
    prefill_tps: float = field(default=50_000.0, metadata=option(
        "--prefill-tps", "prompt tokens read per second before the first token; 0 = free", section="built-in model"))
    cache: bool = field(default=True, metadata=option(
        "--no-prefix-cache", "no prefix cache: every prompt token is read every time", section="built-in model", sets=False))
    cache_min_tokens: int = field(default=1024, metadata=option(
        "--cache-min-tokens", "the shortest prefix cached (OpenAI: 1,024)", section="built-in model"))
    cache_step: int = field(default=128, metadata=option(
        "--cache-step", "automatic cache hits grow in steps of this many tokens (OpenAI: 128)", section="built-in model"))
    cache_idle_s: float = field(default=300.0, metadata=option(
        "--cache-idle-s", "seconds a cached prefix survives unused (OpenAI: 5-10 minutes)", section="built-in model"))
    cache_saving: float = field(default=CACHE_SAVING, metadata=option(
        "--cache-saving", "the share of a token's prefill a cache hit saves (OpenAI measured: 0.82; 1 = free)",
        section="built-in model"))
    #: Thinking forced on (True) or off (False); None: the model decides.
    think: bool | None = None
    #: Exactly this many thinking tokens; None: by effort, from `think_budget`.
    think_tokens: int | None = None
    think_budget: int = field(default=400, metadata=option(
        "--think-budget", "tokens firsttoken-sim-think thinks at high effort (medium: half)", section="built-in model"))
    think_tags: bool = False
    #: bolna-ai/bolna PR#891 measured it (docs/gateway.md, "Thinking").
    summary_ms: float = field(default=906.0, metadata=option(
        "--summary-ms", "the first-answer delay a requested reasoning summary costs, in ms", section="built-in model"))

    def cache_rules(self) -> CacheRules:
        return CacheRules(enabled=self.cache, min_tokens=self.cache_min_tokens, step=self.cache_step,
                          idle_s=self.cache_idle_s)


_LIMITS: dict[str, tuple[float, float]] = {
    "ttft_ms": (0, 600_000),
    "tps": (0.01, 1_000_000),
    "chunk": (1, 100_000),
    "tokens": (1, 1_000_000),
    "drop_after": (0, 1_000_000),
    "error_after": (0, 1_000_000),
    "status": (400, 599),
    "retry_after": (0, 86_400),
    "stall_ms": (0, 600_000),
    "stall_after": (0, 1_000_000),
    "hold": (0, 1_000_000_000),
    "stamp": (0, 1),
    "echo": (0, 1),
    "prefill_tps": (0, 1_000_000_000),
    "cache": (0, 1),
    "cache_min_tokens": (1, 10_000_000),
    # A step of 16 keys a 1M-token prompt in 62,500 hashes; smaller would cost more CPU
    # than the prompt's answer.
    "cache_step": (16, 1_000_000),
    "cache_idle_s": (0, 86_400),
    "cache_saving": (0, 1),
    "think": (0, 1),
    "think_tokens": (0, 1_000_000),
    "think_budget": (0, 1_000_000),
    "think_tags": (0, 1),
    "summary_ms": (0, 600_000),
}


def parse_sim_header(value: str | None, defaults: SimParams) -> SimParams:
    """Apply `key=value,…` settings on top of `defaults`; a bad setting is a 400."""
    if not value:
        return defaults
    types = {f.name: f.type for f in fields(SimParams)}
    changes: dict[str, Any] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in _LIMITS:
            raise invalid(f"{SIM_HEADER}: unknown setting {key[:40]!r}.", param=SIM_HEADER)
        try:
            number = float(raw)
        except ValueError:
            raise invalid(f"{SIM_HEADER}: {key} must be a number.", param=SIM_HEADER) from None
        _check_limit(key, number, f"{SIM_HEADER}: ")
        kind = types[key]
        if "bool" in str(kind):
            changes[key] = bool(number)
        elif "int" in str(kind):
            changes[key] = int(number)
        else:
            changes[key] = number
    return replace(defaults, **changes)


def check_sim_params(params: SimParams) -> None:
    """Hold settings made otherwise than by the header (command-line flags) to the
    header's limits; a bad one is an `APIError` naming it."""
    for key in _LIMITS:
        value = getattr(params, key)
        if value is not None:
            _check_limit(key, float(value), "")


def _check_limit(key: str, number: float, where: str) -> None:
    low, high = _LIMITS[key]
    if not (low <= number <= high):  # also rejects NaN
        raise invalid(f"{where}{key} must be within {low:g}..{high:g}.", param=SIM_HEADER)


# ---- deterministic text ------------------------------------------------------------

_WORDS = (
    "latency stream token frame paint buffer socket worker python browser cache "
    "prompt budget header chunk signal network mobile webview bridge render event "
    "decoder parser answer message model server client request response queue retry "
    "quota window thread memory snapshot boot ready offline storage index hash "
    "compress count measure median ratio benchmark peer native fast steady small"
).split()
_IDENTS = ("frame", "chunk", "token", "delta", "buffer", "event", "queue", "reply")


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    if n > 4:
        k = rng.randrange(1, n - 1)
        words[k] = f"**{words[k]}**" if rng.random() < 0.5 else f"`{words[k]}`"
    return " ".join(words).capitalize() + "."


def _section(rng: random.Random, i: int) -> str:
    kind = i % 4
    title = " ".join(rng.choice(_WORDS) for _ in range(3)).title()
    parts = [f"## {title}", " ".join(_sentence(rng, rng.randrange(6, 14)) for _ in range(3))]
    if kind == 1:
        parts.append("\n".join(f"- {_sentence(rng, rng.randrange(3, 8))}" for _ in range(3)))
    elif kind == 2:
        a, b = rng.sample(_IDENTS, 2)
        parts.append(
            "```python\n"
            f"def {a}_{b}({a}, {b}=None):\n"
            f"    # keep the {rng.choice(_WORDS)} bounded\n"
            f"    total = len({a}) + {rng.randrange(2, 99)}\n"
            f"    return {{\"{b}\": total, \"ok\": True}}\n"
            "```"
        )
    elif kind == 3:
        rows = "\n".join(
            f"| {rng.choice(_WORDS)} | {rng.randrange(1, 999)} ms | {rng.choice(_WORDS)} |"
            for _ in range(3)
        )
        parts.append("| name | time | note |\n|---|---:|---|\n" + rows)
    return "\n\n".join(parts)


_PIECE = re.compile(r"\s*\S+|\s+")


def iter_answer(messages: list[dict[str, Any]], n_tokens: int) -> Iterator[str]:
    """The answer to `messages` as `n_tokens` pieces (a piece: a word with its leading
    space), made as they are consumed: a million-token answer never sits in memory.
    The seed is taken from the whole prompt now (CPU work on a large prompt; the app
    calls this off the event loop), the pieces later.

    The same messages always give the same pieces.
    """
    prompt = next((message_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
    rng = random.Random(int.from_bytes(prompt_digest(messages)[:8], "big"))
    echo = " ".join(prompt[:4096].split()[:12])
    return _answer_pieces(rng, _PIECE.findall(f"You said: {echo}" if echo else ""), n_tokens)


def prompt_digest(messages: list[dict[str, Any]]) -> bytes:
    """SHA-256 of `json.dumps([[role, text], ...], ensure_ascii=False)` in UTF-8, the
    seed of the answer, fed in slices: one `dumps` of a 4 MiB prompt held the GIL for
    20-30 ms, and with it the event loop. JSON escapes character by character, so the
    slices give the same bytes (tests/unit/test_simulator_seed.py)."""
    digest = hashlib.sha256(b"[")
    for i, message in enumerate(messages):
        role = json.dumps(message.get("role"), ensure_ascii=False).encode("utf-8", "replace")
        digest.update((b", [" if i else b"[") + role + b', "')
        text = message_text(message)
        for start in range(0, len(text), _DIGEST_SLICE):
            digest.update(json_string(text[start : start + _DIGEST_SLICE])[1:-1].encode("utf-8", "replace"))
        digest.update(b'"]')
    digest.update(b"]")
    return digest.digest()


_DIGEST_SLICE = 64 * 1024


def _answer_pieces(rng: random.Random, first: list[str], n_tokens: int) -> Iterator[str]:
    made = 0
    for piece in first[:n_tokens]:
        yield piece
        made += 1
    i = 0
    while made < n_tokens:
        for piece in _PIECE.findall(("\n\n" if made else "") + _section(rng, i)):
            if made == n_tokens:
                return
            yield piece
            made += 1
        i += 1


def iter_thinking(messages: list[dict[str, Any]], n_tokens: int) -> Iterator[str]:
    """The model's thinking about `messages`, `n_tokens` pieces, made as consumed: plain
    sentences in the answer's vocabulary (no markdown, as reasoning summaries read),
    seeded from the same digest as the answer but apart from it."""
    rng = random.Random(int.from_bytes(hashlib.sha256(b"think" + prompt_digest(messages)).digest()[:8], "big"))
    return _thinking_pieces(rng, n_tokens)


def _thinking_pieces(rng: random.Random, n_tokens: int) -> Iterator[str]:
    made = 0
    opener = "Let me think about " + " ".join(rng.choice(_WORDS) for _ in range(3)) + "."
    while made < n_tokens:
        sentence = opener if made == 0 else _sentence(rng, rng.randrange(6, 14)).replace("**", "").replace("`", "")
        for piece in _PIECE.findall((" " if made else "") + sentence):
            if made == n_tokens:
                return
            yield piece
            made += 1


def answer_pieces(messages: list[dict[str, Any]], n_tokens: int) -> list[str]:
    """`iter_answer` as a list."""
    return list(iter_answer(messages, n_tokens))


# ---- the model ----------------------------------------------------------------------


class DropConnection(Exception):
    """Raised inside a streaming body to cut the connection without ending the stream."""


Sleep = Callable[[float], Awaitable[None]]
CountTokens = Callable[[list[dict[str, Any]], str], int]
RenderPrompt = Callable[[list[dict[str, Any]], str], RenderedPrompt]


def render_ids(messages: list[dict[str, Any]], model: str) -> RenderedPrompt:
    """The prompt's token ids in `model`'s encoding (firsttoken.tokens, exact for
    OpenAI's models and the built-in one), else stand-in ids (`rough_encode`)."""
    try:
        from firsttoken.tokens.encoders import get_encoder
        from firsttoken.tokens.models import model_info

        encode = get_encoder(model_info(model).encoding).encode
        encode("probe")
    except Exception:  # noqa: BLE001 - any failure means: no tokenizer data, use stand-ins
        encode = rough_encode
    return render_prompt(messages, encode)


class Holds:
    """Stalls that a client ends (`hold=K`; POST /sim/release/K, gateway/app.py).

    Each release lets one stall of key K go: the one held now, else the next to come,
    so the order of the two never matters (a test releases once it has seen what it
    looks for, which may be before the stream reaches its stall), and a test that sends
    twice on one key releases once for each. At most `MAX` keys are kept, the oldest
    forgotten: a stream whose key was forgotten stalls for its `stall_ms`, as without a
    hold."""

    MAX = 1024

    def __init__(self) -> None:
        self._gates: OrderedDict[int, asyncio.Semaphore] = OrderedDict()

    def _gate(self, key: int) -> asyncio.Semaphore:
        gate = self._gates.pop(key, None) or asyncio.Semaphore(0)
        self._gates[key] = gate
        while len(self._gates) > self.MAX:
            self._gates.popitem(last=False)
        return gate

    def release(self, key: int) -> None:
        self._gate(key).release()

    async def hold(self, key: int, timeout_s: float) -> None:
        """Until a release of `key` lets this stall go, or `timeout_s` at the most."""
        try:
            await asyncio.wait_for(self._gate(key).acquire(), timeout_s)
        except TimeoutError:
            pass


class Simulator:
    """The built-in model. `sleep`, `count_tokens`, `render` and `clock` (which also
    ages the prefix cache) are injectable for tests; `cache_entries` bounds the cache."""

    def __init__(
        self,
        defaults: SimParams,
        *,
        sleep: Sleep,
        count_tokens: CountTokens = estimate_tokens,
        render: RenderPrompt = render_ids,
        clock: Callable[[], float] = time.monotonic,
        cache_entries: int = DEFAULT_CACHE_ENTRIES,
    ) -> None:
        self.clock = clock
        self.defaults = defaults
        self.sleep = sleep
        self.count_tokens = count_tokens
        self.render = render
        self.cache = PrefixCache(cache_entries, clock=clock)
        self.holds = Holds()

    def params(self, header: str | None) -> SimParams:
        return parse_sim_header(header, self.defaults)

    def check_status(self, params: SimParams) -> None:
        """Raise the injected error status, if any, before any answer is produced."""
        if params.status is None:
            return
        headers: dict[str, str] = {}
        # Flow control (gateway/limits) adds the rate-limit headers a 429 implies.
        if params.status in (429, 503, 529):
            headers["retry-after"] = f"{params.retry_after:g}"
            headers["retry-after-ms"] = str(int(params.retry_after * 1000))
        kind = {429: ("rate_limit_exceeded", "requests"), 401: ("invalid_api_key", "invalid_request_error")}
        code, type_ = kind.get(params.status, (None, "server_error" if params.status >= 500 else "invalid_request_error"))
        raise APIError(
            params.status,
            f"Simulated error {params.status} (injected by {SIM_HEADER}).",
            type=type_,
            code=code,
            headers=headers,
        )

    def prepare(self, req: ChatRequest, params: SimParams, who: str = "",
                breakpoints: list[Breakpoint] | None = None, prompt_tokens: int | None = None) -> Answer:
        """Settle the answer: its length, finish reason, usage and first-token delay.
        `who` names whose prefix cache it is (an API key's hash); `breakpoints` None
        caches automatically (OpenAI), a list only at those blocks (Anthropic);
        `prompt_tokens` the prompt's count when it was counted already (else counted
        here). CPU work over the whole prompt: the app runs it off the event loop."""
        think = self.thinking(req, params)
        # Thinking counts against the output limit, first (every API says so: OpenAI's
        # usage docstring, Anthropic's `max_tokens`): cut while thinking, no answer.
        room: int | None
        if req.max_tokens is not None and think >= req.max_tokens:
            think, room = req.max_tokens, 0
        else:
            room = None if req.max_tokens is None else req.max_tokens - think
        n = params.tokens if room is None else min(params.tokens, room)
        finish = "length" if room is not None and room < params.tokens else "stop"
        pieces: Iterator[str]
        if req.format == "json_object":
            text = json.dumps({"answer": "".join(iter_answer(req.messages, min(n, 4096)))}, ensure_ascii=False)
            found = _PIECE.findall(text)
            pieces, count, finish = iter(found), len(found), "stop"
        elif params.echo:
            prompt = next((message_text(m) for m in reversed(req.messages) if m.get("role") == "user"), "")
            # Counted, not kept: the pieces are cut again as they are sent.
            count = sum(1 for _ in _PIECE.finditer(prompt))
            pieces = (m.group() for m in _PIECE.finditer(prompt))
        else:
            pieces, count = iter_answer(req.messages, n), n
        if room == 0:
            pieces, count, finish = iter(()), 0, "length"
        if prompt_tokens is None:
            prompt_tokens = self.count_tokens(req.messages, req.model)
        use = cache_use(self.cache, lambda: self.render(req.messages, req.model), req.model, prompt_tokens, who,
                        breakpoints, params.cache_rules())
        cached = min(use.read, prompt_tokens)
        outcome = Outcome(finish, prompt_tokens, count + think, cached_tokens=cached,
                          cache_write_tokens=min(use.written, prompt_tokens - cached), reasoning_tokens=think,
                          think_tags=params.think_tags)
        delay = first_token_ms(params.ttft_ms, prompt_tokens, cached, params.prefill_tps, params.cache_saving)
        return Answer(pieces, outcome, delay, iter_thinking(req.messages, think) if think else iter(()))

    @staticmethod
    def first_answer_ms(answer: Answer, params: SimParams, summary: bool) -> float:
        """When the answer's first piece is due (ms from the request), by the schedule
        `stream` keeps: after the first token's delay, the thinking's chunks at
        `chunk / tps` each, and a requested summary's `summary_ms` (no stalls)."""
        think = answer.outcome.reasoning_tokens
        if not think:
            return answer.first_token_ms
        chunks = -(-think // params.chunk)
        return (answer.first_token_ms + chunks * params.chunk / params.tps * 1000.0
                + (params.summary_ms if summary else 0.0))

    def thinking(self, req: ChatRequest, params: SimParams) -> int:
        """The tokens this answer thinks (gateway/dialects/reasoning.py): none for a model
        that does not think (unless `think=1`), else by the effort asked."""
        thinks = params.think if params.think is not None else req.model == THINKING_MODEL
        if not thinks:
            return 0
        return thinking_tokens(req.effort, budget=params.think_budget, exact=params.think_tokens, cap=req.think_cap)

    async def stream(self, framing: Framing, params: SimParams, answer: Answer) -> AsyncIterator[bytes]:
        """The answer's events in `framing`'s wire format, paced by `params`: the
        thinking chunks (which a framing that hides them makes b""; their time passes
        all the same), the summary's delay when one was asked for, then the answer.

        Events that are due are sent together, up to `_BATCH_BYTES` at a time, and the
        loop is given back at least every `_SLICE_S` even when the schedule is behind
        (a million tokens at a million per second), so one stream never stalls others.
        """
        await self.sleep(answer.first_token_ms / 1000.0)
        yield framing.opening()
        # Chunks are due on an absolute schedule from the first one, so that sleep
        # overshoot does not accumulate and the measured rate is the asked-for rate.
        interval = params.chunk / params.tps
        clock = self.clock
        t0 = given_back = clock()
        sent = 0
        batch: list[bytes] = []
        size = 0
        outcome = answer.outcome
        phases: list[tuple[Iterator[str], Callable[[str], bytes], bool]] = []
        if outcome.thinks:
            phases.append((answer.thinking, framing.reasoning, False))
        if not outcome.cut_thinking:
            phases.append((answer.pieces, framing.delta, True))
        for pieces, encode, answering in phases:
            if answering and outcome.thinks:
                if framing.summary and params.summary_ms:
                    # A summary asked for delays the answer (bolna-ai/bolna PR#891).
                    if batch:
                        yield b"".join(batch)
                        batch, size = [], 0
                    await self.sleep(params.summary_ms / 1000.0)
                    t0 += params.summary_ms / 1000.0
                batch.append(framing.answer_start())
            while True:
                text = "".join(islice(pieces, params.chunk))
                if not text:
                    break
                if params.drop_after is not None and sent >= params.drop_after:
                    if batch:
                        yield b"".join(batch)
                    raise DropConnection
                if params.error_after is not None and sent >= params.error_after:
                    batch.append(framing.failure("Simulated error mid-stream (injected).", "simulated"))
                    yield b"".join(batch)
                    return
                if params.stall_ms and sent == params.stall_after:
                    if batch:
                        yield b"".join(batch)
                        batch, size = [], 0
                    if params.hold:
                        held = clock()
                        await self.holds.hold(params.hold, params.stall_ms / 1000.0)
                        t0 += clock() - held
                    else:
                        await self.sleep(params.stall_ms / 1000.0)
                        t0 += params.stall_ms / 1000.0
                now = clock()
                delay = t0 + sent * interval - now
                if delay > 0 or size >= _BATCH_BYTES or now - given_back >= _SLICE_S:
                    if batch:
                        yield b"".join(batch)
                        batch, size = [], 0
                    await self.sleep(max(delay, 0.0))
                    given_back = clock()
                event = encode(text)
                if event:  # hidden thinking makes none: its time passes, nothing is written
                    batch.append(event)
                    size += len(event)
                sent += 1
        if params.drop_after is not None and sent >= params.drop_after:
            if batch:
                yield b"".join(batch)
            raise DropConnection
        batch.append(framing.closing())
        yield b"".join(batch)


def wall_clock_ms() -> float:
    """Now, in wall-clock ms: the `stamp=1` of each chunk (a benchmark compares it with
    the page's paint time, so it must be wall-clock, not monotonic)."""
    return time.time() * 1000.0


# Due events are written together up to this size, and the loop is given back at least
# this often, however far behind the schedule is.
_BATCH_BYTES = 32 * 1024
_SLICE_S = 0.005


@dataclass(slots=True)
class Answer:
    """A settled answer: its pieces (made lazily, as they are consumed, once), and how it
    turns out."""

    pieces: Iterator[str]
    outcome: Outcome
    #: The wait before the first event (ms): the base, plus the prompt's prefill.
    first_token_ms: float = 0.0
    #: The thinking's pieces (made lazily, once), before the answer's.
    thinking: Iterator[str] = field(default_factory=lambda: iter(()))
