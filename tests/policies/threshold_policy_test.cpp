#include "policies/threshold_policy.h"

#include <gtest/gtest.h>

#include <random>

#include "policies/config_reader.h"
#include "tests/policies/fluid_plant.h"

namespace lagpilot {
namespace {

using testing::direction_reversals;
using testing::FluidPlant;
using testing::run_closed_loop;

Observation at(int64_t lag, int current = 4, int min_w = 1, int max_w = 64) {
  static double t = 0;
  Observation o;
  o.time = (t += 1);
  o.total_lag = lag;
  o.current_workers = current;
  o.min_workers = min_w;
  o.max_workers = max_w;
  return o;
}

// Feeds `lags` and returns the proposals.
std::vector<int> drive(ThresholdPolicy& policy, const std::vector<int64_t>& lags, int current) {
  std::vector<int> out;
  for (int64_t lag : lags) {
    out.push_back(policy.decide(at(lag, current)).workers);
    current = out.back();
  }
  return out;
}

int changes(const std::vector<int>& v) {
  int n = 0;
  for (std::size_t i = 1; i < v.size(); ++i) n += v[i] != v[i - 1];
  return n;
}

TEST(ThresholdPolicy, DefaultTableIsTheRuleOfThumb) {
  ThresholdPolicy policy;
  EXPECT_EQ(drive(policy, {500, 3000, 5000, 5001, 3000, 1000, 999, 3000}, 4),
            (std::vector<int>{4, 4, 4, 16, 16, 16, 4, 4}));
}

TEST(ThresholdPolicy, ReasonsSayWhy) {
  ThresholdPolicy policy;
  EXPECT_EQ(policy.decide(at(7200, 4)).reason, "lag 7200 above 5000: step up to 16");
  EXPECT_EQ(policy.decide(at(3000, 16)).reason, "lag 3000 within [1000, -]: hold 16");
  EXPECT_EQ(policy.decide(at(800, 16)).reason, "lag 800 below 1000: step down to 4");
}

TEST(ThresholdPolicy, NoiseAroundAStepMovesThePoolOnce) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> noise(-400, 400);
  // Around the upper threshold, starting low: one step up, then nothing.
  {
    ThresholdPolicy policy;
    std::vector<int64_t> lags;
    for (int i = 0; i < 2000; ++i) lags.push_back(5000 + noise(rng));
    auto out = drive(policy, lags, 4);
    out.insert(out.begin(), 4);  // the pool before the first tick
    EXPECT_EQ(changes(out), 1);
    EXPECT_EQ(out.back(), 16);
  }
  // Around the lower threshold, starting high: one step down, then nothing.
  {
    ThresholdPolicy policy;
    std::vector<int64_t> lags;
    for (int i = 0; i < 2000; ++i) lags.push_back(1000 + noise(rng));
    auto out = drive(policy, lags, 16);
    out.insert(out.begin(), 16);
    EXPECT_EQ(changes(out), 1);
    EXPECT_EQ(out.back(), 4);
  }
  // A band with no hysteresis would flap on the same noise: the test can tell.
  {
    ThresholdParams p;
    p.steps = {{5000.0, 4999.0, 16}};
    ThresholdPolicy narrow(p);
    std::vector<int64_t> lags;
    for (int i = 0; i < 2000; ++i) lags.push_back(5000 + noise(rng));
    EXPECT_GT(changes(drive(narrow, lags, 4)), 100);
  }
}

TEST(ThresholdPolicy, IntermediateStepsClimbAndDescendSeveralLevelsAtOnce) {
  const ThresholdParams p = ThresholdParams::from_json(
      {{"steps",
        {{{"above", 2000}, {"workers", 8}}, {{"above", 5000}, {"below", 1000}, {"workers", 16}}}}},
      "p");
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(p.steps[0].below, 1000.0);  // 2000 * (1 - hysteresis 0.5)
  ThresholdPolicy policy(p);
  EXPECT_EQ(drive(policy, {2500, 1500, 900, 6000, 1500, 900}, 4),
            (std::vector<int>{8, 8, 4, 16, 16, 4}));
}

TEST(ThresholdPolicy, FirstLevelComesFromTheCurrentPool) {
  ThresholdPolicy from_high;
  EXPECT_EQ(from_high.decide(at(3000, 16)).workers, 16);
  ThresholdPolicy from_low;
  EXPECT_EQ(from_low.decide(at(3000, 4)).workers, 4);
  ThresholdPolicy from_between;  // 10 workers: the highest level not above 10 is 4
  EXPECT_EQ(from_between.decide(at(3000, 10)).workers, 4);
}

TEST(ThresholdPolicy, ClampsToBounds) {
  ThresholdPolicy policy;
  const Proposal p = policy.decide(at(9000, 4, 2, 12));
  EXPECT_EQ(p.workers, 12);
  EXPECT_NE(p.reason.find("clamped to 12"), std::string::npos);
}

std::string error_path(const nlohmann::json& j) {
  try {
    ThresholdParams::from_json(j, "policy.params");
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "(accepted)";
}

TEST(ThresholdPolicy, ValidationNamesTheField) {
  using nlohmann::json;
  EXPECT_EQ(error_path({{"steps", json::array({{{"above", 5000}, {"workers", 8}},
                                               {{"above", 4000}, {"workers", 16}}})}}),
            "policy.params.steps[1].above");
  EXPECT_EQ(
      error_path({{"steps", json::array({{{"above", 5000}, {"below", 6000}, {"workers", 8}}})}}),
      "policy.params.steps[0].below");
  EXPECT_EQ(error_path({{"steps", json::array({{{"above", 2000}, {"workers", 8}},
                                               {{"above", 5000}, {"workers", 8}}})}}),
            "policy.params.steps[1].workers");
  EXPECT_EQ(error_path({{"steps", json::array({{{"workers", 8}}})}}),
            "policy.params.steps[0].above");
  EXPECT_EQ(error_path({{"steps", json::array({{{"above", 1}, {"workers", 8}, {"x", 1}}})}}),
            "policy.params.steps[0].x");
  EXPECT_EQ(error_path({{"steps", json::array()}}), "policy.params.steps");
  EXPECT_EQ(error_path({{"steps", 3}}), "policy.params.steps");
  EXPECT_EQ(error_path({{"hysteresis", 0}}), "policy.params.hysteresis");
  EXPECT_EQ(error_path({{"base_workers", 16}}), "policy.params.base_workers");
  EXPECT_EQ(error_path({{"levels", 1}}), "policy.params.levels");
}

TEST(ThresholdPolicy, ParamsRoundTrip) {
  const ThresholdParams p = ThresholdParams::from_json(
      {{"base_workers", 2},
       {"hysteresis", 0.3},
       {"steps", {{{"above", 2000}, {"workers", 8}}, {{"above", 5000}, {"workers", 16}}}}},
      "p");
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(ThresholdParams::from_json(j, "p").to_json(), j);
  EXPECT_DOUBLE_EQ(j["steps"][1]["below"].get<double>(), 3500.0);
}

// Closed loop: a lag-only step table is bang-bang control. With the default two levels, a
// constant load between their capacities (4 and 16 workers) makes the pool cycle 4 <-> 16; a
// table with a level at the load's size holds it.
TEST(ThresholdPolicy, TwoLevelTableCyclesAtAMidLoadAFinerTableHolds) {
  FluidPlant plant;
  plant.arrival = 800;  // exactly 8 workers' worth
  ThresholdPolicy two_levels;
  const auto coarse = run_closed_loop(two_levels, plant, 1800);
  EXPECT_GT(direction_reversals(coarse.proposals, 900), 10);
  for (int w : coarse.proposals) EXPECT_TRUE(w == 4 || w == 16) << w;

  ThresholdPolicy finer(ThresholdParams::from_json(
      {{"steps",
        {{{"above", 2500}, {"workers", 8}}, {{"above", 6000}, {"below", 2000}, {"workers", 16}}}}},
      "p"));
  const auto fine = run_closed_loop(finer, plant, 1800);
  EXPECT_EQ(direction_reversals(fine.proposals, 300), 0);
  EXPECT_EQ(fine.proposals.back(), 8);
}

}  // namespace
}  // namespace lagpilot
