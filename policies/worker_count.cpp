#include "policies/worker_count.h"

#include <algorithm>
#include <cmath>

namespace lagpilot {

int to_workers(double v) {
  if (!(v > 0.0)) return 0;  // also NaN
  return static_cast<int>(std::min(v, kMaxWorkerCount));
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace lagpilot
