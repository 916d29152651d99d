#pragma once
// The charts of the HTML reports: the arrivals, lag, shed-rate and workers panels of simulated runs
// (one line per run, the lag panel on a log scale when lag runs far above the SLO) and the tuner's
// Pareto scatter of worker-seconds against seconds above the SLO. Each run has one color on
// every chart and in the legend; the oracle, a reference rather than a contender, is drawn dark.
//
// Thread-safety: pure functions; any thread.

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "sim/html_report.h"

namespace lagpilot::sim::html {

// A run labeled, or run by, "oracle".
bool is_oracle(const RunResult& r);

// One color per run, in order: the oracle's is dark, the others cycle through a palette.
std::vector<std::string> run_colors(const std::vector<RunResult>& runs);

// The color of the first run that is not the oracle.
std::string first_run_color();

// Arrivals, lag and workers panels for the runs that have a series, and between lag and workers
// a shed-rate panel (id_prefix + "shed") when a run with a series had shedding configured.
// `colors[i]` and "run-i" belong to runs[i]. Throws std::invalid_argument if the runs' series times
// differ.
void write_time_charts(std::ostringstream& out, const std::vector<const RunResult*>& runs,
                       const std::vector<std::string>& colors, int64_t lag_slo,
                       const std::string& id_prefix);

// The tune report's scatter: every evaluated configuration, the Pareto front joined, the best
// one ringed.
void write_pareto_chart(std::ostringstream& out, const TuneHtmlReport& r);

}  // namespace lagpilot::sim::html
