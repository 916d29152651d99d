#pragma once
// Time, injected. The control loop and everything it calls take time as a value or through a
// Clock&; nothing here reads the system clock. ManualClock is for tests and the simulator; the
// live runtime's real clock is SteadyClock (controller/steady_clock.h). Safe to read from any
// thread.

#include <atomic>

namespace lagpilot {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since this clock's epoch.
  virtual double now() const = 0;
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
