#!/usr/bin/env bash
# M/M/c side by side: `lagpilot sim` against the textbook SimPy 2 model (bench/mmc_simpy.py) on
# the same queue, in one run, each as a whole process (start-up and output included).
#
#   arrival rate 12/s, service rate 1/s (exponential), 16 servers, ~2,000,000 customers,
#   message fidelity, static 16 workers, no USL, no warm-up
#
# Prints each run's wall time, CPU time (user + system) and peak RSS, the medians, the ratio
# SimPy / lagpilot of the wall times (goal >= 100) and of the CPU times, and both mean waits next
# to Erlang C's (goal: lagpilot within 1 %). On a shared machine the wall ratio moves with the
# load (a run of a few seconds and one of minutes do not see the same load); the CPU ratio does
# not, and it is the conservative figure (lagpilot's helper threads add CPU, not wall time).
# Last, the process start alone (`lagpilot --version`), the fixed part of lagpilot's time.
#
#   bench/mmc_vs_simpy.sh                        # build/release/cli/lagpilot, 5 + 3 runs
#   LAGPILOT=/tmp/lagpilot-baseline RUNS=9 SIMPY_RUNS=1 bench/mmc_vs_simpy.sh
#   CUSTOMERS=200000 bench/mmc_vs_simpy.sh       # a quicker look
#   BASELINE=/tmp/lagpilot-before bench/mmc_vs_simpy.sh   # and an older lagpilot beside it
#
# Needs /usr/bin/python3 with python3-simpy (scripts/install-deps.sh).
set -euo pipefail

BIN=${LAGPILOT:-build/release/cli/lagpilot}
BASELINE=${BASELINE:-}  # a second lagpilot (e.g. before a change), run beside the first
RUNS=${RUNS:-5}
SIMPY_RUNS=${SIMPY_RUNS:-3}
CUSTOMERS=${CUSTOMERS:-2000000}
here=$(cd "$(dirname "$0")" && pwd)

