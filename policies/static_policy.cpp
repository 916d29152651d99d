#include "policies/static_policy.h"

#include <algorithm>

#include "policies/config_reader.h"

namespace lagpilot {

StaticParams StaticParams::from_json(const nlohmann::json& j, const std::string& path) {
  StaticParams p;
  JsonObjectReader r(j.is_null() ? nlohmann::json::object() : j, path);
  r.read("workers", p.workers, 1, 1000000);
  r.finish();
  return p;
}

nlohmann::json StaticParams::to_json() const {
  return {{"workers", workers}};
}

StaticPolicy::StaticPolicy(StaticParams params) : params_(params) {}

Proposal StaticPolicy::decide(const Observation& obs) {
  const int hi = std::max(obs.min_workers, obs.max_workers);
  const int workers = std::clamp(params_.workers, obs.min_workers, hi);
  if (!obs.explain) return {workers, {}};
  if (obs.min_workers != reason_lo_ || hi != reason_hi_) {
    reason_lo_ = obs.min_workers;
    reason_hi_ = hi;
    reason_ = "hold " + std::to_string(params_.workers) + " workers";
    if (workers != params_.workers) {
      reason_ += " (clamped to " + std::to_string(workers) + " by bounds [" +
                 std::to_string(obs.min_workers) + ", " + std::to_string(hi) + "])";
    }
  }
  return {workers, reason_};
}

}  // namespace lagpilot
