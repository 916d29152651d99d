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

int RecommendedReplicas::update(const Observation& o, int64_t group_lag, double group_arrival_rate,
                                int max_workers, int partitions) {
  if (std::isfinite(o.processed_rate) && std::isfinite(o.busy_workers) && o.processed_rate > 0 &&
      o.busy_workers >= kMinBusyWorkers) {
    per_worker_rate_ = o.processed_rate / o.busy_workers;
    rate_measured_ = true;
  }
  auto non_negative = [](double v) { return std::isfinite(v) && v > 0 ? v : 0.0; };
  double needed = std::max(0, o.current_workers);
  if (rate_measured_) {
    const double demand = non_negative(group_arrival_rate) +
                          non_negative(static_cast<double>(group_lag)) / catch_up_seconds_;
    needed = std::min(demand / per_worker_rate_, 1e6);
  }
  const double ratio = needed / std::max(1, max_workers);
  // A ratio within 1e-9 above an integer does not round up (floating-point noise).
  const double replicas = std::ceil(ratio - 1e-9);
  return static_cast<int>(std::clamp(replicas, 1.0, static_cast<double>(std::max(1, partitions))));
}

}  // namespace lagpilot::sim
