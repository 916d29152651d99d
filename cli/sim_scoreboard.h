#pragma once
// `lagpilot sim` with several --trace files: every policy on every trace (each trace loaded and
// scaled like a single one), then the multi-trace scoreboard (sim/scoreboard.h) as text, and
// with --json / --html the same as JSON or an HTML page.
//
// Thread-safety: runs on the command's thread (the runner it is given may use more).

#include <functional>
#include <string>
#include <vector>

#include "cli/trace_options.h"
#include "policies/guards.h"
#include "sim/simulation.h"

namespace lagpilot::cli {

struct ScoreboardCommand {
  std::vector<std::string> traces;
  TraceOptions trace_options;
  sim::SimConfig config;
  GuardConfig guards;
  std::string json_out;  // "" = none, "-" = stdout
  std::string html_out;
  // Also the action-budget bound per trace (sim/action_bound.h; a few oracle DPs per trace).
  bool action_bound = false;
  // Runs every requested policy (and the references) on one loaded trace, in a fixed order.
  std::function<std::vector<sim::RunResult>(const sim::Trace&)> run;
};

// Prints the scoreboard to stdout and writes the outputs; returns the exit code (0).
int run_scoreboard(const ScoreboardCommand& command);

}  // namespace lagpilot::cli
