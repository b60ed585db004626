"""bench/usage_gateway.py: the usage records bench-resume and bench-images read are the
usage the gateway reports on the wire, one per answer started, including an answer
whose client left before its usage arrived; a dry run records nothing."""

from __future__ import annotations

import json
from typing import Any, Iterator

import httpx
import pytest

from bench.usage_gateway import usage_gateway, usage_records

BODY = {"model": "firsttoken-sim", "stream": True, "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "Why does my upload overwrite another user's photo? " * 60}]}


@pytest.fixture(scope="module")
def gateway() -> Iterator[Any]:
    with usage_gateway("--log-level", "warning", "--ttft-ms", "0", "--tps", "5000") as url:
        yield url


def streamed_usage(url: str, body: dict[str, Any]) -> dict[str, Any]:
    usage = None
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=60) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data: {"):
                usage = json.loads(line[6:]).get("usage") or usage
    assert usage is not None
    return usage


def test_each_answer_is_recorded_as_its_usage_on_the_wire(gateway: Any) -> None:
    before = len(usage_records(gateway))
    first = streamed_usage(gateway, BODY)
    again = streamed_usage(gateway, BODY)  # a re-POST of the same prompt is billed again
    records = usage_records(gateway, at_least=before + 2)[before:]

    assert len(records) == 2
    for record, usage in zip(records, (first, again), strict=True):
        assert record["prompt_tokens"] == usage["prompt_tokens"]
        assert record["completion_tokens"] == usage["completion_tokens"]
        assert record["cached_tokens"] == usage["prompt_tokens_details"]["cached_tokens"]


def test_an_answer_left_mid_stream_is_billed_and_a_dry_run_is_not(gateway: Any) -> None:
    before = len(usage_records(gateway))
    slow = {**BODY, "messages": [{"role": "user", "content": "Left mid-answer: " + "words " * 40}]}
    with httpx.stream("POST", gateway + "/v1/chat/completions", json=slow,
                      headers={"x-firsttoken-sim": "tps=5,tokens=200"}, timeout=60) as r:
        first = next(line for line in r.iter_lines() if line.startswith("data: {"))
        assert "usage" not in json.loads(first[6:]) or json.loads(first[6:])["usage"] is None
    # The client is gone before the usage chunk; the prompt was billed all the same.
    records = usage_records(gateway, at_least=before + 1)[before:]
    assert len(records) == 1 and records[0]["prompt_tokens"] > 40

    dry = httpx.post(gateway + "/v1/chat/completions?dry_run=true", json=BODY, timeout=60)
    dry.raise_for_status()
    assert dry.json()["prompt_tokens"] > 0
    streamed_usage(gateway, slow | {"messages": [{"role": "user", "content": "after the dry run"}]})
    records = usage_records(gateway, at_least=before + 2)[before:]
    assert len(records) == 2 and records[1]["prompt_tokens"] < records[0]["prompt_tokens"]
