"""A first visit never waits for Python, in WebKitGTK (the engine of iOS's WKWebView),
through the real host: a gateway of the test's own holds the runtime's wasm back until
the test lets it go; meanwhile a prompt sent from the composer goes to the gateway with
`x-firsttoken-prepare` (js/page/early-send.js), streams, and reads as Python's would (the
built-in model's answer to the prepared prompt, the compression note with the core's
counts); Stop and a server's error keep the text so far. Once the runtime is let
through and Python is ready, the next prompt goes through Python (no header)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from firsttoken.notices import Notices
from firsttoken.prepare.preparer import Preparer
from firsttoken.settings import ChatSettings
from gateway.prepare import PREPARE_HEADER
from harness.gtk import WebKitHost, Xvfb
from harness.webkit import BOOT_TIMEOUT_S, HoldingGateway, boot, serving, stored_answers, wait, watched

pytestmark = pytest.mark.e2e

WASM = "/vendor/pyodide/pyodide.asm.wasm"
CHAT = "/v1/chat/completions"
SIM = "x-firsttoken-sim"
PROMPT = 'What is in this?\n```json\n{\n    "name": "firsttoken",\n    "sizes": [1, 2, 3],\n    "ok": true\n}\n```'
#: Marks the test's own requests for a reference answer (not recorded as the page's).
REFERENCE = b"x-test-reference"
ANSWER = "[...document.querySelectorAll('.msg[data-role=assistant]')].at(-1)"


class RuntimeHeld(HoldingGateway):
    """Requests for the runtime's wasm wait until `release()`; chat requests are recorded
    (their `x-firsttoken-prepare`) and carry `sim` as the built-in model's settings when
    it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.chats: list[str | None] = []
        self.sim: str | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == WASM and not self.released.is_set():
            await self.hold()
        if scope["type"] == "http" and scope["path"] == CHAT and (REFERENCE, b"1") not in scope["headers"]:
            headers = dict(scope["headers"])
            self.chats.append(headers.get(PREPARE_HEADER.encode(), b"").decode() or None)
            if self.sim is not None:
                kept = [(k, v) for k, v in scope["headers"] if k != SIM.encode()]
                scope = {**scope, "headers": [*kept, (SIM.encode(), self.sim.encode())]}
        await self.app(scope, receive, send)


@pytest.fixture
def served() -> Iterator[tuple[str, RuntimeHeld]]:
    yield from serving(RuntimeHeld())


@pytest.fixture
def host(xvfb: Xvfb, served: tuple[str, RuntimeHeld]) -> Iterator[WebKitHost]:
    """A first visit: an ephemeral profile (no service worker, no stored snapshot)."""
    with watched(served[0] + "/", xvfb.display) as h:
        yield h


def prepared(messages: list[dict[str, Any]]) -> Any:
    preparer = Preparer(clock=lambda: 0.0, notices=Notices())
    return asyncio.run(preparer.prepare(messages, ChatSettings(model="firsttoken-sim", compress="balanced")))


def expected_answer(url: str, messages: list[dict[str, Any]], sim: str = "ttft_ms=0") -> str:
    r = httpx.post(url + CHAT, headers={SIM: sim, REFERENCE.decode(): "1"}, json={"model": "firsttoken-sim", "messages": messages}, timeout=30)
    return r.json()["choices"][0]["message"]["content"]


def send(host: WebKitHost, text: str) -> None:
    host.eval(f"document.getElementById('prompt').value = {json.dumps(text)}, document.getElementById('send').click(), true")


def loaded(host: WebKitHost) -> None:
    """The page loaded (the host says so), and takes input."""
    host.wait_event(lambda e: e["event"] == "load", 60)
    wait(host, "document.documentElement.dataset.interactive")


def python(host: WebKitHost) -> str:
    return host.eval("document.documentElement.dataset.python")


def test_a_prompt_sent_while_python_downloads_streams_through_the_gateway_then_python_takes_over(
    host: WebKitHost, served: tuple[str, RuntimeHeld]
) -> None:
    url, holding = served
    loaded(host)
    send(host, PROMPT)
    wait(host, f"{ANSWER}?.dataset.state === 'done'")
    assert python(host) == "loading" and holding.held, "Python was not held back"
    assert holding.chats == ["balanced"]
    done = prepared([{"role": "user", "content": PROMPT}])
    assert done.messages != [{"role": "user", "content": PROMPT}]
    assert stored_answers(host) == [expected_answer(url, done.messages)]
    note = host.eval("document.querySelector('.msg[data-role=user] details.saved summary')?.textContent ?? null")
    assert note is not None
    assert re.fullmatch(rf"sent {done.prompt_tokens:,} tokens instead of {done.prompt_tokens + done.saved[-1]:,} \(−\d+%\)", note)
    assert "Waiting for Python" not in host.eval(f"{ANSWER}.textContent")

    holding.release()
    boot(host, BOOT_TIMEOUT_S)
    send(host, "and now?")
    wait(host, "document.querySelectorAll('.msg[data-role=assistant]').length === 2")
    wait(host, f"{ANSWER}.dataset.state === 'done'")
    assert holding.chats == ["balanced", None]
    assert len(stored_answers(host)) == 2


def test_stop_and_a_server_error_on_the_early_path_keep_the_text_so_far(
    host: WebKitHost, served: tuple[str, RuntimeHeld]
) -> None:
    url, holding = served
    loaded(host)
    holding.sim = "ttft_ms=0,tps=25,tokens=2000"
    send(host, "a long one please")
    wait(host, f"+({ANSWER}?.dataset.paints || 0) >= 3")
    wait(host, "!document.getElementById('stop').disabled")
    host.eval("document.getElementById('stop').click(), true")
    wait(host, f"{ANSWER}.dataset.state === 'stopped'")
    assert host.eval(f"{ANSWER}.querySelector('.error').textContent") == "Stopped."
    [partial] = stored_answers(host)
    full = expected_answer(url, prepared([{"role": "user", "content": "a long one please"}]).messages, holding.sim)
    assert partial and full.startswith(partial) and len(partial) < len(full)

    holding.sim = "ttft_ms=0,tps=500,error_after=6"
    host.eval("document.getElementById('new-chat').click(), true")
    send(host, "break please")
    wait(host, f"{ANSWER}?.dataset.state === 'error'")
    assert "model reported an error" in host.eval(f"{ANSWER}.querySelector('.error').textContent")
    [broken] = stored_answers(host)
    full = expected_answer(url, prepared([{"role": "user", "content": "break please"}]).messages)
    assert broken and full.startswith(broken) and broken != full
    assert python(host) == "loading" and holding.chats == ["balanced", "balanced"]
