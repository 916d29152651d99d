#include "policies/policy_factory.h"

#include "policies/hpa_policy.h"
#include "policies/hybrid_policy.h"
#include "policies/keda_policy.h"
#include "policies/model_policy.h"
#include "policies/pid_policy.h"
#include "policies/static_policy.h"
#include "policies/threshold_policy.h"

namespace lagpilot {
namespace {

// "policy.params" -> "policy.name"; "x" -> "x.name" otherwise.
std::string name_path_for(const std::string& params_path) {
  const std::string suffix = "params";
  if (params_path.size() >= suffix.size() &&
      params_path.compare(params_path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return params_path.substr(0, params_path.size() - suffix.size()) + "name";
  }
  return params_path.empty() ? "name" : params_path + ".name";
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Splits on commas that are not inside [], {} or a "string".
std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\' && i + 1 < s.size()) {
        current += c;
        current += s[++i];
        continue;
      }
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  parts.push_back(current);
  return parts;
}

}  // namespace

std::string policy_name_list() {
  std::string list;
  for (const auto& n : policy_names()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

std::vector<std::string> policy_names() {
  return {"static", "threshold", "pid", "hpa", "keda", "model", "hybrid"};
}

std::unique_ptr<Policy> make_policy(const std::string& name, const nlohmann::json& params,
                                    const std::string& path) {
  const nlohmann::json& p = params;
  if (name == "static") return std::make_unique<StaticPolicy>(StaticParams::from_json(p, path));
  if (name == "threshold") {
    return std::make_unique<ThresholdPolicy>(ThresholdParams::from_json(p, path));
  }
  if (name == "pid") return std::make_unique<PidPolicy>(PidParams::from_json(p, path));
  if (name == "hpa") return std::make_unique<HpaPolicy>(HpaParams::from_json(p, path));
  if (name == "keda") return std::make_unique<KedaPolicy>(KedaParams::from_json(p, path));
  if (name == "model") return std::make_unique<ModelPolicy>(ModelParams::from_json(p, path));
  if (name == "hybrid") return std::make_unique<HybridPolicy>(HybridParams::from_json(p, path));
  throw ConfigError(name_path_for(path),
                    "unknown policy \"" + name + "\"; valid names: " + policy_name_list());
}

nlohmann::json default_params(const std::string& name) {
  return make_policy(name, nlohmann::json::object(), "policy.params")->params();
}

PolicySpec parse_policy_spec(const std::string& text) {
  const std::string where = "policy spec \"" + text + "\"";
  PolicySpec spec;
  spec.label = text;
  const auto colon = text.find(':');
  spec.name = trim(text.substr(0, colon));
  if (spec.name.empty()) {
    throw ConfigError(where, "missing policy name; valid names: " + policy_name_list());
  }
  if (colon != std::string::npos) {
    const std::string args = text.substr(colon + 1);
    if (trim(args).empty()) throw ConfigError(where, "nothing after ':'");
    for (const std::string& raw_part : split_top_level(args)) {
      const std::string part = trim(raw_part);
      const auto eq = part.find('=');
      if (eq == std::string::npos) {
        // The one positional shorthand: static:N.
        if (spec.name == "static" && spec.params.empty()) {
          try {
            std::size_t used = 0;
            const long long n = std::stoll(part, &used);
            if (used != part.size()) throw std::invalid_argument(part);
            spec.params["workers"] = n;
            continue;
          } catch (const std::logic_error&) {
            throw ConfigError(where,
                              "static:N needs an integer worker count, got \"" + part + "\"");
          }
        }
        throw ConfigError(where,
                          "expected key=value, got \"" + part + "\"" +
                              (spec.name == "static" ? "" : " (only static:N takes a bare value)"));
      }
      const std::string key = trim(part.substr(0, eq));
      const std::string value = trim(part.substr(eq + 1));
      if (key.empty()) throw ConfigError(where, "empty key in \"" + part + "\"");
      if (spec.params.contains(key)) throw ConfigError(where, "key \"" + key + "\" given twice");
      nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
      spec.params[key] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
    }
  }
  try {
    make_policy(spec.name, spec.params, "policy.params");
  } catch (const ConfigError& e) {
    throw ConfigError(where, e.what());
  }
  return spec;
}

}  // namespace lagpilot
