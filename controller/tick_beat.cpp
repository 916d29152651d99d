#include "controller/tick_beat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace lagpilot {

TickSchedule TickBeat::begin(double now) {
  TickSchedule s;
  const double due = due_;
  s.late_seconds = std::max(0.0, now - due);
  s.skipped = static_cast<int>(std::floor(s.late_seconds / period_));
  due_ += (s.skipped + 1) * period_;
  if (s.late_seconds <= kLateFraction * period_) return s;
  char text[160];
  const int n = previous_end_ > due
                    ? std::snprintf(text, sizeof text,
                                    "%.3f s late: the previous tick ran until %.3f s past due",
                                    s.late_seconds, previous_end_ - due)
                    : std::snprintf(text, sizeof text, "%.3f s late: the control thread woke late",
                                    s.late_seconds);
  s.late.assign(text, static_cast<std::size_t>(std::max(0, n)));
  if (s.skipped > 0) {
    s.late += "; " + std::to_string(s.skipped) + (s.skipped == 1 ? " tick" : " ticks") + " skipped";
  }
  return s;
}

}  // namespace lagpilot
