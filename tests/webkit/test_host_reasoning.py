"""A native host receiving a reasoning model's reply (issue 48, item 8), through the real
GTK host in WebKitGTK (the engine of iOS's WKWebView): the host sets the Thinking level
with `settings.set` (`reasoning`, `reasoning_summary`: bridge/PROTOCOL.md, "Hosts" and
"Reasoning"), sends its own chat to the built-in thinking model, and gets `chat.delta`s
carrying `reasoning` before the first answer text, then `chat.done` with the usage's
reasoning tokens and, where the API gives one, `replay`.

That the level reached the request is read from what the built-in model did with it:
it thinks `think_budget` times the effort's share (low 25 %, medium 50 %, high 100 %;
docs/gateway.md, "Thinking") and says how many tokens it thought in the usage, which
`chat.done.usage.completion_tokens_details.reasoning_tokens` carries in all three APIs.

No sleeps: every step waits for the event that says it happened (`wait_for`)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.webkit import of, reply
from harness.gtk import WebKitHost

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(20)]

THINK = "firsttoken-sim-think"
#: High effort thinks the whole budget; low a quarter, medium half (docs/gateway.md).
BUDGET = 40
SIM = {"x-firsttoken-sim": f"think_budget={BUDGET},tokens=6"}


def set_settings(host: WebKitHost, request_id: str, **settings: object) -> dict[str, Any]:
    """The host's `settings.set`; returns what the page says is set now."""
    host.send({"v": 1, "type": "settings.set", "id": request_id, "settings": settings})
    return host.wait_for(of(host, request_id, "settings.applied"))["settings"]


def chat(host: WebKitHost, request_id: str, text: str, **extra: object) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Send the host's own chat; its `chat.delta`s in order, and the message that ended it."""
    start = len(host.messages)
    host.send({"v": 1, "type": "chat.send", "id": request_id, "messages": [{"role": "user", "content": text}], **extra})
    end = reply(host, request_id)
    assert end["type"] == "chat.done", end
    deltas = [m for m in host.messages[start:] if m.get("id") == request_id and m.get("type") == "chat.delta"]
    return deltas, end


def reasoning_tokens(done: dict[str, Any]) -> int:
    return ((done.get("usage") or {}).get("completion_tokens_details") or {}).get("reasoning_tokens", 0)


@pytest.fixture(autouse=True)
def clean_settings(host: WebKitHost):
    """Each test starts from no host settings and leaves none behind."""
    yield
    set_settings(host, "clear", model=None, api=None, headers=None, reasoning=None, reasoning_summary=None)


@pytest.mark.parametrize("api", ["chat_completions", "responses", "anthropic_messages"])
def test_the_host_receives_reasoning_before_the_answer_then_done(host: WebKitHost, api: str) -> None:
    applied = set_settings(host, f"set-{api}", model=THINK, api=api, headers=SIM, reasoning="high", reasoning_summary=True)
    assert (applied["reasoning"], applied["reasoning_summary"]) == ("high", True)

    deltas, done = chat(host, f"think-{api}", "why is the sky blue?")
    first_reasoning = next(i for i, d in enumerate(deltas) if d.get("reasoning"))
    first_text = next(i for i, d in enumerate(deltas) if d["text"])
    # Reasoning comes first, alone: the moment a host shows "Thinking…".
    assert first_reasoning < first_text, [(d.get("reasoning"), d["text"]) for d in deltas[:first_text + 1]]
    assert deltas[first_reasoning]["text"] == ""
    assert [d["seq"] for d in deltas] == sorted(d["seq"] for d in deltas)
    reasoning = "".join(d.get("reasoning", "") for d in deltas)
    answer = "".join(d["text"] for d in deltas)
    assert reasoning.startswith("Let me think about"), reasoning[:80]
    assert answer and "Let me think" not in answer  # `text` is answer text only

    # The answer is done; the reasoning was counted, and timings tell its start apart.
    assert done["finish_reason"] == "stop"
    assert reasoning_tokens(done) > 0, done["usage"]
    timings = done["timings"]
    assert timings["first_delta"] <= timings["first_text"]

    # What goes back on the next turn: the API's own opaque parts, bound to the model.
    replay = done.get("replay")
    if api == "chat_completions":
        assert replay is None  # DeepSeek's field is asked back only after tool calls
    else:
        assert replay["api"] == api and replay["model"] == THINK, replay
        kinds = {item["type"] for item in replay["items"]}
        if api == "responses":
            assert kinds == {"reasoning"} and all(item.get("encrypted_content") for item in replay["items"])
        else:
            assert "thinking" in kinds and all(item["signature"] for item in replay["items"] if item["type"] == "thinking")


def test_the_hosts_level_reaches_the_request(host: WebKitHost) -> None:
    # Chat Completions: the level goes as `reasoning_effort`, and the built-in model
    # thinks its share of the budget for it (Auto: nothing sent, the model's medium).
    set_settings(host, "cc", model=THINK, api="chat_completions", headers=SIM)
    thought = {}
    for level in ("low", "high", None, "off"):
        assert set_settings(host, f"level-{level}", reasoning=level).get("reasoning") == level
        deltas, done = chat(host, f"level-{level}-chat", "think about it")
        thought[level] = (reasoning_tokens(done), any(d.get("reasoning") for d in deltas))
    assert thought == {"low": (BUDGET // 4, True), "high": (BUDGET, True), None: (BUDGET // 2, True), "off": (0, False)}

    # A request's own settings win over the host's level, for that request only.
    set_settings(host, "low-again", reasoning="low")
    _, done = chat(host, "own-high", "think hard once", settings={"reasoning": "high"})
    assert reasoning_tokens(done) == BUDGET
    _, done = chat(host, "back-to-low", "and lightly again")
    assert reasoning_tokens(done) == BUDGET // 4


def test_a_host_that_turns_summaries_off_gets_no_reasoning_text_but_the_model_still_thinks(host: WebKitHost) -> None:
    # Responses hides reasoning unless a summary is asked for (`reasoning.summary`):
    # with `reasoning_summary: false` nothing streams while the model thinks, so a host
    # shows "Thinking…" from its send until the first answer text.
    set_settings(host, "quiet", model=THINK, api="responses", headers=SIM, reasoning="medium", reasoning_summary=False)
    deltas, done = chat(host, "quiet-chat", "think quietly")
    assert not any(d.get("reasoning") for d in deltas), deltas[:3]
    assert "".join(d["text"] for d in deltas)
    assert reasoning_tokens(done) == BUDGET // 2
    assert done["replay"]["items"][0]["type"] == "reasoning"  # still sealed, still going back
