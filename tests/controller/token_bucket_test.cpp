#include "controller/loadgen/token_bucket.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace lagpilot {
namespace {

TEST(TokenBucket, StartsFullAndSpendsExactlyBurst) {
  TokenBucket b(/*rate=*/100, /*burst=*/5, /*now=*/10.0);
  EXPECT_DOUBLE_EQ(b.available(10.0), 5.0);
  EXPECT_TRUE(b.try_take(5, 10.0));
  EXPECT_FALSE(b.try_take(1, 10.0));
  EXPECT_DOUBLE_EQ(b.available(10.0), 0.0);
}

TEST(TokenBucket, StartTokensAreHonouredAndCapped) {
  TokenBucket a(100, 5, 0.0, 1.0);
  EXPECT_DOUBLE_EQ(a.available(0.0), 1.0);
  TokenBucket b(100, 5, 0.0, 50.0);
  EXPECT_DOUBLE_EQ(b.available(0.0), 5.0);
}

TEST(TokenBucket, RefillsAtRateAndCapsAtBurst) {
  TokenBucket b(100, 1000, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(b.available(0.5), 50.0);
  EXPECT_EQ(b.available_whole(0.505), 50u);
  EXPECT_EQ(b.available_whole(0.51), 51u);
  EXPECT_EQ(b.available_whole(100.0), 1000u);  // capped
  EXPECT_EQ(b.available_whole(100.0, 7), 7u);  // capped by caller
}

TEST(TokenBucket, TimeGoingBackwardsAddsNothing) {
  TokenBucket b(100, 1000, 1.0, 0.0);
  EXPECT_DOUBLE_EQ(b.available(0.0), 0.0);
  EXPECT_NEAR(b.available(1.1), 10.0, 1e-9);
}

TEST(TokenBucket, SimulatedPacingLoopMatchesRateExactly) {
  // A paced loop like the producer's: every step of simulated time, take every whole token.
  // Step 1/1024 s and rate 100000/s give 97.65625 tokens a step, exact in binary, so the
  // count must be exact: 1 start token + rate * 10 s.
  const double rate = 100000.0;
  TokenBucket b(rate, rate * 0.01, 0.0, 1.0);
  uint64_t taken = 0;
  for (int step = 1; step <= 10 * 1024; ++step) {
    const double now = step / 1024.0;
    const uint64_t n = b.available_whole(now);
    ASSERT_TRUE(b.try_take(static_cast<double>(n), now));
    ASSERT_LE(n, 98u);  // never more than one step's worth (+ the carried fraction)
    taken += n;
  }
  EXPECT_EQ(taken, 1u + 1000000u);
}

TEST(TokenBucket, BurstLimitsWhatAnIdleGapCanRelease) {
  // After a 1 s stall, a 10 ms bucket releases only 10 ms worth: the rate is not caught up.
  TokenBucket b(1000, 10, 0.0, 0.0);
  EXPECT_EQ(b.available_whole(1.0), 10u);
  EXPECT_TRUE(b.try_take(10, 1.0));
  EXPECT_EQ(b.available_whole(1.004), 4u);
}

TEST(TokenBucket, SecondsUntil) {
  TokenBucket b(10, 5, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(b.seconds_until(1, 0.0), 0.1);
  EXPECT_DOUBLE_EQ(b.seconds_until(3, 0.1), 0.2);
  EXPECT_DOUBLE_EQ(b.seconds_until(1, 0.1), 0.0);
  EXPECT_TRUE(std::isinf(b.seconds_until(6, 0.1)));  // more than the bucket holds
  TokenBucket idle(0, 5, 0.0, 0.0);
  EXPECT_TRUE(std::isinf(idle.seconds_until(1, 0.0)));
}

TEST(TokenBucket, RateChangeSettlesAtOldRateFirst) {
  // 100/s for 1 s, then 300/s for 1 s: 100 + 300 tokens.
  TokenBucket b(100, 10000, 0.0, 0.0);
  b.set_rate(300, 1.0);
  EXPECT_DOUBLE_EQ(b.rate(), 300.0);
  EXPECT_DOUBLE_EQ(b.available(2.0), 400.0);
  // Rate 0 freezes the count.
  b.set_rate(0, 2.0);
  EXPECT_DOUBLE_EQ(b.available(50.0), 400.0);
}

TEST(TokenBucket, SetBurstKeepsEarnedTokensAndCapsAccrual) {
  TokenBucket b(100, 50, 0.0);
  b.set_burst(20, 0.0);
  EXPECT_DOUBLE_EQ(b.burst(), 20.0);
  EXPECT_DOUBLE_EQ(b.available(0.0), 50.0);  // earned before the change: kept
  EXPECT_DOUBLE_EQ(b.available(1.0), 50.0);  // but nothing accrues above the new size
  EXPECT_TRUE(b.try_take(45, 1.0));
  EXPECT_DOUBLE_EQ(b.available(2.0), 20.0);  // refills up to the new size only
  b.set_burst(100, 2.0);
  EXPECT_DOUBLE_EQ(b.available(2.5), 70.0);
}

TEST(TokenBucket, WholeTokensSurviveFloatingRounding) {
  // 0.1 s steps at 10/s: 1 token per step, even though 0.1 is not exact in binary.
  TokenBucket b(10, 100, 0.0, 0.0);
  uint64_t taken = 0;
  double now = 0.0;
  for (int i = 0; i < 30; ++i) {
    now += 0.1;
    const uint64_t n = b.available_whole(now);
    b.try_take(static_cast<double>(n), now);
    taken += n;
  }
  EXPECT_EQ(taken, 30u);
}

}  // namespace
}  // namespace lagpilot
