#!/usr/bin/env python3
"""Prints the scoreboard JSON of `lagpilot sim --trace A --trace B ... --json F` as Markdown
tables (the figures of docs/control-quality.md): one row per policy, then, with --traces LABEL,
one row per trace for that policy.

    bench/control_quality_table.py build/release/control-quality/test.json [--traces hybrid]
"""
import argparse
import json


def ratio(v):
    return "n/a" if v is None else f"{v:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--traces", default="")
    a = ap.parse_args()
    with open(a.json) as f:
        board = json.load(f)
    n = len(board["traces"])
    print("| policy | ws/oracle worst | geomean | avoidable s > SLO (HPA's) | actions (HPA's) "
          "| reversals (HPA's) | goals missed on n of %d traces: ws, slo, actions, reversals, N* |"
          % n)
    print("|---|---|---|---|---|---|---|")
    for p in board["policies"]:
        m = p["traces_missing"]
        goals = ("reference" if p["reference"] == "oracle" else
                 ", ".join(str(m[k]) for k in
                           ("worker_seconds", "slo", "scale_actions", "reversals", "peak")))
        print(f"| `{p['label']}` | {ratio(p['worst_worker_seconds_ratio'])} | "
              f"{ratio(p['geomean_worker_seconds_ratio'])} | "
              f"{p['avoidable_seconds_above_slo']:.0f} ({p['hpa_avoidable_seconds_above_slo']:.0f}) | "
              f"{p['scale_actions']} ({p['hpa_scale_actions']}) | "
              f"{p['reversals']} ({p['hpa_reversals']}) | {goals} |")
    if a.traces:
        print()
        print(f"| trace | `{a.traces}` ws/oracle | avoidable s (HPA's) | actions (HPA's) "
              "| reversals (HPA's) | missed |")
        print("|---|---|---|---|---|---|")
        for p in board["policies"]:
            if p["label"] != a.traces:
                continue
            for t in p["traces"]:
                k = t["kpis"]
                missed = [g for g, ok in t["goals"].items() if not ok]
                print(f"| {t['trace']} | {ratio(t['worker_seconds_ratio'])} | "
                      f"{t['avoidable_seconds_above_slo']:.0f} "
                      f"({t['hpa_avoidable_seconds_above_slo']:.0f}) | "
                      f"{k['scale_actions']} ({t['hpa_scale_actions']}) | "
                      f"{k['reversals']} ({t['hpa_reversals']}) | {', '.join(missed) or '-'} |")


if __name__ == "__main__":
    main()
