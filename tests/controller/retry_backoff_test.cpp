// Exponential backoff with full jitter, driven by a seeded generator.
#include "controller/sinks/retry_backoff.h"

#include <gtest/gtest.h>

#include <random>

namespace lagpilot {
namespace {

TEST(RetryBackoff, WindowDoublesUpToTheCap) {
  const RetryBackoff b(0.1, 30);
  EXPECT_DOUBLE_EQ(b.window(1), 0.1);
  EXPECT_DOUBLE_EQ(b.window(2), 0.2);
  EXPECT_DOUBLE_EQ(b.window(4), 0.8);
  EXPECT_DOUBLE_EQ(b.window(9), 25.6);
  EXPECT_DOUBLE_EQ(b.window(10), 30);
  EXPECT_DOUBLE_EQ(b.window(1000), 30);  // no overflow
}

TEST(RetryBackoff, FullJitterSpreadsOverTheWholeWindow) {
  const RetryBackoff b(1, 30);
  std::mt19937_64 rng(7);
  double lo = 1e9, hi = 0, sum = 0;
  constexpr int kDraws = 10000;
  for (int i = 0; i < kDraws; ++i) {
    const double d = b.delay(3, rng);  // window 4 s
    ASSERT_GE(d, 0);
    ASSERT_LE(d, 4);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    sum += d;
  }
  EXPECT_LT(lo, 0.05);
  EXPECT_GT(hi, 3.95);
  EXPECT_NEAR(sum / kDraws, 2.0, 0.1);  // uniform on [0, 4]
}

TEST(RetryBackoff, TheSinksOwnWaitWinsButIsCapped) {
  const RetryBackoff b(0.1, 30);
  std::mt19937_64 rng(1);
  EXPECT_EQ(b.delay(1, rng, 5), 5);
  EXPECT_EQ(b.delay(1, rng, 0), 0);
  EXPECT_EQ(b.delay(1, rng, 3600), 30);
}

}  // namespace
}  // namespace lagpilot
