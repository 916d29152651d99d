// ConsumerModel and ConsumerModelConfig on their own: config reading, resize semantics,
// conservation inside the model.

#include "sim/consumer_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "policies/config_reader.h"

namespace lagpilot::sim {
namespace {

TEST(ConsumerModelConfig, DefaultsAndRoundTrip) {
  const ConsumerModelConfig d = ConsumerModelConfig::from_json(nlohmann::json::object());
  EXPECT_DOUBLE_EQ(d.service_mean_seconds, 0.01);
  EXPECT_DOUBLE_EQ(d.service_cv, 1.0);
  EXPECT_EQ(d.service_distribution, "lognormal");
  EXPECT_DOUBLE_EQ(d.usl_sigma, 0.02);
  EXPECT_DOUBLE_EQ(d.usl_kappa, 0.0005);
  EXPECT_DOUBLE_EQ(d.downstream_capacity, 0.0);
  EXPECT_DOUBLE_EQ(d.warmup_seconds, 5.0);

  ConsumerModelConfig c;
  c.service_mean_seconds = 0.05;
  c.service_cv = 2.5;
  c.usl_sigma = 0.1;
  c.usl_kappa = 0.01;
  c.downstream_capacity = 300;
  c.warmup_seconds = 0;
  const ConsumerModelConfig back = ConsumerModelConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
}

TEST(ConsumerModelConfig, ErrorsNameThePath) {
  auto error_of = [](const nlohmann::json& j) -> std::string {
    try {
      ConsumerModelConfig::from_json(j, "sim.model");
    } catch (const ConfigError& e) {
      return e.path();
    }
    return "";
  };
  EXPECT_EQ(error_of({{"bogus", 1}}), "sim.model.bogus");
  EXPECT_EQ(error_of({{"service_mean_seconds", 0}}), "sim.model.service_mean_seconds");
  EXPECT_EQ(error_of({{"service_cv", -1}}), "sim.model.service_cv");
  EXPECT_EQ(error_of({{"service_distribution", "pareto"}}), "sim.model.service_distribution");
  EXPECT_EQ(error_of({{"usl_sigma", 2}}), "sim.model.usl_sigma");
  EXPECT_EQ(error_of({{"usl_kappa", -0.1}}), "sim.model.usl_kappa");
  EXPECT_EQ(error_of({{"downstream_capacity", -5}}), "sim.model.downstream_capacity");
  EXPECT_EQ(error_of({{"warmup_seconds", "soon"}}), "sim.model.warmup_seconds");
  EXPECT_EQ(error_of({{"service_distribution", "exponential"}, {"service_cv", 0.5}}),
            "sim.model.service_cv");
  EXPECT_EQ(error_of(nlohmann::json::array()), "sim.model");
}

TEST(ConsumerModelConfig, DistributionFixesTheCv) {
  auto e = ConsumerModelConfig::from_json({{"service_distribution", "exponential"}});
  EXPECT_DOUBLE_EQ(e.service_cv, 1.0);
  auto d = ConsumerModelConfig::from_json({{"service_distribution", "deterministic"}});
  EXPECT_DOUBLE_EQ(d.service_cv, 0.0);
  EXPECT_DOUBLE_EQ(d.service_quantile(0.99), 0.01);
  EXPECT_NEAR(e.service_quantile(0.5), 0.01 * std::log(2.0), 1e-12);
  ConsumerModelConfig l;  // lognormal mean 0.01, CV 1: median = mean / sqrt(1 + cv^2)
  EXPECT_NEAR(l.service_quantile(0.5), 0.01 / std::sqrt(2.0), 1e-9);
}

TEST(ConsumerModelConfig, StretchMatchesCapacity) {
  ConsumerModelConfig c;
  c.downstream_capacity = 700;
  for (int n = 1; n <= 64; ++n) {
    EXPECT_NEAR(n / (c.service_mean_seconds * c.stretch(n)), c.capacity(n), 1e-9 * c.capacity(n));
  }
}

ArrivalChunk one(double t) {
  return ArrivalChunk{t, t, 1};
}

// Runs the model's own events up to `until`.
void run_until(ConsumerModel& m, double until) {
  while (m.next_event_time() < until) m.run_next_event();
}

ConsumerModelConfig deterministic_config(double warmup) {
  ConsumerModelConfig c;
  c.service_distribution = "deterministic";
  c.service_cv = 0.0;
  c.service_mean_seconds = 1.0;
  c.usl_sigma = 0.0;
  c.usl_kappa = 0.0;
  c.warmup_seconds = warmup;
  return c;
}

TEST(ConsumerModel, ShrinkRetiresBusyWorkersAfterTheirMessage) {
  ConsumerModel m(deterministic_config(0.0), 4, 1, false);
  for (int i = 0; i < 6; ++i) m.arrive(0.0, one(0.0));  // 4 start, 2 queue
  EXPECT_EQ(m.sample(0.0).busy_now, 4);
  m.resize(0.5, 1);
  ModelSample s = m.sample(0.5);
  EXPECT_EQ(s.pool_size, 1);
  EXPECT_EQ(s.busy_now, 4);  // the retiring three finish what they hold
  EXPECT_EQ(s.queue_depth, 2);
  run_until(m, 1.5);
  s = m.sample(1.5);
  EXPECT_EQ(s.processed, 4);
  EXPECT_EQ(s.busy_now, 1);  // one worker left, serving the 5th message
  run_until(m, 10.0);
  EXPECT_EQ(m.sample(10.0).processed, 6);
  EXPECT_EQ(m.arrived(), m.completed() + m.in_system());
}

TEST(ConsumerModel, ShrinkRemovesWarmingThenIdleWorkers) {
  ConsumerModel m(deterministic_config(5.0), 2, 1, false);
  m.arrive(0.0, one(0.0));  // one busy, one idle
  m.resize(0.0, 5);         // three warming
  EXPECT_EQ(m.pool_size(), 5);
  m.resize(0.1, 2);  // removes the three warming ones
  ModelSample s = m.sample(0.1);
  EXPECT_EQ(s.pool_size, 2);
  EXPECT_EQ(s.productive_workers, 2);
  m.resize(0.2, 1);  // then the idle one
  s = m.sample(0.2);
  EXPECT_EQ(s.pool_size, 1);
  EXPECT_EQ(s.busy_now, 1);
  // The removed warming workers never become productive: arrivals queue behind the busy one.
  run_until(m, 0.9);
  for (int i = 0; i < 3; ++i) m.arrive(0.9, one(0.9));
  run_until(m, 6.0);
  EXPECT_EQ(m.sample(6.0).processed, 4);  // served one after another: 1, 2, 3, 4 s
}

TEST(ConsumerModel, GrowCancelsRetirementFirst) {
  ConsumerModel m(deterministic_config(5.0), 2, 1, false);
  m.arrive(0.0, one(0.0));
  m.arrive(0.0, one(0.0));
  m.resize(0.1, 0);  // both retire after their message
  EXPECT_EQ(m.pool_size(), 0);
  m.resize(0.2, 2);  // both stay, productive at once (no warm-up)
  EXPECT_EQ(m.pool_size(), 2);
  run_until(m, 1.5);
  m.arrive(1.5, one(1.5));
  EXPECT_EQ(m.sample(1.5).busy_now, 1);  // served at once: no warm-up happened
}

TEST(ConsumerModel, WarmingWorkersTakeQueuedWorkWhenReady) {
  ConsumerModel m(deterministic_config(5.0), 0, 1, false);
  for (int i = 0; i < 3; ++i) m.arrive(0.0, one(0.0));
  m.resize(0.0, 3);
  run_until(m, 4.9);
  EXPECT_EQ(m.sample(4.9).busy_now, 0);
  run_until(m, 5.5);
  EXPECT_EQ(m.sample(5.5).busy_now, 3);
  run_until(m, 7.0);
  EXPECT_EQ(m.sample(7.0).processed, 3);
  EXPECT_NEAR(m.total_wait_seconds(), 15.0, 1e-9);  // each waited 5 s
}

TEST(ConsumerModel, BatchProgressIsCountedInsideTheBatch) {
  // One worker, a batch of 100 one-second messages: half done after 50 s.
  ConsumerModel m(deterministic_config(0.0), 1, 1, true);
  m.arrive(0.0, ArrivalChunk{0.0, 0.0, 100});
  ModelSample s = m.sample(50.0);
  EXPECT_NEAR(double(s.processed), 50.0, 1.0);
  EXPECT_EQ(s.in_system, 100 - s.processed);
  EXPECT_NEAR(s.busy_mean, 1.0, 1e-9);
  run_until(m, 101.0);
  EXPECT_EQ(m.sample(101.0).processed, 100);
}

TEST(ConsumerModel, TricklingBatchCannotFinishBeforeItsLastArrival) {
  // 10 messages of 1 s arriving over [0, 100]: the worker is busy 10 % of the time.
  ConsumerModel m(deterministic_config(0.0), 1, 1, true);
  m.arrive(0.0, ArrivalChunk{0.0, 100.0, 10});
  EXPECT_NEAR(m.next_event_time(), 101.0, 1e-9);
  ModelSample s = m.sample(50.0);
  EXPECT_NEAR(double(s.processed), 4.0, 1.0);  // progress follows the arrivals
  EXPECT_NEAR(s.busy_mean, 0.1, 0.01);
}

TEST(ConsumerModel, BatchServiceSumHasTheRightMean) {
  ConsumerModelConfig c;  // lognormal mean 10 ms, CV 1
  c.usl_sigma = 0.0;
  c.usl_kappa = 0.0;
  ConsumerModel m(c, 1, 7, true);
  double t = 0.0;
  for (int i = 0; i < 2000; ++i) {
    m.arrive(t, ArrivalChunk{t, t, 50});
    t = m.next_event_time();
    m.run_next_event();
  }
  // 100 000 messages: the mean service time within 1 %.
  EXPECT_NEAR(m.total_service_seconds() / m.completed(), 0.01, 0.0001);
}

// Without the latencies (set_latency_wanted(false)) the model does exactly the same, sample by
// sample, and reports 0 for them; with them, a loaded window has latencies. Both fidelities, a
// random service time (batch: the Gamma draws by count, small and large batches).
TEST(ConsumerModel, LatenciesLeftOutChangeNothingElse) {
  for (const bool batch : {false, true}) {
    ConsumerModelConfig c;  // lognormal mean 10 ms, CV 1, USL on
    ConsumerModel with(c, 2, 7, batch);
    ConsumerModel without(c, 2, 7, batch);
    without.set_latency_wanted(false);
    bool saw_latency = false;
    for (int tick = 1; tick <= 400; ++tick) {
      const double t0 = tick - 1.0;
      const auto count = static_cast<int64_t>(batch ? 1 + (tick * 37) % 300 : 1);
      for (ConsumerModel* m : {&with, &without}) {
        run_until(*m, t0);
        m->arrive(t0, ArrivalChunk{t0, batch ? t0 + 0.5 : t0, count});
        if (tick % 50 == 0) m->resize(t0, 2 + tick % 7);
        run_until(*m, static_cast<double>(tick));
      }
      const ModelSample a = with.sample(tick);
      const ModelSample b = without.sample(tick);
      ASSERT_EQ(a.processed, b.processed) << tick;
      ASSERT_EQ(a.queue_depth, b.queue_depth) << tick;
      ASSERT_EQ(a.busy_mean, b.busy_mean) << tick;
      ASSERT_EQ(a.pool_size, b.pool_size) << tick;
      EXPECT_EQ(b.latency_p50, 0.0);
      EXPECT_EQ(b.latency_p99, 0.0);
      EXPECT_EQ(b.record_age_p99, 0.0);
      saw_latency = saw_latency || a.latency_p99 > 0.0;
    }
    EXPECT_TRUE(saw_latency);
    EXPECT_EQ(with.total_service_seconds(), without.total_service_seconds());
    EXPECT_EQ(with.total_wait_seconds(), without.total_wait_seconds());
  }
}

}  // namespace
}  // namespace lagpilot::sim
