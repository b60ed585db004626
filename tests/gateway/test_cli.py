"""The `firsttoken-gateway` command (gateway/__main__.py), in process: every flag is
derived from a configuration field (gateway/options.py) and keeps its name, default
and meaning; `/report/` only when asked; the page's checkout found; the console script
named in pyproject.toml is this `main`."""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import fields
from pathlib import Path

import pytest

from gateway import static
from gateway.__main__ import CONFIGS, Launch, command_line, configure, main, page_root
from gateway.app import GatewayConfig
from gateway.limits import FlowLimits
from gateway.server import ServerLimits
from gateway.simulator import SimParams
from gateway.streams import ResumeLimits

ROOT = Path(__file__).resolve().parents[2]

#: Every flag the gateway had before its flags were derived from the dataclasses.
FLAGS = """--host --port --upstream --upstream-key-env --anthropic-key-env --client-key-env --allowed-host
--allow-origin --header-timeout --body-timeout --keep-alive --max-connections --streams-per-client --ttft-ms
--prefill-tps --tps --chunk --tokens --no-prefix-cache --cache-min-tokens --cache-step --cache-idle-s
--think-budget --summary-ms --cache-entries --max-body-bytes --keepalive-s --upstream-read-timeout-s --rpm --tpm
--gateway-rpm --gateway-tpm --burst-s --queue-wait-s --queue-max --reserve-tokens --redis --redis-fail --no-resume
--resume-ttl-s --resume-max-s --resume-stream-bytes --resume-streams-per-client --resume-total-bytes --connect-src
--frame-ancestors --no-isolation --no-precompressed --snapshot-always --log-level""".split()


@pytest.fixture(autouse=True)
def no_environment_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTTOKEN_UPSTREAM", raising=False)
    monkeypatch.delenv("FIRSTTOKEN_REDIS", raising=False)
    monkeypatch.chdir(ROOT)


def test_help_lists_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    assert exit.value.code == 0
    shown = capsys.readouterr().out
    declared = {o for a in command_line()._actions for o in a.option_strings} - {"-h", "--help"}
    # Flags added since: --cache-saving (issue 45: what a cached token still costs).
    assert declared == {*FLAGS, "--root", "--report", "--cache-saving"}
    for flag in declared:
        assert f"  {flag}" in shown, flag
    # Defaults come from the fields, shown by --help.
    assert "(default: 1100.0)" in shown and "(default: 4194304)" in shown


def test_no_flags_give_the_dataclasses_defaults() -> None:
    setup = configure([])
    config, defaults = setup.config, GatewayConfig()
    for f in fields(GatewayConfig):
        if f.name == "allowed_hosts":
            assert config.allowed_hosts == ("127.0.0.1",)  # the bound host
        else:
            assert getattr(config, f.name) == getattr(defaults, f.name), f.name
    assert config.report_dir is None
    assert (config.sim, config.limits, config.resume) == (SimParams(), FlowLimits(), ResumeLimits())
    assert setup.limits == ServerLimits() and setup.launch == Launch(root=None)


def test_flags_set_their_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_CLIENT_KEY", "k-123")
    monkeypatch.setenv("MY_UPSTREAM_KEY", "sk-up")
    setup = configure([
        "--host", "0.0.0.0", "--port", "0", "--upstream", "http://up/v1", "--upstream-key-env", "MY_UPSTREAM_KEY",
        "--client-key-env", "MY_CLIENT_KEY", "--allowed-host", "a.example", "--allowed-host", "b.example",
        "--allow-origin", "https://o.example", "--ttft-ms", "5", "--tps", "1e6", "--no-prefix-cache",
        "--cache-entries", "9", "--rpm", "10", "--burst-s", "12", "--redis-fail", "closed", "--no-resume",
        "--no-isolation", "--no-precompressed", "--snapshot-always", "--keep-alive", "3", "--keepalive-s", "0",
        "--log-level", "info",
    ])
    c = setup.config
    assert (c.upstream, c.upstream_key, c.client_key) == ("http://up/v1", "sk-up", "k-123")
    assert c.allowed_hosts == ("0.0.0.0", "a.example", "b.example") and c.allow_origins == ("https://o.example",)
    assert (c.sim.ttft_ms, c.sim.tps, c.sim.cache, c.sim_cache_entries) == (5.0, 1e6, False, 9)
    assert (c.limits.rpm, c.limits.burst_s, c.limits.fail_open) == (10, 12.0, False)
    assert (c.resume, c.isolation, c.precompressed, c.snapshot_measure_link, c.keepalive_s) == (None, False, None, False, 0.0)
    assert setup.limits.keep_alive_s == 3 and (setup.launch.port, setup.launch.log_level) == (0, "info")
    assert configure(["--redis-fail", "open"]).config.limits.fail_open is True
    assert configure(["--resume-ttl-s", "5"]).config.resume == ResumeLimits(ttl_s=5.0)


def test_environment_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRSTTOKEN_UPSTREAM", "http://env/v1")
    monkeypatch.setenv("FIRSTTOKEN_REDIS", "redis://env:1/0")
    config = configure([]).config
    assert (config.upstream, config.redis) == ("http://env/v1", "redis://env:1/0")
    assert configure(["--upstream", "http://flag/v1"]).config.upstream == "http://flag/v1"


@pytest.mark.parametrize(("argv", "message"), [
    (["--keepalive-s", "5000"], "--keepalive-s must be within 0..3600"),
    (["--cache-entries", "0"], "--cache-entries must be at least 1"),
    (["--upstream-read-timeout-s", "0.5"], "--upstream-read-timeout-s must be within 1..86400"),
    (["--resume-ttl-s", "0"], "--resume-*: ttl_s and max_s must be positive"),
    (["--tps", "0"], "tps must be within"),
    (["--port", "eighty"], "invalid int value"),
    (["--redis-fail", "maybe"], "invalid choice"),
    (["--client-key-env", "FIRSTTOKEN_TEST_UNSET"], "the variable is unset or empty"),
])
def test_bad_flags_exit_with_status_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        configure(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_the_report_is_served_only_when_asked() -> None:
    assert configure([]).config.report_dir is None
    assert configure(["--report"]).config.report_dir == ROOT / "build" / "report"
    elsewhere = configure(["--report", "--root", str(ROOT / "tests")]).config
    assert elsewhere.report_dir == ROOT / "tests" / "build" / "report"
    assert elsewhere.precompressed == ROOT / "tests" / "build" / "encoded"


def test_the_page_is_found(tmp_path: Path) -> None:
    assert page_root(tmp_path) == tmp_path.resolve()
    assert page_root(None, cwd=tmp_path) == static.ROOT  # no page here: the package's tree
    (tmp_path / "index.html").write_text("<!doctype html>")
    assert page_root(None, cwd=tmp_path) == tmp_path.resolve()
    assert configure([]).config.root == ROOT  # run from the checkout, as make run does


def test_the_console_script_is_this_main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, _, name = project["project"]["scripts"]["firsttoken-gateway"].partition(":")
    assert getattr(importlib.import_module(module), name) is main
    assert set(CONFIGS) == {Launch, ServerLimits, GatewayConfig, SimParams, FlowLimits, ResumeLimits}
