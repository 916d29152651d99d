#include "controller/kafka/offset_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace lagpilot {
namespace {

TEST(PartitionOffsetTracker, UnknownUntilStartOrDispatch) {
  PartitionOffsetTracker t;
  EXPECT_EQ(t.committable(), PartitionOffsetTracker::kUnknown);
  EXPECT_EQ(t.next_offset(), PartitionOffsetTracker::kUnknown);
  EXPECT_TRUE(t.dispatch(7));
  EXPECT_EQ(t.committable(), 7);
  EXPECT_TRUE(t.complete(7));
  EXPECT_EQ(t.committable(), 8);
}

TEST(PartitionOffsetTracker, StartOffsetIsCommittableWhenIdle) {
  PartitionOffsetTracker t(100);
  EXPECT_EQ(t.committable(), 100);
  EXPECT_EQ(t.unfinished(), 0u);
}

TEST(PartitionOffsetTracker, OutOfOrderCompletionCommitsOnlyTheContiguousPrefix) {
  PartitionOffsetTracker t(100);
  for (int64_t o = 100; o < 105; ++o) ASSERT_TRUE(t.dispatch(o));
  EXPECT_EQ(t.committable(), 100);
  EXPECT_TRUE(t.complete(101));  // 100 still running: committing 102 would skip it
  EXPECT_TRUE(t.complete(103));
  EXPECT_EQ(t.committable(), 100);
  EXPECT_EQ(t.unfinished(), 3u);
  EXPECT_TRUE(t.complete(100));
  EXPECT_EQ(t.committable(), 102);
  EXPECT_TRUE(t.complete(104));
  EXPECT_EQ(t.committable(), 102);
  EXPECT_TRUE(t.complete(102));
  EXPECT_EQ(t.committable(), 105);
  EXPECT_EQ(t.tracked(), 0u);
}

TEST(PartitionOffsetTracker, GapsAreNotWaitedFor) {
  // Offsets 11..14 never arrive (compaction, transaction markers).
  PartitionOffsetTracker t(10);
  ASSERT_TRUE(t.dispatch(10));
  ASSERT_TRUE(t.dispatch(15));
  ASSERT_TRUE(t.dispatch(17));
  EXPECT_TRUE(t.complete(10));
  EXPECT_EQ(t.committable(), 15);
  EXPECT_TRUE(t.complete(17));
  EXPECT_EQ(t.committable(), 15);
  EXPECT_TRUE(t.complete(15));
  EXPECT_EQ(t.committable(), 18);
}

TEST(PartitionOffsetTracker, RejectsRedeliveryDoubleCompletionAndUnknownOffsets) {
  PartitionOffsetTracker t(5);
  EXPECT_FALSE(t.dispatch(4));  // below the start: already committed past
  ASSERT_TRUE(t.dispatch(5));
  EXPECT_FALSE(t.dispatch(5));  // re-delivery
  EXPECT_FALSE(t.complete(6));  // never dispatched
  EXPECT_TRUE(t.complete(5));
  EXPECT_FALSE(t.complete(5));  // twice
  EXPECT_FALSE(t.dispatch(-3));
  EXPECT_EQ(t.committable(), 6);
}

TEST(PartitionOffsetTracker, SkipToMovesAnIdlePositionButStillWaitsForUnfinished) {
  PartitionOffsetTracker t(0);
  t.skip_to(50);  // e.g. reset to the log start after retention
  EXPECT_EQ(t.committable(), 50);
  t.skip_to(40);  // never backwards
  EXPECT_EQ(t.committable(), 50);
  ASSERT_TRUE(t.dispatch(50));
  t.skip_to(60);
  EXPECT_EQ(t.committable(), 50);  // 50 still unfinished
  EXPECT_FALSE(t.dispatch(55));    // below the skip position
  EXPECT_TRUE(t.complete(50));
  EXPECT_EQ(t.committable(), 60);
}

TEST(PartitionOffsetTracker, ResetForgetsEverything) {
  PartitionOffsetTracker t(0);
  ASSERT_TRUE(t.dispatch(0));
  ASSERT_TRUE(t.dispatch(1));
  t.reset(PartitionOffsetTracker::kUnknown);
  EXPECT_EQ(t.committable(), PartitionOffsetTracker::kUnknown);
  EXPECT_EQ(t.unfinished(), 0u);
  EXPECT_FALSE(t.complete(0));
}

// Brute-force model: the set of dispatched offsets with done flags, and a position.
struct ModelTracker {
  std::map<int64_t, bool> dispatched;  // offset -> done
  int64_t next = PartitionOffsetTracker::kUnknown;

