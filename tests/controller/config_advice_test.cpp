// The config advice (controller/config_advice.h): every rule fires on a config that breaks it
// (positive) and stays quiet on one that keeps it (negative); bad calibrations are refused
// naming the JSON path.
#include "controller/config_advice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

AppConfig config(const nlohmann::json& j) {
  return AppConfig::from_json(j);
}

// A calibration record whose steps have these p99 handler times (seconds).
CalibrationInput calibration(std::vector<double> p99s, double headroom = 0.25) {
  nlohmann::json steps = nlohmann::json::array();
  int workers = 1;
  for (double p : p99s) {
    steps.push_back({{"workers", workers}, {"latency_p99_seconds", p}});
    workers *= 2;
  }
  return calibration_record({{"steps", steps}, {"headroom", headroom}});
}

// The checks that fired, and the paths they named.
std::vector<std::string> fired(const std::vector<AdviceFinding>& findings) {
  std::vector<std::string> out;
  for (const AdviceFinding& f : findings) out.push_back(f.check + " " + f.path);
  return out;
}

nlohmann::json kafka_props(const nlohmann::json& props) {
  return {{"kafka", {{"properties", props}}}};
}

TEST(ConfigAdvice, TheDefaultsPassEveryCheck) {
  EXPECT_TRUE(advise(AppConfig{}).empty());
  EXPECT_TRUE(advise(AppConfig{}, calibration({0.005, 0.006})).empty());
  EXPECT_EQ(advice_rules().size(), 7u);
}

TEST(ConfigAdvice, FetchMaxBytesAbove50MB) {
  EXPECT_EQ(fired(advise(config(kafka_props({{"fetch.max.bytes", 52428801}})))),
            std::vector<std::string>{"fetch_max_bytes kafka.properties.fetch.max.bytes"});
  EXPECT_TRUE(advise(config(kafka_props({{"fetch.max.bytes", 52428800}}))).empty());
  EXPECT_TRUE(advise(config(kafka_props({{"fetch.max.bytes", 1048576}}))).empty());
}

TEST(ConfigAdvice, MaxPollRecordsAbove500UnlessHandlingTakesMilliseconds) {
  const AppConfig many = config(kafka_props({{"max.poll.records", 1000}}));
  const std::vector<std::string> expected{"max_poll_records kafka.properties.max.poll.records"};
  EXPECT_EQ(fired(advise(many)), expected);  // no calibration to show it
  EXPECT_EQ(fired(advise(many, calibration({0.004, 0.05}))), expected);  // 50 ms: not ms
  EXPECT_TRUE(advise(many, calibration({0.004, 0.009})).empty());        // milliseconds
  EXPECT_TRUE(advise(config(kafka_props({{"max.poll.records", 500}}))).empty());
}

TEST(ConfigAdvice, MaxPollIntervalBelowTheWorstObservedBatchTime) {
  const std::vector<std::string> expected{
      "max_poll_interval kafka.properties.max.poll.interval.ms"};
  // Without a calibration: 300,000 ms, the value for heavy preprocessing.
  EXPECT_EQ(fired(advise(config(kafka_props({{"max.poll.interval.ms", 299999}})))), expected);
  EXPECT_TRUE(advise(config(kafka_props({{"max.poll.interval.ms", 300000}}))).empty());
  // With one: its worst step p99 (here 40 s of preprocessing per batch).
  const AppConfig short_interval = config(
      {{"kafka",
        {{"properties", {{"max.poll.interval.ms", 30000}}}, {"revoke_timeout_seconds", 5}}}});
  EXPECT_EQ(fired(advise(short_interval, calibration({12.0, 40.0}))), expected);
  EXPECT_TRUE(advise(short_interval, calibration({12.0, 29.0})).empty());
  const auto f = advise(short_interval, calibration({12.0, 40.0}));
  EXPECT_NE(f[0].message.find("40,000 ms"), std::string::npos) << f[0].message;
}

TEST(ConfigAdvice, RevokeTimeoutNotBelowTheMaxPollInterval) {
  const auto f = advise(config(
      {{"kafka",
        {{"properties", {{"max.poll.interval.ms", 300000}}}, {"revoke_timeout_seconds", 300}}}}));
  EXPECT_EQ(fired(f), std::vector<std::string>{"revoke_timeout kafka.revoke_timeout_seconds"});
  EXPECT_TRUE(advise(config({{"kafka", {{"revoke_timeout_seconds", 299}}}})).empty());
}

