"""`/report/` (gateway/report.py): the last report when there is one, a JSON 404 otherwise,
with the security headers and CSP of every other answer, and nothing else under build/."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from gateway.app import GatewayConfig, create_app

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


def client(report_dir: Path | None) -> TestClient:
    return TestClient(create_app(GatewayConfig(report_dir=report_dir, precompressed=None)), base_url="http://127.0.0.1")


@pytest.fixture
def report(tmp_path: Path) -> Path:
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "index.html").write_text('<!doctype html><link rel="stylesheet" href="report.css"><img src="ttft.png">')
    (folder / "report.css").write_text("body { margin: 0 }")
    (folder / "ttft.png").write_bytes(PNG)
    (tmp_path / "secret.json").write_text('{"key": "no"}')
    (folder / ".hidden.json").write_text("{}")
    (folder / "notes.txt").write_text("not a report file")
    (folder / "sub").mkdir()
    (folder / "sub" / "x.png").write_bytes(PNG)
    return folder


def test_the_report_is_served_with_the_gateways_headers(report: Path) -> None:
    with client(report) as c:
        page = c.get("/report/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert 'src="ttft.png"' in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "img-src 'self'" in csp and "style-src 'self'" in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["cache-control"] == "no-cache"
        png = c.get("/report/ttft.png")
        assert png.status_code == 200 and png.headers["content-type"] == "image/png" and png.content == PNG
        assert c.get("/report/report.css").headers["content-type"].startswith("text/css")
        assert c.get("/report/index.html").text == page.text
        bare = c.get("/report", follow_redirects=False)
        assert bare.status_code == 308 and bare.headers["location"] == "/report/"


@pytest.mark.parametrize("path", [
    "/report/missing.png", "/report/notes.txt", "/report/.hidden.json", "/report/sub/x.png",
    "/report/../secret.json", "/report/%2e%2e/secret.json", "/report/..%2fsecret.json", "/report/sub",
])
def test_nothing_but_the_reports_own_files(report: Path, path: str) -> None:
    with client(report) as c:
        answer = c.get(path)
        assert answer.status_code == 404, path
        assert "key" not in answer.text and answer.json()["error"]["code"] == "unknown_url"


def test_no_report_is_a_json_404(tmp_path: Path) -> None:
    with client(tmp_path / "never-made") as c:
        for path in ("/report/", "/report", "/report/index.html", "/report/ttft.png"):
            answer = c.get(path, follow_redirects=False)
            assert answer.status_code == 404 and answer.json()["error"]["code"] == "unknown_url", path
            assert "content-security-policy" in answer.headers
    with client(None) as c:
        assert c.get("/report/").status_code == 404
