#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "policies/log_histogram.h"

namespace lagpilot {
namespace {

// The worker pool's layout: 8 buckets per octave from 1 us, 32 octaves.
constexpr LogBuckets kPool{1e-6, 8, 32};

TEST(LogBuckets, UnderflowBucketTakesSmallNegativeAndNaN) {
  EXPECT_EQ(kPool.size(), 258);
  EXPECT_EQ(kPool.index(0.0), 0);
  EXPECT_EQ(kPool.index(0.9e-6), 0);
  EXPECT_EQ(kPool.index(-1.0), 0);
  EXPECT_EQ(kPool.index(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(kPool.upper_bound(0), 1e-6);
  EXPECT_EQ(kPool.index(1e-6), 1);
}

TEST(LogBuckets, UpperBoundIsAtMostOneBucketAboveTheValue) {
  const double width = std::exp2(1.0 / 8);
  for (double v = 1e-6; v < 3600; v *= 1.37) {
    const double bound = kPool.upper_bound(kPool.index(v));
    EXPECT_GE(bound * (1 + 1e-12), v) << v;
    EXPECT_LE(bound, v * width * (1 + 1e-12)) << v;
  }
}

TEST(LogBuckets, OverflowBucketReportsItsLowerBound) {
  const double top = 1e-6 * std::exp2(32);
  EXPECT_EQ(kPool.index(top * 2), kPool.size() - 1);
  EXPECT_EQ(kPool.index(std::numeric_limits<double>::infinity()), kPool.size() - 1);
  EXPECT_DOUBLE_EQ(kPool.upper_bound(kPool.size() - 1), top);
}

TEST(LogBuckets, QuantileIsTheNearestRankBucketsUpperBound) {
  std::vector<uint64_t> counts(kPool.size(), 0);
  EXPECT_EQ(kPool.quantile_upper_bound(counts, 0, 0.5), 0.0);
  counts[kPool.index(0.001)] = 99;
  counts[kPool.index(0.1)] = 1;
  EXPECT_EQ(kPool.quantile_upper_bound(counts, 100, 0.50), kPool.upper_bound(kPool.index(0.001)));
  EXPECT_EQ(kPool.quantile_upper_bound(counts, 100, 0.99), kPool.upper_bound(kPool.index(0.001)));
  EXPECT_EQ(kPool.quantile_upper_bound(counts, 100, 1.00), kPool.upper_bound(kPool.index(0.1)));
}

}  // namespace
}  // namespace lagpilot
