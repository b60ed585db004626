"""The gateway tried as an attacker would (issue 15), over real sockets: each test is one
promise of README "Security"."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import ExitStack

import httpx
import openai
import pytest

from harness.servers import gateway

SIM = "x-firsttoken-sim"
CHAT = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "hello"}]}
JSON = {"content-type": "application/json"}
KEY = "sk-hardening-upstream-4c1d9e"
CLIENT_KEY = "gw-client-key-8e2f61"


def post(url: str, body: object, **headers: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", content=json.dumps(body), headers={**JSON, **headers}, timeout=60)


def raw_post(url: str, body: object, sim: str) -> tuple[int, bytes, int]:
    """POST over a bare socket and read the answer to its end: (status, last bytes, size).
    A heavy answer read through httpx would load this process's GIL, not the gateway."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    data = json.dumps(body).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"{SIM}: {sim}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection((host, int(port))) as s:
        s.sendall(head + data)
        first, tail, size = b"", b"", 0
        while chunk := s.recv(1 << 20):
            first = first or chunk
            tail = (tail + chunk)[-64:]
            size += len(chunk)
    return int(first.split(b" ", 2)[1]), tail, size


def healthz_p99_ms_while(url: str, busy: threading.Thread) -> float:
    """/healthz latency (p99, ms), asked back to back while `busy` runs. Before the fix
    the loop was held for the whole request (12-50 s); the bound asserted below is loose
    (1 s) because this machine is shared: `make bench-gateway` measures the real figure."""
    samples = []
    with httpx.Client(base_url=url, timeout=60) as c:
        busy.start()
        while busy.is_alive():
            t = time.perf_counter()
            assert c.get("/healthz").status_code == 200
            samples.append((time.perf_counter() - t) * 1000)
    busy.join()
    assert len(samples) >= 10  # healthz kept answering throughout
    samples.sort()
    return samples[int(len(samples) * 0.99) - 1] if len(samples) > 1 else samples[0]


# ---- 1. nothing blocks the event loop ------------------------------------------------


def test_a_million_tokens_at_a_million_per_second_do_not_stall_healthz(gateway_url: str) -> None:
    done = {}

    def abuse() -> None:
        done["answer"] = raw_post(gateway_url, {**CHAT, "stream": True}, "ttft_ms=0,tokens=1000000,tps=1000000")

    p99 = healthz_p99_ms_while(gateway_url, threading.Thread(target=abuse))
    status, tail, size = done["answer"]
    assert status == 200 and b"data: [DONE]" in tail and size > 10_000_000
    assert p99 < 1000, p99


