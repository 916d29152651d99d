#include "sim/worker_schedule.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace lagpilot::sim {
namespace {

std::vector<int> random_schedule(std::mt19937_64& rng, std::size_t ticks) {
  std::uniform_int_distribution<int> workers(4, 7);
  std::uniform_int_distribution<int> stay(0, 9);
  std::vector<int> out;
  int n = workers(rng);
  for (std::size_t k = 0; k < ticks; ++k) {
    if (stay(rng) == 0) n = workers(rng);
    out.push_back(n);
  }
  return out;
}

TEST(WorkerSchedule, KeepsOneRunPerChangeAndReadsBackEveryTick) {
  std::mt19937_64 rng(2);
  const std::vector<int> ticks = random_schedule(rng, 5000);
  const WorkerSchedule s = WorkerSchedule::from_vector(ticks);
  ASSERT_EQ(s.size(), 5000);
  std::size_t changes = 1;
  for (std::size_t k = 1; k < ticks.size(); ++k) changes += ticks[k] != ticks[k - 1] ? 1 : 0;
  EXPECT_EQ(s.runs().size(), changes);
  EXPECT_EQ(s.to_vector(), ticks);
  WorkerSchedule::Reader reader(s);
  std::size_t hint = 0;
  for (std::size_t k = 0; k < ticks.size(); ++k) {
    ASSERT_EQ(reader.next(), ticks[k]) << "Reader at tick " << k;
    ASSERT_EQ(s[static_cast<int64_t>(k)], ticks[k]) << "operator[] at tick " << k;
    ASSERT_EQ(s.at(static_cast<int64_t>(k), hint), ticks[k]) << "at() in order, tick " << k;
  }
  EXPECT_THROW(reader.next(), std::out_of_range);
}

TEST(WorkerSchedule, AHintFromAnyRunFindsAnyTick) {
  std::mt19937_64 rng(9);
  const std::vector<int> ticks = random_schedule(rng, 3000);
  const WorkerSchedule s = WorkerSchedule::from_vector(ticks);
  std::uniform_int_distribution<int64_t> tick(0, 2999);
  std::size_t hint = 0;
  for (int i = 0; i < 20000; ++i) {
    const int64_t k = tick(rng);
    ASSERT_EQ(s.at(k, hint), ticks[static_cast<std::size_t>(k)]) << "tick " << k;
    ASSERT_LE(s.runs()[hint].first, k);
  }
  hint = 12345;  // a stale hint past the end is reset, not read
  EXPECT_EQ(s.at(10, hint), ticks[10]);
}

TEST(WorkerSchedule, CountsTicksAndRefusesTicksOutsideIt) {
  WorkerSchedule s{4, 4, 6};
  s.append(6, 1000000);
  s.append(5, 0);  // nothing
  s.append(4, 2);
  EXPECT_EQ(s.size(), 1000005);
  ASSERT_EQ(s.runs().size(), 3u);
  EXPECT_EQ(s.length(0), 2u);
  EXPECT_EQ(s.length(1), 1000001u);
  EXPECT_EQ(s.length(2), 2u);
  EXPECT_EQ(s[1000002], 6);
  EXPECT_EQ(s[1000003], 4);
  EXPECT_THROW(s[-1], std::out_of_range);
  EXPECT_THROW(s[1000005], std::out_of_range);
  EXPECT_TRUE(WorkerSchedule{}.empty());
  EXPECT_EQ(WorkerSchedule::from_vector({4, 4, 6}), (WorkerSchedule{4, 4, 6}));
  EXPECT_FALSE(WorkerSchedule::from_vector({4, 6, 6}) == (WorkerSchedule{4, 4, 6}));
}

}  // namespace
}  // namespace lagpilot::sim
