// The delivery metrics: each outcome a counter series, counters fed by deltas of the
// pipeline's cumulative statistics, gauges set, every family declared with a help text.
#include "controller/metrics/delivery_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <memory>

namespace lagpilot {
namespace {

std::string render(prometheus::Registry& r) {
  return prometheus::TextSerializer().Serialize(r.Collect());
}

TEST(DeliveryMetrics, CountersFollowTheCumulativeStatistics) {
  prometheus::Registry registry;
  DeliveryMetrics m(registry);
  DeliveryStats s;
  s.ok = 10;
  s.retry = 3;
  s.dead_letter = 1;
  s.attempts = 14;
  s.pushbacks = 2;
  s.backoff_seconds = 1.5;
  s.in_retry = 2;
  s.oldest_retry_seconds = 42;
  m.record(s, 1);
  s.ok = 25;  // a later tick: only the difference is added
  s.attempts = 29;
  m.record(s, 1);
  const std::string page = render(registry);
  EXPECT_NE(page.find("lagpilot_deliveries_total{outcome=\"ok\"} 25"), std::string::npos) << page;
  EXPECT_NE(page.find("lagpilot_deliveries_total{outcome=\"retry\"} 3"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_deliveries_total{outcome=\"dead_letter\"} 1"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_deliveries_total{outcome=\"dropped\"} 0"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_delivery_attempts_total 29"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_sink_pushbacks_total 2"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_delivery_backoff_seconds_total 1.5"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_messages_in_retry 2"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_oldest_retry_seconds 42"), std::string::npos);
  EXPECT_NE(page.find("lagpilot_sink_children_restarted_total 1"), std::string::npos);
}

TEST(DeliveryMetrics, EveryFamilyIsDeclaredWithHelp) {
  prometheus::Registry registry;
  DeliveryMetrics m(registry);
  m.record(DeliveryStats{}, 0);
  const std::string page = render(registry);
  for (const std::string& name : DeliveryMetrics::metric_names()) {
    EXPECT_NE(page.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_NE(page.find("# TYPE " + name + " "), std::string::npos) << name;
  }
  EXPECT_EQ(DeliveryMetrics::metric_names().size(), 11u);
}

}  // namespace
}  // namespace lagpilot
