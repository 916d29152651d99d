#pragma once
// The fleet simulator's HTML page (`lagpilot sim --fleet --html`): one self-contained page with
// the arrivals, the group lag (with the SLO), the replicas and the workers of every run over
// time (rebalancing ticks shaded on the replicas chart), and the KPI table with the fleet
// columns. Charts are the shared SVG charts (sim/svg_chart.h).
//
// Thread-safety: a pure function; any thread.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/fleet_simulation.h"

namespace lagpilot::sim {

struct FleetHtmlReport {
  std::string title = "lagpilot fleet simulation";
  std::string summary;  // one line under the title (trace, partitions, replica policy ...)
  std::vector<FleetResult> runs;
  int64_t lag_slo = 0;
};

std::string render_fleet_html(const FleetHtmlReport& report);

}  // namespace lagpilot::sim
