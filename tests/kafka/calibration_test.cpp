// The calibration procedure (controller/calibration/calibrator.h).
//  * Against a fake consumer that follows a known USL curve, on a ManualClock (no sleeping):
//    the table, the fit, the rate limit, dryness/starvation/peak warnings, interruption.
//  * Against the embedded broker with a real handler (live, a few seconds): every step runs and
//    fits. The live figures are in bench/calibration_bench.cpp.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/calibration/calibrator.h"
#include "controller/calibration/live_calibration.h"
#include "controller/calibration/live_calibration_target.h"
#include "controller/calibration/saturating_producer.h"
#include "controller/kafka/kafka_source.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/synthetic_handler.h"
#include "controller/pool/worker_pool.h"
#include "controller/steady_clock.h"
#include "policies/clock.h"

namespace lagpilot {
namespace {

// ---------------------------------------------------------------------------------------------
// A fake consumer on simulated time: N workers deliver X(N) = lambda N / (1 + sigma (N - 1) +
// kappa N (N - 1)) messages/s, exactly. Hooks make it run dry or starve at chosen sizes.

struct UslCurve {
  double lambda = 200, sigma = 0.05, kappa = 0.001;
  double at(int n) const { return lambda * n / (1 + sigma * (n - 1) + kappa * n * (n - 1)); }
};

class FakeConsumer final : public CalibrationTarget {
 public:
  FakeConsumer(ManualClock& clock, UslCurve curve) : clock_(clock), curve_(curve) {}

  bool ready() override { return ready_after_ >= 0 && clock_.now() >= ready_after_; }
  int set_workers(int n) override {
    advance();
    workers_ = n;
    return n;
  }
  Reading read() override {
    advance();
    Reading r;
    r.completed = static_cast<uint64_t>(completed_);
    r.lag = dry_at_ == workers_ ? 0 : 5000;
    return r;
  }
  PoolWindow take_window() override {
    advance();
    PoolWindow w;
    w.seconds = clock_.now() - window_start_;
    window_start_ = clock_.now();
    w.busy_mean = starved_at_ == workers_ ? 0.5 * workers_ : workers_;
    const double service = workers_ / std::max(1e-9, curve_.at(std::max(1, workers_)));
    w.latency_p50 = service;
    w.latency_p99 = 3 * service;
    return w;
  }

  double ready_after_ = 0;  // < 0: never ready
  int dry_at_ = -1;         // at this size the topic reads lag 0
  int starved_at_ = -1;     // at this size only half the workers are busy

 private:
  void advance() {
    const double now = clock_.now();
    if (workers_ > 0) completed_ += curve_.at(workers_) * (now - last_);
    last_ = now;
  }

