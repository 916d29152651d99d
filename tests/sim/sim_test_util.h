#pragma once
// Helpers shared by the simulator tests: a scripted policy and small traces.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "policies/guards.h"
#include "policies/policy.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace lagpilot::sim::testing {

// A policy whose decision is a function of the observation; it can record what it saw.
class ScriptedPolicy : public Policy {
 public:
  using Rule = std::function<int(const Observation&)>;
  explicit ScriptedPolicy(Rule rule, std::vector<Observation>* seen = nullptr)
      : rule_(std::move(rule)), seen_(seen) {}
  std::string name() const override { return "scripted"; }
  Proposal decide(const Observation& obs) override {
    if (seen_) seen_->push_back(obs);
    return Proposal{rule_(obs), "scripted"};
  }
  nlohmann::json params() const override { return nlohmann::json::object(); }

 private:
  Rule rule_;
  std::vector<Observation>* seen_;
};

inline std::unique_ptr<Policy> fixed_policy(int workers, std::vector<Observation>* seen = nullptr) {
  return std::make_unique<ScriptedPolicy>([workers](const Observation&) { return workers; }, seen);
}

// Guards that let any size from 0 to 64 through untouched.
inline GuardConfig open_guards() {
  GuardConfig g;
  g.min_workers = 0;
  g.max_workers = 64;
  g.hard_min_workers = 0;
  g.hard_max_workers = 64;
  g.scale_down_window_seconds = 0.0;
  return g;
}

// open_guards() within [min_workers, max_workers].
inline GuardConfig bounds(int min_workers, int max_workers) {
  GuardConfig g = open_guards();
  g.min_workers = min_workers;
  g.max_workers = max_workers;
  return g;
}

// Linear capacity: `per_worker` messages/s per worker, deterministic service, no USL.
inline SimConfig linear_config(double per_worker, double warmup, int initial, int64_t slo) {
  SimConfig c;
  c.model.service_mean_seconds = 1.0 / per_worker;
  c.model.usl_sigma = 0.0;
  c.model.usl_kappa = 0.0;
  c.model.service_distribution = "deterministic";
  c.model.service_cv = 0.0;
  c.model.warmup_seconds = warmup;
  c.initial_workers = initial;
  c.lag_slo = slo;
  return c;
}

inline Trace constant_trace(double rate, double seconds, double bin_seconds = 1.0) {
  Trace t;
  t.source = "constant";
  t.bin_seconds = bin_seconds;
  t.rates.assign(static_cast<std::size_t>(seconds / bin_seconds + 0.5), rate);
  return t;
}

// Quiet, then a burst above capacity, then quiet again (1 s bins).
inline Trace burst_trace(double base, double peak, double quiet_s, double burst_s) {
  Trace t;
  t.source = "burst";
  t.bin_seconds = 1.0;
  for (int i = 0; i < quiet_s; ++i) t.rates.push_back(base);
  for (int i = 0; i < burst_s; ++i) t.rates.push_back(peak);
  for (int i = 0; i < 2 * quiet_s; ++i) t.rates.push_back(base);
  return t;
}

}  // namespace lagpilot::sim::testing
