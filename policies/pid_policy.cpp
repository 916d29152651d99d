#include "policies/pid_policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

// printf("%.<precision>f") or printf("%.<precision>g") of `v`, with a leading '+' for a
// non-negative `v` when `plus` (like "%+"). std::to_chars writes exactly printf's text in the
// "C" locale, several times faster than snprintf, and decide() writes numbers every tick. Text
// longer than 48 - 1 characters (only a huge %f) is cut there, as snprintf into 48 bytes was.
std::string format_number(double v, std::chars_format format, int precision, bool plus = false) {
  char buf[48];
  char* first = buf;
  if (plus && !std::signbit(v)) *first++ = '+';
  const auto [end, error] = std::to_chars(first, buf + sizeof buf - 1, v, format, precision);
  if (error == std::errc()) return std::string(buf, end);
  const bool fixed = format == std::chars_format::fixed;
  std::snprintf(buf, sizeof buf, fixed ? (plus ? "%+.*f" : "%.*f") : (plus ? "%+.*g" : "%.*g"),
                precision, v);
  return buf;
}

// Writes the decimal digits of `n` backwards, ending at `end`; returns the first character.
char* write_digits_backwards(uint64_t n, char* end) {
  do {
    *--end = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  return end;
}

// printf("%.6g", v). Whole numbers below 10^6 (setpoints, dead bands) print as plain integers,
// which is what %.6g does with them, without to_chars.
std::string num(double v) {
  if (std::fabs(v) < 1e6 && v == std::trunc(v)) {
    char buf[16];
    char* first = write_digits_backwards(static_cast<uint64_t>(std::fabs(v)), buf + sizeof buf);
    if (std::signbit(v)) *--first = '-';  // "-0" for -0.0, as printf
    return std::string(first, buf + sizeof buf);
  }
  return format_number(v, std::chars_format::general, 6);
}

// printf("%.<precision>f", v) (with "%+" when `plus`). The reason prints five of these every
// tick, so the common case (precision 0..2, |v| < 10^13) avoids to_chars: |v| * 10^precision is
// split exactly into hi + lo (lo = fma(|v|, scale, -hi), the rounding error of the product),
// rounded to the nearest integer with ties to even on that exact value, as printf does, and
// written out with the decimal point put back. Everything else goes through format_number.
std::string fixed(double v, int precision, bool plus = false) {
  static constexpr double kScale[] = {1.0, 10.0, 100.0};
  const double a = std::fabs(v);
  if (precision < 0 || precision > 2 || !(a < 1e13)) {  // also NaN
    return format_number(v, std::chars_format::fixed, precision, plus);
  }
  const double scale = kScale[precision];
  const double hi = a * scale;  // < 10^15 < 2^52: the grid of hi holds 0.5
  const double lo = std::fma(a, scale, -hi);
  uint64_t n = static_cast<uint64_t>(hi);
  const double fraction = hi - static_cast<double>(n);  // exact
  if (fraction > 0.5 || (fraction == 0.5 && (lo > 0.0 || (lo == 0.0 && n % 2 != 0)))) ++n;
  char buf[32];
  char* first = buf + sizeof buf;
  for (int i = 0; i < precision; ++i) {
    *--first = static_cast<char>('0' + n % 10);
    n /= 10;
  }
  if (precision > 0) *--first = '.';
  first = write_digits_backwards(n, first);
  if (std::signbit(v)) {
    *--first = '-';  // also for -0.0 and for negatives that round to zero, as printf
  } else if (plus) {
    *--first = '+';
  }
  return std::string(first, buf + sizeof buf);
}
std::string signed_fixed(double v, int precision) {
  return fixed(v, precision, /*plus=*/true);
}

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
          {"tracking_time_seconds", tracking_time_seconds}};
}

PidPolicy::PidPolicy(PidParams params) : params_(std::move(params)) {}

double PidPolicy::measure(const Observation& obs) const {
  const double lag = static_cast<double>(std::max<int64_t>(obs.total_lag, 0));
  if (params_.metric != "drain_time") return lag;
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

  const double raw_measurement = measure(obs);
  if (!started_ || params_.measurement_filter_seconds <= 0.0) {
    measurement_ = raw_measurement;
  } else if (obs.time > prev_time_) {
    const double dt = obs.time - prev_time_;
    measurement_ +=
        dt / (params_.measurement_filter_seconds + dt) * (raw_measurement - measurement_);
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
      const double raw = (measurement_ - prev_measurement_) / dt;
      const double tau = params_.derivative_filter_seconds;
      const double alpha = tau > 0.0 ? dt / (tau + dt) : 1.0;
      derivative_ += alpha * (raw - derivative_);
      d_ = params_.kd * derivative_;

      // Back-calculation (tracking): pull the integral toward the proposal actually made last
      // tick (clamped to the bounds and quantized), so that I does not drift away from the
      // pool while the quantizer or a bound holds it.
      const double tracking =
          params_.tracking_time_seconds > 0.0
              ? (workers_ - output_) * std::min(1.0, dt / params_.tracking_time_seconds)
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
  const double target = std::abs(output_ - last) <= 0.5 + params_.output_hysteresis
                            ? last
                            : std::clamp(std::round(output_), lo, hi);
  workers_ = static_cast<int>(target);
  if (!obs.explain) return {workers_, {}};

  const bool drain = params_.metric == "drain_time";
  // Appended piece by piece into one buffer: one allocation (the numbers are short strings).
  std::string reason;
  reason.reserve(128);
  reason += drain ? "drain time " : "lag ";
  reason += drain ? fixed(measurement_, 1) : fixed(measurement_, 0);
  reason += drain ? " s vs setpoint " : " vs setpoint ";
  reason += num(params_.setpoint);
  if (drain) reason += " s";
  if (effective_error_ == 0.0) {
    reason += " (within dead band ";
    reason += num(params_.dead_band);
    reason += ")";
  }
  reason += ": P ";
  reason += signed_fixed(p_, 2);
  reason += " I ";
  reason += fixed(integral_, 2);
  reason += " D ";
  reason += signed_fixed(d_, 2);
  reason += " = ";
  reason += fixed(output_, 2);
  reason += " -> ";
  reason += std::to_string(workers_);
  return {workers_, std::move(reason)};
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
          {"integrating", integrating_}};
}

}  // namespace lagpilot
