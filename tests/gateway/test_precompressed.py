"""Precompressed variants (gateway/build/encode.py builds them, gateway/precompressed.py serves
them): Accept-Encoding negotiated, the headers that describe each variant, 304s, and
identity whenever a variant cannot be trusted (truncated, corrupt, stale) or cannot
apply (a Range, a coding not offered)."""

from __future__ import annotations

import gzip
import logging
import os
import random
from pathlib import Path

import brotli
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.testclient import TestClient

from gateway.app import GatewayConfig, create_app
from gateway.build.encode import encode
from gateway.precompressed import Precompressed, negotiate, read_index, variant_etag

RUNTIME = b"".join(b"def f%d(x):\n    return x * %d\n" % (i, i % 7) for i in range(3_000))
NOISE = random.Random(13).randbytes(64 * 1024)  # like a zip already deflated: nothing to gain
PATHS = ["/static/runtime.wasm", "/static/stdlib.zip", "/label"]


@pytest.mark.parametrize(("header", "expected"), [
    (None, "identity"),
    ("", "identity"),
    ("gzip, deflate, br, zstd", "br"),  # Chromium's
    ("gzip, deflate", "gzip"),
    ("deflate, x-gzip", "gzip"),
    ("GZIP;Q=1, BR", "br"),
    ("br;q=0.5, gzip", "gzip"),
    ("br;q=0, gzip;q=0", "identity"),
    ("*", "br"),
    ("*;q=0.3, br;q=0", "gzip"),
    ("*;q=0", "identity"),
    ("identity", "identity"),
    ("identity;q=1, br;q=0.5", "identity"),
    ("identity;q=0.1, br;q=0.5", "br"),
    ("identity;q=0", "identity"),  # refused, but nothing else is acceptable: identity, not 406
    ("zstd, compress, sdch", "identity"),
    ("br;q=1.5, gzip", "gzip"),  # out of range: that element is ignored
    ("br;q=abc", "identity"),
    ("br;q=0.1234", "identity"),
    (" , ;, br ; q = 0.8 ", "br"),
    ("br;level=5", "br"),
    (",".join(["zstd"] * 1000) + ",br", "identity"),  # past the elements read
])
def test_negotiate(header: str | None, expected: str) -> None:
    assert negotiate(header, ["br", "gzip"]) == expected


def test_negotiate_offers_only_what_there_is() -> None:
    assert negotiate("br, gzip", ["gzip"]) == "gzip"
    assert negotiate("br", ["gzip"]) == "identity"
    assert negotiate("br, gzip", []) == "identity"


def test_variant_etag() -> None:
    assert variant_etag('"abc"', "br") == '"abc-br"'
    assert variant_etag('W/"abc"', "gzip") == 'W/"abc-gz"'


# ---- served ---------------------------------------------------------------------------
def site(tmp_path: Path) -> Starlette:
    files = tmp_path / "site"
    files.mkdir()
    (files / "runtime.wasm").write_bytes(RUNTIME)
    (files / "stdlib.zip").write_bytes(NOISE)

    async def label(request: Request) -> Response:
        # Like the snapshot's: headers describing the decoded body, kept on every variant.
        return FileResponse(files / "runtime.wasm", media_type="application/octet-stream",
                            headers={"cache-control": "no-store", "x-firsttoken-length": str(len(RUNTIME))})

    return Starlette(routes=[Mount("/static", StaticFiles(directory=files)), Route("/label", label)])


@pytest.fixture
def built(tmp_path: Path) -> tuple[Starlette, Path]:
    app = site(tmp_path)
    out = tmp_path / "encoded"
    with TestClient(app) as client:
        encode(client, [*PATHS, "/missing"], out)
    return app, out


@pytest.fixture
def client(built: tuple[Starlette, Path]) -> TestClient:
    app, out = built
    return TestClient(Precompressed(app, directory=out))


def variant_length(out: Path, path: str, coding: str) -> int:
    return read_index(out)[path].variants[coding].length


def test_the_build_records_what_it_compressed(built: tuple[Starlette, Path]) -> None:
    _, out = built
    index = read_index(out)
    assert set(index) == set(PATHS)  # /missing is not served: not recorded
    runtime = index["/static/runtime.wasm"]
    assert runtime.length == len(RUNTIME)
    assert brotli.decompress((out / runtime.variants["br"].file).read_bytes()) == RUNTIME
    assert gzip.decompress((out / runtime.variants["gzip"].file).read_bytes()) == RUNTIME
    assert runtime.variants["br"].length < runtime.variants["gzip"].length < len(RUNTIME) // 5
    # Saving nothing worth decoding for: no variant kept, no file left.
    assert index["/static/stdlib.zip"].variants == {}
    assert not list(out.glob("static/stdlib.zip.*"))


