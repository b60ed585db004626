"""Rate-limit header parsing and the Governor: tables of real and broken values."""

from __future__ import annotations

import json
import math
import random
import time
from datetime import datetime, timezone
from email.utils import format_datetime

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import firsttoken.ratelimit as ratelimit_module
from firsttoken.ratelimit import (
    MAX_WAIT_S,
    Governor,
    RateLimitSnapshot,
    parse_duration,
    parse_rate_limit_headers,
    parse_retry_after,
    parse_retry_after_headers,
)
from firsttoken.errors import HTTPStatusError
from firsttoken.stream.client import AbortSignal, HTTPRequest, stream_chat

NOW = 1_732_000_000.0  # Unix time of "now" in these tests

# What api.openai.com sends with a streamed chat completion.
OPENAI = {
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-limit-tokens": "30000000",
    "x-ratelimit-remaining-requests": "9999",
    "x-ratelimit-remaining-tokens": "29999968",
    "x-ratelimit-reset-requests": "6ms",
    "x-ratelimit-reset-tokens": "0s",
}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("0s", 0.0),
        ("0", 0.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("2m59.56s", 179.56),
        ("1h2m3.5s", 3723.5),
        ("7.66s", 7.66),
        ("500us", 0.0005),
        ("500µs", 0.0005),  # U+00B5 MICRO SIGN, as Go prints it
        ("500μs", 0.0005),  # U+03BC GREEK SMALL LETTER MU
        ("100ns", 1e-7),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("1h1h", 7200.0),
        ("1.5", 1.5),  # plain seconds, as some servers send
        (" 2s ", 2.0),
        ("24h", 86400.0),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "s",
        "-1s",
        "+1s",
        "inf",
        "nan",
        "Infinity",
        "1e3s",
        "1e3",
        "1x",
        "1s2",
        "1 s",
        "2d",
        "1.5.3s",
        "24h0m1s",  # more than a day
        "1718000000",  # an epoch timestamp where a duration belongs
        "9" * 400,
        "١٢s",  # Arabic-Indic digits are digits to Python, not to Go
        "0x10s",
        "1m-5s",
    ],
)
def test_bad_durations_are_ignored(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        ("0", 0.0),
        ("1.5", 1.5),
        (format_datetime(datetime.fromtimestamp(NOW + 30, timezone.utc), usegmt=True), 30.0),
        (format_datetime(datetime.fromtimestamp(NOW - 30, timezone.utc), usegmt=True), 0.0),  # past: now
    ],
)
def test_retry_after(value: str, seconds: float) -> None:
    assert parse_retry_after(value, NOW) == pytest.approx(seconds)


def test_retry_after_date_is_measured_against_the_date_header() -> None:
    # Our clock is an hour off; the server's Date and Retry-After agree on 10 s.
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", NOW, "Wed, 21 Oct 2015 07:28:00 GMT") == 10.0


