#include "sim/prefetched_stream.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

namespace lagpilot::sim {
namespace {

constexpr int64_t kMany = 5 * PrefetchedStream::kBlock * PrefetchedStream::kBlocks + 123;

TEST(PrefetchedStream, GivesEveryValueInOrderAcrossManyBlocks) {
  PrefetchedStream s([](const PrefetchedStream::Emit& emit) {
    for (int64_t i = 0; i < kMany; ++i) {
      if (!emit(static_cast<double>(i))) return;
    }
  });
  for (int64_t i = 0; i < kMany; ++i) {
    ASSERT_EQ(s.peek(), static_cast<double>(i));
    ASSERT_EQ(s.next(), static_cast<double>(i));
  }
  EXPECT_THROW(s.next(), std::logic_error);  // past the last value
}

TEST(PrefetchedStream, RethrowsWhatTheProducerThrewAfterTheValuesBeforeIt) {
  PrefetchedStream s([](const PrefetchedStream::Emit& emit) {
    for (int64_t i = 0; i < static_cast<int64_t>(PrefetchedStream::kBlock); ++i) emit(1.0);
    throw std::runtime_error("producer failed");
  });
  for (std::size_t i = 0; i < PrefetchedStream::kBlock; ++i) ASSERT_EQ(s.next(), 1.0);
  EXPECT_THROW(s.next(), std::runtime_error);
}

TEST(PrefetchedStream, StopsAnEndlessProducerWhenDestroyed) {
  for (int round = 0; round < 20; ++round) {
    PrefetchedStream s([](const PrefetchedStream::Emit& emit) {
      for (double v = 0;; ++v) {
        if (!emit(v)) return;
      }
    });
    if (round % 2 == 0) {
      EXPECT_EQ(s.next(), 0.0);  // read a little, or nothing; either way the destructor returns
    }
  }
}

}  // namespace
}  // namespace lagpilot::sim
