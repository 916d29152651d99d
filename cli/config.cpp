#include "cli/config.h"

#include <cmath>

#include "policies/config_reader.h"

namespace lagpilot::cli {
namespace {

void check_sim_section(const AppConfig& config) {
  sim_config(config);
  fleet_config(config);
}

// "sim" without its "fleet" object (read by fleet_config()).
nlohmann::json without_fleet(const nlohmann::json& sim) {
  nlohmann::json s = sim;
  if (s.is_object()) s.erase("fleet");
  return s;
}

}  // namespace

AppConfig load_config(const std::string& path) {
  return AppConfig::load(path, check_sim_section);
}

AppConfig config_from_json(const nlohmann::json& root) {
  return AppConfig::from_json(root, check_sim_section);
}

sim::SimConfig sim_config(const AppConfig& config) {
  sim::SimConfig c = sim::SimConfig::from_json(without_fleet(config.sim), "sim");
  const double slo = config.runtime.lag_slo;  // RuntimeConfig::read_keys keeps it in [0, 1e15]
  if (!(slo >= 0.0 && slo <= 1e15)) {
    throw ConfigError("lag_slo", "must be between 0 and 1e15, got " + std::to_string(slo));
  }
  c.lag_slo = static_cast<int64_t>(std::floor(slo));
  c.shedding = config.runtime.shedding;
  return c;
}

std::string shedding_sim_warning(const sim::SimConfig& config) {
  const ShedConfig& s = config.shedding;
  if (!s.enabled || !s.has_priority_rule()) return "";
  std::string w =
      "shedding.priority: the simulator ignores the priority rule (its records have no key or "
      "headers) and sheds by age only";
  if (s.max_age_seconds <= 0) w += "; without shedding.max_age_seconds it sheds nothing";
  return w;
}

std::optional<sim::FleetConfig> fleet_config(const AppConfig& config) {
  if (!config.sim.is_object() || !config.sim.contains("fleet")) return std::nullopt;
  return sim::FleetConfig::from_json(config.sim.at("fleet"), "sim.fleet");
}

nlohmann::json config_json(const AppConfig& config) {
  nlohmann::json root = config.to_json();
  root["sim"] = sim_config(config).to_json();  // every "sim" default; lag_slo is top-level
  if (const auto fleet = fleet_config(config)) root["sim"]["fleet"] = fleet->to_json();
  return root;
}

}  // namespace lagpilot::cli
