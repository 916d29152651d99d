// KEDA's Kafka scaler + HPA, checked against the scaler's documented behaviour.

#include "policies/keda_policy.h"

#include <gtest/gtest.h>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

Observation keda_obs(double t, int64_t lag, int current, int partitions = 0, int min_w = 1,
                     int max_w = 100) {
  Observation o;
  o.time = t;
  o.total_lag = lag;
  o.current_workers = current;
  o.assigned_partitions = partitions;
  o.min_workers = min_w;
  o.max_workers = max_w;
  return o;
}

// desired = ceil(total lag / lagThreshold), through the HPA.
TEST(KedaPolicy, LagOverThresholdScalesToCeilOfTheRatio) {
  KedaPolicy keda;  // lag_threshold 1000
  EXPECT_EQ(keda.decide(keda_obs(0, 7000, 4)).workers, 7);
  KedaPolicy limited;  // the HPA's scale-up limit still applies: from 2, at most 6
  EXPECT_EQ(limited.decide(keda_obs(0, 9000, 2)).workers, 6);
}

TEST(KedaPolicy, SumsPartitionLag) {
  KedaPolicy keda;
  Observation o = keda_obs(0, 0, 4, 10);  // 10 partitions: 7000 / 1000 = 7 is under the cap
  o.partition_lag = {{"t", 0, 2500}, {"t", 1, 2500}, {"t", 2, 2000}};
  EXPECT_EQ(keda.decide(o).workers, 7);
  EXPECT_EQ(keda.state()["total_lag"], 7000);
}

// allowIdleConsumers=false: "the number of replicas will not exceed the number of partitions".
TEST(KedaPolicy, CapsAtThePartitionCount) {
  KedaPolicy capped;
  EXPECT_EQ(capped.decide(keda_obs(0, 100000, 4, 6)).workers, 6);
  EXPECT_EQ(capped.state()["metric"], 6000);

  KedaParams idle_ok;
  idle_ok.allow_idle_consumers = true;
  KedaPolicy uncapped(idle_ok);
  EXPECT_EQ(uncapped.decide(keda_obs(0, 100000, 4, 6)).workers, 8);  // only the HPA rate limit

  KedaPolicy no_partitions_known;  // assigned_partitions 0: no cap
  EXPECT_EQ(no_partitions_known.decide(keda_obs(0, 100000, 4, 0)).workers, 8);
}

// KEDA compares totalLag / lagThreshold with the partition count in integer division, so a lag
// of 6500 over 6 partitions (6500 / 1000 = 6, not > 6) is not capped and the HPA asks for 7.
TEST(KedaPolicy, PartitionCapUsesKedasIntegerDivision) {
  KedaPolicy keda;
  EXPECT_EQ(keda.decide(keda_obs(0, 6500, 4, 6)).workers, 7);
  KedaPolicy over;
  EXPECT_EQ(over.decide(keda_obs(0, 7000, 4, 6)).workers, 6);
}

// The lag is read every pollingInterval (30 s); HPA syncs in between see the cached value.
TEST(KedaPolicy, PollingIntervalHoldsTheMetric) {
  KedaPolicy keda;
  EXPECT_EQ(keda.decide(keda_obs(0, 5000, 4)).workers, 5);
  EXPECT_EQ(keda.decide(keda_obs(15, 20000, 5)).workers, 5);  // HPA sync, metric still 5000
  EXPECT_EQ(keda.state()["metric"], 5000);
  EXPECT_EQ(keda.decide(keda_obs(29, 20000, 5)).workers, 5);
  EXPECT_EQ(keda.decide(keda_obs(30, 20000, 5)).workers, 10);  // polled: 20; max(+100 %, +4) = 10
}

