#pragma once
// The `model` policy: DS2-style sizing from a measured scaling curve.
//
// Thread-safety: like every Policy, not thread-safe; the ControlLoop serialises calls.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "policies/policy.h"
#include "policies/usl_fit.h"

namespace lagpilot {

// A known curve to start from (for example what `lagpilot calibrate` measured).
struct UslSeed {
  double lambda = 0.0;  // messages/s of one worker, > 0
  double sigma = 0.0;   // contention, in [0, 1]
  double kappa = 0.0;   // coherency, >= 0
};

struct ModelParams {
  // Size the pool so that the demand (arrival rate + lag / catch_up_seconds) uses at most this
  // fraction of the predicted throughput, in (0, 1].
  double target_utilization = 0.7;
  // Shrink only when the current pool's predicted utilization falls below this, in
  // [0, target_utilization): the band between the two is where the pool holds still.
  double scale_down_utilization = 0.55;
  // Seconds in which the backlog should be drained, on top of the arrivals, > 0.
  double catch_up_seconds = 60.0;
  // Learn from a tick only when at least this many workers were busy on average (> 0): below
  // one worker the rate of a tick is mostly noise.
  double min_busy_workers = 1.0;
  // A tick is saturated when busy_workers >= saturated_fraction x current_workers (or messages
  // were queued throughout its window), in (0, 1]: the pool was at work, and the tick measured
  // its capacity directly.
  double saturated_fraction = 0.9;
  // The weight of an unsaturated tick relative to a saturated one, in (0, 1]: its concurrency
  // is inferred (see the class comment), good to a few per cent, where a saturated tick is
  // exact. 0.03: about thirty unsaturated ticks count as one saturated tick.
  double unsaturated_weight = 0.03;
  // Forgetting factor, in (0, 1] (UslFitOptions::forgetting): each saturated tick learned at a
  // worker count discounts what was learned before at that count by this (an unsaturated one by
  // this^unsaturated_weight); 0.995 remembers about the last 200 saturated ticks at each count;
  // 1 never forgets.
  double forgetting = 0.995;
  // Distinct worker counts measured before the fitted curve is trusted, in [1, 64]; with fewer,
  // the fallback rule (see the class comment) decides.
  int min_distinct_workers = 3;
  // Largest step into unmeasured worker counts, as a factor of the largest concurrency
  // measured (scaled down as the curve flattens; at least one worker), >= 1: the curve is not
  // trusted far beyond its data.
  double max_extrapolation = 1.5;
  // A concurrency counts as measured for max_extrapolation only once it was seen on at least
  // this many ticks' worth of weight (saturated ticks; unsaturated ones count
  // unsaturated_weight each), in [1, 1000]: one noisy tick is no ground to extrapolate from.
  int explore_after_ticks = 3;
  // Never propose more than floor(peak_fraction x N*) workers (N* the fitted peak), in (0, 1].
  // Throughput is flat near the peak: 0.85 N* gives up 1-2 % of it and keeps a margin for the
  // error in N* (about 10 % from a few noisy scale steps).
  double peak_fraction = 0.85;
  // Optional starting curve: {"lambda": L, "sigma": S, "kappa": K}, or null. It enters the fit
  // as explore_after_ticks exact pseudo-samples at each of 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48
  // and 64 workers, which measurements at those counts then outweigh (forgetting washes the seed
  // out there).
  std::optional<UslSeed> fit;

