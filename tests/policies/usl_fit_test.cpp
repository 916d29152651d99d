// UslFit: recovers known USL parameters from noisy samples, keeps sigma and kappa >= 0, does
// not read a peak into noise, follows drift through forgetting (per worker count), keeps memory
// bounded, and refuses degenerate input (one worker count, zeros, NaN) without crashing.

#include "policies/usl_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace lagpilot {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

UslModel truth(double lambda, double sigma, double kappa) {
  UslModel m;
  m.valid = true;
  m.lambda = lambda;
  m.sigma = sigma;
  m.kappa = kappa;
  return m;
}

// `per_count` samples at each worker count, throughput times (1 + N(0, noise)).
std::vector<UslSample> noisy_samples(const UslModel& m, const std::vector<double>& counts,
                                     int per_count, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0.0, noise);
  std::vector<UslSample> out;
  for (int k = 0; k < per_count; ++k) {
    for (double n : counts) out.push_back({n, m.throughput(n) * (1.0 + gauss(rng)), 1.0});
  }
  return out;
}

void expect_within(double got, double want, double fraction, const char* what) {
  EXPECT_NEAR(got, want, fraction * std::fabs(want)) << what;
}

TEST(UslModel, CurveArithmetic) {
  const UslModel m = truth(100.0, 0.05, 0.002);
  EXPECT_DOUBLE_EQ(m.throughput(1.0), 100.0);
  EXPECT_DOUBLE_EQ(m.throughput(10.0), 1000.0 / (1.0 + 0.05 * 9 + 0.002 * 90));
  EXPECT_DOUBLE_EQ(m.peak_workers(), std::sqrt(0.95 / 0.002));
  EXPECT_DOUBLE_EQ(m.peak_throughput(), m.throughput(m.peak_workers()));
  // The peak is the maximum: the curve falls on both sides.
  EXPECT_GT(m.peak_throughput(), m.throughput(m.peak_workers() - 1.0));
  EXPECT_GT(m.peak_throughput(), m.throughput(m.peak_workers() + 1.0));
  EXPECT_DOUBLE_EQ(m.workers_for(50.0), 0.5);  // below one worker: linear
  for (double x : {100.0, 250.0, 500.0, 700.0}) {
    const double n = m.workers_for(x);
    ASSERT_TRUE(std::isfinite(n)) << x;
    EXPECT_NEAR(m.throughput(n), x, 1e-9 * x) << x;
    EXPECT_LE(n, m.peak_workers()) << "the rising side";
  }
  EXPECT_EQ(m.workers_for(m.peak_throughput() * 1.01), kInf);
  EXPECT_EQ(m.workers_for(0.0), 0.0);

  const UslModel linear = truth(100.0, 0.0, 0.0);
  EXPECT_EQ(linear.peak_workers(), kInf);
  EXPECT_EQ(linear.peak_throughput(), kInf);
  EXPECT_DOUBLE_EQ(linear.workers_for(1234.0), 12.34);
  const UslModel amdahl = truth(100.0, 0.1, 0.0);
  EXPECT_EQ(amdahl.peak_workers(), kInf);
  EXPECT_DOUBLE_EQ(amdahl.peak_throughput(), 1000.0);
  EXPECT_NEAR(amdahl.throughput(amdahl.workers_for(900.0)), 900.0, 1e-9);
  EXPECT_EQ(amdahl.workers_for(1000.0), kInf);
  EXPECT_EQ(truth(100.0, 1.0, 0.0).peak_workers(), 1.0);
  EXPECT_EQ(UslModel{}.throughput(4.0), 0.0);
  EXPECT_TRUE(UslModel{}.to_json()["peak_workers"].is_number());
  EXPECT_TRUE(linear.to_json()["peak_workers"].is_null());  // infinity
}

