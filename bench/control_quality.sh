#!/usr/bin/env bash
# The control-quality scoreboard (docs/control-quality.md) on both splits of the evaluation set
# (traces/eval, made by scripts/make-eval-set.py): every policy on every trace at --peak-load 1.2
# with the default config and seed 7, against the oracle and the default HPA.
#   bench/control_quality.sh [build dir] [output dir]
# Prints both scoreboards and writes <output dir>/{train,test}.json and .html (default:
# build dir/control-quality). "pid:scale_down_utilization=0" is pid as it was before its
# scale-down floor (the default policy before hybrid). Takes several minutes on two cores
# (the oracle's DP dominates).
# EVAL_SEED=N runs on both splits made again with seed N instead of the committed set (seed 11):
# the same families with new slices and noise, written to <output dir>/eval-N. That is the
# check for a change found with the test split in view (control-quality-rounds.md).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build/release}
out=${2:-$build/control-quality}
policies=${POLICIES:-hybrid,pid,pid:scale_down_utilization=0,model,threshold,hpa,keda,oracle}
mkdir -p "$out"
cd "$here"
eval_dir=traces/eval
if [[ -n "${EVAL_SEED:-}" ]]; then
  eval_dir=$out/eval-$EVAL_SEED
  scripts/make-eval-set.py --out "$eval_dir" --seed "$EVAL_SEED" > /dev/null
  echo "== the evaluation set made with seed $EVAL_SEED: $eval_dir"
fi
for split in train test; do
  args=()
  for trace in "$eval_dir/$split"/*.csv; do args+=(--trace "$trace"); done
  echo "== $split split (${#args[@]} arguments: $(( ${#args[@]} / 2 )) traces)"
  "$build/cli/lagpilot" sim "${args[@]}" --peak-load 1.2 --seed 7 --policy "$policies" \
    --json "$out/$split.json" --html "$out/$split.html" 2> "$out/$split.log"
done
