#pragma once
// Time, injected. The control loop and everything it calls take time as a value or through a
// Clock&; nothing reads the system clock on its own. SteadyClock is for the live runtime;
// ManualClock is for tests and the simulator. Both are safe to read from any thread.

#include <atomic>
#include <chrono>

namespace lagpilot {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since this clock's epoch.
  virtual double now() const = 0;
};

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

// Time that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(double start = 0.0) : now_(start) {}
  double now() const override { return now_.load(std::memory_order_relaxed); }
  void set(double t) { now_.store(t, std::memory_order_relaxed); }
  void advance(double dt) { set(now() + dt); }

 private:
  std::atomic<double> now_;  // atomic: tests advance it while a runtime thread reads it
};

}  // namespace lagpilot
