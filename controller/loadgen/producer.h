#pragma once
// A paced Kafka producer (librdkafka C API) for demos, load tests and benchmarks.
//
// Every value is encode_message(seq, sent_us, padding_bytes) (see message_codec.h) with seq
// counting up from first_seq. Pacing is a token bucket (token_bucket.h) read against the
// injected Clock: the target rate is `rate`, or, when trace_rates is not empty, the
// piecewise-constant schedule trace_rates[i] for clock time in [i, i+1) * trace_bin_seconds
// measured from the start of run(). The bucket starts with one token (the first message goes
// out at once) and holds burst_seconds of the current rate (at least 1 token); so after t
// seconds at most 1 + integral(rate) messages were produced. Produce calls are made in batches of
// whatever the bucket allows, so rates of 100k msg/s and more are reachable. Between batches the
// thread sleeps in small steps (<= 1 ms) on the wall clock and serves delivery reports.
//
// With `pace` set (live pacing, e.g. from a PacingPoller), every loop iteration asks it for the
// target; when it changes, the bucket is re-rated to its rate and burst from that moment
// (follow_pace). Until the first target, `rate` applies. `pace` excludes trace_rates.
//
// RD_KAFKA_RESP_ERR__QUEUE_FULL is handled by polling and retrying the same message: no message
// is dropped by the producer. Every failed delivery (report with an error) is counted and
// logged (the first few individually, then a summary at the end).
//
// run() stops when `stop` becomes true, when `count` messages were produced (if count > 0), or
// when the trace ends (if trace_rates is not empty; the tokens of the last bin are taken at the
// trace's end time, so a replay produces 1 + sum(rate * bin) messages); it then flushes (waits for
// every delivery report, up to flush_timeout_seconds) and returns the totals.
//
// Thread-safety: one thread calls run(); `stop` may be set from any thread. stats() may be read
// from any thread while run() is going.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controller/loadgen/pacing_poller.h"
#include "policies/clock.h"

namespace lagpilot {

struct ProducerOptions {
  std::string bootstrap;
  std::string topic;
  double rate = 1000;               // msg/s, used when trace_rates is empty
  std::vector<double> trace_rates;  // msg/s per bin (already time-scaled); optional
  double trace_bin_seconds = 1;
  uint64_t keys = 0;   // 0 = no key, else key = "k<seq % keys>"
  uint64_t count = 0;  // 0 = until stopped or trace end
  uint64_t first_seq = 0;
  std::size_t padding_bytes = 0;
  std::map<std::string, std::string> properties;  // extra librdkafka settings (override ours)
  double flush_timeout_seconds = 30;  // run() waits this long for delivery reports at the end
  double burst_seconds = 0.010;       // token bucket size, in seconds of the current rate (>= 1)
  // Live pacing: called from run()'s thread once per loop iteration; must not block (return a
  // value fetched elsewhere, as PacingPoller::latest() does). nullopt keeps the current pace.
  std::function<std::optional<PaceTarget>()> pace;
};

struct ProducerStats {
  uint64_t produced = 0;      // accepted by rd_kafka_produce (queued)
  uint64_t delivered = 0;     // delivery report without error
  uint64_t failed = 0;        // delivery report with an error, or undelivered at flush timeout
  uint64_t pace_changes = 0;  // times `pace` re-rated the bucket
  double rate = 0;            // the target rate now (messages/s)
};

class PacedProducer {
 public:
  // Validates the options and creates the librdkafka producer. Throws std::invalid_argument
  // (naming the field) on bad options and std::runtime_error if librdkafka refuses the config.
  PacedProducer(ProducerOptions options, const Clock& clock);
  ~PacedProducer();

  PacedProducer(const PacedProducer&) = delete;
  PacedProducer& operator=(const PacedProducer&) = delete;

  // Blocks until stop / count / trace end, then flushes. Call at most once.
  ProducerStats run(const std::atomic<bool>& stop);

  // Live totals (any thread).
  ProducerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lagpilot
