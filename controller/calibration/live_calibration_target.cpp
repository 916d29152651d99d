#include "controller/calibration/live_calibration_target.h"

namespace lagpilot {

CalibrationTarget::Reading LiveCalibrationTarget::read() {
  const SourceStats stats = source_.refreshed_stats(2.0);
  assigned_partitions_ = stats.assigned_partitions;
  Reading r;
  r.completed = pool_.completed();
  r.lag = stats.assigned_partitions > 0 ? stats.total_lag : -1;
  return r;
}

}  // namespace lagpilot
