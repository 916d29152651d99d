#!/usr/bin/env bash
# API load benchmark: wrk with many keep-alive connections against a running `lagpilot run`
# (embedded broker), on /v1/status and /metrics, first with the consumer idle (no traffic),
# then while it consumes a replayed trace. Prints requests/s, p50/p99 latency and how many
# control ticks the loop kept during each load, against the ticks a quiet window of the same
# length gets.
#
#   bench/api_load.sh                     # build/release/cli/lagpilot, 64 connections, 10 s
#   CONNS=128 SECONDS_PER_RUN=20 bench/api_load.sh
#
# Needs wrk and curl (scripts/install-deps.sh installs wrk).
set -euo pipefail

BIN=${LAGPILOT:-build/release/cli/lagpilot}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
RUN=${SECONDS_PER_RUN:-10}
TRACE=${TRACE:-traces/nab_nyc_taxi.csv}
PORT=${PORT:-19464}
URL="http://127.0.0.1:${PORT}"

command -v wrk >/dev/null || { echo "api_load: wrk not found (scripts/install-deps.sh)" >&2; exit 1; }
command -v curl >/dev/null || { echo "api_load: curl not found" >&2; exit 1; }
[[ -x $BIN ]] || { echo "api_load: $BIN not built" >&2; exit 1; }

ticks() { curl -sf "$URL/v1/status" | sed -n 's/.*"ticks":\([0-9]*\).*/\1/p'; }

wait_ready() {
  for _ in $(seq 1 300); do
    if curl -sf "$URL/readyz" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "api_load: lagpilot did not become ready" >&2
  return 1
}

# wrk on one path: prints "req/s p50 p99 ticks_kept"
load() {
  local path=$1 before after out rps p50 p99
  before=$(ticks)
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"${RUN}s" --latency "$URL$path")
  after=$(ticks)
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')
  printf '%s %s %s %s %s\n' "$rps" "$p50" "$p99" "$((after - before))" "${errors:-none}"
}

phase() {
  local name=$1
  shift
  "$BIN" run --embedded-broker --listen "127.0.0.1:$PORT" --log-format json "$@" \
    >/tmp/api_load_$name.log 2>&1 &
  local pid=$!
  trap 'kill $pid 2>/dev/null || true' EXIT
  wait_ready
  sleep 2  # a few ticks after the first assignment
  local t0 quiet
  t0=$(ticks)
  sleep "$RUN"
  quiet=$(($(ticks) - t0))
  read -r s_rps s_p50 s_p99 s_ticks s_err < <(load /v1/status)
  read -r m_rps m_p50 m_p99 m_ticks m_err < <(load /metrics)
  kill -INT $pid
  wait $pid || true
  trap - EXIT
  printf '%-9s %-10s %10s %9s %9s %13s  %s\n' "$name" /v1/status "$s_rps" "$s_p50" "$s_p99" \
    "$s_ticks/$quiet" "$s_err"
  printf '%-9s %-10s %10s %9s %9s %13s  %s\n' "$name" /metrics "$m_rps" "$m_p50" "$m_p99" \
    "$m_ticks/$quiet" "$m_err"
}

echo "wrk -t$THREADS -c$CONNS -d${RUN}s; ticks: during the load / in a quiet ${RUN} s window"
printf '%-9s %-10s %10s %9s %9s %13s  %s\n' phase path "req/s" p50 p99 ticks errors
phase idle --duration $((RUN * 3 + 30))
phase consuming --replay "$TRACE" --replay-seconds $((RUN * 3 + 30))
