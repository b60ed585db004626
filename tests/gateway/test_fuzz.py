"""No request body crashes the gateway: every answer is a success or an OpenAI error."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from gateway import GatewayConfig, create_app
from gateway.simulator import SimParams

app = create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=1e6, tokens=5)))
# A browser-free client: a local Host and a JSON body type pass the guard (gateway/guard.py).
client = TestClient(app, raise_server_exceptions=True, base_url="http://localhost",
                    headers={"content-type": "application/json"})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["\ud800", "a\udfff", "\ud83d\ude00"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant", "x", 1, ["user"], {}]), "content": json_values}),
    max_size=3,
)
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"model": json_values | st.just("m"), "messages": messages | json_values},
        optional={"stream": json_values, "max_tokens": json_values, "stream_options": json_values, "n": json_values,
                  "response_format": json_values, "tools": json_values},
    ).map(lambda v: json.dumps(v).encode()),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies)
def test_any_body_gets_an_answer_or_a_typed_error(body: bytes) -> None:
    r = client.post("/v1/chat/completions", content=body)
    assert r.status_code in (200, 400), r.text
    if r.status_code == 400:
        assert r.json()["error"]["type"] == "invalid_request_error"
    elif "text/event-stream" in r.headers["content-type"]:
        assert r.text.rstrip().endswith("data: [DONE]")
    else:
        assert r.json()["object"] == "chat.completion"


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60)
    | st.lists(st.sampled_from(["tps=", "chunk=", "status=", "ttft_ms=", "stall_ms=", "1", "0", "-", "e9", "nan", ".", ","]), max_size=8).map("".join)
)
def test_any_sim_header_is_applied_or_refused(value: str) -> None:
    r = client.post(
        "/v1/chat/completions",
        headers={"x-firsttoken-sim": value},
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )
    if r.status_code == 200:
        assert r.json()["object"] == "chat.completion"
    else:  # refused (400), or a status the header itself asked for
        assert 400 <= r.status_code <= 599 and r.json()["error"]["message"]
