#!/usr/bin/env python3
"""Draws docs/pacing.svg: "measure the consumer, then pace the producer", live on the embedded
broker. Python standard library only.

    scripts/pacing-figure.py [--lagpilot build/release/cli/lagpilot] [--out docs/pacing.svg]

Two runs of the same loop, each on a fresh embedded broker (`lagpilot broker`):
  - a consumer (`lagpilot run`, 4 workers, the synthetic 5 ms handler: about 750 messages/s);
  - a producer (`lagpilot produce --rate 3000`) for PRODUCE_SECONDS, once on its own and once
    with `--pacing-url` at the consumer's GET /v1/pacing.
The consumer's JSON status lines give the arrival rate, the processed rate and the lag at each
tick; /v1/pacing, read once a second during the paced run, gives the recommendation. The chart
has two panels: the paced run's rates with the recommendation, and the lag of both runs.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

RUN_SECONDS = 32
PRODUCE_SECONDS = 20
JOIN_SECONDS = 4
WIDTH, LEFT, RIGHT, TOP, PANEL, GAP = 900, 70, 170, 34, 170, 44
COLORS = {"arrival (paced)": "#4e79a7", "processed (paced)": "#59a14f",
          "recommended rate": "#e15759", "lag, not paced": "#f28e2b", "lag, paced": "#4e79a7"}


def one_run(lagpilot, paced, port, work):
    """Returns (status lines, [(t, recommended rate)]) of one run."""
    broker = subprocess.Popen([lagpilot, "broker", "--topic", "events", "--partitions", "4"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    bootstrap = broker.stdout.readline().strip()
    config = os.path.join(work, "pace.json")
    with open(config, "w") as f:
        json.dump({"guards": {"min_workers": 4, "max_workers": 4}}, f)
    run = subprocess.Popen([lagpilot, "run", "--config", config, "--bootstrap", bootstrap,
                            "--listen", f"127.0.0.1:{port}", "--duration", str(RUN_SECONDS),
                            "--log-format", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
    reader.start()
    time.sleep(JOIN_SECONDS)
    start = time.time()
    cmd = [lagpilot, "produce", "--bootstrap", bootstrap, "--rate", "3000"]
    if paced:
        cmd += ["--pacing-url", f"http://127.0.0.1:{port}/v1/pacing"]
    producer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    recommended = []
    while time.time() - start < PRODUCE_SECONDS:
        if paced:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/pacing", timeout=1) as r:
                    doc = json.load(r)
                if doc.get("rate") is not None:
                    recommended.append((time.time() - start, doc["rate"]))
            except OSError:
                pass
        time.sleep(1)
    producer.send_signal(signal.SIGINT)
    producer.wait(timeout=30)
    run.wait(timeout=RUN_SECONDS + 60)
    reader.join(timeout=5)
    broker.send_signal(signal.SIGINT)
    broker.wait(timeout=30)
    status = []
    for line in lines:
        line = line.strip()
        if line.startswith("{") and '"t"' in line:
            status.append(json.loads(line))
    if not status:
        sys.exit("pacing-figure: the run printed no status line")
    # Time from the producer's start: the status lines count from the run's start.
    t0 = JOIN_SECONDS
    return [dict(s, t=s["t"] - t0) for s in status if s["t"] >= t0], recommended


def nice_step(span):
    for e in range(-2, 9):
        for m in (1, 2, 2.5, 5):
            step = m * 10 ** e
            if span / step <= 5:
                return step
    return span


def panel(out, top, title, series, unit, x_max):
    """One panel: series = [(label, [(x, y)])], y from 0."""
    y_max = max([y for _, pts in series for _, y in pts] + [1]) * 1.08
    step = nice_step(y_max)
    plot_w = WIDTH - LEFT - RIGHT
    sx = lambda x: LEFT + x / x_max * plot_w
    sy = lambda y: top + PANEL - y / y_max * PANEL
    out.append(f'<text class="caption" x="{LEFT}" y="{top - 10}">{title}</text>')
    out.append(f'<rect class="frame" x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL}"/>')
    y = 0.0
    while y <= y_max:
        out.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{sy(y):.1f}" '
                   f'y2="{sy(y):.1f}"/>')
        out.append(f'<text class="axis" x="{LEFT - 6}" y="{sy(y) + 4:.1f}" '
                   f'text-anchor="end">{y:g}</text>')
        y += step
    out.append(f'<text class="axis" x="{LEFT - 6}" y="{top - 10}" text-anchor="end">{unit}</text>')
    for x in range(0, int(x_max) + 1, 5):
        out.append(f'<text class="axis" x="{sx(x):.1f}" y="{top + PANEL + 14}" '
                   f'text-anchor="middle">{x} s</text>')
    for i, (label, pts) in enumerate(series):
        if not pts:
            continue
        color = COLORS[label]
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{coords}" stroke="{color}"/>')
        ly = top + 14 + 16 * i
        out.append(f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 30}" y1="{ly - 4}" '
                   f'y2="{ly - 4}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 36}" y="{ly}">{label}</text>')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lagpilot", default="build/release/cli/lagpilot")
    ap.add_argument("--out", default="docs/pacing.svg")
    ap.add_argument("--port", type=int, default=19481)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        unpaced, _ = one_run(args.lagpilot, False, args.port, work)
        paced, recommended = one_run(args.lagpilot, True, args.port, work)
    x_max = max(s["t"] for s in paced + unpaced)
    rates = [("arrival (paced)", [(s["t"], s["arrival_rate"]) for s in paced]),
             ("processed (paced)", [(s["t"], s["processed_rate"]) for s in paced]),
             ("recommended rate", recommended)]
    lags = [("lag, not paced", [(s["t"], s["lag"]) for s in unpaced]),
            ("lag, paced", [(s["t"], s["lag"]) for s in paced])]
    height = TOP + 2 * PANEL + GAP + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}">',
           "<style>text { font: 11px system-ui, sans-serif; fill: #1f2328; } "
           ".caption { font-size: 13px; font-weight: 600; } .axis { fill: #656d76; } "
           ".grid { stroke: #eaeef2; } .frame { fill: none; stroke: #d0d7de; } "
           "polyline { fill: none; stroke-width: 1.6; }</style>",
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    panel(out, TOP, "Producer at 3,000/s following GET /v1/pacing: rates", rates, "msg/s", x_max)
    panel(out, TOP + PANEL + GAP, "Lag, with and without pacing", lags, "msg", x_max)
    out.append("</svg>")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    peak = lambda run: max(s["lag"] for s in run)
    last = recommended[-1][1] if recommended else float("nan")
    print(f"{args.out}: recommended {last:.0f} msg/s at the end; peak lag {peak(unpaced):,} "
          f"not paced, {peak(paced):,} paced")


if __name__ == "__main__":
    main()
