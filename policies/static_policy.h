#pragma once
// The `static` policy: a fixed pool size.
//
// Thread-safety: like every Policy, not thread-safe; the ControlLoop serialises calls.

#include <nlohmann/json.hpp>
#include <string>

#include "policies/policy.h"

namespace lagpilot {

struct StaticParams {
  int workers = 8;  // the pool size to hold, clamped to [obs.min_workers, obs.max_workers]

  // Reads {"workers": N}; throws ConfigError naming `path`.workers when out of range.
  static StaticParams from_json(const nlohmann::json& j, const std::string& path);
  nlohmann::json to_json() const;
};

// Algorithm: always proposes `workers` (default 8), clamped to the bounds in force. A baseline
// for comparisons ("what does a fixed pool of N cost and how much lag does it leave?").
class StaticPolicy : public Policy {
 public:
  explicit StaticPolicy(StaticParams params = {});

  std::string name() const override { return "static"; }
  bool reads_latency() const override { return false; }  // a fixed size
  Proposal decide(const Observation& obs) override;
  nlohmann::json params() const override { return params_.to_json(); }
  // It reads nothing but the bounds.
  TickSkipping tick_skipping() const override {
    return TickSkipping::kIdempotentOnUnchangedObservation;
  }

 private:
  StaticParams params_;
  // The reason depends only on the bounds: it is built when they change, not every tick (a
  // simulated run that records decisions asks for it on each of millions of ticks).
  std::string reason_;
  int reason_lo_ = -1, reason_hi_ = -1;
};

}  // namespace lagpilot
