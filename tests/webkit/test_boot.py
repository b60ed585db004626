"""The page's boot in WebKitGTK, as an app's WKWebView sees it: a first launch on an
empty profile, then a relaunch on the same profile (what the app's next start is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.webkit import assert_clean_console, boot
from harness.gtk import WebKitHost, Xvfb

pytestmark = pytest.mark.e2e


def test_cold_then_warm_boot_on_a_persistent_profile(xvfb: Xvfb, gateway_url: str, tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    with WebKitHost(gateway_url + "/", display=xvfb.display, profile=profile) as cold:
        ready = boot(cold)
        # A first visit restores the gateway's install-time snapshot, then keeps it.
        assert ready["boot"]["snapshot"] == "restored" and ready["boot"]["snapshot_from"] == "server", ready["boot"]
        cold.wait_for(lambda m: m.get("type") == "boot.progress" and m.get("stage") == "snapshot.stored", 60)
        assert_clean_console(cold)
    assert any(profile.iterdir()), "the profile kept nothing"
    with WebKitHost(gateway_url + "/", display=xvfb.display, profile=profile) as warm:
        ready = boot(warm)
        assert ready["boot"]["snapshot"] == "restored" and ready["boot"]["snapshot_from"] == "cache", ready["boot"]
        warm.send({"type": "ping", "id": "warm"})
        warm.wait_for(lambda m: m.get("id") == "warm" and m.get("type") == "pong")
        assert_clean_console(warm)
