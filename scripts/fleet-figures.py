#!/usr/bin/env python3
"""Regenerates the figures of docs/fleet.md with `lagpilot sim --fleet`.

    scripts/fleet-figures.py [path/to/lagpilot]      # default build/release/cli/lagpilot

Runs the two worlds of docs/fleet.md (KEDA pods with one consumer thread each; lagpilot pools
plus KEDA on lagpilot_recommended_replicas) on a World Cup 98 day and a synthetic flash crowd,
with 24 and 64 partitions, all with the same arrivals (same seed, same --peak-load) and the same
lag SLO (the configs in docs/fleet/). Writes docs/fleet/table.md (the KPI tables: the two worlds, and KEDA's lagThreshold at 10, 100 and
1000) and
docs/fleet.svg (lag, replicas and workers over time, 64 partitions). Standard library only.
"""
import csv
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release/cli/lagpilot")
PEAK_LOAD = "4"  # the peak is 4x one pod's capacity at 16 workers
SEED = "1"
TRACES = [
    ("World Cup 98 semi-final day (12 h)", "traces/eval/train/wc98_semifinal.csv"),
    ("synthetic flash crowd (4 h)", "traces/eval/train/flash_crowd.csv"),
]
WORLDS = [
    ("KEDA pods, one consumer thread each", "docs/fleet/keda-one-thread.json", "static:1"),
    ("lagpilot pools + KEDA on recommended replicas", "docs/fleet/lagpilot-pools.json", "hybrid"),
]
PARTITIONS = ["24", "64"]
COLORS = ["#cf222e", "#0969da"]


def run(trace, config, policy, partitions, extra=()):
    cmd = [BIN, "sim", "--fleet", "--trace", trace, "--config", config, "--policy", policy,
           "--partitions", partitions, "--peak-load", PEAK_LOAD, "--seed", SEED, *extra,
           "--json", "-", "--csv", "/dev/stderr", "--threads", "1"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    # stdout: the table, then the JSON; stderr: log lines and the CSV.
    report = json.loads(p.stdout[p.stdout.index("{"):])
    rows = [r for r in csv.reader(io.StringIO(p.stderr)) if len(r) == 9 and r[0] != "run"]
    series = [(float(r[1]), int(r[4]), int(r[6]), int(r[5]), r[8] == "1") for r in rows]
    return cmd, report["runs"][0], series


def svg(results):
    w, col_w, row_h, left, top = 1000, 470, 150, 60, 40
    rows = [("group lag (messages)", 1), ("replicas (pods)", 2), ("workers (sum of pools)", 3)]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{top + 3 * (row_h + 40) + 40}" '
           'font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>']
    for c, (tname, _) in enumerate(TRACES):
        x0 = left + c * (col_w + 20)
        out.append(f'<text x="{x0}" y="20" font-size="13" font-weight="bold">{tname}, 64 partitions</text>')
        runs = [results[(tname, world, "64")] for world, _, _ in WORLDS]
        t_end = max(s[-1][0] for _, _, s in runs)
        for r, (label, idx) in enumerate(rows):
            y0 = top + r * (row_h + 40)
            vmax = max(max(p[idx] for p in s) for _, _, s in runs) or 1
            out.append(f'<rect x="{x0}" y="{y0}" width="{col_w - left + 40}" height="{row_h}" fill="none" stroke="#d0d7de"/>')
            out.append(f'<text x="{x0}" y="{y0 - 4}">{label}</text>')
            out.append(f'<text x="{x0 - 4}" y="{y0 + 10}" text-anchor="end">{vmax:,}</text>')
            out.append(f'<text x="{x0 - 4}" y="{y0 + row_h}" text-anchor="end">0</text>')
            pw = col_w - left + 40
            for k, (_, _, s) in enumerate(runs):
                step = max(1, len(s) // 400)
                pts = " ".join(f"{x0 + p[0] / t_end * pw:.1f},{y0 + row_h - p[idx] / vmax * row_h:.1f}"
                               for p in s[::step])
                out.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[k]}" stroke-width="1.2"/>')
            if r == 2:
                out.append(f'<text x="{x0}" y="{y0 + row_h + 14}">0</text>')
                out.append(f'<text x="{x0 + pw}" y="{y0 + row_h + 14}" text-anchor="end">{t_end / 3600:.0f} h (simulated)</text>')
    ly = top + 3 * (row_h + 40) + 10
    for k, (world, _, _) in enumerate(WORLDS):
        out.append(f'<rect x="{left + k * 420}" y="{ly}" width="12" height="12" fill="{COLORS[k]}"/>')
        out.append(f'<text x="{left + k * 420 + 18}" y="{ly + 10}">{world}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    results, lines = {}, []
    lines.append("| trace | partitions | world | s above SLO | p99 lag | max lag | worker-s | "
                 "replica-s | mean pods | max pods | rebalances | s rebalancing | final lag |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    commands = []
    for tname, trace in TRACES:
        for partitions in PARTITIONS:
            for world, config, policy in WORLDS:
                cmd, r, series = run(trace, config, policy, partitions)
                commands.append(" ".join(["lagpilot"] + cmd[1:-6]))
                results[(tname, world, partitions)] = (cmd, r, series)
                k = r["kpis"]
                lines.append(
                    f"| {tname} | {partitions} | {world} | {k['seconds_above_slo']:,.0f} | "
                    f"{k['p99_lag']:,} | {k['max_lag']:,} | {k['worker_seconds']:,.0f} | "
                    f"{k['replica_seconds']:,.0f} | {k['mean_replicas']:.2f} | {k['max_replicas']} | "
                    f"{k['rebalances']} | {k['rebalance_seconds']:,.0f} | {k['final_lag']:,} |")
                print(lines[-1], flush=True)
    # KEDA's lagThreshold: its own default (10), 100, and the 1000 of the table above.
    sweep = ["| trace | lagThreshold | s above SLO | p99 lag | worker-s | replica-s | mean pods | "
             "rebalances | s rebalancing |", "|---|---|---|---|---|---|---|---|---|"]
    _, keda_config, keda_policy = WORLDS[0]
    for tname, trace in TRACES:
        for threshold in ["10", "100", "1000"]:
            cmd, r, _ = run(trace, keda_config, keda_policy, "64",
                            ["--replica-params", "lag_threshold=" + threshold])
            commands.append(" ".join(["lagpilot"] + cmd[1:-6]))
            k = r["kpis"]
            sweep.append(f"| {tname} | {threshold} | {k['seconds_above_slo']:,.0f} | "
                         f"{k['p99_lag']:,} | {k['worker_seconds']:,.0f} | "
                         f"{k['replica_seconds']:,.0f} | {k['mean_replicas']:.2f} | "
                         f"{k['rebalances']} | {k['rebalance_seconds']:,.0f} |")
            print(sweep[-1], flush=True)
    with open(os.path.join(ROOT, "docs/fleet/table.md"), "w") as f:
        f.write("<!-- generated by scripts/fleet-figures.py; do not edit -->\n")
        f.write("\n".join(lines) + "\n\nKEDA pods with one thread each, 64 partitions, by "
                "lagThreshold:\n\n" + "\n".join(sweep) + "\n\nCommands:\n\n```\n" +
                "\n".join(commands) + "\n```\n")
    with open(os.path.join(ROOT, "docs/fleet.svg"), "w") as f:
        f.write(svg(results))


if __name__ == "__main__":
    main()
