#include "sim/oracle.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "sim/fluid_lag.h"
#include "sim/oracle_solver.h"

namespace lagpilot::sim {

using fluid::check_config;
using fluid::check_trace;
using fluid::fluid_run;
using fluid::tick_count;

OracleResult solve_oracle(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                          const OracleOptions& options) {
  OracleResult result = fluid::solve_schedule(trace, config, guards, options);

  RunResult& run = result.run;
  run.label = "oracle";
  run.policy = "oracle";
  run.fidelity = "fluid";
  FluidRun fluid = fluid_run(trace, config, result.workers, &run, "oracle");
  run.kpis = fluid.kpis;
  const double tick = config.tick_seconds;
  result.ticks_above_slo = std::llround(fluid.kpis.seconds_above_slo / tick);
  run.policy_params = nlohmann::json{
      {"model", "fluid"},
      {"min_workers", guards.min_workers},
      {"max_workers", guards.max_workers},
      {"best_workers", result.best_workers},
      {"warmup_seconds", config.model.warmup_seconds},
      {"lag_slo", config.lag_slo},
      {"lower_bound_worker_seconds", static_cast<double>(result.bound_worker_ticks) * tick},
      {"unavoidable_seconds_above_slo", static_cast<double>(result.unavoidable_ticks) * tick},
      {"feasible", result.feasible()},
      {"dp_ticks", result.dp_ticks},
      {"segments", result.segments}};
  return result;
}

FluidRun evaluate_fluid(const Trace& trace, const SimConfig& config,
                        const WorkerSchedule& workers) {
  return fluid_run(trace, config, workers, nullptr, "");
}

SchedulePolicy::SchedulePolicy(WorkerSchedule workers, double tick_seconds)
    : workers_(std::move(workers)), tick_seconds_(tick_seconds) {
  if (workers_.empty()) throw std::invalid_argument("SchedulePolicy: empty schedule");
  if (!(tick_seconds_ > 0.0)) throw std::invalid_argument("SchedulePolicy: tick_seconds <= 0");
}

Proposal SchedulePolicy::decide(const Observation& obs) {
  const int64_t k = std::max<int64_t>(0, std::llround(obs.time / tick_seconds_));
  const int64_t i = std::min(k, workers_.size() - 1);
  Proposal p;
  p.workers = workers_.at(i, run_);
  if (obs.explain)
    p.reason = "schedule: tick " + std::to_string(k) + " wants " + std::to_string(p.workers);
  return p;
}

nlohmann::json SchedulePolicy::params() const {
  return nlohmann::json{{"ticks", workers_.size()}, {"tick_seconds", tick_seconds_}};
}

RunResult replay_schedule(const Trace& trace, const WorkerSchedule& workers,
                          const std::string& label, const GuardConfig& guards,
                          const SimConfig& config) {
  check_trace(trace, "replay_schedule");
  check_config(config, "replay_schedule");
  const int64_t ticks = tick_count(trace, config.tick_seconds);
  if (static_cast<int64_t>(workers.size()) != ticks) {
    throw std::invalid_argument("replay_schedule: schedule has " + std::to_string(workers.size()) +
                                " entries, the trace has " + std::to_string(ticks) + " ticks");
  }
  GuardConfig bounds_only = guards;
  bounds_only.max_step_up = 0;
  bounds_only.max_step_down = 0;
  bounds_only.scale_down_window_seconds = 0.0;
  bounds_only.latency_ceiling_seconds = 0.0;
  SimConfig c = config;
  c.initial_workers = workers[0];
  return simulate(trace, std::make_unique<SchedulePolicy>(workers, config.tick_seconds), label,
                  bounds_only, c);
}

}  // namespace lagpilot::sim