TEST(UslFit, ExactDataGiveExactParameters) {
  const UslModel m = truth(80.0, 0.03, 0.001);
  // Ten of each: one exact sample is only known to 3 % (the assumed noise floor), too little
  // to tell kappa = 0.001 from 0 over 1..16 workers.
  const UslModel fit = UslFit::fit(noisy_samples(m, {1, 2, 4, 8, 16}, 10, 0.0, 1));
  ASSERT_TRUE(fit.valid);
  EXPECT_NEAR(fit.lambda, 80.0, 1e-6);
  EXPECT_NEAR(fit.sigma, 0.03, 1e-8);
  EXPECT_NEAR(fit.kappa, 0.001, 1e-9);
  EXPECT_EQ(fit.parameters, 3);
  EXPECT_EQ(fit.distinct_workers, 5);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);
  // One sample each: the simpler curve (kappa = 0) is within the noise and is preferred.
  const UslModel thin = UslFit::fit(noisy_samples(m, {1, 2, 4, 8, 16}, 1, 0.0, 1));
  ASSERT_TRUE(thin.valid);
  EXPECT_EQ(thin.kappa, 0.0);
  EXPECT_LT(thin.rms_relative_error, 0.03);
  EXPECT_LT(fit.rms_relative_error, 1e-9);
}

TEST(UslFit, RecoversKnownParametersFromNoisySamplesWithinTenPercent) {
  const std::vector<std::pair<UslModel, std::vector<double>>> cases = {
      {truth(100.0, 0.05, 0.002), {1, 2, 3, 4, 6, 8, 12, 16, 20}},
      {truth(250.0, 0.02, 0.0005), {2, 4, 8, 12, 16, 24, 32}},
      {truth(40.0, 0.1, 0.01), {1, 2, 3, 4, 5, 6, 8, 10}},
  };
  uint32_t seed = 3;
  for (const auto& [m, counts] : cases) {
    SCOPED_TRACE(m.to_json().dump());
    // 30 samples per count at 3 % noise: about what 30 one-second ticks of a saturated
    // consumer give.
    const UslModel fit = UslFit::fit(noisy_samples(m, counts, 30, 0.03, seed++));
    ASSERT_TRUE(fit.valid);
    EXPECT_EQ(fit.parameters, 3);
    expect_within(fit.lambda, m.lambda, 0.10, "lambda");
    expect_within(fit.sigma, m.sigma, 0.10, "sigma");
    expect_within(fit.kappa, m.kappa, 0.10, "kappa");
    expect_within(fit.peak_workers(), m.peak_workers(), 0.10, "N*");
    EXPECT_GT(fit.r_squared, 0.95);
    EXPECT_LT(fit.rms_relative_error, 0.01);  // of the bin means
    EXPECT_EQ(fit.distinct_workers, static_cast<int>(counts.size()));
    EXPECT_DOUBLE_EQ(fit.samples, 30.0 * counts.size());
  }
}

TEST(UslFit, SigmaAndKappaStayNonNegative) {
  // Super-linear data (X/N rising) would want negative sigma and kappa.
  std::vector<UslSample> samples;
  for (double n : {1, 2, 4, 8, 16}) samples.push_back({n, 100.0 * std::pow(n, 1.1), 1.0});
  const UslModel fit = UslFit::fit(samples);
  ASSERT_TRUE(fit.valid);
  EXPECT_GE(fit.sigma, 0.0);
  EXPECT_GE(fit.kappa, 0.0);
  EXPECT_GT(fit.lambda, 0.0);
  // Only kappa would be negative here (sigma positive, kappa pulling down): the constrained
  // optimum has kappa exactly 0.
  samples.clear();
  for (double n : {1, 2, 4, 8, 16}) {
    samples.push_back({n, 100.0 * n / (1.0 + 0.1 * (n - 1.0) - 0.002 * n * (n - 1.0)), 1.0});
  }
  const UslModel fit2 = UslFit::fit(samples);
  ASSERT_TRUE(fit2.valid);
  EXPECT_EQ(fit2.kappa, 0.0);
  EXPECT_GT(fit2.sigma, 0.0);
  EXPECT_EQ(fit2.peak_workers(), kInf);
}

TEST(UslFit, DoesNotReadAPeakIntoNoise) {
  // Linear scaling measured with 5 % noise at a few counts: kappa must stay 0 (N* infinite)
  // or put N* far beyond the data, not inside the range where it would cap the pool.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const UslModel fit =
        UslFit::fit(noisy_samples(truth(100.0, 0.0, 0.0), {4, 6, 9}, 10, 0.05, seed));
    ASSERT_TRUE(fit.valid);
    EXPECT_GT(fit.peak_workers(), 30.0) << "seed " << seed << ": " << fit.to_json().dump();
    EXPECT_NEAR(fit.lambda, 100.0, 10.0) << "seed " << seed;
  }
}

