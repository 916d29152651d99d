#pragma once
// The live runtime's clock: monotonic wall time. The policies and the simulator never read a
// real clock (they take a Clock& or `now`); only the live runtime, its tools and its tests
// construct this one. Safe to read from any thread.

#include <chrono>

#include "policies/clock.h"

namespace lagpilot {

// Monotonic wall time; epoch = construction.
class SteadyClock final : public Clock {
 public:
  SteadyClock() : start_(std::chrono::steady_clock::now()) {}
  double now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lagpilot
