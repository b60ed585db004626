"""The three dialects in WebKitGTK (the engine of iOS's WKWebView), through the real
host: a host picks the API in its settings (`settings.set`, `api`), and the page chats
on it with the gateway's built-in model: the answer streams, a repeated system prompt
goes as a cache reference, Stop keeps what came, and a server's error mid-answer is
typed with its partial text."""

from __future__ import annotations

import pytest

from harness.webkit import of, reply
from harness.gtk import WebKitHost

pytestmark = pytest.mark.e2e

SYSTEM = "You are the test assistant of the firsttoken dialects. " * 8
SIM = "x-firsttoken-sim"


def set_settings(host: WebKitHost, request_id: str, **settings: object) -> dict:
    host.send({"type": "settings.set", "id": request_id, "settings": settings})
    return host.wait_for(of(host, request_id, "settings.applied"))


def chat(host: WebKitHost, request_id: str, text: str) -> None:
    host.send({"v": 1, "type": "chat.send", "id": request_id, "messages": [{"role": "user", "content": text}]})


def streamed(host: WebKitHost, request_id: str) -> str:
    return "".join(m["text"] for m in host.messages if m.get("id") == request_id and m.get("type") == "chat.delta")


@pytest.mark.parametrize("api", ["chat_completions", "responses", "anthropic_messages"])
def test_a_host_chats_on_each_api(host: WebKitHost, api: str) -> None:
    set_settings(host, f"{api}-on", api=api, system=SYSTEM, compress="off", headers={SIM: "ttft_ms=0,tps=2000,tokens=24"})
    try:
        for n in (1, 2):
            chat(host, f"{api}-{n}", f"hello on {api}")
            done = reply(host, f"{api}-{n}")
            assert done["type"] == "chat.done", done
            assert streamed(host, f"{api}-{n}").startswith(f"You said: hello on {api}")
            assert done["usage"]["completion_tokens"] == 24
        prepared = host.wait_for(of(host, f"{api}-2", "chat.prepared"))
        assert prepared.get("cache", {}).get("system") == "hit", prepared
        # Counted exactly where the format's overhead is known (Chat Completions).
        assert prepared["exact"] is (api == "chat_completions")

        set_settings(host, f"{api}-slow", headers={SIM: "ttft_ms=0,tps=10,tokens=400"})
        chat(host, f"{api}-stop", "a long answer")
        host.wait_for(of(host, f"{api}-stop", "chat.delta"))
        host.send({"type": "chat.abort", "id": f"{api}-stop"})
        ended = reply(host, f"{api}-stop")
        assert ended["type"] == "chat.error" and ended["error"]["code"] == "aborted", ended
        assert ended["error"]["partial"] and ended["error"]["partial"] == streamed(host, f"{api}-stop")

        set_settings(host, f"{api}-broken", headers={SIM: "ttft_ms=0,tps=2000,error_after=3"})
        chat(host, f"{api}-error", "this one breaks")
        failed = reply(host, f"{api}-error")
        assert failed["type"] == "chat.error" and failed["error"]["code"] == "upstream_error", failed
        assert failed["error"]["partial"] == streamed(host, f"{api}-error") != ""
    finally:
        set_settings(host, f"{api}-off", api=None, system=None, compress=None, headers=None)
