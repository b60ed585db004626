"""Rate limits: read what the server says, wait before it has to say 429.

Pure: no clock, no sleeping. Every function takes `now` (seconds, Unix time, e.g.
`time.time()` or `Date.now() / 1000`) and answers in seconds; the caller sleeps. Jitter
comes from an injectable `random.Random`, so tests are deterministic.

Headers understood (names case-insensitive):

- `x-ratelimit-{limit,remaining}-{requests,tokens}`: counts (OpenAI, Azure, Groq, ...).
- `x-ratelimit-reset-{requests,tokens}`: time until the window resets, as a Go
  duration (`1s`, `6m0s`, `20ms`, `2m59.56s`, `1h2m3.5s`) or plain seconds.
- `retry-after` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date), `retry-after-ms`
  (OpenAI, Azure), and `x-should-retry` (OpenAI's explicit yes/no).

A value that does not parse, is not finite, is negative, or exceeds `MAX_WAIT_S` (one
day: an epoch timestamp sent where a duration belongs lands here) is ignored as if
absent. Nothing here raises on what a server sends.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import timezone
from typing import Any, Literal, Union

__all__ = [
    "MAX_WAIT_S",
    "RETRYABLE_STATUSES",
    "Governor",
    "Headers",
    "RateLimitSnapshot",
    "parse_duration",
    "parse_rate_limit_headers",
    "parse_retry_after",
    "parse_retry_after_headers",
]

#: The longest wait any header may ask for; longer values are treated as garbage.
MAX_WAIT_S = 86_400.0
#: Statuses worth retrying: timeout, conflict, too many requests (and every 5xx).
RETRYABLE_STATUSES = frozenset({408, 409, 429})

Headers = Union[Mapping[str, str], Iterable[tuple[str, str]]]

# re.ASCII: `\d` would otherwise match any Unicode digit, and float("١٢") == 12.0.
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+", re.ASCII)
# Go's time.Duration.String() / ParseDuration format, without a sign.
_GO_DURATION = re.compile(r"(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+", re.ASCII)
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)", re.ASCII)
_UNIT_S = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 MICRO SIGN, which Go prints
    "μs": 1e-6,  # U+03BC GREEK SMALL LETTER MU, which Go also accepts
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_COUNT = re.compile(r"\d{1,15}", re.ASCII)


def _sane(seconds: float) -> float | None:
    return seconds if math.isfinite(seconds) and 0.0 <= seconds <= MAX_WAIT_S else None


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration (`6m0s`, `20ms`, `1h2m3.5s`) or a plain number of
    seconds (`1.5`); None for anything else or out of range."""
    text = text.strip()
    if _NUMBER.fullmatch(text):
        return _sane(float(text))
    if not _GO_DURATION.fullmatch(text):
        return None
    return _sane(sum(float(n) * _UNIT_S[unit] for n, unit in _GO_PART.findall(text)))


def _http_date(text: str) -> float | None:
    """Unix time of an HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, or the obsolete
    RFC 850 and asctime forms, which recipients must accept)."""
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if moment.tzinfo is None:  # asctime has no zone; HTTP-dates are always GMT
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.timestamp()
    except (OverflowError, ValueError, OSError):
        return None


