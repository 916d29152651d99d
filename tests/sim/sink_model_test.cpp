// The simulated sink with a concurrency limit: throughput stops at the limit's, the sample
// reports the pushed-back fraction, and the sink_pushback guard keeps a pid pool near the
// limit instead of at its maximum, for fewer worker-seconds and the same work done.
#include <gtest/gtest.h>

#include "policies/policy_factory.h"
#include "sim/consumer_model.h"
#include "sim/simulation.h"
#include "tests/sim/sim_test_util.h"

namespace lagpilot::sim {
namespace {

TEST(SinkModel, ThroughputStopsAtTheSinksConcurrency) {
  ConsumerModelConfig c;
  c.usl_sigma = c.usl_kappa = 0.0;
  c.service_mean_seconds = 0.01;
  EXPECT_DOUBLE_EQ(c.capacity(12), 1200.0);
  c.sink_concurrency = 6;
  EXPECT_DOUBLE_EQ(c.capacity(4), 400.0);
  EXPECT_DOUBLE_EQ(c.capacity(6), 600.0);
  EXPECT_DOUBLE_EQ(c.capacity(12), 600.0);  // the extra six are pushed back
  EXPECT_DOUBLE_EQ(c.stretch(12), 2.0);     // the latency knee
  EXPECT_EQ(ConsumerModelConfig::from_json(c.to_json()).sink_concurrency, 6);
}

RunResult run_pid(bool guard) {
  SimConfig config;
  config.model.sink_concurrency = 6;
  config.model.usl_sigma = config.model.usl_kappa = 0.0;
  config.model.service_mean_seconds = 0.01;  // 100/s per worker: the sink takes 600/s
  config.max_decisions = 100000;
  GuardConfig guards;  // 4..16
  guards.sink_pushback_guard = guard;
  guards.sink_pushback_seconds = 10;
  guards.scale_down_window_seconds = 0;
  // 700/s for 30 minutes, above the sink's 600/s: the backlog grows whatever the pool, and the
  // pid policy alone asks for its maximum.
  PolicySpec pid;
  pid.name = "pid";
  return simulate(testing::constant_trace(700, 1800), pid, guards, config);
}

TEST(SinkModel, ThePushbackGuardHoldsThePoolNearTheSinksConcurrency) {
  const RunResult with = run_pid(true);
  const RunResult without = run_pid(false);
  EXPECT_LE(with.kpis.max_workers, 8);
  EXPECT_GT(without.kpis.max_workers, 10);
  EXPECT_LT(with.kpis.worker_seconds, without.kpis.worker_seconds);
  // The same work done: throughput was capped by the sink either way.
  EXPECT_NEAR(static_cast<double>(with.kpis.processed), static_cast<double>(without.kpis.processed),
              0.01 * static_cast<double>(without.kpis.arrived));
  bool named = false;
  for (const Decision& d : with.decisions) {
    for (const std::string& g : d.guards)
      named = named || g.find("sink pushback") != std::string::npos;
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace lagpilot::sim
