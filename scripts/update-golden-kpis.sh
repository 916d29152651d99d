#!/usr/bin/env bash
# Regenerates the golden KPI files of the simulator (tests/sim/golden/<case>.json) with
# `lagpilot sim`, one per case of tests/sim/golden/cases.json. Every option is pinned there and
# in the case's config file (policy list, fidelity, seed, peak load, tick), so a change of the
# CLI's defaults does not change them. sim_test's GoldenKpis suite replays each case through the
# library and requires the same "sim" and "runs" JSON, byte for byte.
#
#   scripts/update-golden-kpis.sh [path/to/lagpilot]     # default build/release/cli/lagpilot
#
# Run it only when a change is meant to change simulation results (a policy's or the model's
# bug fix, new defaults of a policy), and say why in the commit; a speed-up must leave every
# file as it is. docs/testing.md has the details.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bin=${1:-build/release/cli/lagpilot}
[[ -x $bin ]] || { echo "update-golden-kpis: $bin not built" >&2; exit 1; }
golden=tests/sim/golden

python3 - "$bin" "$golden" <<'PY'
import json, os, subprocess, sys
bin, golden = sys.argv[1:]
cases = json.load(open(os.path.join(golden, "cases.json")))
for case in cases:
    out = os.path.join(golden, case["name"] + ".json")
    cmd = [bin, "sim", "--trace", case["trace"], "--config", os.path.join(golden, case["config"]),
           "--policy", case["policies"], "--fidelity", case["fidelity"],
           "--seed", str(case["seed"]), "--threads", "2", "--json", out]
    if "peak_load" in case:
        cmd += ["--peak-load", repr(case["peak_load"])]
    if "speedup" in case:
        cmd += ["--speedup", repr(case["speedup"])]
    if "tick" in case:
        cmd += ["--tick", repr(case["tick"])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("wrote", out)
PY
