#include "policies/capacity_estimator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lagpilot {

CapacityEstimator::CapacityEstimator(double catch_up_seconds)
    : catch_up_seconds_(catch_up_seconds) {
  if (!std::isfinite(catch_up_seconds) || catch_up_seconds <= 0) {
    throw std::invalid_argument("CapacityEstimator: catch_up_seconds must be > 0, got " +
                                std::to_string(catch_up_seconds));
  }
}

int CapacityEstimator::recommended_replicas(double needed_workers, int max_workers) {
  const double per_process = std::max(1, max_workers);
  if (std::isnan(needed_workers) || needed_workers <= 0) return 1;
  const double replicas =
      std::ceil(std::min(needed_workers, kMaxNeededWorkers) / per_process - 1e-9);
  return std::max(1, static_cast<int>(replicas));
}

const CapacityEstimator::Estimate& CapacityEstimator::update(const Observation& o, int max_workers,
                                                             const GroupDemand* group) {
  if (std::isfinite(o.processed_rate) && std::isfinite(o.busy_workers) && o.processed_rate > 0 &&
      o.busy_workers >= kMinBusyWorkers) {
    estimate_.per_worker_rate = o.processed_rate / o.busy_workers;
    estimate_.rate_measured = true;
  }
  auto non_negative = [](double v) { return std::isfinite(v) && v > 0 ? v : 0.0; };
  if (estimate_.rate_measured) {
    const double demand = non_negative(o.arrival_rate) +
                          non_negative(static_cast<double>(o.total_lag)) / catch_up_seconds_;
    estimate_.needed_workers = std::min(demand / estimate_.per_worker_rate, kMaxNeededWorkers);
  } else {
    estimate_.needed_workers = std::max(0, o.current_workers);
  }
  estimate_.recommended_replicas = recommended_replicas(estimate_.needed_workers, max_workers);
  estimate_.group_wide = group != nullptr && group->partitions > 0;
  estimate_.group_needed_workers = 0;
  if (estimate_.group_wide) {
    // Before any rate is measured, as for the member's own figure: its pool as it is.
    int replicas = estimate_.recommended_replicas;
    if (estimate_.rate_measured) {
      const double demand = non_negative(group->arrival_rate) +
                            non_negative(static_cast<double>(group->total_lag)) / catch_up_seconds_;
      estimate_.group_needed_workers =
          std::min(demand / estimate_.per_worker_rate, kMaxNeededWorkers);
      replicas = recommended_replicas(estimate_.group_needed_workers, max_workers);
    }
    estimate_.recommended_replicas = std::min(replicas, group->partitions);
  }
  return estimate_;
}

}  // namespace lagpilot
