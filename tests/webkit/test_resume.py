"""An answer that survives its WebView in WebKitGTK (the engine of iOS's WKWebView): the
OS kills the app mid-answer, the user opens it again (a new web view on the same
profile), and the answer goes on where it was, to the same last character as if
nothing had happened (bridge/PROTOCOL.md, "Resumable streams")."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from harness.gtk import WebKitHost, Xvfb
from harness.servers import hold_at, release
from harness.webkit import READ, assert_clean_console, boot, saved, wait

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(20)]

#: The built-in model's pace (1.5 s of answer); the answer is held a few words in until
#: the second web view is up (`hold_at`), so that the first is killed mid-answer on any
#: machine (an answer that ended first would leave nothing to resume). The hold is what
#: makes it mid-answer, not the answer's length: 60 words leave 48 to stream after the
#: release (800 did the same in 20 s more, waited on by the second view and by the
#: uninterrupted reference request alike).
SIM = "ttft_ms=0,tps=40,tokens=60"
PROMPT = "the app is killed"
ANSWER = "document.querySelector('.msg[data-role=\"assistant\"]')"


def test_a_web_view_killed_mid_answer_finishes_it_in_the_next_one(xvfb: Xvfb, gateway_url: str, tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    stall, key = hold_at(12)
    # The page's settings with the built-in model slowed down (settings.headers: no UI).
    settings = json.dumps({"headers": {"x-firsttoken-sim": f"{SIM},{stall}"}})
    with WebKitHost(gateway_url + "/", display=xvfb.display, profile=profile) as first:
        boot(first)
        first.eval(f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)})")
        seen = len(first.messages)
        first.load(gateway_url + "/")
        first.wait_for(lambda m: m.get("type") == "ready", 120, start=seen)
        # IndexedDB open before the prompt: an open that answers late (a loaded machine)
        # would keep the answer in memory until then, and could write it only once done.
        assert saved(first)
        first.eval(f"(() => {{ const p = document.getElementById('prompt'); p.value = {json.dumps(PROMPT)};"
                   " document.getElementById('send').click(); return true; })()")
        # Mid-answer, with the stream kept in IndexedDB: then the process is killed, as
        # the OS kills a backgrounded app (no pagehide, nothing saved on the way out).
        assert wait(first, f"+({ANSWER}?.dataset.paints || 0) >= 1")
        # Kept in IndexedDB, not only in memory (an open that answers late under load
        # leaves nothing pending until it does: `pending` alone could hold too early).
        assert saved(first)
        kept = first.eval(READ)
        [answer] = [m for m in kept["messages"][0]["messages"] if m["role"] == "assistant"]
        assert answer["state"] == "streaming" and isinstance(answer["stream"]["id"], str), answer
        first.proc.kill()
        first.proc.wait()

    with WebKitHost(gateway_url + "/", display=xvfb.display, profile=profile) as second:
        boot(second)
        # Taken up once IndexedDB answers (late, on a loaded machine), then streamed to
        # its end.
        assert wait(second, f"{ANSWER}?.dataset.resumed === 'true'", ms=40_000)
        release(gateway_url, key)
        assert wait(second, f"{ANSWER}?.dataset.state === 'done'", ms=60_000)
        saved(second)
        shown = second.eval(
            "(async () => { const r = indexedDB.open('firsttoken-conversations'); await new Promise((ok) => r.onsuccess = ok);"
            " const tx = r.result.transaction('messages'); const all = tx.objectStore('messages').getAll();"
            " await new Promise((ok) => tx.oncomplete = ok); r.result.close();"
            " return all.result[0].messages.filter((m) => m.role === 'assistant').map((m) => m.content); })()"
        )
        body = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": PROMPT}], "stream": False}
        full = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": SIM}, json=body, timeout=60)
        assert shown == [full.json()["choices"][0]["message"]["content"]]
        assert_clean_console(second)
