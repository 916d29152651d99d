#pragma once
// Command-line options shared by the subcommands that replay traces (`lagpilot sim` and
// `lagpilot tune`): how to read a trace file, how to scale it, and the simulator settings that
// can be overridden from the command line.
//
// Thread-safety: call add_* while building the CLI and the rest from the command's thread.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
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
  double speedup = 1.0;     // compress the trace's time by this factor
  double peak_load = -1.0;  // > 0: scale rates so the peak is this x capacity(max_workers);
                            // 0: keep the trace's rates; < 0 (not given): sim::choose_peak_load
};

// Registers the options on `app`; they write into *options (kept alive by the shared_ptr).
void add_trace_options(CLI::App& app, const std::shared_ptr<TraceOptions>& options);

// Loads `path` with the load options, then compresses it by `speedup` and scales it to
// peak_load x config.model.capacity(guards.max_workers); without --peak-load, as
// sim::choose_peak_load decides, printing its one-line note on stdout. `info`, when given,
// describes the result (notes: speedup, peak_load, peak_load_automatic). Throws
// sim::TraceError (file:line) or std::invalid_argument.
sim::Trace load_scaled_trace(const std::string& path, const TraceOptions& options,
                             const sim::SimConfig& config, const GuardConfig& guards,
                             sim::TraceInfo* info = nullptr);

// With --per-worker-rate and a companion, the lag recording's arrivals are reconstructed with
// that rate per worker, so the simulated consumer must process that rate per worker too, or
// the replay measures a different consumer than the one recorded: sets
// config.model.service_mean_seconds to 1 / per_worker_rate. A config file that sets
// sim.model.service_mean_seconds to another rate is refused with a ConfigError naming both
// numbers (`sim_section` is the config's "sim" as written, `config_path` names the file).
void match_model_to_reconstruction(const TraceOptions& options, const nlohmann::json& sim_section,
                                   const std::string& config_path, sim::SimConfig& config);

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