def parse_retry_after(value: str, now: float, date: str | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` value (RFC 9110 §10.2.3).

    delay-seconds is an integer in the RFC; fractions are accepted as some servers
    send them. An HTTP-date is measured against the response's own `Date` header when
    given (no clock skew between us and the server), else against `now`; a date in
    the past means "now" (0).
    """
    value = value.strip()
    if _NUMBER.fullmatch(value):
        return _sane(float(value))
    target = _http_date(value)
    if target is None:
        return None
    reference = _http_date(date) if date else None
    delay = target - (now if reference is None else reference)
    return _sane(max(0.0, delay))


def parse_retry_after_headers(headers: Headers, now: float) -> float | None:
    """Seconds a response received at `now` asks us to wait before retrying, or None.

    `retry-after-ms` (OpenAI, Azure: milliseconds, finer than the standard header)
    wins; else `retry-after` (`parse_retry_after`: delay-seconds or an HTTP-date,
    measured against the response's own `Date`). The one reading of these headers:
    the governor's pacing and `HTTPStatusError.retry_after_s` both come from here.
    """
    return _retry_after(_lower_items(headers), now)


def _retry_after(h: dict[str, str], now: float) -> float | None:
    retry_after: float | None = None
    if "retry-after-ms" in h and _NUMBER.fullmatch(h["retry-after-ms"]):
        retry_after = _sane(float(h["retry-after-ms"]) / 1000.0)
    if retry_after is None and "retry-after" in h:
        retry_after = parse_retry_after(h["retry-after"], now, h.get("date"))
    return retry_after


def _lower_items(headers: Headers) -> dict[str, str]:
    """Header names lowercased; a dict, a list of pairs, or any Mapping (httpx.Headers,
    a JS Headers converted to a dict); bytes are read as Latin-1; junk is skipped."""
    items: Iterable[Any] = headers.items() if hasattr(headers, "items") else headers
    out: dict[str, str] = {}
    for pair in items:
        if isinstance(pair, (str, bytes)) or not isinstance(pair, (tuple, list)) or len(pair) != 2:
            continue
        name, value = (p.decode("latin-1") if isinstance(p, bytes) else p for p in pair)
        if isinstance(name, str) and isinstance(value, str):
            out[name.strip().lower()] = value.strip()
    return out


@dataclass(frozen=True, slots=True)
class RateLimitSnapshot:
    """What one response said about the limits. Times are absolute (`now` + delay),
    on the caller's clock; a field the response did not carry (validly) is None."""

    observed_at: float
    limit_requests: int | None = None
    limit_tokens: int | None = None
    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_at: float | None = None
    reset_tokens_at: float | None = None
    #: Seconds the server asked us to wait (`retry-after-ms`, else `retry-after`).
    retry_after_s: float | None = None
    #: OpenAI's `x-should-retry`: True / False when sent, None otherwise.
    should_retry: bool | None = None


def parse_rate_limit_headers(headers: Headers, now: float) -> RateLimitSnapshot:
    """Read the rate-limit headers of one response received at `now`."""
    h = _lower_items(headers)

    def count(name: str) -> int | None:
        value = h.get(name)
        return int(value) if value is not None and _COUNT.fullmatch(value) else None

    def reset_at(name: str) -> float | None:
        value = h.get(name)
        seconds = parse_duration(value) if value is not None else None
        return None if seconds is None else now + seconds

    should_retry = {"true": True, "false": False}.get(h.get("x-should-retry", "").lower())
    return RateLimitSnapshot(
        observed_at=now,
        limit_requests=count("x-ratelimit-limit-requests"),
        limit_tokens=count("x-ratelimit-limit-tokens"),
        remaining_requests=count("x-ratelimit-remaining-requests"),
        remaining_tokens=count("x-ratelimit-remaining-tokens"),
        reset_requests_at=reset_at("x-ratelimit-reset-requests"),
        reset_tokens_at=reset_at("x-ratelimit-reset-tokens"),
        retry_after_s=_retry_after(h, now),
        should_retry=should_retry,
    )


_LIMIT_FIELDS = (
    "limit_requests",
    "limit_tokens",
    "remaining_requests",
    "remaining_tokens",
    "reset_requests_at",
    "reset_tokens_at",
)


class Governor:
    """Paces requests to one API from what its responses said.

    - `observe()` every response (any status) to learn the limits;
    - `wait_before()` before sending, to wait out an exhausted window here rather than
      in the server's queue or as a 429;
    - `retry_delay()` after a failure, for how long to back off, or None to give up;
    - `quota()` for the page to show.
    """

    def __init__(
        self,
        *,
        max_attempts: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 20.0,
        max_retry_after: float = 60.0,
        jitter: Literal["full", "decorrelated"] = "full",
        rng: random.Random | None = None,
    ) -> None:
        if max_attempts < 1 or not 0 < base_delay <= max_delay or max_retry_after < 0:
            raise ValueError(
                "need max_attempts >= 1, 0 < base_delay <= max_delay, max_retry_after >= 0"
            )
        if jitter not in ("full", "decorrelated"):
            raise ValueError(f"unknown jitter {jitter!r}")
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        #: A server asking for a longer wait than this is not retried: the caller
        #: shows the wait (`quota()`) instead of sitting through it.
        self.max_retry_after = max_retry_after
        self.jitter = jitter
        self._rng = rng if rng is not None else random.Random()
        self._state = RateLimitSnapshot(observed_at=-math.inf)
        self._blocked_until = -math.inf
        self._last_sleep = base_delay

    @property
    def state(self) -> RateLimitSnapshot:
        """The limits as last reported, field by field (a response without token
        headers does not erase what an earlier one said)."""
        return self._state

    def observe(self, status: int | None, headers: Headers, now: float) -> RateLimitSnapshot:
        """Learn from a response (`status` None: no response, a network failure)."""
        snap = parse_rate_limit_headers(headers, now)
        fresh = {name: getattr(snap, name) for name in _LIMIT_FIELDS}
        known = {name: value for name, value in fresh.items() if value is not None}
        self._state = replace(self._state, observed_at=now, **known)
        # Retry-After is defined for 503 and 429 (RFC 9110 §10.2.3, RFC 6585 §4); on a
        # success it would only be noise.
        if snap.retry_after_s is not None and status is not None and status >= 400:
            self._blocked_until = now + snap.retry_after_s
        return snap

    def wait_before(self, estimated_tokens: int, now: float) -> float:
        """Seconds to wait before sending a request of about `estimated_tokens`
        (prompt plus expected completion); 0 to send now."""
        state = self._state
        wait = self._blocked_until - now
        if state.remaining_requests == 0 and state.reset_requests_at is not None:
            wait = max(wait, state.reset_requests_at - now)
        if (
            state.remaining_tokens is not None
            and state.reset_tokens_at is not None
            and max(estimated_tokens, 1) > state.remaining_tokens
            # A request larger than the whole budget never fits: waiting won't help,
            # let the server say so.
            and (state.limit_tokens is None or estimated_tokens <= state.limit_tokens)
        ):
            wait = max(wait, state.reset_tokens_at - now)
        return max(0.0, wait)

    def retry_delay(
        self, attempt: int, status: int | None, headers: Headers, now: float
    ) -> float | None:
        """Seconds to wait before retrying after attempt number `attempt` (1 for the
        first request) failed with `status` (None: no response), or None to give up.

        Retries 408, 409, 429, 5xx and network failures, at most `max_attempts`
        attempts in all, unless `x-should-retry` says otherwise. A server-given wait
        (`retry-after-ms`, `retry-after`, or an exhausted window's reset on a 429) is
        honoured exactly, and if it is longer than `max_retry_after` we give up.
        """
        snap = self.observe(status, headers, now)
        if attempt >= self.max_attempts or snap.should_retry is False:
            return None
        retryable = status is None or status in RETRYABLE_STATUSES or 500 <= status <= 599
        if not (retryable or snap.should_retry):
            return None
        told = snap.retry_after_s
        if told is None and status == 429:
            told = self.wait_before(0, now) or None
        if told is not None:
            return told if told <= self.max_retry_after else None
        return self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        # Exponential backoff with jitter, after AWS's "Exponential Backoff And Jitter"
        # (Marc Brooker, AWS Architecture Blog, 2015): randomising the whole delay
        # ("full") spreads retries of many clients best; "decorrelated" grows from the
        # previous delay instead of the attempt number.
        if self.jitter == "decorrelated":
            if attempt <= 1:
                self._last_sleep = self.base_delay
            upper = max(self.base_delay, self._last_sleep * 3)
            self._last_sleep = min(self.max_delay, self._rng.uniform(self.base_delay, upper))
            return self._last_sleep
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(max(attempt, 1) - 1, 64))
        return self._rng.uniform(0.0, ceiling)

    def quota(self, now: float) -> dict[str, Any]:
        """JSON-able view for the page: per bucket limit, remaining and seconds to
        reset (once a reset is past, remaining is the full limit again, or None if
        unknown), and `wait_s`, the wait `wait_before` would impose on a request."""
        state = self._state

        def bucket(
            limit: int | None, remaining: int | None, reset_at: float | None
        ) -> dict[str, Any]:
            if reset_at is not None and reset_at <= now:
                remaining, reset_at = limit, None
            reset_in = None if reset_at is None else round(reset_at - now, 3)
            return {"limit": limit, "remaining": remaining, "reset_in_s": reset_in}

        blocked = self._blocked_until - now
        return {
            "requests": bucket(
                state.limit_requests, state.remaining_requests, state.reset_requests_at
            ),
            "tokens": bucket(state.limit_tokens, state.remaining_tokens, state.reset_tokens_at),
            "retry_after_s": round(blocked, 3) if blocked > 0 else None,
            "wait_s": round(self.wait_before(0, now), 3),
        }
