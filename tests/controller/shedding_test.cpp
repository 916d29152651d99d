// Shedding (controller/sinks/shedding.h): the gate's hysteresis on a manual timeline, the shed
// verdict (age, priority header, key-prefix table, each on both sides of its threshold), the
// "shedding" config and its errors' JSON paths, and the pipeline shedding before the sink runs.
#include "controller/sinks/shedding.h"

#include <gtest/gtest.h>

#include <mutex>

#include "controller/app_config.h"
#include "controller/sinks/delivery_pipeline.h"
#include "policies/config_reader.h"

namespace lagpilot {
namespace {

using Transition = ShedGate::Transition;

constexpr int64_t kShedNow = 1'700'000'000'000;  // unix ms

SourceMessage message(std::string key = "k", int64_t timestamp_ms = kShedNow,
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
  SourceMessage m;
  m.topic = "events";
  m.partition = 1;
  m.offset = 42;
  m.key = std::move(key);
  m.has_key = true;
  m.value = "v";
  m.timestamp_ms = timestamp_ms;
  m.headers = std::move(headers);
  return m;
}

ShedConfig parse(const nlohmann::json& j) {
  return ShedConfig::from_json(j);
}

// ---- the gate ----

TEST(ShedGate, StartsOnlyAfterPressureLastedAfterPressureSeconds) {
  ShedGate gate(3.0, 2.0);
  EXPECT_EQ(gate.update(0, true), Transition::kNone);
  EXPECT_EQ(gate.update(1, true), Transition::kNone);
  EXPECT_EQ(gate.update(2, true), Transition::kNone);
  EXPECT_FALSE(gate.active());
  EXPECT_EQ(gate.update(3, true), Transition::kStarted);
  EXPECT_TRUE(gate.active());
  EXPECT_EQ(gate.update(4, true), Transition::kNone);  // each transition once
  EXPECT_TRUE(gate.active());
  EXPECT_DOUBLE_EQ(gate.changed_at(), 3.0);
}

TEST(ShedGate, APressureBlipDoesNotStartIt) {
  ShedGate gate(3.0, 2.0);
  gate.update(0, true);
  gate.update(1, true);
  gate.update(2, true);
  EXPECT_EQ(gate.update(2.5, false), Transition::kNone);  // the spell ends: the count restarts
  EXPECT_EQ(gate.update(3, true), Transition::kNone);
  EXPECT_EQ(gate.update(5, true), Transition::kNone);
  EXPECT_FALSE(gate.active());
  EXPECT_EQ(gate.update(6, true), Transition::kStarted);
}

TEST(ShedGate, StopsOnlyAfterPressureHasBeenGoneReleaseSeconds) {
  ShedGate gate(1.0, 2.0);
  gate.update(0, true);
  ASSERT_EQ(gate.update(1, true), Transition::kStarted);
  EXPECT_EQ(gate.update(2, false), Transition::kNone);
  EXPECT_EQ(gate.update(3, false), Transition::kNone);
  EXPECT_TRUE(gate.active());
  EXPECT_EQ(gate.update(3.5, true), Transition::kNone);  // back: the calm spell restarts
  EXPECT_EQ(gate.update(4, false), Transition::kNone);
  EXPECT_EQ(gate.update(5, false), Transition::kNone);
  EXPECT_TRUE(gate.active());
  EXPECT_EQ(gate.update(6, false), Transition::kStopped);
  EXPECT_FALSE(gate.active());
  EXPECT_EQ(gate.update(7, false), Transition::kNone);  // once
  // And it can start again, after a full spell.
  EXPECT_EQ(gate.update(8, true), Transition::kNone);
  EXPECT_EQ(gate.update(9, true), Transition::kStarted);
}

TEST(ShedGate, ReleaseDefaultsToAfterPressure) {
  ShedGate gate(2.0, -1);
  gate.update(0, true);
  ASSERT_EQ(gate.update(2, true), Transition::kStarted);
  EXPECT_EQ(gate.update(3, false), Transition::kNone);
  EXPECT_EQ(gate.update(4, false), Transition::kNone);
  EXPECT_EQ(gate.update(5, false), Transition::kStopped);
}

// ---- the verdict ----

TEST(ShedVerdict, AgeAboveMaxIsShedAndBelowIsNot) {
  const ShedConfig c = parse({{"max_age_seconds", 5}});
  const auto old = shed_verdict(c, message("k", kShedNow - 5'001), kShedNow);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->reason, ShedReason::age);
  EXPECT_NE(old->detail.find("max_age_seconds 5"), std::string::npos) << old->detail;
  EXPECT_FALSE(shed_verdict(c, message("k", kShedNow - 4'999), kShedNow).has_value());
  EXPECT_FALSE(shed_verdict(c, message("k", -1), kShedNow).has_value());  // no timestamp
}

TEST(ShedVerdict, PriorityHeaderBelowMinIsShedAtOrAboveIsNot) {
  const ShedConfig c =
      parse({{"priority", {{"header", "prio"}}}, {"min_priority_under_pressure", 5}});
  const auto low = shed_verdict(c, message("k", kShedNow, {{"prio", "4"}}), kShedNow);
  ASSERT_TRUE(low.has_value());
  EXPECT_EQ(low->reason, ShedReason::priority);
  EXPECT_FALSE(shed_verdict(c, message("k", kShedNow, {{"prio", "5"}}), kShedNow).has_value());
  EXPECT_FALSE(shed_verdict(c, message("k", kShedNow, {{"prio", "9"}}), kShedNow).has_value());
  // No header, or one that is not an integer, and no default: not shed by priority.
  EXPECT_FALSE(shed_verdict(c, message("k", kShedNow), kShedNow).has_value());
  EXPECT_FALSE(shed_verdict(c, message("k", kShedNow, {{"prio", "4x"}}), kShedNow).has_value());
  EXPECT_FALSE(shed_verdict(c, message("k", kShedNow, {{"other", "1"}}), kShedNow).has_value());
}

TEST(ShedVerdict, PriorityDefaultAppliesToRecordsWithoutOne) {
  const ShedConfig c = parse(
      {{"priority", {{"header", "prio"}, {"default", 1}}}, {"min_priority_under_pressure", 5}});
  EXPECT_TRUE(shed_verdict(c, message("k", kShedNow), kShedNow).has_value());
  EXPECT_TRUE(shed_verdict(c, message("k", kShedNow, {{"prio", "junk"}}), kShedNow).has_value());
  EXPECT_FALSE(shed_verdict(c, message("k", kShedNow, {{"prio", "7"}}), kShedNow).has_value());
}

TEST(ShedVerdict, KeyPrefixTableLongestMatchWins) {
  const ShedConfig c = parse({{"priority", {{"key_prefixes", {{"free:", 1}, {"free:vip:", 9}}}}},
                              {"min_priority_under_pressure", 5}});
  EXPECT_EQ(record_priority(c, message("free:u1")), 1);
  EXPECT_EQ(record_priority(c, message("free:vip:u2")), 9);
  EXPECT_EQ(record_priority(c, message("gold:u3")), std::nullopt);
  const auto shed = shed_verdict(c, message("free:u1"), kShedNow);
  ASSERT_TRUE(shed.has_value());
  EXPECT_EQ(shed->reason, ShedReason::priority);
  EXPECT_FALSE(shed_verdict(c, message("free:vip:u2"), kShedNow).has_value());
  EXPECT_FALSE(shed_verdict(c, message("gold:u3"), kShedNow).has_value());
  SourceMessage null_key = message("");
  null_key.has_key = false;
  EXPECT_FALSE(shed_verdict(c, null_key, kShedNow).has_value());
}

TEST(ShedVerdict, AgeComesBeforePriority) {
  const ShedConfig c = parse({{"max_age_seconds", 1},
                              {"priority", {{"key_prefixes", {{"free:", 1}}}}},
                              {"min_priority_under_pressure", 5}});
  EXPECT_EQ(shed_verdict(c, message("free:a", kShedNow - 2'000), kShedNow)->reason,
            ShedReason::age);
  EXPECT_EQ(shed_verdict(c, message("free:a", kShedNow), kShedNow)->reason, ShedReason::priority);
}

TEST(Shedder, DecidesNothingWhileTheGateIsOff) {
  Shedder s(parse({{"max_age_seconds", 1}, {"after_pressure_seconds", 0}}));
  const SourceMessage old = message("k", kShedNow - 10'000);
  EXPECT_FALSE(s.decide(old, kShedNow).has_value());
  s.gate().update(0, true);
  EXPECT_TRUE(s.decide(old, kShedNow).has_value());
}

TEST(Shedder, CountsAndTheWindowLine) {
  Shedder s(parse({{"max_age_seconds", 1}}));
  EXPECT_EQ(format_shed_window(s.take_window()), "");
  s.count(ShedReason::age);
  s.count(ShedReason::age);
  s.count(ShedReason::priority);
  EXPECT_EQ(format_shed_window(s.take_window()),
            "shedding: shed 3 record(s) this tick (age 2, priority 1)");
  EXPECT_EQ(format_shed_window(s.take_window()), "");  // the window restarts
  EXPECT_EQ(s.stats().total(), 3u);
  const nlohmann::json j = to_json(s.stats());
  EXPECT_EQ(j["age"], 2);
  EXPECT_EQ(j["priority"], 1);
  EXPECT_EQ(j["active"], false);
  EXPECT_EQ(j["last_transition"], "");
  s.note_transition("shedding started: x", 12.5);
  EXPECT_EQ(to_json(s.stats())["last_transition"], "shedding started: x");
  EXPECT_EQ(to_json(s.stats())["last_transition_unix_seconds"], 12.5);
}

// ---- config ----

std::string error_of(const nlohmann::json& root) {
  try {
    AppConfig::from_json(root);
  } catch (const ConfigError& e) {
    return e.path() + " | " + e.what();
  }
  return "no error";
}

TEST(ShedConfig, DefaultsAndRoundTrip) {
  const AppConfig none = AppConfig::from_json(nlohmann::json::object());
  EXPECT_FALSE(none.runtime.shedding.enabled);  // opt-in
  EXPECT_FALSE(none.to_json().contains("shedding"));
  const AppConfig c =
      AppConfig::from_json({{"shedding",
                             {{"max_age_seconds", 60},
                              {"priority", {{"header", "priority"}, {"default", 5}}},
                              {"min_priority_under_pressure", 3},
                              {"to_topic", "events.shed"}}}});
  const ShedConfig& s = c.runtime.shedding;
  EXPECT_TRUE(s.enabled);
  EXPECT_DOUBLE_EQ(s.after_pressure_seconds, 30);
  EXPECT_DOUBLE_EQ(s.release_after_seconds, 30);
  EXPECT_EQ(s.priority_header, "priority");
  EXPECT_EQ(s.default_priority, 5);
  EXPECT_EQ(s.to_topic, "events.shed");
  const AppConfig again = AppConfig::from_json(c.to_json());
  EXPECT_EQ(again.to_json()["shedding"], c.to_json()["shedding"]);
}

TEST(ShedConfig, ErrorsNameTheJsonPath) {
  EXPECT_EQ(error_of({{"shedding", {{"max_age", 5}}}}).rfind("shedding.max_age |", 0), 0u)
      << error_of({{"shedding", {{"max_age", 5}}}});
  EXPECT_EQ(
      error_of({{"shedding", {{"max_age_seconds", -1}}}}).rfind("shedding.max_age_seconds", 0), 0u);
  EXPECT_EQ(error_of({{"shedding", nlohmann::json::object()}}).rfind("shedding |", 0), 0u)
      << "a shedding object that sheds nothing";
  EXPECT_EQ(error_of({{"shedding", {{"min_priority_under_pressure", 3}}}})
                .rfind("shedding.priority |", 0),
            0u);
  EXPECT_EQ(error_of({{"shedding", {{"priority", {{"header", "p"}}}}}})
                .rfind("shedding.min_priority_under_pressure |", 0),
            0u);
  EXPECT_EQ(error_of({{"shedding",
                       {{"priority", {{"header", "p"}, {"key_prefixes", {{"a", 1}}}}},
                        {"min_priority_under_pressure", 3}}}})
                .rfind("shedding.priority |", 0),
            0u);
  EXPECT_EQ(error_of({{"shedding",
                       {{"priority", {{"key_prefixes", {{"gold:", "high"}}}}},
                        {"min_priority_under_pressure", 3}}}})
                .rfind("shedding.priority.key_prefixes.gold: |", 0),
            0u);
  EXPECT_EQ(error_of({{"shedding",
                       {{"priority", {{"header", "p"}, {"colour", 1}}},
                        {"min_priority_under_pressure", 3}}}})
                .rfind("shedding.priority.colour |", 0),
            0u);
  EXPECT_EQ(error_of({{"kafka", {{"topics", {"events"}}}},
                      {"shedding", {{"max_age_seconds", 5}, {"to_topic", "events"}}}})
                .rfind("shedding.to_topic |", 0),
            0u);
  EXPECT_EQ(error_of({{"shedding", {{"max_age_seconds", 5}, {"to_topic", 7}}}})
                .rfind("shedding.to_topic |", 0),
            0u);
}

// ---- the pipeline ----

TEST(DeliveryPipelineShedding, ShedsBeforeTheSinkProducesAndCounts) {
  int sink_calls = 0;
  DeliveryPipeline pipeline(
      [&](const SourceMessage&) {
        ++sink_calls;
        return Delivery::done();
      },
      FailureConfig{}, DeadLetterSend{}, 1);
  ShedConfig config = parse({{"max_age_seconds", 5}, {"to_topic", "events.shed"}});
  Shedder shedder(config);
  std::mutex mu;  // guards sent, fail_first
  std::vector<std::string> sent;
  int fail_first = 1;
  pipeline.set_shedding(
      &shedder,
      [&](const SourceMessage& m, const ShedVerdict& v) {
        std::lock_guard lock(mu);
        if (fail_first > 0) {
          --fail_first;
          return std::string("broker down");
        }
        sent.push_back(std::to_string(m.offset) + ":" + shed_reason_name(v.reason));
        return std::string();
      },
      [] { return kShedNow; });
  const SourceMessage old = message("k", kShedNow - 6'000);
  pipeline(old);  // gate off: delivered
  EXPECT_EQ(sink_calls, 1);
  shedder.gate().update(0, true);
  shedder.gate().update(30, true);
  ASSERT_TRUE(shedder.gate().active());
  pipeline(old);  // shed: the first produce fails and is retried
  EXPECT_EQ(sink_calls, 1);
  pipeline(message("k", kShedNow - 1'000));  // young: delivered
  EXPECT_EQ(sink_calls, 2);
  EXPECT_EQ(sent, std::vector<std::string>{"42:age"});
  EXPECT_EQ(shedder.stats().shed[static_cast<int>(ShedReason::age)], 1u);
  EXPECT_EQ(shedder.stats().to_topic_failures, 1u);
  EXPECT_EQ(pipeline.stats().ok, 2u);
}

TEST(DeliveryPipelineShedding, AToTopicNeedsASend) {
  DeliveryPipeline pipeline([](const SourceMessage&) { return Delivery::done(); }, FailureConfig{},
                            DeadLetterSend{}, 1);
  Shedder shedder(parse({{"max_age_seconds", 5}, {"to_topic", "events.shed"}}));
  EXPECT_THROW(pipeline.set_shedding(&shedder, ShedSend{}), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot
