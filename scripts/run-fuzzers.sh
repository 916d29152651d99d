#!/usr/bin/env bash
# Runs the libFuzzer targets of a fuzz build (make test-fuzz; docs/fuzzing.md):
#   1. each fuzzer once over every input kept in fuzz/regressions/<target>/ and
#      fuzz/corpus/<target>/: all must pass;
#   2. each fuzzer for a bounded time, starting from a temporary copy of its seed corpus (the
#      repository is never written to).
# Any crash, sanitizer report, contract violation, timeout or out-of-memory fails the script;
# the input that did it is copied to <build>/fuzz/artifacts/ and the command to replay it printed.
#
# Usage: scripts/run-fuzzers.sh [BUILD_DIR]     (default build/asan)
# Environment: FUZZ_SECONDS (default 20) per target, FUZZ_TARGETS (default: all three),
#              FUZZ_ARGS (extra libFuzzer flags, e.g. "-jobs=2 -workers=2"),
#              FUZZ_SEED (default 1; "random" for a new seed each run).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build/asan}" && pwd)
seconds=${FUZZ_SECONDS:-20}
# A fixed seed makes `make test` repeat the same exploration on every machine, so CI does not
# fail at random on a bug an earlier run could have found; long runs explore with new seeds.
fuzz_seed=${FUZZ_SEED:-1}
[ "$fuzz_seed" = random ] && fuzz_seed=0  # libFuzzer: 0 = pick one
targets=${FUZZ_TARGETS:-"api_body_fuzzer config_fuzzer trace_fuzzer"}
read -r -a extra <<<"${FUZZ_ARGS:-}"

work=$(mktemp -d "${TMPDIR:-/tmp}/lagpilot-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts=$build/fuzz/artifacts
# No -max_len here: libFuzzer would cut kept inputs to it when replaying them.
common=(-rss_limit_mb=2048 -timeout=10)

fail() {  # target, log, message
  echo "run-fuzzers: $1: $3" >&2
  tail -n 40 "$2" >&2
  mkdir -p "$artifacts"
  local found=0
  for a in "$work/$1"-crash-* "$work/$1"-oom-* "$work/$1"-timeout-* "$work/$1"-leak-*; do
    [ -e "$a" ] || continue
    found=1
    cp "$a" "$artifacts/"
    echo "run-fuzzers: input kept as $artifacts/$(basename "$a"); replay with:" >&2
    echo "  $build/fuzz/$1 $artifacts/$(basename "$a")" >&2
    echo "  then fix the bug and add the input to fuzz/regressions/$1/" >&2
  done
  [ "$found" = 1 ] || echo "run-fuzzers: (no crashing input was written; see the log above)" >&2
  exit 1
}

for target in $targets; do
  bin=$build/fuzz/$target
  [ -x "$bin" ] || { echo "run-fuzzers: $bin is missing (make test-fuzz builds it)" >&2; exit 1; }
  log=$work/$target.log

  # 1. Every kept input, once.
  inputs=()
  for dir in "$root/fuzz/regressions/$target" "$root/fuzz/corpus/$target"; do
    [ -d "$dir" ] || continue
    while IFS= read -r -d '' f; do inputs+=("$f"); done < <(find "$dir" -type f ! -name '.*' -print0 | sort -z)
  done
  if ((${#inputs[@]})); then
    "$bin" "${common[@]}" -artifact_prefix="$work/$target-" "${inputs[@]}" >"$log" 2>&1 ||
      fail "$target" "$log" "a kept input fails (regression)"
  fi

  # 2. A bounded fuzzing run from a copy of the seed corpus.
  mkdir -p "$work/corpus-$target"
  if [ -d "$root/fuzz/corpus/$target" ]; then cp -R "$root/fuzz/corpus/$target/." "$work/corpus-$target/"; fi
  dict=()
  [ -f "$root/fuzz/$target.dict" ] && dict=(-dict="$root/fuzz/$target.dict")
  "$bin" "${common[@]}" "${dict[@]}" -max_len=4096 -seed="$fuzz_seed" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/$target-" "${extra[@]}" "$work/corpus-$target" >"$log" 2>&1 ||
    fail "$target" "$log" "fuzzing found a failure"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
  echo "run-fuzzers: $target: ${#inputs[@]} kept inputs pass; ${seconds} s fuzzing: ${runs:-?} runs, ${cov:-cov: ?}, no failure"
done
