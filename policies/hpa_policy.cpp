#include "policies/hpa_policy.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "policies/number_text.h"

namespace lagpilot {
namespace {

using text::fixed;
using text::num;

int saturate(double v) {
  if (!(v < static_cast<double>(INT_MAX))) return INT_MAX;  // also NaN
  if (v < static_cast<double>(INT_MIN)) return INT_MIN;
  return static_cast<int>(v);
}

void read_direction(JsonObjectReader& r, const std::string& dir, double& window, int& percent,
                    int& pods, double& period, std::string& select, int max_percent) {
  r.read("scale_" + dir + "_stabilization_seconds", window, 0.0, 3600.0);
  r.read("scale_" + dir + "_percent", percent, 0, max_percent);
  r.read("scale_" + dir + "_pods", pods, 0, 1000000);
  r.read("scale_" + dir + "_period_seconds", period, 0.0, 1800.0);
  if (!(period > 0.0)) {
    throw ConfigError(r.path_of("scale_" + dir + "_period_seconds"),
                      "must be > 0, got " + num(period));
  }
  r.read_enum("scale_" + dir + "_select_policy", select, {"Max", "Min", "Disabled"});
  if (select != "Disabled" && percent == 0 && pods == 0) {
    throw ConfigError(r.path_of("scale_" + dir + "_percent"),
                      "scale_" + dir + "_percent and scale_" + dir +
                          "_pods are both 0: give at least one scaling policy, or set scale_" +
                          dir + "_select_policy to Disabled");
  }
}

}  // namespace

HpaBehavior HpaBehavior::read(JsonObjectReader& r) {
  HpaBehavior b;
  r.read("sync_period_seconds", b.sync_period_seconds, 0.0, 86400.0);
  if (!(b.sync_period_seconds > 0.0)) {
    throw ConfigError(r.path_of("sync_period_seconds"),
                      "must be > 0, got " + num(b.sync_period_seconds));
  }
  r.read("tolerance", b.tolerance, 0.0, 0.99);
  read_direction(r, "up", b.scale_up_stabilization_seconds, b.scale_up_percent, b.scale_up_pods,
                 b.scale_up_period_seconds, b.scale_up_select_policy, 100000);
  read_direction(r, "down", b.scale_down_stabilization_seconds, b.scale_down_percent,
                 b.scale_down_pods, b.scale_down_period_seconds, b.scale_down_select_policy, 100);
  return b;
}

void HpaBehavior::write(nlohmann::json& out) const {
  out["sync_period_seconds"] = sync_period_seconds;
  out["tolerance"] = tolerance;
  out["scale_up_stabilization_seconds"] = scale_up_stabilization_seconds;
  out["scale_up_percent"] = scale_up_percent;
  out["scale_up_pods"] = scale_up_pods;
  out["scale_up_period_seconds"] = scale_up_period_seconds;
  out["scale_up_select_policy"] = scale_up_select_policy;
  out["scale_down_stabilization_seconds"] = scale_down_stabilization_seconds;
  out["scale_down_percent"] = scale_down_percent;
  out["scale_down_pods"] = scale_down_pods;
  out["scale_down_period_seconds"] = scale_down_period_seconds;
  out["scale_down_select_policy"] = scale_down_select_policy;
}

HpaAlgorithm::HpaAlgorithm(HpaBehavior behavior) : behavior_(std::move(behavior)) {}

bool HpaAlgorithm::sync_due(double now) const {
  // A hair of slack so that 15 ticks of 1.0 s summed in floating point still land on a sync.
  return !next_sync_ || now >= *next_sync_ - 1e-9;
}

int HpaAlgorithm::replicas_changed(const std::deque<std::pair<double, int>>& events, double now,
                                   double period) const {
  const double cutoff = now - period;
  int replicas = 0;
  for (const auto& [time, change] : events) {
    if (time > cutoff) replicas += change;
  }
  return replicas;
}

int HpaAlgorithm::scale_up_limit(double now, int current) const {
  const HpaBehavior& b = behavior_;
  if (b.scale_up_select_policy == "Disabled") return current;
  const bool pick_min = b.scale_up_select_policy == "Min";
  const double period = b.scale_up_period_seconds;
  const int start = current - replicas_changed(scale_up_events_, now, period) +
                    replicas_changed(scale_down_events_, now, period);
  int result = pick_min ? INT_MAX : INT_MIN;
  auto select = [&](int proposed) {
    result = pick_min ? std::min(result, proposed) : std::max(result, proposed);
  };
  if (b.scale_up_percent > 0) {
    // Rounded up, so that a small pool can always grow.
    select(saturate(std::ceil(start * (1.0 + b.scale_up_percent / 100.0))));
  }
  if (b.scale_up_pods > 0) select(saturate(static_cast<double>(start) + b.scale_up_pods));
  return result;
}

int HpaAlgorithm::scale_down_limit(double now, int current) const {
  const HpaBehavior& b = behavior_;
  if (b.scale_down_select_policy == "Disabled") return current;
  const bool pick_min_change = b.scale_down_select_policy == "Min";
  const double period = b.scale_down_period_seconds;
  const int start = current - replicas_changed(scale_up_events_, now, period) +
                    replicas_changed(scale_down_events_, now, period);
  int result = pick_min_change ? INT_MIN : INT_MAX;
  auto select = [&](int proposed) {
    result = pick_min_change ? std::max(result, proposed) : std::min(result, proposed);
  };
  if (b.scale_down_percent > 0) {
    select(saturate(std::trunc(start * (1.0 - b.scale_down_percent / 100.0))));
  }
  if (b.scale_down_pods > 0) select(saturate(static_cast<double>(start) - b.scale_down_pods));
  return result;
}

int HpaAlgorithm::stabilize(double now, int current, int proposal) {
  const double up_cutoff = now - behavior_.scale_up_stabilization_seconds;
  const double down_cutoff = now - behavior_.scale_down_stabilization_seconds;
  int up = proposal;
  int down = proposal;
  for (const auto& [time, recorded] : proposals_) {
    if (time > up_cutoff) up = std::min(up, recorded);
    if (time > down_cutoff) down = std::max(down, recorded);
  }
  int recommendation = std::max(current, up);
  recommendation = std::min(recommendation, down);
  // Record the unstabilized proposal; forget what no window can reach any more.
  proposals_.emplace_back(now, proposal);
  const double oldest_useful = std::min(up_cutoff, down_cutoff);
  while (!proposals_.empty() && proposals_.front().first <= oldest_useful) proposals_.pop_front();
  return recommendation;
}

HpaAlgorithm::Sync HpaAlgorithm::sync(double now, double usage, double target_average, int current,
                                      int min_replicas, int max_replicas) {
  next_sync_ = now + behavior_.sync_period_seconds;
  max_replicas = std::max(min_replicas, max_replicas);
  Sync s;
  if (current > max_replicas) {
    s.desired = s.proposal = s.stabilized = max_replicas;
    s.reason = std::to_string(current) + " workers above max " + std::to_string(max_replicas) +
               ": " + std::to_string(max_replicas);
  } else if (current < min_replicas) {
    s.desired = s.proposal = s.stabilized = min_replicas;
    s.reason = std::to_string(current) + " workers below min " + std::to_string(min_replicas) +
               ": " + std::to_string(min_replicas);
  } else {
    // Step 2: the metric's proposal.
    s.usage_ratio = current > 0 ? usage / (target_average * current) : 0.0;
    const bool within = current > 0 && std::abs(1.0 - s.usage_ratio) <= behavior_.tolerance;
    s.proposal = within ? current : saturate(std::ceil(usage / target_average));
    s.reason =
        "ratio " + fixed(s.usage_ratio, 2) +
        (within ? " within tolerance " + num(behavior_.tolerance) + ": keep " : ": propose ") +
        std::to_string(s.proposal);
    // Step 3: stabilization.
    s.stabilized = stabilize(now, current, s.proposal);
    if (s.stabilized != s.proposal) {
      s.reason += s.stabilized > s.proposal
                      ? "; stabilized at " + std::to_string(s.stabilized) +
                            " (highest proposal in the last " +
                            num(behavior_.scale_down_stabilization_seconds) + " s)"
                      : "; stabilized at " + std::to_string(s.stabilized) +
                            " (lowest proposal in the last " +
                            num(behavior_.scale_up_stabilization_seconds) + " s)";
    }
    // Step 4: rate limits and bounds.
    s.desired = s.stabilized;
    if (s.stabilized > current) {
      const int limit = std::max(scale_up_limit(now, current), current);
      const int allowed = std::min(max_replicas, limit);
      if (s.desired > allowed) {
        s.desired = allowed;
        s.reason += allowed == limit && limit < max_replicas
                        ? "; scale-up limited to " + std::to_string(allowed) + " per " +
                              num(behavior_.scale_up_period_seconds) + " s"
                        : "; max " + std::to_string(allowed);
      }
    } else if (s.stabilized < current) {
      const int limit = std::min(scale_down_limit(now, current), current);
      const int allowed = std::max(min_replicas, limit);
      if (s.desired < allowed) {
        s.desired = allowed;
        s.reason += allowed == limit && limit > min_replicas
                        ? "; scale-down limited to " + std::to_string(allowed) + " per " +
                              num(behavior_.scale_down_period_seconds) + " s"
                        : "; min " + std::to_string(allowed);
      }
    }
    s.reason += " -> " + std::to_string(s.desired);
  }
  // Step 5: scale events, pruned once older than their period.
  if (s.desired > current) scale_up_events_.emplace_back(now, s.desired - current);
  if (s.desired < current) scale_down_events_.emplace_back(now, current - s.desired);
  const double longest =
      std::max(behavior_.scale_up_period_seconds, behavior_.scale_down_period_seconds);
  for (auto* events : {&scale_up_events_, &scale_down_events_}) {
    while (!events->empty() && events->front().first <= now - longest) events->pop_front();
  }
  return s;
}

nlohmann::json HpaAlgorithm::state() const {
  auto list = [](const std::deque<std::pair<double, int>>& d) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& [t, v] : d) a.push_back({t, v});
    return a;
  };
  return {{"next_sync", next_sync_ ? nlohmann::json(*next_sync_) : nlohmann::json(nullptr)},
          {"proposals", list(proposals_)},
          {"scale_up_events", list(scale_up_events_)},
          {"scale_down_events", list(scale_down_events_)}};
}

