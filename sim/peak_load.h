#pragma once
// How far to scale a trace's rates before a simulation. A recorded trace and the simulated
// consumer rarely match: a trace whose peak stays below what the minimum pool already processes
// gives no policy a decision to make (every policy sits at min workers, every row of the KPI
// table is the same), and one far above what the maximum pool processes pins every policy at
// max workers with the same unavoidable lag. Both look as if the policies did nothing. Unless
// the user chose a scale (--peak-load N, or 0 for the trace's absolute rates), such a trace is
// scaled so that its peak is kAutomaticPeakLoad x the capacity at max workers, and the user is
// told so in one line.
//
// Thread-safety: pure functions.

#include <string>

namespace lagpilot::sim {

// The peak, as a multiple of the capacity at max workers, that an automatic scaling aims at:
// above the maximum pool for a while, so that the policies differ in how they ride the peak.
inline constexpr double kAutomaticPeakLoad = 1.2;
// A trace whose peak is above this multiple of the capacity at max workers saturates every
// policy for most of its peak; it is scaled automatically.
inline constexpr double kSaturatingPeakLoad = 2.0;

struct PeakLoadChoice {
  double peak_load = 0.0;  // > 0: scale the rates so the peak is this x capacity(max workers);
                           // 0: keep the trace's rates
  bool automatic = false;  // chosen by choose_peak_load, not asked for
  std::string note;        // when automatic: one line saying so and naming --peak-load 0
};

// `requested`: < 0 when the user chose nothing, 0 for absolute rates, > 0 for that multiple
// (both kept as they are). Otherwise the trace is scaled to kAutomaticPeakLoad when its peak
// (messages/s) is at or below capacity_at_min (the consumer's messages/s at min_workers) or
// above kSaturatingPeakLoad x capacity_at_max (at max_workers), and kept otherwise. A trace
// without arrivals (peak 0) is kept: there is nothing to scale.
PeakLoadChoice choose_peak_load(double requested, double trace_peak, double capacity_at_min,
                                double capacity_at_max, int min_workers, int max_workers);

}  // namespace lagpilot::sim
