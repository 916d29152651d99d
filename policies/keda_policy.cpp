#include "policies/keda_policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "policies/config_reader.h"
#include "policies/number_text.h"

namespace lagpilot {
namespace {

using text::num;

}  // namespace

KedaParams KedaParams::from_json(const nlohmann::json& j, const std::string& path) {
  KedaParams p;
  JsonObjectReader r(j.is_null() ? nlohmann::json::object() : j, path);
  r.read("lag_threshold", p.lag_threshold, int64_t{1}, int64_t{1000000000});
  r.read("activation_lag_threshold", p.activation_lag_threshold, int64_t{0});
  r.read("polling_interval_seconds", p.polling_interval_seconds, 0.0, 86400.0);
  if (!(p.polling_interval_seconds > 0.0)) {
    throw ConfigError(r.path_of("polling_interval_seconds"),
                      "must be > 0, got " + num(p.polling_interval_seconds));
  }
  r.read("cooldown_period_seconds", p.cooldown_period_seconds, 0.0);
  r.read("initial_cooldown_period_seconds", p.initial_cooldown_period_seconds, 0.0);
  r.read("allow_idle_consumers", p.allow_idle_consumers);
  p.behavior = HpaBehavior::read(r);
  r.finish();
  return p;
}

nlohmann::json KedaParams::to_json() const {
  nlohmann::json j = {{"lag_threshold", lag_threshold},
                      {"activation_lag_threshold", activation_lag_threshold},
                      {"polling_interval_seconds", polling_interval_seconds},
                      {"cooldown_period_seconds", cooldown_period_seconds},
                      {"initial_cooldown_period_seconds", initial_cooldown_period_seconds},
                      {"allow_idle_consumers", allow_idle_consumers}};
  behavior.write(j);
  return j;
}

KedaPolicy::KedaPolicy(KedaParams params) : params_(std::move(params)), hpa_(params_.behavior) {}

Proposal KedaPolicy::decide(const Observation& obs) {
  const int lo = obs.min_workers;
  const int hi = std::max(obs.min_workers, obs.max_workers);
  if (!first_time_) first_time_ = obs.time;
  std::string reason;

  // The scaler's poll: read the lag, cap it, check activity.
  if (!next_poll_ || obs.time >= *next_poll_ - 1e-9) {
    next_poll_ = obs.time + params_.polling_interval_seconds;
    int64_t total = 0;
    if (obs.partition_lag.empty()) {
      total = std::max<int64_t>(obs.total_lag, 0);
    } else {
      for (const auto& p : obs.partition_lag) total += std::max<int64_t>(p.lag, 0);
    }
    total_lag_ = total;
    metric_ = total;
    const int64_t partitions = obs.assigned_partitions;
    if (!params_.allow_idle_consumers && partitions > 0 &&
        total / params_.lag_threshold > partitions) {
      metric_ = partitions * params_.lag_threshold;
    }
    active_ = total > params_.activation_lag_threshold;
    if (active_) last_active_ = obs.time;
  }

  // Scale to "zero" (min_workers) after the cooldown; out of it at the first active poll.
  const bool cooled_down = last_active_
                               ? obs.time - *last_active_ >= params_.cooldown_period_seconds
                               : obs.time - *first_time_ >= params_.initial_cooldown_period_seconds;
  if (!active_ && cooled_down) {
    if (!idle_) {
      idle_ = true;
      last_desired_ = lo;
    }
    if (!obs.explain) return {lo, {}};
    // Appended piece by piece into one buffer: one allocation (the pieces are short).
    reason.reserve(96);
    reason += "lag ";
    reason += std::to_string(total_lag_);
    reason += " <= activation threshold ";
    reason += std::to_string(params_.activation_lag_threshold);
    reason += " for the cooldown (";
    reason += num(last_active_ ? params_.cooldown_period_seconds
                               : params_.initial_cooldown_period_seconds);
    reason += " s): idle at min ";
    reason += std::to_string(lo);
    return {lo, std::move(reason)};
  }
  if (idle_ && active_) {
    idle_ = false;
    last_desired_ = std::clamp(obs.current_workers, lo, hi);
  }

  if (hpa_.sync_due(obs.time)) {
    const HpaAlgorithm::Sync s =
        hpa_.sync(obs.time, static_cast<double>(metric_),
                  static_cast<double>(params_.lag_threshold), obs.current_workers, lo, hi);
    last_desired_ = s.desired;
    if (obs.explain) {
      reason = "lag " + std::to_string(total_lag_) +
               (metric_ != total_lag_
                    ? " (capped at " + std::to_string(obs.assigned_partitions) + " partitions x " +
                          std::to_string(params_.lag_threshold) + ")"
                    : "") +
               " vs lag threshold " + std::to_string(params_.lag_threshold) + ": " + s.reason;
    }
  } else if (obs.explain) {
    reason.reserve(48);
    reason += "between HPA syncs: hold ";
    reason += std::to_string(last_desired_);
  }
  const int workers = std::clamp(last_desired_, lo, hi);
  if (obs.explain && workers != last_desired_) {
    reason += " (clamped to " + std::to_string(workers) + ")";
  }
  return {workers, std::move(reason)};
}

nlohmann::json KedaPolicy::state() const {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"total_lag", total_lag_},
          {"metric", metric_},
          {"active", active_},
          {"idle", idle_},
          {"last_active", opt(last_active_)},
          {"next_poll", opt(next_poll_)},
          {"last_desired", last_desired_},
          {"hpa", hpa_.state()}};
}

}  // namespace lagpilot
