#pragma once
// The binary's built-in message handler: it stands in for real work so that the pool, the
// policies and the guards can be exercised end to end.
//
// Each message "works" for a service time drawn from a lognormal distribution with the given
// mean and coefficient of variation (cv = 0: exactly the mean). An optional downstream capacity
// (messages/s shared by all workers, like a feature store's write quota) is modelled with a
// shared token bucket: a message waits for its token before it starts, so throughput cannot
// exceed the capacity however many workers run, and latency grows instead. Work is done by
// sleeping, because the handler is a stand-in for I/O-bound work.
//
// Thread-safety: operator() is called concurrently from pool workers. Randomness: each worker
// thread gets its own generator, seeded from `seed` and a per-thread sequence number.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/kafka/kafka_source.h"

namespace lagpilot {

struct SyntheticHandlerConfig {
  double service_mean_seconds = 0.005;
  double service_cv = 0.5;
  double downstream_capacity = 0.0;  // messages/s; 0 = unlimited
  uint64_t seed = 1;

  static SyntheticHandlerConfig from_json(const nlohmann::json& j,
                                          const std::string& path = "handler");
  nlohmann::json to_json() const;
};

class SyntheticHandler {
 public:
  explicit SyntheticHandler(SyntheticHandlerConfig config);
  void operator()(const SourceMessage& message);

 private:
  SyntheticHandlerConfig config_;
  double mu_ = 0.0, sigma_ = 0.0;         // lognormal parameters
  std::atomic<uint64_t> next_stream_{0};  // atomic: worker threads take stream ids
  std::mutex downstream_mutex_;           // guards next_downstream_slot_
  double next_downstream_slot_ = 0.0;     // steady seconds at which the next token is free
};

}  // namespace lagpilot
