#!/usr/bin/env python3
"""Sums the control-quality scoreboards of several evaluation sets (one per seed of
scripts/make-eval-set.py) as Markdown tables: per split and seed, each policy's traces meeting
every goal; then, with --traces LABEL, per trace how many of the seeds that policy meets each
goal on. One seed's noise and slices can favour a change; a goal met on most seeds is a property
of the policy, one met on one seed may be luck.

    bench/control_quality_seeds.py OUT/seed-11 OUT/seed-12 ... [--traces [LABEL]]

Each directory holds the train.json and test.json that `lagpilot sim --trace ... --json` wrote
for one seed (bench/control_quality.sh with EVAL_SEEDS does this); its name labels the seed.
"""
import argparse
import json
import math
import os
import sys

SPLITS = ("train", "test")


def load(directory, split):
    path = os.path.join(directory, split + ".json")
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        sys.exit(f"control_quality_seeds: {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        sys.exit(f"control_quality_seeds: {path}:{e.lineno}: not JSON: {e.msg}")


def policies(board):
    """The scored policies of one board: every one but the references (oracle, HPA)."""
    return [p for p in board["policies"] if p.get("reference", "") == ""]


def summary(boards, labels):
    """Per split, per policy: one row with each seed's traces meeting every goal, misses and
    worker-seconds geomean, then their totals (the geomean over every trace of every seed)."""
    lines = []
    for split in SPLITS:
        names = [p["label"] for p in policies(boards[0][split])]
        lines.append(f"{split} split, {len(labels)} seeds ({', '.join(labels)}):")
        lines.append("")
        lines.append("| policy | traces meeting every goal, per seed | in all | goals missed "
                     "| ws/oracle geomean, per seed | over all traces | actions | reversals |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for name in names:
            met, missed, geos, logs, traces, actions, reversals = [], 0, [], 0.0, 0, 0, 0
            for board in boards:
                p = next(q for q in policies(board[split]) if q["label"] == name)
                met.append(sum(all(t["goals"].values()) for t in p["traces"]))
                missed += sum(not ok for t in p["traces"] for ok in t["goals"].values())
                geos.append(p["geomean_worker_seconds_ratio"])
                for t in p["traces"]:
                    logs += math.log(t["worker_seconds_ratio"])
                    traces += 1
                actions += p["scale_actions"]
                reversals += p["reversals"]
            per_seed = len(p["traces"])
            lines.append(
                f"| `{name}` | {', '.join(f'{m}/{per_seed}' for m in met)} | "
                f"{sum(met)}/{traces} | {missed} | {', '.join(f'{g:.4f}x' for g in geos)} | "
                f"{math.exp(logs / traces):.4f}x | {actions} | {reversals} |")
        lines.append("")
    return lines


def per_trace(boards, labels, label):
    """Per split and trace, for one policy: on how many seeds it meets each goal, and every one."""
    lines = []
    n = len(boards)
    for split in SPLITS:
        # The goals are the scoreboard's own (traces[].goals), so a goal it adds gets a column.
        goals = list(policies(boards[0][split])[0]["traces"][0]["goals"])
        lines.append(f"`{label}` on the {split} split, goals met on k of {n} seeds:")
        lines.append("")
        lines.append("| trace | every goal | " + " | ".join(goals) + " |")
        lines.append("|---|---|" + "---|" * len(goals))
        rows = {}
        for board in boards:
            matches = [p for p in policies(board[split]) if p["label"] == label]
            if not matches:
                sys.exit(f"control_quality_seeds: no policy labelled {label!r} on the {split} "
                         f"split (labels: {', '.join(p['label'] for p in policies(board[split]))})")
            for t in matches[0]["traces"]:
                row = rows.setdefault(t["trace"], {"every": 0, **{g: 0 for g in goals}})
                row["every"] += all(t["goals"].values())
                for g in goals:
                    row[g] += bool(t["goals"][g])
        for trace, row in sorted(rows.items()):
            cells = [f"{row[g]}/{n}" for g in goals]
            every = f"**{row['every']}/{n}**" if row["every"] < n else f"{n}/{n}"
            lines.append(f"| {trace} | {every} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR",
                    help="one seed's output directory, with train.json and test.json")
    ap.add_argument("--traces", nargs="?", const=True, default=None, metavar="LABEL",
                    help="also one row per trace for this policy (alone: the first scored one)")
    a = ap.parse_args()
    boards = [{split: load(d, split) for split in SPLITS} for d in a.dirs]
    labels = [os.path.basename(os.path.normpath(d)) for d in a.dirs]
    for split in SPLITS:
        first = [p["label"] for p in policies(boards[0][split])]
        for d, board in zip(a.dirs, boards):
            if [p["label"] for p in policies(board[split])] != first:
                sys.exit(f"control_quality_seeds: {d}/{split}.json scores other policies than "
                         f"{a.dirs[0]}/{split}.json ({', '.join(first)})")
    lines = summary(boards, labels)
    if a.traces is not None:
        label = policies(boards[0]["train"])[0]["label"] if a.traces is True else a.traces
        lines += per_trace(boards, labels, label)
    print("\n".join(lines).rstrip())


if __name__ == "__main__":
    main()
