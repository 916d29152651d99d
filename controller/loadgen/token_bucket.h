#pragma once
// Token bucket for pacing. Tokens accrue continuously at `rate` per second up to `burst`;
// try_take(n, now) spends n tokens if there are that many. Time is injected as a double `now`
// (seconds, any epoch; a `now` earlier than the last one seen adds nothing), so tests drive it
// with simulated time.
//
// The bucket starts full unless `start_tokens` says otherwise. Changing the rate first settles
// the tokens accrued at the old rate up to `now`, so a piecewise-constant schedule is exact.
//
// Thread-safety: none; one thread owns a bucket.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace lagpilot {

class TokenBucket {
 public:
  // rate: tokens per second (>= 0); burst: bucket size (> 0).
  TokenBucket(double rate, double burst, double now, double start_tokens = -1.0)
      : rate_(std::max(0.0, rate)),
        burst_(burst > 0.0 ? burst : 1.0),
        tokens_(start_tokens < 0.0 ? burst_ : std::min(start_tokens, burst_)),
        last_(now) {}

  // Tokens available at `now` (after refill).
  double available(double now) {
    refill(now);
    return tokens_;
  }

  // Whole tokens available at `now`, capped at `max`.
  uint64_t available_whole(double now, uint64_t max = std::numeric_limits<uint64_t>::max()) {
    refill(now);
    // The epsilon absorbs rounding in (now - last) * rate, e.g. 0.3 s at 10/s = 2.9999999.
    const double whole = std::floor(tokens_ + 1e-9);
    if (whole < 1.0) return 0;
    return whole >= static_cast<double>(max) ? max : static_cast<uint64_t>(whole);
  }

  // Spends n tokens if available; false (nothing spent) otherwise.
  bool try_take(double n, double now) {
    refill(now);
    if (tokens_ + 1e-9 < n) return false;
    tokens_ = std::max(0.0, tokens_ - n);
    return true;
  }

  // Seconds from `now` until n tokens are available (0 if already; +inf if rate is 0 and they
  // never will be, or n exceeds the burst).
  double seconds_until(double n, double now) {
    refill(now);
    if (tokens_ + 1e-9 >= n) return 0.0;
    if (rate_ <= 0.0 || n > burst_ + 1e-9) return std::numeric_limits<double>::infinity();
    return (n - tokens_) / rate_;
  }

  // Changes the rate from `now` on; tokens accrued so far at the old rate are kept.
  void set_rate(double rate, double now) {
    refill(now);
    rate_ = std::max(0.0, rate);
  }

  // Changes the bucket size from `now` on. Tokens already earned are kept even above the new
  // size (so shrinking the bucket at a rate drop does not lose what the old rate accrued); the
  // new size caps further accrual.
  void set_burst(double burst, double now) {
    refill(now);
    burst_ = burst > 0.0 ? burst : 1.0;
  }

  double rate() const { return rate_; }
  double burst() const { return burst_; }

 private:
  void refill(double now) {
    if (now > last_) {
      if (tokens_ < burst_) tokens_ = std::min(burst_, tokens_ + (now - last_) * rate_);
      last_ = now;
    }
  }

  double rate_;
  double burst_;
  double tokens_;
  double last_;  // time of the last refill
};

}  // namespace lagpilot
