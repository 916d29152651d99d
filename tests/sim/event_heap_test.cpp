#include "sim/event_heap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

namespace lagpilot::sim {
namespace {

// Against a std::priority_queue on (time, seq): the same events in the same order, through every
// path (a push, a handled event replaced by the next schedule, a handled event removed by done),
// with many equal times so that the sequence numbers decide.
TEST(EventHeap, GivesTheOrderOfAPriorityQueueOnTimeAndSequence) {
  using Key = std::tuple<double, uint64_t, uint32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> reference;
  EventHeap heap;
  std::mt19937_64 rng(7);
  uint64_t seq = 0;
  double now = 0.0;
  uint32_t next_payload = 0;
  auto schedule = [&](double t) {
    EXPECT_EQ(heap.schedule(t, next_payload), seq);
    reference.emplace(t, seq++, next_payload++);
  };
  for (int i = 0; i < 16; ++i) schedule(static_cast<double>(rng() % 8));
  for (int step = 0; step < 200'000; ++step) {
    ASSERT_FALSE(heap.empty());
    ASSERT_EQ(heap.size(), reference.size());
    const auto e = heap.handle_top();
    const auto [t, s, payload] = reference.top();
    reference.pop();
    ASSERT_EQ(e.time, t);
    ASSERT_EQ(e.seq, s);
    ASSERT_EQ(e.slot, payload);
    now = e.time;
    const uint64_t r = rng() % 8;
    if (r < 5 || heap.size() < 4) schedule(now + static_cast<double>(rng() % 4));   // replaces
    if (r == 7 || heap.size() < 4) schedule(now + static_cast<double>(rng() % 4));  // a push
    heap.done();
  }
}

// The heap compares times through an integer key: negative times, both zeros (equal, so the
// sequence decides), denormals and infinities must still come out in the doubles' order.
TEST(EventHeap, OrdersNegativeZeroDenormalAndInfiniteTimesAsDoubles) {
  const double times[] = {-1e300,
                          -1.5,
                          -0.0,
                          0.0,
                          5e-324,
                          1e-310,
                          2.5,
                          1e300,
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()};
  using Key = std::tuple<double, uint64_t, uint32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> reference;
  EventHeap heap;
  std::mt19937_64 rng(11);
  uint64_t seq = 0;
  for (int i = 0; i < 400; ++i) {
    const double t = times[rng() % std::size(times)];
    heap.schedule(t, static_cast<uint32_t>(i));
    reference.emplace(t, seq++, static_cast<uint32_t>(i));
  }
  while (!reference.empty()) {
    const auto [t, s, payload] = reference.top();
    reference.pop();
    ASSERT_EQ(heap.top_time(), t);
    const auto e = heap.handle_top();
    ASSERT_EQ(e.seq, s);
    ASSERT_EQ(e.slot, payload);
    ASSERT_EQ(std::signbit(e.time), std::signbit(t) && t != 0.0);  // a zero comes back as +0
    heap.done();
  }
  EXPECT_TRUE(heap.empty());
}

// The slot shares a word with the sequence number: the largest slot comes back whole, and at equal
// times a large slot does not put an event before one scheduled earlier with a small slot.
TEST(EventHeap, KeepsTheWholeSlotAndOrdersEqualTimesBySequenceNotSlot) {
  EventHeap heap;
  heap.schedule(1.0, EventHeap::kMaxSlot);
  heap.schedule(1.0, 0);
  heap.schedule(0.5, EventHeap::kMaxSlot - 1);
  const uint32_t expected[] = {EventHeap::kMaxSlot - 1, EventHeap::kMaxSlot, 0};
  for (const uint32_t slot : expected) {
    const auto e = heap.handle_top();
    EXPECT_EQ(e.slot, slot);
    heap.done();
  }
  EXPECT_TRUE(heap.empty());
}

}  // namespace
}  // namespace lagpilot::sim
