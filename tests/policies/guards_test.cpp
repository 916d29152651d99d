// Guards: each rule on hand-made observations, and the documented order.
#include "policies/guards.h"

#include <gtest/gtest.h>

namespace lagpilot {
namespace {

Observation at(double t, int current, double p99 = 0.0, double processed = 0.0) {
  Observation o;
  o.time = t;
  o.current_workers = current;
  o.latency_p99 = p99;
  o.processed_rate = processed;
  return o;
}

GuardConfig no_window() {
  GuardConfig c;
  c.scale_down_window_seconds = 0;
  return c;
}

TEST(GuardChain, BoundsClampBothWays) {
  GuardChain g(no_window());
  Decision up = g.apply({40, "big"}, "test", at(0, 8));
  EXPECT_EQ(up.workers, 16);
  ASSERT_EQ(up.guards.size(), 1u);
  EXPECT_NE(up.guards[0].find("bounds"), std::string::npos);
  Decision down = g.apply({1, "small"}, "test", at(1, 8));
  EXPECT_EQ(down.workers, 4);
  EXPECT_EQ(down.policy_workers, 1);
}

TEST(GuardChain, StepLimitsPerTick) {
  GuardConfig c = no_window();
  c.max_step_up = 2;
  c.max_step_down = 1;
  GuardChain g(c);
  EXPECT_EQ(g.apply({16, ""}, "t", at(0, 4)).workers, 6);
  EXPECT_EQ(g.apply({4, ""}, "t", at(1, 10)).workers, 9);
  EXPECT_EQ(g.apply({5, ""}, "t", at(2, 4)).workers, 5);  // within the limit: untouched
}

TEST(GuardChain, StabilizationKeepsHighestRecommendationInWindow) {
  GuardConfig c;
  c.scale_down_window_seconds = 60;
  GuardChain g(c);
  EXPECT_EQ(g.apply({12, ""}, "t", at(0, 4)).workers, 12);
  // The policy wants 4 at t=30, but 12 was recommended within the last 60 s.
  Decision d = g.apply({4, ""}, "t", at(30, 12));
  EXPECT_EQ(d.workers, 12);
  ASSERT_FALSE(d.guards.empty());
  EXPECT_NE(d.guards.back().find("stabilization"), std::string::npos);
  // After the window has passed the recommendation of 12 expires.
  EXPECT_EQ(g.apply({4, ""}, "t", at(61, 12)).workers, 4);
}

TEST(GuardChain, NoStabilizationForAPolicyWithAWindowOfItsOwn) {
  GuardConfig c;
  c.scale_down_window_seconds = 60;
  GuardChain g(c);
  g.set_policy_stabilizes(true);
  EXPECT_EQ(g.apply({12, ""}, "hpa", at(0, 4)).workers, 12);
  Decision d = g.apply({4, ""}, "hpa", at(30, 12));
  EXPECT_EQ(d.workers, 4);
  EXPECT_TRUE(d.guards.empty());
  // Back to a policy without one: its window starts afresh, with none of the other's proposals.
  g.set_policy_stabilizes(false);
  EXPECT_EQ(g.apply({4, ""}, "t", at(31, 4)).workers, 4);
  EXPECT_EQ(g.apply({10, ""}, "t", at(32, 4)).workers, 10);
  EXPECT_EQ(g.apply({4, ""}, "t", at(40, 10)).workers, 10);
}

TEST(GuardChain, StabilizationNeverScalesUp) {
  GuardConfig c;
  c.scale_down_window_seconds = 60;
  GuardChain g(c);
  g.apply({16, ""}, "t", at(0, 4));
  // An operator or rollback left the pool at 6; the window holds 16 but must not push above 6.
  EXPECT_EQ(g.apply({5, ""}, "t", at(1, 6)).workers, 6);
}

TEST(GuardChain, LatencyCeilingBlocksScaleUpThatDidNotHelp) {
  GuardConfig c = no_window();
  c.latency_ceiling_seconds = 0.5;
  c.latency_ceiling_judge_seconds = 10;
  GuardChain g(c);
  // First scale-up is allowed (no evidence yet that scaling up does not help).
  EXPECT_EQ(g.apply({8, ""}, "t", at(0, 4, 0.9, 400)).workers, 8);
  // Before it is judged: hold while latency is high.
  Decision held = g.apply({12, ""}, "t", at(5, 8, 0.9, 400));
  EXPECT_EQ(held.workers, 8);
  EXPECT_NE(held.guards.back().find("not judged yet"), std::string::npos);
  // Judged at t=10: throughput stayed at 400, so downstream is saturated: keep holding.
  Decision still = g.apply({12, ""}, "t", at(10, 8, 0.9, 401));
  EXPECT_EQ(still.workers, 8);
  EXPECT_NE(still.guards.back().find("did not raise throughput"), std::string::npos);
  // Latency back under the ceiling: scale-ups are allowed again.
  EXPECT_EQ(g.apply({12, ""}, "t", at(11, 8, 0.1, 401)).workers, 12);
}

TEST(GuardChain, LatencyCeilingAllowsScaleUpThatHelped) {
  GuardConfig c = no_window();
  c.latency_ceiling_seconds = 0.5;
  c.latency_ceiling_judge_seconds = 10;
  GuardChain g(c);
  g.apply({8, ""}, "t", at(0, 4, 0.9, 400));
  g.apply({8, ""}, "t", at(10, 8, 0.9, 800));  // judged: throughput doubled
  EXPECT_EQ(g.apply({12, ""}, "t", at(11, 8, 0.9, 800)).workers, 12);
}

TEST(GuardChain, OverridePinsUntilExpiry) {
  GuardChain g(no_window());
  g.set_override({10, 100.0, "incident 42"});
  EXPECT_TRUE(g.pinned(50));
  Decision d = g.apply({4, ""}, "t", at(50, 4));
  EXPECT_EQ(d.workers, 10);
  EXPECT_EQ(d.source, "override");
  EXPECT_NE(d.guards.back().find("incident 42"), std::string::npos);
  EXPECT_EQ(g.apply({4, ""}, "t", at(100, 10)).workers, 4);
  EXPECT_FALSE(g.active_override(100).has_value());
  EXPECT_FALSE(g.pinned(100));
}

TEST(GuardChain, OverrideBeatsBoundsButNotHardLimits) {
  GuardChain g(no_window());
  g.set_override({20, 100.0, ""});  // above max 16, within hard max 64
  EXPECT_EQ(g.apply({4, ""}, "t", at(0, 4)).workers, 20);
  EXPECT_THROW(g.set_override({65, 100.0, ""}), ConfigError);
}

TEST(GuardChain, SetBoundsValidatesAgainstHardLimits) {
  GuardChain g(no_window());
  g.set_bounds(2, 8);
  EXPECT_EQ(g.apply({40, ""}, "t", at(0, 4)).workers, 8);
  EXPECT_THROW(g.set_bounds(0, 8), ConfigError);
  EXPECT_THROW(g.set_bounds(9, 8), ConfigError);
  EXPECT_THROW(g.set_bounds(4, 65), ConfigError);
}

TEST(GuardConfig, FromJsonDefaultsAndErrorsNamePath) {
  GuardConfig d = GuardConfig::from_json(nlohmann::json::object());
  EXPECT_EQ(d.min_workers, 4);
  EXPECT_EQ(d.max_workers, 16);
  try {
    GuardConfig::from_json({{"max_workers", 0}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "guards.max_workers");
  }
  try {
    GuardConfig::from_json({{"max_step_upp", 1}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "guards.max_step_upp");
    EXPECT_NE(std::string(e.what()).find("unknown key"), std::string::npos);
  }
  try {
    GuardConfig::from_json({{"min_workers", 10}, {"max_workers", 5}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "guards.min_workers");
  }
  EXPECT_THROW(GuardConfig::from_json({{"scale_down_window_seconds", "60"}}), ConfigError);
  GuardConfig round = GuardConfig::from_json(GuardConfig{}.to_json());
  EXPECT_EQ(round.to_json(), GuardConfig{}.to_json());
}

}  // namespace
}  // namespace lagpilot
