#pragma once
// The binary's reading of the config file: the library's AppConfig (controller/app_config.h),
// with the simulator's "sim" section checked at load time, so that every subcommand refuses the
// same files (`lagpilot run` too, though it does not simulate).
//
// Thread-safety: plain functions; any thread.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "controller/app_config.h"
#include "sim/fleet_simulation.h"
#include "sim/simulation.h"

namespace lagpilot::cli {

// AppConfig::load / from_json with the "sim" check. Throw as those do.
AppConfig load_config(const std::string& path);
AppConfig config_from_json(const nlohmann::json& root);

// The simulator's settings, for every command that simulates (sim, tune, calibrate): "sim"
// through sim::SimConfig::from_json, with lag_slo from the top-level "lag_slo"
// (runtime.lag_slo) rounded down to whole messages. Lag is a whole number of messages, so
// "lag > floor(lag_slo)" counts exactly the ticks that `lagpilot run`'s "lag > lag_slo"
// counts. Throws ConfigError naming the JSON path ("sim.batch_size: ...", "sim.lag_slo:
// moved to the top level ..."); never for a config that load_config() or config_from_json()
// returned.
sim::SimConfig sim_config(const AppConfig& config);

// Also copies the top-level "shedding" (runtime.shedding, read by ShedConfig::from_json as for
// `lagpilot run`) into SimConfig::shedding.
//
// What the simulator leaves out of a "shedding" config, as one warning sentence ("" when
// nothing): its records have no key or headers, so a priority rule is ignored (and with no
// max_age_seconds the simulator sheds nothing). `lagpilot sim` and `tune` log it once.
std::string shedding_sim_warning(const sim::SimConfig& config);

// The "fleet" object inside "sim" (sim::FleetConfig::from_json, errors name "sim.fleet.KEY"),
// if the config has one: it turns `lagpilot sim` into the fleet simulator (as --fleet does).
// sim_config() leaves it out of the SimConfig.
std::optional<sim::FleetConfig> fleet_config(const AppConfig& config);

// AppConfig::to_json() with every "sim" default filled in (`lagpilot run --print-config`).
nlohmann::json config_json(const AppConfig& config);

}  // namespace lagpilot::cli
