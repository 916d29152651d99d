#include "policies/model_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "policies/config_reader.h"
#include "policies/infinity.h"
#include "policies/number_text.h"
#include "policies/worker_count.h"

namespace lagpilot {
namespace {

// A probe past the fitted peak needs the last workers measured to have added at least this
// fraction of an average worker's throughput. At 0.9 N* the USL curve's marginal efficiency
// is about 0.1 (for sigma, kappa in the usual ranges), at N* it is 0.
constexpr double kProbeEfficiency = 0.25;
// A sample into a bin holding less than this weight refits at once; otherwise the fit is
// refreshed every kRefitEvery samples.
constexpr double kThinBin = 30.0;
constexpr int kRefitEvery = 10;
// Worker counts of the pseudo-samples that stand for a seed curve.
constexpr double kSeedWorkers[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};

using text::fixed;
using text::general;
using text::num;

std::string percent(double fraction) {
  return general(fraction * 100.0, 3) + "%";
}

}  // namespace

ModelParams ModelParams::from_json(const nlohmann::json& j, const std::string& path) {
  ModelParams p;
  JsonObjectReader r(j.is_null() ? nlohmann::json::object() : j, path);
  r.read("target_utilization", p.target_utilization, 0.0, 1.0);
  if (!(p.target_utilization > 0.0)) {
    throw ConfigError(r.path_of("target_utilization"),
                      "must be > 0, got " + num(p.target_utilization));
  }
  r.read("scale_down_utilization", p.scale_down_utilization, 0.0, 1.0);
  if (!(p.scale_down_utilization < p.target_utilization)) {
    throw ConfigError(r.path_of("scale_down_utilization"),
                      "must be < target_utilization (" + num(p.target_utilization) + "), got " +
                          num(p.scale_down_utilization));
  }
  r.read("catch_up_seconds", p.catch_up_seconds, 0.0, 86400.0 * 365);
  if (!(p.catch_up_seconds > 0.0)) {
    throw ConfigError(r.path_of("catch_up_seconds"), "must be > 0, got " + num(p.catch_up_seconds));
  }
  r.read("min_busy_workers", p.min_busy_workers, 0.0, 1e6);
  if (!(p.min_busy_workers > 0.0)) {
    throw ConfigError(r.path_of("min_busy_workers"), "must be > 0, got " + num(p.min_busy_workers));
  }
  r.read("saturated_fraction", p.saturated_fraction, 0.0, 1.0);
  if (!(p.saturated_fraction > 0.0)) {
    throw ConfigError(r.path_of("saturated_fraction"),
                      "must be > 0, got " + num(p.saturated_fraction));
  }
  r.read("unsaturated_weight", p.unsaturated_weight, 0.0, 1.0);
  if (!(p.unsaturated_weight > 0.0)) {
    throw ConfigError(r.path_of("unsaturated_weight"),
                      "must be > 0, got " + num(p.unsaturated_weight));
  }
  r.read("forgetting", p.forgetting, 0.0, 1.0);
  if (!(p.forgetting > 0.0)) {
    throw ConfigError(r.path_of("forgetting"), "must be > 0, got " + num(p.forgetting));
  }
  r.read("min_distinct_workers", p.min_distinct_workers, 1, 64);
  r.read("max_extrapolation", p.max_extrapolation, 1.0, 1000.0);
  r.read("explore_after_ticks", p.explore_after_ticks, 1, 1000);
  r.read("peak_fraction", p.peak_fraction, 0.0, 1.0);
  if (!(p.peak_fraction > 0.0)) {
    throw ConfigError(r.path_of("peak_fraction"), "must be > 0, got " + num(p.peak_fraction));
  }
  if (const nlohmann::json* seed = r.raw("fit"); seed && !seed->is_null()) {
    JsonObjectReader s(*seed, r.path_of("fit"));
    if (!s.has("lambda")) throw ConfigError(s.path_of("lambda"), "is required");
    UslSeed u;
    s.read("lambda", u.lambda, 0.0);
    if (!(u.lambda > 0.0)) throw ConfigError(s.path_of("lambda"), "must be > 0, got 0");
    s.read("sigma", u.sigma, 0.0, 1.0);
    s.read("kappa", u.kappa, 0.0, 1.0);
    s.finish();
    p.fit = u;
  }
  r.finish();
  return p;
}

nlohmann::json ModelParams::to_json() const {
  nlohmann::json seed = nullptr;
  if (fit) seed = {{"lambda", fit->lambda}, {"sigma", fit->sigma}, {"kappa", fit->kappa}};
  return {{"target_utilization", target_utilization},
          {"scale_down_utilization", scale_down_utilization},
          {"catch_up_seconds", catch_up_seconds},
          {"min_busy_workers", min_busy_workers},
          {"saturated_fraction", saturated_fraction},
          {"unsaturated_weight", unsaturated_weight},
          {"forgetting", forgetting},
          {"min_distinct_workers", min_distinct_workers},
          {"max_extrapolation", max_extrapolation},
          {"explore_after_ticks", explore_after_ticks},
          {"peak_fraction", peak_fraction},
          {"fit", seed}};
}

namespace {

UslFitOptions fit_options(const ModelParams& p) {
  UslFitOptions o;
  o.forgetting = p.forgetting;
  o.min_distinct_workers = 1;  // partial fits drive the fallback; the policy checks the count
  return o;
}

}  // namespace

ModelPolicy::ModelPolicy(ModelParams params)
    : params_(std::move(params)), fit_(fit_options(params_)) {
  // The weight of a bin after explore_after_ticks ticks (with forgetting), less rounding.
  const double f = params_.forgetting;
  const int k = params_.explore_after_ticks;
  explore_weight_ = (f < 1.0 ? (1.0 - std::pow(f, k)) / (1.0 - f) : k) * (1.0 - 1e-9);
  if (params_.fit) {
    UslModel seed;
    seed.valid = true;
    seed.lambda = params_.fit->lambda;
    seed.sigma = params_.fit->sigma;
    seed.kappa = params_.fit->kappa;
    // Each count of the seed weighs as much as explore_after_ticks ticks measured there.
    for (double n : kSeedWorkers) {
      for (int i = 0; i < k; ++i) fit_.add({n, seed.throughput(n), 1.0});
    }
    refresh_fit();
  }
}

nlohmann::json ModelPolicy::params() const {
  nlohmann::json j = params_.to_json();
  // Until a real sample arrives, the seed as given (so the params round-trip exactly).
  if (learned_ticks_ > 0 && model_.valid &&
      model_.distinct_workers >= params_.min_distinct_workers) {
    j["fit"] = {{"lambda", model_.lambda}, {"sigma", model_.sigma}, {"kappa", model_.kappa}};
  }
  return j;
}

void ModelPolicy::learn(const Observation& obs) {
  if (!std::isfinite(obs.time)) return;
  if (learned_any_time_ && !(obs.time > last_learn_time_)) return;  // nothing new
  learned_any_time_ = true;
  last_learn_time_ = obs.time;
  const bool queued_before = queued_at_last_tick_;
  queued_at_last_tick_ = obs.queue_depth > 0;
  // The first window after the pool changed size straddles the change (workers retiring after
  // the message in hand, or warming up): not a clean measurement of either size.
  const bool resized = last_pool_ >= 0 && obs.current_workers != last_pool_;
  last_pool_ = obs.current_workers;
  if (resized) return;
  const double busy = obs.busy_workers;
  const double processed = obs.processed_rate;
  if (!std::isfinite(busy) || !std::isfinite(processed) || !(processed > 0.0) ||
      busy < params_.min_busy_workers) {
    return;
  }
  // Busy workers sample the curve at the concurrency a busy worker sees, not at the mean busy
  // count b: busy periods cluster, and a message that starts on an idle worker finds the
  // others busy as they are on average (Poisson arrivals see time averages), so it runs with
  // b others: b + 1 in all, capped at the pool (saturated, it is the pool). The per-worker
  // rate processed / b holds at that concurrency.
  const double pool = std::max(static_cast<double>(obs.current_workers), busy);
  // Work queued at both ends of the window while workers sat idle means those were not
  // productive yet (warming up): the productive ones were busy throughout, and the concurrency
  // is the busy count itself. (Queued only at the end, the load may have arrived mid-window:
  // then the window mixes an idle part and a busy one.)
  const bool queued = obs.queue_depth > 0 && queued_before;
  const bool saturated = queued || busy >= params_.saturated_fraction * pool;
  const double concurrency = queued ? busy : std::min(busy + 1.0, pool);
  const double weight = saturated ? 1.0 : params_.unsaturated_weight;
  const double held = fit_.bin_weight(concurrency);
  if (!fit_.add({concurrency, processed * concurrency / busy, weight})) return;
  ++learned_ticks_;
  // Refitting costs tens of microseconds, most ticks of a long simulation learn, and one more
  // sample in a well-filled bin barely moves the curve: refit at once for a new or thin bin,
  // else every kRefitEvery samples.
  if (held < kThinBin || ++since_refit_ >= kRefitEvery) refresh_fit();
}

void ModelPolicy::refresh_fit() {
  since_refit_ = 0;
  model_ = fit_.model();
  const UslModel& full = fit_.full_model();
  full_peak_ = full.valid ? full.peak_workers() : kInf;
  // Over the well-measured counts (explore_after_ticks ticks or more): the largest (top), the
  // one below it (next) and the one of highest throughput (best).
  const std::vector<UslPoint> points = fit_.points();
  const UslPoint* top = nullptr;
  const UslPoint* next = nullptr;
  const UslPoint* best = nullptr;
  for (const UslPoint& p : points) {
    if (p.weight < explore_weight_) continue;
    next = top;
    top = &p;
    if (!best || p.throughput > best->throughput) best = &p;
  }
  largest_measured_ = top ? top->workers : 0.0;
  // "Clearly more": by more than two standard errors (the relative noise of one tick taken as
  // at least 3 %, as in the fit).
  auto clearly_more = [](const UslPoint& a, const UslPoint& b) {
    auto variance = [](const UslPoint& p) {
      const double sd = std::max(p.relative_sd, UslFitOptions{}.noise_floor) * p.throughput;
      return sd * sd / p.weight;
    };
    return a.throughput - b.throughput > 2.0 * std::sqrt(variance(a) + variance(b));
  };
  // Past the peak (the fallback's cap): the largest count measured clearly less than another.
  best_measured_ = best && best != top && clearly_more(*best, *top) ? best->workers : kInf;
  // Still rising at the top: clearly more there than at the count below.
  rising_at_top_ = top && next && clearly_more(*top, *next);
  // What the last workers measured added, relative to the average worker, from the count
  // below the top to the top: 1 for linear scaling, 0 at the peak.
  measured_efficiency_ = 1.0;
  if (top && next && top->workers > next->workers && top->throughput > 0.0) {
    const double marginal = (top->throughput - next->throughput) / (top->workers - next->workers);
    measured_efficiency_ = std::clamp(marginal / (top->throughput / top->workers), 0.0, 1.0);
  }
  // The same on the curve (the three-parameter fit when there is one: it bends first), less
  // noisy than two bins: X'(n) / (X(n) / n) = 1 - n (sigma + kappa (2n - 1)) / D(n).
  const UslModel& curve = full.valid ? full : model_;
  marginal_efficiency_ = 1.0;
  if (curve.valid && top) {
    const double n = top->workers;
    const double d = 1.0 + curve.sigma * (n - 1.0) + curve.kappa * n * (n - 1.0);
    marginal_efficiency_ =
        std::clamp(1.0 - n * (curve.sigma + curve.kappa * (2.0 * n - 1.0)) / d, 0.0, 1.0);
  }
}

Proposal ModelPolicy::decide(const Observation& obs) {
  learn(obs);
  const int lo = obs.min_workers;
  const int hi = std::max(obs.min_workers, obs.max_workers);
  const int current = obs.current_workers;
  const double arrival =
      std::isfinite(obs.arrival_rate) && obs.arrival_rate > 0.0 ? obs.arrival_rate : 0.0;
  const double lag = obs.total_lag > 0 ? static_cast<double>(obs.total_lag) : 0.0;
  demand_ = arrival + lag / params_.catch_up_seconds;

  // The curve in use and how far it may be trusted.
  const UslModel& curve = model_;
  cap_ = kInf;
  peak_ = kInf;
  if (!model_.valid) {
    mode_ = "none";
  } else if (model_.distinct_workers >= params_.min_distinct_workers) {
    mode_ = "fit";
    cap_ = std::max(1.0, std::floor(params_.peak_fraction * model_.peak_workers()));
    peak_ = std::max(1.0, std::floor(model_.peak_workers()));
  } else {
    mode_ = "fallback";
    if (std::isfinite(best_measured_)) cap_ = peak_ = std::max(1.0, std::round(best_measured_));
  }
  // Measured throughput still rising clearly and steeply at the top contradicts a peak fitted
  // at or below it: probe one more worker (the fit then sees the next count). Near a real peak
  // the last workers add little (the curve is flat there), so noise cannot trigger it.
  probing_ = rising_at_top_ && measured_efficiency_ >= kProbeEfficiency &&
             cap_ < std::floor(largest_measured_) + 1.0;
  if (probing_) {
    cap_ = std::floor(largest_measured_) + 1.0;
    peak_ = std::max(peak_, cap_);
  }
  const double largest = largest_measured_;

  int target = current;
  needed_ = 0.0;
  explore_ = kInf;
  utilization_ = 0.0;
  int up = current;
  if (curve.valid) {
    needed_ = curve.workers_for(demand_ / params_.target_utilization);
    // Into unmeasured counts: geometric steps (at least one worker), but not past where the
    // three-parameter fit puts the peak (less the margin) unless the probe says the measured
    // throughput still climbs steeply there.
    const double next_count = std::floor(largest) + 1.0;
    const double growth = 1.0 + (params_.max_extrapolation - 1.0) * marginal_efficiency_;
    double step = std::min(std::max(next_count, std::ceil(growth * largest - 1e-9)),
                           std::floor(params_.peak_fraction * full_peak_));
    if (probing_) step = std::max(step, next_count);
    explore_ = std::max(static_cast<double>(std::max(current, 0)), step);
    const double up_real =
        std::min({std::isfinite(needed_) ? std::ceil(needed_ - 1e-9) : kInf, cap_, explore_});
    up = to_workers(up_real);
    const double x_current = curve.throughput(current);
    utilization_ = x_current > 0.0 ? demand_ / x_current : kInf;
    if (current < up) {
      target = up;
    } else if (current > peak_) {
      target = to_workers(cap_);
    } else if (utilization_ < params_.scale_down_utilization) {
      target = up;
    }
  }
  workers_ = std::clamp(target, lo, hi);
  if (!obs.explain) return {workers_, {}};

  std::string reason;
  reason.reserve(200);
  if (mode_ == "none") {
    reason = "no rate measured yet: hold " + std::to_string(current);
  } else {
    if (mode_ == "fallback") {
      reason += "fallback (" + std::to_string(model_.distinct_workers) + " of " +
                std::to_string(params_.min_distinct_workers) + " worker counts measured): ";
    }
    reason += "fit lambda=" + general(curve.lambda, 4) + " sigma=" + general(curve.sigma, 3) +
              " kappa=" + general(curve.kappa, 3) + " R2=" + fixed(curve.r_squared, 3) + ": ";
    reason += std::isfinite(needed_) ? "need " + fixed(needed_, 1) + " workers"
                                     : "beyond the peak " + general(curve.peak_throughput(), 4) +
                                           "/s: need more than any pool";
    reason += " for " + general(arrival, 4) + "/s + lag " + std::to_string(obs.total_lag) + " in " +
              num(params_.catch_up_seconds) + " s at " + percent(params_.target_utilization) + ": ";
    if (target > current) {
      reason += "scale up to " + std::to_string(target);
    } else if (target < current && current > peak_) {
      reason += "scale down to " + std::to_string(target);
    } else if (target < current) {
      reason += "scale down to " + std::to_string(target) + " (" + std::to_string(current) +
                " would run at " + percent(utilization_) + " < " +
                percent(params_.scale_down_utilization) + ")";
    } else if (up == current && std::isfinite(explore_) && up == to_workers(explore_) &&
               !(std::ceil(needed_ - 1e-9) <= current)) {
      reason += "hold " + std::to_string(current) + " (measuring " + std::to_string(current) +
                " before going further)";
    } else {
      reason += "hold " + std::to_string(current);
      if (std::isfinite(utilization_)) reason += " (runs at " + percent(utilization_) + ")";
    }
    if (probing_ && target == to_workers(cap_) && target != current) {
      reason += " (probe: throughput still rising at " + fixed(largest, 1) +
                " workers, past the fitted peak N*=" + fixed(model_.peak_workers(), 1) + ")";
    } else if (std::isfinite(cap_) && target == to_workers(cap_) && target != current) {
      reason += mode_ == "fit" ? " (cap: " + general(params_.peak_fraction, 3) +
                                     " x peak N*=" + fixed(model_.peak_workers(), 1) + ")"
                               : " (cap: throughput fell past " + num(cap_) + " workers)";
    } else if (target == up && std::isfinite(explore_) && up == to_workers(explore_) &&
               target != current) {
      reason += " (explore: at most " + num(explore_) + ": " +
                general(1.0 + (params_.max_extrapolation - 1.0) * marginal_efficiency_, 3) +
                " x the largest measured " + fixed(largest, 1);
      if (std::isfinite(full_peak_)) reason += ", 3-parameter N*=" + fixed(full_peak_, 1);
      reason += ")";
    }
  }
  if (workers_ != target) {
    reason += "; bounds [" + std::to_string(lo) + ", " + std::to_string(hi) +
              "]: " + std::to_string(workers_);
  }
  return {workers_, std::move(reason)};
}

nlohmann::json ModelPolicy::state() const {
  nlohmann::json j = model_.to_json();
  j["mode"] = mode_;
  j["demand"] = demand_;
  j["needed_workers"] = finite_or_null(needed_);
  j["cap"] = finite_or_null(cap_);
  j["peak_limit"] = finite_or_null(peak_);
  j["explore_limit"] = finite_or_null(explore_);
  j["probing"] = probing_;
  j["marginal_efficiency"] = marginal_efficiency_;
  j["utilization"] = finite_or_null(utilization_);
  j["workers"] = workers_;
  j["learned_ticks"] = learned_ticks_;
  return j;
}

}  // namespace lagpilot
