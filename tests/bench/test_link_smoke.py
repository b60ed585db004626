"""`make bench-link` runs: bench/link.py --smoke, as make runs it (a script of its own),
prints a line per profile, then one JSON line last with every profile's figures."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.profiles import PROFILES
from harness.servers import ROOT

KEYS = {f"{kind}{name}" for name in ("rtt_ms", "connect_ms", "up_mbps", "down_mbps") for kind in ("", "configured_")}
RATIOS = {"rtt_ratio", "connect_ratio", "up_ratio", "down_ratio"}


def test_the_smoke_benchmark_prints_each_profile_then_its_json_line() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "link.py"), "--smoke"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1])

    assert result["smoke"] is True
    assert set(result["profiles"]) == set(PROFILES)
    for name, profile in PROFILES.items():
        row = result["profiles"][name]
        assert set(row) == KEYS | RATIOS
        assert (row["configured_rtt_ms"], row["configured_up_mbps"], row["configured_down_mbps"]) == (
            profile.rtt_ms, profile.up_mbps, profile.down_mbps)
        # Lower bounds only: a loaded machine makes the link slower, never faster.
        assert row["rtt_ms"] >= profile.rtt_ms - 2  # less a timer's early wake-up
        assert row["rtt_ratio"] == round(row["rtt_ms"] / profile.rtt_ms, 3)
        assert any(line.startswith(f"{name}: rtt ") for line in lines[:-1])
    assert {"rtt_ms", "up_mbps", "down_mbps"} <= set(result["unshaped"])
    assert isinstance(result["loadavg_1m"], float)
