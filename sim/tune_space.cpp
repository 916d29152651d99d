// The search space of the tuner: parameter paths into a policy's params ("steps[0].above"), the
// mapping of each parameter onto [0, 1] (linear or log, integers rounded), and the spaces
// built into each policy.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "policies/number_text.h"
#include "policies/policy_factory.h"
#include "sim/tuner.h"

namespace lagpilot::sim {
namespace {

// ---------------------------------------------------------------------------------------------
// Parameter paths: "steps[0].above" -> key "steps", index 0, key "above".

struct PathToken {
  std::string key;  // empty: an array index
  std::size_t index = 0;
};

std::vector<PathToken> parse_path(const std::string& path, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return ConfigError(where, "malformed parameter path \"" + path + "\": " + why +
                                  " (write keys joined by '.', array elements as [i], e.g. "
                                  "\"steps[0].above\")");
  };
  std::vector<PathToken> tokens;
  std::size_t i = 0;
  bool expect_key = true;
  while (i < path.size()) {
    if (expect_key) {
      std::string key;
      while (i < path.size() && (std::isalnum(static_cast<unsigned char>(path[i])) ||
                                 path[i] == '_' || path[i] == '-')) {
        key += path[i++];
      }
      if (key.empty()) throw bad("empty key at character " + std::to_string(i + 1));
      tokens.push_back(PathToken{key, 0});
      expect_key = false;
    } else if (path[i] == '.') {
      ++i;
      expect_key = true;
    } else if (path[i] == '[') {
      ++i;
      std::string digits;
      while (i < path.size() && std::isdigit(static_cast<unsigned char>(path[i]))) {
        digits += path[i++];
      }
      if (digits.empty() || i >= path.size() || path[i] != ']' || digits.size() > 6) {
        throw bad("expected [index]");
      }
      ++i;
      tokens.push_back(PathToken{"", static_cast<std::size_t>(std::stoul(digits))});
    } else {
      throw bad(std::string("unexpected '") + path[i] + "'");
    }
  }
  if (tokens.empty() || expect_key) throw bad(tokens.empty() ? "empty" : "ends with '.'");
  return tokens;
}

const nlohmann::json* find_path(const nlohmann::json& root, const std::vector<PathToken>& tokens) {
  const nlohmann::json* node = &root;
  for (const PathToken& t : tokens) {
    if (!t.key.empty()) {
      if (!node->is_object()) return nullptr;
      auto it = node->find(t.key);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else {
      if (!node->is_array() || t.index >= node->size()) return nullptr;
      node = &(*node)[t.index];
    }
  }
  return node;
}

// Every numeric leaf path of a params object ("kp", "steps[0].above"), for error messages.
void numeric_paths(const nlohmann::json& node, const std::string& prefix,
                   std::vector<std::string>& out) {
  if (node.is_number()) {
    out.push_back(prefix);
  } else if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      numeric_paths(*it, prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      numeric_paths(node[i], prefix + "[" + std::to_string(i) + "]", out);
    }
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

bool known_policy(const std::string& name) {
  const auto names = policy_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The params make_policy() resolves `fixed` to (every default filled in).
nlohmann::json resolved_params(const std::string& policy, const nlohmann::json& fixed,
                               const std::string& path) {
  return make_policy(policy, fixed, path)->params();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TuneParam

double TuneParam::value_at(double u) const {
  u = std::clamp(u, 0.0, 1.0);
  if (integer) {
    // Equal-width buckets, one per integer (in log space for log_scale).
    double v;
    if (log_scale) {
      const double lo = std::log(min), hi = std::log(max + 1.0);
      v = std::floor(std::exp(lo + u * (hi - lo)) + 1e-9);
    } else {
      v = min + std::floor(u * (max - min + 1.0));
    }
    return std::clamp(v, min, max);
  }
  if (u <= 0.0) return min;
  if (u >= 1.0) return max;
  const double v = log_scale ? std::exp(std::log(min) + u * (std::log(max) - std::log(min)))
                             : min + u * (max - min);
  // 6 significant digits: configs read 5000 rather than 5000.000000000004, and points closer
  // than that count as one configuration.
  return std::clamp(std::strtod(text::general(v, 6).c_str(), nullptr), min, max);
}

double TuneParam::position_of(double value) const {
  double u;
  if (integer) {
    const double v = std::round(value);
    if (log_scale) {
      const double lo = std::log(min), hi = std::log(max + 1.0);
      const double mid = 0.5 * (std::log(std::max(v, min)) + std::log(std::max(v, min) + 1.0));
      u = (mid - lo) / (hi - lo);
    } else {
      u = (v - min + 0.5) / (max - min + 1.0);
    }
  } else if (log_scale) {
    u = value > 0.0 ? (std::log(value) - std::log(min)) / (std::log(max) - std::log(min)) : 0.0;
  } else {
    u = (value - min) / (max - min);
  }
  return std::isfinite(u) ? std::clamp(u, 0.0, 1.0) : 0.5;
}

// ---------------------------------------------------------------------------------------------
// TuneSpace

bool param_at(const nlohmann::json& params, const std::string& path, double& out,
              const std::string& where) {
  const nlohmann::json* node = find_path(params, parse_path(path, where));
  if (!node || !node->is_number()) return false;
  out = node->get<double>();
  return true;
}

TuneSpace TuneSpace::from_json(const nlohmann::json& j, const std::string& policy,
                               const std::string& path) {
  // A file may hold {"tune": {...}}.
  if (j.is_object() && j.size() == 1 && j.contains("tune")) {
    return from_json(j.at("tune"), policy, path);
  }
  TuneSpace space;
  JsonObjectReader r(j, path);
  if (!policy.empty() && !known_policy(policy)) {
    throw ConfigError(r.path_of("policy"),
                      "unknown policy \"" + policy + "\"; valid names: " + joined(policy_names()));
  }
  space.policy = policy;
  if (r.has("policy")) {
    std::string named;
    r.read_enum("policy", named, policy_names());
    if (!policy.empty() && named != policy) {
      throw ConfigError(r.path_of("policy"), "the space is for policy \"" + named +
                                                 "\" but policy \"" + policy + "\" is tuned");
    }
    space.policy = named;
  }
  if (space.policy.empty()) throw ConfigError(r.path_of("policy"), "is required");
  if (const nlohmann::json* fixed = r.raw("fixed")) {
    if (!fixed->is_object()) {
      throw ConfigError(r.path_of("fixed"),
                        std::string("must be a JSON object, got ") + fixed->type_name());
    }
    space.fixed = *fixed;
  }
  const nlohmann::json resolved = resolved_params(space.policy, space.fixed, r.path_of("fixed"));
  if (r.has("weights")) {
    space.weights = ObjectiveWeights::from_json(*r.raw("weights"), r.path_of("weights"));
    space.has_weights = true;
  }
  const nlohmann::json* params = r.raw("params");
  const std::string params_path = r.path_of("params");
  if (!params) throw ConfigError(params_path, "is required (the parameters to tune)");
  if (!params->is_object() || params->empty()) {
    throw ConfigError(params_path,
                      "must be a non-empty JSON object {\"name\": {\"min\", \"max\"}}");
  }
  for (auto it = params->begin(); it != params->end(); ++it) {
    const std::string p_path = params_path + "." + it.key();
    TuneParam p;
    p.name = it.key();
    double default_value = 0.0;
    if (!param_at(resolved, p.name, default_value, p_path)) {
      std::vector<std::string> known;
      numeric_paths(resolved, "", known);
      throw ConfigError(p_path, "not a numeric parameter of policy " + space.policy +
                                    " (numeric parameters: " + joined(known) + ")");
    }
    const nlohmann::json* node = find_path(resolved, parse_path(p.name, p_path));
    const bool integer_param = node->is_number_integer();
    JsonObjectReader pr(it.value(), p_path);
    for (const char* required : {"min", "max"}) {
      if (!pr.has(required)) throw ConfigError(pr.path_of(required), "is required");
    }
    pr.read("min", p.min);
    pr.read("max", p.max);
    pr.read("log", p.log_scale);
    p.integer = integer_param;
    pr.read("integer", p.integer);
    pr.read("points", p.points, 1, 1'000'000);
    pr.finish();
    if (integer_param && !p.integer) {
      throw ConfigError(pr.path_of("integer"),
                        "parameter " + p.name + " is an integer; it cannot be tuned as a real");
    }
    if (!(p.min < p.max)) {
      throw ConfigError(pr.path_of("max"),
                        "must be > min (" + text::num(p.min) + "), got " + text::num(p.max));
    }
    if (p.log_scale && !(p.min > 0.0)) {
      throw ConfigError(pr.path_of("min"),
                        "must be > 0 with \"log\": true, got " + text::num(p.min));
    }
    if (p.integer) {
      for (const char* key : {"min", "max"}) {
        const double v = std::string(key) == "min" ? p.min : p.max;
        if (v != std::floor(v) || std::fabs(v) > 1e15) {
          throw ConfigError(pr.path_of(key),
                            "must be an integer for an integer parameter, got " + text::num(v));
        }
      }
    }
    space.params.push_back(p);
  }
  r.finish();
  return space;
}

nlohmann::json TuneSpace::to_json() const {
  nlohmann::json params_json = nlohmann::json::object();
  for (const TuneParam& p : params) {
    nlohmann::json entry = {{"min", p.min}, {"max", p.max}};
    if (p.log_scale) entry["log"] = true;
    if (p.integer) entry["integer"] = true;
    if (p.points > 0) entry["points"] = p.points;
    params_json[p.name] = entry;
  }
  nlohmann::json j = {{"policy", policy}, {"fixed", fixed}, {"params", params_json}};
  if (has_weights) j["weights"] = weights.to_json();
  return j;
}

TuneSpace TuneSpace::default_for(const std::string& policy, const GuardConfig& guards) {
  const int lo = guards.min_workers;
  const int hi = std::max(guards.min_workers, guards.max_workers);
  nlohmann::json spec = {{"policy", policy}};
  nlohmann::json params = nlohmann::json::object();
  auto workers_range = [](int a, int b) {
    return nlohmann::json{{"min", a}, {"max", b}, {"integer", true}};
  };
  if (policy == "static") {
    if (hi > lo) params["workers"] = workers_range(lo, hi);
  } else if (policy == "pid") {
    spec["fixed"] = {{"metric", "lag"}};
    params["setpoint"] = {{"min", 100.0}, {"max", 10000.0}, {"log", true}};
    params["kp"] = {{"min", 1e-4}, {"max", 2e-2}, {"log", true}};
    params["ki"] = {{"min", 1e-6}, {"max", 1e-3}, {"log", true}};
    params["kd"] = {{"min", 1e-4}, {"max", 2e-2}, {"log", true}};
  } else if (policy == "threshold") {
    // One step above a base level; the step's "below" follows from the hysteresis.
    const int mid = lo + (hi - lo) / 2;
    spec["fixed"] = {{"base_workers", lo},
                     {"steps", nlohmann::json::array({{{"above", 5000.0}, {"workers", hi}}})}};
    params["steps[0].above"] = {{"min", 200.0}, {"max", 50000.0}, {"log", true}};
    params["hysteresis"] = {{"min", 0.1}, {"max", 0.95}};
    if (mid > lo) params["base_workers"] = workers_range(lo, mid);
    if (hi > mid + 1) params["steps[0].workers"] = workers_range(mid + 1, hi);
  } else if (policy == "hpa") {
    params["target_lag_per_worker"] = {{"min", 100.0}, {"max", 20000.0}, {"log", true}};
    params["tolerance"] = {{"min", 0.0}, {"max", 0.5}};
    params["scale_down_stabilization_seconds"] = {{"min", 0.0}, {"max", 600.0}};
    params["sync_period_seconds"] = {{"min", 1.0}, {"max", 60.0}, {"log", true}};
  } else if (policy == "keda") {
    params["lag_threshold"] = {{"min", 100}, {"max", 20000}, {"log", true}, {"integer", true}};
    params["polling_interval_seconds"] = {{"min", 1.0}, {"max", 120.0}, {"log", true}};
    params["scale_down_stabilization_seconds"] = {{"min", 0.0}, {"max", 600.0}};
    params["cooldown_period_seconds"] = {{"min", 30.0}, {"max", 900.0}, {"log", true}};
  } else if (policy == "model" && known_policy("model")) {
    // scale_down_utilization stays below target_utilization everywhere in the box.
    params["target_utilization"] = {{"min", 0.5}, {"max", 0.95}};
    params["scale_down_utilization"] = {{"min", 0.2}, {"max", 0.45}};
    params["catch_up_seconds"] = {{"min", 10.0}, {"max", 600.0}, {"log", true}};
    params["peak_fraction"] = {{"min", 0.6}, {"max", 1.0}};
  } else if (policy == "hybrid" && known_policy("hybrid")) {
    // scale_down_utilization stays at or below target_utilization everywhere in the box.
    params["target_utilization"] = {{"min", 0.95}, {"max", 1.0}};
    params["scale_down_utilization"] = {{"min", 0.8}, {"max", 0.95}};
    params["scale_down_cost"] = {{"min", 30.0}, {"max", 2000.0}, {"log", true}};
    params["lag_allowance"] = {{"min", 500.0}, {"max", 8000.0}, {"log", true}};
    params["slow_rate_filter_seconds"] = {{"min", 5.0}, {"max", 300.0}, {"log", true}};
  } else {
    const auto names = policy_names();
    if (!known_policy(policy)) {
      throw ConfigError("--policy",
                        "unknown policy \"" + policy + "\"; valid names: " + joined(names));
    }
    throw ConfigError("--policy", "no built-in search space for policy \"" + policy +
                                      "\": give one with --space (see docs/tune.md)");
  }
  if (params.empty()) {
    throw ConfigError("--policy", "nothing to tune for policy \"" + policy +
                                      "\" with min_workers == max_workers");
  }
  spec["params"] = params;
  return from_json(spec, policy, "default space");
}

std::vector<double> TuneSpace::values_at(const std::vector<double>& u) const {
  if (u.size() != params.size()) throw std::invalid_argument("TuneSpace::values_at: wrong size");
  std::vector<double> values(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) values[i] = params[i].value_at(u[i]);
  return values;
}

nlohmann::json TuneSpace::params_for(const std::vector<double>& values) const {
  if (values.size() != params.size()) {
    throw std::invalid_argument("TuneSpace::params_for: wrong size");
  }
  nlohmann::json out = fixed.is_object() ? fixed : nlohmann::json::object();
  nlohmann::json resolved;  // built on first need
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<PathToken> tokens = parse_path(params[i].name, "tune.params");
    if (!out.contains(tokens[0].key)) {
      if (resolved.is_null()) resolved = resolved_params(policy, fixed, "tune.fixed");
      out[tokens[0].key] = resolved.at(tokens[0].key);
    }
    nlohmann::json* node = &out;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      if (!tokens[t].key.empty()) {
        node = &(*node)[tokens[t].key];
      } else {
        if (!node->is_array() || tokens[t].index >= node->size()) {
          throw ConfigError("tune.params." + params[i].name, "no such array element");
        }
        node = &(*node)[tokens[t].index];
      }
    }
    if (params[i].integer) {
      *node = static_cast<int64_t>(std::llround(values[i]));
    } else {
      *node = values[i];
    }
  }
  return out;
}

std::vector<double> TuneSpace::position_of(const nlohmann::json& p) const {
  std::vector<double> u(params.size(), 0.5);
  for (std::size_t i = 0; i < params.size(); ++i) {
    double v = 0.0;
    if (param_at(p, params[i].name, v, "tune.params." + params[i].name)) {
      u[i] = params[i].position_of(v);
    }
  }
  return u;
}

std::string TuneSpace::describe(const std::vector<double>& values) const {
  std::string s;
  for (std::size_t i = 0; i < params.size() && i < values.size(); ++i) {
    if (!s.empty()) s += ' ';
    s += params[i].name + "=" +
         (params[i].integer ? std::to_string(std::llround(values[i])) : text::num(values[i]));
  }
  return s;
}

}  // namespace lagpilot::sim
