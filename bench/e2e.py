"""Benchmark: the seed article's before/after on our own stack (issue 16, item 3).

    .venv/bin/python bench/e2e.py [--users 20] [--turns 4] [--runs 2] [--sweep 850000,1200000,1500000]

N simulated users (`bench/e2e_users.py`) hold a conversation each (a long system
prompt, then user turns with pasted code and JSON) against one real gateway process
(`python -m gateway`, built-in model). Each scenario runs twice, on a fresh gateway
each time: once with every user on the naive client (the official `openai` client),
once with every user on firsttoken's core. Users are a closed loop, as people are:
each starts at a random moment of the ramp, sends a turn, waits for the whole answer,
thinks, sends the next. Same seed, same conversations, same think times for both kinds.

Scenarios (`scenarios()`):

* `queueing`: the gateway's token flow control on, one tokens-per-minute bucket for all
  users together (`--gateway-tpm`: an upstream's org quota, whoever asks), small enough
  that the naive users queue (in the gateway's fair queue, then 429s past
  `--queue-wait-s`);
* `quota-<N>k` (`--sweep`): the queueing scenario at other limits, for the curve of
  time to first token against the quota (the reduction depends on where the quota sits
  against what each kind asks for: the report plots it);
* `uncontended`: no limit: nothing queues, so only the clients' own work and the
  upload differ (on loopback an upload costs next to nothing).

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
    {"naive_ttft_p95_ms", "firsttoken_ttft_p95_ms", "ttft_p95_reduction_pct",
     "naive_429", "firsttoken_429", … (the headline scenario), "scenarios": {name: {…}},
     "dialects": {api: {scenario: {"naive_ttft_p95_ms", "firsttoken_ttft_p95_ms",
                                   "ttft_p95_reduction_pct", …}}}}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from e2e_users import APIS, KINDS, Record, user_turn  # noqa: E402
from tests.servers import gateway  # noqa: E402

OUT = ROOT / "build" / "bench" / "e2e.json"

#: The built-in model's pace for every scenario: a short answer, streamed quickly, so
#: that what differs is the wait before it. Eight tokens a chunk: all users' streams are
#: parsed in this one process, and per-chunk work (which differs between the clients)
#: must not lag the event loop that times their first tokens.
SIM = "ttft_ms=300,tps=150,tokens=120,chunk=8"

def scenarios(tpm: int, burst_s: float, sweep: list[int]) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """name → (gateway flags, parameters as reported). `queueing` is the headline; each
    `--sweep` quota is the same scenario at another tokens-per-minute limit."""

    def queued(limit: int) -> tuple[list[str], dict[str, Any]]:
        flags = ["--gateway-tpm", str(limit), "--burst-s", str(burst_s), "--queue-wait-s", str(QUEUE_WAIT_S)]
        about = (f"one tokens-per-minute bucket for all users together ({limit:,} tpm, {burst_s:g} s burst), "
                 f"the gateway's fair queue up to {QUEUE_WAIT_S} s, then 429")
        return flags, {"gateway_tpm": limit, "burst_s": burst_s, "queue_wait_s": QUEUE_WAIT_S, "about": about}

    out = {"queueing": queued(tpm), "uncontended": ([], {"gateway_tpm": 0, "about": "no rate limit: nothing queues"})}
    for limit in sweep:
        out[f"quota-{limit // 1000}k"] = queued(limit)
    return out


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
    return {
        "turns": len(records),
        "failed": sum(not r.ok for r in records),
        "ttft_p50_ms": r1(percentile(ttft, 50)),
        "ttft_p95_ms": r1(percentile(ttft, 95)),
        # Each user's first turn prepares the whole system prompt (a cache miss) and sends
        # it in full; from the second on, the cache and the gateway reference apply.
        "ttft_p95_later_ms": r1(percentile([r.ttft_ms for r in records if r.ttft_ms is not None and r.turn > 0], 95)),
        "ttft_max_ms": r1(max(ttft) if ttft else None),
        "http_429": sum(r.http_429 for r in records),
        "requests": sum(r.attempts for r in records),
        "resends": sum(max(r.sends - 1, 0) for r in records),
        "bytes_up": sum(r.bytes_up for r in records),
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in records),
        "client_wait_ms": r1(sum(r.waited_ms for r in records)),
        "prepare_p50_ms": r1(percentile(prep, 50)),
    }


async def run_users(kind: str, url: str, scenario: str, users: int, turns: int, think_s: float, ramp_s: float,
                    seed: int, api: str = "chat_completions") -> list[Record]:
    """Every user of one kind through its conversation; their records, in order."""
    rng = random.Random(seed)
    plans = [(rng.uniform(0, ramp_s), [rng.expovariate(1 / think_s) for _ in range(turns)]) for _ in range(users)]
    clients = [KINDS[kind](url, i, SIM, api) for i in range(users)]
    records: list[Record] = []
    began = time.perf_counter()

    async def person(i: int) -> None:
        start, thinks = plans[i]
        await asyncio.sleep(start)
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
             api: str = "chat_completions") -> tuple[list[Record], float]:
    # Per-client limits off: the scenario's limit, if any, is the gateway's own.
    common = ["--rpm", "0", "--tpm", "0", "--log-level", "warning", "--no-precompressed"]
    with gateway(*common, *flags) as url:
        warm_up(url, api)
        began = time.perf_counter()
        records = asyncio.run(run_users(kind, url, scenario, args.users, args.turns, args.think_s, args.ramp_s,
                                        args.seed, api))
        return records, time.perf_counter() - began


def _median(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    middle = statistics.median(present)
    if isinstance(middle, float):
        return int(middle) if middle.is_integer() and all(isinstance(v, int) for v in present) else round(middle, 1)
    return middle


def reduction(naive: float | None, ours: float | None) -> float | None:
    if not naive or ours is None:
        return None
    return round(100 * (naive - ours) / naive, 1)


def run_scenario(name: str, flags: list[str], params: dict[str, Any], args: argparse.Namespace,
                 records: list[Record], api: str = "chat_completions") -> dict[str, Any]:
    """Scenario `name` with both kinds speaking `api`, `args.runs` times: per kind the
    medians of the runs' figures, and naive against firsttoken. Raw records join `records`."""
    params = {"users": args.users, "turns": args.turns, "think_s": args.think_s, "ramp_s": args.ramp_s,
              "sim": SIM, "seed": args.seed, "runs": args.runs, "api": api, **params}
    label = name if api == "chat_completions" else f"{name}@{api}"
    result: dict[str, Any] = {"params": params}
    per_run: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for run in range(args.runs):
        # Alternate which kind goes first: the machine's load drifts.
        for kind in (list(KINDS) if run % 2 == 0 else list(KINDS)[::-1]):
            rows, took = run_kind(kind, name, flags, args, api)
            for row in rows:
                row.run = run
            records += rows
            s = {**summarize(rows), "run_s": round(took, 1)}
            billed = sum((r.prompt_tokens or 0) + (r.completion_tokens or 0) for r in rows)
            s["billed_tokens_per_min"] = round(billed / took * 60)
            per_run[kind].append(s)
            print(f"{label:12s} {kind:10s} run {run}: ttft p50 {s['ttft_p50_ms']} ms, p95 {s['ttft_p95_ms']} ms "
                  f"(turns after the first: p95 {s['ttft_p95_later_ms']} ms), max {s['ttft_max_ms']} ms · "
                  f"429s {s['http_429']} · requests {s['requests']} (user re-sends {s['resends']}, failed "
                  f"{s['failed']}) · {s['bytes_up']:,} B up · {s['prompt_tokens']:,} prompt tokens · paced "
                  f"{s['client_wait_ms']} ms · prepare p50 {s['prepare_p50_ms']} ms · {took:.0f} s", flush=True)
    for kind, runs in per_run.items():
        result[kind] = {**{key: _median([r[key] for r in runs]) for key in runs[0]}, "runs": runs}
    naive, ours = result["naive"], result["firsttoken"]
    result["ttft_p95_reduction_pct"] = reduction(naive["ttft_p95_ms"], ours["ttft_p95_ms"])
    result["ttft_p50_reduction_pct"] = reduction(naive["ttft_p50_ms"], ours["ttft_p50_ms"])
    result["ttft_p95_later_reduction_pct"] = reduction(naive["ttft_p95_later_ms"], ours["ttft_p95_later_ms"])
    result["bytes_ratio"] = round(ours["bytes_up"] / naive["bytes_up"], 3) if naive["bytes_up"] else None
    result["prompt_tokens_ratio"] = round(ours["prompt_tokens"] / naive["prompt_tokens"], 3) if naive["prompt_tokens"] else None
    verdict = "faster" if (result["ttft_p95_reduction_pct"] or 0) > 0 else "NOT faster"
    print(f"{label:12s} firsttoken is {verdict} at p95: {result['ttft_p95_reduction_pct']}% "
          f"(p50 {result['ttft_p50_reduction_pct']}%, turns after the first {result['ttft_p95_later_reduction_pct']}%), bytes ×{result['bytes_ratio']}, "
          f"prompt tokens ×{result['prompt_tokens_ratio']}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--think-s", type=float, default=3.0, help="mean think time between turns (exponential)")
    parser.add_argument("--ramp-s", type=float, default=4.0, help="users start at random moments within this")
    parser.add_argument("--tpm", type=int, default=1_000_000, help="the queueing scenario's gateway tokens per minute")
    parser.add_argument("--burst-s", type=float, default=2.0, help="the queueing scenario's bucket, in seconds of its rate")
    parser.add_argument("--sweep", default="850000,1200000,1500000",
                        help="more queueing runs at these tpm limits (comma-separated; '' for none)")
    parser.add_argument("--scenarios", default="queueing,uncontended", help="which to run (sweep points are added)")
    parser.add_argument("--runs", type=int, default=2, help="runs per scenario and kind (figures: medians of runs)")
    parser.add_argument("--apis", default=",".join(APIS), help="the dialect column: which APIs (comma-separated)")
    parser.add_argument("--dialect-scenarios", default="queueing,uncontended",
                        help="the scenarios run again on each API of --apis ('' for none)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    sweep = [int(v) for v in args.sweep.split(",") if v]
    known = scenarios(args.tpm, args.burst_s, sweep)
    names = [s for s in args.scenarios.split(",") if s] + [n for n in known if n.startswith("quota-")]
    for name in names:
        if name not in known:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(known)}")
    apis = [a for a in args.apis.split(",") if a]
    dialect_names = [n for n in args.dialect_scenarios.split(",") if n]
    for api in apis:
        if api not in APIS:
            parser.error(f"unknown API {api!r}; known: {', '.join(APIS)}")
    for name in dialect_names:
        if name not in known:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(known)}")

    records: list[Record] = []
    results: dict[str, Any] = {}
    for name in names:
        flags, params = known[name]
        results[name] = run_scenario(name, flags, params, args, records)
    # The dialect column: the same scenarios on the other APIs (Chat Completions' row is
    # the runs above).
    dialects: dict[str, dict[str, Any]] = {"chat_completions": {n: results[n] for n in dialect_names if n in results}}
    for api in apis:
        if api == "chat_completions":
            continue
        dialects[api] = {}
        for name in dialect_names:
            flags, params = known[name]
            dialects[api][name] = run_scenario(name, flags, params, args, records, api)

    load = os.getloadavg()
    meta = {"machine": f"{platform.node()} · {os.cpu_count()} cores · {platform.platform()}",
            "python": platform.python_version(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "loadavg": [round(x, 2) for x in load]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**meta, "scenarios": results, "dialects": dialects,
                                    "records": [r.to_dict() for r in records]}, indent=1))

    head = results.get(HEADLINE) or results[names[0]]
    line = {
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
    }
    if len(dialects) > 1:
        print("dialect column (p95 time to first token, naive → firsttoken, reduction; bytes up ×):")
        for api, by_name in dialects.items():
            print(f"  {api:18s} " + " · ".join(
                f"{n}: {r['naive']['ttft_p95_ms']} → {r['firsttoken']['ttft_p95_ms']} ms ({r['ttft_p95_reduction_pct']}%), "
                f"bytes ×{r['bytes_ratio']}" for n, r in by_name.items()))
    print(f"wrote {args.out}")
    print(json.dumps(line))


if __name__ == "__main__":
    main()
