// The Kubernetes HPA (autoscaling/v2, default behavior) on lag per worker, checked against
// the numbers of the Kubernetes documentation's algorithm description and behavior examples.

#include "policies/hpa_policy.h"

#include <gtest/gtest.h>

#include "policies/config_reader.h"
#include "tests/policies/fluid_plant.h"

namespace lagpilot {
namespace {

using testing::FluidPlant;
using testing::run_closed_loop;

Observation hpa_obs(double t, int64_t lag, int current, int min_w = 1, int max_w = 100) {
  Observation o;
  o.time = t;
  o.total_lag = lag;
  o.current_workers = current;
  o.min_workers = min_w;
  o.max_workers = max_w;
  return o;
}

HpaPolicy hpa_with_target(double target) {
  HpaParams p;
  p.target_lag_per_worker = target;
  return HpaPolicy(p);
}

// "if the current metric value is 200m, and the desired value is 100m, the number of replicas
// will be doubled, since 200.0 / 100.0 == 2.0"
TEST(HpaPolicy, MetricTwiceTheTargetDoubles) {
  HpaPolicy hpa = hpa_with_target(100);
  EXPECT_EQ(hpa.decide(hpa_obs(0, 4 * 200, 4)).workers, 8);
}

// "If the current value is instead 50m, you'll halve the number of replicas"
TEST(HpaPolicy, MetricHalfTheTargetHalves) {
  HpaPolicy hpa = hpa_with_target(100);  // first sync: no earlier recommendation to keep
  EXPECT_EQ(hpa.decide(hpa_obs(0, 8 * 50, 8)).workers, 4);
}

// "If the ratio is sufficiently close to 1.0 (within a globally-configurable tolerance,
// 0.1 by default), the control plane skips any scaling action"
TEST(HpaPolicy, WithinToleranceNoChange) {
  for (int64_t per_worker : {91, 95, 105, 109}) {
    HpaPolicy hpa = hpa_with_target(100);
    EXPECT_EQ(hpa.decide(hpa_obs(0, 10 * per_worker, 10)).workers, 10) << per_worker;
  }
  HpaPolicy up = hpa_with_target(100);
  EXPECT_EQ(up.decide(hpa_obs(0, 10 * 115, 10)).workers, 12);  // ceil(11.5)
  HpaPolicy down = hpa_with_target(100);
  EXPECT_EQ(down.decide(hpa_obs(0, 10 * 85, 10)).workers, 9);  // ceil(8.5)
}

// Default scale-up: max(100 %, 4 pods) per 15 s. "from 1 pod a huge metric gives 5, from 10
// gives 20".
TEST(HpaPolicy, ScaleUpRateLimit) {
  HpaPolicy from_one = hpa_with_target(100);
  EXPECT_EQ(from_one.decide(hpa_obs(0, 1000000, 1)).workers, 5);
  HpaPolicy from_ten = hpa_with_target(100);
  EXPECT_EQ(from_ten.decide(hpa_obs(0, 1000000, 10)).workers, 20);
  HpaPolicy from_three = hpa_with_target(100);
  EXPECT_EQ(from_three.decide(hpa_obs(0, 1000000, 3)).workers, 7);  // +4 beats +100 % (6)
}

// The limit is per period, counted from the replicas at the period's start: syncing faster
// than the policy period does not let the HPA add 4 pods per sync.
TEST(HpaPolicy, ScaleUpLimitCountsEventsInThePeriod) {
  HpaParams p;
  p.target_lag_per_worker = 100;
  p.behavior.sync_period_seconds = 5;
  HpaPolicy hpa(p);
  EXPECT_EQ(hpa.decide(hpa_obs(0, 1000000, 1)).workers, 5);
  EXPECT_EQ(hpa.decide(hpa_obs(5, 1000000, 5)).workers, 5);    // period start: 1 -> limit 5
  EXPECT_EQ(hpa.decide(hpa_obs(10, 1000000, 5)).workers, 5);   // still within (0, 15]
  EXPECT_EQ(hpa.decide(hpa_obs(15, 1000000, 5)).workers, 10);  // the t=0 event is 15 s old
}

// Default scale-down: stabilization 300 s, the highest recommendation of the window wins, so a
// dip is ignored for 300 s.
TEST(HpaPolicy, ScaleDownStabilizationIgnoresADipFor300Seconds) {
  HpaPolicy hpa = hpa_with_target(100);
  EXPECT_EQ(hpa.decide(hpa_obs(0, 10 * 100, 10)).workers, 10);  // at target: recommend 10
  int current = 10;
  for (double t = 15; t < 300; t += 15) {
    current = hpa.decide(hpa_obs(t, 10 * 20, current)).workers;  // metric 20 vs 100
    EXPECT_EQ(current, 10) << "t=" << t;
  }
  // At t = 300 the recommendation of t = 0 leaves the window (0, 300]: the highest left is
  // ceil(200 / 100) = 2, and 100 % per 15 s allows going there at once.
  EXPECT_EQ(hpa.decide(hpa_obs(300, 10 * 20, current)).workers, 2);
}

TEST(HpaPolicy, ScaleDownRateLimitWithAPercentPolicy) {
  HpaParams p;
  p.target_lag_per_worker = 100;
  p.behavior.scale_down_stabilization_seconds = 0;
  p.behavior.scale_down_percent = 50;
  HpaPolicy hpa(p);
  EXPECT_EQ(hpa.decide(hpa_obs(0, 0, 10)).workers, 5);  // trunc(10 * 0.5)
  EXPECT_EQ(hpa.decide(hpa_obs(15, 0, 5)).workers, 2);  // trunc(5 * 0.5)
  EXPECT_EQ(hpa.decide(hpa_obs(30, 0, 2)).workers, 1);  // min 1
}

TEST(HpaPolicy, SelectPolicyMinAndDisabled) {
  HpaParams p;
  p.target_lag_per_worker = 100;
  p.behavior.scale_up_select_policy = "Min";
  HpaPolicy min_change(p);
  EXPECT_EQ(min_change.decide(hpa_obs(0, 1000000, 10)).workers, 14);  // min(20, 14)

  HpaParams d;
  d.target_lag_per_worker = 100;
  d.behavior.scale_down_select_policy = "Disabled";
  d.behavior.scale_down_stabilization_seconds = 0;
  HpaPolicy no_down(d);
  EXPECT_EQ(no_down.decide(hpa_obs(0, 0, 10)).workers, 10);
}

TEST(HpaPolicy, EvaluatesOnlyEverySyncPeriod) {
  HpaPolicy hpa = hpa_with_target(100);
  EXPECT_EQ(hpa.decide(hpa_obs(0, 800, 4)).workers, 8);
  for (double t = 1; t < 15; ++t) {
    const Proposal p = hpa.decide(hpa_obs(t, 1000000, 8));
    EXPECT_EQ(p.workers, 8) << "t=" << t;
    EXPECT_NE(p.reason.find("between syncs"), std::string::npos);
  }
  EXPECT_EQ(hpa.decide(hpa_obs(15, 1000000, 8)).workers, 16);
}

TEST(HpaPolicy, PoolOutsideTheBoundsGoesToTheBound) {
  HpaPolicy above = hpa_with_target(100);
  EXPECT_EQ(above.decide(hpa_obs(0, 100000, 20, 1, 12)).workers, 12);
  HpaPolicy below = hpa_with_target(100);
  EXPECT_EQ(below.decide(hpa_obs(0, 0, 2, 4, 12)).workers, 4);
  // Bounds also clamp the recommendation between syncs when an operator changes them.
  HpaPolicy between = hpa_with_target(100);
  EXPECT_EQ(between.decide(hpa_obs(0, 1600, 8, 1, 16)).workers, 16);
  EXPECT_EQ(between.decide(hpa_obs(1, 1600, 16, 1, 10)).workers, 10);
}

TEST(HpaAlgorithm, LimitsAreExposed) {
  HpaAlgorithm hpa;
  EXPECT_EQ(hpa.scale_up_limit(0, 1), 5);
  EXPECT_EQ(hpa.scale_up_limit(0, 10), 20);
  EXPECT_EQ(hpa.scale_down_limit(0, 10), 0);
  EXPECT_TRUE(hpa.sync_due(0));
  hpa.sync(0, 1000, 100, 4, 1, 100);
  EXPECT_FALSE(hpa.sync_due(14.9));
  EXPECT_TRUE(hpa.sync_due(15));
}

std::string hpa_error_path(const nlohmann::json& j) {
  try {
    HpaParams::from_json(j, "policy.params");
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "(accepted)";
}

TEST(HpaPolicy, ValidationNamesTheField) {
  EXPECT_EQ(hpa_error_path({{"tolerance", -0.1}}), "policy.params.tolerance");
  EXPECT_EQ(hpa_error_path({{"target_lag_per_worker", 0}}), "policy.params.target_lag_per_worker");
  EXPECT_EQ(hpa_error_path({{"sync_period_seconds", 0}}), "policy.params.sync_period_seconds");
  EXPECT_EQ(hpa_error_path({{"scale_up_select_policy", "max"}}),
            "policy.params.scale_up_select_policy");
  EXPECT_EQ(hpa_error_path({{"scale_up_percent", 0}, {"scale_up_pods", 0}}),
            "policy.params.scale_up_percent");
  EXPECT_EQ(
      hpa_error_path(
          {{"scale_up_percent", 0}, {"scale_up_pods", 0}, {"scale_up_select_policy", "Disabled"}}),
      "(accepted)");
  EXPECT_EQ(hpa_error_path({{"scale_down_percent", 150}}), "policy.params.scale_down_percent");
  EXPECT_EQ(hpa_error_path({{"scaleDown", {}}}), "policy.params.scaleDown");
}

TEST(HpaPolicy, ParamsRoundTrip) {
  const nlohmann::json j = HpaParams{}.to_json();
  EXPECT_EQ(HpaParams::from_json(j, "p").to_json(), j);
  EXPECT_EQ(j["tolerance"], 0.1);
  EXPECT_EQ(j["scale_down_stabilization_seconds"], 300.0);
  EXPECT_EQ(j["scale_up_pods"], 4);
}

// Closed loop on the fluid plant at a load of 10 workers' worth: lag grows, the HPA scales up
// past the need (lag per worker is high while the backlog drains), the backlog empties, and
// 300 s later the stabilization window lets it scale down, and the cycle repeats. A faithful
// HPA on lag cycles like this; what it does not do is scale down sooner than the window.
TEST(HpaPolicy, OnLagItCyclesSlowlyNeverScalingDownWithinTheWindow) {
  HpaPolicy hpa;
  FluidPlant plant;
  plant.arrival = 1000;
  const auto run = run_closed_loop(hpa, plant, 3600);
  double last_up = -1e9;
  int downs = 0;
  for (std::size_t t = 1; t < run.proposals.size(); ++t) {
    if (run.proposals[t] > run.proposals[t - 1]) last_up = static_cast<double>(t);
    if (run.proposals[t] < run.proposals[t - 1]) {
      ++downs;
      EXPECT_GE(static_cast<double>(t) - last_up, 300.0) << "scale-down at t=" << t;
    }
    if (run.proposals[t] != run.proposals[t - 1]) {
      EXPECT_EQ(static_cast<int>(t) % 15, 0) << "only at syncs";
    }
  }
  EXPECT_GT(downs, 3);
}

}  // namespace
}  // namespace lagpilot
