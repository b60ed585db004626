"""The page in a WebKitGTK view whose app turned web storage off (the host's
`--no-storage`: `localStorage` is null and `indexedDB` undefined there, as in an app
that disables them; Android's `setDomStorageEnabled(false)` is the same switch). It
boots, chats, keeps its conversation for the visit, and says once that it keeps nothing
(js/page/storage.js, js/boot/idb-fallback.js). Chromium's cross-site frame with
third-party storage blocked is tests/e2e/test_storage_blocked.py."""

from __future__ import annotations

import pytest

from harness.webkit import assert_clean_console, boot, wait
from harness.gtk import WebKitHost, Xvfb

pytestmark = pytest.mark.e2e

SEND = """(text) => { const p = document.getElementById('prompt'); p.value = text;
  document.getElementById('send').click(); return true; }"""
DONE = "document.querySelectorAll('.msg[data-role=\"assistant\"][data-state=\"done\"]').length"


def test_with_storage_turned_off_the_page_boots_chats_and_says_it_keeps_nothing(xvfb: Xvfb, gateway_url: str) -> None:
    with WebKitHost(gateway_url + "/", display=xvfb.display, storage=False) as host:
        boot(host)
        # Not vacuous: this page really has neither.
        assert host.eval("window.localStorage === null") is True
        assert host.eval("document.documentElement.dataset.storage") == "memory"
        assert host.eval("document.querySelector('.storage-notice').textContent").startswith("Nothing is kept on this device")
        for n, text in enumerate(["a first question", "and a second one"], start=1):
            host.eval(f"({SEND})({text!r})")
            assert wait(host, f"{DONE} === {n}")
        # The conversation holds for the visit: both turns on screen, in memory.
        assert host.eval("document.querySelectorAll('#messages .msg').length") == 4
        assert host.eval("document.getElementById('conversations').dataset.store") == "memory"
        assert_clean_console(host)
