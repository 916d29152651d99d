// The shared shedding rule (policies/shed_gate.h), from the library that both the live runtime
// and the simulator link: the "shedding" parser with its JSON paths (given a custom path too, as
// a caller nesting it elsewhere would) and the gate's hysteresis on one timeline. The live
// runtime's own tests (tests/controller/shedding_test.cpp) read it through AppConfig.
#include "policies/shed_gate.h"

#include <gtest/gtest.h>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

std::string error_of(const nlohmann::json& j, const std::string& path = "shedding") {
  try {
    ShedConfig::from_json(j, path);
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "no error";
}

TEST(SharedShedConfig, ReadsTheSameObjectAsLagpilotRun) {
  const ShedConfig c = ShedConfig::from_json(
      {{"after_pressure_seconds", 10}, {"max_age_seconds", 2.5}, {"to_topic", "x.shed"}});
  EXPECT_TRUE(c.enabled);
  EXPECT_DOUBLE_EQ(c.after_pressure_seconds, 10);
  EXPECT_DOUBLE_EQ(c.release_after_seconds, 10);  // defaults to after_pressure_seconds
  EXPECT_DOUBLE_EQ(c.max_age_seconds, 2.5);
  EXPECT_FALSE(c.has_priority_rule());
  EXPECT_EQ(ShedConfig::from_json(c.to_json()).to_json(), c.to_json());
  EXPECT_FALSE(ShedConfig{}.enabled);  // opt-in
}

TEST(SharedShedConfig, ErrorsNameTheJsonPath) {
  EXPECT_EQ(error_of({{"max_age_seconds", -1}}), "shedding.max_age_seconds");
  EXPECT_EQ(error_of({{"max_age_seconds", 5}, {"release_after", 1}}), "shedding.release_after");
  EXPECT_EQ(error_of(nlohmann::json::object()), "shedding");  // sheds nothing
  EXPECT_EQ(error_of({{"after_pressure_seconds", "soon"}, {"max_age_seconds", 5}}),
            "shedding.after_pressure_seconds");
  EXPECT_EQ(error_of({{"priority", {{"key_prefixes", {{"gold:", "high"}}}}},
                      {"min_priority_under_pressure", 3}}),
            "shedding.priority.key_prefixes.gold:");
  EXPECT_EQ(error_of({{"max_age_seconds", 0}}, "x.shedding"), "x.shedding");
  EXPECT_EQ(error_of({{"max_age_seconds", 5}}), "no error");
}

TEST(SharedShedGate, HysteresisOnOneTimeline) {
  ShedGate gate(2.0, 3.0);
  using T = ShedGate::Transition;
  EXPECT_EQ(gate.update(1, true), T::kNone);
  EXPECT_EQ(gate.update(2, true), T::kNone);
  EXPECT_EQ(gate.update(3, true), T::kStarted);  // 2 s after the spell began at 1
  EXPECT_EQ(gate.update(4, false), T::kNone);
  EXPECT_EQ(gate.update(6, false), T::kNone);
  EXPECT_TRUE(gate.active());
  EXPECT_EQ(gate.update(7, false), T::kStopped);  // 3 s after the calm began at 4
  EXPECT_FALSE(gate.active());
  ShedGate same(2.0, -1);  // release defaults to after_pressure
  same.update(0, true);
  EXPECT_EQ(same.update(2, true), T::kStarted);
  same.update(3, false);
  EXPECT_EQ(same.update(5, false), T::kStopped);
}

}  // namespace
}  // namespace lagpilot
