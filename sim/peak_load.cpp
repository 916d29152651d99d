#include "sim/peak_load.h"

#include <cmath>

#include "policies/number_text.h"

namespace lagpilot::sim {

PeakLoadChoice choose_peak_load(double requested, double trace_peak, double capacity_at_min,
                                double capacity_at_max, int min_workers, int max_workers) {
  PeakLoadChoice choice;
  if (requested >= 0) {
    choice.peak_load = requested;
    return choice;
  }
  if (!(trace_peak > 0) || !std::isfinite(trace_peak)) return choice;
  std::string why;
  if (trace_peak <= capacity_at_min) {
    why = "its peak " + text::human(trace_peak, 3) + "/s is below the " +
          text::human(capacity_at_min, 3) + "/s of " + std::to_string(min_workers) +
          " workers: no policy would have a decision to make";
  } else if (trace_peak > kSaturatingPeakLoad * capacity_at_max) {
    why = "its peak " + text::human(trace_peak, 3) + "/s is " +
          text::fixed(trace_peak / capacity_at_max, 1) + "x the " +
          text::human(capacity_at_max, 3) + "/s of " + std::to_string(max_workers) +
          " workers: every policy would sit at max workers";
  } else {
    return choice;
  }
  choice.peak_load = kAutomaticPeakLoad;
  choice.automatic = true;
  choice.note = "scaled to peak " + text::general(kAutomaticPeakLoad, 3) +
                "x capacity at max workers (" + why + "); --peak-load 0 keeps absolute rates";
  return choice;
}

}  // namespace lagpilot::sim