def test_the_build_is_incremental(built: tuple[Starlette, Path], tmp_path: Path) -> None:
    app, out = built
    variant = out / read_index(out)["/static/runtime.wasm"].variants["br"].file
    os.utime(variant, ns=(1, 1))
    with TestClient(app) as c:
        encode(c, PATHS, out)
    assert variant.stat().st_mtime_ns == 1  # not compressed again
    (tmp_path / "site" / "runtime.wasm").write_bytes(RUNTIME + b"# edited\n")
    with TestClient(app) as c:
        encode(c, PATHS, out)
    assert variant.stat().st_mtime_ns != 1
    assert brotli.decompress(variant.read_bytes()) == RUNTIME + b"# edited\n"


@pytest.mark.parametrize(("accept", "coding"), [("gzip, deflate, br, zstd", "br"), ("gzip", "gzip"), ("x-gzip", "gzip")])
def test_an_accepted_variant_is_served_with_its_own_headers(client: TestClient, built: tuple[Starlette, Path],
                                                          accept: str, coding: str) -> None:
    _, out = built
    identity = client.get("/label", headers={"accept-encoding": "identity"})
    r = client.get("/label", headers={"accept-encoding": accept})
    assert r.status_code == 200
    assert r.content == RUNTIME  # decoded by the client
    assert r.headers["content-encoding"] == coding
    assert r.headers["content-length"] == str(variant_length(out, "/label", coding))
    assert r.headers["vary"] == "accept-encoding"
    assert r.headers["etag"] == variant_etag(identity.headers["etag"], coding)
    assert "accept-ranges" not in r.headers
    # What the app said about the file stays: its type, caching, its label.
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["x-firsttoken-length"] == str(len(RUNTIME))
    # The decoded length, for a page counting what it reads against the bytes on the wire.
    assert r.headers["x-firsttoken-identity-length"] == str(len(RUNTIME))


def test_identity_is_served_when_no_offered_coding_is_accepted(client: TestClient) -> None:
    for accept in (None, "identity", "zstd, compress", "br;q=0, gzip;q=0", "br;q=oops", ";;=,q"):
        request = client.build_request("GET", "/static/runtime.wasm")
        del request.headers["accept-encoding"]  # the client's default
        if accept is not None:
            request.headers["accept-encoding"] = accept
        r = client.send(request, stream=True)
        raw = b"".join(r.iter_raw())
        r.close()
        assert r.status_code == 200, accept
        assert raw == RUNTIME, accept
        assert "content-encoding" not in r.headers, accept
        assert r.headers["content-length"] == str(len(RUNTIME)), accept
        assert r.headers["vary"] == "accept-encoding", accept  # it has variants: caches must know


def test_a_path_without_variants_is_left_alone(client: TestClient) -> None:
    r = client.get("/static/stdlib.zip", headers={"accept-encoding": "br"})
    assert r.content == NOISE and "content-encoding" not in r.headers and "vary" not in r.headers


def test_head_sends_the_variant_headers_and_no_body(client: TestClient, built: tuple[Starlette, Path]) -> None:
    r = client.head("/static/runtime.wasm", headers={"accept-encoding": "br"})
    assert r.status_code == 200 and r.content == b""
    assert r.headers["content-encoding"] == "br"
    assert r.headers["content-length"] == str(variant_length(built[1], "/static/runtime.wasm", "br"))


