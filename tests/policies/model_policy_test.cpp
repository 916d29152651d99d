// The `model` policy in closed loop with a fluid consumer whose capacity follows a known
// Universal Scalability Law curve: the fit recovers lambda, sigma and kappa within 10 % after a
// few scale steps; the policy never chooses more workers than the true peak N*; after a step in
// the arrival rate it reaches the right size within 3 decisions and overshoots it by at most one
// worker. Also: config validation, the fallback while too few worker counts are known, the DS2
// rate before any saturation, seeds, and what the reason says.

#include "policies/model_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "policies/config_reader.h"
#include "policies/policy_factory.h"
#include "tests/policies/fluid_plant.h"

namespace lagpilot {
namespace {

UslModel curve(double lambda, double sigma, double kappa) {
  UslModel m;
  m.valid = true;
  m.lambda = lambda;
  m.sigma = sigma;
  m.kappa = kappa;
  return m;
}

// A fluid consumer with a USL capacity curve: processed = min(X(workers), lag / dt + arrival).
// Saturated (a backlog left), all workers are busy and messages are queued. Otherwise the
// workers are busy at random, as under Poisson arrivals: a busy worker shares the consumer with
// the b others busy on average, so b busy workers process b X(c) / c with c = min(b + 1, pool)
// (the convention the policy assumes; the simulator tests check it against a real queue). The
// measured processed rate carries multiplicative Gaussian noise (seeded).
struct UslPlant {
  UslModel truth;
  double arrival = 0.0;
  double lag = 0.0;
  int workers = 1;
  double time = 0.0;
  double processed_rate = 0.0;  // true, over the last step
  double measured_rate = 0.0;   // what the observation reports
  double noise = 0.0;
  int min_workers = 1;
  int max_workers = 32;
  std::mt19937 rng{1};

  Observation observe() const {
    Observation o;
    o.time = time;
    o.total_lag = std::llround(lag);
    o.arrival_rate = arrival;
    o.processed_rate = measured_rate;
    o.current_workers = workers;
    o.busy_workers = busy();
    o.queue_depth = std::llround(lag);
    o.min_workers = min_workers;
    o.max_workers = max_workers;
    o.assigned_partitions = 32;
    return o;
  }

