#pragma once

#include <cmath>
#include <limits>

namespace lagpilot {

// x / d, without a division when d is 1: x / 1 is x, bit for bit, and at the default 1 s tick
// the per-tick rates, means and derivatives divide by 1, where a division's latency was a good
// part of the simulator's time per tick.
inline double divide(double x, double d) {
  return d == 1.0 ? x : x / d;
}

// f(a, b), remembered for the last (a, b). A control loop ticks at a fixed period, so
// quotients of the tick's length and the policy's constants (a filter's gain dt / (tau + dt), a
// step's share of a time constant) and decays exp(-dt / tau) repeat at almost every tick: they
// are computed once instead, and the value is the same, bit for bit, as computing it each time.
// Owned by one policy and used from its decide() only (not thread-safe).
template <double (*F)(double, double)>
class LastOf {
 public:
  double operator()(double a, double b) {
    // NaN at first: unequal to everything, so the first call computes.
    if (a != a_ || b != b_) {
      a_ = a;
      b_ = b;
      value_ = F(a, b);
    }
    return value_;
  }

 private:
  double a_ = std::numeric_limits<double>::quiet_NaN();
  double b_ = std::numeric_limits<double>::quiet_NaN();
  double value_ = 0.0;
};

inline double quotient(double a, double b) {
  return a / b;
}
// The share of an exponential window's sum that one step of dt keeps: exp(-dt / tau).
inline double decay(double dt, double tau) {
  return std::exp(-dt / tau);
}

using LastQuotient = LastOf<quotient>;  // a / b
using LastDecay = LastOf<decay>;        // exp(-dt / tau)

}  // namespace lagpilot
