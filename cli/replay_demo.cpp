#include "cli/replay_demo.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

#include "controller/loadgen/ledger.h"
#include "sim/trace_reader.h"

namespace lagpilot::cli {
namespace {

struct Summary {
  uint64_t produced = 0, processed = 0, unique = 0, duplicates = 0, lost = 0;
};

// Checks the ledger against the sequence numbers the in-process producer sent (0..produced-1).
Summary check_ledger(const std::string& path, uint64_t produced) {
  Summary s;
  s.produced = produced;
  std::vector<uint8_t> seen(produced, 0);
  for (const LedgerEntry& e : read_ledger(path)) {
    ++s.processed;
    if (e.seq < 0 || static_cast<uint64_t>(e.seq) >= produced) continue;
    if (seen[e.seq]++) ++s.duplicates;
  }
  for (uint8_t v : seen) s.unique += v > 0;
  s.lost = produced - s.unique;
  return s;
}

}  // namespace

ReplayDemo::ReplayDemo(ReplayOptions options, AppConfig& config)
    : options_(std::move(options)), config_(config) {
  if (config.runtime.ledger.empty()) {
    config.runtime.ledger = "/tmp/lagpilot-ledger-" + std::to_string(::getpid()) + ".txt";
  }
  std::remove(config.runtime.ledger.c_str());
  trace_ = sim::load_trace(options_.trace);
  // The speed-up is read before the call: the order in which a call's arguments are evaluated
  // is unspecified, and the by-value parameter may take trace_ first (clang does).
  const double speedup = trace_.duration() / options_.seconds;
  trace_ = sim::compress_time(std::move(trace_), speedup);
  peak_ = options_.peak_rate;
  if (peak_ <= 0) {
    peak_ = 0.9 * config.guards.max_workers /
            std::max(1e-6, config.runtime.handler.synthetic.service_mean_seconds);
  }
  trace_ = sim::scale_to_peak(std::move(trace_), peak_);
}

ReplayDemo::~ReplayDemo() {
  stop_producer();
}

void ReplayDemo::start(const std::string& bootstrap, const Clock& clock) {
  ProducerOptions po;
  po.bootstrap = bootstrap;
  po.topic = config_.runtime.kafka.topics.front();
  po.trace_rates = trace_.rates;
  po.trace_bin_seconds = trace_.bin_seconds;
  po.keys = options_.keys;
  spdlog::info("replaying {} over {:.0f} s, peak {:.0f}/s, about {:.0f} messages", options_.trace,
               trace_.duration(), peak_, trace_.total_messages());
  std::lock_guard lock(join_mutex_);
  producer_thread_ = std::thread([this, po, &clock] {
    PacedProducer producer(po, clock);
    produced_ = producer.run(producer_stop_);
    producer_done_.store(true);
  });
}

bool ReplayDemo::over(const TickReport& report, double now) {
  if (!producer_done_.load()) return false;
  if (drained_since_ < 0) drained_since_ = now;
  const bool drained = report.observation.total_lag == 0 &&
                       report.source.processed + report.source.failed >= produced_.delivered;
  return drained || now - drained_since_ > options_.drain_timeout;
}

void ReplayDemo::stop_producer() {
  producer_stop_.store(true);
  std::lock_guard lock(join_mutex_);
  if (producer_thread_.joinable()) producer_thread_.join();
}

int ReplayDemo::finish(const SourceStats& final_stats, const RuntimeTotals& totals) {
  stop_producer();
  const Summary s = check_ledger(config_.runtime.ledger, produced_.produced);
  std::cout << "\nsummary: produced=" << s.produced << " (delivery failures " << produced_.failed
            << ") processed=" << s.processed << " unique=" << s.unique << " lost=" << s.lost
            << " duplicates=" << s.duplicates << " handler_failures=" << final_stats.failed
            << " lost_to_retention=" << final_stats.lost_to_retention << "\n"
            << "         seconds_above_lag_slo(" << config_.runtime.lag_slo
            << ")=" << totals.seconds_above_slo << " worker_seconds=" << totals.worker_seconds
            << " scale_actions=" << totals.scale_actions << " max_lag=" << totals.max_lag
            << std::endl;
  if (s.lost > 0 || produced_.failed > 0) {
    spdlog::error("{} messages lost", s.lost + produced_.failed);
    return 1;
  }
  return 0;
}

}  // namespace lagpilot::cli
