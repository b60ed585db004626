"""The built-in model: deterministic answers, realistic pacing, injectable faults.

The answer is derived from the prompt alone (a hash seeds the generator), so the same
prompt always gets the same text: tests can assert on it and prompt caches can be
exercised. Pacing (time to first token, tokens per second, tokens per chunk) and faults
are set per process by command-line flags and per request by the header

    x-firsttoken-sim: ttft_ms=300,tps=40,chunk=1,tokens=200

Faults, by the same header:
    drop_after=N      drop the connection after N content chunks (no [DONE])
    error_after=N     send an {"error": ...} event after N content chunks, then end
    status=429        answer at once with that status (429 carries rate-limit headers)
    retry_after=S     the retry-after seconds sent with status=429/503 (default 1)
    stall_ms=N        stall N ms, after `stall_after` content chunks (default 0)
    stamp=1           add "x_firsttoken_sent_ms" (wall-clock ms) to every chunk, for
                      measuring chunk-to-paint latency in benchmarks
    echo=1            answer with the last user message verbatim (in word pieces, paced
                      as above), so that tests can make the model say given text
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
import uuid
from dataclasses import dataclass, fields, replace
from typing import Any, AsyncIterator, Awaitable, Callable

from firsttoken.tokens import estimate_tokens

from .errors import APIError, invalid
from .validation import ChatRequest, message_text

SIM_HEADER = "x-firsttoken-sim"
MODEL_IDS = ("firsttoken-sim", "firsttoken-sim-mini")


@dataclass(frozen=True, slots=True)
class SimParams:
    ttft_ms: float = 300.0
    tps: float = 40.0
    chunk: int = 1
    tokens: int = 160
    drop_after: int | None = None
    error_after: int | None = None
    status: int | None = None
    retry_after: float = 1.0
    stall_ms: float = 0.0
    stall_after: int = 0
    stamp: bool = False
    echo: bool = False


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
    "stamp": (0, 1),
    "echo": (0, 1),
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
        low, high = _LIMITS[key]
        if not (low <= number <= high):  # also rejects NaN
            raise invalid(f"{SIM_HEADER}: {key} must be within {low:g}..{high:g}.", param=SIM_HEADER)
        kind = types[key]
        if "bool" in str(kind):
            changes[key] = bool(number)
        elif "int" in str(kind):
            changes[key] = int(number)
        else:
            changes[key] = number
    return replace(defaults, **changes)


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


def answer_pieces(messages: list[dict[str, Any]], n_tokens: int) -> list[str]:
    """The answer to `messages` as `n_tokens` pieces (a piece: a word with its leading space).

    The same messages always give the same pieces.
    """
    prompt = next((message_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
    seed = hashlib.sha256(
        json.dumps([[m.get("role"), message_text(m)] for m in messages], ensure_ascii=False).encode()
    ).digest()
    rng = random.Random(int.from_bytes(seed[:8], "big"))
    echo = " ".join(prompt.split()[:12])
    text = f"You said: {echo}" if echo else ""
    pieces: list[str] = _PIECE.findall(text)
    i = 0
    while len(pieces) < n_tokens:
        pieces.extend(_PIECE.findall(("\n\n" if pieces else "") + _section(rng, i)))
        i += 1
    return pieces[:n_tokens]


# ---- the model ----------------------------------------------------------------------


class DropConnection(Exception):
    """Raised inside a streaming body to cut the connection without ending the stream."""


Sleep = Callable[[float], Awaitable[None]]
CountTokens = Callable[[list[dict[str, Any]], str], int]


class Simulator:
    """The built-in model. `sleep` and `count_tokens` are injectable for tests."""

    def __init__(
        self,
        defaults: SimParams,
        *,
        sleep: Sleep,
        count_tokens: CountTokens = estimate_tokens,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.defaults = defaults
        self.sleep = sleep
        self.count_tokens = count_tokens

    def params(self, header: str | None) -> SimParams:
        return parse_sim_header(header, self.defaults)

    def check_status(self, params: SimParams) -> None:
        """Raise the injected error status, if any, before any answer is produced."""
        if params.status is None:
            return
        headers: dict[str, str] = {}
        # Flow control (gateway/flow) adds the rate-limit headers a 429 implies.
        if params.status in (429, 503):
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

    def _answer(self, req: ChatRequest, params: SimParams) -> tuple[list[str], str, dict[str, int]]:
        n = params.tokens if req.max_tokens is None else min(params.tokens, req.max_tokens)
        if params.echo:
            prompt = next((message_text(m) for m in reversed(req.messages) if m.get("role") == "user"), "")
            pieces = _PIECE.findall(prompt)
        else:
            pieces = answer_pieces(req.messages, n)
        finish = "length" if req.max_tokens is not None and req.max_tokens < params.tokens else "stop"
        prompt_tokens = self.count_tokens(req.messages, req.model)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(pieces),
            "total_tokens": prompt_tokens + len(pieces),
        }
        return pieces, finish, usage

    def complete(self, req: ChatRequest, params: SimParams) -> dict[str, Any]:
        """A non-streaming `chat.completion` object."""
        pieces, finish, usage = self._answer(req, params)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.model,
            "system_fingerprint": "fp_firsttoken_sim",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(pieces), "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": usage,
        }

    def stream(self, req: ChatRequest, params: SimParams) -> AsyncIterator[bytes]:
        """The answer as Server-Sent Events, paced by `params` (OpenAI's chunk format).

        The answer is settled now, before the response headers are written.
        """
        pieces, finish, usage = self._answer(req, params)
        return self._events(req, params, pieces, finish, usage)

    async def _events(
        self, req: ChatRequest, params: SimParams, pieces: list[str], finish: str, usage: dict[str, int]
    ) -> AsyncIterator[bytes]:
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": req.model,
            "system_fingerprint": "fp_firsttoken_sim",
        }
        with_usage = {"usage": None} if req.include_usage else {}

        def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            body = {**base, "choices": choices, **with_usage, **extra}
            if params.stamp:
                body["x_firsttoken_sent_ms"] = time.time() * 1000.0
            return b"data: " + json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"

        def choice(delta: dict[str, Any], finish_reason: str | None = None) -> list[dict[str, Any]]:
            return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]

        await self.sleep(params.ttft_ms / 1000.0)
        yield event(choice({"role": "assistant", "content": "", "refusal": None}))
        # Chunks are due on an absolute schedule from the first one, so that sleep
        # overshoot does not accumulate and the measured rate is the asked-for rate.
        interval = params.chunk / params.tps
        t0 = self.clock()
        sent = 0
        for start in range(0, len(pieces), params.chunk):
            if params.drop_after is not None and sent >= params.drop_after:
                raise DropConnection
            if params.error_after is not None and sent >= params.error_after:
                error = {"message": "Simulated error mid-stream (injected).", "type": "server_error", "param": None, "code": "simulated"}
                yield b"data: " + json.dumps({"error": error}).encode() + b"\n\n"
                return
            if params.stall_ms and sent == params.stall_after:
                await self.sleep(params.stall_ms / 1000.0)
                t0 += params.stall_ms / 1000.0
            delay = t0 + sent * interval - self.clock()
            if delay > 0:
                await self.sleep(delay)
            yield event(choice({"content": "".join(pieces[start : start + params.chunk])}))
            sent += 1
        if params.drop_after is not None and sent >= params.drop_after:
            raise DropConnection
        yield event(choice({}, finish))
        if req.include_usage:
            yield event([], usage=usage)
        yield b"data: [DONE]\n\n"
