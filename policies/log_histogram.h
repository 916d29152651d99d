#pragma once
// Log-linear histograms (HdrHistogram-style) of positive values, seconds.
//
// LogLinearBuckets is the bucket arithmetic: every power of two in [2^MinExp, 2^MaxExp) is split
// into 2^SubBits equal slices, so a bucket is at most 2^-SubBits of its lower bound wide and its
// midpoint lies within 2^-(SubBits+1) of any value in it (1.6 % for 5 sub-bits). The bucket
// index is read straight off the bits of the double (exponent and the top SubBits mantissa
// bits): a few instructions, no log2, which matters on the worker pool's per-message path.
// Values below the range (and zero, negatives, NaN) land in the first bucket, values above it in
// the last. The counts are the user's: the worker pool keeps relaxed atomic counters (one
// fetch_add per message, no lock), LogHistogram keeps plain doubles.
//
// LogHistogram is such a histogram with its own counts, for per-window percentiles in the
// simulator and of the Kafka source's record ages.
//
// Thread-safety: LogLinearBuckets is stateless; LogHistogram is not thread-safe.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lagpilot {

namespace log_histogram_detail {
constexpr double pow2(int e) {
  double r = 1.0;
  for (; e > 0; --e) r *= 2.0;
  for (; e < 0; ++e) r /= 2.0;
  return r;
}
}  // namespace log_histogram_detail

template <int SubBits, int MinExp, int MaxExp>
class LogLinearBuckets {
  static_assert(SubBits >= 1 && SubBits <= 10 && MinExp < MaxExp && MinExp > -1000 &&
                MaxExp < 1000);

 public:
  static constexpr int kSlices = 1 << SubBits;
  static constexpr int kBuckets = (MaxExp - MinExp) * kSlices;

  static constexpr int size() { return kBuckets; }

  static int index(double value) {
    if (!(value >= kMin)) return 0;  // also NaN and negatives
    if (value >= kMax) return kBuckets - 1;
    const uint64_t bits = std::bit_cast<uint64_t>(value);
    const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    const int sub = static_cast<int>((bits >> (52 - SubBits)) & (kSlices - 1));
    return ((exponent - MinExp) << SubBits) | sub;
  }

  static double lower_bound(int i) {
    return std::ldexp(1.0 + static_cast<double>(i & (kSlices - 1)) / kSlices,
                      (i >> SubBits) + MinExp);
  }
  static double upper_bound(int i) { return lower_bound(i + 1); }
  static double midpoint(int i) {
    return std::ldexp(1.0 + (static_cast<double>(i & (kSlices - 1)) + 0.5) / kSlices,
                      (i >> SubBits) + MinExp);
  }

  // The nearest-rank q-quantile (rank ceil(q * total), 1-based) of `counts` (size() counts that
  // sum to `total`), as its bucket's midpoint; 0 when total is 0.
  template <class Counts>
  static double quantile(const Counts& counts, uint64_t total, double q) {
    if (total == 0) return 0.0;
    const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * total)));
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts[static_cast<std::size_t>(i)];
      if (seen >= rank) return midpoint(i);
    }
    return midpoint(kBuckets - 1);
  }

 private:
  static constexpr double kMin = log_histogram_detail::pow2(MinExp);
  static constexpr double kMax = log_histogram_detail::pow2(MaxExp);
};

// A log-linear histogram of positive values (seconds) for per-window percentiles.
//
// Buckets split every power of two in [2^-24, 2^24) s (60 ns to 194 days) into 32 equal slices,
// so a percentile is within 1.6 % of the true sample value; values below or above the range
// land in the first or last bucket. The histogram remembers the lowest and highest bucket in
// use, so clear() and quantile() touch only that range. Weights are doubles so that a batch of
// messages can be added at once.
class LogHistogram {
 public:
  using Buckets = LogLinearBuckets<5, -24, 24>;

  LogHistogram() : counts_(Buckets::kBuckets, 0.0) {}

  void add(double value, double weight = 1.0) {
    const int i = Buckets::index(value);
    counts_[i] += weight;
    total_ += weight;
    lo_ = std::min(lo_, i);
    hi_ = std::max(hi_, i);
  }

  double total() const { return total_; }
  bool empty() const { return total_ <= 0.0; }

  // The nearest-rank q-quantile (q in [0, 1]), as the bucket's midpoint; 0 when empty.
  double quantile(double q) const {
    if (total_ <= 0.0) return 0.0;
    if (q >= 0.5) {  // walk down from the top: short for the high percentiles
      const double above = (1.0 - q) * total_;
      double seen = 0.0;
      for (int i = hi_; i > lo_; --i) {
        seen += counts_[i];
        if (seen > above) return Buckets::midpoint(i);
      }
      return Buckets::midpoint(lo_);
    }
    const double target = q * total_;
    double seen = 0.0;
    for (int i = lo_; i < hi_; ++i) {
      seen += counts_[i];
      if (seen >= target && seen > 0.0) return Buckets::midpoint(i);
    }
    return Buckets::midpoint(hi_);
  }

  void clear() {
    if (hi_ >= lo_) std::fill(counts_.begin() + lo_, counts_.begin() + hi_ + 1, 0.0);
    lo_ = Buckets::kBuckets;
    hi_ = -1;
    total_ = 0.0;
  }

 private:
  std::vector<double> counts_;
  double total_ = 0.0;
  int lo_ = Buckets::kBuckets;
  int hi_ = -1;
};

}  // namespace lagpilot
