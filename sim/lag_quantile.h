#pragma once
// The exact nearest-rank quantile of a stream of non-negative integers (the lag sampled at every
// tick) whose length is known up front, in memory that does not grow with the stream.
//
// Algorithm: the q-quantile of n samples is the k-th largest, k = n - (ceil(q n) - 1). Samples
// below kDenseLimit are counted in a fixed table (one counter per value); larger ones go to a
// min-heap that keeps only the k largest of them (a smaller one can never be the k-th largest
// overall, since every counted sample is smaller still). At the end the answer is the heap's
// minimum when the heap holds k samples, else the (k - heap size)-th largest counted value. It
// gives exactly what sorting all n samples and taking index ceil(q n) - 1 gives, with O(1) work
// per sample (a heap operation only for large values) and memory bounded by the table plus the
// large samples among the top 1 - q of the stream.
//
// Thread-safety: a plain value; one owner.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

namespace lagpilot::sim {

class LagQuantile {
 public:
  // Values below this are counted (at most 2^16 counters of 8 bytes: 512 KB; the table grows
  // to the largest value seen, so short runs with small lags stay cheap).
  static constexpr int64_t kDenseLimit = int64_t{1} << 16;

  // The q-quantile (0 < q <= 1) of `count` (>= 1) samples, to be added one by one.
  LagQuantile(double q, int64_t count)
      : count_(count),
        rank_from_top_(count -
                       (static_cast<int64_t>(std::ceil(q * static_cast<double>(count))) - 1)) {
    if (count < 1 || rank_from_top_ < 1) throw std::invalid_argument("LagQuantile: no samples");
  }

  // A sample (clamped at 0).
  void add(int64_t value) {
    ++added_;
    if (value < kDenseLimit) {
      const auto at = static_cast<std::size_t>(std::max<int64_t>(0, value));
      if (at >= dense_.size()) {
        dense_.resize(
            std::min(static_cast<std::size_t>(kDenseLimit), std::max(2 * dense_.size(), at + 1)),
            0);
      }
      ++dense_[at];
      return;
    }
    if (static_cast<int64_t>(large_.size()) < rank_from_top_) {
      large_.push_back(value);
      std::push_heap(large_.begin(), large_.end(), std::greater<>());
    } else if (value > large_.front()) {
      std::pop_heap(large_.begin(), large_.end(), std::greater<>());
      large_.back() = value;
      std::push_heap(large_.begin(), large_.end(), std::greater<>());
    }
  }

  // The quantile of the samples added so far, which must be all `count` of them.
  int64_t value() const {
    if (added_ != count_) throw std::logic_error("LagQuantile: not every sample was added");
    const auto large = static_cast<int64_t>(large_.size());
    if (large >= rank_from_top_) return large_.front();
    int64_t left = rank_from_top_ - large;  // rank among the counted values, from the top
    for (auto v = static_cast<int64_t>(dense_.size()) - 1; v >= 0; --v) {
      left -= dense_[static_cast<std::size_t>(v)];
      if (left <= 0) return v;
    }
    return 0;  // not reached: the counted values hold the rest of the samples
  }

 private:
  int64_t count_;
  int64_t rank_from_top_;  // k: the answer is the k-th largest sample
  int64_t added_ = 0;
  std::vector<uint64_t> dense_;
  std::vector<int64_t> large_;  // min-heap of the largest samples >= kDenseLimit
};

}  // namespace lagpilot::sim
