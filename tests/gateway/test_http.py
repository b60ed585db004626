"""The gateway over a real socket: the OpenAI-compatible endpoint, the built-in model,
its faults, errors for bad requests, and the page's headers."""

from __future__ import annotations

import json
import posixpath
import re

import httpx
import pytest

from gateway.headers import inline_sources

SIM = "x-firsttoken-sim"
FAST = "ttft_ms=0,tps=100000"
CHAT = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "tell me about frames"}]}


@pytest.fixture
def client(gateway_url: str):
    with httpx.Client(base_url=gateway_url, timeout=30) as c:
        yield c


def sse_data(body: str) -> list[str]:
    """The data lines of a well-formed stream (this gateway writes one line per event)."""
    return [line[len("data: "):] for line in body.split("\n") if line.startswith("data: ")]


def test_streaming_answer_has_openai_shape_usage_and_done(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: FAST + ",tokens=30"},
                    json={**CHAT, "stream": True, "stream_options": {"include_usage": True}})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    data = sse_data(r.text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 30
    assert all(c["usage"] is None for c in chunks[:-1])  # as OpenAI: null until the last
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])
    assert text.startswith("You said: tell me about frames")
    # Rate-limit headers as OpenAI sends them.
    assert int(r.headers["x-ratelimit-remaining-requests"]) < int(r.headers["x-ratelimit-limit-requests"])


def test_stream_and_non_stream_give_the_same_deterministic_text(client: httpx.Client) -> None:
    whole = client.post("/v1/chat/completions", headers={SIM: FAST}, json=CHAT).json()
    again = client.post("/v1/chat/completions", headers={SIM: FAST}, json=CHAT).json()
    streamed = client.post("/v1/chat/completions", headers={SIM: FAST}, json={**CHAT, "stream": True})
    text = "".join(json.loads(d)["choices"][0]["delta"].get("content") or "" for d in sse_data(streamed.text)[:-1])
    assert whole["object"] == "chat.completion"
    assert whole["choices"][0]["message"]["content"] == again["choices"][0]["message"]["content"] == text
    assert whole["usage"]["completion_tokens"] == 160
    other = client.post("/v1/chat/completions", headers={SIM: FAST},
                        json={**CHAT, "messages": [{"role": "user", "content": "something else"}]}).json()
    assert other["choices"][0]["message"]["content"] != text


def test_chunk_setting_groups_tokens_and_max_tokens_cuts_with_length(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: FAST + ",chunk=5,tokens=50"}, json={**CHAT, "stream": True})
    chunks = [json.loads(d) for d in sse_data(r.text)[:-1]]
    content = [c for c in chunks if c["choices"][0]["delta"].get("content")]
    assert len(content) == 10
    r = client.post("/v1/chat/completions", headers={SIM: FAST}, json={**CHAT, "max_tokens": 7}).json()
    assert r["choices"][0]["finish_reason"] == "length" and r["usage"]["completion_tokens"] == 7


def test_models_lists_the_built_in_model(client: httpx.Client) -> None:
    r = client.get("/v1/models")
    assert r.status_code == 200
    assert "firsttoken-sim" in [m["id"] for m in r.json()["data"]]


def test_injected_429_carries_rate_limit_headers(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: "status=429,retry_after=2.5"}, json=CHAT)
    assert r.status_code == 429
    assert r.json()["error"]["code"] == "rate_limit_exceeded"
    assert r.headers["retry-after"] == "2.5" and r.headers["retry-after-ms"] == "2500"
    assert r.headers["x-ratelimit-remaining-requests"] == "0"
    assert r.headers["x-ratelimit-limit-requests"] == "5000"  # flow control's own limit
    assert r.headers["x-ratelimit-reset-requests"] == "2.5s"  # reopens when retry-after says


def test_injected_error_mid_stream_after_n_chunks(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: FAST + ",error_after=3"}, json={**CHAT, "stream": True})
    data = sse_data(r.text)
    assert "[DONE]" not in data
    assert json.loads(data[-1])["error"]["code"] == "simulated"
    content = [json.loads(d) for d in data[:-1] if json.loads(d)["choices"][0]["delta"].get("content")]
    assert len(content) == 3


def test_injected_drop_cuts_the_connection(gateway_url: str) -> None:
    received = []
    with httpx.Client(base_url=gateway_url, timeout=30) as c:
        with pytest.raises(httpx.RemoteProtocolError):
            with c.stream("POST", "/v1/chat/completions", headers={SIM: FAST + ",drop_after=4"},
                          json={**CHAT, "stream": True}) as r:
                for chunk in r.iter_raw():
                    received.append(chunk)
    body = b"".join(received).decode()
    assert body.count('"content"') >= 4 and "[DONE]" not in body


def test_stall_delays_the_stream(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: FAST + ",stall_ms=300,stall_after=2,tokens=5"},
                    json={**CHAT, "stream": True})
    assert r.status_code == 200 and sse_data(r.text)[-1] == "[DONE]"
    assert r.elapsed.total_seconds() >= 0.3


