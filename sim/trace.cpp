#include "sim/trace.h"

#include <algorithm>
#include <numeric>

namespace lagpilot::sim {

double Trace::peak_rate() const {
  return rates.empty() ? 0.0 : *std::max_element(rates.begin(), rates.end());
}

double Trace::mean_rate() const {
  return rates.empty() ? 0.0 : std::accumulate(rates.begin(), rates.end(), 0.0) / rates.size();
}

double Trace::total_messages() const {
  return std::accumulate(rates.begin(), rates.end(), 0.0) * bin_seconds;
}

}  // namespace lagpilot::sim
