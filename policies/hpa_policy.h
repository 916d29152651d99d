#pragma once
// The `hpa` policy (Kubernetes HorizontalPodAutoscaler, autoscaling/v2, default behavior, on
// the metric "lag per worker") and the HpaAlgorithm it shares with the `keda` policy.
//
// Thread-safety: like every Policy, not thread-safe; the ControlLoop serialises calls.
// HpaAlgorithm likewise: one owner, one thread.

#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "policies/config_reader.h"
#include "policies/policy.h"

namespace lagpilot {

// The HPA controller's timing, tolerance and spec.behavior. Defaults are Kubernetes' own
// (kube-controller-manager flags and the autoscaling/v2 defaulted behavior).
struct HpaBehavior {
  double sync_period_seconds = 15.0;  // --horizontal-pod-autoscaler-sync-period
  double tolerance = 0.1;             // --horizontal-pod-autoscaler-tolerance
  // behavior.scaleUp: stabilizationWindowSeconds 0; policies [Percent 100 / 15 s,
  // Pods 4 / 15 s]; selectPolicy Max. A policy value of 0 means "no such policy".
  double scale_up_stabilization_seconds = 0.0;
  int scale_up_percent = 100;
  int scale_up_pods = 4;
  double scale_up_period_seconds = 15.0;       // periodSeconds of both scale-up policies
  std::string scale_up_select_policy = "Max";  // Max, Min or Disabled
  // behavior.scaleDown: stabilizationWindowSeconds 300; policies [Percent 100 / 15 s];
  // selectPolicy Max.
  double scale_down_stabilization_seconds = 300.0;
  int scale_down_percent = 100;
  int scale_down_pods = 0;
  double scale_down_period_seconds = 15.0;
  std::string scale_down_select_policy = "Max";

  // Reads the keys above from `r` (they sit flat in the policy's params object); validates
  // ranges and that each enabled direction has at least one policy.
  static HpaBehavior read(JsonObjectReader& r);
  // Adds the keys above to `out`.
  void write(nlohmann::json& out) const;
};

// Algorithm: one reconcile of the Kubernetes HPA controller (pkg/controller/podautoscaler,
// autoscaling/v2 with spec.behavior), driven by the caller's clock:
//   1. current > max: desired = max; current < min: desired = min (and skip 2-4).
//   2. Replica proposal for an AverageValue target: ratio = usage / (target * current);
//      |1 - ratio| <= tolerance: proposal = current, else proposal = ceil(usage / target)
//      (= ceil(current * metricValue / target) with metricValue = usage / current).
//   3. Stabilization: the proposal is recorded with its time; the result is current, raised
//      to the lowest proposal of the last scale_up_stabilization_seconds and lowered to the
//      highest proposal of the last scale_down_stabilization_seconds ("a dip is ignored for
//      300 s").
//   4. Rate limits: a scale-up may not exceed the policies' limit, computed from the replica
//      count at the start of the period (current minus the replicas added, plus those removed,
//      by scale events of the last period seconds): Percent -> ceil(start * (1 + p/100)),
//      Pods -> start + n, combined by selectPolicy (Max: the larger); likewise for a scale-down
//      (Percent -> trunc(start * (1 - p/100)), Pods -> start - n; Max: the smaller). Then the
//      result is clamped to [min, max].
//   5. A change from current is recorded as a scale event (for step 4 of later syncs).
// Windows use "strictly after the cutoff" like the controller, so an event or proposal exactly
// one period (window) old no longer counts. sync() is meant to be called every
// sync_period_seconds; sync_due() says when. The caller passes `now`; nothing reads a clock.
class HpaAlgorithm {
 public:
  struct Sync {
    int desired = 0;           // the new replica count (what the HPA would set)
    int proposal = 0;          // step 2's proposal (before stabilization and limits)
    int stabilized = 0;        // after step 3
    double usage_ratio = 0.0;  // usage / (target * current); 0 when current <= 0
    std::string reason;        // human-readable account of steps 1-4
  };

  explicit HpaAlgorithm(HpaBehavior behavior = {});

  // True at the first call and once sync_period_seconds have passed since the last sync().
  bool sync_due(double now) const;
  // One reconcile at `now`. `usage`: the metric's total over all workers (the external
  // metric's value, or the per-worker average times current); `target_average`: the
  // AverageValue target per worker (> 0); `current`: the replica count now.
  Sync sync(double now, double usage, double target_average, int current, int min_replicas,
            int max_replicas);
  // Scale limits as of `now` (exposed for tests and logs).
  int scale_up_limit(double now, int current) const;
  int scale_down_limit(double now, int current) const;

  const HpaBehavior& behavior() const { return behavior_; }
  // next_sync, the recorded proposals and scale events.
  nlohmann::json state() const;

 private:
  int stabilize(double now, int current, int proposal);
  int replicas_changed(const std::deque<std::pair<double, int>>& events, double now,
                       double period) const;

  HpaBehavior behavior_;
  std::optional<double> next_sync_;
  std::deque<std::pair<double, int>> proposals_;          // (time, proposal)
  std::deque<std::pair<double, int>> scale_up_events_;    // (time, replicas added)
  std::deque<std::pair<double, int>> scale_down_events_;  // (time, replicas removed)
};

struct HpaParams {
  // AverageValue target of the metric "lag per worker" (messages). 1000: each worker should
  // have at most ~1000 messages waiting, i.e. ~10 s of work at 100 msg/s per worker.
  double target_lag_per_worker = 1000.0;
  HpaBehavior behavior;

  // Reads {"target_lag_per_worker", and the HpaBehavior keys}; throws ConfigError naming the
  // field.
  static HpaParams from_json(const nlohmann::json& j, const std::string& path);
  nlohmann::json to_json() const;
};

// The `hpa` policy: the Kubernetes HPA (see HpaAlgorithm) on metricValue = total_lag /
// current_workers with target target_lag_per_worker (default 1000), evaluated every
// sync_period_seconds (15); between syncs it repeats its last recommendation. Bounds are
// obs.min_workers / obs.max_workers (HPA minReplicas / maxReplicas). Defaults: tolerance 0.1,
// scale-up max(+100 %, +4) per 15 s, scale-down stabilization 300 s, scale-down 100 % per 15 s.
// A baseline: lag is an integrating metric, which the HPA formula (made for utilisation, which
// falls as replicas are added) does not expect, so expect slow overshoot cycles.
class HpaPolicy : public Policy {
 public:
  explicit HpaPolicy(HpaParams params = {});

  std::string name() const override { return "hpa"; }
  bool reads_latency() const override { return false; }         // sizes from lag and rates
  bool stabilizes_scale_down() const override { return true; }  // its behavior.scaleDown
  Proposal decide(const Observation& obs) override;
  nlohmann::json params() const override { return params_.to_json(); }
  nlohmann::json state() const override;

 private:
  HpaParams params_;
  HpaAlgorithm hpa_;
  int last_desired_ = 0;
};

}  // namespace lagpilot
