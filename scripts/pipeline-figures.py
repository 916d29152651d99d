#!/usr/bin/env python3
"""Draws the live charts of docs/pipeline.md on the embedded broker. Python standard library only.

    scripts/pipeline-figures.py [--lagpilot build/release/cli/lagpilot] [--docs docs]

docs/pacing.svg, "measure the consumer, then pace the producer": two runs of the same loop, each
on a fresh embedded broker (`lagpilot broker`):
  - a consumer (`lagpilot run`, 4 workers, the synthetic 5 ms handler: about 750 messages/s,
    kafka.max_unfinished 2,000);
  - a producer (`lagpilot produce --rate 3000`) for PRODUCE_SECONDS, once on its own and once
    with `--pacing-url` at the consumer's GET /v1/pacing.
  The consumer's JSON status lines give the arrival rate, the processed rate and the lag at each
  tick; /v1/pacing, read once a second during the paced run, gives the recommendation.
docs/watermarks.svg: the unpaced run's consumed but unfinished messages (GET /v1/status every
  0.25 s) against max_unfinished (fetching pauses there) and 20 % of it (it resumes there), and
  when fetching was paused.
docs/batching.svg: batch delivery (max_messages 200, max_wait_seconds 2) on one partition, with
  a producer at 40/s and then at 150/s: the mean batch size per second (from the
  lagpilot_batch_size_messages histogram on /metrics) and the arrival rate.
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
MAX_UNFINISHED = 2000
WIDTH, LEFT, RIGHT, TOP, PANEL, GAP = 900, 70, 170, 34, 170, 44
COLORS = {"arrival (paced)": "#4e79a7", "processed (paced)": "#59a14f",
          "recommended rate": "#e15759", "lag, not paced": "#f28e2b", "lag, paced": "#4e79a7",
          "unfinished": "#4e79a7", "pause at max_unfinished": "#e15759",
          "resume at 20 %": "#59a14f",
          "paused at the tick": "#f28e2b", "arrival rate": "#4e79a7",
          "mean batch size": "#59a14f", "max_messages": "#e15759"}


def get_json(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


def get_text(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.read().decode()
    except OSError:
        return ""


class Loop:
    """A fresh broker and a consumer; produce() runs a producer against them."""

    def __init__(self, lagpilot, port, work, config, partitions=4):
        self.lagpilot, self.port = lagpilot, port
        self.broker = subprocess.Popen([lagpilot, "broker", "--topic", "events", "--partitions",
                                        str(partitions)],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.bootstrap = self.broker.stdout.readline().strip()
        path = os.path.join(work, "config.json")
        with open(path, "w") as f:
            json.dump(config, f)
        self.run = subprocess.Popen([lagpilot, "run", "--config", path, "--bootstrap",
                                     self.bootstrap, "--listen", f"127.0.0.1:{port}",
                                     "--duration", str(RUN_SECONDS), "--log-format", "json"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.run.stdout),
                                       daemon=True)
        self.reader.start()
        time.sleep(JOIN_SECONDS)
        self.start = time.time()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def now(self):
        return time.time() - self.start

    def produce(self, rate, seconds, extra=(), every=1.0, sample=None):
        """Produces at `rate` for `seconds`, calling sample() every `every` seconds."""
        producer = subprocess.Popen([self.lagpilot, "produce", "--bootstrap", self.bootstrap,
                                     "--rate", str(rate), *extra],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.time() + seconds
        while time.time() < end:
            if sample:
                sample()
            time.sleep(every)
        producer.send_signal(signal.SIGINT)
        producer.wait(timeout=30)

    def finish(self, sample=None, every=1.0):
        """Waits for the run to end (sampling meanwhile); returns its status lines, with t from
        the producer's start."""
        while self.run.poll() is None:
            if sample:
                sample()
            time.sleep(every)
        self.reader.join(timeout=5)
        self.broker.send_signal(signal.SIGINT)
        self.broker.wait(timeout=30)
        status = [json.loads(l) for l in (x.strip() for x in self.lines)
                  if l.startswith("{") and '"t"' in l]
        if not status:
            sys.exit("pipeline-figures: the run printed no status line")
        return [dict(s, t=s["t"] - JOIN_SECONDS) for s in status if s["t"] >= JOIN_SECONDS]


