#pragma once
// Command-line options shared by the subcommands that replay traces (`lagpilot sim` and
// `lagpilot tune`): how to read a trace file, how to scale it, and the simulator settings that
// can be overridden from the command line.
//
// Thread-safety: call add_* while building the CLI and the rest from the command's thread.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "policies/guards.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "sim/trace.h"
#include "sim/trace_reader.h"

namespace lagpilot::cli {

// --format, --metric, --event-bin, --companion, --per-worker-rate, --speedup, --peak-load.
struct TraceOptions {
  sim::TraceLoadOptions load;
  double speedup = 1.0;    // compress the trace's time by this factor
  double peak_load = 0.0;  // > 0: scale rates so the peak is this x capacity(max_workers)
};

// Registers the options on `app`; they write into *options (kept alive by the shared_ptr).
void add_trace_options(CLI::App& app, const std::shared_ptr<TraceOptions>& options);

// Loads `path` with the load options, then compresses it by `speedup` and scales it to
// peak_load x config.model.capacity(guards.max_workers). `info`, when given, describes the
// result (notes: speedup, peak_load). Throws sim::TraceError (file:line) or
// std::invalid_argument.
sim::Trace load_scaled_trace(const std::string& path, const TraceOptions& options,
                             const sim::SimConfig& config, const GuardConfig& guards,
                             sim::TraceInfo* info = nullptr);

// --fidelity, --tick, --slo: simulator settings that override the config file's (its "sim",
// and its top-level "lag_slo" for --slo) in the cli::sim_config() they are applied to.
struct SimOverrides {
  std::string fidelity;  // "" = keep
  double tick = 0.0;     // <= 0 = keep
  int64_t slo = -1;      // messages; < 0 = keep

  void apply(sim::SimConfig& config) const;
};

void add_sim_overrides(CLI::App& app, const std::shared_ptr<SimOverrides>& overrides);

}  // namespace lagpilot::cli
