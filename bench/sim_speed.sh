#!/usr/bin/env bash
# Whole-process wall time and peak memory of `lagpilot sim` and `lagpilot tune` on the long
# traces, for two binaries side by side in one run (alternating, so both see the same load):
#
#   wc98       sim, the whole World Cup 98 trace (87 days, 7.5 M one-second ticks),
#              --peak-load 1.2, pid,threshold,hpa,keda,static:16 and the oracle   (goal <= 5 s)
#   nyc        sim, NYC taxi at 1 s ticks (18.6 M ticks), the same five policies and the
#              oracle, --peak-load 0: the trace's own rates, as issue 14 measured it before
#              `sim` scaled such traces automatically (pinned)                   (goal <= 5 s)
#   nyc-scaled the same with today's default scaling (peak 1.2x the capacity at max workers:
#              ~9.7 G messages, busy throughout, the oracle's DP on almost every tick); not run
#              unless named (minutes)                                                (no goal)
#   tune-day   tune pid, random search, 60 configurations, on one day of WC98 (1998-06-30,
#              1-minute bins, 86,400 ticks), --peak-load 1.2, batch fidelity, 2 threads
#                                                                    (goal >= 1,000 per minute)
#   tune-wc98  tune pid, random search, on the whole WC98 trace, at tune's default budget of
#              100 configurations (about a minute a run): what `lagpilot tune --train wc98`
#              costs a user                                            (goal >= 100 per minute)
#   tune-wc98-short
#              the same with 6 configurations (a quicker look; no goal): tune also runs the
#              policy's defaults once for its report, so 7 runs count as 6 configurations and
#              the rate reads about a seventh low
#
#   BASELINE=/tmp/lagpilot-before bench/sim_speed.sh [case ...]   # build/release/cli/lagpilot
#   RUNS=3 bench/sim_speed.sh wc98                                 # medians of 3 runs each
#
# Prints every run (wall, user CPU, max RSS) and, per case, the medians and the ratio.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
NEW=${LAGPILOT:-build/release/cli/lagpilot}
BASE=${BASELINE:-}
RUNS=${RUNS:-1}
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(wc98 nyc tune-day tune-wc98)
[[ -x $NEW ]] || { echo "sim_speed: $NEW not built" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wc98=traces/wc98_invocation_count.csv
# 1998-06-30, the busiest day: rows 86542 .. 87981 of the file (1440 one-minute bins).
{ head -1 "$wc98"; sed -n 86542,87981p "$wc98"; } >"$work/wc98-day.csv"
policies=pid,threshold,hpa,keda,static:16,oracle

args_of() {
  case $1 in
    wc98) echo "sim --trace $wc98 --peak-load 1.2 --policy $policies --threads 2" ;;
    nyc) echo "sim --trace traces/nab_nyc_taxi.csv --peak-load 0 --policy $policies --threads 2" ;;
    nyc-scaled) echo "sim --trace traces/nab_nyc_taxi.csv --policy $policies --threads 2" ;;
    tune-day) echo "tune --policy pid --train $work/wc98-day.csv --peak-load 1.2 --fidelity batch \
--strategy random --budget 60 --seed 1 --threads 2" ;;
    tune-wc98) echo "tune --policy pid --train $wc98 --peak-load 1.2 --strategy random --budget 100 \
--seed 1 --threads 2" ;;
    tune-wc98-short) echo "tune --policy pid --train $wc98 --peak-load 1.2 --strategy random \
--budget 6 --seed 1 --threads 2" ;;
    *) echo "sim_speed: unknown case $1" >&2; exit 1 ;;
  esac
}
configs_of() {
  case $1 in tune-day) echo 60 ;; tune-wc98) echo 100 ;; tune-wc98-short) echo 6 ;; *) echo 0 ;; esac
}

# One run: prints "wall user rss_kb".
run() {
  local bin=$1; shift
  # shellcheck disable=SC2046
  /usr/bin/time -f '%e %U %M' -o "$work/time" "$bin" "$@" >"$work/out" 2>"$work/err" ||
    { tail -5 "$work/err" >&2; exit 1; }
  cat "$work/time"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for c in "${cases[@]}"; do
  read -r -a args <<<"$(args_of "$c")"
  echo "== $c: lagpilot ${args[*]}"
  : >"$work/new.t"; : >"$work/base.t"
  for ((i = 1; i <= RUNS; ++i)); do
    if [[ -n $BASE ]]; then
      read -r w u m < <(run "$BASE" "${args[@]}")
      printf '  before run %d: %7.2f s wall %7.2f s user %8d KB max RSS\n' "$i" "$w" "$u" "$m"
      echo "$w $m" >>"$work/base.t"
    fi
    read -r w u m < <(run "$NEW" "${args[@]}")
    printf '  after  run %d: %7.2f s wall %7.2f s user %8d KB max RSS\n' "$i" "$w" "$u" "$m"
    echo "$w $m" >>"$work/new.t"
  done
  n=$(cut -d' ' -f1 "$work/new.t" | median)
  n_rss=$(cut -d' ' -f2 "$work/new.t" | sort -n | tail -1)
  k=$(configs_of "$c")
  line="  median after: $n s wall, max RSS $((n_rss / 1024)) MB"
  if ((k > 0)); then line+=", $(awk -v k="$k" -v w="$n" 'BEGIN { printf "%.0f", 60 * k / w }') configurations/min"; fi
  if [[ -n $BASE ]]; then
    b=$(cut -d' ' -f1 "$work/base.t" | median)
    b_rss=$(cut -d' ' -f2 "$work/base.t" | sort -n | tail -1)
    line+="; before: $b s wall, max RSS $((b_rss / 1024)) MB"
    if ((k > 0)); then line+=", $(awk -v k="$k" -v w="$b" 'BEGIN { printf "%.0f", 60 * k / w }') configurations/min"; fi
    line+="; speed-up $(awk -v a="$b" -v b="$n" 'BEGIN { printf "%.2f", a / b }')x"
  fi
  echo "$line"
  echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
