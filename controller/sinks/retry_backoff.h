#pragma once
// Exponential backoff with full jitter: before attempt n+1 (n >= 1 failed attempts) wait a
// uniformly random time in [0, min(max_backoff, initial_backoff * 2^(n-1))]. Full jitter
// spreads the retries of many failing messages over the whole window instead of letting them
// return in waves; the cap keeps a long outage from pushing retries hours apart. When the sink
// named its own wait (Retry-After), that wait is used instead, capped the same way.
//
// Thread-safety: a plain value; delay() is const and takes the random number generator, so each
// caller (one worker) passes its own.

#include <algorithm>
#include <cmath>
#include <random>

namespace lagpilot {

class RetryBackoff {
 public:
  RetryBackoff(double initial_seconds, double max_seconds)
      : initial_(initial_seconds), max_(std::max(initial_seconds, max_seconds)) {}

  // The wait before the next attempt after `failed_attempts` (>= 1) failures.
  template <class Rng>
  double delay(int failed_attempts, Rng& rng, double retry_after_seconds = -1) const {
    if (retry_after_seconds >= 0) return std::min(retry_after_seconds, max_);
    const double ceiling = window(failed_attempts);
    return std::uniform_real_distribution<double>(0.0, ceiling)(rng);
  }

  // The upper end of the jitter window after `failed_attempts` failures.
  double window(int failed_attempts) const {
    const int doublings = std::clamp(failed_attempts - 1, 0, 62);
    return std::min(max_, initial_ * std::ldexp(1.0, doublings));
  }

 private:
  double initial_;
  double max_;
};

}  // namespace lagpilot
