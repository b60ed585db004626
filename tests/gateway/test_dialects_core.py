"""The Python core speaking each dialect to the gateway's built-in model over sockets:
the page's worker minus the browser. The same prompt gets the same answer on all three
routes; a long system prompt goes in full once, then as a reference the gateway
expands (Responses: a leading input item; Messages: a system block)."""

from __future__ import annotations

import json

import httpx
import pytest

from firsttoken.cache import Cache, MemoryStore
from harness.socket_transport import run_core
from tests.unit.fakes import sent_json

SIM = "x-firsttoken-sim"
SYSTEM = "You answer in the voice of a patient librarian. " * 40  # long enough to be referenced


def send(request_id: str, url: str, api: str, messages: list[dict]) -> str:
    return json.dumps({
        "v": 1, "type": "chat.send", "id": request_id, "messages": messages,
        "settings": {"base_url": url + "/v1", "model": "firsttoken-sim", "api": api, "compress": "off",
                     "headers": {SIM: "ttft_ms=0,tps=5000,tokens=30"}},
    })


def answers(events: list[dict], request_id: str) -> str:
    return "".join(e["text"] for e in events if e["type"] == "chat.delta" and e["id"] == request_id)


@pytest.mark.parametrize("api", ["chat_completions", "responses", "anthropic_messages"])
def test_each_dialect_streams_the_same_answer_and_refers_to_its_system_prompt(gateway_url: str, api: str) -> None:
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"hello over {api}"}]
    sent: list = []

    async def script(core, events, wait_for):
        await core.handle(json.dumps({"v": 1, "type": "hello", "id": "h"}))
        await core.handle(send("one", gateway_url, api, first))
        second = [*first, {"role": "assistant", "content": answers(events, "one")},
                  {"role": "user", "content": "and again"}]
        await core.handle(send("two", gateway_url, api, second))

    events = run_core(gateway_url, script, sent=sent, cache=Cache(MemoryStore()), page_origin=gateway_url)
    ends = {e["id"]: e for e in events if e["type"] in ("chat.done", "chat.error")}
    assert ends["one"]["type"] == "chat.done" and ends["two"]["type"] == "chat.done", ends
    assert ends["one"]["finish_reason"] == "stop" and ends["one"]["usage"]["completion_tokens"] == 30
    # The built-in model's answer to this prompt, asked by Chat Completions directly.
    reference = httpx.post(gateway_url + "/v1/chat/completions", headers={SIM: "ttft_ms=0,tokens=30"}, timeout=30,
                           json={"model": "firsttoken-sim", "messages": first}).json()["choices"][0]["message"]["content"]
    assert answers(events, "one") == reference
    assert answers(events, "two")
    # The second request's system prompt went as a reference, where the dialect keeps
    # system text, and the gateway expanded it (the answer came).
    paths = {"chat_completions": "/v1/chat/completions", "responses": "/v1/responses", "anthropic_messages": "/v1/messages"}
    assert [r.url for r in sent] == [gateway_url + paths[api]] * 2
    lead = {"chat_completions": lambda b: b["messages"][0], "responses": lambda b: b["input"][0],
            "anthropic_messages": lambda b: (b["system"][0] if isinstance(b["system"], list) else b["system"])}[api]
    bodies = [sent_json(r) for r in sent]
    # The first goes in full (to Responses in `instructions`: the gateway has not yet
    # said it takes references), the second as a reference.
    assert SYSTEM in json.dumps(bodies[0], ensure_ascii=False)
    assert SYSTEM not in json.dumps(bodies[1], ensure_ascii=False)
    second = lead(bodies[1])
    assert isinstance(second, dict) and second.get("x_firsttoken_ref", "").startswith("sha256:"), second


@pytest.mark.parametrize("api", ["chat_completions", "responses", "anthropic_messages"])
def test_the_next_turn_reads_the_conversation_from_the_servers_prefix_cache(gateway_url: str, api: str) -> None:
    # OpenAI caches long prompts by itself; Anthropic only up to blocks marked
    # `cache_control`, which the core marks (the system prompt's end and the last turn's):
    # on every API the second turn's prompt is read from the cache, up to the first turn.
    long = "Cite the shelf mark of every book you mention, and say which floor it is on. " * 120
    first = [{"role": "system", "content": long}, {"role": "user", "content": f"a first question over {api}"}]

    async def script(core, events, wait_for):
        await core.handle(send("one", gateway_url, api, first))
        second = [*first, {"role": "assistant", "content": answers(events, "one")},
                  {"role": "user", "content": "a second question"}]
        await core.handle(send("two", gateway_url, api, second))

    events = run_core(gateway_url, script, cache=Cache(MemoryStore()), page_origin=gateway_url)
    ends = {e["id"]: e for e in events if e["type"] in ("chat.done", "chat.error")}
    assert ends["two"]["type"] == "chat.done", ends
    usage = ends["two"]["usage"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or usage.get("cache_read_input_tokens")
    # At least the system prompt (over 1,024 tokens) and the first turn came from the cache.
    assert cached and cached >= 1024, usage