[[ -x $BIN ]] || { echo "mmc_vs_simpy: $BIN not built" >&2; exit 1; }
/usr/bin/python3 -c 'import SimPy.Simulation' 2>/dev/null ||
  { echo "mmc_vs_simpy: python3-simpy missing (scripts/install-deps.sh)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 100 s bins of 1200 arrivals (12/s), as many as make CUSTOMERS expected arrivals.
bins=$(( (CUSTOMERS + 1199) / 1200 ))
awk -v n="$bins" 'BEGIN { print "timestamp,count"; for (i = 0; i < n; ++i) print i * 100 ",1200" }' \
  >"$work/mmc.csv"
cat >"$work/mmc.json" <<'JSON'
{
  "lag_slo": 1000000,
  "guards": {"min_workers": 1, "max_workers": 16, "scale_down_window_seconds": 0},
  "sim": {
    "fidelity": "message", "seed": 1, "initial_workers": 16, "tick_seconds": 1,
    "model": {"service_mean_seconds": 1.0, "service_distribution": "exponential",
              "usl_sigma": 0, "usl_kappa": 0, "warmup_seconds": 0}
  }
}
JSON

# Runs "$@"; prints "wall_seconds max_rss_kb cpu_seconds" of that process alone, from its start
# to its exit (bench/time_process.py: no other process in the timed span).
measure() {
  "$here/time_process.py" "$work/out" "$work/err" "$@" || { cat "$work/err" >&2; exit 1; }
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

lp_times=() sp_times=() base_times=() lp_cpu=() sp_cpu=() base_cpu=()
lp_rss=0 sp_rss=0 base_rss=0
lagpilot_run() {
  read -r t rss c < <(measure "$BIN" sim --trace "$work/mmc.csv" --config "$work/mmc.json" \
    --policy static:16 --fidelity message --json "$work/mmc-out.json")
  lp_times+=("$t"); lp_cpu+=("$c"); (( rss > lp_rss )) && lp_rss=$rss
  printf '  lagpilot run %d: %6.3f s wall, %6.2f s CPU, %7d KB max RSS\n' "${#lp_times[@]}" "$t" "$c" "$rss"
  if [[ -n $BASELINE ]]; then
    read -r t rss c < <(measure "$BASELINE" sim --trace "$work/mmc.csv" --config "$work/mmc.json" \
      --policy static:16 --fidelity message --json "$work/base-out.json")
    base_times+=("$t"); base_cpu+=("$c"); (( rss > base_rss )) && base_rss=$rss
    printf '  baseline run %d: %6.3f s wall, %6.2f s CPU, %7d KB max RSS\n' "${#base_times[@]}" "$t" "$c" "$rss"
  fi
}
simpy_run() {
  read -r t rss c < <(measure /usr/bin/python3 "$here/mmc_simpy.py" "$CUSTOMERS" 12 1 16 1)
  sp_times+=("$t"); sp_cpu+=("$c"); (( rss > sp_rss )) && sp_rss=$rss
  cp "$work/out" "$work/simpy-out"
  printf '  simpy    run %d: %6.3f s wall, %6.2f s CPU, %7d KB max RSS\n' "${#sp_times[@]}" "$t" "$c" "$rss"
}

echo "M/M/c: lambda 12/s, mu 1/s, c 16, ~$CUSTOMERS customers ($BIN)"
# Interleaved, so that both see the same background load.
for ((i = 0; i < RUNS || i < SIMPY_RUNS; ++i)); do
  if ((i < RUNS)); then lagpilot_run; fi
  if ((i < SIMPY_RUNS)); then simpy_run; fi
done

if [[ -n $BASELINE ]]; then
  base=$(printf '%s\n' "${base_times[@]}" | median)
  base_c=$(printf '%s\n' "${base_cpu[@]}" | median)
  cmp -s "$work/mmc-out.json" "$work/base-out.json" && same="byte-identical" || same="DIFFERENT"
  echo "baseline median wall: $base s, CPU $base_c s (max RSS $((base_rss / 1024)) MB); KPI JSON of the two: $same"
fi
lp=$(printf '%s\n' "${lp_times[@]}" | median)
sp=$(printf '%s\n' "${sp_times[@]}" | median)
lp_c=$(printf '%s\n' "${lp_cpu[@]}" | median)
sp_c=$(printf '%s\n' "${sp_cpu[@]}" | median)
lp_wait=$(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); k=r["runs"][0]["kpis"]; print(k["mean_wait_seconds"], k["arrived"])' "$work/mmc-out.json")
sp_wait=$(awk '{ print $5, $3 }' "$work/simpy-out")
erlang=$(/usr/bin/python3 - <<'PY'
lam, mu, c = 12.0, 1.0, 16
a = lam / mu
term, total = 1.0, 0.0
for k in range(c):
    total += term
    term *= a / (k + 1)
tail = term / (1 - a / c)
print(tail / (total + tail) / (c * mu - lam))
PY
)
/usr/bin/python3 - "$lp" "$sp" "$lp_rss" "$sp_rss" "$erlang" $lp_wait $sp_wait "$lp_c" "$sp_c" <<'PY'
import sys
lp, sp, lp_rss, sp_rss, erlang, lp_wait, lp_n, sp_wait, sp_n, lp_c, sp_c = sys.argv[1:]
lp, sp, erlang, lp_wait, sp_wait, lp_c, sp_c = map(float, (lp, sp, erlang, lp_wait, sp_wait, lp_c, sp_c))
ratio = sp / lp if lp > 0 else float("inf")
cpu_ratio = sp_c / lp_c if lp_c > 0 else float("inf")
err = abs(lp_wait / erlang - 1) * 100
print(f"median wall: lagpilot {lp:.3f} s (max RSS {int(lp_rss) / 1024:.1f} MB), "
      f"simpy {sp:.3f} s (max RSS {int(sp_rss) / 1024:.1f} MB)")
print(f"ratio simpy / lagpilot: {ratio:.1f}x wall (goal >= 100x: {'met' if ratio >= 100 else 'NOT met'}), "
      f"{cpu_ratio:.1f}x CPU (median CPU: lagpilot {lp_c:.2f} s, simpy {sp_c:.2f} s)")
print(f"mean wait: lagpilot {lp_wait:.5f} s ({lp_n} customers), simpy {sp_wait:.5f} s "
      f"({sp_n} customers), Erlang C {erlang:.5f} s; lagpilot off by {err:.2f} % "
      f"(goal <= 1 %: {'met' if err <= 1 else 'NOT met'})")
PY
# The fixed part of lagpilot's whole-process time: loading the binary and its shared libraries
# (librdkafka, OpenSSL, cpp-httplib, prometheus-cpp, which `sim` links but never calls) and
# exiting, measured as `lagpilot --version`.
starts=()
for ((i = 0; i < 9; ++i)); do
  read -r t _ _ < <(measure "$BIN" --version)
  starts+=("$t")
done
start=$(printf '%s\n' "${starts[@]}" | median)
awk -v s="$start" -v w="$lp" 'BEGIN { printf "process start (lagpilot --version, median of 9): %.1f ms, %.0f %% of lagpilot'"'"'s median wall\n", 1000 * s, 100 * s / w }'
