#pragma once
// `lagpilot run --replay TRACE` (what `make run` shows): while the Service consumes, an
// in-process producer replays a recorded input rate (compressed in time, scaled to a peak) as
// sequence-numbered messages; the run stops once the trace is produced and the backlog is
// drained (or a drain timeout passes), and a summary checks the ledger of processed messages
// against what was produced: lost, duplicates, handler failures, lost to retention, and the
// controller's totals.
//
// Thread-safety: construct, start(), finish() on the main thread; over() and stop_producer()
// from the tick thread or the main thread (stop_producer() is idempotent and thread-safe).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "controller/app_config.h"
#include "controller/loadgen/producer.h"
#include "controller/metrics/tick_report.h"
#include "policies/clock.h"
#include "sim/trace.h"

namespace lagpilot::cli {

struct ReplayOptions {
  std::string trace;          // the trace file
  double seconds = 90;        // compress the trace to this long
  double peak_rate = 0;       // messages/s at the trace's peak; 0: 0.9 x capacity at max workers
  uint64_t keys = 64;         // distinct keys
  double drain_timeout = 60;  // seconds to wait for the backlog after the trace ends
};

class ReplayDemo {
 public:
  // Loads and shapes the trace (throws naming the file and line) and points config's ledger at
  // a fresh file (a temporary one when none was given): the sequence numbers start at 0.
  ReplayDemo(ReplayOptions options, AppConfig& config);
  ~ReplayDemo();  // stop_producer()

  // Starts the producer thread against the consumer's brokers and topic.
  void start(const std::string& bootstrap, const Clock& clock);
  // After each tick: true once the trace is produced and the backlog is drained, or the drain
  // timeout has passed since the trace ended.
  bool over(const TickReport& report, double now);
  // Stops producing and joins the producer thread. Idempotent.
  void stop_producer();
  // After the Service stopped: prints the summary; returns the exit status (1 if anything was
  // lost).
  int finish(const SourceStats& final_stats, const RuntimeTotals& totals);

 private:
  ReplayOptions options_;
  const AppConfig& config_;
  sim::Trace trace_;
  double peak_ = 0;
  std::atomic<bool> producer_stop_{false};  // atomic: set by stop_producer, read by the producer
  std::atomic<bool> producer_done_{false};  // atomic: set by the producer thread
  ProducerStats produced_;                  // written by the producer thread before done
  std::mutex join_mutex_;                   // guards producer_thread_ (its join)
  std::thread producer_thread_;
  double drained_since_ = -1;  // tick thread only
};

}  // namespace lagpilot::cli
