// Producer pacing: the recommendation (controller/metrics/pacing.h), its gauge, and following it
// from a producer (controller/loadgen/pacing_poller.h) on a manual clock. No Kafka, no sleeps.
#include "controller/metrics/pacing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "controller/loadgen/pacing_poller.h"
#include "controller/loadgen/token_bucket.h"
#include "controller/metrics/metrics.h"
#include "policies/clock.h"
#include "policies/config_reader.h"

namespace lagpilot {
namespace {

constexpr double kNow = 1.7e9;

Observation obs(int workers, int64_t lag, double processed, double busy) {
  Observation o;
  o.current_workers = workers;
  o.total_lag = lag;
  o.processed_rate = processed;
  o.busy_workers = busy;
  return o;
}

TEST(PacingConfig, HeadroomDefaultsTo25PercentAndMustStayWithin20To30) {
  EXPECT_DOUBLE_EQ(PacingConfig{}.headroom, 0.25);
  EXPECT_DOUBLE_EQ(PacingConfig::from_json({{"headroom", 0.2}}).headroom, 0.2);
  EXPECT_DOUBLE_EQ(PacingConfig::from_json({{"headroom", 0.3}}).headroom, 0.3);
  for (double bad : {0.19, 0.31, 0.0, 1.0}) {
    try {
      PacingConfig::from_json({{"headroom", bad}});
      ADD_FAILURE() << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "pacing.headroom") << bad;
      EXPECT_NE(std::string(e.what()).find("between 20 % and 30 %"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(PacingConfig::from_json({{"head_room", 0.25}}), ConfigError);  // unknown key
}

TEST(PacingRecommendation, RateIsTheSustainableRateLessHeadroomAndBurstTheSpareCapacityOfATick) {
  const auto p = PacingRecommendation::from_rate(1000, 0.25, 2.0, 16, "measured", kNow);
  ASSERT_TRUE(p.available);
  EXPECT_DOUBLE_EQ(p.rate, 750);
  EXPECT_DOUBLE_EQ(p.burst, 500);  // 0.25 x 1000/s x 2 s
  EXPECT_DOUBLE_EQ(PacingRecommendation::from_rate(2, 0.25, 1.0, 4, "measured", kNow).burst, 1);
  EXPECT_FALSE(PacingRecommendation::from_rate(0, 0.25, 1.0, 4, "measured", kNow).available);
  EXPECT_FALSE(PacingRecommendation::from_rate(NAN, 0.25, 1.0, 4, "measured", kNow).available);

  const nlohmann::json j = pacing_json(p, kNow + 7);
  EXPECT_DOUBLE_EQ(j["rate"].get<double>(), 750);
  EXPECT_DOUBLE_EQ(j["burst"].get<double>(), 500);
  EXPECT_EQ(j["source"], "measured");
  EXPECT_DOUBLE_EQ(j["age_seconds"].get<double>(), 7);
  const nlohmann::json none = pacing_json(PacingRecommendation{}, kNow);
  EXPECT_TRUE(none["rate"].is_null());
  EXPECT_TRUE(none["burst"].is_null());
  EXPECT_TRUE(none["age_seconds"].is_null());
  EXPECT_EQ(none["source"], "none");
}

TEST(PacingRecommendation, FromACalibrationMeasuredAtMaxWorkersOrItsFitThere) {
  const nlohmann::json record = {
      {"sustained_rate", 3000.0},
      {"sustained_workers", 16},
      {"date", "2026-12-01T12:00:00Z"},
      {"fit", {{"valid", true}, {"lambda", 200.0}, {"sigma", 0.0}, {"kappa", 0.0}}}};
  const auto measured = PacingRecommendation::from_calibration(record, 16, 0.25, 1.0);
  ASSERT_TRUE(measured.available);
  EXPECT_EQ(measured.source, "calibration");
  EXPECT_DOUBLE_EQ(measured.rate, 2250);
  EXPECT_DOUBLE_EQ(measured.as_of_unix_seconds, parse_utc_iso8601("2026-12-01T12:00:00Z"));
  EXPECT_DOUBLE_EQ(parse_utc_iso8601("1970-01-02T00:00:00Z"), 86400);
  EXPECT_DOUBLE_EQ(parse_utc_iso8601("yesterday"), -1);

  const auto fitted = PacingRecommendation::from_calibration(record, 8, 0.2, 1.0);
  ASSERT_TRUE(fitted.available);
  EXPECT_EQ(fitted.source, "calibration_fit");
  EXPECT_DOUBLE_EQ(fitted.sustainable_rate, 1600);  // 200/s x 8, no contention
  EXPECT_DOUBLE_EQ(fitted.rate, 1280);

  EXPECT_FALSE(PacingRecommendation::from_calibration(nullptr, 16, 0.25, 1.0).available);
  EXPECT_FALSE(
      PacingRecommendation::from_calibration({{"sustained_rate", 1}}, 16, 0.25, 1.0).available);
}

TEST(PacingEstimator, MeasuresAtMaxWorkersWithABacklogAndPrefersThatToTheCalibration) {
  const nlohmann::json calibration = {{"sustained_rate", 900.0}, {"sustained_workers", 4}};
  PacingEstimator e(PacingConfig{}, 1.0, calibration);
  // Below max workers: the calibration applies.
  EXPECT_EQ(e.update(obs(2, 5000, 400, 2), 4, kNow).source, "calibration");
  EXPECT_DOUBLE_EQ(e.last().rate, 675);
  // The first tick at max has no backlog at its start yet: still the calibration.
  EXPECT_EQ(e.update(obs(4, 5000, 780, 4), 4, kNow + 1).source, "calibration");
  EXPECT_EQ(e.update(obs(4, 5000, 800, 4), 4, kNow + 2).source, "measured");
  EXPECT_DOUBLE_EQ(e.last().sustainable_rate, 800);
  EXPECT_DOUBLE_EQ(e.last().as_of_unix_seconds, kNow + 2);
  // The mean of the last kMeasuredWindow qualifying ticks.
  for (int i = 0; i < PacingEstimator::kMeasuredWindow; ++i) {
    e.update(obs(4, 5000, 1000, 4), 4, kNow + 3 + i);
  }
  EXPECT_DOUBLE_EQ(e.last().sustainable_rate, 1000);
  // A drained topic (lag 0) measures the arrivals, not the consumer: not a sample, the
  // figure and its time stay.
  e.update(obs(4, 0, 10, 0.1), 4, kNow + 20);
  EXPECT_DOUBLE_EQ(e.last().sustainable_rate, 1000);
  EXPECT_DOUBLE_EQ(e.last().as_of_unix_seconds, kNow + 3 + PacingEstimator::kMeasuredWindow - 1);
  // A new bound starts over (the calibration's fit is absent: the per-worker estimate).
  EXPECT_EQ(e.update(obs(4, 5000, 1000, 4), 8, kNow + 21).source, "per_worker_estimate");
  EXPECT_DOUBLE_EQ(e.last().sustainable_rate, 2000);  // 250/s per busy worker x 8
}

TEST(PacingEstimator, AConsumerKeptBelowItsCapacityDoesNotLowerTheRecommendation) {
  // Saturated at 4 workers: 800/s measured, 600/s recommended. A producer paced at 600/s then
  // leaves the workers 75 % busy, with a little lag (fetched, not yet done) at every tick.
  // Those ticks measure the producer, not the consumer: counted, the recommendation would fall
  // to 450/s, then 338/s, ... (a ratchet).
  PacingEstimator e;
  for (int i = 0; i < 3; ++i) e.update(obs(4, 5000, 800, 3.9), 4, kNow + i);
  ASSERT_EQ(e.last().source, "measured");
  ASSERT_DOUBLE_EQ(e.last().rate, 600);
  for (int i = 3; i < 30; ++i) e.update(obs(4, 300, 600, 3.0), 4, kNow + i);
  EXPECT_DOUBLE_EQ(e.last().rate, 600);
  EXPECT_DOUBLE_EQ(e.last().as_of_unix_seconds, kNow + 2);  // and it says how old it is
  // Saturated again (the consumer got slower): measured again.
  for (int i = 30; i < 30 + PacingEstimator::kMeasuredWindow + 1; ++i) {
    e.update(obs(4, 5000, 400, 4), 4, kNow + i);
  }
  EXPECT_DOUBLE_EQ(e.last().rate, 300);
}

TEST(PacingEstimator, NothingMeasuredMeansNoRecommendation) {
  PacingEstimator e;
  EXPECT_FALSE(e.update(obs(4, 0, 0, 0), 16, kNow).available);
  EXPECT_EQ(e.last().source, "none");
}

TEST(PacingMetrics, TheGaugeCarriesTheRecommendation) {
  auto registry = std::make_shared<prometheus::Registry>();
  RuntimeMetrics metrics(registry, 60, PacingEstimator(PacingConfig{}, 1.0, nullptr));
  GuardConfig guards;
  guards.max_workers = 4;
  const auto rendered_rate = [&] {
    const std::string text = metrics.render();
    const std::string key = "\nlagpilot_recommended_producer_rate ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + key.size()));
  };
  EXPECT_DOUBLE_EQ(rendered_rate(), 0);
  EXPECT_FALSE(metrics.pacing().available);
  TickReport r;
  r.observation = obs(4, 100, 800, 4);
  metrics.record_tick(r, guards, false, 0.001, kNow);
  metrics.record_tick(r, guards, false, 0.001, kNow + 1);
  EXPECT_EQ(metrics.pacing().source, "measured");
  EXPECT_DOUBLE_EQ(rendered_rate(), 600);
  EXPECT_EQ(metrics.last_tick_status()["pacing"]["source"], "measured");
}

TEST(PaceTarget, ReadFromThePacingDocument) {
  const auto t = pace_target_from_json({{"rate", 600.0}, {"burst", 200.0}, {"source", "measured"}});
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->rate, 600);
  EXPECT_DOUBLE_EQ(t->burst, 200);
  EXPECT_EQ(t->source, "measured");
  EXPECT_FALSE(pace_target_from_json({{"rate", nullptr}, {"burst", nullptr}}));
  EXPECT_FALSE(pace_target_from_json({{"rate", -1.0}, {"burst", 5.0}}));
  EXPECT_FALSE(pace_target_from_json({{"rate", 5.0}, {"burst", 0.0}}));
  EXPECT_FALSE(pace_target_from_json("not an object"));
}

// A producer loop as PacedProducer runs it (take every whole token each 1/64 s step, apply
// latest() with follow_pace first), its poller ticking every second on the same manual clock.
// The recommendation changes at t = 3.3 s: in the second whole tick window after the change
// (from the tick at 5 s on) the producer sends exactly the new rate.
TEST(PacingPoller, ProducerFollowsAChangedRecommendationWithinTwoTicks) {
  ManualClock clock(0);
  PaceTarget served{1000, 100, "measured"};
  PacingPoller poller([&] { return std::optional<PaceTarget>(served); }, 1.0);
  TokenBucket bucket(5000, 50, 0, 1);  // the producer's own --rate until the first answer
  std::optional<PaceTarget> current;
  std::vector<uint64_t> per_tick(10, 0);
  double changed_at = -1;
  for (int step = 0; step < 10 * 64; ++step) {
    const double now = step / 64.0;
    clock.set(now);
    if (step == static_cast<int>(3.3 * 64)) served = {200, 50, "measured"};
    poller.tick(clock.now());  // the poller's thread
    if (follow_pace(bucket, current, poller.latest(), now) && current->rate == 200) {
      changed_at = now;
    }
    const uint64_t n = bucket.available_whole(now);
    bucket.try_take(static_cast<double>(n), now);
    per_tick[static_cast<std::size_t>(now)] += n;
  }
  EXPECT_EQ(poller.fetches(), 10u);  // once per tick, not per loop iteration
  ASSERT_GE(changed_at, 3.3);
  EXPECT_LE(changed_at, 3.3 + 2 * poller.tick_seconds());
  EXPECT_NEAR(static_cast<double>(per_tick[2]), 1000, 2);  // the old recommendation
  for (std::size_t t = 5; t < per_tick.size(); ++t) {
    EXPECT_NEAR(static_cast<double>(per_tick[t]), 200, 1) << "tick window " << t;
  }
}

TEST(PacingPoller, AFailedFetchKeepsTheLastTargetAndMissedTicksAreNotCaughtUp) {
  std::optional<PaceTarget> served = PaceTarget{100, 10, "measured"};
  PacingPoller poller([&] { return served; }, 1.0);
  EXPECT_TRUE(poller.tick(0));
  EXPECT_FALSE(poller.tick(0.5));
  served.reset();  // unreachable, or no rate yet
  EXPECT_TRUE(poller.tick(1.0));
  ASSERT_TRUE(poller.latest());
  EXPECT_DOUBLE_EQ(poller.latest()->rate, 100);
  EXPECT_TRUE(poller.tick(7.5));  // a stall: one fetch, and the beat moves on
  EXPECT_DOUBLE_EQ(poller.next_due(), 8.0);
  EXPECT_EQ(poller.fetches(), 3u);
}

}  // namespace
}  // namespace lagpilot