@pytest.mark.parametrize(
    "value",
    ["Sunday, 21-Oct-15 07:28:10 GMT", "Wed Oct 21 07:28:10 2015"],  # RFC 850, asctime
)
def test_retry_after_obsolete_date_forms(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # asctime carries no zone: it is GMT, whatever the local zone says.
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert parse_retry_after(value, NOW, "Wed, 21 Oct 2015 07:28:00 GMT") == 10.0
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(
    "value",
    ["-1", "inf", "nan", "1e3", "soon", "", "86401", "Wed, 21 Oct 2999 07:28:00 GMT", "Wed, 99 Foo 2015 07:28:00 GMT", "١٢"],
)
def test_bad_retry_after_is_ignored(value: str) -> None:
    assert parse_retry_after(value, NOW) is None


def test_snapshot_from_openai_headers() -> None:
    snap = parse_rate_limit_headers(OPENAI, NOW)
    assert snap == RateLimitSnapshot(
        observed_at=NOW,
        limit_requests=10000,
        limit_tokens=30000000,
        remaining_requests=9999,
        remaining_tokens=29999968,
        reset_requests_at=NOW + 0.006,
        reset_tokens_at=NOW,
    )


@pytest.mark.parametrize(
    "headers",
    [
        {k.upper(): v for k, v in OPENAI.items()},
        [(k.title(), v) for k, v in OPENAI.items()],
        [(k.encode(), v.encode()) for k, v in OPENAI.items()],
        httpx.Headers(OPENAI),
        [*OPENAI.items(), "junk", ("a",), ("x", 1), 42, ("b", "c", "d")],
    ],
    ids=["upper-dict", "title-pairs", "bytes-pairs", "httpx-headers", "with-junk"],
)
def test_header_containers_and_case(headers: object) -> None:
    assert parse_rate_limit_headers(headers, NOW) == parse_rate_limit_headers(OPENAI, NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["-1", "1.5", "abc", "", "１０", "1e3", "9" * 16, "NaN"])
def test_bad_counts_are_ignored(value: str) -> None:
    snap = parse_rate_limit_headers({"x-ratelimit-remaining-tokens": value}, NOW)
    assert snap.remaining_tokens is None


def test_retry_after_ms_wins_over_retry_after() -> None:
    snap = parse_rate_limit_headers({"Retry-After": "20", "retry-after-ms": "1500"}, NOW)
    assert snap.retry_after_s == 1.5
    snap = parse_rate_limit_headers({"Retry-After": "20", "retry-after-ms": "nan"}, NOW)
    assert snap.retry_after_s == 20.0


class _Refused:
    def __init__(self, headers: dict[str, str]) -> None:
        self.status, self.headers = 429, headers

    async def read(self, limit: int) -> bytes:
        return b'{"error": {"message": "slow down"}}'

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> "_Refused":
        return self


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after-ms": "1500", "retry-after": "20"},
        {"Retry-After": "20"},
        {"retry-after": "2.5"},
        {"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT", "date": "Wed, 21 Oct 2015 07:28:00 GMT"},
        {"retry-after-ms": "nan", "retry-after": "3"},
        {"retry-after": "1e3"},
        {"retry-after": "-1"},
        {},
    ],
)
def test_the_client_and_the_governor_read_retry_after_alike(headers: dict[str, str]) -> None:
    # One parser (parse_retry_after_headers): what an HTTPStatusError says the server
    # asked for is what the governor waits.
    import asyncio

    async def refused() -> HTTPStatusError:
        request = HTTPRequest("POST", "http://api.test/v1/chat/completions", {}, b"{}")
        try:
            async for _ in stream_chat(_Refused(headers), request, abort=AbortSignal(), clock=lambda: NOW * 1000):
                pass
        except HTTPStatusError as exc:
            return exc
        raise AssertionError("no HTTPStatusError")

    error = asyncio.run(refused())
    assert error.retry_after_s == parse_retry_after_headers(headers, NOW) == parse_rate_limit_headers(headers, NOW).retry_after_s
    gov = Governor()
    gov.observe(429, headers, NOW)
    assert gov.quota(NOW)["retry_after_s"] == (round(error.retry_after_s, 3) if error.retry_after_s else None)


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("False", False), ("maybe", None)])
def test_x_should_retry(value: str, expected: bool | None) -> None:
    assert parse_rate_limit_headers({"x-should-retry": value}, NOW).should_retry is expected


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [*OPENAI, "retry-after", "retry-after-ms", "date", "x-should-retry", "X-RateLimit-Reset-Tokens"]
        ),
        st.one_of(st.text(max_size=40), st.from_regex(r"\A[0-9.hmsun]{1,12}\Z"), st.sampled_from(["inf", "-0", "1e308"])),
    ),
    st.floats(min_value=0, max_value=4e9),
)
def test_property_parsing_never_raises_and_stays_in_range(headers: dict[str, str], now: float) -> None:
    snap = parse_rate_limit_headers(headers, now)
    for at in (snap.reset_requests_at, snap.reset_tokens_at):
        assert at is None or now <= at <= now + MAX_WAIT_S
    assert snap.retry_after_s is None or 0 <= snap.retry_after_s <= MAX_WAIT_S


