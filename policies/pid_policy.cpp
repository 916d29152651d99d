#include "policies/pid_policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "policies/config_reader.h"
#include "policies/number_text.h"

namespace lagpilot {
namespace {

using text::fixed;
using text::num;
using text::signed_fixed;

void require_positive(const JsonObjectReader& r, const std::string& key, double value) {
  if (!(value > 0.0)) throw ConfigError(r.path_of(key), "must be > 0, got " + num(value));
}

}  // namespace

PidParams PidParams::defaults_for(const std::string& metric) {
  PidParams p;
  p.metric = metric;
  if (metric == "drain_time") {
    p.setpoint = 4.0;
    p.kp = 1.6;
    p.ki = 0.08;
    p.kd = 1.6;
    p.dead_band = 1.5;
    p.measurement_filter_seconds = 10.0;
  }
  return p;
}

PidParams PidParams::from_json(const nlohmann::json& j, const std::string& path) {
  JsonObjectReader r(j.is_null() ? nlohmann::json::object() : j, path);
  std::string metric = "lag";
  r.read_enum("metric", metric, {"lag", "drain_time"});
  PidParams p = defaults_for(metric);
  r.read("setpoint", p.setpoint, 0.0);
  require_positive(r, "setpoint", p.setpoint);
  r.read("kp", p.kp, 0.0);
  r.read("ki", p.ki, 0.0);
  r.read("kd", p.kd, 0.0);
  r.read("derivative_filter_seconds", p.derivative_filter_seconds, 0.0);
  r.read("dead_band", p.dead_band, 0.0);
  r.read("integral_clamp_margin", p.integral_clamp_margin, 0.0);
  r.read("drain_time_cap_seconds", p.drain_time_cap_seconds, 0.0);
  require_positive(r, "drain_time_cap_seconds", p.drain_time_cap_seconds);
  r.read("output_hysteresis", p.output_hysteresis, 0.0, 10.0);
  r.read("measurement_filter_seconds", p.measurement_filter_seconds, 0.0, 86400.0);
  r.read("tracking_time_seconds", p.tracking_time_seconds, 0.0, 86400.0);
  r.read("scale_down_utilization", p.scale_down_utilization, 0.0, 1.0);
  r.read("busy_filter_seconds", p.busy_filter_seconds, 0.0, 86400.0);
  r.finish();
  return p;
}

nlohmann::json PidParams::to_json() const {
  return {{"metric", metric},
          {"setpoint", setpoint},
          {"kp", kp},
          {"ki", ki},
          {"kd", kd},
          {"derivative_filter_seconds", derivative_filter_seconds},
          {"dead_band", dead_band},
          {"integral_clamp_margin", integral_clamp_margin},
          {"drain_time_cap_seconds", drain_time_cap_seconds},
          {"output_hysteresis", output_hysteresis},
          {"measurement_filter_seconds", measurement_filter_seconds},
          {"tracking_time_seconds", tracking_time_seconds},
          {"scale_down_utilization", scale_down_utilization},
          {"busy_filter_seconds", busy_filter_seconds}};
}

PidPolicy::PidPolicy(PidParams params) : params_(std::move(params)) {}

double PidPolicy::measure(const Observation& obs) const {
  const double lag = static_cast<double>(std::max<int64_t>(obs.total_lag, 0));
  if (!drain_time_) return lag;
  if (lag <= 0.0) return 0.0;
  // Nothing processed (stalled or just started) while there is a backlog: the drain time is
  // unbounded; use the cap so the loop sees "very late" rather than infinity or NaN.
  if (!(obs.processed_rate > 0.0)) return params_.drain_time_cap_seconds;
  return std::min(lag / obs.processed_rate, params_.drain_time_cap_seconds);
}

Proposal PidPolicy::decide(const Observation& obs) {
  const double lo = obs.min_workers;
  const double hi = std::max(obs.min_workers, obs.max_workers);
  const double margin = params_.integral_clamp_margin;

  const double busy = std::isfinite(obs.busy_workers) ? std::max(obs.busy_workers, 0.0) : 0.0;
  if (!started_ || params_.busy_filter_seconds <= 0.0) {
    busy_ = busy;
  } else if (obs.time > prev_time_) {
    const double dt = obs.time - prev_time_;
    busy_ += busy_gain_(dt, params_.busy_filter_seconds + dt) * (busy - busy_);
  }
  const double raw_measurement = measure(obs);
  if (!started_ || params_.measurement_filter_seconds <= 0.0) {
    measurement_ = raw_measurement;
  } else if (obs.time > prev_time_) {
    const double dt = obs.time - prev_time_;
    measurement_ += measurement_gain_(dt, params_.measurement_filter_seconds + dt) *
                    (raw_measurement - measurement_);
  }
  error_ = measurement_ - params_.setpoint;
  effective_error_ = std::abs(error_) <= params_.dead_band
                         ? 0.0
                         : error_ - std::copysign(params_.dead_band, error_);
  p_ = params_.kp * effective_error_;
  integrating_ = false;

  if (!started_) {
    // Bumpless start: the first output equals the pool as it is (within bounds); no I, no D.
    started_ = true;
    integral_ = obs.current_workers > 0 ? obs.current_workers - p_ : lo;
    derivative_ = 0.0;
    d_ = 0.0;
    prev_time_ = obs.time;
    prev_measurement_ = measurement_;
    workers_ = obs.current_workers;
  } else {
    const double dt = obs.time - prev_time_;
    if (dt > 0.0) {
      const double raw = divide(measurement_ - prev_measurement_, dt);
      const double tau = params_.derivative_filter_seconds;
      const double alpha = tau > 0.0 ? derivative_gain_(dt, tau + dt) : 1.0;
      derivative_ += alpha * (raw - derivative_);
      d_ = params_.kd * derivative_;

      // Back-calculation (tracking): pull the integral toward the proposal actually made last
      // tick (clamped to the bounds and quantized), so that I does not drift away from the
      // pool while the quantizer or a bound holds it.
      const double tracking =
          params_.tracking_time_seconds > 0.0
              ? (workers_ - output_) *
                    std::min(1.0, tracking_share_(dt, params_.tracking_time_seconds))
              : 0.0;
      // Conditional integration: not while the output is beyond a bound and the error pushes
      // it further out.
      const double candidate = integral_ + params_.ki * effective_error_ * dt;
      const double u = p_ + candidate + d_;
      const bool pushing_out =
          (u > hi && effective_error_ > 0.0) || (u < lo && effective_error_ < 0.0);
      integrating_ = !pushing_out && params_.ki > 0.0 && effective_error_ != 0.0;
      integral_ = (pushing_out ? integral_ : candidate) + tracking;
      prev_time_ = obs.time;
      prev_measurement_ = measurement_;
    }
  }
  integral_ = std::clamp(integral_, lo - margin, hi + margin);
  output_ = p_ + integral_ + d_;
  // Quantize with hysteresis around the last proposal (kept inside the bounds in force).
  const double last = std::clamp(static_cast<double>(workers_), lo, hi);
  double target = std::abs(output_ - last) <= 0.5 + params_.output_hysteresis
                      ? last
                      : std::clamp(std::round(output_), lo, hi);
  // The scale-down floor (see the class comment): never below what the busy workers need.
  floored_ = false;
  if (target < last && params_.scale_down_utilization > 0.0 && busy_ > 0.0) {
    const double floor = std::min(last, std::ceil(busy_ / params_.scale_down_utilization - 1e-9));
    if (floor > target) {
      target = floor;
      floored_ = true;
    }
  }
  workers_ = static_cast<int>(target);
  if (!obs.explain) return {workers_, {}};
  return {workers_, reason()};
}

std::string PidPolicy::reason() const {
  const bool drain = drain_time_;
  // Appended piece by piece into one buffer: one allocation (the numbers are short strings).
  std::string text;
  text.reserve(128);
  text += drain ? "drain time " : "lag ";
  text += drain ? fixed(measurement_, 1) : fixed(measurement_, 0);
  text += drain ? " s vs setpoint " : " vs setpoint ";
  text += num(params_.setpoint);
  if (drain) text += " s";
  if (effective_error_ == 0.0) {
    text += " (within dead band ";
    text += num(params_.dead_band);
    text += ")";
  }
  text += ": P ";
  text += signed_fixed(p_, 2);
  text += " I ";
  text += fixed(integral_, 2);
  text += " D ";
  text += signed_fixed(d_, 2);
  text += " = ";
  text += fixed(output_, 2);
  text += " -> ";
  if (floored_) {
    text += "held at ";
    text += std::to_string(workers_);
    text += " (busy ";
    text += fixed(busy_, 1);
    text += " workers at most ";
    text += num(params_.scale_down_utilization * 100);
    text += "% of the pool)";
  } else {
    text += std::to_string(workers_);
  }
  return text;
}

nlohmann::json PidPolicy::state() const {
  return {{"measurement", measurement_},
          {"setpoint", params_.setpoint},
          {"error", error_},
          {"effective_error", effective_error_},
          {"p", p_},
          {"i", integral_},
          {"d", d_},
          {"derivative", derivative_},
          {"output", output_},
          {"workers", workers_},
          {"integrating", integrating_},
          {"floored", floored_},
          {"busy", busy_}};
}

}  // namespace lagpilot
