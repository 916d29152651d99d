#!/usr/bin/env python3
"""A stand-in for your own worker process behind lagpilot's `exec` sink (stdlib only).

lagpilot starts one of these per pool worker and writes one JSON line per message to its stdin:
  {"topic", "partition", "offset", "key", "value", "headers", "timestamp"}
(values that are not UTF-8 come base64-encoded, with "value_encoding": "base64"). It answers one
line per message on stdout:
  {"ok": true}                                          done
  {"ok": false, "error": "...", "retry": true}          try again later (pushback)
  {"ok": false, "error": "...", "retry": false}         never (dead-lettered, dropped or retried
                                                        as lagpilot's "failure" config says)

  --latency-ms 2       work per message
  --fail-rate 0.01     answer retry for this fraction of messages
  --crash-every N      exit after N messages (lagpilot restarts the worker and retries)
Anything written to stderr shows up in lagpilot's log.
"""
import argparse
import json
import random
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--fail-rate", type=float, default=0.0)
    ap.add_argument("--crash-every", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    handled = 0
    for line in sys.stdin:
        message = json.loads(line)
        if args.latency_ms:
            time.sleep(args.latency_ms / 1000.0)
        if args.fail_rate and rng.random() < args.fail_rate:
            reply = {"ok": False, "error": "busy, try later", "retry": True}
        else:
            reply = {"ok": True}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        handled += 1
        if args.crash_every and handled >= args.crash_every:
            print("crashing on purpose after %d messages (last offset %s)" % (handled, message["offset"]),
                  file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
