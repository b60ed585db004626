"""Benchmark: the seed article's before/after on our own stack (issues 16, 26 and 45), on
a phone's link to a server with a real server's costs, with its caveats as rows.

    .venv/bin/python bench/e2e.py [--users 20] [--turns 4] [--runs 2] [--profile slow4g]
                                  [--sweep 850000,1200000,1500000] [--steps queueing,uncontended]
                                  [--peers sdk_gzip,…] [--curve-tpm 700000,1000000,1400000 …]

N simulated users (`bench/e2e_users.py`) hold a conversation each (a long system
prompt, then user turns with pasted code and JSON) against one real gateway process
(`python -m gateway`, built-in model). Each scenario runs twice, on a fresh gateway
each time: once with every user on the naive client (the official `openai` client),
once with every user on firsttoken's core, and once with every user on each fair peer
(`e2e_users.PEERS`: the official client with gzipped bodies, with its connection opened
ahead, with both; on Messages, with `cache_control` on the system prompt). Users are a closed loop, as people are:
each opens the app at a random moment of the ramp, writes the first prompt, sends it,
waits for the whole answer, thinks, sends the next. Same seed, same conversations,
same think times for both kinds.

**The physics.** Each user is a phone: its own link to the gateway
(bench/shaper.py, `--profile`, slow 4G by default: 4 Mbit/s down, 3 up, 150 ms
round trip; bench/profiles.py says where each figure comes from), every connection paying its TCP and TLS handshakes, every byte its
serialisation, in a process of its own so that the links keep time while the users'
process works. The gateway's built-in model costs what a real server costs (its
defaults, published figures: gateway/prefill.py): a base first-token time plus the
prompt tokens not in its prefix cache (per API key and model, OpenAI's rules) and the
cached ones at 18% of that cost (OpenAI's measured saving, not a free hit), and
reports `cached_tokens` as OpenAI does. Both kinds meet the same link and the same
server; only what the client does differs. The first turn after the app opens is
*cold* (a new connection, an empty prefix cache); the others are *warm*; each is
reported apart.

**Steps** (`--steps`): firsttoken again with each of its steps alone (`e2e_users.STEPS`:
gzipped bodies, compression, the system-message cache with gateway references, the governor's pacing,
the warm connection) and added in turn, against firsttoken with none; each step's share
is the time it took off (p95 where there is a queue, p50 where there is none, and the
cold turn's p50).

Scenarios (`scenarios()`):

* `queueing`: the gateway's token flow control on, one tokens-per-minute bucket for all
  users together (`--gateway-tpm`: an upstream's org quota, whoever asks), small enough
  that the naive users queue (in the gateway's fair queue, then 429s past
  `--queue-wait-s`);
* `quota-<N>k` (`--sweep`): the queueing scenario at other limits, for the curve of
  time to first token against the quota (the reduction depends on where the quota sits
  against what each kind asks for: the report plots it);
* `uncontended`: no limit: nothing queues, so what differs is the upload, the prefill
  of what the server has not cached, the connection and the clients' own work;
* the quota × burst curve (`--curve-tpm`, `--curve-burst-s`, `--curve-profiles`,
  `--curve-runs`): the queueing scenario at each quota and bucket, on each link, several
  runs per point, reported as the median and min–max of the runs (`run_curve`): one
  run's reduction at one quota is a point on a curve with a spread, not a constant.

Dialects (`--apis`): the scenarios named by `--dialect-scenarios` run again with both
kinds speaking the Responses API and Anthropic Messages (`e2e_users.MODELS`: the naive
user on each API's official client, firsttoken with `api` in its settings), on the same
built-in model, whose pacing and costs do not depend on the dialect. The chat figures
above are that column's Chat Completions row.

Per client kind (with `--runs`, the median of the runs' figures; kinds alternate which
goes first): time to first token (from the user's Send to the first content token,
the client's own pacing, retries and the user's re-sends included) p50 and p95, 429s
received, bytes uploaded (every attempt's body) and prompt tokens billed (the gateway's
`usage`). Raw per-turn records go to build/bench/e2e.json for `make report`.

Prints human lines, then LAST one JSON line:
    {"profile", "naive_ttft_p95_ms", "firsttoken_ttft_p95_ms", "ttft_p95_reduction_pct",
     "naive_429", "firsttoken_429", … (the headline scenario, queueing),
     "uncontended_ttft_p50_ratio", "cold_turn_ttft_p50_ratio" (firsttoken ÷ naive, the
     first turn after the app opens, uncontended), "cached_tokens_pct": {kind: %},
     "bytes_up_ratio", "scenarios": {name: {…}},
     "dialects": {api: {scenario: {"naive_ttft_p95_ms", "firsttoken_ttft_p95_ms",
                                   "ttft_p95_reduction_pct", …}}},
     "steps": {scenario: {"metric", "none_ms", "alone": {step: ms saved},
                          "added": {step: ms saved}, "cold_alone": …, "cold_added": …}}}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from e2e_users import (ALL_KINDS, APIS, KINDS, PEERS, STEPS, FirsttokenUser, Record, tool_json_share,  # noqa: E402
                       user_turn)
from profiles import PROFILES  # noqa: E402
from gateway.simulator import SimParams  # noqa: E402
from harness.servers import gateway  # noqa: E402

OUT = ROOT / "build" / "bench" / "e2e.json"

#: The built-in model's pace for every scenario: a short answer, streamed quickly, so
#: that what differs is the wait before it. Eight tokens a chunk: all users' streams are
#: parsed in this one process, and per-chunk work (which differs between the clients)
#: must not lag the event loop that times their first tokens. The first token's cost is
#: the gateway's own, published defaults (base plus uncached prefill), not set here.
SIM = "tps=150,tokens=120,chunk=8"

def scenarios(tpm: int, burst_s: float, sweep: list[int]) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """name → (gateway flags, parameters as reported). `queueing` is the headline; each
    `--sweep` quota is the same scenario at another tokens-per-minute limit."""

    out = {"queueing": queued(tpm, burst_s), "uncontended": ([], {"gateway_tpm": 0, "about": "no rate limit: nothing queues"})}
    for limit in sweep:
        out[f"quota-{limit // 1000}k"] = queued(limit, burst_s)
    return out


def queued(limit: int, burst_s: float) -> tuple[list[str], dict[str, Any]]:
    """The queueing scenario's gateway flags and parameters at `limit` tokens a minute
    and a bucket of `burst_s` seconds of it."""
    flags = ["--gateway-tpm", str(limit), "--burst-s", str(burst_s), "--queue-wait-s", str(QUEUE_WAIT_S)]
    about = (f"one tokens-per-minute bucket for all users together ({limit:,} tpm, {burst_s:g} s burst), "
             f"the gateway's fair queue up to {QUEUE_WAIT_S} s, then 429")
    return flags, {"gateway_tpm": limit, "burst_s": burst_s, "queue_wait_s": QUEUE_WAIT_S, "about": about}


QUEUE_WAIT_S = 5
HEADLINE = "queueing"


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0–100), linear between closest ranks; None if no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summarize(records: list[Record]) -> dict[str, Any]:
    ttft = [r.ttft_ms for r in records if r.ttft_ms is not None]
    prep = [r.prepare_ms for r in records if r.prepare_ms is not None]
    r1 = lambda v: None if v is None else round(v, 1)  # noqa: E731
    billed = sum(r.prompt_tokens or 0 for r in records)
    return {
        "turns": len(records),
        "failed": sum(not r.ok for r in records),
        "ttft_p50_ms": r1(percentile(ttft, 50)),
        "ttft_p95_ms": r1(percentile(ttft, 95)),
        # The first turn after the app opens (a new connection, nothing cached on the
        # server; firsttoken prepares the whole system prompt, a cache miss, and sends it
        # in full); from the second on, the connection is open and the prefix cached.
        "ttft_p50_cold_ms": r1(percentile([r.ttft_ms for r in records if r.ttft_ms is not None and r.turn == 0], 50)),
        "ttft_p50_later_ms": r1(percentile([r.ttft_ms for r in records if r.ttft_ms is not None and r.turn > 0], 50)),
        "ttft_p95_later_ms": r1(percentile([r.ttft_ms for r in records if r.ttft_ms is not None and r.turn > 0], 95)),
        "ttft_max_ms": r1(max(ttft) if ttft else None),
        "http_429": sum(r.http_429 for r in records),
        "requests": sum(r.attempts for r in records),
        "resends": sum(max(r.sends - 1, 0) for r in records),
        "bytes_up": sum(r.bytes_up for r in records),
        "prompt_tokens": billed,
        "cached_tokens": sum(r.cached_tokens or 0 for r in records),
        "cached_tokens_pct": round(100 * sum(r.cached_tokens or 0 for r in records) / billed, 1) if billed else None,
        "client_wait_ms": r1(sum(r.waited_ms for r in records)),
        "prepare_p50_ms": r1(percentile(prep, 50)),
    }


@contextmanager
def phone_links(url: str, n: int, profile: str | None) -> Iterator[list[str]]:
    """`n` phones' links to the gateway at `url` (bench/shaper.py, `profile`, TLS's round
    trip charged: a real API is HTTPS), one per user, served by a process of their own;
    yields each one's base URL. No profile: every user on loopback."""
    if profile is None:
        yield [url] * n
        return
    target = url.removeprefix("http://")
    argv = [sys.executable, str(ROOT / "bench" / "shaper.py"), "--profile", profile, "--target", target,
            "--listen", "127.0.0.1:0", "--links", str(n), "--tls"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": f"{ROOT / 'py'}{os.pathsep}{ROOT}"})
    try:
        assert proc.stdout is not None
        urls: list[str] = []
        while len(urls) < n:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the links' process ended before {n} links were up")
            found = re.search(r"(http://[\d.]+:\d+)/ ->", line)
            if found:
                urls.append(found.group(1))
        yield urls
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def run_users(kind: str, urls: list[str], scenario: str, users: int, turns: int, think_s: float,
                    ramp_s: float, seed: int, api: str = "chat_completions",
                    steps: frozenset[str] | None = None, sim: str = SIM) -> list[Record]:
    """Every user of one kind through its conversation, user i on `urls[i]`; their
    records, in order. `steps`: firsttoken's steps on (default: all); `sim`: the
    built-in model's settings (`SIM`)."""
    rng = random.Random(seed)
    # Per user: when the app opens, how long the first prompt takes to write, and the
    # thinking after each answer.
    plans = [(rng.uniform(0, ramp_s), rng.expovariate(1 / think_s), [rng.expovariate(1 / think_s) for _ in range(turns)])
             for _ in range(users)]
    if kind == "firsttoken" and steps is not None:
        clients = [FirsttokenUser(urls[i], i, sim, api, steps) for i in range(users)]
    else:
        clients = [ALL_KINDS[kind](urls[i], i, sim, api) for i in range(users)]
    records: list[Record] = []
    began = time.perf_counter()

    async def person(i: int) -> None:
        start, compose, thinks = plans[i]
        await asyncio.sleep(start)
        await clients[i].open()  # the app opens, the composer gets focus
        await asyncio.sleep(compose)
        for turn in range(turns):
            record = Record(scenario=scenario, kind=kind, user=i, turn=turn, start_s=round(time.perf_counter() - began, 3))
            await clients[i].turn(record, user_turn(i, turn))
            records.append(record)
            await asyncio.sleep(thinks[turn])

    try:
        await asyncio.gather(*(person(i) for i in range(users)))
    finally:
        for client in clients:
            await client.aclose()
    return sorted(records, key=lambda r: (r.user, r.turn))


def warm_up(url: str, api: str = "chat_completions") -> None:
    """What happens once per process, charged to neither kind: the gateway's first
    count and answer; this process' tokenizer (the page loads its vocabulary once, at
    its first count, before any of these conversations would start); and each client's
    first request (the `openai` client builds its models on first use). A few tokens
    each, with a throwaway user of each kind."""
    from firsttoken import tokens

    tokens.count("warm", "o200k_base")

    async def both() -> None:
        for kind in KINDS.values():
            client = kind(url, -1, "ttft_ms=0,tokens=4", api)
            client.history = []  # not the system prompt: no user's cache is warmed
            try:
                await client.turn(Record(scenario="warm-up", kind=client.kind, user=-1, turn=0, start_s=0), "hello")
            finally:
                await client.aclose()

    asyncio.run(both())


def run_kind(kind: str, scenario: str, flags: list[str], args: argparse.Namespace,
             api: str = "chat_completions", steps: frozenset[str] | None = None,
             link: str | None = None) -> tuple[list[Record], float]:
    """One run of `kind`'s users; `link` a profile other than `args.profile` ("none":
    loopback)."""
    profile = args.profile if link is None else (None if link == "none" else link)
    # Per-client limits off: the scenario's limit, if any, is the gateway's own.
    common = ["--rpm", "0", "--tpm", "0", "--log-level", "warning", "--no-precompressed"]
    with gateway(*common, *flags) as url, phone_links(url, args.users, profile) as urls:
        warm_up(url, api)  # on loopback: this process' own first use, charged to no phone
        began = time.perf_counter()
        records = asyncio.run(run_users(kind, urls, scenario, args.users, args.turns, args.think_s, args.ramp_s,
                                        args.seed, api, steps, args.sim))
        return records, time.perf_counter() - began


def _median(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    middle = statistics.median(present)
    if isinstance(middle, float):
        return int(middle) if middle.is_integer() and all(isinstance(v, int) for v in present) else round(middle, 1)
    return middle


def reduction(naive: float | None, ours: float | None) -> float | None:  # noqa: D103
    if not naive or ours is None:
        return None
    return round(100 * (naive - ours) / naive, 1)


def _line(label: str, kind: str, run: int, s: dict[str, Any], took: float) -> None:
    print(f"{label:12s} {kind:10s} run {run}: ttft p50 {s['ttft_p50_ms']} ms, p95 {s['ttft_p95_ms']} ms, "
          f"cold p50 {s['ttft_p50_cold_ms']} ms (turns after the first: p95 {s['ttft_p95_later_ms']} ms), "
          f"max {s['ttft_max_ms']} ms · 429s {s['http_429']} · requests {s['requests']} (user re-sends "
          f"{s['resends']}, failed {s['failed']}) · {s['bytes_up']:,} B up · {s['prompt_tokens']:,} prompt tokens, "
          f"{s['cached_tokens_pct']}% cached · paced {s['client_wait_ms']} ms · prepare p50 {s['prepare_p50_ms']} ms · "
          f"{took:.0f} s", flush=True)


def _one_run(kind: str, name: str, flags: list[str], args: argparse.Namespace, records: list[Record], run: int,
             api: str = "chat_completions", steps: frozenset[str] | None = None,
             link: str | None = None) -> dict[str, Any]:
    rows, took = run_kind(kind, name, flags, args, api, steps, link)
    for row in rows:
        row.run = run
    records += rows
    s = {**summarize(rows), "run_s": round(took, 1)}
    billed = sum((r.prompt_tokens or 0) + (r.completion_tokens or 0) for r in rows)
    s["billed_tokens_per_min"] = round(billed / took * 60)
    return s


def run_scenario(name: str, flags: list[str], params: dict[str, Any], args: argparse.Namespace,
                 records: list[Record], api: str = "chat_completions", runs: int | None = None,
                 peers: list[str] | None = None) -> dict[str, Any]:
    """Scenario `name` with both kinds and `peers` speaking `api`, `runs` times
    (`args.runs`), every kind in every run, their order alternating: per kind the medians
    of the runs' figures, naive against firsttoken, and firsttoken against each peer
    (`result["peers"]`). Raw records join `records`."""
    runs = args.runs if runs is None else runs
    kinds = [*KINDS, *(peers or [])]
    params = {"users": args.users, "turns": args.turns, "think_s": args.think_s, "ramp_s": args.ramp_s,
              "sim": args.sim, "seed": args.seed, "runs": runs, "api": api, "profile": args.profile, **params}
    label = name if api == "chat_completions" else f"{name}@{api}"
    result: dict[str, Any] = {"params": params}
    per_run: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for run in range(runs):
        # Alternate which kind goes first: the machine's load drifts.
        for kind in (kinds if run % 2 == 0 else kinds[::-1]):
            s = _one_run(kind, name, flags, args, records, run, api)
            per_run[kind].append(s)
            _line(label, kind, run, s, s["run_s"])
    for kind, each in per_run.items():
        result[kind] = {**{key: _median([r[key] for r in each]) for key in each[0]}, "runs": each}
    naive, ours = result["naive"], result["firsttoken"]
    result["ttft_p95_reduction_pct"] = reduction(naive["ttft_p95_ms"], ours["ttft_p95_ms"])
    result["ttft_p50_reduction_pct"] = reduction(naive["ttft_p50_ms"], ours["ttft_p50_ms"])
    result["ttft_p95_later_reduction_pct"] = reduction(naive["ttft_p95_later_ms"], ours["ttft_p95_later_ms"])
    result["ttft_p50_ratio"] = ratio(ours["ttft_p50_ms"], naive["ttft_p50_ms"])
    result["cold_ttft_p50_ratio"] = ratio(ours["ttft_p50_cold_ms"], naive["ttft_p50_cold_ms"])
    result["bytes_ratio"] = ratio(ours["bytes_up"], naive["bytes_up"])
    result["prompt_tokens_ratio"] = ratio(ours["prompt_tokens"], naive["prompt_tokens"])
    result["peers"] = {peer: compare_peer(peer, result[peer], ours) for peer in peers or []}
    for row in result["peers"].values():
        print(f"{label:12s} firsttoken against {row['label']}: p50 ×{row['ttft_p50_ratio']}, p95 "
              f"{row['ttft_p95_reduction_pct']}% lower, cold p50 ×{row['cold_ttft_p50_ratio']}, bytes ×{row['bytes_ratio']}, "
              f"prompt tokens ×{row['prompt_tokens_ratio']}", flush=True)
    verdict = "faster" if (result["ttft_p95_reduction_pct"] or 0) > 0 else "NOT faster"
    print(f"{label:12s} firsttoken is {verdict} at p95: {result['ttft_p95_reduction_pct']}% "
          f"(p50 ×{result['ttft_p50_ratio']}, cold p50 ×{result['cold_ttft_p50_ratio']}, turns after the first "
          f"p95 {result['ttft_p95_later_reduction_pct']}%), bytes ×{result['bytes_ratio']}, "
          f"prompt tokens ×{result['prompt_tokens_ratio']}", flush=True)
    return result


def ratio(ours: float | None, naive: float | None) -> float | None:
    return round(ours / naive, 3) if ours is not None and naive else None


def compare_peer(peer: str, theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """A peer's row of the table: its figures and firsttoken's against them (× is
    firsttoken ÷ the peer)."""
    return {"label": PEERS[peer][0].label,
            "ttft_p50_ms": theirs["ttft_p50_ms"], "ttft_p95_ms": theirs["ttft_p95_ms"],
            "ttft_p50_cold_ms": theirs["ttft_p50_cold_ms"], "bytes_up": theirs["bytes_up"],
            "prompt_tokens": theirs["prompt_tokens"], "cached_tokens_pct": theirs["cached_tokens_pct"],
            "http_429": theirs["http_429"], "failed": theirs["failed"],
            "ttft_p50_ratio": ratio(ours["ttft_p50_ms"], theirs["ttft_p50_ms"]),
            "ttft_p95_reduction_pct": reduction(theirs["ttft_p95_ms"], ours["ttft_p95_ms"]),
            "cold_ttft_p50_ratio": ratio(ours["ttft_p50_cold_ms"], theirs["ttft_p50_cold_ms"]),
            "bytes_ratio": ratio(ours["bytes_up"], theirs["bytes_up"]),
            "prompt_tokens_ratio": ratio(ours["prompt_tokens"], theirs["prompt_tokens"])}


def print_table(results: dict[str, Any], dialects: dict[str, dict[str, Any]], steps: dict[str, Any]) -> None:
    """The article's table as markdown: per API and scenario, the naive client, each
    peer, firsttoken with none of its steps (where the steps table ran) and firsttoken;
    time to first token (p50, p95, the first turn's p50), bytes up, prompt tokens billed
    and the share read from the prefix cache, and firsttoken's p50 against each row."""
    columns = [("chat_completions", results), *((a, b) for a, b in dialects.items() if a != "chat_completions")]
    for api, by_name in columns:
        for name, result in by_name.items():
            ours = result["firsttoken"]
            print(f"\nThe article's table: {api}, {name} ({result['params']['about']}; "
                  f"{result['params']['runs']} run(s), medians)")
            print("| client | TTFT p50 | p95 | first turn p50 | bytes up | prompt tokens | cached | firsttoken p50 × |")
            print("|---|---|---|---|---|---|---|---|")
            rows = [("official SDK as is", result["naive"])]
            rows += [(PEERS[peer][0].label, result[peer]) for peer in result.get("peers", {})]
            table = steps.get(name) if api == "chat_completions" else None
            if table:
                rows.append(("firsttoken, none of its steps", table["configs"]["none"]))
            rows.append(("firsttoken", ours))
            for label, r in rows:
                print(f"| {label} | {r['ttft_p50_ms']} | {r['ttft_p95_ms']} | {r['ttft_p50_cold_ms']} | {r['bytes_up']:,} | "
                      f"{r['prompt_tokens']:,} | {r['cached_tokens_pct']}% | ×{ratio(ours['ttft_p50_ms'], r['ttft_p50_ms'])} |")


def spread(values: list[float | None]) -> dict[str, Any]:
    """Median, min, max and every value of one figure over runs (None where absent)."""
    present = [v for v in values if v is not None]
    if not present:
        return {"median": None, "min": None, "max": None, "runs": values}
    return {"median": round(statistics.median(present), 1), "min": round(min(present), 1),
            "max": round(max(present), 1), "runs": values}


def run_curve(args: argparse.Namespace, records: list[Record]) -> dict[str, list[dict[str, Any]]]:
    """The quota × burst curve (issue 45): the queueing scenario at each
    `--curve-tpm` × `--curve-burst-s` point, on each `--curve-profiles` link,
    `--curve-runs` times per kind (alternating which goes first), with the run-to-run
    spread of p95, p50 and the p95 reduction (naive and firsttoken of the same run
    paired). Per profile, the points in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for profile in args.curve_profiles:
        points = out[profile] = []
        for tpm in args.curve_tpm:
            for burst in args.curve_burst_s:
                flags, params = queued(tpm, burst)
                name = f"curve-{profile}-{tpm // 1000}k-{burst:g}s"
                per_run: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
                for run in range(args.curve_runs):
                    for kind in (list(KINDS) if run % 2 == 0 else list(KINDS)[::-1]):
                        s = _one_run(kind, name, flags, args, records, run, link=profile)
                        per_run[kind].append(s)
                        _line(name, kind, run, s, s["run_s"])
                naive, ours = per_run["naive"], per_run["firsttoken"]
                point = {"profile": profile, "gateway_tpm": tpm, "burst_s": burst, "runs": args.curve_runs,
                         "about": params["about"]}
                for kind, each in per_run.items():
                    point[kind] = {"ttft_p95_ms": spread([r["ttft_p95_ms"] for r in each]),
                                   "ttft_p50_ms": spread([r["ttft_p50_ms"] for r in each]),
                                   "http_429": spread([r["http_429"] for r in each])}
                point["ttft_p95_reduction_pct"] = spread([reduction(n["ttft_p95_ms"], o["ttft_p95_ms"])
                                                          for n, o in zip(naive, ours)])
                cut = point["ttft_p95_reduction_pct"]
                print(f"{name}: p95 naive {point['naive']['ttft_p95_ms']['median']} ms "
                      f"({point['naive']['ttft_p95_ms']['min']}–{point['naive']['ttft_p95_ms']['max']}), firsttoken "
                      f"{point['firsttoken']['ttft_p95_ms']['median']} ms ({point['firsttoken']['ttft_p95_ms']['min']}–"
                      f"{point['firsttoken']['ttft_p95_ms']['max']}); reduction {cut['median']}% "
                      f"({cut['min']}–{cut['max']}) over {args.curve_runs} runs", flush=True)
                points.append(point)
                # Each point as it is measured: a run cut short keeps what it measured.
                partial = args.out.with_suffix(".curve.json")
                partial.parent.mkdir(parents=True, exist_ok=True)
                partial.write_text(json.dumps({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                               "loadavg": [round(x, 2) for x in os.getloadavg()], "curve": out}, indent=1))
    return out


def step_configs() -> dict[str, frozenset[str]]:
    """firsttoken's configurations for the steps table: none, each step alone, and the
    steps added in turn (all of them is the headline's firsttoken, not run again)."""
    configs = {"none": frozenset()}
    configs.update({f"only {step}": frozenset({step}) for step in STEPS})
    for n in range(1, len(STEPS)):
        configs["+".join(STEPS[:n])] = frozenset(STEPS[:n])
    return configs


def run_steps(name: str, flags: list[str], args: argparse.Namespace, records: list[Record],
              headline: dict[str, Any]) -> dict[str, Any]:
    """The steps table of scenario `name`: each configuration of `step_configs()` run
    `args.step_runs` times (firsttoken only; the headline's firsttoken is all steps), and
    each step's share: the time it took off, alone (from none) and added in turn. The
    metric is p95 where users queue, p50 where they do not, and the cold turn's p50."""
    metric = "ttft_p95_ms" if headline["params"].get("gateway_tpm") else "ttft_p50_ms"
    figures: dict[str, dict[str, Any]] = {}
    for config, steps in step_configs().items():
        runs = []
        for run in range(args.step_runs):
            s = _one_run("firsttoken", name, flags, args, records, run, steps=steps)
            for r in records[-s["turns"]:]:
                r.kind = f"firsttoken[{config}]"
            _line(f"{name}/{config}", "firsttoken", run, s, s["run_s"])
            runs.append(s)
        figures[config] = {key: _median([r[key] for r in runs]) for key in runs[0]}
    figures["all"] = {key: headline["firsttoken"][key] for key in figures["none"]}

    def saved(before: str, after: str, key: str) -> float | None:
        a, b = figures[before].get(key), figures[after].get(key)
        return None if a is None or b is None else round(a - b, 1)

    added_order = ["none", *("+".join(STEPS[:n]) for n in range(1, len(STEPS))), "all"]
    out = {
        "metric": metric, "runs": args.step_runs,
        "none_ms": figures["none"][metric], "all_ms": figures["all"][metric], "naive_ms": headline["naive"][metric],
        "alone": {step: saved("none", f"only {step}", metric) for step in STEPS},
        "added": {step: saved(added_order[i], added_order[i + 1], metric) for i, step in enumerate(STEPS)},
        "cold_alone": {step: saved("none", f"only {step}", "ttft_p50_cold_ms") for step in STEPS},
        "cold_added": {step: saved(added_order[i], added_order[i + 1], "ttft_p50_cold_ms") for i, step in enumerate(STEPS)},
        "configs": figures,
    }
    print(f"{name:12s} steps ({metric}; ms taken off): none {out['none_ms']} → all {out['all_ms']} "
          f"(naive {out['naive_ms']}) · alone {out['alone']} · added in turn {out['added']} · "
          f"cold turn p50, alone {out['cold_alone']}, added {out['cold_added']}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--think-s", type=float, default=3.0, help="mean think time between turns (exponential)")
    parser.add_argument("--ramp-s", type=float, default=4.0, help="users start at random moments within this")
    parser.add_argument("--tpm", type=int, default=1_000_000, help="the queueing scenario's gateway tokens per minute")
    parser.add_argument("--burst-s", type=float, default=2.0, help="the queueing scenario's bucket, in seconds of its rate")
    parser.add_argument("--sweep", default="",
                        help="more queueing runs at these tpm limits, comma-separated (the report's quota curve), "
                             "e.g. 850000,1200000,1500000")
    parser.add_argument("--scenarios", default="queueing,uncontended", help="which to run (sweep points are added)")
    parser.add_argument("--runs", type=int, default=2, help="runs per scenario and kind (figures: medians of runs)")
    parser.add_argument("--apis", default=",".join(APIS), help="the dialect column: which APIs (comma-separated)")
    parser.add_argument("--dialect-scenarios", default="queueing,uncontended",
                        help="the scenarios run again on each API of --apis ('' for none)")
    parser.add_argument("--dialect-runs", type=int, default=1, help="runs per kind in the dialect column")
    parser.add_argument("--steps", default="queueing,uncontended",
                        help="the scenarios whose steps table is measured ('' for none)")
    parser.add_argument("--step-runs", type=int, default=1, help="runs per configuration in the steps table")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help="the fair peers run beside both kinds, in every API each applies to (e2e_users.PEERS; '' none)")
    parser.add_argument("--peer-scenarios", default="queueing,uncontended", help="the scenarios the peers run in")
    parser.add_argument("--peer-apis", default="chat_completions,anthropic_messages",
                        help="the APIs the peers run on (Responses' openai peers tell Chat Completions' story again)")
    parser.add_argument("--curve-tpm", default="",
                        help="the quota × burst curve's quotas (tpm, comma-separated; '' for no curve), "
                             "e.g. 700000,1000000,1500000")
    parser.add_argument("--curve-burst-s", default="2,8", help="the curve's buckets, in seconds of the quota")
    parser.add_argument("--curve-profiles", default="4g,slow4g", help="the links the curve runs on")
    parser.add_argument("--curve-runs", type=int, default=3, help="runs per kind at each point of the curve (its spread)")
    parser.add_argument("--profile", default="slow4g", choices=[*PROFILES, "none"],
                        help="each phone's link (bench/profiles.py); none: loopback")
    parser.add_argument("--seed", type=int, default=16)
    # For smoke runs (tests/e2e/test_bench_report.py): every figure and record is
    # produced the same way, in a third of the time, but the figures are no longer the
    # article's (the base first-token cost is the published one, 1.1 s: gateway/prefill.py).
    parser.add_argument("--sim", default=SIM,
                        help="the built-in model's settings for every user (x-firsttoken-sim; gateway/simulator.py), "
                             f"default {SIM!r}; a smoke run's e.g. 'ttft_ms=100,tps=150,tokens=24,chunk=8'")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.profile = None if args.profile == "none" else args.profile
    peers = [n for n in args.peers.split(",") if n]
    for peer in peers:
        if peer not in PEERS:
            parser.error(f"unknown peer {peer!r}; known: {', '.join(PEERS)}")
    peer_names = [n for n in args.peer_scenarios.split(",") if n]
    peer_apis = [a for a in args.peer_apis.split(",") if a]
    args.curve_tpm = [int(v) for v in args.curve_tpm.split(",") if v]
    args.curve_burst_s = [float(v) for v in args.curve_burst_s.split(",") if v]
    args.curve_profiles = [v for v in args.curve_profiles.split(",") if v]
    for profile in args.curve_profiles:
        if profile not in PROFILES:
            parser.error(f"unknown profile {profile!r} in --curve-profiles; known: {', '.join(PROFILES)}")
    sweep = [int(v) for v in args.sweep.split(",") if v]
    known = scenarios(args.tpm, args.burst_s, sweep)
    names = [s for s in args.scenarios.split(",") if s] + [n for n in known if n.startswith("quota-")]
    if not names and not args.curve_tpm:
        parser.error("nothing to run: no --scenarios and no --curve-tpm")
    for name in names:
        if name not in known:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(known)}")
    apis = [a for a in args.apis.split(",") if a]
    dialect_names = [n for n in args.dialect_scenarios.split(",") if n]
    for api in apis:
        if api not in APIS:
            parser.error(f"unknown API {api!r}; known: {', '.join(APIS)}")
    step_names = [n for n in args.steps.split(",") if n]
    for name in dialect_names + step_names:
        if name not in known:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(known)}")
    for name in step_names:
        if name not in names:
            parser.error(f"--steps {name}: not among the scenarios run (--scenarios)")

    records: list[Record] = []
    results: dict[str, Any] = {}
    def peers_of(name: str, api: str) -> list[str]:
        return [p for p in peers if name in peer_names and api in peer_apis and api in PEERS[p][1]]

    for name in names:
        flags, params = known[name]
        results[name] = run_scenario(name, flags, params, args, records, peers=peers_of(name, "chat_completions"))
    # The dialect column: the same scenarios on the other APIs (Chat Completions' row is
    # the runs above).
    dialects: dict[str, dict[str, Any]] = {"chat_completions": {n: results[n] for n in dialect_names if n in results}}
    for api in apis:
        if api == "chat_completions":
            continue
        dialects[api] = {}
        for name in dialect_names:
            flags, params = known[name]
            dialects[api][name] = run_scenario(name, flags, params, args, records, api, args.dialect_runs,
                                               peers=peers_of(name, api))
    # The article's table, step by step.
    steps: dict[str, Any] = {}
    for name in step_names:
        flags, _ = known[name]
        steps[name] = run_steps(name, flags, args, records, results[name])
    curve = run_curve(args, records) if args.curve_tpm else {}
    tools = tool_json_share()

    load = os.getloadavg()
    meta = {"machine": f"{platform.node()} · {os.cpu_count()} cores · {platform.platform()}",
            "python": platform.python_version(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "loadavg": [round(x, 2) for x in load]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**meta, "profile": args.profile, "scenarios": results, "dialects": dialects,
                                    "steps": steps, "curve": curve, "tool_json": tools,
                                    "records": [r.to_dict() for r in records]}, indent=1))
    peer_rows = {api: {n: r["peers"] for n, r in by_name.items() if r.get("peers")}
                 for api, by_name in [("chat_completions", results),
                                      *((a, b) for a, b in dialects.items() if a != "chat_completions")]}
    peer_rows = {api: rows for api, rows in peer_rows.items() if rows}
    if names:
        print_table(results, dialects, steps)
    for profile, points in curve.items():
        print(f"quota × burst curve, {profile} (p95 reduction, median and min–max of {args.curve_runs} runs): "
              + " · ".join(f"{p['gateway_tpm'] // 1000}k/{p['burst_s']:g}s {p['ttft_p95_reduction_pct']['median']}% "
                           f"({p['ttft_p95_reduction_pct']['min']}–{p['ttft_p95_reduction_pct']['max']})" for p in points))
    extra = {"peers": peer_rows, "tool_json": tools, "cache_saving": SimParams().cache_saving,
             "uplink_mbps": PROFILES[args.profile].up_mbps if args.profile else None,
             "curve": {profile: [{"gateway_tpm": p["gateway_tpm"], "burst_s": p["burst_s"], "runs": p["runs"],
                                  "naive_ttft_p95_ms": p["naive"]["ttft_p95_ms"],
                                  "firsttoken_ttft_p95_ms": p["firsttoken"]["ttft_p95_ms"],
                                  "ttft_p95_reduction_pct": p["ttft_p95_reduction_pct"]} for p in points]
                       for profile, points in curve.items()}}
    if not names:  # the curve alone
        print(f"wrote {args.out}")
        print(json.dumps({"profile": args.profile, "users": args.users, "loadavg_1m": meta["loadavg"][0], **extra}))
        return
    head = results.get(HEADLINE) or results[names[0]]
    calm = results.get("uncontended")
    line = {
        "profile": args.profile,
        "scenario": HEADLINE if HEADLINE in results else names[0],
        "naive_ttft_p95_ms": head["naive"]["ttft_p95_ms"],
        "firsttoken_ttft_p95_ms": head["firsttoken"]["ttft_p95_ms"],
        "ttft_p95_reduction_pct": head["ttft_p95_reduction_pct"],
        "naive_ttft_p50_ms": head["naive"]["ttft_p50_ms"],
        "firsttoken_ttft_p50_ms": head["firsttoken"]["ttft_p50_ms"],
        "naive_429": head["naive"]["http_429"],
        "firsttoken_429": head["firsttoken"]["http_429"],
        "naive_bytes_up": head["naive"]["bytes_up"],
        "firsttoken_bytes_up": head["firsttoken"]["bytes_up"],
        "naive_prompt_tokens": head["naive"]["prompt_tokens"],
        "firsttoken_prompt_tokens": head["firsttoken"]["prompt_tokens"],
        "uncontended_ttft_p50_ratio": calm and calm["ttft_p50_ratio"],
        "cold_turn_ttft_p50_ratio": calm and calm["cold_ttft_p50_ratio"],
        "cached_tokens_pct": calm and {kind: calm[kind]["cached_tokens_pct"] for kind in KINDS},
        "bytes_up_ratio": calm and calm["bytes_ratio"],
        "users": args.users,
        "loadavg_1m": meta["loadavg"][0],
        "scenarios": {n: {"naive_ttft_p95_ms": r["naive"]["ttft_p95_ms"], "firsttoken_ttft_p95_ms": r["firsttoken"]["ttft_p95_ms"],
                          "ttft_p95_reduction_pct": r["ttft_p95_reduction_pct"], "naive_429": r["naive"]["http_429"],
                          "firsttoken_429": r["firsttoken"]["http_429"]} for n, r in results.items()},
        "dialects": {api: {n: {"naive_ttft_p50_ms": r["naive"]["ttft_p50_ms"], "firsttoken_ttft_p50_ms": r["firsttoken"]["ttft_p50_ms"],
                               "naive_ttft_p95_ms": r["naive"]["ttft_p95_ms"], "firsttoken_ttft_p95_ms": r["firsttoken"]["ttft_p95_ms"],
                               "ttft_p95_reduction_pct": r["ttft_p95_reduction_pct"], "bytes_ratio": r["bytes_ratio"],
                               "prompt_tokens_ratio": r["prompt_tokens_ratio"], "failed": r["naive"]["failed"] + r["firsttoken"]["failed"]}
                           for n, r in by_name.items()} for api, by_name in dialects.items()},
        "steps": {n: {k: v for k, v in t.items() if k != "configs"} for n, t in steps.items()},
        **extra,
    }
    if len(dialects) > 1 and dialect_names:
        print("dialect column (p95 time to first token, naive → firsttoken, reduction; bytes up ×):")
        for api, by_name in dialects.items():
            print(f"  {api:18s} " + " · ".join(
                f"{n}: {r['naive']['ttft_p95_ms']} → {r['firsttoken']['ttft_p95_ms']} ms ({r['ttft_p95_reduction_pct']}%), "
                f"bytes ×{r['bytes_ratio']}" for n, r in by_name.items()))
    print(f"wrote {args.out}")
    print(json.dumps(line))


if __name__ == "__main__":
    main()
