// The fleet simulator (sim/fleet_simulation.h): a fleet of one is simulate() exactly,
// conservation per instance and in total, partitions cap the useful replicas, the replica
// policies and the recommended-replicas formula, config errors.
#include "sim/fleet_simulation.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "policies/capacity_estimator.h"
#include "policies/config_reader.h"
#include "sim/fleet_report.h"
#include "sim/replica_policy.h"
#include "sim/simulation.h"
#include "sim_test_util.h"

namespace lagpilot::sim {
namespace {

using testing::burst_trace;
using testing::constant_trace;

SimConfig small_config(const std::string& fidelity, double warmup) {
  SimConfig c;
  c.fidelity = fidelity;
  c.seed = 7;
  c.lag_slo = 2000;
  c.model.warmup_seconds = warmup;
  c.record_series = true;
  c.series_interval_seconds = 5;
  return c;
}

// --- A fleet of one instance with a static replica policy is simulate() -------------------

using OneInstanceParam = std::tuple<std::string, std::string, double>;  // policy, fidelity, warmup

class FleetOfOne : public ::testing::TestWithParam<OneInstanceParam> {};

TEST_P(FleetOfOne, GivesExactlyTheSingleInstanceKpis) {
  const auto& [policy, fidelity, warmup] = GetParam();
  const Trace trace = burst_trace(300, 1500, 120, 60);
  const SimConfig config = small_config(fidelity, warmup);
  const GuardConfig guards;  // 4..16 workers, the defaults
  const PolicySpec spec = parse_policy_spec(policy);

  const RunResult single = simulate(trace, spec, guards, config);
  FleetConfig fleet;  // one pod, static, partitions from the sim config
  const FleetResult one = simulate_fleet(trace, spec, guards, config, fleet);

  const Kpis& a = single.kpis;
  const Kpis& b = one.kpis;
  EXPECT_GT(a.scale_actions + (policy.rfind("static", 0) == 0 ? 1 : 0), 0) << "a scaling run";
  EXPECT_EQ(a.arrived, b.arrived);
  EXPECT_EQ(a.processed, b.processed);
  EXPECT_EQ(a.final_lag, b.final_lag);
  EXPECT_EQ(a.lag_integral, b.lag_integral);  // doubles compared exactly: the same steps
  EXPECT_EQ(a.max_lag, b.max_lag);
  EXPECT_EQ(a.p99_lag, b.p99_lag);
  EXPECT_EQ(a.seconds_above_slo, b.seconds_above_slo);
  EXPECT_EQ(a.worker_seconds, b.worker_seconds);
  EXPECT_EQ(a.scale_actions, b.scale_actions);
  EXPECT_EQ(a.reversals, b.reversals);
  EXPECT_EQ(a.max_workers, b.max_workers);
  EXPECT_EQ(a.mean_wait_seconds, b.mean_wait_seconds);
  EXPECT_EQ(a.mean_service_seconds, b.mean_service_seconds);
  EXPECT_EQ(a.mean_workers, b.mean_workers);
  EXPECT_EQ(a.ticks, b.ticks);
  ASSERT_EQ(single.series.size(), one.series.size());
  for (std::size_t i = 0; i < single.series.size(); ++i) {
    EXPECT_EQ(single.series[i].lag, one.series[i].lag) << "at " << single.series[i].t;
    EXPECT_EQ(single.series[i].workers, one.series[i].workers) << "at " << single.series[i].t;
    EXPECT_EQ(one.series[i].replicas, 1);
  }
  // And the fleet's own numbers for one static pod.
  EXPECT_EQ(one.fleet.rebalances, 0);
  EXPECT_EQ(one.fleet.rebalance_seconds, 0.0);
  EXPECT_EQ(one.fleet.replica_seconds, a.duration_seconds);
  EXPECT_EQ(one.fleet.max_replicas, 1);
}

INSTANTIATE_TEST_SUITE_P(
    PoliciesFidelitiesWarmups, FleetOfOne,
    ::testing::Combine(::testing::Values("static:8", "threshold", "pid", "hpa", "keda", "model"),
                       ::testing::Values("message", "batch"), ::testing::Values(0.0, 5.0)),
    [](const ::testing::TestParamInfo<OneInstanceParam>& info) {
      std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_warmup" +
                         std::to_string(static_cast<int>(std::get<2>(info.param)));
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// --- Conservation per instance and in total ---------------------------------------------

TEST(FleetConservation, PerInstanceAndInTotalThroughJoinsLeavesAndSkew) {
  for (const std::string fidelity : {"message", "batch"}) {
    SCOPED_TRACE(fidelity);
    const Trace trace = burst_trace(200, 2500, 200, 150);
    SimConfig config = small_config(fidelity, 2.0);
    FleetConfig fleet;
    fleet.partitions = 12;
    fleet.skew = 0.7;
    fleet.replica_policy = "keda-recommended";
    fleet.replica_params = {{"polling_interval_seconds", 15},
                            {"cooldown_period_seconds", 60},
                            {"scale_down_stabilization_seconds", 60}};
    fleet.replicas = 1;
    fleet.pod_start_seconds = 10;
    fleet.rebalance_seconds = 3;
    const FleetResult r =
        simulate_fleet(trace, parse_policy_spec("threshold"), GuardConfig{}, config, fleet);

    // The run exercised what conservation must survive: joins, leaves, moved backlogs.
    EXPECT_GT(r.fleet.pods_started, 0);
    EXPECT_GT(r.fleet.rebalances, 1);
    int64_t handed = 0, received = 0, processed = 0, final_lag = 0;
    bool someone_left = false;
    for (const InstanceSummary& s : r.instances) {
      EXPECT_EQ(s.received, s.processed + s.final_lag + s.handed_over) << "pod " << s.pod;
      handed += s.handed_over;
      received += s.received;
      processed += s.processed;
      final_lag += s.final_lag;
      someone_left |= s.left >= 0 && s.joined >= 0;
    }
    EXPECT_GT(handed, 0) << "a rebalance moved buffered messages";
    EXPECT_TRUE(someone_left);
    EXPECT_EQ(r.kpis.arrived, r.kpis.processed + r.kpis.final_lag);
    EXPECT_EQ(r.kpis.processed, processed);
    EXPECT_EQ(r.kpis.final_lag, final_lag);
    EXPECT_EQ(received - handed, r.kpis.arrived);
    EXPECT_GT(r.kpis.arrived, 400'000);
    // Time rebalancing: at most one pause per rebalance (pauses that overlap merge).
    EXPECT_GT(r.fleet.rebalance_seconds, 0.0);
    EXPECT_LE(r.fleet.rebalance_seconds, 3.0 * r.fleet.rebalances + 1e-9);
    EXPECT_GE(r.fleet.replica_seconds, r.kpis.duration_seconds);
  }
}

// --- Partitions cap the useful replicas -------------------------------------------------

FleetResult static_fleet(int partitions, int replicas, double rate) {
  const Trace trace = constant_trace(rate, 300);
  SimConfig config = small_config("message", 0.0);
  FleetConfig fleet;
  fleet.partitions = partitions;
  fleet.replicas = replicas;
  // One worker per pod: KEDA's world.
  GuardConfig guards;
  guards.min_workers = 1;
  guards.max_workers = 1;
  return simulate_fleet(trace, parse_policy_spec("static:1"), guards, config, fleet);
}

TEST(FleetPartitions, CapTheUsefulReplicas) {
  // 4 partitions, one worker per pod (~98 msg/s each), 600 msg/s: more pods help up to 4.
  const FleetResult two = static_fleet(4, 2, 600);
  const FleetResult four = static_fleet(4, 4, 600);
  const FleetResult eight = static_fleet(4, 8, 600);
  EXPECT_LT(four.kpis.lag_integral, 0.7 * two.kpis.lag_integral);
  EXPECT_GT(four.kpis.processed, two.kpis.processed);
  // Past the partition count the extra pods get no partition and do nothing: pods 0-3 hold the
  // same partitions with the same seeds, so the run is the same, at twice the replica-seconds.
  EXPECT_EQ(eight.kpis.processed, four.kpis.processed);
  EXPECT_EQ(eight.kpis.lag_integral, four.kpis.lag_integral);
  EXPECT_EQ(eight.fleet.replica_seconds, 2 * four.fleet.replica_seconds);
  ASSERT_EQ(eight.instances.size(), 8u);
  for (std::size_t i = 4; i < 8; ++i) {
    EXPECT_EQ(eight.instances[i].received, 0) << "pod " << i;
    EXPECT_EQ(eight.instances[i].processed, 0) << "pod " << i;
  }
}

TEST(FleetPartitions, KedaOnLagStopsAtThePartitionCount) {
  // A backlog far above partitions * lagThreshold: KEDA's scaler caps the pods at 6.
  const Trace trace = constant_trace(3000, 400);
  SimConfig config = small_config("batch", 0.0);
  FleetConfig fleet;
  fleet.partitions = 6;
  fleet.replica_policy = "keda-lag";
  fleet.replica_params = {{"lag_threshold", 100}, {"polling_interval_seconds", 15}};
  fleet.pod_start_seconds = 5;
  GuardConfig guards;
  guards.min_workers = 1;
  guards.max_workers = 1;
  const FleetResult r = simulate_fleet(trace, parse_policy_spec("static:1"), guards, config, fleet);
  EXPECT_EQ(r.fleet.max_replicas, 6);
  EXPECT_EQ(r.series.back().replicas, 6);
  EXPECT_EQ(r.series.back().members, 6);
}

// --- Skew: the hot partition's owner carries more --------------------------------------------

TEST(FleetPartitions, SkewLoadsTheFirstPartitionsOwner) {
  const Trace trace = constant_trace(200, 200);
  SimConfig config = small_config("message", 0.0);
  FleetConfig fleet;
  fleet.partitions = 4;
  fleet.replicas = 4;
  fleet.skew = 1.5;  // weights 1, 0.35, 0.19, 0.125
  const FleetResult r =
      simulate_fleet(trace, parse_policy_spec("static:4"), GuardConfig{}, config, fleet);
  const double total = static_cast<double>(r.kpis.arrived);
  EXPECT_NEAR(static_cast<double>(r.instances[0].received) / total, 1 / 1.6649, 0.02);
  EXPECT_GT(r.instances[0].received, 4 * r.instances[3].received);
}

// --- The recommended replicas: the runtime's formula ------------------------------------

TEST(RecommendedReplicas, TheRuntimesFormulaCappedAtPartitions) {
  CapacityEstimator rec(60);
  auto update = [&](const Observation& o, int64_t lag, double rate, int max, int partitions) {
    const CapacityEstimator::GroupDemand group{rate, lag, partitions};
    return rec.update(o, max, &group).recommended_replicas;
  };
  Observation o;
  o.current_workers = 6;
  // No rate measured yet: the pool size, in processes of max_workers.
  EXPECT_EQ(update(o, 60000, 2000, 4, 12), 2);
  o.processed_rate = 400;
  o.busy_workers = 4;  // 100 msg/s per busy worker
  // (2000 + 60000 / 60) / 100 = 30 workers: 4 processes of 8, 2 of 16, capped at 3 partitions.
  EXPECT_EQ(update(o, 60000, 2000, 8, 12), 4);
  EXPECT_EQ(update(o, 60000, 2000, 16, 12), 2);
  EXPECT_EQ(update(o, 60000, 2000, 8, 3), 3);
  // An idle tick keeps the measured rate; no load still means one process.
  o.processed_rate = 0;
  o.busy_workers = 0;
  EXPECT_EQ(update(o, 0, 0, 8, 12), 1);
  EXPECT_DOUBLE_EQ(rec.last().per_worker_rate, 100);
}

TEST(FleetReplicaPolicy, KedaRecommendedFollowsTheBurstUpAndDown) {
  const Trace trace = burst_trace(100, 2000, 300, 200);
  SimConfig config = small_config("batch", 0.0);
  FleetConfig fleet;
  fleet.partitions = 12;
  fleet.replica_policy = "keda-recommended";
  fleet.replica_params = {{"scale_down_stabilization_seconds", 60}};
  fleet.pod_start_seconds = 10;
  const FleetResult r =
      simulate_fleet(trace, parse_policy_spec("threshold"), GuardConfig{}, config, fleet);
  EXPECT_GE(r.fleet.max_replicas, 2);
  EXPECT_EQ(r.series.back().replicas, 1) << "back to one pod after the burst";
  EXPECT_GT(r.fleet.replica_actions, 1);
}

// --- Rebalance pauses cost lag; the HTML page shows replicas and workers ------------------

FleetResult scaling_fleet(double rebalance_seconds) {
  const Trace trace = burst_trace(200, 2500, 200, 150);
  SimConfig config = small_config("batch", 0.0);
  config.series_interval_seconds = 0;
  FleetConfig fleet;
  fleet.partitions = 12;
  fleet.replica_policy = "keda-recommended";
  fleet.pod_start_seconds = 10;
  fleet.rebalance_seconds = rebalance_seconds;
  return simulate_fleet(trace, parse_policy_spec("static:8"), GuardConfig{}, config, fleet);
}

TEST(FleetRebalance, PausesCostLagAndAreCounted) {
  const FleetResult free = scaling_fleet(0);
  const FleetResult paused = scaling_fleet(10);
  EXPECT_GT(free.fleet.rebalances, 0);
  EXPECT_EQ(free.fleet.rebalance_seconds, 0.0);
  EXPECT_GT(paused.fleet.rebalance_seconds, 10.0);
  EXPECT_GT(paused.kpis.lag_integral, free.kpis.lag_integral);
  // A tick entirely inside a pause completes nothing new: some tick has no processing although
  // the backlog is large.
  bool idle_paused_tick = false;
  for (std::size_t i = 1; i + 1 < paused.series.size(); ++i) {
    const auto& p = paused.series[i];
    if (p.rebalancing && paused.series[i - 1].rebalancing && p.lag > 1000 &&
        p.processed_rate == 0) {
      idle_paused_tick = true;
    }
  }
  EXPECT_TRUE(idle_paused_tick);
}

TEST(FleetReport, ChartsReplicasAndWorkersAndEscapesLabels) {
  FleetHtmlReport report;
  report.title = "fleet <test>";
  report.runs.push_back(scaling_fleet(3));
  report.runs.back().label = "a<b";
  report.lag_slo = 2000;
  const std::string page = render_fleet_html(report);
  EXPECT_NE(page.find("Replicas (pods alive"), std::string::npos);
  EXPECT_NE(page.find("Workers (sum of the pools)"), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("a&lt;b"), std::string::npos);
  EXPECT_EQ(page.find("a<b"), std::string::npos);
  EXPECT_NE(page.find("fleet &lt;test&gt;"), std::string::npos);
}

// --- Config -------------------------------------------------------------------------------

TEST(FleetConfig, RoundTripAndErrorsNameTheField) {
  const FleetConfig d;
  const FleetConfig back = FleetConfig::from_json(d.to_json());
  EXPECT_EQ(back.to_json(), d.to_json());
  auto error_of = [](const nlohmann::json& j) -> std::string {
    try {
      FleetConfig::from_json(j);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({{"replicas", 0}}).find("fleet.replicas"), std::string::npos);
  EXPECT_NE(error_of({{"rebalance_seconds", -1}}).find("fleet.rebalance_seconds"),
            std::string::npos);
  EXPECT_NE(error_of({{"assignment", "sticky"}}).find("fleet.assignment"), std::string::npos);
  EXPECT_NE(error_of({{"replica_policy", "hpa"}}).find("fleet.replica_policy"), std::string::npos);
  EXPECT_NE(error_of({{"replicas", 5}, {"max_replicas", 3}}).find("fleet.replicas"),
            std::string::npos);
  EXPECT_NE(error_of({{"pods", 3}}).find("fleet.pods"), std::string::npos);
  EXPECT_EQ(error_of({{"replicas", 3}, {"skew", 1.0}}), "");
  // Replica policy parameters are checked when the fleet is built.
  FleetConfig bad;
  bad.replica_policy = "keda-recommended";
  bad.replica_params = {{"lag_threshold", 5}};
  EXPECT_THROW(simulate_fleet(constant_trace(10, 10), parse_policy_spec("static:4"), GuardConfig{},
                              SimConfig{}, bad),
               ConfigError);
}

}  // namespace
}  // namespace lagpilot::sim
