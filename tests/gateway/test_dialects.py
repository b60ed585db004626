"""The Responses and Messages routes on the built-in model, over real sockets, through
the official `openai` and `anthropic` clients: streamed and whole answers assembled to
the same text as chat completions gives, each API's typed errors (bad bodies,
authentication, rate limits, unknown routes), cache references in instructions and
system, dry runs, flow control settled from each dialect's usage, and resumable
streams only for firsttoken clients."""

from __future__ import annotations

import hashlib
from typing import Any, Iterator

import anthropic
import httpx
import openai
import pytest

from firsttoken import tokens
from gateway.app import GatewayConfig, create_app
from gateway.cache_refs import CLIENT_HEADER
from gateway.limits import FlowLimits
from gateway.simulator import SimParams
from gateway.streams import STREAM_HEADER
from harness.servers import serve_app

SIM = "x-firsttoken-sim"
FAST = {SIM: "ttft_ms=0,tps=100000,tokens=40"}
MODEL = "firsttoken-sim"
SYSTEM = "You answer briefly. " * 20
USER = "what is a frame budget?"
PROMPT = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
KEY = "sk-gateway-client-3d9f1a7c"
IDENT = "client-0123456789abcdef"


_clients: list[Any] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Every client a test made, closed after it (their pools hold sockets)."""
    yield
    while _clients:
        _clients.pop().close()


def oai(url: str, key: str = "unused", **headers: str) -> openai.OpenAI:
    client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, default_headers={**FAST, **headers})
    _clients.append(client)
    return client


def claude(url: str, key: str | None = "unused", **kwargs: Any) -> anthropic.Anthropic:
    headers = {**FAST, **kwargs.pop("headers", {})}
    client = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, default_headers=headers, **kwargs)
    _clients.append(client)
    return client


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    """A gateway on the built-in model, no key, generous limits."""
    with serve_app(create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=100_000, tokens=40)))) as url:
        yield url


def chat_answer(url: str) -> Any:
    return oai(url).chat.completions.create(model=MODEL, messages=PROMPT)  # type: ignore[arg-type]


# ---- answers -----------------------------------------------------------------------------------


def test_the_openai_client_streams_a_response_and_gets_the_same_answer_whole(gateway_url: str) -> None:
    client = oai(gateway_url)
    types, text, final = [], [], None
    for event in client.responses.create(model=MODEL, instructions=SYSTEM, input=USER, stream=True):
        types.append(event.type)
        if event.type == "response.output_text.delta":
            text.append(event.delta)
        elif event.type == "response.completed":
            final = event.response
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"]
    assert len(text) == 40 and final is not None
    whole = client.responses.create(model=MODEL, instructions=SYSTEM, input=USER)
    chat = chat_answer(gateway_url)
    # One answer generator: the same prompt says the same in every dialect.
    assert "".join(text) == final.output_text == whole.output_text == chat.choices[0].message.content
    assert whole.id.startswith("resp_") and whole.status == "completed"
    assert whole.usage is not None and final.usage is not None
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (chat.usage.prompt_tokens, 40)
    assert whole.usage.total_tokens == final.usage.total_tokens == chat.usage.total_tokens
    with client.responses.stream(model=MODEL, instructions=SYSTEM, input=USER) as stream:
        assert stream.get_final_response().output_text == whole.output_text


def test_the_anthropic_client_streams_a_message_and_gets_the_same_answer_whole(gateway_url: str) -> None:
    client = claude(gateway_url)
    turns: Any = [{"role": "user", "content": USER}]
    with client.messages.stream(model=MODEL, max_tokens=1000, system=SYSTEM, messages=turns) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=1000, system=SYSTEM, messages=turns)
    whole = raw.parse()
    chat = chat_answer(gateway_url)
    assert text == whole.content[0].text == chat.choices[0].message.content  # type: ignore[union-attr]
    assert final.stop_reason == whole.stop_reason == "end_turn" and whole.id.startswith("msg_")
    assert (final.usage.input_tokens, final.usage.output_tokens) == (chat.usage.prompt_tokens, 40)
    assert raw.headers["request-id"].startswith("req_")


def test_a_cut_answer_is_incomplete_in_each_dialects_words(gateway_url: str) -> None:
    response = oai(gateway_url).responses.create(model=MODEL, input=USER, max_output_tokens=16)
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"  # type: ignore[union-attr]
    assert response.usage.output_tokens == 16  # type: ignore[union-attr]
    last = list(oai(gateway_url).responses.create(model=MODEL, input=USER, max_output_tokens=16, stream=True))[-1]
    assert last.type == "response.incomplete"
    message = claude(gateway_url).messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": USER}])
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 5


def test_an_error_mid_stream_reaches_each_client_as_its_api_says_it(gateway_url: str) -> None:
    faulty = {SIM: "ttft_ms=0,tps=100000,error_after=2"}
    events = list(oai(gateway_url, **faulty).responses.create(model=MODEL, input=USER, stream=True))
    assert events[-1].type == "error" and events[-1].code == "simulated"  # type: ignore[union-attr]
    with pytest.raises(anthropic.APIStatusError) as caught:
        with claude(gateway_url, headers=faulty).messages.stream(
                model=MODEL, max_tokens=100, messages=[{"role": "user", "content": USER}]) as stream:
            "".join(stream.text_stream)
    assert caught.value.body["error"]["type"] == "api_error"  # type: ignore[index]


# ---- errors ------------------------------------------------------------------------------------


def test_bad_bodies_are_each_apis_typed_400(plain: str) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        oai(plain).responses.create(model=MODEL, input=[])
    assert bad.value.param == "input" and bad.value.code == "empty_array"
    with pytest.raises(openai.BadRequestError) as refused:
        oai(plain).responses.create(model=MODEL, input=USER, tools=[{"type": "function", "name": "f", "parameters": {}}])  # type: ignore[list-item]
    assert refused.value.param == "tools" and refused.value.code == "unsupported_parameter"
    with pytest.raises(anthropic.BadRequestError) as zero:
        claude(plain).messages.create(model=MODEL, max_tokens=0, messages=[{"role": "user", "content": USER}])
    assert zero.value.body["error"] == {"type": "invalid_request_error",  # type: ignore[index]
                                        "message": "max_tokens: Input should be greater than or equal to 1"}
    assert zero.value.request_id and zero.value.request_id == zero.value.body["request_id"]  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError) as no_tools:  # refused by the model, not the body check
        claude(plain).messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": USER}],
                                      tools=[{"name": "f", "input_schema": {"type": "object"}}])
    assert no_tools.value.body["error"] == {"type": "invalid_request_error",  # type: ignore[index]
                                            "message": "tools: this model does not support tools"}
    missing = httpx.post(plain + "/v1/messages", json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]})
    assert missing.status_code == 400 and missing.json()["error"]["message"] == "max_tokens: Field required"
    broken = httpx.post(plain + "/v1/messages", content=b"{", headers={"content-type": "application/json"})
    assert broken.status_code == 400 and broken.json()["type"] == "error" and "request-id" in broken.headers
    with pytest.raises(anthropic.NotFoundError) as unknown:
        claude(plain).messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": USER}])
    assert unknown.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]


def test_the_gateways_key_is_asked_of_both_clients_in_their_own_headers() -> None:
    with serve_app(create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=100_000, tokens=5), client_key=KEY))) as url:
        turns: Any = [{"role": "user", "content": USER}]
        with pytest.raises(openai.AuthenticationError) as wrong:
            oai(url, "sk-wrong").responses.create(model=MODEL, input=USER)
        assert wrong.value.code == "invalid_api_key"
        with pytest.raises(anthropic.AuthenticationError) as denied:
            claude(url, "sk-wrong").messages.create(model=MODEL, max_tokens=10, messages=turns)
        assert denied.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
        # x-api-key, as the anthropic client sends a key; Bearer, as it sends a token
        assert claude(url, KEY).messages.create(model=MODEL, max_tokens=10, messages=turns).content
        assert claude(url, None, auth_token=KEY).messages.create(model=MODEL, max_tokens=10, messages=turns).content
        assert oai(url, KEY).responses.create(model=MODEL, input=USER).output_text


def test_a_rate_limit_is_each_apis_429_and_one_key_is_one_client_in_either_header() -> None:
    app = create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=100_000, tokens=5),
                                   limits=FlowLimits(rpm=1, queue_wait_s=0)))
    with serve_app(app) as url:
        assert oai(url, KEY).responses.create(model=MODEL, input=USER).output_text
        with pytest.raises(anthropic.RateLimitError) as limited:
            claude(url, KEY).messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": USER}])
        assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
        assert int(limited.value.response.headers["retry-after"]) >= 1
        assert limited.value.response.headers["x-ratelimit-remaining-requests"] == "0"
        with pytest.raises(openai.RateLimitError) as again:
            oai(url, KEY).responses.create(model=MODEL, input=USER)
        assert again.value.code == "rate_limit_exceeded"


# ---- cache references, dry runs, resume --------------------------------------------------------

REF = {"x_firsttoken_ref": "sha256:" + hashlib.sha256(SYSTEM.encode()).hexdigest()}


def test_references_resolve_in_instructions_and_system_and_answer_as_the_full_text(plain: str) -> None:
    who = {CLIENT_HEADER: IDENT}
    responses, messages = oai(plain, **who).responses, claude(plain, headers=who).messages
    turns: Any = [{"role": "user", "content": USER}]
    full = responses.create(model=MODEL, instructions=SYSTEM, input=USER).output_text  # remembered
    assert responses.create(model=MODEL, instructions=REF, input=USER).output_text == full  # type: ignore[arg-type]
    items: Any = [{"role": "system", **REF}, {"role": "user", "content": USER}]
    assert responses.create(model=MODEL, input=items).output_text == full
    assert messages.create(model=MODEL, max_tokens=100, system=REF, messages=turns).content[0].text == full  # type: ignore[arg-type,union-attr]
    block: Any = [{"type": "text", **REF, "cache_control": {"type": "ephemeral"}}]
    assert messages.create(model=MODEL, max_tokens=100, system=block, messages=turns).content[0].text == full  # type: ignore[union-attr]
    # a text first sent as a block is remembered too
    other = "Answer in one line. " * 10
    messages.create(model=MODEL, max_tokens=100, system=[{"type": "text", "text": other}], messages=turns)
    by_hash = {"x_firsttoken_ref": "sha256:" + hashlib.sha256(other.encode()).hexdigest()}
    assert messages.create(model=MODEL, max_tokens=100, system=by_hash, messages=turns).content  # type: ignore[arg-type]
    unknown = {"x_firsttoken_ref": "sha256:" + "0" * 64}
    with pytest.raises(anthropic.ConflictError) as gone:
        messages.create(model=MODEL, max_tokens=100, system=unknown, messages=turns)  # type: ignore[arg-type]
    assert gone.value.body["error"]["details"] == {"error_code": "cache_ref_unknown"}  # type: ignore[index]
    with pytest.raises(openai.ConflictError) as gone_too:
        responses.create(model=MODEL, instructions=unknown, input=USER)  # type: ignore[arg-type]
    assert gone_too.value.code == "cache_ref_unknown" and gone_too.value.param == "instructions"


def test_dry_runs_count_each_dialects_prompt_and_refuse_like_the_real_request(plain: str) -> None:
    prompt = tokens.count_chat(PROMPT, MODEL)
    who = {CLIENT_HEADER: IDENT}
    httpx.post(plain + "/v1/responses", json={"model": MODEL, "instructions": SYSTEM, "input": USER}, headers={**FAST, **who})
    bodies = {
        "/v1/responses": ({"model": MODEL, "instructions": REF, "input": USER, "max_output_tokens": 300}, "response.dry_run"),
        "/v1/messages": ({"model": MODEL, "system": REF, "messages": [{"role": "user", "content": USER}], "max_tokens": 300},
                         "message.dry_run"),
    }
    for path, (body, kind) in bodies.items():
        dry = httpx.post(plain + path + "?dry_run=true", json=body, headers=who)
        assert dry.status_code == 200, dry.text
        data = dry.json()
        assert (data["object"], data["prompt_tokens"], data["max_tokens"]) == (kind, prompt, 300)
        assert data["fits"] is True and data["limiter"]["action"] == "admit"
    bad = {"model": MODEL, "messages": [{"role": "user", "content": USER}]}
    real, dry = (httpx.post(plain + "/v1/messages" + q, json=bad) for q in ("", "?dry_run=true"))
    assert real.status_code == dry.status_code == 400
    assert real.json()["error"] == dry.json()["error"] == {"type": "invalid_request_error", "message": "max_tokens: Field required"}


def test_flow_control_settles_each_dialects_answer_from_its_usage() -> None:
    # 1,200 tokens a minute: 20 a second flow back, slow beside what settling gives back.
    app = create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=100_000, tokens=40),
                                   limits=FlowLimits(tpm=1200, queue_wait_s=0)))
    requests = {
        "/v1/responses": {"model": MODEL, "instructions": SYSTEM, "input": USER, "max_output_tokens": 400},
        "/v1/messages": {"model": MODEL, "system": SYSTEM, "messages": [{"role": "user", "content": USER}], "max_tokens": 400},
    }
    prompt = tokens.count_chat(PROMPT, MODEL)
    with serve_app(app) as url, httpx.Client(base_url=url, headers=FAST) as http:
        for n, (path, body) in enumerate(requests.items()):
            who = {CLIENT_HEADER: f"client-{n}-0123456789abcdef"}  # a bucket of its own
            for stream in (False, True):
                assert http.post(path, json={**body, "stream": stream}, headers=who).status_code == 200
            spent = 2 * (prompt + 40)  # both answers' usage; the 400 reserved for each given back
            probe = {**body, "max_output_tokens" if path == "/v1/responses" else "max_tokens": 16}
            floor = 1200 - spent - (prompt + 16)  # what a probe that fits may leave
            for _ in range(200):  # settling is a task of its own after each answer: ask until both ran
                remaining = int(http.post(path + "?dry_run=true", json=probe, headers=who).headers["x-ratelimit-remaining-tokens"])
                if remaining >= floor:
                    break
            assert floor <= remaining <= 1200 - spent + 200  # (20 tokens a second flowed back meanwhile)


def test_a_firsttoken_clients_answer_on_the_new_routes_is_resumable_and_others_are_not(plain: str) -> None:
    # (tests/gateway/test_streams_dialects.py cuts and resumes them.)
    for path, body in (("/v1/responses", {"model": MODEL, "input": USER, "stream": True}),
                       ("/v1/messages", {"model": MODEL, "max_tokens": 100, "stream": True,
                                         "messages": [{"role": "user", "content": USER}]})):
        r = httpx.post(plain + path, json=body, headers={**FAST, CLIENT_HEADER: IDENT})
        assert r.status_code == 200 and STREAM_HEADER in r.headers and "\nid: " in r.text
        r = httpx.post(plain + path, json=body, headers=FAST)  # any other client: the API's stream as it is
        assert r.status_code == 200 and STREAM_HEADER not in r.headers
        assert "\nid: " not in r.text