TEST(UslFit, OnlineEqualsBatchWithoutForgetting) {
  const auto samples = noisy_samples(truth(100.0, 0.05, 0.002), {1, 3, 5, 9, 14}, 12, 0.02, 9);
  UslFit online;
  for (const UslSample& s : samples) ASSERT_TRUE(online.add(s));
  const UslModel a = online.model();
  const UslModel b = UslFit::fit(samples);
  EXPECT_NEAR(a.lambda, b.lambda, 1e-9 * b.lambda);
  EXPECT_NEAR(a.kappa, b.kappa, 1e-9 * b.kappa);
  // fit_points() on the bins gives the same fit too.
  const UslModel c = UslFit::fit_points(online.points());
  EXPECT_NEAR(c.lambda, b.lambda, 1e-9 * b.lambda);
  EXPECT_NEAR(c.sigma, b.sigma, 1e-9 * b.sigma);
}

TEST(UslFit, AggregatesPerWorkerCount) {
  UslFit fit;
  fit.add({3.9, 390.0, 1.0});
  fit.add({4.1, 410.0, 3.0});
  fit.add({7.0, 700.0, 1.0});
  const auto points = fit.points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[0].workers, (3.9 + 3 * 4.1) / 4);
  EXPECT_DOUBLE_EQ(points[0].throughput, (390.0 + 3 * 410.0) / 4);
  EXPECT_DOUBLE_EQ(points[0].weight, 4.0);
  // Weighted standard deviation of {390 (w 1), 410 (w 3)}: mean 405, variance 75.
  EXPECT_NEAR(points[0].relative_sd, std::sqrt(75.0) / 405.0, 1e-12);
  EXPECT_DOUBLE_EQ(points[1].workers, 7.0);
  EXPECT_EQ(fit.distinct_workers(), 2);
}

TEST(UslFit, MemoryIsBoundedByDistinctCounts) {
  UslFitOptions options;
  options.max_bins = 16;
  UslFit fit(options);
  const UslModel m = truth(100.0, 0.05, 0.002);
  for (int i = 0; i < 100000; ++i) {
    const double n = 1 + i % 40;
    fit.add({n, m.throughput(n), 1.0});
  }
  EXPECT_EQ(fit.distinct_workers(), 16);
  const UslModel got = fit.model();
  ASSERT_TRUE(got.valid);
  EXPECT_NEAR(got.kappa, 0.002, 1e-6);
}

TEST(UslFit, ForgettingFollowsDrift) {
  // The handler gets twice as slow and contention worse; the pool keeps cycling through the
  // same counts. With forgetting the fit moves to the new curve; without, it stays between.
  const UslModel before = truth(200.0, 0.02, 0.001);
  const UslModel after = truth(100.0, 0.06, 0.001);
  const std::vector<double> counts = {2, 4, 6, 8, 12, 16};
  UslFitOptions forgetful;
  forgetful.forgetting = 0.9;
  UslFit with(forgetful), without;
  for (const auto& s : noisy_samples(before, counts, 100, 0.02, 5)) {
    with.add(s);
    without.add(s);
  }
  EXPECT_NEAR(with.model().lambda, 200.0, 20.0);
  for (const auto& s : noisy_samples(after, counts, 100, 0.02, 6)) {
    with.add(s);
    without.add(s);
  }
  const UslModel followed = with.model();
  expect_within(followed.lambda, after.lambda, 0.10, "lambda after drift");
  for (double n : counts) expect_within(followed.throughput(n), after.throughput(n), 0.03, "X");
  // Without forgetting the old half of the data still pulls: lambda is well above 100.
  EXPECT_GT(without.model().lambda, 125.0);
}

TEST(UslFit, ForgettingIsPerWorkerCount) {
  // Samples that all come at one count (a pool held at its cap) refresh that count only; what
  // was learned at the others, the shape of the curve, stays.
  const UslModel m = truth(100.0, 0.1, 0.009);
  UslFitOptions forgetful;
  forgetful.forgetting = 0.9;
  UslFit fit(forgetful);
  for (const auto& s : noisy_samples(m, {1, 2, 4, 6, 8}, 5, 0.0, 1)) fit.add(s);
  for (int i = 0; i < 5000; ++i) fit.add({9.0, m.throughput(9.0), 1.0});
  const auto points = fit.points();
  ASSERT_EQ(points.size(), 6u);
  EXPECT_NEAR(points.front().weight, (1.0 - std::pow(0.9, 5)) / (1.0 - 0.9), 1e-9);
  EXPECT_NEAR(points.back().weight, 10.0, 1e-6);  // 1 / (1 - 0.9): the last ~10 samples
  EXPECT_NEAR(fit.model().peak_workers(), 10.0, 1e-6);
  // A new value at a count replaces the old one there at the forgetting rate.
  for (int i = 0; i < 100; ++i) fit.add({9.0, 300.0, 1.0});
  EXPECT_NEAR(fit.points().back().throughput, 300.0, 1e-2);
}

