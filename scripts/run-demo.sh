#!/usr/bin/env bash
# The main job behind `make run`: an embedded Kafka broker, a producer thread replaying a real
# trace (the Kafka input rate of a recorded autoscaling run, compressed to ~90 s), and the pid
# policy resizing the worker pool between 4 and 16 workers (config/demo.json: a 10 s scale-down
# window, since the whole demo lasts 90 s). Prints a status line per second and
# a summary; exits non-zero if any message was lost.
set -euo pipefail
bin=${1:-build/release/cli/lagpilot}
here=$(cd "$(dirname "$0")/.." && pwd)
exec "$bin" run --embedded-broker --config "$here/config/demo.json" \
  --replay "$here/traces/espa_q1_cosine_HPA50_input_rate.csv" --replay-seconds 90 \
  --ledger "${LAGPILOT_DEMO_LEDGER:-/tmp/lagpilot-demo-ledger.txt}"