  bool dispatch(int64_t o) {
    if (next != PartitionOffsetTracker::kUnknown && o < next) return false;
    dispatched[o] = false;
    next = o + 1;
    return true;
  }
  bool complete(int64_t o) {
    auto it = dispatched.find(o);
    if (it == dispatched.end() || it->second) return false;
    it->second = true;
    return true;
  }
  void skip_to(int64_t o) {
    if (next == PartitionOffsetTracker::kUnknown || o > next) next = o;
  }
  int64_t committable() const {
    // Lowest unfinished dispatched offset, else the position.
    for (const auto& [o, done] : dispatched)
      if (!done) return o;
    return next;
  }
  std::size_t unfinished() const {
    return static_cast<std::size_t>(std::count_if(dispatched.begin(), dispatched.end(),
                                                  [](const auto& e) { return !e.second; }));
  }
};

TEST(PartitionOffsetTracker, RandomizedOutOfOrderCompletionMatchesBruteForceModel) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    const bool known_start = seed % 2 == 0;
    const int64_t start = known_start ? static_cast<int64_t>(rng() % 1000) : -1;
    PartitionOffsetTracker t(start);
    ModelTracker m;
    m.next = start;
    std::vector<int64_t> in_flight;  // dispatched, not completed (completion order is random)
    int64_t cursor = known_start ? start : static_cast<int64_t>(rng() % 1000);

    for (int step = 0; step < 4000; ++step) {
      const uint64_t action = rng() % 100;
      if (action < 50) {
        // Dispatch the next offset, sometimes after a gap.
        const int64_t gap = (rng() % 10 == 0) ? static_cast<int64_t>(rng() % 5 + 1) : 0;
        cursor += gap;
        const bool a = t.dispatch(cursor);
        const bool b = m.dispatch(cursor);
        ASSERT_EQ(a, b) << "seed " << seed << " step " << step;
        if (a) in_flight.push_back(cursor);
        ++cursor;
      } else if (action < 92) {
        if (in_flight.empty()) continue;
        const std::size_t i = rng() % in_flight.size();
        const int64_t o = in_flight[i];
        in_flight[i] = in_flight.back();
        in_flight.pop_back();
        ASSERT_TRUE(t.complete(o)) << "seed " << seed << " offset " << o;
        ASSERT_TRUE(m.complete(o));
      } else if (action < 95) {
        // A recent offset: done, in flight, or never dispatched (a gap); both must agree.
        const int64_t o = cursor - 1 - static_cast<int64_t>(rng() % 20);
        const bool a = t.complete(o);
        ASSERT_EQ(a, m.complete(o)) << "seed " << seed << " offset " << o;
        auto it = std::find(in_flight.begin(), in_flight.end(), o);
        ASSERT_EQ(a, it != in_flight.end()) << "seed " << seed << " offset " << o;
        if (a) in_flight.erase(it);
      } else if (action < 98) {
        // A re-delivery below the position must be refused by both.
        const int64_t o = cursor - 1 - static_cast<int64_t>(rng() % 5);
        ASSERT_EQ(t.dispatch(o), m.dispatch(o)) << "seed " << seed << " offset " << o;
        if (m.dispatched.count(o) && !m.dispatched[o] &&
            std::find(in_flight.begin(), in_flight.end(), o) == in_flight.end())
          in_flight.push_back(o);
      } else {
        const int64_t target = cursor + static_cast<int64_t>(rng() % 30);
        t.skip_to(target);
        m.skip_to(target);
        cursor = std::max(cursor, target);
      }
      ASSERT_EQ(t.committable(), m.committable()) << "seed " << seed << " step " << step;
      ASSERT_EQ(t.unfinished(), m.unfinished()) << "seed " << seed << " step " << step;
      ASSERT_EQ(t.next_offset(), m.next) << "seed " << seed << " step " << step;
    }
    // Drain: once everything is done, the commit offset is the position.
    for (int64_t o : in_flight) {
      ASSERT_TRUE(t.complete(o));
      ASSERT_TRUE(m.complete(o));
    }
    EXPECT_EQ(t.committable(), m.committable());
    EXPECT_EQ(t.committable(), t.next_offset());
    EXPECT_EQ(t.tracked(), 0u);
  }
}

TEST(PartitionOffsetTracker, LargeWindowCompletedInReverseBlocks) {
  // A million tracked offsets completed in reverse blocks: the commit offset stays at each
  // block's start until that offset completes, then jumps a whole block.
  PartitionOffsetTracker t(0);
  constexpr int64_t kCount = 1'000'000;
  constexpr int64_t kBlock = 50'000;
  for (int64_t o = 0; o < kCount; ++o) ASSERT_TRUE(t.dispatch(o));
  for (int64_t block = 0; block < kCount; block += kBlock) {
    for (int64_t o = block + kBlock - 1; o >= block; --o) ASSERT_TRUE(t.complete(o));
    ASSERT_EQ(t.committable(), block + kBlock);
  }
  EXPECT_EQ(t.unfinished(), 0u);
}

}  // namespace
}  // namespace lagpilot
