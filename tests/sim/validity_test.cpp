// Validity of the consumer model against queueing theory and its own definitions: Erlang C for
// M/M/c, the USL capacity curve at saturation, the warm-up delay, batch vs message fidelity.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "sim/consumer_model.h"
#include "sim/simulation.h"
#include "sim/trace.h"
#include "tests/sim/sim_test_util.h"

namespace lagpilot::sim {
namespace {

using testing::burst_trace;
using testing::constant_trace;
using testing::fixed_policy;
using testing::open_guards;
using testing::ScriptedPolicy;

// Mean waiting time in queue of M/M/c (Erlang C formula).
double erlang_c_wait(double lambda, double mu, int c) {
  const double a = lambda / mu;  // offered load, in servers
  const double rho = a / c;
  double sum = 0.0;
  double term = 1.0;  // a^k / k!
  for (int k = 0; k < c; ++k) {
    sum += term;
    term *= a / (k + 1);
  }
  const double tail = term / (1.0 - rho);  // a^c / c! / (1 - rho)
  const double p_wait = tail / (sum + tail);
  return p_wait / (c * mu - lambda);
}

SimConfig plain_config(const std::string& fidelity) {
  SimConfig config;
  config.fidelity = fidelity;
  config.model.warmup_seconds = 0.0;
  return config;
}

TEST(MMcValidity, MeanWaitMatchesErlangC) {
  const int c = 4;
  const double mu = 100.0;             // 1 / 0.01 s
  const double lambda = 0.8 * c * mu;  // rho = 0.8
  const double expected = erlang_c_wait(lambda, mu, c);
  ASSERT_NEAR(expected, 0.0074547, 1e-6);  // the formula itself, checked by hand

  SimConfig config = plain_config("message");
  config.seed = 11;
  config.initial_workers = c;
  config.model.service_distribution = "exponential";
  config.model.service_cv = 1.0;
  config.model.service_mean_seconds = 1.0 / mu;
  config.model.usl_sigma = 0.0;
  config.model.usl_kappa = 0.0;
  // 3.2 M messages: the relative standard error of the mean wait is about 1 % at rho = 0.8.
  const Trace trace = constant_trace(lambda, 10000.0, 100.0);
  const RunResult r = simulate(trace, fixed_policy(c), "mmc", open_guards(), config);
  EXPECT_EQ(r.fidelity, "message");
  EXPECT_EQ(r.kpis.max_workers, c);
  EXPECT_EQ(r.kpis.scale_actions, 0);
  EXPECT_NEAR(r.kpis.mean_service_seconds, 1.0 / mu, 0.01 / mu);
  EXPECT_NEAR(r.kpis.mean_wait_seconds, expected, 0.05 * expected)
      << "simulated " << r.kpis.mean_wait_seconds << " s, Erlang C " << expected << " s";
  // Little's law on the queue + service: mean lag ~= lambda * (Wq + S).
  const double mean_lag = r.kpis.lag_integral / r.kpis.duration_seconds;
  EXPECT_NEAR(mean_lag, lambda * (expected + 1.0 / mu), 0.06 * lambda * (expected + 1.0 / mu));
}

TEST(MMcValidity, LightLoadHasAlmostNoWait) {
  SimConfig config = plain_config("message");
  config.model.service_distribution = "deterministic";
  config.model.service_cv = 0.0;
  config.model.usl_sigma = 0.0;
  config.model.usl_kappa = 0.0;
  // 8 workers, 10 % busy: M/D/8 waits are tiny.
  const RunResult r =
      simulate(constant_trace(80.0, 500.0), fixed_policy(8), "light", open_guards(), config);
  EXPECT_LT(r.kpis.mean_wait_seconds, 0.001);
  EXPECT_NEAR(r.kpis.mean_service_seconds, 0.01, 1e-12);
}

// Throughput with a permanent backlog (arrivals at twice the capacity), measured from the
// processed count, against ConsumerModelConfig::capacity.
double saturated_throughput(const ConsumerModelConfig& model, int workers,
                            const std::string& fidelity) {
  SimConfig config = plain_config(fidelity);
  config.model = model;
  config.initial_workers = workers;
  const double capacity = model.capacity(workers);
  const double seconds = std::max(50.0, 150000.0 / capacity);  // ~150 k messages
  const RunResult r = simulate(constant_trace(2.0 * capacity, seconds), fixed_policy(workers),
                               "usl", open_guards(), config);
  return static_cast<double>(r.kpis.processed) / r.kpis.duration_seconds;
}

TEST(UslValidity, CapacityFormula) {
  ConsumerModelConfig m;  // 10 ms, sigma 0.02, kappa 0.0005
  EXPECT_DOUBLE_EQ(m.capacity(1), 100.0);
  EXPECT_NEAR(m.capacity(16), 16.0 / (0.01 * (1 + 0.02 * 15 + 0.0005 * 16 * 15)), 1e-9);
  EXPECT_EQ(m.capacity(0), 0.0);
  // Retrograde past the peak at N* = sqrt((1 - sigma) / kappa) = 44.
  EXPECT_GT(m.capacity(44), m.capacity(30));
  EXPECT_GT(m.capacity(44), m.capacity(64));
  m.downstream_capacity = 500.0;
  EXPECT_DOUBLE_EQ(m.capacity(16), 500.0);
  EXPECT_DOUBLE_EQ(m.capacity(2), 2.0 / (0.01 * 1.021));
}

TEST(UslValidity, SaturatedThroughputFollowsTheCurve) {
  ConsumerModelConfig model;  // lognormal, CV 1
  for (const std::string fidelity : {"message", "batch"}) {
    for (int n : {1, 4, 16, 40}) {
      const double measured = saturated_throughput(model, n, fidelity);
      EXPECT_NEAR(measured, model.capacity(n), 0.03 * model.capacity(n))
          << fidelity << ", " << n << " workers";
    }
  }
}

TEST(UslValidity, DownstreamCapacityCapsThroughput) {
  ConsumerModelConfig model;
  model.downstream_capacity = 600.0;
  for (const std::string fidelity : {"message", "batch"}) {
    EXPECT_NEAR(saturated_throughput(model, 16, fidelity), 600.0, 18.0) << fidelity;
    // Below the cap the USL still rules.
    EXPECT_NEAR(saturated_throughput(model, 4, fidelity), model.capacity(4),
                0.03 * model.capacity(4))
        << fidelity;
  }
}

TEST(Warmup, NewWorkersAddNoThroughputBeforeWarmup) {
  for (const std::string fidelity : {"message", "batch"}) {
    SimConfig config = plain_config(fidelity);
    config.model.service_mean_seconds = 0.002;  // many messages per tick: low noise
    config.model.warmup_seconds = 5.0;
    config.initial_workers = 2;
    config.record_series = true;
    const double c2 = config.model.capacity(2);
    const double c8 = config.model.capacity(8);
    // Scale 2 -> 8 at the tick t = 20 under a permanent backlog.
    auto policy = std::make_unique<ScriptedPolicy>(
        [](const Observation& obs) { return obs.time >= 20.0 ? 8 : 2; });
    const RunResult r = simulate(constant_trace(2.0 * c8, 40.0), std::move(policy), "warmup",
                                 open_guards(), config);
    ASSERT_EQ(r.series.size(), 40u);
    auto mean_rate = [&](int from_t, int to_t) {  // ticks ending in (from_t, to_t]
      double sum = 0.0;
      for (const SeriesPoint& p : r.series) {
        if (p.t > from_t && p.t <= to_t) sum += p.processed_rate;
      }
      return sum / (to_t - from_t);
    };
    EXPECT_NEAR(mean_rate(2, 20), c2, 0.04 * c2) << fidelity;
    // Added at t = 20, productive from t = 25: nothing changes until then...
    EXPECT_NEAR(mean_rate(20, 25), c2, 0.04 * c2) << fidelity;
    // ...then all eight work (the tick ending at 26 holds the first batches' completions).
    EXPECT_NEAR(mean_rate(27, 40), c8, 0.04 * c8) << fidelity;
    EXPECT_EQ(r.series[25].workers, 8);  // the pool counts warming workers
    EXPECT_EQ(r.kpis.scale_actions, 1);
  }
}

TEST(Warmup, ZeroWarmupIsImmediate) {
  SimConfig config = plain_config("message");
  config.model.service_mean_seconds = 0.002;
  config.initial_workers = 2;
  config.record_series = true;
  const double c8 = config.model.capacity(8);
  auto policy = std::make_unique<ScriptedPolicy>(
      [](const Observation& obs) { return obs.time >= 20.0 ? 8 : 2; });
  const RunResult r =
      simulate(constant_trace(2.0 * c8, 30.0), std::move(policy), "warmup0", open_guards(), config);
  double sum = 0.0;
  for (int i = 20; i < 30; ++i) sum += r.series[i].processed_rate;
  EXPECT_NEAR(sum / 10.0, c8, 0.04 * c8);
}

// The two fidelities on a trace with a burst that builds a backlog, under a lag-driven policy.
TEST(Fidelity, MessageAndBatchAgreeOnKpis) {
  const Trace trace = burst_trace(300.0, 1500.0, 300.0, 120.0);
  auto run = [&](const std::string& fidelity) {
    SimConfig config = plain_config(fidelity);
    config.model.warmup_seconds = 5.0;
    auto policy = std::make_unique<ScriptedPolicy>([](const Observation& obs) {
      return obs.total_lag > 5000 ? 16 : obs.total_lag < 500 ? 4 : obs.current_workers;
    });
    GuardConfig guards = open_guards();
    guards.scale_down_window_seconds = 30.0;
    return simulate(trace, std::move(policy), fidelity, guards, config);
  };
  const RunResult m = run("message");
  const RunResult b = run("batch");
  EXPECT_EQ(m.fidelity, "message");
  EXPECT_EQ(b.fidelity, "batch");
  EXPECT_EQ(m.kpis.arrived, b.kpis.arrived);  // same arrival counts in every tick
  EXPECT_NEAR(b.kpis.lag_integral, m.kpis.lag_integral, 0.04 * m.kpis.lag_integral);
  EXPECT_NEAR(b.kpis.worker_seconds, m.kpis.worker_seconds, 0.03 * m.kpis.worker_seconds);
  EXPECT_NEAR(double(b.kpis.processed), double(m.kpis.processed), 0.01 * m.kpis.processed);
  EXPECT_NEAR(double(b.kpis.max_lag), double(m.kpis.max_lag), 0.04 * m.kpis.max_lag);
  EXPECT_NEAR(b.kpis.seconds_above_slo, m.kpis.seconds_above_slo, 0.05 * m.kpis.seconds_above_slo);
  EXPECT_GT(m.kpis.max_lag, 20000);  // the burst did build a backlog
}

TEST(Fidelity, SmallBatchesConvergeToMessageFidelity) {
  // 16 workers at 90 % of their capacity: many small batches per tick, each trickling in. A
  // batch must not hold a worker for longer than its messages need, or capacity collapses.
  SimConfig config = plain_config("message");
  config.initial_workers = 16;
  const Trace trace = constant_trace(0.9 * config.model.capacity(16), 300.0);
  const RunResult m = simulate(trace, fixed_policy(16), "message", open_guards(), config);
  config.fidelity = "batch";
  config.batch_size = 10;
  const RunResult b = simulate(trace, fixed_policy(16), "batch", open_guards(), config);
  EXPECT_EQ(m.kpis.arrived, b.kpis.arrived);
  const double m_mean = m.kpis.lag_integral / m.kpis.duration_seconds;
  const double b_mean = b.kpis.lag_integral / b.kpis.duration_seconds;
  EXPECT_LT(m_mean, 50.0);
  // Batches add up to about a batch of lag at this load; a collapse would add thousands.
  EXPECT_GE(b_mean, 0.8 * m_mean);
  EXPECT_LT(b_mean, m_mean + 2.0 * config.batch_size);
  EXPECT_NEAR(double(b.kpis.processed), double(m.kpis.processed), 0.002 * m.kpis.processed);
}

TEST(Fidelity, BatchTracksLightLoadClosely) {
  // No backlog at all: lag is what is in service. Batches that trickle in keep it small.
  const Trace trace = constant_trace(150.0, 600.0);
  auto run = [&](const std::string& fidelity) {
    return simulate(trace, fixed_policy(4), fidelity, open_guards(), plain_config(fidelity));
  };
  const RunResult m = run("message");
  const RunResult b = run("batch");
  const double m_mean = m.kpis.lag_integral / m.kpis.duration_seconds;
  const double b_mean = b.kpis.lag_integral / b.kpis.duration_seconds;
  EXPECT_LT(m_mean, 5.0);
  EXPECT_LT(b_mean, 10.0);  // a whole tick of arrivals would be 150
}

}  // namespace
}  // namespace lagpilot::sim
