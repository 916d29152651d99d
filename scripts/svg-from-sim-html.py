#!/usr/bin/env python3
"""Stacks chosen charts of a `lagpilot sim --html` report into one standalone SVG (for docs/).

    lagpilot sim --trace T ... --html a.html
    lagpilot sim --trace T ... --config C --html b.html
    scripts/svg-from-sim-html.py OUT.svg a.html#chart-lag "b.html#chart-lag=Lag with shedding" \
        b.html#chart-shed [--title TEXT]

Each panel is REPORT#CHART_ID[=CAPTION]: that report's own <svg> element (drawn by
sim/svg_chart.cpp), copied as it is, under its caption (the report's, or CAPTION). Panels are
stacked in the order given, with the page's chart styles inlined and a legend of the first
report's runs (the page's colors). Python standard library only.
"""

import argparse
import html
import re
import sys

STYLE = """
text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; fill: #1f2328; }
.grid line { stroke: #eaeef2; stroke-width: 1; }
.axis text { font-size: 11px; fill: #656d76; }
.axis text.unit { fill: #1f2328; }
.frame { fill: none; stroke: #d0d7de; }
polyline { fill: none; stroke-width: 1.4; stroke-linejoin: round; }
polygon.area { fill-opacity: 0.35; stroke-width: 1; }
line.slo { stroke: #cf222e; stroke-width: 1.2; stroke-dasharray: 5 4; }
text.slo { font-size: 11px; fill: #cf222e; }
text.caption { font-size: 13px; font-weight: 600; }
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("panels", nargs="+", help="REPORT#CHART_ID[=CAPTION]")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    pages = {}

    def page_of(path):
        if path not in pages:
            pages[path] = open(path, encoding="utf-8").read()
        return pages[path]

    page = page_of(a.panels[0].split("#")[0])
    legend = re.findall(
        r'<span class="swatch" style="background:(#[0-9a-fA-F]{3,8})"></span>([^<]*)<', page)
    seen, runs = set(), []
    for color, label in legend:
        if label and label not in seen:
            seen.add(label)
            runs.append((color, html.unescape(label)))
    parts, y = [], 0.0
    if a.title:
        parts.append(f'<text class="caption" x="8" y="{y + 18:g}">{html.escape(a.title)}</text>')
        y += 26
    x = 72.0
    for color, label in runs:
        parts.append(f'<rect x="{x:g}" y="{y + 4:g}" width="12" height="12" fill="{color}"/>'
                     f'<text x="{x + 17:g}" y="{y + 14:g}">{html.escape(label)}</text>')
        x += 30 + 7 * len(label)
    y += 22
    for panel in a.panels:
        report, _, rest = panel.partition("#")
        chart, _, own_caption = rest.partition("=")
        page = page_of(report)
        m = re.search(r'<figcaption>([^<]*)</figcaption>\s*<svg [^>]*id="' + re.escape(chart) +
                      r'"[^>]*viewBox="0 0 ([\d.]+) ([\d.]+)"[^>]*>(.*?)</svg>', page, re.S)
        if not m:
            sys.exit(f"{report}: no chart with id {chart}")
        caption, width, height, body = m.group(1), float(m.group(2)), float(m.group(3)), m.group(4)
        if own_caption:
            caption = html.escape(own_caption)
        parts.append(f'<text class="caption" x="8" y="{y + 14:g}">{caption}</text>')
        y += 20
        parts.append(f'<g transform="translate(0 {y:g})">{body}</g>')
        y += height
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1000 {h:g}" width="1000" '
           'height="{h:g}">\n<style>{s}</style>\n<rect width="100%" height="100%" fill="#fff"/>\n'
           '{p}\n</svg>\n').format(h=y + 4, s=STYLE, p="\n".join(parts))
    open(a.out, "w", encoding="utf-8").write(svg)


if __name__ == "__main__":
    main()
