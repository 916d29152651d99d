#pragma once
// Arrival traces: what the simulator replays and what `lagpilot produce --trace` paces.
// A Trace is a piecewise-constant arrival rate: bin i covers
// [i * bin_seconds, (i + 1) * bin_seconds) of simulated time and carries rates[i] messages/s.
// Plain value type; readers are pure functions (thread-safe).

#include <string>
#include <vector>

namespace lagpilot::sim {

struct Trace {
  std::string source;         // file it came from (for messages and reports)
  double start_epoch = 0.0;   // epoch seconds of the first bin, before any time scaling
  double bin_seconds = 1.0;   // width of every bin, in (scaled) seconds
  std::vector<double> rates;  // arrivals per second in each bin, >= 0

  double duration() const { return bin_seconds * static_cast<double>(rates.size()); }
  double peak_rate() const;
  double mean_rate() const;
  double total_messages() const;  // sum of rate * bin_seconds
};

}  // namespace lagpilot::sim