  ManualClock& clock_;
  UslCurve curve_;
  int workers_ = 0;
  double completed_ = 0;
  double last_ = 0;
  double window_start_ = 0;
};

// A Sleeper that moves the ManualClock instead of sleeping; stops after `stop_after` seconds.
Calibrator::Sleeper manual_sleeper(ManualClock& clock, double stop_after = 1e18) {
  return [&clock, stop_after](double s) {
    clock.advance(s);
    return clock.now() >= stop_after;
  };
}

CalibrationOptions fast_options() {
  CalibrationOptions o;
  o.steps = {1, 2, 4, 8, 16};
  o.dwell_seconds = 5;
  o.warmup_seconds = 1;
  return o;
}

TEST(CalibrationOptions, DoublingStepsEndAtTheMaximum) {
  EXPECT_EQ(CalibrationOptions::doubling_steps(16), (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(CalibrationOptions::doubling_steps(12), (std::vector<int>{1, 2, 4, 8, 12}));
  EXPECT_EQ(CalibrationOptions::doubling_steps(1), (std::vector<int>{1}));
  CalibrationOptions o;
  o.max_workers = 5;
  EXPECT_EQ(o.effective_steps(), (std::vector<int>{1, 2, 4, 5}));
  o.steps = {3, 6};
  EXPECT_EQ(o.effective_steps(), (std::vector<int>{3, 6}));
}

TEST(CalibrationOptions, BadOptionsNameTheField) {
  auto expect_error = [](CalibrationOptions o, const std::string& field) {
    try {
      o.validate();
      ADD_FAILURE() << "no error for " << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(field, 0), 0u) << e.what();
    }
  };
  CalibrationOptions o;
  o.steps = {1, 4, 2};
  expect_error(o, "steps[2]");
  o.steps = {0, 1};
  expect_error(o, "steps[0]");
  o = {};
  o.dwell_seconds = 1;
  o.warmup_seconds = 1;
  expect_error(o, "dwell_seconds");
  o = {};
  o.warmup_seconds = -1;
  expect_error(o, "warmup_seconds");
  o = {};
  o.headroom = 1;
  expect_error(o, "headroom");
  o = {};
  o.max_workers = 0;
  expect_error(o, "max_workers");
  EXPECT_NO_THROW(CalibrationOptions{}.validate());
}

TEST(Calibrator, MeasuresEachStepAndRecoversTheCurve) {
  ManualClock clock;
  const UslCurve curve{200, 0.05, 0.001};
  FakeConsumer consumer(clock, curve);
  std::vector<CalibrationProgress> progress;
  std::vector<int> done_rows;  // CalibrationProgress::step is only valid during the call
  Calibrator calibrator(fast_options(), consumer, clock, manual_sleeper(clock),
                        [&](const CalibrationProgress& p) {
                          progress.push_back(p);
                          if (p.step != nullptr) done_rows.push_back(p.step->workers);
                        });
  const CalibrationResult r = calibrator.run();

  ASSERT_TRUE(r.complete);
  ASSERT_EQ(r.steps.size(), 5u);
  const std::vector<int> sizes{1, 2, 4, 8, 16};
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const CalibrationStep& s = r.steps[i];
    EXPECT_EQ(s.workers, sizes[i]);
    EXPECT_NEAR(s.measured_seconds, 4.0, 1e-6);
    EXPECT_NEAR(s.throughput, curve.at(s.workers), 0.01 * curve.at(s.workers)) << s.workers;
    EXPECT_NEAR(s.per_worker, s.throughput / s.workers, 1e-9);
    EXPECT_NEAR(s.efficiency, s.throughput / (s.workers * r.steps[0].throughput), 1e-9);
    EXPECT_TRUE(s.saturated);
    EXPECT_FALSE(s.starved);
    EXPECT_EQ(s.dry_samples, 0);
    EXPECT_EQ(s.min_lag, 5000);
    EXPECT_GE(s.samples, 8);  // 4 s read every 0.25 s at least (slice boundaries add reads)
    EXPECT_NEAR(s.fitted_throughput, s.throughput, 0.02 * s.throughput);
    if (i > 0) {
      EXPECT_GT(s.throughput, r.steps[i - 1].throughput);
    }
  }
  EXPECT_LT(r.steps[4].efficiency, 0.7);  // 16 workers: about 0.44 with these sigma and kappa

  ASSERT_TRUE(r.fit.valid);
  EXPECT_NEAR(r.fit.lambda, curve.lambda, 0.03 * curve.lambda);
  EXPECT_NEAR(r.fit.sigma, curve.sigma, 0.01);
  EXPECT_NEAR(r.fit.kappa, curve.kappa, 0.0003);
  EXPECT_EQ(r.fit.distinct_workers, 5);

  EXPECT_EQ(r.sustained_workers, 16);
  EXPECT_DOUBLE_EQ(r.sustained_rate, r.steps[4].throughput);
  EXPECT_DOUBLE_EQ(r.recommended_rate_limit, 0.75 * r.steps[4].throughput);
  // p99 / p50 = 3 at one worker: lognormal s = ln 3 / 2.326, cv = sqrt(exp(s^2) - 1) = 0.50.
  EXPECT_NEAR(r.service_cv_estimate, 0.50, 0.01);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();

  // Progress: one kStepDone per step, the overall fraction never goes back and ends at 1.
  int done = 0;
  double fraction = 0;
  for (const CalibrationProgress& p : progress) {
    EXPECT_GE(p.overall_fraction, fraction - 1e-12);
    fraction = p.overall_fraction;
    if (p.phase == CalibrationProgress::Phase::kStepDone) {
      EXPECT_EQ(p.workers, sizes[static_cast<std::size_t>(done)]);
      ++done;
    }
  }
  EXPECT_EQ(done, 5);
  EXPECT_EQ(done_rows, sizes);
  EXPECT_DOUBLE_EQ(fraction, 1.0);

  // Both outputs carry the rows and the rate limit.
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["steps"].size(), 5u);
  EXPECT_DOUBLE_EQ(j["recommended_rate_limit"].get<double>(), r.recommended_rate_limit);
  EXPECT_TRUE(j["fit"]["valid"].get<bool>());
  const std::string table = r.format_table();
  EXPECT_NE(table.find("recommended producer rate limit"), std::string::npos) << table;
  EXPECT_NE(table.find("USL fit: lambda"), std::string::npos) << table;
}

TEST(Calibrator, WaitsForTheConsumerBeforeTheFirstStep) {
  ManualClock clock;
  FakeConsumer consumer(clock, UslCurve{});
  consumer.ready_after_ = 3.0;  // like the mock's first group join
  CalibrationOptions o = fast_options();
  o.steps = {1, 2};
  Calibrator calibrator(o, consumer, clock, manual_sleeper(clock));
  const CalibrationResult r = calibrator.run();
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_NEAR(r.steps[0].throughput, 200, 2);  // not diluted by the wait
  EXPECT_GE(clock.now(), 3.0 + 2 * 5.0 - 1e-9);
}

TEST(Calibrator, ConsumerThatNeverJoinsIsAnError) {
  ManualClock clock;
  FakeConsumer consumer(clock, UslCurve{});
  consumer.ready_after_ = -1;
  CalibrationOptions o = fast_options();
  o.ready_timeout_seconds = 2;
  Calibrator calibrator(o, consumer, clock, manual_sleeper(clock));
  try {
    calibrator.run();
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no partitions"), std::string::npos) << e.what();
  }
}

TEST(Calibrator, FlagsAStepThatRanDryAndOneThatStarved) {
  ManualClock clock;
  FakeConsumer consumer(clock, UslCurve{});
  consumer.dry_at_ = 8;
  consumer.starved_at_ = 4;
  Calibrator calibrator(fast_options(), consumer, clock, manual_sleeper(clock));
  const CalibrationResult r = calibrator.run();
  ASSERT_EQ(r.steps.size(), 5u);
  EXPECT_FALSE(r.steps[3].saturated);
  EXPECT_EQ(r.steps[3].dry_samples, r.steps[3].samples);
  EXPECT_EQ(r.steps[3].min_lag, 0);
  EXPECT_TRUE(r.steps[2].starved);
  EXPECT_TRUE(r.steps[2].saturated);
  EXPECT_FALSE(r.steps[1].starved);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("4 workers: only 2.0 busy"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("8 workers: the topic ran dry"), std::string::npos) << r.warnings[1];
  EXPECT_NE(r.format_table().find("(ran dry)"), std::string::npos);
}

TEST(Calibrator, WarnsWhenMoreWorkersLowerThroughput) {
  ManualClock clock;
  FakeConsumer consumer(clock, UslCurve{200, 0.05, 0.02});  // N* = 6.9
  Calibrator calibrator(fast_options(), consumer, clock, manual_sleeper(clock));
  const CalibrationResult r = calibrator.run();
  ASSERT_TRUE(r.fit.valid);
  EXPECT_NEAR(r.fit.peak_workers(), std::sqrt(0.95 / 0.02), 0.5);
  // The rate limit is what the largest size sustains (pacing for the pool at max workers).
  EXPECT_DOUBLE_EQ(r.recommended_rate_limit, 0.75 * r.steps.back().throughput);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("peaked at 8 workers"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("guards.max_workers 8"), std::string::npos) << r.warnings[0];
}

TEST(Calibrator, InterruptionReturnsTheFinishedSteps) {
  ManualClock clock;
  FakeConsumer consumer(clock, UslCurve{});
  // Stop in the middle of the third step (steps of 5 s).
  Calibrator calibrator(fast_options(), consumer, clock, manual_sleeper(clock, 12.0));
  const CalibrationResult r = calibrator.run();
  EXPECT_FALSE(r.complete);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[1].workers, 2);
  EXPECT_NE(r.format_table().find("interrupted"), std::string::npos);
}

