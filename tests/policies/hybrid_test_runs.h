#pragma once
// Closed-loop runs of the hybrid policy on a FluidPlant, shared by the hybrid policy tests:
// run() calls the policy directly, run_guarded() goes through the ControlLoop and the default
// guards. Single-threaded test code.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "policies/control_loop.h"
#include "policies/guards.h"
#include "policies/hybrid_policy.h"
#include "tests/policies/fluid_plant.h"

namespace lagpilot::hybrid_testing {

using lagpilot::testing::FluidPlant;

using testing::FluidPlant;

// The number of changes of the proposed pool between indices `from` and `to`.
inline int changes(const std::vector<int>& proposals, std::size_t from, std::size_t to) {
  int n = 0;
  for (std::size_t i = std::max<std::size_t>(from, 1); i < to && i < proposals.size(); ++i) {
    n += proposals[i] != proposals[i - 1] ? 1 : 0;
  }
  return n;
}

// Runs `plant` under `policy` for `seconds`, with the arrival rate given per second; the
// largest lag the plant reached goes to `peak_lag` when given.
inline std::vector<int> run(HybridPolicy& policy, FluidPlant& plant, int seconds,
                            double (*arrival)(int second), double* peak_lag = nullptr) {
  std::vector<int> proposals;
  for (int s = 0; s < seconds; ++s) {
    plant.arrival = arrival(s);
    const Proposal p = policy.decide(plant.observe());
    EXPECT_FALSE(p.reason.empty());
    proposals.push_back(p.workers);
    plant.workers = p.workers;
    plant.step(1.0);
    if (peak_lag) *peak_lag = std::max(*peak_lag, plant.lag);
  }
  return proposals;
}

// Runs `plant` under `params` through the ControlLoop and the default guards (bounds [4, 16];
// hybrid holds its own scale-downs, so their window is skipped) for `seconds`; returns the pool
// at each second.
inline std::vector<int> run_guarded(const HybridParams& params, FluidPlant& plant, int seconds,
                                    double (*arrival)(int second)) {
  struct Sampler : lagpilot::Sampler {
    FluidPlant* plant = nullptr;
    Observation sample(double) override { return plant->observe(); }
  };
  struct Actuator : lagpilot::Actuator {
    FluidPlant* plant = nullptr;
    void resize(int n) override { plant->workers = n; }
  };
  Sampler sampler;
  sampler.plant = &plant;
  Actuator actuator;
  actuator.plant = &plant;
  ControlLoop loop(sampler, actuator, std::make_unique<HybridPolicy>(params), GuardConfig{});
  std::vector<int> pool;
  for (int s = 0; s < seconds; ++s) {
    plant.arrival = arrival(s);
    loop.tick(plant.time);
    pool.push_back(plant.workers);
    plant.step(1.0);
  }
  return pool;
}

}  // namespace lagpilot::hybrid_testing
