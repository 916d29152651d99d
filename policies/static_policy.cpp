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
  // "hold N workers" fits the string's inline buffer for N < 100: no allocation per tick.
  std::string reason;
  reason += "hold ";
  reason += std::to_string(params_.workers);
  reason += " workers";
  if (workers != params_.workers) {
    reason += " (clamped to " + std::to_string(workers) + " by bounds [" +
              std::to_string(obs.min_workers) + ", " + std::to_string(hi) + "])";
  }
  return {workers, std::move(reason)};
}

}  // namespace lagpilot
