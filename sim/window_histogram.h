#pragma once
// A LogHistogram for one sampling window that stays cheap when the window holds few values.
//
// The consumer model reads two or three percentiles of each tick's completions and clears them.
// A LogHistogram's quantile() and clear() cost the span of buckets between its lowest and
// highest value (hundreds of buckets for exponential service times), which at a dozen values
// per tick is most of a tick's work. So the first kSparse values of a window are kept as they
// are, and a quantile of them is found by walking them in descending order: the nearest-rank walk
// from the top that LogHistogram::quantile() does over buckets gives the same bucket when done over
// the values in descending order (values in one bucket are adjacent, and the walk stops at the
// first value whose cumulative weight exceeds (1 - q) * total), and a histogram holding only that
// value reports the bucket's representative. The weights the simulator adds (1, or half a batch's
// message count) are multiples of 1/2, so every partial sum is exact in either order. A window
// with more values, a NaN, or a quantile below 0.5 (whose walk runs from the bottom) goes to a
// real LogHistogram. Results are identical to a LogHistogram fed the same values
// (window_histogram_test checks this on random windows).
//
// Thread-safety: a plain value; one owner.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "policies/log_histogram.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lagpilot::sim {

class WindowHistogram {
 public:
  static constexpr std::size_t kSparse = 32;  // a multiple of 4 (see largest())

  void add(double value, double weight = 1.0) {
    if (dense_) {
      histogram_.add(value, weight);
      return;
    }
    if (size_ == kSparse || std::isnan(value)) {
      spill();
      histogram_.add(value, weight);
      return;
    }
    values_[size_] = value;
    weights_[size_] = weight;
    ++size_;
    total_ += weight;
    sorted_prefix_ = 0;
    unit_weights_ = unit_weights_ && weight == 1.0;
  }

  bool empty() const { return dense_ ? histogram_.empty() : !(total_ > 0.0); }

  // LogHistogram::quantile(q) of the window's values.
  double quantile(double q) {
    if (!dense_ && q < 0.5) spill();
    if (dense_) return histogram_.quantile(q);
    if (!(total_ > 0.0)) return 0.0;
    const double above = (1.0 - q) * total_;
    double* const first = values_.data();
    double* const last = first + size_;
    double value;
    if (unit_weights_) {
      // The walk stops at the (floor(above) + 1)-th largest value: a selection, not a sort.
      const std::size_t i = std::min(size_ - 1, static_cast<std::size_t>(above));
      value = i == 0 ? *std::max_element(first, last) : largest(i);
    } else {
      value = weighted_walk(above);
    }
    // The representative of the value's bucket, exactly as the histogram reports it (a
    // histogram holding only that value reports its bucket's midpoint).
    using Buckets = LogHistogram::Buckets;
    return Buckets::midpoint(Buckets::index(value));
  }

  void clear() {
    if (dense_) histogram_.clear();
    dense_ = false;
    size_ = 0;
    total_ = 0.0;
    sorted_prefix_ = 0;
    unit_weights_ = true;
  }

 private:
  void spill() {
    for (std::size_t i = 0; i < size_; ++i) histogram_.add(values_[i], weights_[i]);
    size_ = 0;
    total_ = 0.0;
    dense_ = true;
  }

  // The (i + 1)-th largest value: the one with at most i values above it and more than i at
  // or above it. Counting for every value (a few dozen, branch-free) beats a selection's
  // unpredictable branches on random data. The count runs over a multiple of 4 values, two at a
  // time, the slots past size_ set to NaN (no ordered comparison with a NaN is true, so they
  // count nowhere).
  double largest(std::size_t i) {
    const std::size_t padded = (size_ + 3) & ~std::size_t{3};  // <= kSparse, a multiple of 4
    for (std::size_t b = size_; b < padded; ++b) {
      values_[b] = std::numeric_limits<double>::quiet_NaN();
    }
    for (std::size_t a = 0; a < size_; ++a) {
      const double v = values_[a];
      const auto [above, at_or_above] = count_around(v, padded);
      if (above <= i && i < at_or_above) return v;
    }
    return values_[size_ - 1];  // not reached: some value has that rank
  }

  // How many of values_[0, n) are above `v` and at or above it (n a multiple of 2).
  std::pair<std::size_t, std::size_t> count_around(double v, std::size_t n) const {
#if defined(__SSE2__)
    // Two at a time: an ordered comparison is all ones where true (and false for a NaN), so
    // subtracting the masks counts.
    const __m128d x = _mm_set1_pd(v);
    __m128i above = _mm_setzero_si128();
    __m128i at_or_above = _mm_setzero_si128();
    for (std::size_t b = 0; b < n; b += 2) {
      const __m128d y = _mm_loadu_pd(values_.data() + b);
      above = _mm_sub_epi64(above, _mm_castpd_si128(_mm_cmpgt_pd(y, x)));
      at_or_above = _mm_sub_epi64(at_or_above, _mm_castpd_si128(_mm_cmpge_pd(y, x)));
    }
    alignas(16) uint64_t a[2];
    alignas(16) uint64_t e[2];
    _mm_store_si128(reinterpret_cast<__m128i*>(a), above);
    _mm_store_si128(reinterpret_cast<__m128i*>(e), at_or_above);
    return {static_cast<std::size_t>(a[0] + a[1]), static_cast<std::size_t>(e[0] + e[1])};
#else
    std::size_t above = 0, at_or_above = 0;
    for (std::size_t b = 0; b < n; ++b) {
      above += values_[b] > v ? 1 : 0;
      at_or_above += values_[b] >= v ? 1 : 0;
    }
    return {above, at_or_above};
#endif
  }

  // The walk from the top over the (value, weight) pairs in descending order: the first value
  // whose cumulative weight exceeds `above`, else the smallest. The order is built only as far
  // as the walk goes (a selection sort of the prefix, kept for the next quantile of the window):
  // the p99 of a window of batches stops after a value or two, where a whole sort cost most of a
  // tick. Values that tie give the same answer in any order among them (the cumulative weight
  // past a run of ties does not depend on it).
  double weighted_walk(double above) {
    double seen = 0.0;
    for (std::size_t i = 0; i + 1 < size_; ++i) {
      if (i >= sorted_prefix_) {
        std::size_t best = i;
        for (std::size_t j = i + 1; j < size_; ++j) {
          if (values_[j] > values_[best]) best = j;
        }
        std::swap(values_[i], values_[best]);
        std::swap(weights_[i], weights_[best]);
        sorted_prefix_ = i + 1;
      }
      seen += weights_[i];
      if (seen > above) return values_[i];
    }
    return values_[size_ - 1];  // what is left after the top size_ - 1 is the smallest
  }

  std::array<double, kSparse> values_{};
  std::array<double, kSparse> weights_{};
  std::size_t size_ = 0;
  double total_ = 0.0;
  std::size_t sorted_prefix_ = 0;  // values_[0, sorted_prefix_) are the largest, descending
  bool unit_weights_ = true;       // every weight is 1: the k-th largest value is the answer
  bool dense_ = false;
  LogHistogram histogram_;
};

}  // namespace lagpilot::sim
