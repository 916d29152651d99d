#include "controller/metrics/pacing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <numeric>
#include <utility>

#include "policies/config_reader.h"
#include "policies/number_text.h"
#include "policies/usl_fit.h"

namespace lagpilot {
namespace {

std::string percent(double fraction) {
  return std::to_string(static_cast<int>(std::lround(fraction * 100))) + " %";
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

void PacingConfig::check_headroom(double headroom, const std::string& where) {
  if (!(headroom >= kMinHeadroom - 1e-12 && headroom <= kMaxHeadroom + 1e-12)) {
    throw ConfigError(where, "burst headroom must be between " + percent(kMinHeadroom) + " and " +
                                 percent(kMaxHeadroom) + " (0.2 to 0.3), got " +
                                 text::num(headroom));
  }
}

PacingConfig PacingConfig::from_json(const nlohmann::json& j, const std::string& path) {
  PacingConfig c;
  JsonObjectReader r(j, path);
  r.read("headroom", c.headroom);
  r.finish();
  check_headroom(c.headroom, r.path_of("headroom"));
  return c;
}

nlohmann::json PacingConfig::to_json() const {
  return {{"headroom", headroom}};
}

PacingRecommendation PacingRecommendation::from_rate(double sustainable_rate, double headroom,
                                                     double tick_seconds, int max_workers,
                                                     std::string source,
                                                     double as_of_unix_seconds) {
  PacingRecommendation p;
  p.headroom = headroom;
  p.max_workers = max_workers;
  if (!std::isfinite(sustainable_rate) || sustainable_rate <= 0) return p;
  p.available = true;
  p.sustainable_rate = sustainable_rate;
  p.rate = sustainable_rate * (1.0 - headroom);
  p.burst = std::max(1.0, std::ceil(headroom * sustainable_rate * tick_seconds - 1e-9));
  p.source = std::move(source);
  p.as_of_unix_seconds = as_of_unix_seconds;
  return p;
}

PacingRecommendation PacingRecommendation::from_calibration(const nlohmann::json& record,
                                                            int max_workers, double headroom,
                                                            double tick_seconds) {
  PacingRecommendation none;
  none.headroom = headroom;
  none.max_workers = max_workers;
  if (!record.is_object()) return none;
  double as_of = -1;
  if (const auto it = record.find("date"); it != record.end() && it->is_string()) {
    as_of = parse_utc_iso8601(it->get<std::string>());
  }
  const double sustained = number_or(record, "sustained_rate", 0);
  const double workers = number_or(record, "sustained_workers", 0);
  if (sustained > 0 && workers == max_workers) {
    return from_rate(sustained, headroom, tick_seconds, max_workers, "calibration", as_of);
  }
  const auto fit = record.find("fit");
  if (fit == record.end() || !fit->is_object() || !fit->value("valid", false)) return none;
  UslModel m;
  m.valid = true;
  m.lambda = number_or(*fit, "lambda", 0);
  m.sigma = number_or(*fit, "sigma", 0);
  m.kappa = number_or(*fit, "kappa", 0);
  if (!(m.lambda > 0) || max_workers < 1) return none;
  return from_rate(m.throughput(max_workers), headroom, tick_seconds, max_workers,
                   "calibration_fit", as_of);
}

nlohmann::json pacing_json(const PacingRecommendation& p, double now_unix_seconds) {
  const auto or_null = [&](double v) { return p.available ? nlohmann::json(v) : nullptr; };
  const bool dated = p.available && p.as_of_unix_seconds >= 0;
  return {
      {"rate", or_null(p.rate)},
      {"burst", or_null(p.burst)},
      {"sustainable_rate", or_null(p.sustainable_rate)},
      {"headroom", p.headroom},
      {"max_workers", p.max_workers},
      {"source", p.available ? p.source : std::string("none")},
      {"as_of_unix_seconds", dated ? nlohmann::json(p.as_of_unix_seconds) : nullptr},
      {"age_seconds",
       dated ? nlohmann::json(std::max(0.0, now_unix_seconds - p.as_of_unix_seconds)) : nullptr}};
}

double parse_utc_iso8601(const std::string& text) {
  std::tm tm{};
  char z = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) != 7 ||
      z != 'Z') {
    return -1;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t t = timegm(&tm);
  return t < 0 ? -1 : static_cast<double>(t);
}

PacingEstimator::PacingEstimator(PacingConfig config, double tick_seconds,
                                 nlohmann::json calibration)
    : config_(config),
      tick_seconds_(tick_seconds > 0 ? tick_seconds : 1.0),
      calibration_(std::move(calibration)) {
  last_.headroom = config_.headroom;
}

const PacingRecommendation& PacingEstimator::update(const Observation& o, int max_workers,
                                                    double now_unix_seconds) {
  max_workers = std::max(1, max_workers);
  if (max_workers != max_workers_) {  // the bound moved: what was measured at the old one is moot
    max_workers_ = max_workers;
    samples_.clear();
    previous_qualified_ = false;
    calibrated_ = PacingRecommendation::from_calibration(calibration_, max_workers,
                                                         config_.headroom, tick_seconds_);
  }
  const bool rate_ok = std::isfinite(o.processed_rate) && o.processed_rate > 0;
  // At max workers with a backlog: the tick window ended with lag, and began with it (the
  // previous tick qualified on its own end), and the workers were busy nearly all the time, so
  // the consumer never waited for arrivals. Lag alone is not enough: what is fetched but not
  // yet done counts as lag, so a consumer that a paced producer keeps below its capacity has
  // some at every tick, and measuring it would lower the recommendation tick after tick.
  const bool saturated =
      std::isfinite(o.busy_workers) && o.busy_workers >= kSaturatedBusyShare * o.current_workers;
  const bool qualified = o.current_workers >= max_workers && o.total_lag > 0 && saturated;
  if (qualified && previous_qualified_ && rate_ok) {
    samples_.push_back(o.processed_rate);
    if (samples_.size() > static_cast<std::size_t>(kMeasuredWindow)) samples_.pop_front();
    measured_at_ = now_unix_seconds;
  }
  previous_qualified_ = qualified;
  if (rate_ok && std::isfinite(o.busy_workers) && o.busy_workers >= 0.05) {
    per_worker_rate_ = o.processed_rate / o.busy_workers;
    per_worker_at_ = now_unix_seconds;
  }

  if (!samples_.empty()) {
    const double mean = std::accumulate(samples_.begin(), samples_.end(), 0.0) /
                        static_cast<double>(samples_.size());
    last_ = PacingRecommendation::from_rate(mean, config_.headroom, tick_seconds_, max_workers,
                                            "measured", measured_at_);
  } else if (calibrated_.available) {
    last_ = calibrated_;
  } else {
    last_ = PacingRecommendation::from_rate(per_worker_rate_ * max_workers, config_.headroom,
                                            tick_seconds_, max_workers, "per_worker_estimate",
                                            per_worker_at_);
  }
  return last_;
}

}  // namespace lagpilot
