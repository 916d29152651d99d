#pragma once
// The capacity estimate behind lagpilot_needed_workers and lagpilot_recommended_replicas, shared
// by the live runtime (controller/metrics) and the fleet simulator (sim/fleet_simulation), so
// that the simulated KEDA-on-recommended-replicas world scales on the very figure a live fleet
// exports.

#include <cstdint>

#include "policies/observation.h"

namespace lagpilot {

// Algorithm (the "true processing rate" of DS2): a worker that is busy finishes
// processed_rate / busy_workers messages per second, however idle the pool is (waiting for
// fetches, a light load): dividing by the mean busy workers, not the pool size, takes the idle
// time out. That per-worker rate is measured again at every tick where both inputs are finite,
// busy_workers >= kMinBusyWorkers and processed_rate > 0; at other ticks (an idle or stalled
// pool, no data) the last measured rate is kept. From it:
//
//   needed_workers = (arrival_rate + total_lag / catch_up_seconds) / per_worker_rate
//   replicas       = max(1, ceil(needed_workers / max_workers))
//
// that is, the workers that keep up with the arrivals and drain today's backlog within
// catch_up_seconds, and the processes of max_workers workers that hold them. Before any rate
// has been measured there is no evidence either way, and needed_workers is the current pool
// size. A negative or non-finite arrival rate or lag counts as 0. needed_workers is capped at
// kMaxNeededWorkers (a nearly-zero measured rate must not overflow the replica count).
//
// Group-wide (when the source can read the whole consumer group's lag): the same formula over
// the group's arrival rate and lag gives the workers the whole group needs, and
//
//   replicas       = min(partitions, max(1, ceil(group needed workers / max_workers)))
//
// (a partition is consumed by one member at a time: more members than partitions idle). Every
// member computes it from the same broker data and its own per-worker rate, so members agree
// to within the noise of that rate; a member that has never measured a rate (a standby)
// recommends its own pool in processes (1: the pool is within max_workers), which is why a
// fleet scales on the max over members, not the sum.
//
// Thread-safety: not thread-safe; one owner (the live runtime's metrics call it from the control
// thread; the fleet simulator, from its run).
class CapacityEstimator {
 public:
  static constexpr double kDefaultCatchUpSeconds = 60;
  static constexpr double kMinBusyWorkers = 0.05;
  static constexpr double kMaxNeededWorkers = 1e6;

  struct Estimate {
    bool rate_measured = false;  // a per-worker rate has been measured at some tick
    double per_worker_rate = 0;  // messages/s per busy worker (0 until measured)
    double needed_workers = 0;   // see the formula above
    int recommended_replicas = 1;
    bool group_wide = false;          // recommended_replicas comes from the group's figures
    double group_needed_workers = 0;  // the whole group's (0 unless group_wide)
  };

  // The whole consumer group's demand (every partition of the subscribed topics).
  struct GroupDemand {
    double arrival_rate = 0;
    int64_t total_lag = 0;
    int partitions = 0;
  };

  // Throws std::invalid_argument unless catch_up_seconds is finite and > 0.
  explicit CapacityEstimator(double catch_up_seconds = kDefaultCatchUpSeconds);

  // Folds in one tick's observation; `max_workers` is the per-process maximum in force
  // (< 1 counts as 1). Returns the new estimate (also kept in last()).
  // With `group` (not null), recommended_replicas is the group-wide figure.
  const Estimate& update(const Observation& observation, int max_workers,
                         const GroupDemand* group = nullptr);
  const Estimate& last() const { return estimate_; }
  double catch_up_seconds() const { return catch_up_seconds_; }

  // max(1, ceil(needed_workers / max_workers)); max_workers < 1 counts as 1; NaN counts as 0
  // and needed_workers is capped at kMaxNeededWorkers; a ratio within 1e-9 above an integer
  // does not round up (floating-point noise).
  static int recommended_replicas(double needed_workers, int max_workers);

 private:
  double catch_up_seconds_;
  Estimate estimate_;
};

}  // namespace lagpilot
