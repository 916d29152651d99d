#pragma once
// The fleet simulator: a consumer group of R instances (pods) sharing P partitions, each running
// the chosen pool policy between its guards, with a replica policy (sim/replica_policy.h) above.
//
// Model:
//   - Arrivals: simulate()'s own generator (make_tick_arrivals), so the fleet sees the same
//     arrivals as the single-instance simulator. Each arrival chunk (a message, or in batch
//     fidelity a batch: the messages of one partition fetched together) goes to one partition,
//     drawn from its own stream with weights 1 / (p + 1)^skew (skew 0: uniform).
//   - Partitions are the unit of parallelism across instances: every partition belongs to one
//     member at a time (range or round-robin assignment over the members, in pod order), and its
//     messages wait in that member's fetch buffer (FIFO over its partitions, in arrival order).
//     Inside an instance the pool takes them in that order (key ordering: one partition may keep
//     many workers busy), so the pool policy scales as in the single simulator; an instance
//     without partitions has nothing to do, which is how partitions cap the useful replicas.
//   - Each instance is a ConsumerModel fed from its buffer whenever it has an idle worker (at an
//     arrival, at each of its own events and after each one-worker step of a resize), driven by
//     the SAME ControlLoop, policy and guards as simulate(), on an Observation built the same way
//     (its lag = its buffer + what its model holds). With one instance and a static replica
//     policy this is, step for step, simulate()'s queue: the KPIs are identical (tested).
//   - Pods: a scale-up creates pods that join the group pod_start_seconds later (initial pods are
//     members at t = 0, with initial_workers productive at once, like simulate()'s pool). A
//     scale-down removes pods not yet started first, then the newest members, which leave at
//     once: their buffered messages go to the new owners and their busy workers finish the
//     message in hand (a graceful leave), then the pod is gone.
//   - Rebalances: every membership change (joins and leaves at the same time count once)
//     reassigns the partitions and pauses every member for rebalance_seconds (stop-the-world,
//     as in the eager protocol): no new message starts, messages in hand finish. A change during
//     a pause starts a new rebalance and extends the pause. The default, 5 s, is one join round
//     on the mock cluster, which holds a membership change's JoinGroup for session.timeout.ms
//     - 1 s (the 6 s session timeout of the docs and tests; the kafka test
//     RebalanceDrainsBeforeHandingPartitionsOver prints the measured join, two rounds of it
//     under cooperative-sticky).
//   - KPIs: simulate()'s, over the whole group (lag = every buffer and model; worker-seconds =
//     the sum of the pools; scale actions and reversals summed over instances), plus
//     replica-seconds (pods alive, starting ones included), rebalances and time rebalancing.
//     Conservation holds per instance (received = processed + final lag + handed over) and in
//     total (arrived = processed + final lag); both are checked at the end of every run.
//
// Thread-safety: simulate_fleet() is a pure function of its arguments; runs may go in parallel.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace lagpilot::sim {

struct FleetConfig {
  // Partitions of the topic (0: SimConfig::partitions).
  int partitions = 0;
  // Zipf exponent of the partitions' shares of the arrivals: partition p gets 1 / (p + 1)^skew
  // of the weight (0: even; 1: partition 0 gets twice partition 1's share).
  double skew = 0.0;
  std::string assignment = "range";  // "range" or "roundrobin"
  // Replica policy: "static", "keda-recommended" or "keda-lag" (sim/replica_policy.h), and its
  // parameters (KedaParams keys for the keda ones).
  std::string replica_policy = "static";
  nlohmann::json replica_params = nlohmann::json::object();
  int replicas = 1;                 // pods at t = 0 (and the static policy's count)
  int min_replicas = 1;             // >= 1
  int max_replicas = 0;             // 0: the partition count
  double pod_start_seconds = 30.0;  // a new pod joins the group this long after it was asked for
  double rebalance_seconds = 5.0;   // every member pauses this long per membership change
  // The recommended replicas' backlog drain time (the runtime's catch-up, 60 s by default).
  double catch_up_seconds = 60.0;

  // Reads a "fleet" object; unknown keys and bad values throw ConfigError naming the field.
  static FleetConfig from_json(const nlohmann::json& j, const std::string& path = "fleet");
  nlohmann::json to_json() const;
  // Throws ConfigError ("fleet.replicas: ...") for values from_json would refuse; checks the
  // replica bounds against the partitions once they are resolved.
  void validate(int resolved_partitions, const std::string& path = "fleet") const;
  int resolved_partitions(const SimConfig& sim) const {
    return partitions > 0 ? partitions : sim.partitions;
  }
};

struct FleetKpis {
  double replica_seconds = 0.0;  // pods alive (starting, member or draining) over time
  double mean_replicas = 0.0;
  int max_replicas = 0;
  int replica_actions = 0;         // replica-policy decisions that changed the pod count
  int pods_started = 0;            // pods created after t = 0
  int rebalances = 0;              // membership changes (same-time changes once)
  double rebalance_seconds = 0.0;  // time during which the members were paused
};

// One pod's account. received = arrivals to its partitions + messages handed to it at
// rebalances; handed_over = its buffered messages moved to other members.
struct InstanceSummary {
  int pod = 0;
  double joined = -1.0;  // s; -1: never joined (removed while starting)
  double left = -1.0;    // s; -1: still a member at the end
  int64_t received = 0;
  int64_t handed_over = 0;
  int64_t processed = 0;
  int64_t final_lag = 0;
  double worker_seconds = 0.0;
  int scale_actions = 0;
};

struct FleetSeriesPoint {
  double t = 0.0;
  double arrival_rate = 0.0;    // messages/s since the previous point
  double processed_rate = 0.0;  // messages/s since the previous point
  int64_t lag = 0;              // group lag at t
  int workers = 0;              // sum of the pools during the tick that ends at t
  int replicas = 0;             // pods alive during that tick (starting ones included)
  int members = 0;              // pods in the group
  bool rebalancing = false;     // the members were paused at some time in that tick
};

struct FleetResult {
  std::string label;           // e.g. "threshold + keda-recommended"
  std::string policy;          // the pool policy's name
  std::string replica_policy;  // FleetConfig::replica_policy
  std::string fidelity;
  int partitions = 0;
  Kpis kpis;  // over the group, as simulate()'s
  FleetKpis fleet;
  std::vector<InstanceSummary> instances;  // every pod, in creation order
  std::vector<FleetSeriesPoint> series;    // empty unless SimConfig::record_series
};

// Runs the fleet over `trace`: pool policy `spec` in every instance, under `guards`. Throws
// std::invalid_argument / ConfigError for bad input, std::logic_error if conservation fails.
FleetResult simulate_fleet(const Trace& trace, const PolicySpec& spec, const GuardConfig& guards,
                           const SimConfig& config, const FleetConfig& fleet);

// KPI table (one row per run) with the fleet columns; JSON of the runs.
std::string format_fleet_table(const std::vector<FleetResult>& runs);
nlohmann::json to_json(const FleetResult& run);

}  // namespace lagpilot::sim