@pytest.mark.parametrize(
    "body, param",
    [
        (b"{not json", None),
        (b"[]", None),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "model"),
        (b'{"model": "m"}', "messages"),
        (b'{"model": "m", "messages": []}', "messages"),
        (b'{"model": 3, "messages": [{"role": "user", "content": "x"}]}', "model"),
        (b'{"model": "m", "messages": [{"role": "wizard", "content": "x"}]}', "messages[0].role"),
        (b'{"model": "m", "messages": [{"role": "user", "content": 5}]}', "messages[0].content"),
        (b'{"model": "m", "messages": ["hi"]}', "messages[0]"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "stream"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1}', "max_tokens"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": NaN}', None),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}}', "stream_options"),
    ],
)
def test_bad_requests_get_openai_style_400(client: httpx.Client, body: bytes, param: str | None) -> None:
    r = client.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    assert error["param"] == param


def test_body_over_the_limit_is_413(client: httpx.Client) -> None:
    big = json.dumps({**CHAT, "messages": [{"role": "user", "content": "x" * (5 * 1024 * 1024)}]})
    r = client.post("/v1/chat/completions", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"


def test_bad_sim_header_is_400(client: httpx.Client) -> None:
    for value in ("tps=fast", "warp=9", "tps=0", "status=200", "ttft_ms=nan"):
        r = client.post("/v1/chat/completions", headers={SIM: value}, json=CHAT)
        assert r.status_code == 400, value
        assert r.json()["error"]["param"] == SIM


def test_unknown_routes_and_methods_get_json_errors(client: httpx.Client) -> None:
    r = client.get("/v1/nothing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_url"
    r = client.get("/v1/chat/completions")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_page_is_served_isolated_with_a_strict_csp(client: httpx.Client) -> None:
    r = client.get("/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert r.headers["cross-origin-opener-policy"] == "same-origin"
    assert r.headers["cross-origin-embedder-policy"] == "require-corp"
    csp = r.headers["content-security-policy"]
    # No inline script but the page's own, by their hashes; no foreign origin, and no
    # eval of strings (gateway/headers.py).
    scripts = " ".join(inline_sources(r.text).scripts)
    assert scripts and f"script-src 'self' 'wasm-unsafe-eval' {scripts};" in csp
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert "img-src 'self' data: blob:" in csp


def test_runtime_assets_are_served_locally(client: httpx.Client) -> None:
    page = client.get("/").text + client.get("/pyscript.toml").text + client.get("/js/link/python-link.js").text
    page += client.get("/js/boot/boot.js").text  # the link starts PyScript through it
    assert "cdn." not in page and "jsdelivr" not in page and "unpkg" not in page
    r = client.get("/vendor/pyodide/pyodide.asm.wasm")
    assert r.status_code == 200 and r.headers["content-type"] == "application/wasm"
    r = client.get("/vendor/pyodide/pyodide.mjs")
    assert r.status_code == 200 and "javascript" in r.headers["content-type"]
    assert client.get("/vendor/pyscript/core.js").status_code == 200
    assert client.get("/vendor/tiktoken/o200k_base.json").status_code == 200
    r = client.get("/vendor/pyodide/../../package.json")
    assert r.status_code == 404


def test_every_preloaded_module_is_served(client: httpx.Client) -> None:
    # index.html names hashed PyScript chunks: an upgrade that renames them must not
    # leave the page preloading files that are gone.
    page = client.get("/").text
    hrefs = re.findall(r'<link rel="modulepreload" href="([^"]+)">', page)
    assert len(hrefs) >= 8
    for href in hrefs:
        r = client.get("/" + href)
        assert r.status_code == 200 and "javascript" in r.headers["content-type"], href


def test_the_pages_module_graph_is_preloaded_whole(client: httpx.Client) -> None:
    # Every module the entry imports, however deep, is named in index.html: otherwise the
    # page loads it one import level later (a waterfall on every boot).
    page = client.get("/").text
    entries = re.findall(r'<script type="module"(?: async)? src="([^"]+)">', page)
    assert "js/boot/early.js" in entries  # Python's worker starts from a module of its own
    preloaded = set(re.findall(r'<link rel="modulepreload" href="([^"]+)">', page))
    specifier = re.compile(r"""^import\s[^'"]*?(["'])(\.{1,2}/[^"']+)\1""", re.M)
    seen, pending = set(), list(entries)
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        r = client.get("/" + path)
        assert r.status_code == 200 and "javascript" in r.headers["content-type"], path
        if path.startswith("js/"):
            pending += [posixpath.normpath(posixpath.join(posixpath.dirname(path), spec)) for _, spec in specifier.findall(r.text)]
    assert seen - set(entries) <= preloaded, sorted(seen - set(entries) - preloaded)
    assert len(seen) > 15


def test_every_page_module_is_served_as_javascript(client: httpx.Client) -> None:
    from pathlib import Path

    modules = sorted(str(p) for p in Path("js").rglob("*.js"))
    assert len(modules) > 20
    for path in modules:
        r = client.get("/" + path)
        assert r.status_code == 200 and "javascript" in r.headers["content-type"], path


def test_package_zip_holds_every_module_and_revalidates(client: httpx.Client) -> None:
    import io
    import zipfile
    from pathlib import Path

    r = client.get("/py/firsttoken.zip")
    assert r.status_code == 200
    names = set(zipfile.ZipFile(io.BytesIO(r.content)).namelist())
    expected = {str(p.relative_to(Path("py"))) for p in Path("py/firsttoken").rglob("*.py") if "__pycache__" not in p.parts}
    assert names == expected
    again = client.get("/py/firsttoken.zip", headers={"if-none-match": r.headers["etag"]})
    assert again.status_code == 304
