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
// With unit weights (message fidelity) the walk's answer is the window's k-th largest value, and
// only its bucket matters: the p99 of a dozen values is the largest (kept as values are added),
// and the p50 is selected over the values' 16-bit bucket indices, eight compared at a time.
//
// Thread-safety: a plain value; one owner.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "policies/log_histogram.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lagpilot::sim {

class WindowHistogram {
 public:
  static constexpr std::size_t kSparse = 32;  // a multiple of 8 (see largest_index())

  // Inlined into the consumer model's completion (two a message); what a value that does not
  // stay sparse needs is out of line.
  [[gnu::always_inline]] void add(double value, double weight = 1.0) {
    if (dense_ || size_ == kSparse || std::isnan(value)) [[unlikely]] {
      add_dense(value, weight);
      return;
    }
    values_[size_] = value;
    weights_[size_] = weight;
    largest_ = std::max(largest_, value);  // the first of equal values, as std::max_element
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
    // The answer is the representative of the chosen value's bucket, exactly as the histogram
    // reports it (a histogram holding only that value reports its bucket's midpoint).
    if (unit_weights_) {
      // The walk stops at the (floor(above) + 1)-th largest value: a selection, not a sort.
      // Its bucket is the (floor(above) + 1)-th largest bucket index (the index does not
      // decrease with the value), so the selection can run over the indices instead.
      const std::size_t i = std::min(size_ - 1, static_cast<std::size_t>(above));
      // The p99 of a dozen values: their largest, kept as they were added (a loop over the
      // window and its exit's misprediction, twice a tick, for a maximum per add).
      if (i == 0) return bucket_midpoint(bucket_index(largest_));
      return bucket_midpoint(largest_index(i));
    }
    return bucket_midpoint(bucket_index(weighted_walk(above)));
  }

  // Buckets::index(value) for any value but NaN (which never stays sparse), without its two
  // range tests: inside [2^-24, 2^24) the index is the exponent and the top mantissa bits less
  // a constant; below it (tiny, zero, -0, negative: a negative bit pattern as a signed number)
  // the result clamps to 0, above it (infinity included) to the last bucket. Five instructions
  // instead of about fifteen, for every value of the window at its p50.
  static int bucket_index(double value) {
    constexpr int64_t kOffset = int64_t{1023 + kMinExp} << kSubBits;
    const int64_t i = (std::bit_cast<int64_t>(value) >> (52 - kSubBits)) - kOffset;
    return static_cast<int>(std::clamp<int64_t>(i, 0, Buckets::size() - 1));
  }

  // Buckets::midpoint(i), built from its bits instead of through std::ldexp (a libm call, three
  // a tick): the midpoint of slice s of [2^e, 2^(e+1)) is 2^e (1 + (s + 1/2) / 32), a double
  // whose mantissa is s followed by a single 1 bit. window_histogram_test compares every bucket.
  static double bucket_midpoint(int i) {
    const auto exponent = static_cast<uint64_t>((i >> kSubBits) + kMinExp + 1023);
    const auto slice = static_cast<uint64_t>(i & ((1 << kSubBits) - 1));
    return std::bit_cast<double>((exponent << 52) | (slice << (52 - kSubBits)) |
                                 (uint64_t{1} << (51 - kSubBits)));
  }

  void clear() {
    if (dense_) histogram_.clear();
    dense_ = false;
    size_ = 0;
    total_ = 0.0;
    largest_ = -std::numeric_limits<double>::infinity();
    sorted_prefix_ = 0;
    unit_weights_ = true;
  }

 private:
  using Buckets = LogHistogram::Buckets;
  // Buckets' parameters (LogLinearBuckets<5, -24, 24>), which bucket_midpoint() builds on.
  static constexpr int kSubBits = 5;
  static constexpr int kMinExp = -24;
  static_assert(Buckets::size() == 48 << kSubBits && Buckets::kSlices == 1 << kSubBits);
  static_assert(Buckets::size() <= 32767);  // an index fits an int16_t

