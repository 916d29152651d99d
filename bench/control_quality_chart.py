#!/usr/bin/env python3
"""Draws a standalone SVG of one `lagpilot sim --csv` time series: arrivals, workers and lag per
policy (the chart of docs/control-quality.md). Python standard library only.

    lagpilot sim --trace T --peak-load 1.2 --seed 7 --policy hybrid,pid,hpa,oracle --csv S.csv
    bench/control_quality_chart.py S.csv OUT.svg [--slo 10000] [--title TEXT]

Each line is reduced to the minimum and maximum of each pixel column, so peaks survive.
"""

import argparse
import csv
import sys

WIDTH, LEFT, RIGHT, TOP, PANEL, GAP = 1000, 70, 150, 30, 170, 36
COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#1f2328", "#e15759", "#76b7b2"]


def columns(points, n):
    """Min/max of each of n x columns, in x order."""
    if len(points) <= 2 * n:
        return points
    x0, x1 = points[0][0], points[-1][0]
    buckets = [[] for _ in range(n)]
    for x, y in points:
        k = min(n - 1, int((x - x0) / (x1 - x0 + 1e-12) * n))
        buckets[k].append((x, y))
    out = []
    for b in buckets:
        if b:
            lo = min(b, key=lambda p: p[1])
            hi = max(b, key=lambda p: p[1])
            out.extend(sorted({lo, hi}))
    return out


def nice(v):
    for m in (1, 2, 2.5, 5, 10):
        for e in range(-3, 9):
            step = m * 10 ** e
            if v / step <= 5:
                return step
    return v


def panel(out, y0, title, series, t_max, y_max, unit, marker=None):
    plot_w = WIDTH - LEFT - RIGHT
    sx = lambda t: LEFT + t / t_max * plot_w
    sy = lambda v: y0 + PANEL - min(v, y_max) / y_max * PANEL
    out.append(f'<text x="{LEFT}" y="{y0 - 8}" font-weight="600">{title}</text>')
    step = nice(y_max)
    v = 0.0
    while v <= y_max + 1e-9:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{sy(v):.1f}" y2="{sy(v):.1f}" '
                   'stroke="#eaeef2"/>')
        label = f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"
        out.append(f'<text x="{LEFT - 6}" y="{sy(v) + 4:.1f}" text-anchor="end" fill="#656d76">'
                   f'{label}</text>')
        v += step
    out.append(f'<text x="{LEFT - 6}" y="{y0 - 8}" text-anchor="end" fill="#656d76">{unit}</text>')
    if marker is not None:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{sy(marker):.1f}" '
                   f'y2="{sy(marker):.1f}" stroke="#cf222e" stroke-dasharray="5 4"/>')
        out.append(f'<text x="{LEFT + plot_w - 4}" y="{sy(marker) - 4:.1f}" text-anchor="end" '
                   f'fill="#cf222e">SLO {marker:g}</text>')
    for label, color, points in series:
        pts = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in columns(points, plot_w))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.3">'
                   f"<title>{label}</title></polyline>")
    out.append(f'<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{PANEL}" fill="none" '
               'stroke="#d0d7de"/>')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("svg")
    ap.add_argument("--slo", type=float, default=10000)
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{a.csv}: no rows")
    labels = [k[: -len("_workers")] for k in rows[0] if k.endswith("_workers")]
    t = [float(r["t"]) for r in rows]
    t_max = t[-1]
    arrivals = [("arrivals", "#8c959f", list(zip(t, (float(r["arrival_rate"]) for r in rows))))]
    workers, lags = [], []
    for i, label in enumerate(labels):
        color = COLORS[i % len(COLORS)]
        workers.append((label, color, list(zip(t, (float(r[label + "_workers"]) for r in rows)))))
        lags.append((label, color, list(zip(t, (float(r[label + "_lag"]) for r in rows)))))
    height = TOP + 3 * (PANEL + GAP) + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
           f'width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
           f'<text x="{LEFT}" y="16" font-size="14" font-weight="700">{a.title}</text>']
    y = TOP + 14
    peak = max(v for _, _, p in arrivals for _, v in p)
    panel(out, y, "arrivals", arrivals, t_max, peak * 1.05, "msg/s")
    y += PANEL + GAP
    panel(out, y, "workers", workers, t_max, max(v for _, _, p in workers for _, v in p) + 1,
          "workers")
    y += PANEL + GAP
    lag_max = max(max(v for _, _, p in lags for _, v in p), a.slo) * 1.05
    panel(out, y, "lag", lags, t_max, lag_max, "msg", marker=a.slo)
    out.append(f'<text x="{LEFT}" y="{y + PANEL + 16}" fill="#656d76">time: 0 to '
               f"{t_max / 3600:.1f} h</text>")
    for i, (label, color, _) in enumerate(workers):
        ly = TOP + 40 + i * 20
        out.append(f'<rect x="{WIDTH - RIGHT + 16}" y="{ly - 10}" width="12" height="12" '
                   f'fill="{color}"/><text x="{WIDTH - RIGHT + 34}" y="{ly}">{label}</text>')
    out.append("</svg>")
    with open(a.svg, "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
