"""`make report`: build/report/index.html, a page a person opens, with PNG plots (issue 16, item 4).

    .venv/bin/python bench/report.py [--quick] [--out build/report]

What it shows, and where each figure comes from:

* chunk → paint per renderer, as CDFs: build/bench/native.json, written by
  `make bench-native` (`{"renderers": {name: {"50": [ms…], "500": [ms…]}}, "machine",
  "date"}`). Not measured here: if the file is absent, the report says so;
* time to first token of the naive and the firsttoken client per scenario:
  build/bench/e2e.json (`make bench-e2e`); absent, a short run is made now
  (`bench/e2e.py` with few users, said on the page);
* the boot timeline as a waterfall, from the `ready` event's boot record (a first visit
  and a reload, in Chromium, measured now: bench/report_page.py);
* a heatmap of p95 time to first token and time to first paint of a reply, by network
  profile × device profile (measured now: bench/report_page.py);
* a table of every figure, with the machine, the date and the load average it was
  measured at.

`--quick` (the smoke test's): one reply per heatmap cell and, when e2e.json is absent, a
two-user run. A gateway started with `--report` (`make run REPORT=1`) serves the last report at `/report/`
(gateway/report.py).
The page has no inline script or style, so it keeps the gateway's CSP.

Prints what it wrote, then LAST one JSON line: {"report", "plots", "figures", …}.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from report_page import DEVICES, NETWORKS, measure_page, p95  # noqa: E402

BENCH = ROOT / "build" / "bench"
OUT = ROOT / "build" / "report"
KIND_COLOURS = {"naive": "#b0413e", "firsttoken": "#2f6f9f"}
CSS = """body { font: 15px/1.5 system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
h1, h2 { line-height: 1.2; } figure { margin: 1.5rem 0; } img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption, .note { color: #555; } table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid #e3e3e3; padding: .25rem .5rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } .missing { color: #b0413e; font-weight: 600; }
code { font-size: 90%; }
"""


def here() -> dict[str, Any]:
    """This machine, now, and its load: stamped on what is measured in this run."""
    return {"machine": f"{platform.node()} · {os.cpu_count()} cores · {platform.platform()}",
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


# ---- inputs --------------------------------------------------------------------------------


def load_e2e(path: Path, quick: bool) -> tuple[dict[str, Any], str]:
    """The scenario runner's results, and where they came from."""
    if path.is_file():
        return json.loads(path.read_text()), f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} (make bench-e2e)"
    users, turns = (2, 2) if quick else (6, 3)
    argv = [sys.executable, str(ROOT / "bench" / "e2e.py"), "--users", str(users), "--turns", str(turns),
            "--think-s", "0.5", "--ramp-s", "0.5", "--runs", "1", "--sweep", "", "--out", str(path)]
    subprocess.run(argv, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT / 'py'}{os.pathsep}{ROOT}"})
    return json.loads(path.read_text()), f"a short run made by make report ({users} users, {turns} turns: not the full benchmark)"


def load_native(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return data if isinstance(data.get("renderers"), dict) else None


# ---- plots ---------------------------------------------------------------------------------


def _save(fig: Any, out: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def plot_native_cdf(native: dict[str, Any], out: Path) -> str:
    rates = sorted({rate for runs in native["renderers"].values() for rate in runs}, key=float)
    fig, axes = plt.subplots(1, len(rates), figsize=(5.5 * len(rates), 4), squeeze=False)
    for ax, rate in zip(axes[0], rates):
        for name, runs in sorted(native["renderers"].items()):
            values = sorted(v for v in runs.get(rate, []) if v is not None)
            if values:
                ax.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post", label=name)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("chunk → paint (ms, log)")
        ax.set_ylabel("fraction of chunks")
        ax.set_title(f"{rate} tokens/s")
        ax.grid(alpha=.3)
        ax.legend(fontsize=8)
    return _save(fig, out, "chunk_paint_cdf.png")


def plot_ttft(e2e: dict[str, Any], out: Path, name: str = "ttft.png") -> str:
    scenarios = list(e2e["scenarios"])
    fig, ax = plt.subplots(figsize=(max(6, 2.4 * len(scenarios)), 4.2))
    width = .2
    for k, kind in enumerate(("naive", "firsttoken")):
        for j, stat in enumerate(("ttft_p50_ms", "ttft_p95_ms")):
            xs = [i + (2 * k + j - 1.5) * width for i in range(len(scenarios))]
            ys = [e2e["scenarios"][s][kind][stat] or 0 for s in scenarios]
            bars = ax.bar(xs, ys, width, color=KIND_COLOURS[kind], alpha=.55 if j == 0 else 1.0,
                          label=f"{kind} {'p50' if j == 0 else 'p95'}")
            ax.bar_label(bars, labels=[f"{y / 1000:.1f}s" for y in ys], fontsize=7)
    labels = []
    for s in scenarios:
        params = e2e["scenarios"][s]["params"]
        quota = f"{params['gateway_tpm'] / 1e6:g}M tpm" if params.get("gateway_tpm") else "no limit"
        cut = e2e["scenarios"][s].get("ttft_p95_reduction_pct")
        labels.append(f"{s}\n{quota}\np95 {'−' if (cut or 0) >= 0 else '+'}{abs(cut or 0):g}%")
    ax.set_xticks(range(len(scenarios)), labels, fontsize=8)
    ax.set_ylabel("time to first token (ms)")
    first = e2e["scenarios"][scenarios[0]]["params"]
    ax.set_title(f"Time to first token, {first['users']} users × {first['turns']} turns on one gateway")
    ax.legend(fontsize=8, ncols=2)
    ax.grid(axis="y", alpha=.3)
    return _save(fig, out, name)


def plot_quota_sweep(e2e: dict[str, Any], out: Path) -> str | None:
    points = sorted((r["params"]["gateway_tpm"], r) for r in e2e["scenarios"].values() if r["params"].get("gateway_tpm"))
    if len(points) < 2:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for kind in ("naive", "firsttoken"):
        xs = [tpm / 1e6 for tpm, _ in points]
        ax.plot(xs, [r[kind]["ttft_p95_ms"] for _, r in points], "o-", color=KIND_COLOURS[kind], label=f"{kind} p95")
        ax.plot(xs, [r[kind]["ttft_p50_ms"] for _, r in points], "o--", color=KIND_COLOURS[kind], alpha=.55, label=f"{kind} p50")
    ax.set_xlabel("gateway quota (million tokens per minute)")
    ax.set_ylabel("time to first token (ms)")
    ax.set_title("Time to first token against the quota")
    ax.grid(alpha=.3)
    ax.legend(fontsize=8)
    return _save(fig, out, "ttft_quota.png")


def plot_curve(e2e: dict[str, Any], out: Path) -> str | None:
    """The quota × burst curve (issue 45): per link, p95 time to first token of each
    kind against the quota, one line per burst, the median of the runs with their
    min–max as error bars, so that a point's swing from run to run is seen beside the
    swing from point to point."""
    curve = e2e.get("curve") or {}
    if not curve:
        return None
    fig, axes = plt.subplots(1, len(curve), figsize=(6.8 * len(curve), 4.4), squeeze=False)
    styles = ["o-", "s--", "^:", "d-."]
    for ax, (profile, points) in zip(axes[0], curve.items()):
        bursts = sorted({p["burst_s"] for p in points})
        for b, burst in enumerate(bursts):
            row = sorted((p for p in points if p["burst_s"] == burst), key=lambda p: p["gateway_tpm"])
            xs = [p["gateway_tpm"] / 1e6 for p in row]
            for kind in ("naive", "firsttoken"):
                stats = [p[kind]["ttft_p95_ms"] for p in row]
                mids = [s["median"] or 0 for s in stats]
                low = [m - (s["min"] if s["min"] is not None else m) for m, s in zip(mids, stats)]
                high = [(s["max"] if s["max"] is not None else m) - m for m, s in zip(mids, stats)]
                ax.errorbar(xs, mids, yerr=[low, high], fmt=styles[b % len(styles)], capsize=3,
                            color=KIND_COLOURS[kind], label=f"{kind}, {burst:g} s burst")
        ax.set_xlabel("gateway quota (million tokens per minute)")
        ax.set_ylabel("p95 time to first token (ms)")
        runs = points[0]["runs"] if points else 0
        ax.set_title(f"{profile}: median of {runs} runs, min–max bars", fontsize=10)
        ax.grid(alpha=.3)
        ax.legend(fontsize=7)
    return _save(fig, out, "ttft_curve.png")


def plot_steps(e2e: dict[str, Any], out: Path) -> str | None:
    """Each step's share of firsttoken's time to first token (the article's table):
    ms taken off by each step alone and added in turn, per scenario, and the cold turn's."""
    steps = e2e.get("steps") or {}
    if not steps:
        return None
    names = list(steps)
    fig, axes = plt.subplots(1, len(names), figsize=(6.2 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        table = steps[name]
        keys = list(table["alone"])
        width = .2
        series = [("alone", table["alone"], 1.0), ("added in turn", table["added"], .7),
                  ("cold turn, alone", table["cold_alone"], .45), ("cold turn, added", table["cold_added"], .25)]
        for j, (label, values, alpha) in enumerate(series):
            xs = [i + (j - 1.5) * width for i in range(len(keys))]
            ys = [values.get(k) or 0 for k in keys]
            bars = ax.bar(xs, ys, width, color=KIND_COLOURS["firsttoken"], alpha=alpha, label=label)
            ax.bar_label(bars, labels=[f"{y:.0f}" for y in ys], fontsize=6)
        ax.axhline(0, color="#444", linewidth=.8)
        ax.set_xticks(range(len(keys)), keys, fontsize=8)
        metric = "p95" if table["metric"] == "ttft_p95_ms" else "p50"
        ax.set_ylabel(f"ms of {metric} time to first token taken off")
        ax.set_title(f"{name}: none {table['none_ms']} → all {table['all_ms']} ms (naive {table['naive_ms']})", fontsize=9)
        ax.grid(axis="y", alpha=.3)
        ax.legend(fontsize=7)
    return _save(fig, out, "steps.png")


# The boot record's milestones (js/boot/timeline.js: ms after the page began starting
# Python), with what happened up to each.
MILESTONES = [("worker_ms", "worker started"), ("assets_ms", "runtime assets arrived"), ("snapshot_ms", "snapshot read"),
              ("wasm_ms", "wasm compiled"), ("interpreter_ms", "interpreter up"), ("loader_ms", "loader done"),
              ("entry_ms", "py/boot.py starts"), ("import_end_ms", "firsttoken imported"), ("ready_ms", "ready (hello answered)")]


def milestones(boot: dict[str, Any]) -> list[tuple[str, float]]:
    """(what, when) in time order; import_ms is a duration from entry_ms."""
    values = dict(boot)
    if isinstance(boot.get("entry_ms"), (int, float)) and isinstance(boot.get("import_ms"), (int, float)):
        values["import_end_ms"] = boot["entry_ms"] + boot["import_ms"]
    found = [(label, float(values[key])) for key, label in MILESTONES if isinstance(values.get(key), (int, float))]
    return sorted(found, key=lambda m: m[1])


def plot_boot(visits: list[dict[str, Any]], out: Path) -> str:
    fig, axes = plt.subplots(len(visits), 1, figsize=(8, 1.2 + 0.42 * len(MILESTONES) * len(visits)), squeeze=False)
    for ax, visit in zip(axes[:, 0], visits):
        stages = milestones(visit)
        previous = 0.0
        labels = []
        for i, (label, at) in enumerate(stages):
            ax.barh(i, max(at - previous, 1), left=previous, color="#2f6f9f" if at > previous else "#999")
            ax.text(at + 8, i, f"{at:.0f} ms (+{at - previous:.0f})", va="center", fontsize=7)
            labels.append(label)
            previous = max(previous, at)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, previous * 1.25 + 10)
        ax.set_xlabel("ms after the page began starting Python")
        ax.set_title(f"Boot, {visit['visit']}: snapshot {visit.get('snapshot', '?')}"
                     f"{' from ' + str(visit['snapshot_from']) if visit.get('snapshot_from') else ''}", fontsize=10)
        ax.grid(axis="x", alpha=.3)
    return _save(fig, out, "boot_waterfall.png")


def plot_heatmap(grid: list[dict[str, Any]], out: Path) -> str:
    devices, networks = list(DEVICES), list(NETWORKS)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for ax, (key, title) in zip(axes, (("ttft_ms", "p95 time to first token (ms)"), ("first_paint_ms", "p95 time to first paint (ms)"))):
        cells = {(r["device"], r["network"]): p95(r[key]) for r in grid}
        medians = {(r["device"], r["network"]): statistics.median(r[key]) for r in grid}
        matrix = [[cells.get((d, n), float("nan")) for n in networks] for d in devices]
        image = ax.imshow(matrix, cmap="viridis_r", aspect="auto")
        middle = (min(min(r) for r in matrix) + max(max(r) for r in matrix)) / 2
        for i, row in enumerate(matrix):
            for j, value in enumerate(row):
                # The median beside it: p95 of a few replies on a shared machine is mostly its worst one.
                ax.text(j, i, f"{value:.0f}\nmedian {medians[(devices[i], networks[j])]:.0f}", ha="center", va="center",
                        fontsize=9, fontweight="bold", color="white" if value > middle else "black")
        ax.set_xticks(range(len(networks)), [f"{n}\n{NETWORKS[n][0]:g} Mbps, {NETWORKS[n][1]} ms" for n in networks], fontsize=8)
        ax.set_yticks(range(len(devices)), devices, fontsize=8)
        ax.set_title(title, fontsize=10)
        fig.colorbar(image, ax=ax, shrink=.8)
    return _save(fig, out, "heatmap.png")


# ---- the table -------------------------------------------------------------------------------


def figures(e2e: dict[str, Any], native: dict[str, Any] | None, page: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure the report shows: (what, value, unit) and when and where it was measured."""
    rows: list[dict[str, Any]] = []

    def add(source: dict[str, Any], bench: str, what: str, value: Any, unit: str) -> None:
        load = source.get("loadavg")
        rows.append({"bench": bench, "figure": what, "value": value, "unit": unit, "date": source.get("date"),
                     "loadavg": " ".join(f"{x:g}" for x in load) if isinstance(load, list) else (load or "not recorded"),
                     "machine": source.get("machine") or "not recorded"})

    for name, result in e2e["scenarios"].items():
        for kind in ("naive", "firsttoken"):
            r = result[kind]
            for key, unit in (("ttft_p50_ms", "ms"), ("ttft_p95_ms", "ms"), ("ttft_p95_later_ms", "ms"), ("http_429", "responses"), ("requests", "requests"),
                              ("bytes_up", "bytes"), ("prompt_tokens", "tokens"), ("failed", "turns")):
                add(e2e, "e2e", f"{name} · {kind} · {key}", r[key], unit)
        add(e2e, "e2e", f"{name} · TTFT p95 reduction", result.get("ttft_p95_reduction_pct"), "%")
    for api, by_name in by_api(e2e):
        for name, result in by_name.items():
            for row in (result.get("peers") or {}).values():
                add(e2e, "e2e", f"{name} · {api} · {row['label']} · ttft_p50_ms", row["ttft_p50_ms"], "ms")
                add(e2e, "e2e", f"{name} · {api} · {row['label']} · ttft_p95_ms", row["ttft_p95_ms"], "ms")
                add(e2e, "e2e", f"{name} · {api} · firsttoken ÷ {row['label']} · p50", row["ttft_p50_ratio"], "×")
    for profile, points in (e2e.get("curve") or {}).items():
        for point in points:
            where = f"curve · {profile} · {point['gateway_tpm']:,} tpm · {point['burst_s']:g} s burst"
            for kind in ("naive", "firsttoken"):
                s = point[kind]["ttft_p95_ms"]
                add(e2e, "e2e", f"{where} · {kind} · p95 median (min–max)", f"{s['median']} ({s['min']}–{s['max']})", "ms")
            cut = point["ttft_p95_reduction_pct"]
            add(e2e, "e2e", f"{where} · p95 reduction median (min–max)", f"{cut['median']} ({cut['min']}–{cut['max']})", "%")
    for name, table in (e2e.get("steps") or {}).items():
        for step in table["alone"]:
            add(e2e, "e2e", f"{name} · step {step} · ms off alone", table["alone"][step], "ms")
            add(e2e, "e2e", f"{name} · step {step} · ms off added", table["added"][step], "ms")
    for api, by_name in (e2e.get("dialects") or {}).items():
        for name, result in by_name.items():
            for kind in ("naive", "firsttoken"):
                add(e2e, "e2e", f"{name} · {api} · {kind} · ttft_p95_ms", result[kind]["ttft_p95_ms"], "ms")
            add(e2e, "e2e", f"{name} · {api} · TTFT p95 reduction", result.get("ttft_p95_reduction_pct"), "%")
    if native is not None:
        for name, runs in sorted(native["renderers"].items()):
            for rate, values in sorted(runs.items(), key=lambda kv: float(kv[0])):
                present = sorted(v for v in values if v is not None)
                if present:
                    add(native, "native", f"{name} · {rate} tok/s · chunk→paint p50", round(statistics.median(present), 1), "ms")
                    add(native, "native", f"{name} · {rate} tok/s · chunk→paint p95", round(p95(present), 1), "ms")
                    add(native, "native", f"{name} · {rate} tok/s · chunk→paint max", round(present[-1], 1), "ms")
    for visit in page["boot"]:
        for label, at in milestones(visit):
            add(page, "boot", f"{visit['visit']} · {label}", round(at), "ms")
    for row in page["grid"]:
        add(page, "page", f"{row['device']} · {row['network']} · TTFT median", round(statistics.median(row["ttft_ms"])), "ms")
        add(page, "page", f"{row['device']} · {row['network']} · TTFT p95", round(p95(row["ttft_ms"])), "ms")
        add(page, "page", f"{row['device']} · {row['network']} · first paint p95", round(p95(row["first_paint_ms"])), "ms")
    return rows


# ---- the page --------------------------------------------------------------------------------


def by_api(e2e: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every scenario run, by API: Chat Completions' are the main scenarios (all of them,
    not only those the dialect column repeats), the others the dialect column's."""
    return [("chat_completions", e2e["scenarios"]),
            *((api, b) for api, b in (e2e.get("dialects") or {}).items() if api != "chat_completions")]


def _figure(src: str | None, alt: str, caption: str) -> str:
    if src is None:
        return f'<p class="missing">{html.escape(caption)}</p>'
    return (f'<figure><img src="{html.escape(src)}" alt="{html.escape(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _e2e_section(e2e: dict[str, Any], origin: str, plots: dict[str, str | None]) -> str:
    lines = []
    for name, result in e2e["scenarios"].items():
        p = result["params"]
        cut = result.get("ttft_p95_reduction_pct")
        verdict = (f"firsttoken's p95 is {cut:g}% lower" if cut is not None and cut > 0
                   else f"<strong>firsttoken is not faster here</strong> (p95 {'+' if cut is not None else ''}{-(cut or 0):g}%)")
        later = result.get("ttft_p95_later_reduction_pct")
        why = ""
        if cut is not None and cut <= 10:
            why = (" Why: with no queue to shorten, what firsttoken saves (tokens, bytes) buys little time on loopback,"
                   " while its preparation is on the critical path: each user's first turn compresses and counts the"
                   " whole system prompt (a cache miss), and here all simulated users share one process on a shared"
                   " 2-core machine, so their first preparations wait for each other (on phones each would pay its"
                   f" own, in parallel). Turns after the first: p95 {'−' if (later or 0) >= 0 else '+'}{abs(later or 0):g}%.")
        lines.append(
            f"<li><strong>{html.escape(name)}</strong>: {html.escape(p['about'])}; {p['users']} users × {p['turns']} turns, "
            f"think time {p['think_s']:g} s, model <code>{html.escape(p['sim'])}</code>, {p.get('runs', 1)} run(s) per kind "
            f"(medians). {verdict}; turns after the first: p95 reduction {later}%; 429s "
            f"{result['naive']['http_429']} → {result['firsttoken']['http_429']}; bytes ×{result.get('bytes_ratio')}; "
            f"prompt tokens ×{result.get('prompt_tokens_ratio')}.{why}</li>")
    rows = []
    for api, by_name in (e2e.get("dialects") or {}).items():
        for name, result in by_name.items():
            rows.append(f"<tr><td>{html.escape(api)}</td><td>{html.escape(name)}</td>"
                        f"<td>{result['naive']['ttft_p95_ms']}</td><td>{result['firsttoken']['ttft_p95_ms']}</td>"
                        f"<td>{result.get('ttft_p95_reduction_pct')}%</td><td>×{result.get('bytes_ratio')}</td></tr>")
    table = ("<table><caption>The dialect column: each scenario with both clients speaking each API (the naive "
             "client is that API's official client)</caption><tr><th>API</th><th>scenario</th><th>naive p95 ms</th>"
             f"<th>firsttoken p95 ms</th><th>p95 reduction</th><th>bytes up</th></tr>{''.join(rows)}</table>") if rows else ""
    peer_rows = []
    for api, by_name in by_api(e2e):
        for name, result in by_name.items():
            for label, r in [("official SDK as is", result["naive"]),
                             *((row["label"], row) for row in (result.get("peers") or {}).values()),
                             ("firsttoken", result["firsttoken"])]:
                ours = result["firsttoken"]["ttft_p50_ms"]
                peer_rows.append(f"<tr><td>{html.escape(api)}</td><td>{html.escape(name)}</td><td>{html.escape(label)}</td>"
                                 f"<td>{r['ttft_p50_ms']}</td><td>{r['ttft_p95_ms']}</td><td>{r['ttft_p50_cold_ms']}</td>"
                                 f"<td>{r['bytes_up']:,}</td><td>×{round(ours / r['ttft_p50_ms'], 3) if ours and r['ttft_p50_ms'] else None}</td></tr>")
    peers_table = ("<table><caption>The article's table with its caveats as rows: the official client as is, and with "
                   "each change an app could make to it (gzipped bodies, a connection opened ahead, Messages' "
                   "cache_control), beside firsttoken</caption><tr><th>API</th><th>scenario</th><th>client</th>"
                   "<th>p50 ms</th><th>p95 ms</th><th>first turn p50 ms</th><th>bytes up</th><th>firsttoken p50 ×</th></tr>"
                   f"{''.join(peer_rows)}</table>") if any(r.get("peers") for _, b in by_api(e2e) for r in b.values()) else ""
    step_rows = []
    for name, steps in (e2e.get("steps") or {}).items():
        metric = "p95" if steps["metric"] == "ttft_p95_ms" else "p50"
        for step in steps["alone"]:
            step_rows.append(f"<tr><td>{html.escape(name)} ({metric})</td><td>{html.escape(step)}</td>"
                             f"<td>{steps['alone'][step]}</td><td>{steps['added'][step]}</td>"
                             f"<td>{steps['cold_alone'][step]}</td><td>{steps['cold_added'][step]}</td></tr>")
    steps_table = ("<table><caption>The article's table, step by step: ms of time to first token each step takes "
                   "off, alone (from firsttoken with no step) and added in turn, and on the cold turn (the first after "
                   "the app opens, p50)</caption><tr><th>scenario</th><th>step</th><th>alone</th><th>added</th>"
                   f"<th>cold, alone</th><th>cold, added</th></tr>{''.join(step_rows)}</table>"
                   + _figure(plots.get("steps"), "bar chart of each step's share",
                             "Each step's share of firsttoken's time to first token.")) if step_rows else ""
    return (f"<p class=\"note\">Source: {html.escape(origin)}. Time to first token runs from the user's Send to the first "
            "content token, with the client's own waiting, retries and the user's re-sends of a failed turn.</p>"
            f"<ul>{''.join(lines)}</ul>{peers_table}{table}{steps_table}"
            + _figure(plots["ttft"], "bar chart of time to first token per scenario and client",
                      "p50 (light) and p95 (dark) time to first token, naive client against firsttoken, per scenario.")
            + (_figure(plots["ttft_quota"], "time to first token against the gateway quota",
                       "The same scenario at several quotas: the reduction depends on where the quota sits against what each client asks for.")
               if plots.get("ttft_quota") else "")
            + (_figure(plots["ttft_curve"], "p95 time to first token against the quota, per burst and link, with run-to-run spread",
                       "The quota × burst curve: the median of several runs per point, min–max as bars, at each link.")
               if plots.get("ttft_curve") else ""))


def _value(value: Any) -> str:
    return f"{value:,}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def write_html(out: Path, e2e: dict[str, Any], e2e_origin: str, native: dict[str, Any] | None, page: dict[str, Any],
               plots: dict[str, str | None], rows: list[dict[str, Any]]) -> Path:
    table = "".join(
        f"<tr><td>{html.escape(r['bench'])}</td><td>{html.escape(r['figure'])}</td>"
        f"<td class=\"num\">{html.escape(_value(r['value']))}</td>"
        f"<td>{html.escape(r['unit'])}</td><td>{html.escape(str(r['date']))}</td><td>{html.escape(str(r['loadavg']))}</td>"
        f"<td>{html.escape(str(r['machine']))}</td></tr>" for r in rows)
    native_note = ("Not measured: build/bench/native.json is absent. Run <code>make bench-native</code>, then "
                   "<code>make report</code> again." if native is None else
                   f"From build/bench/native.json (make bench-native), {html.escape(str(native.get('date')))}, "
                   f"{html.escape(str(native.get('machine')))}.")
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>firsttoken benchmark report</title><link rel="stylesheet" href="report.css"></head>
<body>
<h1>firsttoken benchmark report</h1>
<p class="note">Made by <code>make report</code> on {html.escape(page['machine'])}, {html.escape(page['date'])},
load average {html.escape(' '.join(f'{x:g}' for x in page['loadavg']))}; Chromium {html.escape(page['chromium'])}.
This machine is shared and noisy: compare kinds within one run, not runs with each other.</p>

<h2>Time to first token: naive client against firsttoken</h2>
{_e2e_section(e2e, e2e_origin, plots)}

<h2>Chunk → paint per renderer</h2>
<p class="note">{native_note}</p>
{_figure(plots['chunk_paint_cdf'], 'CDF of chunk to paint latency per renderer', 'Share of chunks painted within a given time after the gateway sent them, per renderer and rate.') if native else ''}

<h2>Boot timeline</h2>
<p class="note">The <code>ready</code> event's boot record (bridge/PROTOCOL.md, "Boot"), placed on the page's timeline by
js/boot/timeline.js: a first visit in a fresh profile, then a reload. Each bar runs from the previous milestone to the next.</p>
{_figure(plots['boot'], 'waterfall of the boot stages', 'Where the time to a ready Python goes.')}

<h2>Replies by network and device</h2>
<p class="note">After boot, {page['prompts_per_cell']} prompt(s) with pasted code per cell; the model answers
<code>{html.escape(page['sim'])}</code>. Networks are shaped by a proxy in front of the gateway (bench/shaper.py; the
worker's requests escape DevTools emulation), upload at the download rate. The Pixel 7 profile throttles the page's
main thread 4× (Chromium cannot throttle the worker). Time to first token: Send → first token in the page;
first paint: Send → the answer's first paint.</p>
{_figure(plots['heatmap'], 'heatmap of p95 time to first token and first paint', 'p95 (and median) per network profile × device profile. With a few replies per cell on a loaded machine, p95 is about the worst reply; the median is the steadier figure.')}

<h2>Every figure</h2>
<table><thead><tr><th>bench</th><th>figure</th><th>value</th><th>unit</th><th>measured</th><th>load average</th><th>machine</th></tr></thead>
<tbody>{table}</tbody></table>
</body></html>
"""
    (out / "report.css").write_text(CSS)
    index = out / "index.html"
    index.write_text(body)
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one reply per heatmap cell; a two-user e2e run if none")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--e2e", type=Path, default=BENCH / "e2e.json")
    parser.add_argument("--native", type=Path, default=BENCH / "native.json")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.png"):
        old.unlink()

    e2e, e2e_origin = load_e2e(args.e2e, args.quick)
    native = load_native(args.native)
    page = {**here(), **measure_page(1 if args.quick else 5)}
    page["loadavg"] = here()["loadavg"]  # at the end of what it measured

    plots: dict[str, str | None] = {
        "ttft": plot_ttft(e2e, args.out),
        "ttft_quota": plot_quota_sweep(e2e, args.out),
        "ttft_curve": plot_curve(e2e, args.out),
        "steps": plot_steps(e2e, args.out),
        "chunk_paint_cdf": plot_native_cdf(native, args.out) if native else None,
        "boot": plot_boot(page["boot"], args.out),
        "heatmap": plot_heatmap(page["grid"], args.out),
    }
    rows = figures(e2e, native, page)
    index = write_html(args.out, e2e, e2e_origin, native, page, plots, rows)
    (args.out / "report.json").write_text(json.dumps({"e2e_source": e2e_origin, "page": page, "figures": rows}, indent=1))
    print(f"wrote {index} ({len(rows)} figures); a gateway started with --report (make run REPORT=1) serves it at /report/")
    print(json.dumps({"report": str(index), "plots": sorted(p for p in plots.values() if p), "figures": len(rows),
                      "native_measured": native is not None, "e2e_source": e2e_origin}))


if __name__ == "__main__":
    main()
