#!/usr/bin/env python3
"""A stand-in for your own HTTP service behind lagpilot's `http` sink (stdlib only).

It takes CloudEvents in binary mode (the Kafka value is the body, attributes are ce-* headers),
waits --latency-ms per request, and answers:
  200  done
  429  when more than --max-concurrency requests are in progress (with Retry-After: 1)
  400  for keys that start with --reject-prefix (a permanent failure: lagpilot dead-letters it)
  500  at random, for a --fail-rate fraction of requests (transient: lagpilot retries)

  python3 examples/http-sink/server.py --port 8080 --latency-ms 5 --max-concurrency 6

--log FILE appends one line per 200 answer: "<ce-id> <ce-partitionkey>", for checking what was
delivered. The server runs on a thread pool (--threads), one thread per keep-alive connection.
"""
import argparse
import concurrent.futures
import http.server
import random
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080, help="0 picks a free port (printed)")
    ap.add_argument("--latency-ms", type=float, default=5.0)
    ap.add_argument("--max-concurrency", type=int, default=0, help="0 = unlimited")
    ap.add_argument("--fail-rate", type=float, default=0.0)
    ap.add_argument("--reject-prefix", default="")
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--log", default="")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    rng_lock = threading.Lock()
    state_lock = threading.Lock()  # guards in_progress and the counters
    state = {"in_progress": 0, "ok": 0, "busy": 0, "rejected": 0, "failed": 0}
    log = open(args.log, "a", buffering=1) if args.log else None
    log_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive

        def log_message(self, fmt, *a):  # quiet
            pass

        def answer(self, status, body=b"", headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            key = self.headers.get("ce-partitionkey", "")
            with state_lock:
                if args.max_concurrency and state["in_progress"] >= args.max_concurrency:
                    state["busy"] += 1
                    busy = True
                else:
                    state["in_progress"] += 1
                    busy = False
            if busy:
                self.answer(429, b"busy", [("Retry-After", "1")])
                return
            try:
                time.sleep(args.latency_ms / 1000.0)
                if args.reject_prefix and key.startswith(args.reject_prefix):
                    with state_lock:
                        state["rejected"] += 1
                    self.answer(400, b"rejected key")
                    return
                with rng_lock:
                    fail = rng.random() < args.fail_rate
                if fail:
                    with state_lock:
                        state["failed"] += 1
                    self.answer(500, b"random failure")
                    return
                if log:
                    with log_lock:
                        log.write("%s %s\n" % (self.headers.get("ce-id", ""), key))
                with state_lock:
                    state["ok"] += 1
                self.answer(200)
            finally:
                with state_lock:
                    state["in_progress"] -= 1

    class PooledServer(http.server.HTTPServer):
        daemon_threads = True

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.threads)

        def process_request(self, request, client_address):
            self.pool.submit(self._serve, request, client_address)

        def _serve(self, request, client_address):
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    server = PooledServer((args.host, args.port), Handler)
    print("listening on http://%s:%d" % (args.host, server.server_address[1]), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    print("served: %s" % state, file=sys.stderr)


if __name__ == "__main__":
    main()