def test_if_none_match_answers_304_per_variant(client: TestClient) -> None:
    br = client.get("/static/runtime.wasm", headers={"accept-encoding": "br"})
    again = client.get("/static/runtime.wasm", headers={"accept-encoding": "br", "if-none-match": br.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == br.headers["etag"] and again.headers["vary"] == "accept-encoding"
    # The br validator does not validate the gzip variant, nor identity's.
    gz = client.get("/static/runtime.wasm", headers={"accept-encoding": "gzip", "if-none-match": br.headers["etag"]})
    assert gz.status_code == 200 and gz.content == RUNTIME
    plain = client.get("/static/runtime.wasm", headers={"accept-encoding": "identity"})
    assert client.get("/static/runtime.wasm", headers={"accept-encoding": "identity", "if-none-match": br.headers["etag"]}).status_code == 200
    cached = client.get("/static/runtime.wasm", headers={"accept-encoding": "identity", "if-none-match": plain.headers["etag"]})
    assert cached.status_code == 304 and cached.headers["vary"] == "accept-encoding"
    assert client.get("/static/runtime.wasm", headers={"accept-encoding": "br", "if-none-match": "*"}).status_code == 304


def test_a_range_gets_identity_bytes(client: TestClient) -> None:
    with client.stream("GET", "/static/runtime.wasm", headers={"accept-encoding": "br", "range": "bytes=10-19"}) as r:
        raw = b"".join(r.iter_raw())
    assert r.status_code == 206 and raw == RUNTIME[10:20]
    assert "content-encoding" not in r.headers and r.headers["vary"] == "accept-encoding"


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "missing"])
def test_a_damaged_variant_is_skipped_and_logged_once(built: tuple[Starlette, Path], damage: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    app, out = built
    variant = out / read_index(out)["/static/runtime.wasm"].variants["br"].file
    data = bytearray(variant.read_bytes())
    if damage == "truncated":
        variant.write_bytes(data[: len(data) // 2])
    elif damage == "corrupt":
        data[len(data) // 2] ^= 0x5A
        variant.write_bytes(bytes(data))
    else:
        variant.unlink()
    client = TestClient(Precompressed(app, directory=out))
    with caplog.at_level(logging.WARNING, logger="gateway.precompressed"):
        for _ in range(3):
            r = client.get("/static/runtime.wasm", headers={"accept-encoding": "br"})
            assert r.status_code == 200 and r.content == RUNTIME
            assert "content-encoding" not in r.headers and r.headers["vary"] == "accept-encoding"
        # Only the br variant was damaged: gzip still goes out.
        assert client.get("/static/runtime.wasm", headers={"accept-encoding": "gzip"}).headers["content-encoding"] == "gzip"
    warnings = [r for r in caplog.records if r.name == "gateway.precompressed"]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "serving identity" in warnings[0].getMessage()


def test_a_file_changed_since_the_build_is_served_as_it_is_now(built: tuple[Starlette, Path], tmp_path: Path) -> None:
    app, out = built
    (tmp_path / "site" / "runtime.wasm").write_bytes(b"new release")
    r = TestClient(Precompressed(app, directory=out)).get("/static/runtime.wasm", headers={"accept-encoding": "br"})
    assert r.content == b"new release" and "content-encoding" not in r.headers


@pytest.mark.parametrize("index", [b"", b"{not json", b'{"files": {"/static/runtime.wasm": {"etag": 1}}}', b"[]"])
def test_a_broken_index_serves_identity(built: tuple[Starlette, Path], index: bytes) -> None:
    app, out = built
    (out / "index.json").write_bytes(index)
    r = TestClient(Precompressed(app, directory=out)).get("/static/runtime.wasm", headers={"accept-encoding": "br"})
    assert r.status_code == 200 and r.content == RUNTIME and "content-encoding" not in r.headers


def test_the_gateway_serves_the_package_and_the_page_compressed(tmp_path: Path) -> None:
    out = tmp_path / "encoded"
    paths = ["/py/firsttoken.zip", "/js/page/main.js", "/"]
    with TestClient(create_app(GatewayConfig(precompressed=None)), base_url="http://127.0.0.1") as build:
        encode(build, paths, out)
    index = read_index(out)
    assert index["/"].variants and index["/js/page/main.js"].variants
    with TestClient(create_app(GatewayConfig(precompressed=out)), base_url="http://127.0.0.1") as client:
        for path in paths:
            plain = client.get(path, headers={"accept-encoding": "identity"})
            r = client.get(path, headers={"accept-encoding": "gzip, deflate, br"})
            assert r.status_code == 200 and r.content == plain.content, path
            if not index[path].variants:
                continue  # the package zip, when its deflated entries leave less than 5% to gain
            assert r.headers["content-encoding"] == ("br" if "br" in index[path].variants else "gzip"), path
            assert r.headers["vary"] == "accept-encoding" and plain.headers["vary"] == "accept-encoding", path
            # Still the security headers of every answer.
            assert r.headers["cross-origin-embedder-policy"] == "require-corp", path
            assert r.headers["content-type"] == plain.headers["content-type"], path
            again = client.get(path, headers={"accept-encoding": "gzip, deflate, br", "if-none-match": r.headers["etag"]})
            assert again.status_code == 304, path
