#pragma once
// Two log-scale histograms: LogBuckets, the bucket arithmetic of a coarse histogram whose
// counters live with its user (the worker pool's atomic counters, exported to Prometheus), and
// LogHistogram, a fine one with its own counts for the simulator's per-window percentiles.
//
// Thread-safety: plain values; LogBuckets is immutable, LogHistogram is not thread-safe.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lagpilot {

// Log-spaced buckets from `min`: bucket 0 holds [0, min) (and NaN and negatives); bucket i in
// [1, octaves * per_octave] holds [min * 2^((i-1)/per_octave), min * 2^(i/per_octave)); the last
// bucket holds everything from min * 2^octaves up. Finding a bucket is one log2, so counting is
// O(1). Quantiles are reported as the upper bound of their bucket: an overestimate by at most
// one bucket width (2^(1/per_octave)), never an underestimate, which is the safe side for a
// latency ceiling. The counts are the caller's (plain or atomic), indexed 0 .. size() - 1.
class LogBuckets {
 public:
  constexpr LogBuckets(double min, int per_octave, int octaves)
      : min_(min), per_octave_(per_octave), octaves_(octaves) {}

  constexpr int size() const { return octaves_ * per_octave_ + 2; }

  int index(double value) const {
    if (!(value >= min_)) return 0;
    const double x = std::log2(value / min_) * per_octave_;
    if (x >= octaves_ * per_octave_) return size() - 1;
    return 1 + static_cast<int>(x);
  }

  // The upper bound of bucket i; the last bucket, open above, reports its lower bound.
  double upper_bound(int bucket) const {
    if (bucket >= size() - 1) bucket = size() - 2;
    return min_ * std::exp2(static_cast<double>(bucket) / per_octave_);
  }

  // The upper bound of the bucket that holds the nearest-rank q-quantile (rank ceil(q * total),
  // 1-based) of `counts` (size() counts summing to `total`); 0 when total is 0.
  template <class Counts>
  double quantile_upper_bound(const Counts& counts, uint64_t total, double q) const {
    if (total == 0) return 0.0;
    const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * total)));
    uint64_t seen = 0;
    for (int i = 0; i < size(); ++i) {
      seen += counts[static_cast<std::size_t>(i)];
      if (seen >= rank) return upper_bound(i);
    }
    return upper_bound(size() - 1);
  }

 private:
  double min_;
  int per_octave_;
  int octaves_;
};

// A log-linear histogram of positive values (seconds) for per-window percentiles.
//
// Buckets split every power of two in [2^-24, 2^24) s (60 ns to 194 days) into 32 equal slices,
// so a percentile is within 1.6 % of the true sample value; values below or above the range
// land in the first or last bucket. The bucket index is read straight off the bits of the
// double (exponent and the top five mantissa bits), so add() is a few instructions. The
// histogram remembers the lowest and highest bucket in use, so clear() and quantile() touch only
// that range. Weights are doubles so that a batch of messages can be added at once. (Its bucket
// index is read off the bits rather than computed with LogBuckets' log2: 32 slices per octave
// make it the hot spot of a batch simulation, and its percentiles are bucket midpoints.)

class LogHistogram {
 public:
  LogHistogram() : counts_(kBuckets, 0.0) {}

  void add(double value, double weight = 1.0) {
    const int i = index(value);
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
        if (seen > above) return midpoint(i);
      }
      return midpoint(lo_);
    }
    const double target = q * total_;
    double seen = 0.0;
    for (int i = lo_; i < hi_; ++i) {
      seen += counts_[i];
      if (seen >= target && seen > 0.0) return midpoint(i);
    }
    return midpoint(hi_);
  }

  void clear() {
    if (hi_ >= lo_) std::fill(counts_.begin() + lo_, counts_.begin() + hi_ + 1, 0.0);
    lo_ = kBuckets;
    hi_ = -1;
    total_ = 0.0;
  }

 private:
  static constexpr int kSubBits = 5;
  static constexpr int kMinExp = -24;
  static constexpr int kMaxExp = 24;
  static constexpr int kBuckets = (kMaxExp - kMinExp) << kSubBits;

  static int index(double value) {
    if (!(value >= 0x1.0p-24)) return 0;  // also NaN and negatives
    if (value >= 0x1.0p24) return kBuckets - 1;
    const uint64_t bits = std::bit_cast<uint64_t>(value);
    const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    const int sub = static_cast<int>((bits >> (52 - kSubBits)) & ((1u << kSubBits) - 1));
    return ((exponent - kMinExp) << kSubBits) | sub;
  }
  static double midpoint(int i) {
    const int exponent = (i >> kSubBits) + kMinExp;
    const int sub = i & ((1 << kSubBits) - 1);
    return std::ldexp(1.0 + (sub + 0.5) / (1 << kSubBits), exponent);
  }

  std::vector<double> counts_;
  double total_ = 0.0;
  int lo_ = kBuckets;
  int hi_ = -1;
};

}  // namespace lagpilot
