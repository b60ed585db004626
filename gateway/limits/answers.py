"""What flow control says to clients: OpenAI's rate-limit headers and its 429.

Names and formats follow OpenAI's API reference ("Rate limits", response headers):
`x-ratelimit-limit-{requests,tokens}`, `x-ratelimit-remaining-{requests,tokens}`, and
`x-ratelimit-reset-{requests,tokens}` as a Go duration (`1s`, `6m0s`, `20ms`), the time
until the bucket is full again. A 429 adds `retry-after` (whole seconds, RFC 9110
§10.2.3, rounded up so a client that honours it is not refused again) and OpenAI's
`retry-after-ms`. `firsttoken.ratelimit` reads all of these back; the tests check that
it does.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..errors import APIError
from .gcra import BucketView

__all__ = ["go_duration", "rate_headers", "retry_headers", "too_many_requests", "too_large"]


def go_duration(seconds: float) -> str:
    """Like Go's time.Duration.String() at millisecond precision: `20ms`, `1s`, `6m0s`,
    `1h2m3.5s`, which is how OpenAI writes x-ratelimit-reset-*."""
    # Rounded up to the millisecond (a client that waits this long finds the bucket
    # refilled), less a float hair: 0.6 s is 600ms, not 601ms.
    millis = max(0, math.ceil(seconds * 1000 - 1e-6))
    if millis < 1000:
        return f"{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def rate_headers(kinds: Sequence[str], views: Sequence[BucketView]) -> dict[str, str]:
    """Headers for the client's own buckets; `kinds[i]` is "requests" or "tokens"."""
    headers: dict[str, str] = {}
    for kind, v in zip(kinds, views):
        headers[f"x-ratelimit-limit-{kind}"] = str(v.limit)
        headers[f"x-ratelimit-remaining-{kind}"] = str(v.remaining)
        headers[f"x-ratelimit-reset-{kind}"] = go_duration(v.reset_s)
    return headers


def retry_headers(wait_s: float) -> dict[str, str]:
    return {"retry-after": str(max(1, math.ceil(wait_s))), "retry-after-ms": str(max(1, math.ceil(wait_s * 1000)))}


def too_many_requests(message: str, wait_s: float, headers: dict[str, str]) -> APIError:
    """OpenAI's 429: type `requests` or `tokens` in the message, code `rate_limit_exceeded`."""
    return APIError(
        429, message, type="requests", code="rate_limit_exceeded", headers={**headers, **retry_headers(wait_s)}
    )


def too_large(kind: str, limit: float, cost: float, headers: dict[str, str]) -> APIError:
    """A request larger than a whole bucket: no wait makes it fit, so no retry-after,
    and `x-should-retry: false` (OpenAI's own hint) tells clients not to try again."""
    return APIError(
        429,
        f"Request too large: {kind} per min limit {limit:g}, requested {cost:g}. Make the request smaller.",
        type=kind,
        code="rate_limit_exceeded",
        headers={**headers, "x-should-retry": "false"},
    )