def test_echo_of_a_4_mib_prompt_neither_stalls_nor_bloats_the_gateway() -> None:
    with gateway("--ttft-ms", "0", "--tps", "1000000") as url:
        pid = httpx.get(url + "/healthz", timeout=60).json()["pid"]
        rss_before = _rss_kib(pid)
        prompt = "word " * (4 * 1024 * 1024 // 5 - 100)
        result = {}

        def abuse() -> None:
            result["answer"] = raw_post(url, {**CHAT, "stream": True, "messages": [{"role": "user", "content": prompt}]},
                                        "ttft_ms=0,tps=1000000,echo=1,prefill_tps=0")

        p99 = healthz_p99_ms_while(url, threading.Thread(target=abuse))
        status, tail, size = result["answer"]
        assert status == 200 and b"data: [DONE]" in tail and size > 4 * 1024 * 1024
        assert p99 < 1000, p99
        assert _rss_kib(pid) - rss_before < 60 * 1024  # was +180 MB; +20 MB measured


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


# ---- 2. cross-origin requests and DNS rebinding ---------------------------------------


def test_a_foreign_page_cannot_spend_the_key_with_no_cors_text_plain(gateway_url: str) -> None:
    r = httpx.post(gateway_url + "/v1/chat/completions", content=json.dumps(CHAT),
                   headers={"content-type": "text/plain;charset=UTF-8", "origin": "http://evil.example"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed"
    # Even with Origin stripped (a privacy extension), a simple body type is refused.
    r = httpx.post(gateway_url + "/v1/chat/completions", content=json.dumps(CHAT), headers={"content-type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"


def test_dns_rebinding_gets_403_on_every_route(gateway_url: str) -> None:
    for method, path in (("POST", "/v1/chat/completions"), ("GET", "/v1/models"), ("GET", "/")):
        r = httpx.request(method, gateway_url + path, content=json.dumps(CHAT),
                          headers={**JSON, "host": "attacker.example", "origin": "http://attacker.example"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "host_not_allowed", path
        assert r.headers["x-content-type-options"] == "nosniff"


def test_same_origin_pages_and_native_clients_pass(gateway_url: str) -> None:
    assert post(gateway_url, CHAT, origin=gateway_url, **{SIM: "ttft_ms=0"}).status_code == 200
    assert post(gateway_url, CHAT, **{SIM: "ttft_ms=0"}).status_code == 200  # curl, no Origin
    port = gateway_url.rsplit(":", 1)[1]
    assert post(gateway_url, CHAT, host=f"localhost:{port}", origin=f"http://localhost:{port}",
                **{SIM: "ttft_ms=0"}).status_code == 200


def test_configured_origins_and_hosts_are_allowed_with_cors() -> None:
    with gateway("--allow-origin", "https://app.example", "--allowed-host", "gw.internal", "--ttft-ms", "0") as url:
        pre = httpx.options(url + "/v1/chat/completions", headers={
            "origin": "https://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type"})
        assert pre.status_code == 204 and pre.headers["access-control-allow-origin"] == "https://app.example"
        r = post(url, CHAT, origin="https://app.example")
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://app.example"
        assert post(url, CHAT, origin="https://other.example").status_code == 403
        assert httpx.get(url + "/healthz", headers={"host": "gw.internal:80"}).status_code == 200


# ---- 3. --client-key-env fails closed ------------------------------------------------


@pytest.mark.parametrize("env", [{}, {"GW_UNSET_KEY": ""}, {"GW_UNSET_KEY": "  "}])
def test_client_key_env_unset_or_empty_refuses_to_start(env: dict[str, str]) -> None:
    with pytest.raises(RuntimeError, match="unset or empty"):
        with gateway("--client-key-env", "GW_UNSET_KEY", env=env):
            pass


# ---- 4. server limits -----------------------------------------------------------------


def test_idle_and_slowloris_connections_are_closed_by_the_header_timeout() -> None:
    # Keep-alive far above the header timeout, so that a close within a minute can only
    # be the header timeout's, on a machine however loaded (uvicorn's own keep-alive timer
    # would close an idle connection too, at 5 s by default).
    with gateway("--header-timeout", "1.5", "--keep-alive", "120", "--max-connections", "50") as url, \
            ExitStack() as sockets:
        host, port = url.removeprefix("http://").rsplit(":", 1)

        def connect() -> socket.socket:
            s = sockets.enter_context(socket.create_connection((host, int(port))))
            s.settimeout(90)
            return s

        idle, slow = connect(), connect()
        slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        t = time.monotonic()
        for s in (idle, slow):
            assert s.recv(100) == b""  # closed by the gateway
        assert time.monotonic() - t < 60
        # Past the connection cap, new connections are closed at once (and logged at
        # most once per 10 s), while /healthz keeps answering once some close.
        many = [connect() for _ in range(80)]
        closed = 0
        for s in many[50:]:
            try:
                closed += s.recv(1) == b""
            except ConnectionResetError:
                closed += 1
        assert closed == 30
        for s in many:
            s.close()
        assert httpx.get(url + "/healthz", timeout=60).status_code == 200
    assert sum("connection refused" in line for line in url.log) <= 2


def test_concurrent_streams_per_client_are_capped() -> None:
    with gateway("--streams-per-client", "2", "--ttft-ms", "0", "--tps", "20") as url:
        with httpx.Client(timeout=30) as c:
            streams = [c.stream("POST", url + "/v1/chat/completions", headers={**JSON, SIM: "tokens=200"},
                                content=json.dumps({**CHAT, "stream": True})) for _ in range(2)]
            opened = [s.__enter__() for s in streams]
            assert all(r.status_code == 200 for r in opened)
            third = post(url, CHAT)
            assert third.status_code == 429 and third.headers["retry-after"] == "1"
            for s in streams:
                s.__exit__(None, None, None)


# ---- 5 and 8. keys never travel where they should not ----------------------------------


@pytest.fixture(scope="module")
def echoing_upstream():
    """An upstream that echoes the request, headers and all, in every answer."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from harness.servers import serve_app

    async def echo(request):
        seen = {"headers": dict(request.headers), "body": (await request.body()).decode()}
        status = 500 if "fail" in seen["body"] else 200
        auth = request.headers.get("authorization", "")
        return JSONResponse(seen, status_code=status, headers={"x-request-id": auth or "none"})

    async def stream(request):
        auth = request.headers.get("authorization", "")
        return Response(f"data: {json.dumps({'echo': auth})}\n\n".encode(), media_type="text/event-stream",
                        headers={"x-request-id": auth or "none"})

    app = Starlette(routes=[Route("/v1/chat/completions", echo, methods=["POST"]),
                            Route("/v1/models", echo), Route("/v1/models/{m}", echo),
                            Route("/v2/chat/completions", stream, methods=["POST"])])
    with serve_app(app) as url:
        yield url


@pytest.mark.parametrize("path", ["/v1", "/v2"])
def test_the_key_never_comes_back_through_the_upstream(echoing_upstream: str, path: str) -> None:
    with gateway("--upstream", echoing_upstream + path, "--client-key-env", "GW_KEY",
                 env={"OPENAI_API_KEY": KEY, "GW_KEY": CLIENT_KEY}) as url:
        auth = {"authorization": f"Bearer {CLIENT_KEY}"}
        answers = [post(url, CHAT, **auth), post(url, {**CHAT, "model": "fail"}, **auth)]
        if path == "/v1":
            answers += [httpx.get(url + "/v1/models", headers=auth), httpx.get(url + "/v1/models/x", headers=auth)]
        for r in answers:
            assert r.status_code in (200, 500)
            assert KEY not in r.text and KEY not in str(r.headers), r.text
            assert CLIENT_KEY not in r.text and CLIENT_KEY not in str(r.headers)
            assert "[redacted]" in r.text + str(r.headers)


def test_the_gateway_client_key_is_not_forwarded_without_an_upstream_key(echoing_upstream: str) -> None:
    with gateway("--upstream", echoing_upstream + "/v1", "--client-key-env", "GW_KEY",
                 env={"OPENAI_API_KEY": "", "GW_KEY": CLIENT_KEY}) as url:
        r = post(url, CHAT, authorization=f"Bearer {CLIENT_KEY}")
        assert r.status_code == 200 and "authorization" not in r.json()["headers"]


# ---- 6 and 7. bad bodies are 400, errors are JSON ---------------------------------------


@pytest.mark.parametrize(
    "message, param",
    [
        ({"role": ["user"], "content": "x"}, "messages[0].role"),
        ({"role": {}, "content": "x"}, "messages[0].role"),
        ({"role": ["user"], "x_firsttoken_ref": "sha256:" + "0" * 64}, "messages[0].role"),
        ({"role": {}, "x_firsttoken_ref": "sha256:" + "0" * 64}, "messages[0].role"),
    ],
)
def test_unhashable_roles_are_400(gateway_url: str, message: dict, param: str) -> None:
    r = post(gateway_url, {**CHAT, "messages": [message]}, **{"x-firsttoken-client": "c" * 20})
    assert r.status_code == 400 and r.json()["error"]["param"] == param
    # A body large enough to be parsed in the worker process gets the same answer.
    big = {**CHAT, "messages": [message], "user": "x" * 600_000}
    r = post(gateway_url, big)
    assert r.status_code == 400 and r.json()["error"]["param"] == param


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("sim", ["ttft_ms=0", "ttft_ms=0,echo=1"])
def test_lone_surrogates_are_400(gateway_url: str, stream: bool, sim: str) -> None:
    body = '{"model": "firsttoken-sim", "stream": %s, "messages": [{"role": "user", "content": "\\ud800"}]}' % (
        "true" if stream else "false")
    r = httpx.post(gateway_url + "/v1/chat/completions", content=body, headers={**JSON, SIM: sim})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages[0].content"
    pair = body.replace("\\ud800", "\\ud83d\\ude00")  # a valid pair is fine, and echoed whole
    r = httpx.post(gateway_url + "/v1/chat/completions", content=pair, headers={**JSON, SIM: sim})
    assert r.status_code == 200 and (not stream or r.text.endswith("data: [DONE]\n\n"))


def test_a_million_spaces_are_counted_and_answered(gateway_url: str) -> None:
    r = post(gateway_url, {**CHAT, "messages": [{"role": "user", "content": " " * 1_000_000}]}, **{SIM: "ttft_ms=0"})
    assert r.status_code == 200 and r.json()["usage"]["prompt_tokens"] > 7_000


# ---- 9. one concise log line per failure ----------------------------------------------


def test_a_mid_body_disconnect_and_an_upstream_failure_log_no_traceback() -> None:
    with gateway("--upstream", "http://127.0.0.1:1/v1", "--log-level", "info") as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":")
        # Generous timeouts: what is asserted is the answer and the log, not how soon a
        # gateway just started answers on a machine busy with three other test workers.
        assert httpx.get(url + "/healthz", timeout=60).status_code == 200
        r = post(url, CHAT)  # unreachable upstream: a 502
        assert r.status_code == 502
        assert httpx.get(url + "/healthz", timeout=60).status_code == 200
    assert not any("Traceback" in line for line in url.log), "".join(url.log)


def test_an_internal_error_is_a_json_500_and_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    from gateway.boundary import ErrorBoundary
    from harness.servers import serve_app

    async def broken(scope, receive, send):
        if scope["type"] == "http":
            raise KeyError("deep inside")

    with caplog.at_level("DEBUG"), serve_app(ErrorBoundary(broken)) as url:
        r = httpx.get(url + "/anything")
    assert r.status_code == 500 and r.json()["error"]["type"] == "server_error"
    failures = [rec for rec in caplog.records if rec.levelname in ("ERROR", "CRITICAL")]
    assert len(failures) == 1 and failures[0].exc_info is None
    assert "KeyError" in failures[0].getMessage() and "\n" not in failures[0].getMessage()


# ---- 10. the official openai client ---------------------------------------------------


def test_openai_client_meets_explicit_answers(gateway_url: str) -> None:
    client = openai.OpenAI(base_url=gateway_url + "/v1", api_key="not-needed", max_retries=0)
    assert client.models.retrieve("firsttoken-sim").id == "firsttoken-sim"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-nothing")
    messages = [{"role": "user", "content": "answer in json"}]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="firsttoken-sim", messages=messages, n=2)
    assert info.value.body["param"] == "n"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="firsttoken-sim", messages=messages, tools=[
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
    assert info.value.body["param"] == "tools"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="firsttoken-sim", messages=[{"role": "user", "content": "hi"}],
                                       response_format={"type": "json_object"})
    assert info.value.body["param"] == "messages"
    answer = client.chat.completions.create(model="firsttoken-sim", messages=messages,
                                            response_format={"type": "json_object"}, extra_headers={SIM: "ttft_ms=0"})
    assert isinstance(json.loads(answer.choices[0].message.content)["answer"], str)


def test_accept_failures_are_logged_once_per_ten_seconds() -> None:
    import logging

    from gateway.__main__ import _ThrottledAcceptErrors

    throttle = _ThrottledAcceptErrors()

    def record(at: float, message: str = "socket.accept() out of system resource") -> logging.LogRecord:
        r = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, (OSError, OSError(24, "EMFILE"), None))
        r.created = at
        return r

    kept = [throttle.filter(record(1000 + i * 0.01)) for i in range(2000)]  # 20 s of failing accepts
    assert sum(kept) == 2
    assert throttle.filter(record(1000.5, "something else"))
    first = record(2000)
    throttle.filter(first)
    assert first.exc_info is None  # one line, no traceback


def test_responses_are_not_held_back_by_nagle() -> None:
    # Each response is two writes; without TCP_NODELAY the second waited for the
    # client's delayed ACK (40 ms on Linux), on every keep-alive request and stream chunk.
    # (The first request may wait for a gateway just started on a loaded machine.)
    with gateway("--log-level", "error") as url, httpx.Client(base_url=url, timeout=60) as c:
        c.get("/healthz")
        times = []
        for _ in range(20):
            t = time.perf_counter()
            c.get("/healthz")
            times.append(time.perf_counter() - t)
        assert sorted(times)[10] < 0.030, times
