#pragma once
// A tiny deterministic fluid model of a consumer, for closed-loop policy tests: lag is a
// continuous quantity fed by a constant arrival rate and drained by workers at a fixed rate
// each, one step per tick:
//   processed = min(workers * per_worker_rate, lag / dt + arrival)
//   lag      += (arrival - processed) * dt
// It is an integrating plant: under a load of exactly k workers any lag is an equilibrium.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "policies/observation.h"
#include "policies/policy.h"

namespace lagpilot::testing {

struct FluidPlant {
  double per_worker_rate = 100.0;  // messages/s per worker
  double arrival = 0.0;            // messages/s
  double lag = 0.0;                // messages
  int workers = 4;
  double time = 0.0;
  double processed_rate = 0.0;  // over the last step
  double lag_slope = 0.0;
  int min_workers = 4;
  int max_workers = 16;
  int partitions = 12;

  Observation observe() const {
    Observation o;
    o.time = time;
    o.total_lag = std::llround(lag);
    // Spread the lag over the partitions (remainder on the first ones), as a scaler would see.
    if (partitions > 0) {
      const int64_t each = o.total_lag / partitions;
      int64_t rest = o.total_lag - each * partitions;
      for (int p = 0; p < partitions; ++p) {
        const int64_t extra = rest > 0 ? 1 : 0;
        rest -= extra;
        o.partition_lag.push_back({"t", p, each + extra});
      }
    }
    o.arrival_rate = arrival;
    o.processed_rate = processed_rate;
    o.lag_slope = lag_slope;
    o.current_workers = workers;
    o.busy_workers = per_worker_rate > 0.0 ? processed_rate / per_worker_rate : 0.0;
    o.assigned_partitions = partitions;
    o.min_workers = min_workers;
    o.max_workers = max_workers;
    return o;
  }

  void step(double dt) {
    processed_rate = std::min(workers * per_worker_rate, lag / dt + arrival);
    const double before = lag;
    lag += (arrival - processed_rate) * dt;
    lag = std::max(lag, 0.0);  // guards against -1e-13 from rounding
    lag_slope = (lag - before) / dt;
    time += dt;
  }
};

// One closed-loop run: the pool takes each proposal at once (no guards).
struct ClosedLoopRun {
  std::vector<int> proposals;  // one per tick
  std::vector<double> lags;    // lag seen at each tick
};

inline ClosedLoopRun run_closed_loop(Policy& policy, FluidPlant plant, double seconds,
                                     double dt = 1.0) {
  ClosedLoopRun run;
  const auto ticks = static_cast<int>(seconds / dt);
  for (int i = 0; i < ticks; ++i) {
    const Observation obs = plant.observe();
    const Proposal p = policy.decide(obs);
    run.proposals.push_back(p.workers);
    run.lags.push_back(plant.lag);
    plant.workers = p.workers;
    plant.step(dt);
  }
  return run;
}

// Direction reversals (up then down, or down then up) among proposals[from..], counting only
// changes; a change right after `from` is compared with the last direction before it.
inline int direction_reversals(const std::vector<int>& proposals, std::size_t from = 0) {
  int reversals = 0;
  int direction = 0;
  for (std::size_t i = 1; i < proposals.size(); ++i) {
    if (proposals[i] == proposals[i - 1]) continue;
    const int d = proposals[i] > proposals[i - 1] ? 1 : -1;
    if (direction != 0 && d != direction && i >= from) ++reversals;
    direction = d;
  }
  return reversals;
}

}  // namespace lagpilot::testing
