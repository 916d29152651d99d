#!/usr/bin/env bash
# Runs every benchmark of bench/ from a Release build and prints their figures
# (docs/benchmarks.md records them with the date and the machine).
set -euo pipefail
build=${1:-build/release}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
echo "== simulator (bench/sim_bench.cpp)"
"$build/bench/sim_bench"
echo "== worker pool (bench/pool_bench.cpp)"
"$build/bench/pool_bench"
echo "== sinks: http against a plain client loop, exec with no-op children (bench/sink_bench.cpp)"
"$build/bench/sink_bench"
echo "== end-to-end consumption against the embedded broker (bench/consume_bench.cpp)"
"$build/bench/consume_bench"
