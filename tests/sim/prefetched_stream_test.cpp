#include "sim/prefetched_stream.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

namespace lagpilot::sim {
namespace {

constexpr int64_t kMany = 5 * PrefetchedStream::kBlock * PrefetchedStream::kBlocks + 123;

TEST(PrefetchedStream, RethrowsWhatTheFillThrewAfterTheValuesBeforeIt) {
  int calls = 0;
  PrefetchedStream s(PrefetchedStream::Fill([&calls](double* out, std::size_t n) {
    if (calls++ > 0) throw std::runtime_error("fill failed");
    for (std::size_t k = 0; k < n; ++k) out[k] = 1.0;
    return n;
  }));
  for (std::size_t i = 0; i < PrefetchedStream::kBlock; ++i) ASSERT_EQ(s.next(), 1.0);
  EXPECT_THROW(s.next(), std::runtime_error);
}

TEST(PrefetchedStream, FillGivesEveryValueInOrderAndEndsAtAShortFill) {
  int64_t next = 0;
  PrefetchedStream s(PrefetchedStream::Fill([&next](double* out, std::size_t n) {
    std::size_t k = 0;
    for (; k < n && next < kMany; ++k) out[k] = static_cast<double>(next++);
    return k;  // short at the end (kMany is not a multiple of kBlock)
  }));
  for (int64_t i = 0; i < kMany; ++i) ASSERT_EQ(s.next(), static_cast<double>(i));
  EXPECT_THROW(s.next(), std::logic_error);  // past the last value
}

TEST(PrefetchedStream, FillEndsOnAnEmptyFillAndRethrowsAFailure) {
  int calls = 0;
  PrefetchedStream ends(PrefetchedStream::Fill([&calls](double* out, std::size_t n) {
    if (calls++ > 0) return std::size_t{0};  // one full block, then nothing
    for (std::size_t k = 0; k < n; ++k) out[k] = 2.0;
    return n;
  }));
  for (std::size_t i = 0; i < PrefetchedStream::kBlock; ++i) ASSERT_EQ(ends.next(), 2.0);
  EXPECT_THROW(ends.next(), std::logic_error);

  PrefetchedStream fails(PrefetchedStream::Fill(
      [](double*, std::size_t) -> std::size_t { throw std::runtime_error("fill failed"); }));
  EXPECT_THROW(fails.next(), std::runtime_error);
}

TEST(PrefetchedStream, StopsAnEndlessFillWhenDestroyed) {
  for (int round = 0; round < 20; ++round) {
    PrefetchedStream s(PrefetchedStream::Fill([](double* out, std::size_t n) {
      for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<double>(k);
      return n;
    }));
    if (round % 2 == 0) {
      EXPECT_EQ(s.next(), 0.0);
    }
  }
}

}  // namespace
}  // namespace lagpilot::sim
