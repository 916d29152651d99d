#pragma once
// The `keda` policy: KEDA's Kafka scaler feeding the Kubernetes HPA.
//
// Thread-safety: like every Policy, not thread-safe; the ControlLoop serialises calls.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "policies/hpa_policy.h"
#include "policies/policy.h"

namespace lagpilot {

struct KedaParams {
  // lagThreshold: the AverageValue target per worker. KEDA's own default is 10, sized for
  // consumers where one message is a lot of work; for a message-level consumer doing ~100
  // msg/s per worker we default to 1000 (~10 s of work per worker).
  int64_t lag_threshold = 1000;
  // activationLagThreshold: the scaler is active while total lag > this (KEDA default 0).
  int64_t activation_lag_threshold = 0;
  // pollingInterval: the lag is read (and activity checked) every 30 s (KEDA default).
  double polling_interval_seconds = 30.0;
  // cooldownPeriod: inactive this long after the last active poll -> scale to idle (300 s).
  double cooldown_period_seconds = 300.0;
  // initialCooldownPeriod: a scaler that was never active goes idle this long after the first
  // tick (KEDA default 0: at once).
  double initial_cooldown_period_seconds = 0.0;
  // allowIdleConsumers: false caps the desired count at the partition count (KEDA default).
  bool allow_idle_consumers = false;
  // The HPA that KEDA creates (its default behavior unless configured).
  HpaBehavior behavior;

  // Reads the keys above plus the HpaBehavior keys, flat; throws ConfigError naming the field.
  static KedaParams from_json(const nlohmann::json& j, const std::string& path);
  nlohmann::json to_json() const;
};

// Algorithm: KEDA (2.x) Kafka scaler + the HPA it manages.
//   Every polling_interval_seconds (and at the first tick), the scaler reads
//     total lag = sum of Observation::partition_lag (total_lag when no partitions listed);
//     if !allow_idle_consumers and assigned_partitions > 0 and
//        total / lag_threshold > partitions (integer division, as in KEDA):
//        metric = partitions * lag_threshold            (caps the HPA at the partition count)
//     active = total lag > activation_lag_threshold.
//   The metric is cached between polls (like KEDA with useCachedMetrics: true; with KEDA's
//   default the HPA's 15 s queries reach Kafka directly: set polling_interval_seconds to the
//   sync period to model that).
//   Every sync_period_seconds the HPA (HpaAlgorithm, shared with `hpa`) computes
//     desired = ceil(metric / lag_threshold) with tolerance, stabilization and rate limits.
//   Scale to zero, modelled: KEDA scales a workload with minReplicaCount 0 to zero once its
//   triggers have been inactive for cooldown_period_seconds, bypassing the HPA, and back to
//   one replica at the first active poll. A worker pool does not go to zero, so "zero" here
//   is obs.min_workers: inactive for the cooldown -> propose min_workers at once (no HPA
//   stabilization, no rate limit) and skip HPA syncs; active again -> the HPA resumes from
//   the pool size at its next sync. Output clamped to [obs.min_workers, obs.max_workers].
class KedaPolicy : public Policy {
 public:
  explicit KedaPolicy(KedaParams params = {});

  std::string name() const override { return "keda"; }
  bool reads_latency() const override { return false; }         // sizes from lag and rates
  bool stabilizes_scale_down() const override { return true; }  // its behavior.scaleDown
  Proposal decide(const Observation& obs) override;
  nlohmann::json params() const override { return params_.to_json(); }
  // metric, total_lag, active, idle, last_active, next_poll, last_desired and the HPA's state.
  nlohmann::json state() const override;

 private:
  KedaParams params_;
  HpaAlgorithm hpa_;
  std::optional<double> first_time_;
  std::optional<double> next_poll_;
  std::optional<double> last_active_;
  int64_t total_lag_ = 0;
  int64_t metric_ = 0;
  bool active_ = false;
  bool idle_ = false;
  int last_desired_ = 0;
};

}  // namespace lagpilot