TEST(Calibrator, FewStepsFitLambdaOnlyAndSaySo) {
  ManualClock clock;
  FakeConsumer consumer(clock, UslCurve{300, 0, 0});
  CalibrationOptions o = fast_options();
  o.steps = {2, 4};
  Calibrator calibrator(o, consumer, clock, manual_sleeper(clock));
  const CalibrationResult r = calibrator.run();
  ASSERT_TRUE(r.fit.valid);
  EXPECT_NEAR(r.fit.lambda, 300, 3);
  EXPECT_NEAR(r.base_rate, r.fit.lambda, 1e-9);  // no 1-worker step: efficiency vs lambda
  EXPECT_NEAR(r.steps[1].efficiency, 1.0, 0.02);
  EXPECT_LT(r.service_cv_estimate, 0);  // needs a 1-worker step
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("only 2 worker count"), std::string::npos) << r.warnings[0];
}

// ---------------------------------------------------------------------------------------------
// Live: the embedded broker, a KafkaSource, a WorkerPool and a real handler. Only logical
// checks here (every step ran, the fit exists, nothing failed); the measured figures (lambda
// against the service time, scaling, contention) depend on the machine's load and are in
// bench/calibration_bench.cpp.

TEST(CalibratorLive, EveryStepRunsAndFitsOnARealConsumer) {
  SyntheticHandlerConfig hc;
  hc.service_mean_seconds = 0.005;
  hc.service_cv = 0.3;
  auto synthetic = std::make_shared<SyntheticHandler>(hc);
  CalibrationOptions options;
  options.steps = {1, 2, 4};
  options.dwell_seconds = 1.0;
  options.warmup_seconds = 0.3;
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"calib-linear", 4}}});
  LiveCalibrationSetup setup;
  setup.kafka.bootstrap_servers = broker.bootstrap_servers();
  setup.kafka.topics = {"calib-linear"};
  setup.kafka.group_id = "calibration-test";
  setup.kafka.properties = {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "300"}};
  setup.handler = [synthetic](const SourceMessage& m) { (*synthetic)(m); };
  setup.options = options;
  setup.sleep = [](double s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s));  // a live consumer: real time
    return false;
  };
  SteadyClock clock;
  const LiveCalibration run = calibrate_live(std::move(setup), clock);
  const CalibrationResult& r = run.result;
  SCOPED_TRACE(r.format_table());
  ASSERT_TRUE(r.complete);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_TRUE(r.fit.valid);
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    EXPECT_EQ(r.steps[i].workers, options.steps[i]);
    EXPECT_GT(r.steps[i].completed, 0u) << r.steps[i].workers;
    EXPECT_GT(r.steps[i].latency_p50, 0) << r.steps[i].workers;
  }
  EXPECT_EQ(run.produced.failed, 0u);
  EXPECT_GT(run.produced.delivered, r.steps[0].completed);
  EXPECT_EQ(run.partitions, 4);
}

}  // namespace
}  // namespace lagpilot
