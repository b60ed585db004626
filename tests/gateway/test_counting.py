"""One probe per gateway, one count per request (gateway/counting.py): flow control
counts the prompt, the built-in model bills that count, in every API; without a tokens
bucket the built-in model counts it itself, once."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from starlette.testclient import TestClient

from firsttoken import tokens
from gateway import counting
from gateway.app import GatewayConfig, create_app
from gateway.counting import PromptCounter
from gateway.limits import FlowLimits
from gateway.simulator import SimParams

TEXT = "how many tokens is this prompt, counted once?"
BODIES = {
    "/v1/chat/completions": ({"model": "gpt-4o", "messages": [{"role": "user", "content": TEXT}]},
                             lambda usage: usage["prompt_tokens"]),
    "/v1/responses": ({"model": "gpt-4o", "input": TEXT}, lambda usage: usage["input_tokens"]),
    "/v1/messages": ({"model": "claude-sonnet-4-5", "max_tokens": 32, "messages": [{"role": "user", "content": TEXT}]},
                     lambda usage: usage["input_tokens"]),
}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the gateway probed for a counter and counted a prompt."""
    seen = {"probes": 0, "counts": 0}
    load = PromptCounter.load

    def counted_load() -> PromptCounter:
        seen["probes"] += 1
        counter = load()

        def chat(*args: Any, **kwargs: Any) -> int:
            seen["counts"] += 1
            return counter.chat(*args, **kwargs)

        return replace(counter, chat=chat)

    monkeypatch.setattr(counting.PromptCounter, "load", staticmethod(counted_load))
    return seen


@pytest.mark.parametrize("limits", [FlowLimits(), FlowLimits(tpm=0)], ids=["tokens bucket", "no tokens bucket"])
@pytest.mark.parametrize("path", list(BODIES))
def test_each_prompt_is_counted_once(calls: dict[str, int], path: str, limits: FlowLimits) -> None:
    app = create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=1e6, tokens=5), limits=limits, precompressed=None))
    assert calls["probes"] == 1
    body, prompt_of = BODIES[path]
    with TestClient(app, base_url="http://localhost", headers={"content-type": "application/json"}) as client:
        for n in (1, 2):
            answer = client.post(path, json=body)
            assert answer.status_code == 200, answer.text
            assert calls["counts"] == n
            # What was billed is the prompt's exact count (a system message first, as
            # every dialect's prompt is read, when there is one).
            assert prompt_of(answer.json()["usage"]) == tokens.count_chat([{"role": "user", "content": TEXT}], body["model"])
    assert calls["probes"] == 1
