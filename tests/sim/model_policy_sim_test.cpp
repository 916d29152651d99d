// The `model` policy against the discrete-event simulator: a consumer with known USL
// parameters (service times drawn at random, Poisson arrivals, warm-up delays), observed the
// way the controller observes it. The fit recovers lambda, sigma and kappa within 10 % after a
// few bursts; under overload the pool never grows past the peak N*; under a constant load the
// pool holds still.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "policies/model_policy.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace lagpilot::sim {
namespace {

// simulate() owns the policy it runs; this hands it a view of one the test keeps, so the fit
// can be inspected after the run.
class SharedPolicy : public Policy {
 public:
  explicit SharedPolicy(std::shared_ptr<ModelPolicy> policy) : policy_(std::move(policy)) {}
  std::string name() const override { return policy_->name(); }
  Proposal decide(const Observation& obs) override { return policy_->decide(obs); }
  nlohmann::json params() const override { return policy_->params(); }
  nlohmann::json state() const override { return policy_->state(); }

 private:
  std::shared_ptr<ModelPolicy> policy_;
};

// Consecutive segments of (seconds, messages/s), in 1 s bins.
Trace segments(const std::vector<std::pair<int, double>>& parts) {
  Trace t;
  t.source = "segments";
  t.bin_seconds = 1.0;
  for (const auto& [seconds, rate] : parts) t.rates.insert(t.rates.end(), seconds, rate);
  return t;
}

SimConfig consumer(double sigma, double kappa, uint64_t seed) {
  SimConfig config;
  config.fidelity = "message";
  config.seed = seed;
  config.initial_workers = 2;
  config.model.service_mean_seconds = 0.01;  // lambda = 100 messages/s
  config.model.service_distribution = "exponential";
  config.model.service_cv = 1.0;
  config.model.usl_sigma = sigma;
  config.model.usl_kappa = kappa;
  config.model.warmup_seconds = 2.0;
  return config;
}

GuardConfig wide_bounds() {
  GuardConfig g;
  g.min_workers = 1;
  g.max_workers = 48;
  g.hard_max_workers = 64;
  return g;
}

UslModel truth(const SimConfig& config) {
  UslModel m;
  m.valid = true;
  m.lambda = 1.0 / config.model.service_mean_seconds;
  m.sigma = config.model.usl_sigma;
  m.kappa = config.model.usl_kappa;
  return m;
}

TEST(ModelPolicySim, FitRecoversTheConsumerCurveAfterAFewBursts) {
  // Quiet stretches and bursts of several sizes: each burst saturates the pool and makes it
  // step up through several sizes. Ticks of 2 s (a scrape interval): a tick's throughput then
  // carries about 3 % of Poisson noise at these rates.
  const Trace trace = segments({{120, 150},
                                {60, 900},
                                {180, 300},
                                {60, 600},
                                {180, 200},
                                {60, 1000},
                                {180, 450},
                                {60, 800},
                                {240, 300}});
  double sigma_sum = 0.0, kappa_sum = 0.0;
  const std::vector<uint64_t> seeds = {1, 2, 3, 4};
  for (uint64_t seed : seeds) {
    SimConfig config = consumer(0.05, 0.002, seed);
    config.tick_seconds = 2.0;
    auto policy = std::make_shared<ModelPolicy>();
    const RunResult r =
        simulate(trace, std::make_unique<SharedPolicy>(policy), "model", wide_bounds(), config);
    const UslModel want = truth(config);
    const UslModel& got = policy->fitted();
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + got.to_json().dump());
    ASSERT_TRUE(got.valid);
    EXPECT_EQ(policy->state()["mode"], "fit");
    EXPECT_NEAR(got.lambda, want.lambda, 0.10 * want.lambda);
    EXPECT_NEAR(got.peak_workers(), want.peak_workers(), 0.10 * want.peak_workers());
    // The curve itself, from one worker to past the peak, within 3 %.
    for (double n = 1; n <= 1.2 * want.peak_workers(); n += 1) {
      EXPECT_NEAR(got.throughput(n), want.throughput(n), 0.03 * want.throughput(n)) << n;
    }
    // Sigma and kappa trade off against each other along the curve: one run's noise moves
    // them by about 10 % in opposite directions; their mean over the runs is checked below.
    EXPECT_NEAR(got.sigma, want.sigma, 0.15 * want.sigma);
    EXPECT_NEAR(got.kappa, want.kappa, 0.15 * want.kappa);
    sigma_sum += got.sigma;
    kappa_sum += got.kappa;
    EXPECT_LE(r.kpis.max_workers, want.peak_workers());
    EXPECT_EQ(r.kpis.arrived, r.kpis.processed + r.kpis.final_lag);
  }
  EXPECT_NEAR(sigma_sum / seeds.size(), 0.05, 0.005);
  EXPECT_NEAR(kappa_sum / seeds.size(), 0.002, 0.0002);
}

