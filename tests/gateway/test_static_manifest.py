"""The installed web app's manifest (issue 46, item 3): served by the gateway with its
media type, linked from the page, kept by the service worker with the page, and naming
a Web Share Target the service worker answers (sw.js, js/page/share.js)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from gateway.static import ROOT, first_visit_paths



@pytest.fixture
def client(gateway_url: str):
    with httpx.Client(base_url=gateway_url, timeout=30) as c:
        yield c


def test_the_manifest_is_served_linked_and_describes_an_installable_app(client: httpx.Client) -> None:
    r = client.get("/manifest.webmanifest")
    assert r.status_code == 200 and r.headers["content-type"] == "application/manifest+json"
    manifest = r.json()
    assert manifest["name"] == "firsttoken" and manifest["display"] == "standalone"
    assert manifest["start_url"] == "./" and manifest["scope"] == "./"
    for icon in manifest["icons"]:
        got = client.get("/" + icon["src"])
        assert got.status_code == 200 and got.headers["content-type"] == icon["type"], icon
    assert re.search(r'<link rel="manifest" href="manifest\.webmanifest">', client.get("/").text)


def test_the_share_target_posts_files_to_the_action_the_worker_answers(client: httpx.Client) -> None:
    target = client.get("/manifest.webmanifest").json()["share_target"]
    # Files can only be shared by a multipart POST (Web Share Target, "share_target").
    assert target["method"] == "POST" and target["enctype"] == "multipart/form-data"
    assert target["params"]["files"][0]["name"] == "images"
    assert set(target["params"]) >= {"title", "text", "url"}
    # The worker answers that action, and the page reads the same names.
    worker = client.get("/sw.js").text
    assert f"new URL('{target['action']}', SCOPE)" in worker
    share = (ROOT / "js" / "page" / "share.js").read_text(encoding="utf-8")
    assert f"SHARE_ACTION = '{target['action']}'" in share
    for name in ("'text'", "'title'", "'url'", "'images'"):
        assert name in share, name


def test_the_manifest_is_kept_offline_with_the_page(client: httpx.Client) -> None:
    prelude = client.get("/sw.js").text.split("\n", 1)[0]
    build = json.loads(prelude[prelude.index("{"):prelude.rindex("}") + 1])
    assert "manifest.webmanifest" in build["assets"]
    assert "manifest.webmanifest" in first_visit_paths()


def test_the_manifest_file_is_json_in_the_checkout() -> None:
    # A trailing comma would make browsers ignore the whole manifest, silently.
    json.loads(Path(ROOT / "manifest.webmanifest").read_text(encoding="utf-8"))
