#include "sim/event_heap.h"

#include <gtest/gtest.h>

#include <cstdint>
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
  using Key = std::tuple<double, uint64_t, int>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> reference;
  EventHeap<int> heap;
  std::mt19937_64 rng(7);
  uint64_t seq = 0;
  double now = 0.0;
  int next_payload = 0;
  auto schedule = [&](double t) {
    heap.schedule(t, next_payload);
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
    ASSERT_EQ(e.payload, payload);
    now = e.time;
    const uint64_t r = rng() % 8;
    if (r < 5 || heap.size() < 4) schedule(now + static_cast<double>(rng() % 4));   // replaces
    if (r == 7 || heap.size() < 4) schedule(now + static_cast<double>(rng() % 4));  // a push
    heap.done();
  }
}

}  // namespace
}  // namespace lagpilot::sim
