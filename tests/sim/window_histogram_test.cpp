// WindowHistogram reports exactly what a LogHistogram fed the same values reports.

#include "sim/window_histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "policies/log_histogram.h"
#include "sim/random.h"

namespace lagpilot::sim {
namespace {

TEST(WindowHistogram, QuantilesEqualLogHistogramsOnRandomWindows) {
  Rng rng(7);
  WindowHistogram window;
  for (int round = 0; round < 3000; ++round) {
    LogHistogram reference;
    const int n = static_cast<int>(rng.uniform() * 70);  // below and above the sparse limit
    const bool weighted = rng.uniform() < 0.5;
    for (int i = 0; i < n; ++i) {
      double v = rng.exponential() * (rng.uniform() < 0.5 ? 1.0 : 1e-3);
      if (rng.uniform() < 0.05) v = 0.0;
      if (rng.uniform() < 0.05 && i > 0) v = 2.0;  // repeated values share a bucket
      if (rng.uniform() < 0.02) v = rng.uniform() < 0.5 ? -1.0 : 1e9;  // the end buckets
      // Weights as the model adds them: 1, or half a batch's message count.
      const double w = weighted ? 0.5 * std::floor(1 + rng.uniform() * 200) : 1.0;
      window.add(v, w);
      reference.add(v, w);
    }
    ASSERT_EQ(window.empty(), reference.empty());
    for (const double q : {0.99, 0.5, 0.9, 0.999, 1.0}) {
      ASSERT_EQ(window.quantile(q), reference.quantile(q))
          << "round " << round << " n " << n << " q " << q;
    }
    if (round % 7 == 0) {  // a low quantile walks from the bottom: the window switches over
      ASSERT_EQ(window.quantile(0.1), reference.quantile(0.1));
      ASSERT_EQ(window.quantile(0.99), reference.quantile(0.99));
    }
    window.clear();
  }
}

TEST(WindowHistogram, BucketMidpointsAreTheBucketsOwn) {
  using Buckets = LogHistogram::Buckets;
  for (int i = 0; i < Buckets::size(); ++i) {
    ASSERT_EQ(WindowHistogram::bucket_midpoint(i), Buckets::midpoint(i)) << "bucket " << i;
  }
}

TEST(WindowHistogram, BucketIndicesAreTheBucketsOwn) {
  using Buckets = LogHistogram::Buckets;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double low = std::ldexp(1.0, -24), high = std::ldexp(1.0, 24);
  std::vector<double> values = {0.0,     -0.0,
                                5e-324,  std::numeric_limits<double>::min(),
                                low,     std::nextafter(low, 0.0),
                                high,    std::nextafter(high, 0.0),
                                1e300,   kInf,
                                -kInf,   -1.0,
                                -1e-300, 1.0,
                                0.75};
  Rng rng(3);
  for (int i = 0; i < 100'000; ++i) {  // every exponent from 2^-40 to 2^40, both signs
    const double v = std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.uniform() * 80) - 40);
    values.push_back(rng.uniform() < 0.1 ? -v : v);
  }
  for (const double v : values) {
    ASSERT_EQ(WindowHistogram::bucket_index(v), Buckets::index(v)) << "value " << v;
  }
}

TEST(WindowHistogram, NanGoesToTheHistogramLikeAnyOtherValue) {
  WindowHistogram window;
  LogHistogram reference;
  for (const double v : {0.5, std::numeric_limits<double>::quiet_NaN(), 0.25, 4.0}) {
    window.add(v);
    reference.add(v);
  }
  EXPECT_EQ(window.quantile(0.5), reference.quantile(0.5));
  EXPECT_EQ(window.quantile(0.99), reference.quantile(0.99));
  window.clear();
  EXPECT_TRUE(window.empty());
  EXPECT_EQ(window.quantile(0.99), 0.0);
}

}  // namespace
}  // namespace lagpilot::sim