# ---- Governor: before sending --------------------------------------------------------


def test_fresh_governor_does_not_wait() -> None:
    assert Governor().wait_before(1000, NOW) == 0.0


def test_waits_for_the_request_window() -> None:
    gov = Governor()
    gov.observe(200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2.5s"}, NOW)
    assert gov.wait_before(10, NOW) == pytest.approx(2.5)
    assert gov.wait_before(10, NOW + 2) == pytest.approx(0.5)
    assert gov.wait_before(10, NOW + 3) == 0.0


def test_waits_for_tokens_only_when_the_estimate_does_not_fit() -> None:
    gov = Governor()
    gov.observe(
        200,
        {"x-ratelimit-limit-tokens": "10000", "x-ratelimit-remaining-tokens": "500", "x-ratelimit-reset-tokens": "6m0s"},
        NOW,
    )
    assert gov.wait_before(400, NOW) == 0.0
    assert gov.wait_before(800, NOW) == pytest.approx(360.0)
    # Bigger than the whole budget: waiting cannot help, send and let the server say so.
    assert gov.wait_before(20000, NOW) == 0.0


def test_exhausted_tokens_without_a_reset_time_do_not_block() -> None:
    gov = Governor()
    gov.observe(200, {"x-ratelimit-remaining-tokens": "0"}, NOW)
    assert gov.wait_before(100, NOW) == 0.0


def test_a_later_response_without_headers_keeps_what_was_known() -> None:
    gov = Governor()
    gov.observe(200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "10s"}, NOW)
    gov.observe(200, {}, NOW + 1)
    assert gov.state.remaining_requests == 0 and gov.wait_before(1, NOW + 1) == pytest.approx(9.0)


def test_retry_after_in_force_is_respected() -> None:
    gov = Governor()
    gov.observe(429, {"retry-after": "7"}, NOW)
    assert gov.wait_before(1, NOW + 2) == pytest.approx(5.0)
    gov.observe(200, {"retry-after": "100"}, NOW + 3)  # ignored on a success
    assert gov.wait_before(1, NOW + 3) == pytest.approx(4.0)


# ---- Governor: after a failure -------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    assert Governor().retry_delay(1, status, {}, NOW) is None


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, None])
def test_transient_failures_are_retried(status: int | None) -> None:
    delay = Governor(rng=random.Random(1)).retry_delay(1, status, {}, NOW)
    assert delay is not None and 0 <= delay <= 0.5


def test_gives_up_after_max_attempts() -> None:
    gov = Governor(max_attempts=3, rng=random.Random(1))
    assert gov.retry_delay(1, 503, {}, NOW) is not None
    assert gov.retry_delay(2, 503, {}, NOW) is not None
    assert gov.retry_delay(3, 503, {}, NOW) is None
    assert Governor(max_attempts=1).retry_delay(1, 503, {}, NOW) is None


def test_x_should_retry_overrides_the_status() -> None:
    assert Governor().retry_delay(1, 503, {"x-should-retry": "false"}, NOW) is None
    assert Governor().retry_delay(1, 400, {"x-should-retry": "true"}, NOW) is not None


def test_server_given_wait_is_honoured_exactly() -> None:
    assert Governor().retry_delay(1, 429, {"retry-after": "3"}, NOW) == 3.0
    assert Governor().retry_delay(1, 503, {"retry-after-ms": "250"}, NOW) == 0.25
    # A 429 with only an exhausted window waits for its reset.
    headers = {"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1.5s"}
    assert Governor().retry_delay(1, 429, headers, NOW) == pytest.approx(1.5)


