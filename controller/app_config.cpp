#include "controller/app_config.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "policies/config_reader.h"
#include "policies/policy_factory.h"

namespace lagpilot {

ConfigFileError::ConfigFileError(std::string file, std::string json_path, int line, int column,
                                 const std::string& what)
    : std::runtime_error(what),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      line_(line),
      column_(column) {}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigFileError(path, "", 0, 0, path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  // A syntax error at the 1-based byte offset `byte`, as "path:line:column: <message>".
  const auto error_at = [&](std::size_t byte, const std::string& message) {
    int line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return ConfigFileError(
        path, "", line, column,
        path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
  };
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const auto pos = what.find("parse error");
    throw error_at(e.byte, "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
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
    const std::string message =
        "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos));
    if (at == std::string::npos) throw ConfigFileError(path, "", 0, 0, path + ": " + message);
    throw error_at(at + 1, message);
  }
}

TrafficConfig TrafficConfig::from_json(const nlohmann::json& j, const std::string& path) {
  TrafficConfig c;
  JsonObjectReader r(j, path);
  r.read_enum("training_and_online_share", c.training_and_online_share,
              {"none", "cluster", "topic"});
  r.finish();
  return c;
}

nlohmann::json TrafficConfig::to_json() const {
  return {{"training_and_online_share", training_and_online_share}};
}

AppConfig AppConfig::from_json(const nlohmann::json& root, const SectionCheck& check) {
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
  if (r.has("traffic")) c.traffic = TrafficConfig::from_json(*r.raw("traffic"), "traffic");
  if (const nlohmann::json* cal = r.raw("calibration"); cal && !cal->is_null()) {
    if (!cal->is_object()) throw ConfigError("calibration", "must be a JSON object");
    c.calibration = *cal;
  }
  RuntimeConfig::read_keys(r, c.runtime);
  r.finish();
  c.make_policy();  // validates the parameters now, naming policy.params.<field>
  if (check) check(c);
  return c;
}

AppConfig AppConfig::load(const std::string& path, const SectionCheck& check) {
  const nlohmann::json root = read_json_file(path);
  try {
    return from_json(root, check);
  } catch (const ConfigError& e) {
    throw ConfigFileError(path, e.path(), 0, 0, path + ": " + e.what());
  }
}

nlohmann::json AppConfig::to_json() const {
  nlohmann::json root = nlohmann::json::object();
  root["policy"] = {{"name", policy_name}, {"params", make_policy()->params()}};
  root["guards"] = guards.to_json();
  root["sim"] = sim;
  root["http"] = http.to_json();
  root["traffic"] = traffic.to_json();
  runtime.write_keys(root);
  if (!calibration.is_null()) root["calibration"] = calibration;
  return root;
}

std::unique_ptr<Policy> AppConfig::make_policy() const {
  return lagpilot::make_policy(policy_name, policy_params, "policy.params");
}

}  // namespace lagpilot