TEST(ConfigAdvice, WatermarksOtherThan80And20) {
  EXPECT_EQ(fired(advise(config({{"pool", {{"high_watermark", 0.9}}}}))),
            std::vector<std::string>{"watermarks pool.high_watermark"});
  EXPECT_EQ(fired(advise(config({{"pool", {{"low_watermark", 0.3}}}}))),
            std::vector<std::string>{"watermarks pool.low_watermark"});
  EXPECT_TRUE(
      advise(config({{"pool", {{"high_watermark", 0.8}, {"low_watermark", 0.2}}}})).empty());
}

TEST(ConfigAdvice, BurstHeadroomOutside20To30Percent) {
  const auto f = advise(AppConfig{}, calibration({0.005}, 0.1));
  EXPECT_EQ(fired(f), std::vector<std::string>{"burst_headroom headroom"});
  EXPECT_TRUE(f[0].in_calibration);
  EXPECT_EQ(fired(advise(AppConfig{}, calibration({0.005}, 0.5))),
            std::vector<std::string>{"burst_headroom headroom"});
  EXPECT_TRUE(advise(AppConfig{}, calibration({0.005}, 0.2)).empty());
  EXPECT_TRUE(advise(AppConfig{}, calibration({0.005}, 0.3)).empty());
  // In a config written by calibrate, the path is that of its "calibration" section.
  const CalibrationInput in_config = calibration_record(
      {{"calibration", {{"steps", nlohmann::json::array()}, {"headroom", 0.1}}}});
  EXPECT_EQ(fired(advise(AppConfig{}, in_config)),
            std::vector<std::string>{"burst_headroom calibration.headroom"});
  // The config's own headroom cannot be out of range: loading refuses it.
  EXPECT_THROW(config({{"pacing", {{"headroom", 0.1}}}}), ConfigError);
}

TEST(ConfigAdvice, TrainingAndOnlineTrafficOnOneClusterOrTopic) {
  for (const char* share : {"cluster", "topic"}) {
    const auto f = advise(config({{"traffic", {{"training_and_online_share", share}}}}));
    EXPECT_EQ(fired(f),
              std::vector<std::string>{"shared_traffic traffic.training_and_online_share"})
        << share;
  }
  EXPECT_TRUE(advise(config({{"traffic", {{"training_and_online_share", "none"}}}})).empty());
  EXPECT_THROW(config({{"traffic", {{"training_and_online_share", "both"}}}}), ConfigError);
}

TEST(ConfigAdvice, AKafkaPropertyThatIsNotANumberIsAnErrorNamingIt) {
  try {
    advise(config(kafka_props({{"fetch.max.bytes", "lots"}})));
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "kafka.properties.fetch.max.bytes");
  }
}

TEST(ConfigAdvice, ABadCalibrationIsRefusedNamingTheJsonPath) {
  const auto path_of = [](const nlohmann::json& doc) {
    try {
      calibration_record(doc);
    } catch (const ConfigError& e) {
      return e.path();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(path_of({{"steps", {{{"workers", 1}, {"latency_p99_seconds", "slow"}}}}}),
            "steps[0].latency_p99_seconds");
  EXPECT_EQ(path_of({{"steps", {{{"workers", 1}}}}}), "steps[0].latency_p99_seconds");
  EXPECT_EQ(path_of({{"steps", 3}}), "steps");
  EXPECT_EQ(path_of({{"steps", nlohmann::json::array()}, {"headroom", "a quarter"}}), "headroom");
  EXPECT_EQ(path_of({{"calibration", {{"steps", {{{"workers", 0}, {"latency_p99_seconds", 1}}}}}}}),
            "calibration.steps[0].workers");
  EXPECT_EQ(path_of({{"policy", {{"name", "pid"}}}}), "steps");
  EXPECT_EQ(path_of({{"steps", nlohmann::json::array()}}), "(accepted)");
}

TEST(ConfigAdvice, AFindingReadsPathMessageAndCheck) {
  const auto f = advise(config({{"pool", {{"high_watermark", 0.9}}}}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(format_finding(f[0]).rfind("pool.high_watermark: high_watermark is 0.9, not 0.8", 0),
            0u);
  EXPECT_NE(format_finding(f[0]).find("[watermarks]"), std::string::npos);
}

}  // namespace
}  // namespace lagpilot
