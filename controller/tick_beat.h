#pragma once
// Keeps the control loop on a fixed beat: tick k is due at start + k * tick_seconds on the
// control clock. A tick that starts more than 5 % of a period after it was due is late, and says
// why: the previous tick ran past the due time, or the control thread woke late (CPU
// contention, a stopped process). A tick more than a whole period late does not make the loop
// catch up with a burst of back-to-back ticks, whose windows would be near zero and their rates
// noise: the missed beats are skipped and counted, and the beat stays on its grid.
//
// Thread-safety: one thread (the control thread). Pure: the caller passes the clock's times.

#include "controller/metrics/tick_report.h"

namespace lagpilot {

class TickBeat {
 public:
  static constexpr double kLateFraction = 0.05;  // of a period: later than this is "late"

  TickBeat(double period_seconds, double start) : period_(period_seconds), due_(start + period_) {}

  // When the next tick is due.
  double due() const { return due_; }
  // The tick that starts at `now` (at or after due()): how late it is and why. Moves the beat on.
  TickSchedule begin(double now);
  // The tick begun last ended at `now`.
  void end(double now) { previous_end_ = now; }

 private:
  double period_;
  double due_;
  double previous_end_ = -1;  // when the previous tick ended; -1 before the first
};

}  // namespace lagpilot
