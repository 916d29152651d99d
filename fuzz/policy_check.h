#pragma once
// What every policy built from accepted params must do, whatever the params were (shared by the
// fuzz checks in this folder): report params() that build the same policy again, and decide on
// a short run of observations (quiet, a burst, a huge backlog, a drain) with proposals inside
// the bounds the observation gives, without undefined behaviour (the sanitizers watch that).
//
// Thread-safety: pure apart from the Policy passed in, which is used from the calling thread.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/config_reader.h"
#include "policies/observation.h"
#include "policies/policy.h"
#include "policies/policy_factory.h"

namespace lagpilot::fuzz {

// "" when `policy` (built by make_policy(name, ..., path)) keeps the contract above.
inline std::string check_policy(const std::string& name, Policy& policy, const std::string& path) {
  if (policy.name() != name) return "policy " + name + " calls itself " + policy.name();
  const nlohmann::json params = policy.params();
  const auto dump = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::unique_ptr<Policy> again;
  try {
    again = make_policy(name, params, path);
  } catch (const ConfigError& e) {
    return "params() of " + name + " do not load again: " + e.what() + "; params " + dump(params);
  }
  if (again->params() != params) {
    return "params() of " + name + " change on reload: " + dump(params) + " -> " +
           dump(again->params());
  }

  // (lag, arrival rate) per tick; workers follow the proposals, as the guards would let them.
  struct Load {
    int64_t lag;
    double arrival_rate;
  };
  static const std::vector<Load> kLoads = {
      {0, 0},
      {0, 100},
      {5000, 2000},
      {20000, 5000},
      {1'000'000, 1e5},
      {1'000'000, 1e5},
      {400000, 1000},
      {1000, 10},
      {0, 0},
      {0, 0},
      {int64_t{1} << 40, 1e12},
      {0, 1e-9},
      {123456789, 3e6},
      {0, 0},
  };
  int workers = 4;
  double time = 0;
  for (std::size_t i = 0; i < kLoads.size(); ++i) {
    Observation obs;
    time += i % 3 == 0 ? 15.0 : 1.0;
    obs.time = time;
    obs.total_lag = kLoads[i].lag;
    obs.partition_lag = {{"t", 0, kLoads[i].lag}};
    obs.arrival_rate = kLoads[i].arrival_rate;
    obs.processed_rate = 250.0 * workers;
    obs.lag_slope = obs.arrival_rate - obs.processed_rate;
    obs.latency_p50 = 0.004;
    obs.latency_p99 = 0.02;
    obs.record_age_p99 = static_cast<double>(kLoads[i].lag) / 1000.0;
    obs.current_workers = workers;
    obs.busy_workers = workers * 0.8;
    obs.queue_depth = 10;
    obs.queue_capacity = 1000;
    obs.assigned_partitions = 8;
    obs.min_workers = i < 7 ? 4 : 1;
    obs.max_workers = i < 7 ? 16 : 64;
    obs.explain = i % 2 == 0;
    const Proposal p = policy.decide(obs);
    if (p.workers < obs.min_workers || p.workers > obs.max_workers) {
      return name + " proposed " + std::to_string(p.workers) + " workers outside [" +
             std::to_string(obs.min_workers) + ", " + std::to_string(obs.max_workers) +
             "] with params " + dump(params);
    }
    workers = p.workers;
  }
  (void)policy.state().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return "";
}

}  // namespace lagpilot::fuzz