def nice_step(span):
    for e in range(-2, 9):
        for m in (1, 2, 2.5, 5):
            step = m * 10 ** e
            if span / step <= 5:
                return step
    return span


def panel(out, top, title, series, unit, x_max, bands=()):
    """One panel: series = [(label, [(x, y)])], y from 0; bands = (label, [(x0, x1)]) shaded."""
    y_max = max([y for _, pts in series for _, y in pts] + [1]) * 1.08
    step = nice_step(y_max)
    plot_w = WIDTH - LEFT - RIGHT
    sx = lambda x: LEFT + min(max(x, 0), x_max) / x_max * plot_w
    sy = lambda y: top + PANEL - y / y_max * PANEL
    out.append(f'<text class="caption" x="{LEFT}" y="{top - 10}">{title}</text>')
    legend = list(series)
    for label, spans in bands:
        for x0, x1 in spans:
            out.append(f'<rect x="{sx(x0):.1f}" y="{top}" width="{max(sx(x1) - sx(x0), 1):.1f}" '
                       f'height="{PANEL}" fill="{COLORS[label]}" fill-opacity="0.15"/>')
        legend.append((label, None))
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
    for label, pts in series:
        if pts:
            coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{coords}" stroke="{COLORS[label]}"/>')
    for i, (label, pts) in enumerate(legend):
        ly = top + 14 + 16 * i
        if pts is None:
            out.append(f'<rect x="{WIDTH - RIGHT + 12}" y="{ly - 9}" width="18" height="10" '
                       f'fill="{COLORS[label]}" fill-opacity="0.3"/>')
        else:
            out.append(f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 30}" y1="{ly - 4}" '
                       f'y2="{ly - 4}" stroke="{COLORS[label]}" stroke-width="2"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 36}" y="{ly}">{label}</text>')


def write_svg(path, panels):
    """panels: [(title, series, unit, x_max, bands)], stacked."""
    height = TOP + len(panels) * (PANEL + GAP) - GAP + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}">',
           "<style>text { font: 11px system-ui, sans-serif; fill: #1f2328; } "
           ".caption { font-size: 13px; font-weight: 600; } .axis { fill: #656d76; } "
           ".grid { stroke: #eaeef2; } .frame { fill: none; stroke: #d0d7de; } "
           "polyline { fill: none; stroke-width: 1.6; }</style>",
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    for i, (title, series, unit, x_max, bands) in enumerate(panels):
        panel(out, TOP + i * (PANEL + GAP), title, series, unit, x_max, bands)
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def spans(samples):
    """[(t, flag)] -> [(t0, t1)] where flag held."""
    out, start = [], None
    for t, flag in samples:
        if flag and start is None:
            start = t
        if not flag and start is not None:
            out.append((start, t))
            start = None
    if start is not None and samples:
        out.append((start, samples[-1][0]))
    return out


def pacing_runs(lagpilot, port, work):
    config = {"guards": {"min_workers": 4, "max_workers": 4},
              "kafka": {"max_unfinished": MAX_UNFINISHED}}
    loop = Loop(lagpilot, port, work, config)
    queue = []  # (t, unfinished messages, paused), as of the last tick
    counters = {}  # the source's counters at the last sample

    def sample_queue():
        doc = get_json(loop.url("/v1/status"))
        if doc and "unfinished" in doc["runtime"]:
            queue.append((loop.now(), doc["runtime"]["unfinished"], doc["runtime"]["paused"]))
            counters.update(doc["runtime"]["counters"])

    loop.produce(3000, PRODUCE_SECONDS, every=0.25, sample=sample_queue)
    unpaced = loop.finish(sample_queue, every=0.25)

    loop = Loop(lagpilot, port, work, config)
    recommended = []

    def sample_pacing():
        doc = get_json(loop.url("/v1/pacing"))
        if doc and doc.get("rate") is not None:
            recommended.append((loop.now(), doc["rate"]))

    loop.produce(3000, PRODUCE_SECONDS, ["--pacing-url", loop.url("/v1/pacing")],
                 sample=sample_pacing)
    paced = loop.finish()
    return unpaced, paced, recommended, queue, counters


