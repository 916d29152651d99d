#include "policies/guards.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "policies/number_text.h"

namespace lagpilot {
namespace {

// printf("%.3g s", s), for the notes.
std::string seconds_text(double s) {
  // Whole numbers below 1000 (the usual windows) are what %.3g prints as plain integers.
  return (std::fabs(s) < 1000.0 && s == std::trunc(s) ? text::num(s) : text::general(s, 3)) + " s";
}

}  // namespace

GuardConfig GuardConfig::from_json(const nlohmann::json& j, const std::string& path) {
  GuardConfig c;
  JsonObjectReader r(j, path);
  r.read("hard_min_workers", c.hard_min_workers, 1, 4096);
  r.read("hard_max_workers", c.hard_max_workers, 1, 4096);
  r.read("min_workers", c.min_workers, 1, 4096);
  r.read("max_workers", c.max_workers, 1, 4096);
  r.read("max_step_up", c.max_step_up, 0, 4096);
  r.read("max_step_down", c.max_step_down, 0, 4096);
  r.read("scale_down_window_seconds", c.scale_down_window_seconds, 0.0, 86400.0);
  r.read("latency_ceiling_seconds", c.latency_ceiling_seconds, 0.0, 3600.0);
  r.read("latency_ceiling_min_gain", c.latency_ceiling_min_gain, 0.0, 10.0);
  r.read("latency_ceiling_judge_seconds", c.latency_ceiling_judge_seconds, 0.0, 3600.0);
  r.read("sink_pushback_guard", c.sink_pushback_guard);
  r.read("sink_pushback_threshold", c.sink_pushback_threshold, 0.0, 1.0);
  r.read("sink_pushback_seconds", c.sink_pushback_seconds, 0.0, 86400.0);
  r.finish();
  if (c.hard_min_workers > c.hard_max_workers) {
    throw ConfigError(r.path_of("hard_min_workers"),
                      "must be <= hard_max_workers (" + std::to_string(c.hard_max_workers) + ")");
  }
  // Bounds not given explicitly follow the hard limits when those are tighter than the defaults.
  if (!r.has("max_workers")) c.max_workers = std::min(c.max_workers, c.hard_max_workers);
  if (!r.has("min_workers")) c.min_workers = std::max(c.min_workers, c.hard_min_workers);
  if (!r.has("hard_max_workers")) c.hard_max_workers = std::max(c.hard_max_workers, c.max_workers);
  if (c.min_workers > c.max_workers) {
    throw ConfigError(r.path_of("min_workers"), "must be <= max_workers (" +
                                                    std::to_string(c.max_workers) + "), got " +
                                                    std::to_string(c.min_workers));
  }
  if (c.min_workers < c.hard_min_workers || c.max_workers > c.hard_max_workers) {
    throw ConfigError(r.path_of(c.min_workers < c.hard_min_workers ? "min_workers" : "max_workers"),
                      "must lie within the hard limits [" + std::to_string(c.hard_min_workers) +
                          ", " + std::to_string(c.hard_max_workers) + "]");
  }
  return c;
}

nlohmann::json GuardConfig::to_json() const {
  return nlohmann::json{{"min_workers", min_workers},
                        {"max_workers", max_workers},
                        {"hard_min_workers", hard_min_workers},
                        {"hard_max_workers", hard_max_workers},
                        {"max_step_up", max_step_up},
                        {"max_step_down", max_step_down},
                        {"scale_down_window_seconds", scale_down_window_seconds},
                        {"latency_ceiling_seconds", latency_ceiling_seconds},
                        {"latency_ceiling_min_gain", latency_ceiling_min_gain},
                        {"latency_ceiling_judge_seconds", latency_ceiling_judge_seconds},
                        {"sink_pushback_guard", sink_pushback_guard},
                        {"sink_pushback_threshold", sink_pushback_threshold},
                        {"sink_pushback_seconds", sink_pushback_seconds}};
}

GuardChain::GuardChain(GuardConfig config) : config_(std::move(config)) {}

Decision GuardChain::apply(const Proposal& proposal, const std::string& policy_name,
                           const Observation& obs) {
  Decision d;
  d.policy = policy_name;
  d.reason = proposal.reason;  // verbatim
  apply_into(proposal.workers, obs, d);
  return d;
}

void GuardChain::apply_into(int proposed_workers, const Observation& obs, Decision& d) {
  d.time = obs.time;
  d.previous_workers = obs.current_workers;
  d.policy_workers = proposed_workers;
  d.guards.clear();  // keeps the vector's buffer
  const int current = obs.current_workers;
  int w = proposed_workers;
  // Notes are text only: every rule below decides the same with or without them.
  const bool explain = obs.explain;

  // 1. Bounds.
  if (w < config_.min_workers) {
    if (explain) {
      d.guards.push_back("bounds: " + std::to_string(w) + " below min " +
                         std::to_string(config_.min_workers) + ", raised");
    }
    w = config_.min_workers;
  } else if (w > config_.max_workers) {
    if (explain) {
      d.guards.push_back("bounds: " + std::to_string(w) + " above max " +
                         std::to_string(config_.max_workers) + ", clamped");
    }
    w = config_.max_workers;
  }

  // 2. Step limits (relative to the size now; a pool outside the bounds may still jump in).
  if (config_.max_step_up > 0 && w > current + config_.max_step_up && current > 0) {
    const int limited = std::max(current + config_.max_step_up, config_.min_workers);
    if (limited < w) {
      if (explain) {
        d.guards.push_back("step limit: +" + std::to_string(w - current) + " exceeds +" +
                           std::to_string(config_.max_step_up) + " per tick, to " +
                           std::to_string(limited));
      }
      w = limited;
    }
  }
  if (config_.max_step_down > 0 && w < current - config_.max_step_down) {
    const int limited = std::min(current - config_.max_step_down, config_.max_workers);
    if (limited > w) {
      if (explain) {
        d.guards.push_back("step limit: -" + std::to_string(current - w) + " exceeds -" +
                           std::to_string(config_.max_step_down) + " per tick, to " +
                           std::to_string(limited));
      }
      w = limited;
    }
  }

  // 3. Scale-down stabilization: the highest recommendation in the window wins. recent_ is a
  //    monotonic queue: a recommendation is dropped as soon as a newer one at least as high
  //    arrives (it can never be the highest again), so the front is the window's maximum and
  //    each tick costs O(1) amortized however many ticks the window spans.
  if (config_.scale_down_window_seconds > 0 && !policy_stabilizes_) {
    const double cutoff = obs.time - config_.scale_down_window_seconds;
    while (!recent_.empty() && recent_.front().first < cutoff) recent_.pop_front();
    while (!recent_.empty() && recent_.back().second <= w) recent_.pop_back();
    recent_.emplace_back(obs.time, w);
    if (w < current) {
      const int highest = recent_.front().second;
      const int stabilized = std::min(highest, current);
      if (stabilized > w) {
        if (explain) {  // frequent (every tick of a held scale-down): one allocation
          std::string& note = d.guards.emplace_back();
          note.reserve(80);
          note += "stabilization: ";
          note += std::to_string(highest);
          note += " recommended within ";
          note += seconds_text(config_.scale_down_window_seconds);
          note += ", holding ";
          note += std::to_string(stabilized);
          note += " instead of ";
          note += std::to_string(w);
        }
        w = stabilized;
      }
    }
  }

  // 4. Latency ceiling: judge the last scale-up once it had time to work, then refuse further
  //    scale-ups while latency is high and the last one did not raise throughput.
  if (scale_up_pending_ && obs.time - scale_up_time_ >= config_.latency_ceiling_judge_seconds) {
    scale_up_pending_ = false;
    last_scale_up_helped_ =
        obs.processed_rate >= rate_before_scale_up_ * (1.0 + config_.latency_ceiling_min_gain);
  }
  if (config_.latency_ceiling_seconds > 0 && w > current &&
      obs.latency_p99 > config_.latency_ceiling_seconds &&
      (scale_up_pending_ || !last_scale_up_helped_)) {
    if (explain) {
      d.guards.push_back("latency ceiling: p99 " + seconds_text(obs.latency_p99) + " above " +
                         seconds_text(config_.latency_ceiling_seconds) + " and the last scale-up " +
                         (scale_up_pending_ ? "is not judged yet" : "did not raise throughput") +
                         ", holding " + std::to_string(current));
    }
    w = std::max(current, config_.min_workers);
  }

  // 5. Sink pushback.
  if (config_.sink_pushback_guard && obs.sink_pushback >= 0) w = apply_sink_pushback(w, obs, d);

  // 6. Manual override (pinned() drops an expired pin, without a copy).
  if (pinned(obs.time)) {
    const ManualOverride& pin = *override_;
    if (explain && pin.workers != w) {
      d.guards.push_back("override: pinned to " + std::to_string(pin.workers) +
                         " until t=" + seconds_text(pin.expires_at) +
                         (pin.reason.empty() ? "" : " (" + pin.reason + ")"));
    }
    w = pin.workers;
  }
  // Assigned only when it changes (rarely: a pin set or expired), not a string copy per tick;
  // compared with each literal on its own branch, which the compiler inlines (one comparison
  // against a source chosen at run time was a memcmp call per tick).
  using std::literals::string_view_literals::operator""sv;
  if (override_) {
    if (std::string_view(d.source) != "override"sv) d.source = "override";
  } else if (std::string_view(d.source) != "policy"sv) {
    d.source = "policy";
  }

  if (w > current && current > 0) {
    scale_up_pending_ = true;
    scale_up_time_ = obs.time;
    rate_before_scale_up_ = obs.processed_rate;
  }
  d.workers = w;
}

int GuardChain::apply_sink_pushback(int w, const Observation& obs, Decision& d) {
  const int current = obs.current_workers;
  const double hold = config_.sink_pushback_seconds;
  const bool explain = obs.explain;
  const auto percent = [](double f) { return text::fixed(100.0 * f, f < 0.1 ? 1 : 0) + " %"; };
  if (obs.sink_pushback > config_.sink_pushback_threshold) {
    if (pushback_since_ < 0) pushback_since_ = obs.time;
    last_pushback_ = obs.time;
    if (pushback_ceiling_ == 0 || pushback_ceiling_ > current) pushback_ceiling_ = current;
    if (w > current) {
      if (explain) {
        d.guards.push_back("sink pushback " + percent(obs.sink_pushback) + " > " +
                           percent(config_.sink_pushback_threshold) + ": no scale-up");
      }
      w = current;
    }
    // Pushback that appears after the pool grew past the last size the sink took without it is
    // an overshoot (a policy that sized a backlog in one jump): step back at once, to the share
    // of the pool the sink served, but not below that quiet size. The share is the processed
    // rate over what one busy worker processed without pushback (the sink's throughput stays
    // flat past its concurrency; the pushed-back fraction of deliveries understates the excess
    // when retries back off); without that rate, current x (1 - pushback). Otherwise pushback
    // must last `hold` first, and each step is one worker.
    const bool overshot = last_quiet_pool_ > 0 && current > last_quiet_pool_;
    if ((overshot || obs.time - pushback_since_ >= hold) &&
        obs.time - last_pushback_step_ >= hold && current - 1 >= config_.min_workers &&
        w > current - 1) {
      int to = current - 1;
      if (overshot) {
        const double accepted =
            quiet_rate_per_worker_ > 0.0 && obs.processed_rate > 0.0
                ? std::round(obs.processed_rate / quiet_rate_per_worker_)
                : std::round(current * (1.0 - std::min(obs.sink_pushback, 1.0)));
        to = static_cast<int>(std::clamp(
            accepted, static_cast<double>(std::max(last_quiet_pool_, config_.min_workers)),
            static_cast<double>(current - 1)));
      }
      w = std::min(w, to);
      pushback_ceiling_ = w;
      last_pushback_step_ = obs.time;
      pushback_since_ = obs.time;
      if (explain) {
        d.guards.push_back(
            "sink pushback " + percent(obs.sink_pushback) +
            (overshot ? " after the pool grew from " + std::to_string(last_quiet_pool_) +
                            ": back to " + std::to_string(w) + ", the share the sink served"
                      : " for " + seconds_text(hold) + ": down a step to " + std::to_string(w)));
      }
    }
    return w;
  }
  pushback_since_ = -1.0;
  last_quiet_pool_ = current;
  if (obs.busy_workers >= 0.5 && obs.processed_rate > 0.0 && std::isfinite(obs.processed_rate)) {
    quiet_rate_per_worker_ = obs.processed_rate / obs.busy_workers;
  }
  if (pushback_ceiling_ == 0) return w;
  // Probe one worker higher after each quiet stretch; forget the ceiling once it reaches the
  // upper bound.
  if (obs.time - last_pushback_ >= hold && obs.time - last_pushback_step_ >= hold) {
    ++pushback_ceiling_;
    last_pushback_step_ = obs.time;
    if (pushback_ceiling_ >= config_.max_workers) {
      pushback_ceiling_ = 0;
      return w;
    }
  }
  const int cap = std::max(pushback_ceiling_, current);  // never forces a pool down by itself
  if (w > cap) {
    if (explain) {
      d.guards.push_back("sink pushback: holding at the sink's ceiling " +
                         std::to_string(pushback_ceiling_) + " (last pushback " +
                         seconds_text(obs.time - last_pushback_) + " ago)");
    }
    w = cap;
  }
  return w;
}

void GuardChain::set_bounds(int min_workers, int max_workers) {
  if (min_workers < config_.hard_min_workers || min_workers > config_.hard_max_workers) {
    throw ConfigError("min", "must be between " + std::to_string(config_.hard_min_workers) +
                                 " and " + std::to_string(config_.hard_max_workers) + ", got " +
                                 std::to_string(min_workers));
  }
  if (max_workers < config_.hard_min_workers || max_workers > config_.hard_max_workers) {
    throw ConfigError("max", "must be between " + std::to_string(config_.hard_min_workers) +
                                 " and " + std::to_string(config_.hard_max_workers) + ", got " +
                                 std::to_string(max_workers));
  }
  if (min_workers > max_workers) {
    throw ConfigError("min", "must be <= max (" + std::to_string(max_workers) + "), got " +
                                 std::to_string(min_workers));
  }
  config_.min_workers = min_workers;
  config_.max_workers = max_workers;
}

void GuardChain::set_override(ManualOverride pin) {
  if (pin.workers < config_.hard_min_workers || pin.workers > config_.hard_max_workers) {
    throw ConfigError("workers", "must be between " + std::to_string(config_.hard_min_workers) +
                                     " and " + std::to_string(config_.hard_max_workers) + ", got " +
                                     std::to_string(pin.workers));
  }
  override_ = std::move(pin);
}

void GuardChain::clear_override() {
  override_.reset();
}

std::optional<ManualOverride> GuardChain::active_override(double now) {
  if (!pinned(now)) return std::nullopt;
  return override_;
}

}  // namespace lagpilot
