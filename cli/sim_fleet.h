#pragma once
// `lagpilot sim --fleet`: the fleet simulator (sim/fleet_simulation.h) behind the sim command.
// Its options sit in their own help group of `lagpilot sim`; a "fleet" object inside the
// config's "sim" turns fleet mode on too, and the flags override its fields.
//
// Thread-safety: call add_fleet_options while building the CLI, the rest from its thread.

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "sim/fleet_simulation.h"
#include "sim/report.h"
#include "sim/simulation.h"

namespace lagpilot::cli {

struct FleetOptions {
  bool enabled = false;
  int partitions = 0, replicas = 1, min_replicas = 1, max_replicas = 0;
  double skew = 0, pod_start = 0, rebalance = 0, catch_up = 0;
  std::string assignment, replica_policy, replica_params;
  CLI::Option* fleet_flag = nullptr;
  std::vector<CLI::Option*> options;  // every fleet option but --fleet

  // Whether fleet mode is on (--fleet or a config "fleet" object); throws ConfigError naming a
  // fleet flag given without either.
  bool active(bool config_has_fleet) const;
  // The config's fleet (or the defaults) with the flags given applied; validated (ConfigError
  // names the flag).
  sim::FleetConfig resolve(const std::optional<sim::FleetConfig>& from_config,
                           const sim::SimConfig& sim) const;
};

void add_fleet_options(CLI::App& app, const std::shared_ptr<FleetOptions>& options);

struct FleetSimCommand {
  std::string trace_path;
  sim::TraceInfo info;
  std::vector<PolicySpec> specs;  // pool policies: one fleet run each
  GuardConfig guards;
  sim::SimConfig config;
  sim::FleetConfig fleet;
  std::string json_out, csv_out, html_out;
  int threads = 1;
};

// Runs every spec as a fleet (in parallel, results in order) and prints the fleet table, then
// writes the JSON, CSV (one row per run and series point) and HTML outputs asked for.
int run_fleet_sim(const sim::Trace& trace, const FleetSimCommand& command);

}  // namespace lagpilot::cli