  // The mean busy count b that processes processed_rate: b X(c) / c = processed_rate.
  double busy() const {
    if (!(processed_rate > 0.0)) return 0.0;
    if (processed_rate >= truth.throughput(workers)) return workers;
    auto rate = [&](double b) {
      const double c = std::min(b + 1.0, static_cast<double>(workers));
      return b * truth.throughput(c) / c;
    };
    double lo = 0.0, hi = workers;
    for (int i = 0; i < 60; ++i) {
      const double mid = (lo + hi) / 2;
      (rate(mid) < processed_rate ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
  }

  void step(double dt) {
    processed_rate = std::min(truth.throughput(workers), lag / dt + arrival);
    lag = std::max(0.0, lag + (arrival - processed_rate) * dt);
    measured_rate = processed_rate * (1.0 + std::normal_distribution<double>(0.0, noise)(rng));
    time += dt;
  }
};

// Runs `ticks` decisions; the pool takes each proposal at once. Returns the proposals.
std::vector<int> run(ModelPolicy& policy, UslPlant& plant, int ticks) {
  std::vector<int> proposals;
  for (int i = 0; i < ticks; ++i) {
    const Proposal p = policy.decide(plant.observe());
    proposals.push_back(p.workers);
    plant.workers = p.workers;
    plant.step(1.0);
  }
  return proposals;
}

// The right size for an arrival rate: the smallest pool whose true throughput covers it at the
// target utilization.
int right_size(const UslModel& truth, double arrival, double utilization = 0.7) {
  for (int n = 1; n <= 1000; ++n) {
    if (truth.throughput(n) * utilization >= arrival) return n;
  }
  return -1;
}

ConfigError config_error(const nlohmann::json& params) {
  try {
    make_policy("model", params);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << params.dump();
  return ConfigError("", "");
}

TEST(ModelParams, DefaultsAndRoundTrip) {
  const nlohmann::json d = default_params("model");
  EXPECT_EQ(d["target_utilization"], 0.7);
  EXPECT_EQ(d["catch_up_seconds"], 60.0);
  EXPECT_EQ(d["min_distinct_workers"], 3);
  EXPECT_TRUE(d["fit"].is_null());
  EXPECT_EQ(make_policy("model", d)->params(), d);
  const nlohmann::json seeded = {{"fit", {{"lambda", 120.0}, {"sigma", 0.03}, {"kappa", 0.001}}}};
  auto policy = make_policy("model", seeded);
  EXPECT_EQ(policy->params()["fit"], seeded["fit"]);
  EXPECT_EQ(make_policy("model", policy->params())->params(), policy->params());
  // sigma and kappa default to 0 in a seed.
  EXPECT_EQ(make_policy("model", {{"fit", {{"lambda", 50}}}})->params()["fit"]["kappa"], 0.0);
}

TEST(ModelParams, BadValuesNameTheField) {
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"target_utilization", 0},
      {"target_utilization", 1.5},
      {"scale_down_utilization", 0.7},
      {"scale_down_utilization", -0.1},
      {"catch_up_seconds", 0},
      {"catch_up_seconds", "60"},
      {"min_busy_fraction", 0},
      {"min_busy_fraction", 1.1},
      {"forgetting", 0},
      {"forgetting", 1.01},
      {"min_distinct_workers", 0},
      {"min_distinct_workers", 2.5},
      {"max_extrapolation", 0.9},
      {"peak_fraction", 0},
      {"peak_fraction", 1.2},
      {"bogus", 1},
  };
  for (const auto& [key, value] : bad) {
    const ConfigError e = config_error({{key, value}});
    EXPECT_EQ(e.path(), "policy.params." + key) << key << "=" << value.dump() << ": " << e.what();
  }
  EXPECT_STREQ(config_error({{"catch_up_seconds", 0}}).what(),
               "policy.params.catch_up_seconds: must be > 0, got 0");
  EXPECT_EQ(config_error({{"target_utilization", 0.5}}).path(),
            "policy.params.scale_down_utilization");  // 0.55 is no longer below it
  EXPECT_EQ(config_error({{"fit", {{"sigma", 0.1}}}}).path(), "policy.params.fit.lambda");
  EXPECT_EQ(config_error({{"fit", {{"lambda", -1}}}}).path(), "policy.params.fit.lambda");
  EXPECT_EQ(config_error({{"fit", {{"lambda", 0}}}}).path(), "policy.params.fit.lambda");
  EXPECT_EQ(config_error({{"fit", {{"lambda", 10}, {"sigma", 2}}}}).path(),
            "policy.params.fit.sigma");
  EXPECT_EQ(config_error({{"fit", {{"lambda", 10}, {"kapa", 0.1}}}}).path(),
            "policy.params.fit.kapa");
  EXPECT_EQ(config_error({{"fit", 3}}).path(), "policy.params.fit");
  EXPECT_NO_THROW(parse_policy_spec("model:catch_up_seconds=30,target_utilization=0.8"));
}

TEST(ModelPolicy, FitRecoversTheCurveAfterAFewScaleSteps) {
  // Arrivals rise in steps, each with a burst of backlog: the pool is saturated for a while and
  // steps up through several sizes, and those ticks are what it learns most from.
  for (const UslModel& truth :
       {curve(100.0, 0.05, 0.002), curve(100.0, 0.03, 0.0008), curve(300.0, 0.1, 0.005)}) {
    SCOPED_TRACE(truth.to_json().dump());
    ModelPolicy policy;
    UslPlant plant;
    plant.truth = truth;
    plant.noise = 0.02;
    plant.workers = 1;
    int scale_steps = 0;
    int last = plant.workers;
    for (double fraction : {0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95}) {
      // Each step comes with a backlog (a burst), which saturates the pool for a while.
      plant.arrival = fraction * truth.peak_throughput();
      plant.lag += 30.0 * plant.arrival;
      for (int w : run(policy, plant, 120)) {
        if (w != last) ++scale_steps;
        last = w;
      }
    }
    const UslModel& fit = policy.fitted();
    ASSERT_TRUE(fit.valid);
    EXPECT_EQ(policy.state()["mode"], "fit");
    EXPECT_NEAR(fit.lambda, truth.lambda, 0.10 * truth.lambda);
    EXPECT_NEAR(fit.sigma, truth.sigma, 0.10 * truth.sigma);
    EXPECT_NEAR(fit.kappa, truth.kappa, 0.10 * truth.kappa);
    EXPECT_LE(scale_steps, 25) << "a few scale steps, not a hunt";
  }
}

TEST(ModelPolicy, NeverChoosesMoreThanThePeak) {
  // Hopeless overload (3x the peak throughput): every extra worker past N* only lowers
  // throughput, so the policy must stop at or below N*, however large the lag grows.
  for (const UslModel& truth :
       {curve(100.0, 0.1, 0.009), curve(100.0, 0.05, 0.002), curve(50.0, 0.2, 0.02)}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(truth.to_json().dump() + " seed " + std::to_string(seed));
      ModelPolicy policy;
      UslPlant plant;
      plant.truth = truth;
      plant.noise = 0.02;
      plant.rng.seed(seed);
      plant.arrival = 3.0 * truth.peak_throughput();
      const std::vector<int> proposals = run(policy, plant, 900);
      const int most = *std::max_element(proposals.begin(), proposals.end());
      EXPECT_LE(most, truth.peak_workers());
      // And it does use the peak: at least 90 % of the peak throughput (peak_fraction is 0.85,
      // and the curve is flat there).
      EXPECT_GE(truth.throughput(proposals.back()), 0.9 * truth.peak_throughput())
          << proposals.back() << " workers";
      EXPECT_EQ(policy.state()["mode"], "fit");
    }
  }
}

TEST(ModelPolicy, StepInArrivalsReachesTheRightSizeWithinThreeDecisions) {
  const UslModel truth = curve(100.0, 0.03, 0.0008);  // N* = 34.8, peak ~1180/s
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ModelPolicy policy;
    UslPlant plant;
    plant.truth = truth;
    plant.noise = 0.02;
    plant.rng.seed(seed);
    // Learn: bursts of backlog at a few loads make the pool step up through the sizes it will
    // need (the curve is not trusted far beyond what was measured).
    plant.workers = 2;
    for (double load : {150.0, 450.0, 700.0}) {
      plant.arrival = load;
      plant.lag = 30000.0;
      run(policy, plant, 300);
    }
    ASSERT_EQ(policy.state()["mode"], "fit");
    ASSERT_EQ(plant.lag, 0.0);
    for (double to : {300.0, 800.0, 600.0, 250.0, 750.0}) {
      const int right = right_size(truth, to);
      const int before = plant.workers;
      plant.arrival = to;
      const std::vector<int> after = run(policy, plant, 300);
      // Reached: enough workers for the new rate, and at most one more than that.
      const auto reached = std::find_if(after.begin(), after.end(),
                                        [&](int w) { return w >= right && w <= right + 1; });
      ASSERT_NE(reached, after.end()) << before << " -> " << right << " never reached";
      // Decisions are counted from the first tick that sees the new rate.
      EXPECT_LE(reached - after.begin() + 1, 3) << before << " -> " << right;
      if (right > before) {
        const int most = *std::max_element(after.begin(), after.end());
        EXPECT_LE(most, right + 1) << before << " -> " << right << ": overshoot";
      } else {
        const int least = *std::min_element(after.begin(), after.end());
        EXPECT_GE(least, right) << before << " -> " << right << ": undershoot";
      }
      EXPECT_GE(after.back(), right) << "settles at the right size";
      EXPECT_LE(after.back(), right + 1) << "settles at the right size";
    }
  }
}

// The sizes a correct policy may rest on under a constant load: from the right size up to the
// largest pool that would still run at scale_down_utilization or more (the hold band), both on
// the true curve. Beyond the peak's reach, the sizes just below N*.
std::pair<int, int> rest_band(const UslModel& truth, double arrival) {
  const int right = right_size(truth, arrival);
  if (right < 0 || right > 0.9 * truth.peak_workers()) {
    return {static_cast<int>(0.8 * truth.peak_workers()), static_cast<int>(truth.peak_workers())};
  }
  int top = right;
  while (top + 1 <= truth.peak_workers() && arrival / truth.throughput(top + 1) >= 0.55) ++top;
  return {right, top};
}

TEST(ModelPolicy, HoldsStillUnderConstantLoad) {
  // Integer pools under loads between levels, with measurement noise: after settling, no
  // direction reversal (the band between scale_down_utilization and target_utilization), and
  // a size in the band, the backlog drained.
  for (double arrival : {300.0, 550.0, 800.0, 950.0}) {
    for (double backlog : {0.0, 20000.0}) {
      SCOPED_TRACE("arrival " + std::to_string(arrival) + " backlog " + std::to_string(backlog));
      ModelPolicy policy;
      UslPlant plant;
      plant.truth = curve(100.0, 0.03, 0.0008);
      plant.noise = 0.03;
      plant.arrival = arrival;
      plant.lag = backlog;
      plant.workers = 4;
      const std::vector<int> proposals = run(policy, plant, 3600);
      EXPECT_EQ(testing::direction_reversals(proposals, 900), 0);
      // Within the band, give or take the error of the fit (a few per cent of throughput where
      // it extrapolates): never running the consumer above 80 % of what it can do.
      const auto [low, high] = rest_band(plant.truth, arrival);
      EXPECT_GE(plant.truth.throughput(proposals.back()) * 0.8,
                std::min(arrival, 0.8 * plant.truth.throughput(low)))
          << proposals.back() << " workers";
      EXPECT_LE(proposals.back(), high);
      EXPECT_LE(proposals.back(), plant.truth.peak_workers());
      EXPECT_EQ(plant.lag, 0.0);
    }
  }
  // The linear fluid plant of the conformance suite, at loads needing 8 and 12 workers.
  for (double arrival : {800.0, 1200.0}) {
    ModelPolicy policy;
    testing::FluidPlant plant;
    plant.arrival = arrival;
    plant.lag = 20000;
    const testing::ClosedLoopRun r = testing::run_closed_loop(policy, plant, 3600);
    EXPECT_EQ(testing::direction_reversals(r.proposals, 1800), 0) << arrival;
    const int right = std::min(16, static_cast<int>(std::ceil(arrival / 70.0)));
    EXPECT_GE(r.proposals.back(), right) << arrival;
    EXPECT_LE(r.proposals.back(), std::min(16, static_cast<int>(arrival / 55.0))) << arrival;
  }
}

TEST(ModelPolicy, ExploresInBoundedStepsFromWhatItMeasured) {
  ModelPolicy policy;
  UslPlant plant;
  plant.truth = curve(100.0, 0.0, 0.0);
  plant.arrival = 5000.0;  // needs 72 workers at 70 %: far beyond anything measured
  plant.workers = 4;
  plant.max_workers = 64;
  plant.step(1.0);  // a first measured tick, saturated at 4
  std::vector<int> sizes = {plant.workers};
  std::vector<int> ticks_at = {1};
  std::vector<std::string> modes;
  for (int i = 0; i < 30; ++i) {
    const Proposal p = policy.decide(plant.observe());
    if (i < 6) modes.push_back(policy.state()["mode"]);
    if (i == 0) {
      EXPECT_EQ(p.reason.rfind("fallback (1 of 3 worker counts measured): ", 0), 0u) << p.reason;
      EXPECT_NE(p.reason.find("hold 4 (measuring 4 before going further)"), std::string::npos)
          << p.reason;
    }
    if (p.workers != sizes.back()) {
      EXPECT_NE(p.reason.find("(explore: at most "), std::string::npos) << p.reason;
      // Never more than 1.5x the largest pool measured, and only after three ticks there.
      EXPECT_LE(p.workers, std::ceil(1.5 * sizes.back()));
      EXPECT_GE(ticks_at.back(), 3);
      sizes.push_back(p.workers);
      ticks_at.push_back(0);
    }
    ++ticks_at.back();
    plant.workers = p.workers;
    plant.step(1.0);
  }
  EXPECT_EQ(sizes, (std::vector<int>{4, 6, 9, 14, 21, 32, 48, 64}));
  // Fewer than three counts measured: the fallback; then the fit.
  EXPECT_EQ(modes, (std::vector<std::string>{"fallback", "fallback", "fallback", "fallback",
                                             "fallback", "fallback"}));
  EXPECT_EQ(policy.state()["mode"], "fit");
}

TEST(ModelPolicy, FallbackStopsWhereThroughputFell) {
  // Two counts measured, the larger one clearly slower: past the peak, so the fallback does not
  // go up, and comes back down to the better count.
  ModelPolicy policy;
  Observation o;
  o.min_workers = 1;
  o.max_workers = 64;
  o.total_lag = 100000;
  o.queue_depth = 1000;
  o.arrival_rate = 5000;
  Proposal p;
  auto tick = [&](int workers, double rate) {
    o.time += 1;
    o.current_workers = workers;
    o.busy_workers = workers;
    o.processed_rate = rate;
    p = policy.decide(o);
  };
  for (int i = 0; i < 4; ++i) tick(8, 800);
  EXPECT_EQ(p.workers, 12);  // explore: 1.5 x 8
  for (int i = 0; i < 4; ++i) tick(12, i % 2 ? 690 : 710);
  EXPECT_EQ(policy.state()["mode"], "fallback");
  EXPECT_EQ(p.workers, 8);
  EXPECT_NE(p.reason.find("throughput fell past 8 workers"), std::string::npos) << p.reason;
}

TEST(ModelPolicy, MeasuresTheTrueRateWithoutSaturation) {
  // Sixteen workers, a light load: never saturated, yet processed / busy says what a worker
  // does (DS2), and the pool shrinks to what the load needs.
  ModelPolicy policy;
  testing::FluidPlant plant;
  plant.arrival = 300;
  plant.workers = 16;
  plant.min_workers = 1;
  const testing::ClosedLoopRun r = testing::run_closed_loop(policy, plant, 60);
  EXPECT_EQ(policy.state()["mode"], "fallback");  // one concurrency measured: 3 busy workers
  EXPECT_NEAR(policy.fitted().lambda, 100.0, 1e-9);
  EXPECT_EQ(r.proposals.back(), 5);  // 300 / (100 x 0.7) = 4.3
  EXPECT_EQ(testing::direction_reversals(r.proposals), 0);
  // The very first tick has measured nothing: it holds the pool.
  ModelPolicy fresh;
  Observation o;
  o.current_workers = 7;
  o.min_workers = 1;
  o.max_workers = 16;
  o.total_lag = 5000;
  const Proposal p = fresh.decide(o);
  EXPECT_EQ(p.workers, 7);
  EXPECT_EQ(p.reason, "no rate measured yet: hold 7");
}

TEST(ModelPolicy, LearnsFromTicksWithBusyWorkers) {
  ModelPolicy policy;
  Observation o;
  o.min_workers = 1;
  o.max_workers = 32;
  o.current_workers = 10;
  o.processed_rate = 800;
  o.total_lag = 5000;
  auto learned = [&] { return policy.state()["learned_ticks"].get<int>(); };
  o.time = 1;
  o.busy_workers = 0.5;  // below min_busy_workers
  policy.decide(o);
  EXPECT_EQ(learned(), 0);
  o.time = 2;
  o.busy_workers = 8;  // two workers idle (or warming up): a point at 8, not at 10
  policy.decide(o);
  EXPECT_EQ(learned(), 1);
  EXPECT_DOUBLE_EQ(policy.fitted().lambda, 100.0);
  policy.decide(o);  // the same time again teaches nothing
  EXPECT_EQ(learned(), 1);
  o.time = 1.5;  // nor an earlier one
  policy.decide(o);
  EXPECT_EQ(learned(), 1);
  o.time = 3;
  o.processed_rate = std::numeric_limits<double>::quiet_NaN();
  policy.decide(o);
  EXPECT_EQ(learned(), 1);
  o.time = 4;
  o.processed_rate = 0.0;
  policy.decide(o);
  EXPECT_EQ(learned(), 1);
}

TEST(ModelPolicy, SeedStartsFromAKnownCurve) {
  const UslModel truth = curve(100.0, 0.03, 0.0008);
  ModelParams params;
  params.fit = UslSeed{truth.lambda, truth.sigma, truth.kappa};
  ModelPolicy policy(params);
  UslPlant plant;
  plant.truth = truth;
  plant.workers = 4;
  plant.arrival = 700.0;
  const std::vector<int> proposals = run(policy, plant, 5);
  EXPECT_EQ(proposals.front(), right_size(truth, 700.0)) << "sized on the first tick";
  EXPECT_EQ(policy.state()["mode"], "fit");
}

TEST(ModelPolicy, ReasonSaysWhatItDid) {
  ModelPolicy policy;
  UslPlant plant;
  plant.truth = curve(100.0, 0.03, 0.0008);
  plant.workers = 2;
  plant.arrival = 150.0;
  plant.lag = 20000.0;
  run(policy, plant, 600);
  plant.arrival = 600.0;
  plant.lag = 5000.0;
  const Observation obs = plant.observe();
  const Proposal p = policy.decide(obs);
  const nlohmann::json st = policy.state();
  EXPECT_EQ(p.reason.rfind("fit lambda=", 0), 0u) << p.reason;
  for (const char* part : {" sigma=", " kappa=", " R2=",
                           " workers for 600/s + lag 5000 in 60 s at 70%: scale up to "}) {
    EXPECT_NE(p.reason.find(part), std::string::npos) << part << " in " << p.reason;
  }
  // "need N.N workers" with the needed count from state().
  char need[64];
  std::snprintf(need, sizeof need, "need %.1f workers", st["needed_workers"].get<double>());
  EXPECT_NE(p.reason.find(need), std::string::npos) << need << " in " << p.reason;
  EXPECT_NE(p.reason.find("scale up to " + std::to_string(p.workers)), std::string::npos)
      << p.reason;
  // params() now carries the fitted curve, and a policy built from it starts fitted.
  const nlohmann::json params = policy.params();
  EXPECT_NEAR(params["fit"]["lambda"].get<double>(), 100.0, 10.0);
  auto restarted = make_policy("model", params);
  restarted->decide(obs);
  EXPECT_EQ(restarted->state()["mode"], "fit");
}

}  // namespace
}  // namespace lagpilot
