// LagQuantile gives the nearest-rank quantile that sorting every sample gives.

#include "sim/lag_quantile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/random.h"

namespace lagpilot::sim {
namespace {

int64_t sorted_quantile(std::vector<int64_t> v, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank), v.end());
  return v[rank];
}

TEST(LagQuantile, EqualsTheSortedSamplesOnRandomStreams) {
  Rng rng(3);
  for (int round = 0; round < 200; ++round) {
    const auto n = static_cast<int64_t>(1 + rng.uniform() * 3000);
    // Mostly small lags, sometimes a backlog far above the counted range.
    const double big = rng.uniform() < 0.5 ? 0.0 : rng.uniform();
    std::vector<int64_t> samples;
    for (int64_t i = 0; i < n; ++i) {
      const bool large = rng.uniform() < big;
      samples.push_back(large ? static_cast<int64_t>(rng.uniform() * 5e6)
                              : static_cast<int64_t>(rng.exponential() * 50));
    }
    for (const double q : {0.99, 0.5, 1.0, 0.001}) {
      LagQuantile quantile(q, n);
      for (const int64_t s : samples) quantile.add(s);
      ASSERT_EQ(quantile.value(), sorted_quantile(samples, q)) << "round " << round << " q " << q;
    }
  }
}

TEST(LagQuantile, EveryAnnouncedSampleMustBeAdded) {
  LagQuantile quantile(0.99, 3);
  quantile.add(1);
  EXPECT_THROW(quantile.value(), std::logic_error);
  EXPECT_THROW(LagQuantile(0.99, 0), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot::sim