TEST(UslFit, DegenerateInputGivesNoFitAndNoCrash) {
  // One worker count, however many samples.
  EXPECT_FALSE(UslFit::fit(noisy_samples(truth(100, 0.05, 0.002), {4}, 50, 0.03, 1)).valid);
  // Two counts: fewer than the default three.
  const UslModel two = UslFit::fit(noisy_samples(truth(100, 0.05, 0.002), {4, 8}, 5, 0.03, 1));
  EXPECT_FALSE(two.valid);
  EXPECT_EQ(two.distinct_workers, 2);
  EXPECT_FALSE(UslFit::fit({}).valid);

  UslFit fit;
  for (const UslSample& bad : std::vector<UslSample>{{0.0, 100.0, 1.0},
                                                     {4.0, 0.0, 1.0},
                                                     {-2.0, 100.0, 1.0},
                                                     {4.0, -5.0, 1.0},
                                                     {kNaN, 100.0, 1.0},
                                                     {4.0, kNaN, 1.0},
                                                     {4.0, 100.0, kNaN},
                                                     {kInf, 100.0, 1.0},
                                                     {4.0, kInf, 1.0},
                                                     {4.0, 100.0, 0.0},
                                                     {1e300, 100.0, 1.0}}) {
    EXPECT_FALSE(fit.add(bad)) << bad.workers << " " << bad.throughput << " " << bad.weight;
  }
  EXPECT_EQ(fit.distinct_workers(), 0);
  EXPECT_FALSE(fit.model().valid);
  // Zeros and NaN among good samples are skipped by the batch fit.
  auto samples = noisy_samples(truth(100, 0.05, 0.002), {1, 4, 8, 16}, 3, 0.0, 1);
  samples.push_back({kNaN, kNaN, 1.0});
  samples.push_back({0.0, 0.0, 0.0});
  const UslModel ok = UslFit::fit(samples);
  ASSERT_TRUE(ok.valid);
  EXPECT_NEAR(ok.kappa, 0.002, 1e-9);
  // With min_distinct_workers = 1, one count gives lambda alone.
  UslFitOptions one;
  one.min_distinct_workers = 1;
  const UslModel single = UslFit::fit({{5.0, 500.0, 1.0}}, one);
  ASSERT_TRUE(single.valid);
  EXPECT_DOUBLE_EQ(single.lambda, 100.0);
  EXPECT_EQ(single.parameters, 1);
  // Data that fit nothing sensible (throughput falling like 1/N^2) still give a finite,
  // constrained fit.
  std::vector<UslSample> falling;
  for (double n : {1, 2, 4, 8}) falling.push_back({n, 1000.0 / (n * n), 1.0});
  const UslModel weird = UslFit::fit(falling);
  ASSERT_TRUE(weird.valid);
  EXPECT_TRUE(std::isfinite(weird.lambda) && std::isfinite(weird.sigma) &&
              std::isfinite(weird.kappa));
  EXPECT_GE(weird.sigma, 0.0);
  EXPECT_GE(weird.kappa, 0.0);
}

TEST(UslFit, OptionsAreValidated) {
  auto bad = [](auto change) {
    UslFitOptions o;
    change(o);
    EXPECT_THROW(UslFit{o}, std::invalid_argument);
    EXPECT_THROW(UslFit::fit({}, o), std::invalid_argument);
  };
  bad([](UslFitOptions& o) { o.forgetting = 0.0; });
  bad([](UslFitOptions& o) { o.forgetting = 1.5; });
  bad([](UslFitOptions& o) { o.forgetting = kNaN; });
  bad([](UslFitOptions& o) { o.min_distinct_workers = 0; });
  bad([](UslFitOptions& o) { o.noise_floor = 0.0; });
  bad([](UslFitOptions& o) { o.selection_penalty = -1.0; });
  bad([](UslFitOptions& o) { o.max_bins = 0; });
}

}  // namespace
}  // namespace lagpilot