TEST(ModelPolicySim, NeverGrowsPastThePeakUnderOverload) {
  // Three times the peak throughput for ten minutes: the lag grows without bound, and a
  // policy that chased it would add workers past N* and lose throughput.
  // (A flatter peak, such as sigma 0.1 and kappa 0.009 with N* = 10, is harder: throughput at
  // 9, 10 and 11 workers differs by less than the noise of a few ticks, and the pool can then
  // end up one worker past N*, at a cost of well under 1 % of throughput.)
  for (const auto& [sigma, kappa] : {std::pair{0.05, 0.002}, std::pair{0.02, 0.004}}) {
    const SimConfig config = consumer(sigma, kappa, 3);
    const UslModel want = truth(config);
    const Trace trace = segments({{600, 3.0 * want.peak_throughput()}});
    auto policy = std::make_shared<ModelPolicy>();
    const RunResult r =
        simulate(trace, std::make_unique<SharedPolicy>(policy), "model", wide_bounds(), config);
    SCOPED_TRACE(want.to_json().dump() + " -> " + policy->fitted().to_json().dump());
    EXPECT_LE(r.kpis.max_workers, want.peak_workers());
    // It does use the peak: over the ten minutes, warm-ups and the first scale steps
    // included, at least 85 % of the peak rate.
    const double processed_rate = static_cast<double>(r.kpis.processed) / trace.duration();
    EXPECT_GE(processed_rate, 0.85 * want.peak_throughput());
  }
}

TEST(ModelPolicySim, HoldsStillUnderAConstantLoad) {
  // Poisson arrivals and random service times: the measured rates are noisy at every tick.
  // After the first minutes the pool must not flap.
  SimConfig config = consumer(0.02, 0.0005, 5);  // the simulator's default curve
  config.initial_workers = 4;
  config.record_series = true;
  const Trace trace = segments({{1800, 700}});
  GuardConfig guards;  // the defaults: 4..16, scale-down stabilization 60 s
  auto policy = std::make_shared<ModelPolicy>();
  const RunResult r =
      simulate(trace, std::make_unique<SharedPolicy>(policy), "model", guards, config);
  int changes_after_warmup = 0;
  for (std::size_t i = 1; i < r.series.size(); ++i) {
    if (r.series[i].t > 300 && r.series[i].workers != r.series[i - 1].workers) {
      ++changes_after_warmup;
    }
  }
  EXPECT_LE(changes_after_warmup, 2) << policy->state().dump();
  EXPECT_LE(r.kpis.reversals, 2);
  // 700/s at 70 % needs X(N) >= 1000/s: 14 workers on this curve (one fewer allowed for the
  // error of the fit); the hold band reaches past the bound of 16.
  const UslModel want = truth(config);
  int right = 1;
  while (want.throughput(right) * 0.7 < 700.0) ++right;
  ASSERT_EQ(right, 14);
  const int final_workers = r.series.back().workers;
  EXPECT_GE(final_workers, right - 1);
  EXPECT_LE(final_workers, 16);
  EXPECT_LT(r.kpis.max_lag, 5000);
}

}  // namespace
}  // namespace lagpilot::sim
