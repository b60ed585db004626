"""Smoke runs of `make bench-e2e` (bench/e2e.py) and `make report` (bench/report.py): short,
but real processes, real figures. Two users, two turns each; then the report from that
run, with its plots, served by the gateway at /report/."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from gateway.app import GatewayConfig, create_app
from harness.servers import ROOT

ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'py'}{os.pathsep}{ROOT}"}

# The smoke run is a benchmark's own subprocess on phones' shaped links (its setup took
# 175-300 s in full runs, by the load beside it, before `--sim` below; 93-120 s alone
# after it): a bound of its own, under the subprocess's 900 s, instead of the suite's
# 300 s per test (pyproject.toml).
pytestmark = [pytest.mark.timeout(900), pytest.mark.runs_long(150)]


def run(script: str, *args: str) -> tuple[dict[str, Any], str]:
    """Run a benchmark script; its last line (JSON) and everything it printed."""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stdout


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bench") / "e2e.json"
    # A quota two users can meet: the queueing scenario's bucket (20,000 tokens) holds two
    # requests, and refills at 5,000 tokens/s. Each user on a slow-4G link of its own.
    # The built-in model quick (`--sim`: a 100 ms base first token, not the published
    # 1.1 s, and 24 tokens an answer, not 120): the same 22 runs, every record and figure
    # below produced as by `make bench-e2e`, in 93 s instead of 148 s; only the figures'
    # sizes differ, which nothing here asserts.
    line, _ = run("e2e.py", "--users", "2", "--turns", "2", "--think-s", "0.05", "--ramp-s", "0.05",
                  "--tpm", "300000", "--burst-s", "4", "--runs", "1", "--sweep", "", "--dialect-scenarios", "uncontended",
                  "--steps", "uncontended", "--peer-scenarios", "uncontended", "--profile", "slow4g",
                  "--sim", "ttft_ms=100,tps=150,tokens=24,chunk=8", "--out", str(out))
    return line, json.loads(out.read_text()), out


def test_the_scenario_runner_measures_both_clients(e2e: tuple[dict[str, Any], dict[str, Any], Path]) -> None:
    line, data, _ = e2e
    for key in ("naive_ttft_p95_ms", "firsttoken_ttft_p95_ms", "ttft_p95_reduction_pct", "naive_429", "firsttoken_429"):
        assert key in line, key
    assert line["naive_ttft_p95_ms"] > 0 and line["firsttoken_ttft_p95_ms"] > 0
    assert set(data["scenarios"]) == {"queueing", "uncontended"}
    assert data["scenarios"]["queueing"]["params"]["gateway_tpm"] > 0
    records = data["records"]
    # Runs × users × turns: the two scenarios' two kinds, the three openai peers in
    # uncontended; the dialect column's other two APIs in uncontended (Messages with its
    # cache_control peer); firsttoken alone in each configuration of the steps table but
    # "all" (the headline's): none, each of five steps alone, the first 1-4 added.
    configs = 1 + 5 + 4
    assert len(records) == (2 * 2 + 3 + 2 + 3 + configs) * 2 * 2
    assert {r["api"] for r in records} == {"chat_completions", "responses", "anthropic_messages"}
    assert line["profile"] == "slow4g" and data["scenarios"]["uncontended"]["params"]["profile"] == "slow4g"
    # The figures, each present.
    for key in ("uncontended_ttft_p50_ratio", "cold_turn_ttft_p50_ratio", "bytes_up_ratio"):
        assert line[key] > 0, key
    # The same server for both: each read the repeated system prompt from its prefix cache.
    assert line["cached_tokens_pct"]["naive"] > 0 and line["cached_tokens_pct"]["firsttoken"] > 0
    assert all(r["cached_tokens"] == 0 for r in records if r["turn"] == 0 and r["api"] != "anthropic_messages")
    steps = line["steps"]["uncontended"]
    assert steps["metric"] == "ttft_p50_ms"
    for table in ("alone", "added", "cold_alone", "cold_added"):
        assert set(steps[table]) == {"gzip", "compression", "cache", "governor", "warm"}, table
        assert all(isinstance(v, float) for v in steps[table].values()), table
    # What each step changes on the wire: the configurations with compression bill fewer
    # prompt tokens, those with the cache upload fewer bytes.
    configs_seen = data["steps"]["uncontended"]["configs"]
    assert configs_seen["only compression"]["prompt_tokens"] < configs_seen["none"]["prompt_tokens"]
    assert configs_seen["only cache"]["bytes_up"] < configs_seen["none"]["bytes_up"]
    assert configs_seen["only cache"]["prompt_tokens"] == configs_seen["none"]["prompt_tokens"]
    assert configs_seen["only gzip"]["bytes_up"] < configs_seen["none"]["bytes_up"] / 2
    assert configs_seen["only gzip"]["prompt_tokens"] == configs_seen["none"]["prompt_tokens"]
    # The fair peers (issue 45): each one change to the official client, seen on the wire.
    calm = data["scenarios"]["uncontended"]
    assert set(calm["peers"]) == set(line["peers"]["chat_completions"]["uncontended"]) == {
        "sdk_gzip", "sdk_preconnect", "sdk_gzip_preconnect"}
    naive = calm["naive"]
    assert calm["sdk_gzip"]["bytes_up"] < naive["bytes_up"] / 2 == calm["sdk_preconnect"]["bytes_up"] / 2
    assert calm["sdk_gzip_preconnect"]["bytes_up"] == calm["sdk_gzip"]["bytes_up"]
    assert calm["sdk_gzip"]["prompt_tokens"] == calm["sdk_preconnect"]["prompt_tokens"] == naive["prompt_tokens"]
    # Messages: the system prompt marked cache_control is read from the cache from the
    # second turn on; unmarked, never.
    messages = data["dialects"]["anthropic_messages"]["uncontended"]
    assert set(messages["peers"]) == {"sdk_cache_control"}
    assert messages["naive"]["cached_tokens"] == 0 < messages["sdk_cache_control"]["cached_tokens"]
    # The tool schemas go minified in every client's system prompt; what pretty JSON adds is said.
    tools = line["tool_json"]
    assert tools["minified_tokens"] < tools["pretty_tokens"] and tools["minified_bytes"] < tools["pretty_bytes"]
    for r in records:
        assert r["ok"] and r["ttft_ms"] > 0 and r["total_ms"] >= r["ttft_ms"], r
        assert r["attempts"] >= 1 and r["bytes_up"] > 0 and r["prompt_tokens"] > 0, r
    assert set(data["dialects"]) == set(line["dialects"]) == {"chat_completions", "responses", "anthropic_messages"}
    for api, by_name in line["dialects"].items():
        assert set(by_name) == {"uncontended"}, api
        assert by_name["uncontended"]["naive_ttft_p95_ms"] > 0 and by_name["uncontended"]["firsttoken_ttft_p95_ms"] > 0
    assert line["dialects"]["chat_completions"]["uncontended"]["naive_ttft_p95_ms"] == line["scenarios"]["uncontended"]["naive_ttft_p95_ms"]
    for scenario in [*data["scenarios"].values(), *(data["dialects"][api]["uncontended"] for api in ("responses", "anthropic_messages"))]:
        naive, ours = scenario["naive"], scenario["firsttoken"]
        assert naive["failed"] == ours["failed"] == 0
        # Compression: fewer tokens billed for the same conversations.
        assert ours["prompt_tokens"] < naive["prompt_tokens"]
        assert ours["bytes_up"] < naive["bytes_up"]
    # From its second turn on, a firsttoken user sends the system prompt as a gateway
    # reference: the naive client's request is larger by about the whole prompt.
    by = {(r["api"], r["scenario"], r["kind"], r["user"], r["turn"]): r for r in records if r["kind"] in ("naive", "firsttoken")}
    system_bytes = len(json.dumps(_system_prompt(), ensure_ascii=False).encode())
    for api in ("chat_completions", "responses", "anthropic_messages"):
        for user in (0, 1):
            naive, ours = by[(api, "uncontended", "naive", user, 1)], by[(api, "uncontended", "firsttoken", user, 1)]
            if ours["attempts"] == naive["attempts"] == 1:
                assert naive["bytes_up"] - ours["bytes_up"] > 0.8 * system_bytes, api


def _bench(module: str) -> Any:
    """A module of bench/ (which imports its siblings by their plain names)."""
    import importlib

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))


def _system_prompt() -> str:
    return _bench("e2e_users").system_prompt()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_the_report_has_its_plots_and_figures(e2e: tuple[dict[str, Any], dict[str, Any], Path], tmp_path: Path) -> None:
    _, data, e2e_path = e2e
    out = tmp_path / "report"
    line, _ = run("report.py", "--quick", "--out", str(out), "--e2e", str(e2e_path), "--native", str(tmp_path / "absent.json"))
    index = (out / "index.html").read_text()
    assert line["native_measured"] is False and "Not measured" in index and "make bench-native" in index
    assert set(line["plots"]) == {"ttft.png", "boot_waterfall.png", "heatmap.png", "steps.png"}
    for name in line["plots"]:
        assert f'src="{name}"' in index
        width, height = png_size((out / name).read_bytes())
        assert width > 300 and height > 200
    # No inline script or style: the page keeps the gateway's CSP.
    assert "<script" not in index and "style=" not in index and "<style" not in index
    report = json.loads((out / "report.json").read_text())
    figures = {f["figure"]: f for f in report["figures"]}
    ours = data["scenarios"]["queueing"]["firsttoken"]
    assert figures["queueing · firsttoken · ttft_p95_ms"]["value"] == ours["ttft_p95_ms"]
    messages = data["dialects"]["anthropic_messages"]["uncontended"]
    assert figures["uncontended · anthropic_messages · naive · ttft_p95_ms"]["value"] == messages["naive"]["ttft_p95_ms"]
    assert "The dialect column" in index and "anthropic_messages" in index
    # The article's table with its caveats as rows: every peer beside the naive client.
    assert "caveats as rows" in index and "SDK + gzip body" in index and "Messages SDK + cache_control" in index
    steps = data["steps"]["uncontended"]
    assert "The article's table, step by step" in index
    assert figures["uncontended · step warm · ms off alone"]["value"] == steps["alone"]["warm"]
    assert f"{ours['prompt_tokens']:,}" in index
    assert all(f["date"] and f["loadavg"] and f["machine"] for f in report["figures"])
    # The boot waterfall's figures: a first visit and a reload, each ready after it started.
    ready = [f["value"] for name, f in figures.items() if name.endswith("ready (hello answered)")]
    assert len(ready) == 2 and all(v > 0 for v in ready)
    # The heatmap: every network × device cell, each reply painted after its first token.
    cells = report["page"]["grid"]
    assert {(c["device"], c["network"]) for c in cells} == {(d, n) for d in ("pixel7-4x", "desktop-1x") for n in ("4g", "slow4g", "3g")}
    for c in cells:
        assert all(0 < t <= p for t, p in zip(c["ttft_ms"], c["first_paint_ms"])), c
        # The shaped network's round trip is in every first token.
        assert min(c["ttft_ms"]) >= c["rtt_ms"], c
    # Served by the gateway, plots included.
    with TestClient(create_app(GatewayConfig(report_dir=out, precompressed=None)), base_url="http://127.0.0.1") as client:
        page = client.get("/report/")
        assert page.status_code == 200 and "firsttoken benchmark report" in page.text
        for src in re.findall(r'src="([^"]+)"', page.text):
            image = client.get(f"/report/{src}")
            assert image.status_code == 200 and image.headers["content-type"] == "image/png"


def test_native_results_become_a_cdf_and_rows(e2e: tuple[dict[str, Any], dict[str, Any], Path], tmp_path: Path) -> None:
    # build/bench/native.json as `make bench-native` writes it.
    native = {"renderers": {"native": {"50": [3.0, 4.0, 5.0, 9.0], "500": [4.0, 6.0]},
                            "chromium": {"50": [20.0, 30.0, None, 45.0], "500": [60.0, 121.0]}},
              "machine": "test machine", "date": "2026-12-01T16:00:00Z"}
    (tmp_path / "native.json").write_text(json.dumps(native))
    report = _bench("report")
    loaded = report.load_native(tmp_path / "native.json")
    assert report.load_native(tmp_path / "absent.json") is None
    width, height = png_size((tmp_path / report.plot_native_cdf(loaded, tmp_path)).read_bytes())
    assert width > 600 and height > 200
    rows = {r["figure"]: r for r in report.figures(e2e[1], loaded, {"boot": [], "grid": []}) if r["bench"] == "native"}
    assert rows["native · 50 tok/s · chunk→paint p50"]["value"] == 4.5
    assert rows["chromium · 50 tok/s · chunk→paint max"]["value"] == 45.0  # a chunk never painted is left out
    assert rows["chromium · 500 tok/s · chunk→paint p95"]["machine"] == "test machine"
