#pragma once

#include <limits>

namespace lagpilot {

// x / d, without a division when d is 1: x / 1 is x, bit for bit, and at the default 1 s tick
// the per-tick rates, means and derivatives divide by 1, where a division's latency was a good
// part of the simulator's time per tick.
inline double divide(double x, double d) {
  return d == 1.0 ? x : x / d;
}

// a / b, remembered for the last (a, b). A control loop ticks at a fixed period, so quotients
// of the tick's length and the policy's constants (a filter's gain dt / (tau + dt), a step's
// share of a time constant) repeat at almost every tick: they are divided once instead, and
// the value is the same, bit for bit, as dividing each time. Owned by one policy and used from
// its decide() only (not thread-safe).
class LastQuotient {
 public:
  double operator()(double a, double b) {
    // NaN at first: unequal to everything, so the first call divides.
    if (a != a_ || b != b_) {
      a_ = a;
      b_ = b;
      quotient_ = a / b;
    }
    return quotient_;
  }

 private:
  double a_ = std::numeric_limits<double>::quiet_NaN();
  double b_ = std::numeric_limits<double>::quiet_NaN();
  double quotient_ = 0.0;
};

}  // namespace lagpilot
