#pragma once
// Self-contained HTML reports of simulation and tuning runs.
//
// Each render_* function returns one complete HTML5 document with inline CSS and inline SVG
// charts and no JavaScript, fonts, images or links that need the network, so the file can be
// mailed, attached to a ticket or opened offline. Every piece of text that comes from input
// (labels, trace paths, policy parameters, titles) is HTML-escaped.
//
// Time-series charts draw at most a few thousand points per line: a long series is reduced
// to the minimum and maximum of each pixel column (see downsample_min_max), so peaks survive.
//
// Thread-safety: pure functions of their arguments; safe to call from any thread. Write the
// document with write_text_file (sim/text_file.h).

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/report.h"
#include "sim/scoreboard.h"
#include "sim/simulation.h"

namespace lagpilot::sim {

// What `lagpilot sim --html` shows.
struct SimHtmlReport {
  std::string title = "lagpilot simulation";
  TraceInfo trace;
  // The configuration the runs used (shown as a summary: tick, SLO, fidelity, model, seed...).
  SimConfig config;
  // One run per policy, all on the same trace and SimConfig. Runs with series recorded
  // (SimConfig::record_series) are charted; every run appears in the KPI table. A run labeled
  // "oracle" (if any) is the reference for the ratio columns.
  std::vector<RunResult> runs;
  // Lag SLO, messages, drawn as a line on the lag chart (normally config.lag_slo).
  int64_t lag_slo = 0;
};

// One evaluated parameter set of a tuning search.
struct TunePoint {
  nlohmann::json params;           // the policy parameters that were evaluated
  double worker_seconds = 0.0;     // worker*s (summed or averaged over the train traces)
  double seconds_above_slo = 0.0;  // s
  int scale_actions = 0;
  double objective = 0.0;        // the value the search minimized (lower is better)
  bool on_pareto_front = false;  // not dominated in (worker_seconds, seconds_above_slo)
};

// What `lagpilot tune --html` shows.
struct TuneHtmlReport {
  std::string title = "lagpilot tune";
  std::string policy;     // policy name ("pid", "threshold", ...)
  std::string objective;  // human-readable objective, e.g. "worker_s + 10 x s_above_slo + ..."
  std::vector<TunePoint> points;  // every evaluated configuration
  nlohmann::json best_params;     // the winning parameters
  // KPIs of the best parameters, one row per trace (row name = trace name/path).
  std::vector<std::pair<std::string, Kpis>> train_rows;
  std::vector<std::pair<std::string, Kpis>> test_rows;
  // Optional: series of the best configuration on one trace (charted when its series is
  // non-empty), with the trace it ran on and the lag SLO for the lag chart.
  bool has_best_run = false;
  RunResult best_run;
  TraceInfo best_run_trace;
  int64_t lag_slo = 0;
  // When set, the search found no trade-off (every configuration equally infeasible): this
  // sentence replaces the Pareto chart and table.
  std::string no_front_note;
};

// What `lagpilot sim --html` shows for several traces: the scoreboard (sim/scoreboard.h), then
// each trace's KPI table (the runs' KPIs; series are not charted).
struct ScoreboardHtmlReport {
  std::string title = "lagpilot scoreboard";
  Scoreboard board;
  SimConfig config;
  std::vector<std::pair<std::string, std::vector<RunResult>>> trace_kpis;  // (trace, runs)
};

// One complete HTML document. Throws std::invalid_argument if runs that have series disagree
// on their series times (different traces or SimConfigs).
std::string render_sim_html(const SimHtmlReport& report);
std::string render_tune_html(const TuneHtmlReport& report);
std::string render_scoreboard_html(const ScoreboardHtmlReport& report);

// --- building blocks, exposed for tests ---

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string html_escape(const std::string& text);

struct XYPoint {
  double x = 0.0;
  double y = 0.0;
};

// Reduces a polyline sorted by x to at most 2 * columns points: the x range is cut into
// `columns` equal columns and each column keeps its minimum and its maximum point, in x order
// (so the global maximum and minimum always survive and a line drawn through the result
// follows the same envelope). Returns the input unchanged when it has at most 2 * columns
// points. Throws std::invalid_argument if columns is 0.
std::vector<XYPoint> downsample_min_max(const std::vector<XYPoint>& points, std::size_t columns);

}  // namespace lagpilot::sim
