#!/usr/bin/env bash
# The control-quality scoreboard (docs/control-quality.md) on both splits of the evaluation set
# (traces/eval, made by scripts/make-eval-set.py): every policy on every trace at --peak-load 1.2
# with the default config and seed 7, against the oracle and the default HPA.
#   bench/control_quality.sh [build dir] [output dir]
# Prints both scoreboards and writes <output dir>/{train,test}.json and .html (default:
# build dir/control-quality). "pid:scale_down_utilization=0" is pid as it was before its
# scale-down floor (the default policy before hybrid). Takes a minute or two on two cores
# (the oracle's DP dominates). POLICIES=a,b,... scores other policies (hpa and oracle must be
# among them: the goals are measured against them).
# EVAL_SEEDS="11 12 13 14" runs on both splits made again with each seed instead of the committed
# set (seed 11 makes the committed set): the same families with new slices and noise, in
# <output dir>/eval-N, scored into <output dir>/seed-N/, and then sums them per policy and per
# trace of the first policy (bench/control_quality_seeds.py) into <output dir>/seeds.md. That is
# the check for a change found with the test split in view, and for one seed's luck
# (control-quality-rounds.md).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build/release}
out=${2:-$build/control-quality}
policies=${POLICIES:-hybrid,pid,pid:scale_down_utilization=0,model,threshold,hpa,keda,oracle}
mkdir -p "$out"
cd "$here"

# score EVAL_DIR OUT_DIR: both splits of one evaluation set.
score() {
  local split trace args
  for split in train test; do
    args=()
    for trace in "$1/$split"/*.csv; do args+=(--trace "$trace"); done
    echo "== $split split (${#args[@]} arguments: $(( ${#args[@]} / 2 )) traces)"
    "$build/cli/lagpilot" sim "${args[@]}" --peak-load 1.2 --seed 7 --policy "$policies" \
      --json "$2/$split.json" --html "$2/$split.html" 2> "$2/$split.log"
  done
}

if [[ -z "${EVAL_SEEDS:-}" ]]; then
  score traces/eval "$out"
  exit 0
fi
dirs=()
for seed in ${EVAL_SEEDS//,/ }; do
  if [[ ! "$seed" =~ ^[0-9]+$ ]]; then
    echo "control_quality.sh: EVAL_SEEDS: '$seed' is not a seed (a non-negative integer)" >&2
    exit 2
  fi
  scripts/make-eval-set.py --out "$out/eval-$seed" --seed "$seed" > /dev/null
  echo "== the evaluation set made with seed $seed: $out/eval-$seed"
  mkdir -p "$out/seed-$seed"
  score "$out/eval-$seed" "$out/seed-$seed"
  dirs+=("$out/seed-$seed")
done
# --traces alone: the first scored policy (a policy spec may itself hold commas).
bench/control_quality_seeds.py "${dirs[@]}" --traces | tee "$out/seeds.md"