// Inactive (lag <= activationLagThreshold) for cooldownPeriod: KEDA's scale to zero, here to
// min_workers, at once (not through the HPA's 300 s stabilization).
TEST(KedaPolicy, CooldownScalesToIdleAndActivityBringsTheHpaBack) {
  KedaParams p;
  p.cooldown_period_seconds = 120;
  KedaPolicy keda(p);
  int current = keda.decide(keda_obs(0, 10000, 10, 0, 2, 20)).workers;
  EXPECT_EQ(current, 10);
  for (double t = 1; t < 120; ++t) {
    current = keda.decide(keda_obs(t, 0, current, 0, 2, 20)).workers;
    EXPECT_EQ(current, 10) << "t=" << t;  // HPA stabilization holds 10
  }
  EXPECT_EQ(keda.decide(keda_obs(120, 0, 10, 0, 2, 20)).workers, 2);
  EXPECT_TRUE(keda.state()["idle"].get<bool>());
  current = 2;
  for (double t = 121; t < 210; ++t) {
    current = keda.decide(keda_obs(t, t >= 200 ? 5000 : 0, current, 0, 2, 20)).workers;
    EXPECT_EQ(current, 2) << "t=" << t;  // the lag appears at 200, the next poll is at 210
  }
  EXPECT_EQ(keda.decide(keda_obs(210, 5000, 2, 0, 2, 20)).workers, 5);
  EXPECT_FALSE(keda.state()["idle"].get<bool>());
}

TEST(KedaPolicy, NeverActiveGoesIdleAfterTheInitialCooldown) {
  KedaPolicy at_once;  // initialCooldownPeriod 0
  EXPECT_EQ(at_once.decide(keda_obs(0, 0, 10, 0, 3, 20)).workers, 3);
  EXPECT_TRUE(at_once.state()["idle"].get<bool>());

  KedaParams p;
  p.initial_cooldown_period_seconds = 60;
  KedaPolicy later(p);
  later.decide(keda_obs(0, 0, 10, 0, 3, 20));
  EXPECT_FALSE(later.state()["idle"].get<bool>());
  later.decide(keda_obs(60, 0, 10, 0, 3, 20));
  EXPECT_TRUE(later.state()["idle"].get<bool>());
}

TEST(KedaPolicy, ActivationThreshold) {
  KedaParams p;
  p.activation_lag_threshold = 100;
  KedaPolicy quiet(p);
  quiet.decide(keda_obs(0, 100, 5, 0, 1, 20));
  EXPECT_FALSE(quiet.state()["active"].get<bool>());
  KedaPolicy busy(p);
  busy.decide(keda_obs(0, 101, 5, 0, 1, 20));
  EXPECT_TRUE(busy.state()["active"].get<bool>());
}

std::string keda_error_path(const nlohmann::json& j) {
  try {
    KedaParams::from_json(j, "policy.params");
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "(accepted)";
}

TEST(KedaPolicy, ValidationNamesTheField) {
  EXPECT_EQ(keda_error_path({{"lag_threshold", 0}}), "policy.params.lag_threshold");
  EXPECT_EQ(keda_error_path({{"lag_threshold", 10.5}}), "policy.params.lag_threshold");
  EXPECT_EQ(keda_error_path({{"polling_interval_seconds", 0}}),
            "policy.params.polling_interval_seconds");
  EXPECT_EQ(keda_error_path({{"allow_idle_consumers", "no"}}),
            "policy.params.allow_idle_consumers");
  EXPECT_EQ(keda_error_path({{"tolerance", 2}}), "policy.params.tolerance");  // HPA keys, flat
  EXPECT_EQ(keda_error_path({{"lagThreshold", 10}}), "policy.params.lagThreshold");
  EXPECT_EQ(keda_error_path({{"lag_threshold", 10}}), "(accepted)");  // KEDA's own default
}

TEST(KedaPolicy, ParamsRoundTrip) {
  const nlohmann::json j = KedaParams{}.to_json();
  EXPECT_EQ(KedaParams::from_json(j, "p").to_json(), j);
  EXPECT_EQ(j["lag_threshold"], 1000);
  EXPECT_EQ(j["polling_interval_seconds"], 30.0);
  EXPECT_EQ(j["cooldown_period_seconds"], 300.0);
  EXPECT_EQ(j["scale_down_stabilization_seconds"], 300.0);
}

}  // namespace
}  // namespace lagpilot
