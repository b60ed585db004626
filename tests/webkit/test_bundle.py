"""The page shipped inside an app: `make bundle`'s folder served by the host through a
custom scheme (WebKitGTK's `register_uri_scheme`, as iOS's `WKURLSchemeHandler`), with
no server for the page. Only the chat API is on the network."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from gateway.build.bundle import build_bundle
from harness.servers import gateway
from harness.webkit import assert_clean_console, boot, of, reply
from harness.gtk import WebKitHost, Xvfb

pytestmark = pytest.mark.e2e

ORIGIN = "firsttoken://app"


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    """The chat API alone: a gateway that must answer the bundled page's origin (CORS)."""
    with gateway("--ttft-ms", "20", "--tps", "400", "--allow-origin", ORIGIN) as url:
        yield url


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "app"
    build_bundle(out)
    return out


def test_python_boots_from_the_bundle_and_chats_with_the_api(xvfb: Xvfb, bundle: Path, api: str, tmp_path: Path) -> None:
    with WebKitHost(f"{ORIGIN}/index.html", display=xvfb.display, bundle=bundle, profile=tmp_path / "profile") as host:
        ready = boot(host)
        # The install-time snapshot came with the bundle: a first launch restores it.
        assert ready["boot"]["snapshot"] == "restored", ready["boot"]
        assert host.eval("location.origin") in (ORIGIN, "null") and host.eval("location.protocol") == "firsttoken:"
        host.send({"type": "settings.set", "id": "s", "settings": {"base_url": api + "/v1"}})
        host.wait_for(of(host, "s", "settings.applied"))
        host.send({"type": "chat.send", "id": "b1", "messages": [{"role": "user", "content": "from an app with no page server"}]})
        done = reply(host, "b1")
        assert done["type"] == "chat.done", done
        text = "".join(m["text"] for m in host.messages if m.get("id") == "b1" and m.get("type") == "chat.delta")
        assert text.startswith("You said: from an app with no page server")
        prepared = next(m for m in host.messages if m.get("id") == "b1" and m.get("type") == "chat.prepared")
        assert isinstance(prepared["prompt_tokens"], int)
        assert_clean_console(host)


def test_a_file_outside_the_manifest_is_not_served(xvfb: Xvfb, bundle: Path, tmp_path: Path) -> None:
    (bundle / "secret.txt").write_text("not for the page")
    with WebKitHost(f"{ORIGIN}/index.html", display=xvfb.display, bundle=bundle) as host:
        boot(host)
        status = host.eval(f"fetch('{ORIGIN}/secret.txt').then((r) => r.status, (e) => 'refused')", timeout=30)
        assert status in ("refused", 404)