  [[gnu::noinline]] void add_dense(double value, double weight) {
    if (!dense_) spill();
    histogram_.add(value, weight);
  }

  void spill() {
    for (std::size_t i = 0; i < size_; ++i) histogram_.add(values_[i], weights_[i]);
    size_ = 0;
    total_ = 0.0;
    dense_ = true;
  }

  // The (i + 1)-th largest of the values' bucket indices: the one with at most i indices above
  // it and more than i at or above it. Counting for every candidate (a few dozen, branch-free)
  // beats a selection's unpredictable branches on random data, and over 16-bit indices the
  // count takes eight at a time (where the values themselves went two at a time and the p50's
  // count was half of a tick's sample()). The indices run over a multiple of 8 slots, those past
  // size_ set to -1, below every index (they count as below every candidate).
  int largest_index(std::size_t i) {
    const std::size_t padded = (size_ + 7) & ~std::size_t{7};  // <= kSparse, a multiple of 8
    for (std::size_t b = 0; b < size_; ++b) {
      indices_[b] = static_cast<int16_t>(bucket_index(values_[b]));
    }
    // One 8-slot store of -1 past the last index (indices_ has room for it) instead of a loop
    // of up to 7, which the compiler made a memset call.
    std::array<int16_t, 8> pad;
    pad.fill(-1);
    std::memcpy(indices_.data() + size_, pad.data(), sizeof pad);
    for (std::size_t a = 0; a < size_; ++a) {
      const int16_t v = indices_[a];
      const auto [above, below] = count_around(v, padded);
      if (above <= i && i < padded - below) return v;
    }
    return indices_[size_ - 1];  // not reached: some index has that rank
  }

  // How many of indices_[0, n) are above `v` and below it (n a multiple of 8).
  std::pair<std::size_t, std::size_t> count_around(int16_t v, std::size_t n) const {
#if defined(__SSE2__)
    // Eight at a time: a comparison is all ones (-1) where true, so subtracting the masks
    // counts (at most kSparse / 8 per lane), and one multiply-add by 1 sums the lanes in pairs.
    const __m128i x = _mm_set1_epi16(v);
    __m128i above = _mm_setzero_si128();
    __m128i below = _mm_setzero_si128();
    for (std::size_t b = 0; b < n; b += 8) {
      const __m128i y = _mm_load_si128(reinterpret_cast<const __m128i*>(indices_.data() + b));
      above = _mm_sub_epi16(above, _mm_cmpgt_epi16(y, x));
      below = _mm_sub_epi16(below, _mm_cmpgt_epi16(x, y));
    }
    const __m128i ones = _mm_set1_epi16(1);
    const __m128i a = _mm_madd_epi16(above, ones);  // four 32-bit sums each
    const __m128i e = _mm_madd_epi16(below, ones);
    // [a0 + a2, a1 + a3, e0 + e2, e1 + e3], then the pairs added: lane 0 above, lane 2 below.
    __m128i s = _mm_add_epi32(_mm_unpacklo_epi64(a, e), _mm_unpackhi_epi64(a, e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return {static_cast<std::size_t>(_mm_cvtsi128_si32(s)),
            static_cast<std::size_t>(_mm_cvtsi128_si32(_mm_srli_si128(s, 8)))};
#else
    std::size_t above = 0, below = 0;
    for (std::size_t b = 0; b < n; ++b) {
      above += indices_[b] > v ? 1 : 0;
      below += indices_[b] < v ? 1 : 0;
    }
    return {above, below};
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
  // largest_index()'s bucket indices, and room for its padding store past the last of them.
  alignas(16) std::array<int16_t, kSparse + 8> indices_{};
  std::size_t size_ = 0;
  double total_ = 0.0;
  double largest_ = -std::numeric_limits<double>::infinity();  // of values_[0, size_)
  std::size_t sorted_prefix_ = 0;  // values_[0, sorted_prefix_) are the largest, descending
  bool unit_weights_ = true;       // every weight is 1: the k-th largest value is the answer
  bool dense_ = false;
  LogHistogram histogram_;
};

}  // namespace lagpilot::sim
