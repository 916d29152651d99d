#!/usr/bin/env bash
# Control-loop cadence: runs `lagpilot run --embedded-broker` and measures the intervals between
# its ticks (the "t" of its JSON status lines) idle, while it consumes a replayed trace, and while
# it consumes under 64 keep-alive wrk connections on /v1/status. Prints, per phase, the median
# and p99 interval against tick_seconds (goal: median within 5 %, p99 within 1.5x), the ticks
# that said they were late, and the skipped ones.
#
#   bench/tick_cadence.sh                 # build/release/cli/lagpilot, 30 s per phase
#   SECONDS_PER_RUN=60 bench/tick_cadence.sh
set -euo pipefail

BIN=${LAGPILOT:-build/release/cli/lagpilot}
RUN=${SECONDS_PER_RUN:-30}
TRACE=${TRACE:-traces/nab_nyc_taxi.csv}
PORT=${PORT:-19474}
CONNS=${CONNS:-64}
[[ -x $BIN ]] || { echo "tick_cadence: $BIN not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

phase() {
  local name=$1 with_wrk=$2
  shift 2
  "$BIN" run --embedded-broker --listen "127.0.0.1:$PORT" --log-format json \
    --duration $((RUN + 8)) "$@" >"$work/$name.out" 2>"$work/$name.err" &
  local pid=$!
  if [[ $with_wrk == yes ]]; then
    command -v wrk >/dev/null || { echo "tick_cadence: wrk not found" >&2; exit 1; }
    sleep 6
    wrk -t2 -c"$CONNS" -d"$((RUN - 2))s" "http://127.0.0.1:$PORT/v1/status" >"$work/$name.wrk" || true
  fi
  wait $pid || true
  python3 - "$name" "$work/$name.out" "$RUN" <<'PY'
import json, sys
name, path, run = sys.argv[1], sys.argv[2], float(sys.argv[3])
ticks = []
for line in open(path):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if isinstance(j, dict) and "t" in j and "late_seconds" in j:
        ticks.append(j)
# Skip the first 5 s (start-up, the first assignment).
ticks = [j for j in ticks if j["t"] >= ticks[0]["t"] + 5] if ticks else []
gaps = sorted(b["t"] - a["t"] for a, b in zip(ticks, ticks[1:]))
if not gaps:
    print(f"{name:<20} no ticks"); sys.exit(0)
med = gaps[len(gaps) // 2]
p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]
late = sum(1 for j in ticks if "late tick" in j.get("reason", ""))
skipped = sum(1 for j in ticks if "skipped" in j.get("reason", ""))
print(f"{name:<20} {len(ticks):>6} {med:>10.3f} {p99:>9.3f} {late:>6} {skipped:>8}")
PY
}

echo "tick_seconds 1 (default config); intervals in seconds"
printf '%-20s %6s %10s %9s %6s %8s\n' phase ticks median p99 late skipped
phase idle no
phase consuming no --replay "$TRACE" --replay-seconds $((RUN + 8))
phase consuming+wrk yes --replay "$TRACE" --replay-seconds $((RUN + 8))
