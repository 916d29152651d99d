// FleetConfig (the "fleet" config object), the fleet KPI table and the fleet JSON.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "policies/config_reader.h"
#include "sim/fleet_simulation.h"
#include "sim/replica_policy.h"

namespace lagpilot::sim {

FleetConfig FleetConfig::from_json(const nlohmann::json& j, const std::string& path) {
  FleetConfig c;
  JsonObjectReader r(j, path);
  r.read("partitions", c.partitions, 0, 100'000);
  r.read("skew", c.skew, 0.0, 10.0);
  r.read_enum("assignment", c.assignment, {"range", "roundrobin"});
  r.read_enum("replica_policy", c.replica_policy, replica_policy_names());
  if (const nlohmann::json* p = r.raw("replica_params")) {
    if (!p->is_object()) throw ConfigError(r.path_of("replica_params"), "must be an object");
    c.replica_params = *p;
  }
  r.read("replicas", c.replicas, 1, 100'000);
  r.read("min_replicas", c.min_replicas, 1, 100'000);
  r.read("max_replicas", c.max_replicas, 0, 100'000);
  r.read("pod_start_seconds", c.pod_start_seconds, 0.0, 86'400.0);
  r.read("rebalance_seconds", c.rebalance_seconds, 0.0, 3'600.0);
  r.read("catch_up_seconds", c.catch_up_seconds, 1e-3, 86'400.0);
  r.finish();
  c.validate(c.partitions > 0 ? c.partitions : 1, path);
  return c;
}

nlohmann::json FleetConfig::to_json() const {
  return nlohmann::json{{"partitions", partitions},
                        {"skew", skew},
                        {"assignment", assignment},
                        {"replica_policy", replica_policy},
                        {"replica_params", replica_params},
                        {"replicas", replicas},
                        {"min_replicas", min_replicas},
                        {"max_replicas", max_replicas},
                        {"pod_start_seconds", pod_start_seconds},
                        {"rebalance_seconds", rebalance_seconds},
                        {"catch_up_seconds", catch_up_seconds}};
}

void FleetConfig::validate(int resolved, const std::string& path) const {
  auto in_range = [&](bool ok, const std::string& key, const std::string& what) {
    if (!ok) throw ConfigError(path + "." + key, what);
  };
  in_range(partitions >= 0 && partitions <= 100'000, "partitions", "must be in [0, 100000]");
  in_range(skew >= 0 && skew <= 10, "skew", "must be in [0, 10]");
  in_range(assignment == "range" || assignment == "roundrobin", "assignment",
           "must be range or roundrobin");
  const auto& names = replica_policy_names();
  in_range(std::find(names.begin(), names.end(), replica_policy) != names.end(), "replica_policy",
           "must be static, keda-recommended or keda-lag");
  in_range(replicas >= 1, "replicas", "must be >= 1");
  in_range(min_replicas >= 1, "min_replicas", "must be >= 1");
  in_range(max_replicas >= 0, "max_replicas", "must be >= 0 (0: the partition count)");
  in_range(pod_start_seconds >= 0 && pod_start_seconds <= 86'400, "pod_start_seconds",
           "must be in [0, 86400]");
  in_range(rebalance_seconds >= 0 && rebalance_seconds <= 3'600, "rebalance_seconds",
           "must be in [0, 3600]");
  in_range(catch_up_seconds > 0, "catch_up_seconds", "must be > 0");
  const int max = max_replicas > 0 ? max_replicas : std::max(resolved, replicas);
  in_range(min_replicas <= max, "min_replicas",
           std::to_string(min_replicas) + " above max_replicas " + std::to_string(max));
  in_range(replicas >= min_replicas && replicas <= max, "replicas",
           std::to_string(replicas) + " outside [min_replicas, max_replicas] = [" +
               std::to_string(min_replicas) + ", " + std::to_string(max) + "]");
}

std::string format_fleet_table(const std::vector<FleetResult>& runs) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-34s %12s %9s %9s %9s %11s %8s %11s %8s %6s %6s %8s %7s %9s\n",
                "run", "lag-integral", "p99-lag", "max-lag", "above-SLO", "worker-s", "mean-wk",
                "replica-s", "mean-rp", "max-rp", "rebal", "rebal-s", "scale", "final-lag");
  out << line;
  for (const FleetResult& r : runs) {
    const Kpis& k = r.kpis;
    std::snprintf(line, sizeof line,
                  "%-34s %12.4g %9lld %9lld %8.0fs %11.4g %8.2f %11.4g %8.2f %6d %6d %7.0fs %7d "
                  "%9lld\n",
                  r.label.c_str(), k.lag_integral, static_cast<long long>(k.p99_lag),
                  static_cast<long long>(k.max_lag), k.seconds_above_slo, k.worker_seconds,
                  k.mean_workers, r.fleet.replica_seconds, r.fleet.mean_replicas,
                  r.fleet.max_replicas, r.fleet.rebalances, r.fleet.rebalance_seconds,
                  k.scale_actions, static_cast<long long>(k.final_lag));
    out << line;
  }
  return out.str();
}

nlohmann::json to_json(const FleetResult& r) {
  const Kpis& k = r.kpis;
  nlohmann::json instances = nlohmann::json::array();
  for (const InstanceSummary& s : r.instances) {
    instances.push_back({{"pod", s.pod},
                         {"joined", s.joined},
                         {"left", s.left},
                         {"received", s.received},
                         {"handed_over", s.handed_over},
                         {"processed", s.processed},
                         {"final_lag", s.final_lag},
                         {"worker_seconds", s.worker_seconds},
                         {"scale_actions", s.scale_actions}});
  }
  return nlohmann::json{{"label", r.label},
                        {"policy", r.policy},
                        {"replica_policy", r.replica_policy},
                        {"fidelity", r.fidelity},
                        {"partitions", r.partitions},
                        {"kpis",
                         {{"lag_integral", k.lag_integral},
                          {"max_lag", k.max_lag},
                          {"p99_lag", k.p99_lag},
                          {"seconds_above_slo", k.seconds_above_slo},
                          {"worker_seconds", k.worker_seconds},
                          {"mean_workers", k.mean_workers},
                          {"max_workers", k.max_workers},
                          {"scale_actions", k.scale_actions},
                          {"reversals", k.reversals},
                          {"arrived", k.arrived},
                          {"processed", k.processed},
                          {"final_lag", k.final_lag},
                          {"mean_wait_seconds", k.mean_wait_seconds},
                          {"mean_service_seconds", k.mean_service_seconds},
                          {"duration_seconds", k.duration_seconds},
                          {"replica_seconds", r.fleet.replica_seconds},
                          {"mean_replicas", r.fleet.mean_replicas},
                          {"max_replicas", r.fleet.max_replicas},
                          {"replica_actions", r.fleet.replica_actions},
                          {"pods_started", r.fleet.pods_started},
                          {"rebalances", r.fleet.rebalances},
                          {"rebalance_seconds", r.fleet.rebalance_seconds}}},
                        {"instances", instances}};
}

}  // namespace lagpilot::sim