HpaParams HpaParams::from_json(const nlohmann::json& j, const std::string& path) {
  HpaParams p;
  JsonObjectReader r(j.is_null() ? nlohmann::json::object() : j, path);
  r.read("target_lag_per_worker", p.target_lag_per_worker, 0.0);
  if (!(p.target_lag_per_worker > 0.0)) {
    throw ConfigError(r.path_of("target_lag_per_worker"),
                      "must be > 0, got " + num(p.target_lag_per_worker));
  }
  p.behavior = HpaBehavior::read(r);
  r.finish();
  return p;
}

nlohmann::json HpaParams::to_json() const {
  nlohmann::json j = {{"target_lag_per_worker", target_lag_per_worker}};
  behavior.write(j);
  return j;
}

HpaPolicy::HpaPolicy(HpaParams params) : params_(std::move(params)), hpa_(params_.behavior) {}

Proposal HpaPolicy::decide(const Observation& obs) {
  const int lo = obs.min_workers;
  const int hi = std::max(obs.min_workers, obs.max_workers);
  std::string reason;
  if (hpa_.sync_due(obs.time)) {
    const double lag = static_cast<double>(std::max<int64_t>(obs.total_lag, 0));
    const HpaAlgorithm::Sync s =
        hpa_.sync(obs.time, lag, params_.target_lag_per_worker, obs.current_workers, lo, hi);
    last_desired_ = s.desired;
    if (obs.explain) {
      const double per_worker = obs.current_workers > 0 ? lag / obs.current_workers : lag;
      reason = "lag per worker " + fixed(per_worker, 0) + " vs target " +
               num(params_.target_lag_per_worker) + ": " + s.reason;
    }
  } else if (obs.explain) {
    reason.reserve(64);  // one allocation: the pieces below are short
    reason += "between syncs (every ";
    reason += num(params_.behavior.sync_period_seconds);
    reason += " s): hold ";
    reason += std::to_string(last_desired_);
  }
  const int workers = std::clamp(last_desired_, lo, hi);
  if (obs.explain && workers != last_desired_) {
    reason += " (clamped to " + std::to_string(workers) + ")";
  }
  return {workers, std::move(reason)};
}

nlohmann::json HpaPolicy::state() const {
  nlohmann::json s = hpa_.state();
  s["last_desired"] = last_desired_;
  return s;
}

}  // namespace lagpilot
