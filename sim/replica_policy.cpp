#include "sim/replica_policy.h"

#include <algorithm>
#include <cmath>

#include "policies/config_reader.h"
#include "policies/keda_policy.h"
#include "policies/static_policy.h"

namespace lagpilot::sim {

const std::vector<std::string>& replica_policy_names() {
  static const std::vector<std::string> names{"static", "keda-recommended", "keda-lag"};
  return names;
}

std::unique_ptr<Policy> make_replica_policy(const std::string& name, const nlohmann::json& params,
                                            int static_replicas, const std::string& path) {
  const nlohmann::json p = params.is_null() ? nlohmann::json::object() : params;
  if (!p.is_object()) throw ConfigError(path, "must be an object");
  if (name == "static") {
    if (!p.empty()) {
      throw ConfigError(path, "the static replica policy takes no parameters (set replicas)");
    }
    StaticParams s;
    s.workers = static_replicas;
    return std::make_unique<StaticPolicy>(s);
  }
  if (name == "keda-recommended" || name == "keda-lag") {
    nlohmann::json keda = p;
    if (name == "keda-recommended") {
      if (keda.contains("lag_threshold")) {
        throw ConfigError(path + ".lag_threshold",
                          "keda-recommended scales on lagpilot_recommended_replicas with "
                          "threshold 1; lag_threshold is for keda-lag");
      }
      keda["lag_threshold"] = 1;
    }
    return std::make_unique<KedaPolicy>(KedaParams::from_json(keda, path));
  }
  std::string list;
  for (const std::string& n : replica_policy_names()) list += (list.empty() ? "" : ", ") + n;
  throw ConfigError(path, "unknown replica policy \"" + name + "\" (one of " + list + ")");
}

}  // namespace lagpilot::sim