def test_too_long_a_server_wait_gives_up_but_is_shown() -> None:
    gov = Governor(max_retry_after=60)
    assert gov.retry_delay(1, 429, {"retry-after": "3600"}, NOW) is None
    assert gov.quota(NOW)["retry_after_s"] == 3600.0
    assert gov.wait_before(1, NOW + 10) == pytest.approx(3590.0)


@pytest.mark.parametrize("seed", range(20))
def test_full_jitter_bounds(seed: int) -> None:
    gov = Governor(max_attempts=100, base_delay=0.5, max_delay=8.0, rng=random.Random(seed))
    for attempt in range(1, 60):
        delay = gov.retry_delay(attempt, 503, {}, NOW)
        assert delay is not None and 0.0 <= delay <= min(8.0, 0.5 * 2 ** (attempt - 1))


def test_full_jitter_spreads_over_the_whole_range() -> None:
    gov = Governor(max_attempts=100, base_delay=1.0, max_delay=8.0, rng=random.Random(7))
    delays = [gov.retry_delay(4, 503, {}, NOW) for _ in range(400)]
    assert min(delays) < 1.0 and max(delays) > 7.0  # type: ignore[type-var]


@pytest.mark.parametrize("seed", range(20))
def test_decorrelated_jitter_bounds(seed: int) -> None:
    gov = Governor(max_attempts=100, base_delay=0.5, max_delay=8.0, jitter="decorrelated", rng=random.Random(seed))
    previous = 0.5
    for attempt in range(1, 40):
        delay = gov.retry_delay(attempt, 500, {}, NOW)
        assert delay is not None and 0.5 <= delay <= min(8.0, 3 * previous)
        previous = delay


def test_backoff_is_deterministic_with_a_seeded_rng() -> None:
    def delays() -> list[float | None]:
        gov = Governor(rng=random.Random(42))
        return [gov.retry_delay(a, 502, {}, NOW) for a in (1, 2, 3)]

    assert delays() == delays()


@settings(max_examples=200, deadline=None)
@given(
    attempt=st.integers(min_value=-5, max_value=10_000),
    status=st.one_of(st.none(), st.integers(min_value=100, max_value=999)),
    retry_after=st.one_of(st.none(), st.text(max_size=12), st.floats().map(str)),
    jitter=st.sampled_from(["full", "decorrelated"]),
)
def test_property_retry_delay_is_bounded(attempt: int, status: int | None, retry_after: str | None, jitter: str) -> None:
    gov = Governor(max_attempts=10_000, jitter=jitter, rng=random.Random(0))  # type: ignore[arg-type]
    headers = {} if retry_after is None else {"retry-after": retry_after}
    delay = gov.retry_delay(attempt, status, headers, NOW)
    assert delay is None or (math.isfinite(delay) and 0 <= delay <= max(gov.max_delay, gov.max_retry_after))


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"base_delay": 0}, {"base_delay": 5, "max_delay": 1}, {"max_retry_after": -1}, {"jitter": "none"}],
)
def test_bad_settings(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Governor(**kwargs)


# ---- quota -----------------------------------------------------------------------------


def test_quota_for_the_page() -> None:
    gov = Governor()
    assert gov.quota(NOW) == {
        "requests": {"limit": None, "remaining": None, "reset_in_s": None},
        "tokens": {"limit": None, "remaining": None, "reset_in_s": None},
        "retry_after_s": None,
        "wait_s": 0.0,
    }
    gov.observe(200, {**OPENAI, "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m"}, NOW)
    quota = gov.quota(NOW + 15)
    assert json.loads(json.dumps(quota)) == quota
    assert quota["requests"] == {"limit": 10000, "remaining": 0, "reset_in_s": 45.0}
    assert quota["tokens"] == {"limit": 30000000, "remaining": 30000000, "reset_in_s": None}  # reset is past
    assert quota["wait_s"] == 45.0


def test_public_surface() -> None:
    for name in ratelimit_module.__all__:
        assert hasattr(ratelimit_module, name), name
