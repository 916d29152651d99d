#pragma once
// The replica level of the fleet simulator (sim/fleet_simulation.h): how many consumer
// processes (pods) run, above the pool policy inside each.
//
// Replica policies are ordinary Policy objects (their "workers" are replicas), driven by a
// ControlLoop whose guards hold only the replica bounds, on a group-wide Observation built by
// the fleet: total_lag = the signal below, assigned_partitions = P, current_workers = the pods
// asked for so far.
//   static            fixed replicas (StaticPolicy).
//   keda-recommended  KEDA's Prometheus scaler on max over instances of
//                     lagpilot_recommended_replicas with threshold 1, through the HPA: that is
//                     KedaPolicy with lag_threshold 1 fed the recommendation as its "lag" (KEDA's
//                     HPA computes ceil(metric / threshold); the scaler caps it at partitions).
//                     config/k8s/keda-scaledobject.yaml takes the max over instances: so does the
//                     fleet.
//   keda-lag          KEDA's own Kafka scaler on the group lag (KedaPolicy, lag_threshold 1000
//                     unless given): with one worker per pod, the world without lagpilot.
//
// keda-recommended's signal comes from CapacityEstimator (policies/capacity_estimator.h), the
// estimate behind the live runtime's lagpilot_recommended_replicas, fed each member's own
// observation and the group's lag and arrival rate.
//
// Thread-safety: plain single-threaded objects, one per fleet run.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/observation.h"
#include "policies/policy.h"

namespace lagpilot::sim {

// "static", "keda-recommended", "keda-lag".
const std::vector<std::string>& replica_policy_names();

// Builds the replica policy. `params` are KedaParams keys for the keda ones (polling and
// cooldown, the HPA's behavior, lag_threshold for keda-lag) and must be empty for static,
// which holds `static_replicas`. Throws ConfigError naming `path`.
std::unique_ptr<Policy> make_replica_policy(const std::string& name, const nlohmann::json& params,
                                            int static_replicas, const std::string& path);

}  // namespace lagpilot::sim