def batch_run(lagpilot, port, work):
    config = {"guards": {"min_workers": 1, "max_workers": 1},
              "kafka": {"ordering": "partition"},
              "batch": {"max_messages": 200, "max_wait_seconds": 2}}
    loop = Loop(lagpilot, port, work, config, partitions=1)
    sizes, last = [], [None]

    def sample_batches():
        text = get_text(loop.url("/metrics"))
        total = count = None
        for line in text.splitlines():
            if line.startswith("lagpilot_batch_size_messages_sum"):
                total = float(line.split()[-1])
            elif line.startswith("lagpilot_batch_size_messages_count"):
                count = float(line.split()[-1])
        if total is None or count is None:
            return
        if last[0] is not None and count > last[0][1]:
            sizes.append((loop.now(), (total - last[0][0]) / (count - last[0][1])))
        last[0] = (total, count)

    loop.produce(40, 10, sample=sample_batches)
    loop.produce(150, 10, sample=sample_batches)
    status = loop.finish(sample_batches)
    return status, sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lagpilot", default="build/release/cli/lagpilot")
    ap.add_argument("--docs", default="docs")
    ap.add_argument("--port", type=int, default=19481)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        unpaced, paced, recommended, queue, counters = pacing_runs(args.lagpilot, args.port,
                                                                   work)
        batch_status, sizes = batch_run(args.lagpilot, args.port, work)
    x_max = max(s["t"] for s in paced + unpaced)
    write_svg(os.path.join(args.docs, "pacing.svg"), [
        ("Producer at 3,000/s following GET /v1/pacing: rates",
         [("arrival (paced)", [(s["t"], s["arrival_rate"]) for s in paced]),
          ("processed (paced)", [(s["t"], s["processed_rate"]) for s in paced]),
          ("recommended rate", recommended)], "msg/s", x_max, ()),
        ("Lag, with and without pacing",
         [("lag, not paced", [(s["t"], s["lag"]) for s in unpaced]),
          ("lag, paced", [(s["t"], s["lag"]) for s in paced])], "msg", x_max, ())])
    write_svg(os.path.join(args.docs, "watermarks.svg"), [
        (f"Producer at 3,000/s, not paced: unfinished messages at each tick "
         f"({counters.get('pauses', 0)} pauses, {counters.get('resumes', 0)} resumes)",
         [("unfinished", [(t, d) for t, d, _ in queue]),
          ("pause at max_unfinished", [(0, MAX_UNFINISHED), (x_max, MAX_UNFINISHED)]),
          ("resume at 20 %", [(0, 0.2 * MAX_UNFINISHED), (x_max, 0.2 * MAX_UNFINISHED)])],
         "msg", x_max, [("paused at the tick", spans([(t, p) for t, _, p in queue]))])])
    bx = max(s["t"] for s in batch_status)
    write_svg(os.path.join(args.docs, "batching.svg"), [
        ("Batch delivery on one partition: arrivals",
         [("arrival rate", [(s["t"], s["arrival_rate"]) for s in batch_status])], "msg/s", bx, ()),
        ("Mean batch size per second (max_messages 200, max_wait_seconds 2)",
         [("mean batch size", sizes), ("max_messages", [(0, 200), (bx, 200)])], "msg", bx, ())])
    peak = lambda run: max(s["lag"] for s in run)
    last = recommended[-1][1] if recommended else float("nan")
    print(f"pacing.svg: recommended {last:.0f} msg/s at the end; peak lag {peak(unpaced):,} "
          f"not paced, {peak(paced):,} paced")
    print(f"watermarks.svg: {counters.get('pauses')} pauses, {counters.get('resumes')} resumes; "
          f"unfinished at most "
          f"{max((d for _, d, _ in queue), default=0):.0f} (max_unfinished {MAX_UNFINISHED})")
    early = [v for t, v in sizes if t < 10]
    late = [v for t, v in sizes if 12 < t < 20]
    print(f"batching.svg: mean batch {sum(early) / max(len(early), 1):.0f} at 40/s, "
          f"{sum(late) / max(len(late), 1):.0f} at 150/s")


if __name__ == "__main__":
    main()
