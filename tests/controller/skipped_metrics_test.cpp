// The skipped-records counters reach Prometheus as one family with a reason label, and the
// status JSON lists them with the lag data's age at the tick.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <cmath>
#include <sstream>
#include <string>

#include "controller/metrics/metrics.h"

namespace lagpilot {
namespace {

double skipped_sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nan("");
}

TEST(SkippedMetrics, EachReasonIsASeriesOfOneFamilyAndInTheStatus) {
  RuntimeMetrics metrics(std::make_shared<prometheus::Registry>());
  TickReport r;
  r.decision.policy = "static";
  r.source.skipped_gap = 3;
  r.source.skipped_reset = 300;
  r.source.skipped_truncation = 7;
  r.source.lag_age_seconds = 0.25;
  metrics.record_tick(r, GuardConfig{}, false, 0.001, 1.7e9);
  const std::string text = metrics.render();
  EXPECT_EQ(skipped_sample(text, "lagpilot_records_skipped_total{reason=\"offset_gap\"}"), 3);
  EXPECT_EQ(skipped_sample(text, "lagpilot_records_skipped_total{reason=\"offset_reset\"}"), 300);
  EXPECT_EQ(skipped_sample(text, "lagpilot_records_skipped_total{reason=\"truncation\"}"), 7);
  const nlohmann::json status = metrics.last_tick_status();
  EXPECT_EQ(status["counters"]["skipped_gap"], 3);
  EXPECT_EQ(status["counters"]["skipped_reset"], 300);
  EXPECT_EQ(status["counters"]["skipped_truncation"], 7);
  EXPECT_DOUBLE_EQ(status["lag_age_at_tick_seconds"].get<double>(), 0.25);
}

}  // namespace
}  // namespace lagpilot
