"""Pyodide's standard library served repacked with its entries stored (gateway/stdlib.py):
the same files, byte for byte, in the same order; a stable ETag; and brotli now worth
keeping for it."""

from __future__ import annotations

import io
import zipfile

import brotli
import pytest
from starlette.testclient import TestClient

from gateway.app import GatewayConfig, create_app
from gateway.static import ROOT
from gateway.stdlib import URL_PATH, repack_stored

NPM_STDLIB = ROOT / "node_modules" / "pyodide" / "python_stdlib.zip"


def deflated_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(40):
            info = zipfile.ZipInfo(f"pkg{i % 3}/mod{i}.py", date_time=(2024, 5, 6, 7, 8, 10))
            info.external_attr = 0o644 << 16
            z.writestr(info, (f"def f{i}(x):\n    return x * {i}\n" * 50).encode(), compress_type=zipfile.ZIP_DEFLATED)
        z.writestr(zipfile.ZipInfo("pkg0/"), b"")
    return out.getvalue()


def test_the_repack_keeps_every_entry_and_stores_it() -> None:
    source = deflated_zip()
    stored = repack_stored(source)
    with zipfile.ZipFile(io.BytesIO(source)) as a, zipfile.ZipFile(io.BytesIO(stored)) as b:
        assert [i.filename for i in a.infolist()] == [i.filename for i in b.infolist()]
        for x, y in zip(a.infolist(), b.infolist()):
            assert a.read(x) == b.read(y)
            assert (x.date_time, x.external_attr) == (y.date_time, y.external_attr)
            assert y.compress_type == zipfile.ZIP_STORED
        assert b.testzip() is None
    assert repack_stored(source) == stored  # deterministic: the ETag and the baked heap depend on it


def test_a_damaged_zip_is_refused() -> None:
    with pytest.raises(zipfile.BadZipFile):
        repack_stored(deflated_zip()[:-100])


@pytest.mark.skipif(not NPM_STDLIB.is_file(), reason="needs `make` (node_modules)")
def test_the_gateway_serves_it_with_a_stable_etag_and_304s() -> None:
    with TestClient(create_app(GatewayConfig(precompressed=None)), base_url="http://127.0.0.1") as client:
        r = client.get(URL_PATH)
        assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(r.content)) as served, zipfile.ZipFile(NPM_STDLIB) as npm:
            assert served.namelist() == npm.namelist()
            assert {i.compress_type for i in served.infolist()} == {zipfile.ZIP_STORED}
            assert served.read("json/__init__.py") == npm.read("json/__init__.py")
        again = client.get(URL_PATH, headers={"if-none-match": r.headers["etag"]})
        assert again.status_code == 304
        assert client.head(URL_PATH).headers["content-length"] == str(len(r.content))
    # What it is for: brotli sees the library's text through stored entries (README, "Boot").
    npm = NPM_STDLIB.read_bytes()
    assert len(brotli.compress(r.content, quality=5, lgwin=24)) < 0.8 * len(brotli.compress(npm, quality=5, lgwin=24))
