#!/usr/bin/env bash
# The main job behind `make run`: an embedded Kafka broker, a producer thread replaying a real
# trace (the Kafka input rate of a recorded autoscaling run, compressed to ~90 s), and the pid
# policy resizing the worker pool between 4 and 16 workers (config/demo.json: a 10 s scale-down
# window, since the whole demo lasts 90 s). Prints a status line per second (the first one names
# the control API's address) and a summary; exits non-zero if any message was lost.
#
# Several demos can run at once: each keeps its ledger in a private temporary directory
# (removed at the end unless LAGPILOT_DEMO_KEEP=1), and the API listens on port 9464 when it is
# free, else on a free port the kernel picks.
#   LAGPILOT_DEMO_PORT     the preferred port (default 9464)
#   LAGPILOT_DEMO_SECONDS  how long the replay lasts (default 90)
#   LAGPILOT_DEMO_LEDGER   write the ledger to this file instead
set -euo pipefail
bin=${1:-build/release/cli/lagpilot}
here=$(cd "$(dirname "$0")/.." && pwd)
port=${LAGPILOT_DEMO_PORT:-9464}
seconds=${LAGPILOT_DEMO_SECONDS:-90}

# True when something accepts connections on 127.0.0.1:$1.
port_taken() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
if port_taken "$port"; then
  echo "run-demo: port $port is taken; the API listens on a free port (see the first status line)" >&2
  port=0
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/lagpilot-demo.XXXXXX")
if [[ "${LAGPILOT_DEMO_KEEP:-0}" != 1 ]]; then trap 'rm -rf "$dir"' EXIT; fi
ledger=${LAGPILOT_DEMO_LEDGER:-$dir/ledger.txt}
"$bin" run --embedded-broker --config "$here/config/demo.json" --listen "127.0.0.1:$port" \
  --replay "$here/traces/espa_q1_cosine_HPA50_input_rate.csv" --replay-seconds "$seconds" \
  --ledger "$ledger"
