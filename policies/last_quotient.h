#pragma once

#include <limits>

namespace lagpilot {

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
