#include "cli/app_config.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "policies/config_reader.h"
#include "policies/policy_factory.h"
#include "sim/simulation.h"

namespace lagpilot::cli {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  // "path:line:column" of the 1-based byte offset `byte`.
  const auto where = [&](std::size_t byte) {
    int line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return path + ":" + std::to_string(line) + ":" + std::to_string(column);
  };
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const auto pos = what.find("parse error");
    throw std::runtime_error(
        where(e.byte) + ": invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond double ("1e999", found by fuzzing): nlohmann gives no offset, only
    // the text "number overflow parsing '1e999'"; point at the first occurrence of the number.
    std::string what = e.what();
    const auto pos = what.find("number overflow");
    const auto open = what.find('\'');
    const std::string number = open == std::string::npos || what.size() < open + 2
                                   ? ""
                                   : what.substr(open + 1, what.size() - open - 2);
    const std::size_t at = number.empty() ? std::string::npos : text.find(number);
    throw std::runtime_error((at == std::string::npos ? path : where(at + 1)) + ": invalid JSON: " +
                             (pos == std::string::npos ? what : what.substr(pos)));
  }
}

AppConfig AppConfig::from_json(const nlohmann::json& root) {
  AppConfig c;
  JsonObjectReader r(root, "");
  {
    JsonObjectReader policy = r.child("policy");
    policy.read_enum("name", c.policy_name, policy_names());
    if (const nlohmann::json* p = policy.raw("params")) c.policy_params = *p;
    policy.finish();
  }
  if (r.has("guards")) c.guards = GuardConfig::from_json(*r.raw("guards"), "guards");
  if (const nlohmann::json* s = r.raw("sim")) {
    if (!s->is_object()) throw ConfigError("sim", "must be a JSON object");
    c.sim = *s;
  }
  if (r.has("http")) c.http = HttpApiConfig::from_json(*r.raw("http"), "http");
  if (const nlohmann::json* cal = r.raw("calibration"); cal && !cal->is_null()) {
    if (!cal->is_object()) throw ConfigError("calibration", "must be a JSON object");
    c.calibration = *cal;
  }
  RuntimeConfig::read_keys(r, c.runtime);
  r.finish();
  c.make_policy();  // validates the parameters now, naming policy.params.<field>
  c.sim_config();   // and "sim", naming sim.<field>
  return c;
}

sim::SimConfig AppConfig::sim_config() const {
  sim::SimConfig c = sim::SimConfig::from_json(sim, "sim");
  const double slo = runtime.lag_slo;  // RuntimeConfig::read_keys keeps it in [0, 1e15]
  if (!(slo >= 0.0 && slo <= 1e15)) {
    throw ConfigError("lag_slo", "must be between 0 and 1e15, got " + std::to_string(slo));
  }
  c.lag_slo = static_cast<int64_t>(std::floor(slo));
  return c;
}

AppConfig AppConfig::load(const std::string& path) {
  const nlohmann::json root = read_json_file(path);
  try {
    return from_json(root);
  } catch (const ConfigError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

nlohmann::json AppConfig::to_json() const {
  nlohmann::json root = nlohmann::json::object();
  root["policy"] = {{"name", policy_name}, {"params", make_policy()->params()}};
  root["guards"] = guards.to_json();
  root["sim"] = sim_config().to_json();  // every "sim" default; lag_slo is top-level
  root["http"] = http.to_json();
  runtime.write_keys(root);
  if (!calibration.is_null()) root["calibration"] = calibration;
  return root;
}

std::unique_ptr<Policy> AppConfig::make_policy() const {
  return lagpilot::make_policy(policy_name, policy_params, "policy.params");
}

}  // namespace lagpilot::cli
