#include "policies/log_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace lagpilot {
namespace {

// The worker pool's layout: 64 buckets per octave from 2^-20 s to 2^12 s.
using PoolBuckets = LogLinearBuckets<6, -20, 12>;

TEST(LogLinearBuckets, OutOfRangeValuesLandInTheFirstAndLastBucket) {
  EXPECT_EQ(PoolBuckets::size(), 32 * 64);
  EXPECT_EQ(PoolBuckets::index(0.0), 0);
  EXPECT_EQ(PoolBuckets::index(-1.0), 0);
  EXPECT_EQ(PoolBuckets::index(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(PoolBuckets::index(0x1.0p-20), 0);
  EXPECT_EQ(PoolBuckets::index(0x1.0p-20 * (1 + 1.0 / 64)), 1);
  EXPECT_EQ(PoolBuckets::index(0x1.0p12), PoolBuckets::size() - 1);
  EXPECT_EQ(PoolBuckets::index(std::numeric_limits<double>::infinity()), PoolBuckets::size() - 1);
}

TEST(LogLinearBuckets, EveryValueLiesInItsBucketWithinOneBucketHalfOfTheMidpoint) {
  for (double v = 1e-6; v < 4000; v *= 1.0137) {
    const int i = PoolBuckets::index(v);
    EXPECT_LE(PoolBuckets::lower_bound(i), v) << v;
    EXPECT_LT(v, PoolBuckets::upper_bound(i)) << v;
    EXPECT_LE(std::abs(PoolBuckets::midpoint(i) - v), v / 128) << v;
  }
  for (int i = 1; i < PoolBuckets::size(); ++i) {
    EXPECT_EQ(PoolBuckets::lower_bound(i), PoolBuckets::upper_bound(i - 1)) << i;
  }
}

TEST(LogLinearBuckets, QuantileIsTheNearestRankBucketsMidpoint) {
  std::vector<uint64_t> counts(PoolBuckets::size(), 0);
  EXPECT_EQ(PoolBuckets::quantile(counts, 0, 0.5), 0.0);
  counts[PoolBuckets::index(0.001)] = 99;
  counts[PoolBuckets::index(0.1)] = 1;
  const double low = PoolBuckets::midpoint(PoolBuckets::index(0.001));
  EXPECT_EQ(PoolBuckets::quantile(counts, 100, 0.50), low);
  EXPECT_EQ(PoolBuckets::quantile(counts, 100, 0.99), low);
  EXPECT_EQ(PoolBuckets::quantile(counts, 100, 1.00),
            PoolBuckets::midpoint(PoolBuckets::index(0.1)));
}

// A known sample with a body and a far tail: lognormal latencies (median 5 ms, sigma 0.7) and
// 3 % of slow ones between 30 and 300 ms.
std::vector<double> known_sample() {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> body(std::log(0.005), 0.7);
  std::uniform_real_distribution<double> tail(0.03, 0.3);
  std::bernoulli_distribution slow(0.03);
  std::vector<double> sample(200000);
  for (double& s : sample) s = slow(rng) ? tail(rng) : body(rng);
  return sample;
}

// The nearest-rank q-quantile of a sorted sample.
double exact_quantile(const std::vector<double>& sorted, double q) {
  return sorted[static_cast<std::size_t>(std::ceil(q * sorted.size())) - 1];
}

std::vector<double> sorted_copy(std::vector<double> sample) {
  std::sort(sample.begin(), sample.end());
  return sample;
}

TEST(LogLinearBuckets, PercentilesWithinTwoPercentOfTheExactQuantiles) {
  const std::vector<double> sample = known_sample();
  const std::vector<double> sorted = sorted_copy(sample);
  std::vector<uint64_t> counts(PoolBuckets::size(), 0);
  for (const double s : sample) ++counts[static_cast<std::size_t>(PoolBuckets::index(s))];
  for (const double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = exact_quantile(sorted, q);
    EXPECT_NEAR(PoolBuckets::quantile(counts, sample.size(), q) / exact, 1.0, 0.02) << q;
  }
}

TEST(LogHistogram, PercentilesWithinTwoPercentOfTheExactQuantiles) {
  const std::vector<double> sample = known_sample();
  const std::vector<double> sorted = sorted_copy(sample);
  LogHistogram h;
  for (const double s : sample) h.add(s);
  for (const double q : {0.01, 0.5, 0.9, 0.99, 0.999}) {
    const double exact = exact_quantile(sorted, q);
    EXPECT_NEAR(h.quantile(q) / exact, 1.0, 0.02) << q;
  }
  h.clear();
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.quantile(0.99), 0.0);
}

}  // namespace
}  // namespace lagpilot
