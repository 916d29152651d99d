#include "cli/config.h"

#include <cmath>

#include "policies/config_reader.h"

namespace lagpilot::cli {
namespace {

void check_sim_section(const AppConfig& config) {
  sim_config(config);
}

}  // namespace

AppConfig load_config(const std::string& path) {
  return AppConfig::load(path, check_sim_section);
}

AppConfig config_from_json(const nlohmann::json& root) {
  return AppConfig::from_json(root, check_sim_section);
}

sim::SimConfig sim_config(const AppConfig& config) {
  sim::SimConfig c = sim::SimConfig::from_json(config.sim, "sim");
  const double slo = config.runtime.lag_slo;  // RuntimeConfig::read_keys keeps it in [0, 1e15]
  if (!(slo >= 0.0 && slo <= 1e15)) {
    throw ConfigError("lag_slo", "must be between 0 and 1e15, got " + std::to_string(slo));
  }
  c.lag_slo = static_cast<int64_t>(std::floor(slo));
  return c;
}

nlohmann::json config_json(const AppConfig& config) {
  nlohmann::json root = config.to_json();
  root["sim"] = sim_config(config).to_json();  // every "sim" default; lag_slo is top-level
  return root;
}

}  // namespace lagpilot::cli