  // Throws ConfigError naming the field ("policy.params.catch_up_seconds: must be > 0, got 0").
  static ModelParams from_json(const nlohmann::json& j, const std::string& path);
  nlohmann::json to_json() const;
};

// Algorithm (DS2: measure the true rate, then size; plus a scaling curve).
//
// Learning. Every tick with at least min_busy_workers busy workers on average gives a point of
// the capacity curve: processed_rate / busy_workers is the true rate per worker (DS2's
// "processed over useful time") whatever the load, and warming or idle workers do not bias it.
// That rate holds at the concurrency a busy worker sees, which exceeds the mean busy count b
// (busy periods cluster: a message starting on an idle worker finds b others busy on average),
// so the point is (c, c x processed_rate / b) with c = min(b + 1, pool). A window that starts
// and ends with messages queued (Observation::queue_depth > 0 at this tick and the one before)
// had every productive worker busy throughout (idle ones were still warming up): c = b exactly.
// Saturated ticks (queued so, or b >= saturated_fraction x pool) weigh 1, the others
// unsaturated_weight: their concurrency is inferred, good to a few per cent. Ticks with a
// repeated or earlier time teach nothing, nor does the first tick after the pool changed size
// (its window straddles the change). UslFit (usl_fit.h) aggregates the points per worker count
// with forgetting and fits X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1)).
//
// Sizing. demand D = arrival_rate + lag / catch_up_seconds. The curve in use is the fit once it
// has min_distinct_workers distinct worker counts. Before that (the fallback) it is the partial
// fit of the counts there are: lambda alone, or lambda and one of sigma, kappa. Linear scaling
// is optimistic, so the fallback under-sizes rather than over-sizes, and the next tick, now
// saturated, measures the new size.
//   need    = the real N with X(N) = D / target_utilization (UslModel::workers_for)
//   cap     = floor(peak_fraction x N*) with the fit; in the fallback, the measured count of
//             highest throughput when a larger count measured clearly less (past the peak)
//   peak    = floor(N*) with the fit; in the fallback, the cap
//   probe   : when the measured throughput at the largest well-measured concurrency (see
//             explore) beats the next one down by more than two standard errors and by at
//             least a quarter of an average worker per added worker, the peak is not there
//             yet, whatever the fit says (noise at a few small counts can pass for a peak):
//             cap and peak are raised to that concurrency + 1
//   explore = max(current, min(max(largest + 1, ceil(g x largest)),
//                              floor(peak_fraction x N*full)))    (largest + 1 when probing)
//             largest: the largest concurrency measured on explore_after_ticks ticks' worth;
//             g = 1 + (max_extrapolation - 1) x e, e the marginal efficiency there on the
//             three-parameter fit, X'(n) / (X(n) / n) (1 for linear scaling, 0 at a peak);
//             N*full: the peak of the three-parameter fit (UslFit::full_model(), which sees a
//             peak coming before the model selection admits kappa). So the first scale-ups are
//             geometric steps (x1.5 for linear scaling), each waiting until the new size is
//             measured, shrinking as the curve bends: the curve is not trusted beyond its data.
//   up      = min(ceil(need), cap, explore)
//   current < up                                  -> up
//   current > peak                                -> cap (between cap and peak: a band, so
//                                                    that noise in N* does not flap the pool)
//   D / X(current) < scale_down_utilization       -> up (shrink)
//   otherwise                                     -> current (inside the band: hold)
// and the result is clamped to [obs.min_workers, obs.max_workers]. With no point at all yet,
// the pool is held as it is.
class ModelPolicy : public Policy {
 public:
  explicit ModelPolicy(ModelParams params = {});

  std::string name() const override { return "model"; }
  bool reads_latency() const override { return false; }  // sizes from lag and rates
  Proposal decide(const Observation& obs) override;
  // The params; "fit" holds the current fitted curve once there is one (else the seed, or null),
  // so a policy built from them starts where this one is.
  nlohmann::json params() const override;
  // mode ("fit", "fallback", "none"), the fit (UslModel::to_json keys), demand,
  // needed_workers (null: beyond the peak), cap and peak_limit (null: none), explore_limit,
  // probing, marginal_efficiency, utilization (of the current pool, predicted; null without a
  // curve), workers, learned_ticks.
  nlohmann::json state() const override;

  // The curve fitted so far (valid once at least one tick was learned).
  const UslModel& fitted() const { return model_; }
  // The last decide()'s cap: no proposal above it (floor(peak_fraction x N*) with the fit, the
  // fallback's or the probe's, see the class comment); +infinity when there is none.
  double cap() const { return cap_; }

 private:
  void learn(const Observation& obs);
  void refresh_fit();  // model_ and the measured extremes from fit_

  ModelParams params_;
  UslFit fit_;
  UslModel model_;  // fit_.model() at the last refresh_fit()
  bool learned_any_time_ = false;
  double last_learn_time_ = 0.0;
  int last_pool_ = -1;                // current_workers at the last learned-from tick
  bool queued_at_last_tick_ = false;  // Observation::queue_depth > 0 then
  double explore_weight_ = 0.0;       // bin weight of explore_after_ticks ticks
  double full_peak_ = 0.0;            // N* of UslFit::full_model(); +infinity if none
  double largest_measured_ = 0.0;     // largest concurrency measured explore_after_ticks times
  double best_measured_ = 0.0;        // fallback cap: see refresh_fit(); +infinity if none
  bool rising_at_top_ = false;        // see refresh_fit()
  double marginal_efficiency_ = 1.0;  // on the fitted curve at the top; see refresh_fit()
  double measured_efficiency_ = 1.0;  // from the two top bins; see refresh_fit()
  bool probing_ = false;              // this tick's cap is a probe past the fitted peak
  int64_t learned_ticks_ = 0;
  int since_refit_ = 0;  // samples added since refresh_fit()
  // Last decision, for state().
  std::string mode_ = "none";
  double demand_ = 0.0;
  double needed_ = 0.0;
  double cap_ = 0.0;   // no scale-up beyond this
  double peak_ = 0.0;  // a pool beyond this is shrunk to cap_
  double explore_ = 0.0;
  double utilization_ = 0.0;
  int workers_ = 0;
};

}  // namespace lagpilot
