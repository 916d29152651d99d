#include "policies/hybrid_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policies/config_reader.h"
#include "policies/infinity.h"
#include "policies/number_text.h"
#include "policies/worker_count.h"

namespace lagpilot {
namespace {

using text::fixed;
using text::num;

// The `model` keys that only its own sizing reads: hybrid sizes the pool itself, so they are
// neither written nor accepted under "model".
constexpr const char* kModelSizingKeys[] = {"target_utilization", "scale_down_utilization",
                                            "catch_up_seconds", "max_extrapolation"};

nlohmann::json learner_json(nlohmann::json model) {
  for (const char* key : kModelSizingKeys) model.erase(key);
  return model;
}

// A scale-up soon after a scale-down counts as the load's return (for the gap hold) only when it
// takes back at least this fraction of the workers that scale-down shed: the first step of a slow
// rise after a drop (5 -> 7 after 16 -> 5, a sawtooth's) is a new rise, not the old load back,
// and holding the next drop's surplus for it bought nothing.
constexpr double kReturnFraction = 0.5;

void require_positive(const JsonObjectReader& r, const std::string& key, double value) {
  if (!(value > 0.0)) throw ConfigError(r.path_of(key), "must be > 0, got " + num(value));
}

}  // namespace

HybridParams HybridParams::from_json(const nlohmann::json& j, const std::string& path) {
  HybridParams p;
  JsonObjectReader r(j.is_null() ? nlohmann::json::object() : j, path);
  r.read("rate_filter_seconds", p.rate_filter_seconds, 0.0, 86400.0);
  require_positive(r, "rate_filter_seconds", p.rate_filter_seconds);
  r.read("slow_rate_filter_seconds", p.slow_rate_filter_seconds, 0.0, 86400.0);
  require_positive(r, "slow_rate_filter_seconds", p.slow_rate_filter_seconds);
  r.read("target_utilization", p.target_utilization, 0.0, 1.0);
  require_positive(r, "target_utilization", p.target_utilization);
  r.read("scale_down_utilization", p.scale_down_utilization, 0.0, 1.0);
  require_positive(r, "scale_down_utilization", p.scale_down_utilization);
  if (p.scale_down_utilization > p.target_utilization) {
    throw ConfigError(r.path_of("scale_down_utilization"),
                      "must be <= target_utilization (" + num(p.target_utilization) + "), got " +
                          num(p.scale_down_utilization));
  }
  r.read("lag_allowance", p.lag_allowance, 0.0, 1e15);
  r.read("catch_up_seconds", p.catch_up_seconds, 0.0, 86400.0 * 365);
  require_positive(r, "catch_up_seconds", p.catch_up_seconds);
  r.read("scale_down_cost", p.scale_down_cost, 0.0, 1e12);
  r.read("reversal_margin", p.reversal_margin, 0.0, 10.0);
  r.read("level_margin", p.level_margin, 0.0, 10.0);
  r.read("burst_lag", p.burst_lag, 0.0, 1e15);
  r.read("burst_horizon_seconds", p.burst_horizon_seconds, 0.0, 86400.0);
  r.read("scale_down_lag_fraction", p.scale_down_lag_fraction, 0.0, 1.0);
  r.read("burst_margin", p.burst_margin, 0.0, 10.0);
  r.read("raw_burst_margin", p.raw_burst_margin, 0.0, 100.0);
  r.read("raw_burst_horizon_seconds", p.raw_burst_horizon_seconds, 0.0, 86400.0);
  r.read("chase_window_seconds", p.chase_window_seconds, 0.0, 86400.0);
  r.read("reversal_window_seconds", p.reversal_window_seconds, 0.0, 86400.0);
  require_positive(r, "reversal_window_seconds", p.reversal_window_seconds);
  r.read("gap_hold_seconds", p.gap_hold_seconds, 0.0, 86400.0);
  r.read("gap_hold_ratio", p.gap_hold_ratio, 0.0, 1e6);
  r.read("spike_lag", p.spike_lag, 0.0, 1e15);
  r.read("spike_min_seconds", p.spike_min_seconds, 0.0, 86400.0);
  r.read("spike_prior_seconds", p.spike_prior_seconds, 0.0, 86400.0);
  r.read("saturation_hold_seconds", p.saturation_hold_seconds, 0.0, 86400.0);
  r.read("plateau_cost", p.plateau_cost, 0.0, 1e12);
  r.read("calm_budget", p.calm_budget, 0.0, 100.0);
  r.read("calm_window_seconds", p.calm_window_seconds, 0.0, 86400.0 * 365);
  require_positive(r, "calm_window_seconds", p.calm_window_seconds);
  r.read("burst_calendar_intervals", p.burst_calendar_intervals, 0, 8);
  r.read("burst_calendar_tolerance", p.burst_calendar_tolerance, 0.0, 1.0);
  r.read("burst_calendar_lead_seconds", p.burst_calendar_lead_seconds, 0.0, 86400.0);
  if (const nlohmann::json* model = r.raw("model")) {
    if (model->is_object()) {
      for (const char* key : kModelSizingKeys) {
        if (model->contains(key)) {
          throw ConfigError(r.path_of("model") + "." + key,
                            "not used by hybrid, which sizes the pool itself (see its own keys)");
        }
      }
    }
    p.model = ModelParams::from_json(*model, r.path_of("model"));
  }
  r.finish();
  return p;
}

nlohmann::json HybridParams::to_json() const {
  return {{"rate_filter_seconds", rate_filter_seconds},
          {"slow_rate_filter_seconds", slow_rate_filter_seconds},
          {"target_utilization", target_utilization},
          {"scale_down_utilization", scale_down_utilization},
          {"lag_allowance", lag_allowance},
          {"catch_up_seconds", catch_up_seconds},
          {"scale_down_cost", scale_down_cost},
          {"reversal_margin", reversal_margin},
          {"level_margin", level_margin},
          {"burst_lag", burst_lag},
          {"burst_horizon_seconds", burst_horizon_seconds},
          {"scale_down_lag_fraction", scale_down_lag_fraction},
          {"burst_margin", burst_margin},
          {"raw_burst_margin", raw_burst_margin},
          {"raw_burst_horizon_seconds", raw_burst_horizon_seconds},
          {"chase_window_seconds", chase_window_seconds},
          {"reversal_window_seconds", reversal_window_seconds},
          {"gap_hold_seconds", gap_hold_seconds},
          {"gap_hold_ratio", gap_hold_ratio},
          {"spike_lag", spike_lag},
          {"spike_min_seconds", spike_min_seconds},
          {"spike_prior_seconds", spike_prior_seconds},
          {"saturation_hold_seconds", saturation_hold_seconds},
          {"plateau_cost", plateau_cost},
          {"calm_budget", calm_budget},
          {"calm_window_seconds", calm_window_seconds},
          {"burst_calendar_intervals", burst_calendar_intervals},
          {"burst_calendar_tolerance", burst_calendar_tolerance},
          {"burst_calendar_lead_seconds", burst_calendar_lead_seconds},
          {"model", learner_json(model.to_json())}};
}

HybridPolicy::HybridPolicy(HybridParams params)
    : params_(std::move(params)),
      learner_(params_.model),
      calendar_({params_.burst_calendar_intervals, params_.burst_calendar_tolerance}) {}

nlohmann::json HybridPolicy::params() const {
  nlohmann::json j = params_.to_json();
  j["model"] = learner_json(learner_.params());  // with the fitted curve once there is one
  return j;
}

double HybridPolicy::capacity(double workers) const {
  return learner_.fitted().valid ? learner_.fitted().throughput(workers) : 0.0;
}

void HybridPolicy::forget_scale_down() {
  surplus_ = 0.0;
  in_surplus_ = false;
  pending_down_ = 0;
  plateau_surplus_ = 0.0;
}

double HybridPolicy::calm_slack() const {
  return (1.0 + params_.calm_budget) * need_seconds_ - pool_seconds_;
}

double HybridPolicy::workers_for(double throughput) const {
  if (!(throughput > 0.0)) return 0.0;
  return learner_.fitted().valid ? learner_.fitted().workers_for(throughput) : kInf;
}

Proposal HybridPolicy::decide(const Observation& obs) {
  // The learner sees every tick (it skips the ones that teach nothing) and sets its cap.
  learner_.decide(obs);
  const int lo = obs.min_workers;
  const int hi = std::max(obs.min_workers, obs.max_workers);
  // While an operator pins the pool (and at the first tick after the pin, when the pool is still
  // the operator's size), hybrid plans for its own size: the pin is no pool it chose, so leaving
  // it owes no scale-down price, and the pool returns to the policy's size when the pin ends.
  const bool own_pool = (obs.pinned || was_pinned_) && own_ > 0;
  was_pinned_ = obs.pinned;
  const int current = own_pool ? own_ : obs.current_workers;
  const double arrival =
      std::isfinite(obs.arrival_rate) && obs.arrival_rate > 0.0 ? obs.arrival_rate : 0.0;
  const double lag = obs.total_lag > 0 ? static_cast<double>(obs.total_lag) : 0.0;

  double dt = 0.0;
  if (!started_) {
    started_ = true;
    rate_fast_ = rate_slow_ = arrival;
  } else if (std::isfinite(obs.time) && obs.time > last_time_) {
    dt = obs.time - last_time_;
    rate_fast_ += fast_gain_(dt, params_.rate_filter_seconds + dt) * (arrival - rate_fast_);
    rate_slow_ += slow_gain_(dt, params_.slow_rate_filter_seconds + dt) * (arrival - rate_slow_);
  }
  if (std::isfinite(obs.time) && (dt > 0.0 || last_pool_ < 0)) last_time_ = obs.time;
  // A resize (ours, a guard's or an operator's) starts a new dwell: the surplus is of this pool.
  if (current != last_pool_) {
    surplus_ = 0.0;
    plateau_surplus_ = 0.0;
    in_surplus_ = false;
    if (last_pool_ >= 0) {
      const bool up = current > last_pool_;
      // A scale-up soon after a scale-down that takes back a good part of what it shed: the load
      // came back after a gap that began when the shed surplus did, and the next scale-down holds
      // for as long (the gap hold). Any scale-down spends the hold.
      if (up && changed_ && !last_change_up_ &&
          last_time_ - last_change_time_ <= params_.reversal_window_seconds &&
          current - last_pool_ >= kReturnFraction * (shed_from_ - last_pool_)) {
        hold_ = std::min(last_time_ - shed_since_, params_.gap_hold_seconds);
      }
      if (!up) {
        hold_ = 0.0;
        shed_from_ = last_pool_;
      }
      last_change_up_ = up;
      last_change_time_ = last_time_;
      changed_ = true;
    }
  }
  last_pool_ = current;

  cap_ = learner_.cap();
  // The cap stops growth. A pool already above it is shed to it at once only where the curve
  // says the cap does at least as much (well past the peak N*). A pool above the cap that does
  // more got there under an earlier fit: a fit from the first seconds of a rise (a cap of 13
  // under a pool of 16, which the next fit wanted again) is no reason to shed throughput, and the
  // scale-down rule prices that surplus like any other.
  int ceiling = std::clamp(std::isfinite(cap_) ? to_workers(cap_) : hi, lo, hi);
  if (ceiling < current && capacity(ceiling) < capacity(current)) {
    ceiling = std::min(current, hi);
  }
  const double backlog = std::max(0.0, lag - params_.lag_allowance) / params_.catch_up_seconds;
  demand_ = rate_slow_ + backlog;
  capacity_ = capacity(current);
  const bool known = learner_.fitted().valid;
  // The calm budget's sums: the fluid need (the pool that carries this tick's rate exactly) and
  // the pool, over an exponential window.
  if (known && dt > 0.0) {
    const double need =
        std::clamp(workers_for(arrival), static_cast<double>(lo), static_cast<double>(hi));
    const double keep = calm_decay_(dt, params_.calm_window_seconds);
    need_seconds_ = need_seconds_ * keep + need * dt;
    pool_seconds_ = pool_seconds_ * keep + current * dt;
  }
  // A burst that the lag buffer absorbs (the lag it would build within burst_horizon_seconds
  // stays under burst_lag) is no reason to scale: it is left to the level and backlog terms.
  // The raw rate of the last two ticks: a jump seen twice, which the averages take several ticks
  // to follow. It counts as a burst only far above capacity (raw_burst_margin), where no noise
  // reaches.
  const double raw = std::min(arrival, prev_arrival_);
  const double prev_arrival = prev_arrival_;
  prev_arrival_ = arrival;
  const bool raw_over = raw > capacity_ * (1.0 + params_.raw_burst_margin);
  // Spikes: from the tick before the raw rate saw one (it sees a jump on its second tick) until
  // two ticks in a row fall back under the rate that began it; their lengths are remembered.
  // A pool made ready for a due burst is measured as the pool it was before, so that the burst
  // still counts as one (and keeps the calendar's period).
  const double spike_base = ready_from_ > 0 ? capacity(ready_from_) : capacity_;
  if (!spike_ && raw > spike_base * (1.0 + params_.raw_burst_margin) && known) {
    spike_ = true;
    spike_start_ = last_time_ - dt;
    spike_rate_ = spike_base * (1.0 + params_.raw_burst_margin);
    spike_pool_ = current;
    ready_from_ = 0;
    calendar_.onset(spike_start_);
  } else if (spike_ && std::max(arrival, prev_arrival) <= spike_rate_) {
    spike_ = false;
    if (spike_saturated_) saturated_end_ = last_time_;
    spike_saturated_ = false;
    spike_lengths_[spikes_ % kSpikeMemory] = std::max(0.0, last_time_ - dt - spike_start_);
    ++spikes_;
    calendar_.ended(spike_pool_);
  }
  if (spike_) spike_pool_ = std::max(spike_pool_, current);
  if (spike_ && known && current >= ceiling && raw > capacity_) spike_saturated_ = true;
  const double fast = raw_over ? std::max(rate_fast_, raw) : rate_fast_;
  const bool fast_over = fast + backlog > capacity_ * (1.0 + params_.burst_margin);
  const double lag_ahead = lag + (fast - capacity_) * params_.burst_horizon_seconds;
  // The raw rate must be above capacity too: a fast average that still remembers an earlier
  // spike, over a load now back under the pool's capacity, is no burst.
  const bool burst = fast_over && lag_ahead >= params_.burst_lag && raw > capacity_;
  // A jump far above capacity builds lag before new workers start: its step is sized to drain
  // what it builds until then (not only the current lag) within catch_up_seconds, or a second
  // step follows; what it builds after that, the new pool drains.
  const double raw_ahead = lag + (fast - capacity_) * params_.raw_burst_horizon_seconds;
  const double backlog_ahead =
      std::max(0.0, raw_ahead - params_.lag_allowance) / params_.catch_up_seconds;
  // The level must clear capacity by level_margin, and right after a scale-down (which a
  // level-triggered scale-up would reverse) by reversal_margin more: a real rise shows there, or
  // as lag in the backlog term.
  const double level_margin =
      params_.level_margin + (last_change_up_ ? 0.0 : params_.reversal_margin);
  bool overloaded = demand_ > capacity_ * (1.0 + level_margin) || burst;
  // A pool that drains the lag (both of the last two ticks' arrivals below its capacity) needs
  // no more workers while the lag is under burst_lag or drains within catch_up_seconds at the
  // rate it drains now: after a spike the level and the backlog term still remember it, but the
  // spike is over.
  const double draining_rate = capacity_ - std::max(arrival, prev_arrival);
  const bool drains = overloaded && draining_rate > 0.0 &&
                      (lag < params_.burst_lag || lag <= draining_rate * params_.catch_up_seconds);
  if (drains) overloaded = false;
  // Spike absorption: a spike expected to end before its lag reaches spike_lag is left to the
  // lag buffer, as the clairvoyant oracle leaves it (see the class comment). Once the pool has
  // grown past the rate that began it, the spike was answered: what comes on top of it is the
  // level's and the bursts' to answer (a step up that never falls back is no spike to absorb).
  absorbed_ = false;
  if (overloaded && spike_ && capacity_ < spike_rate_ &&
      (spikes_ > 0 || params_.spike_prior_seconds > 0.0) && params_.spike_lag > 0.0) {
    double expected = spikes_ > 0 ? 0.0 : params_.spike_prior_seconds;
    const int n = std::min(spikes_, kSpikeMemory);
    for (int i = 0; i < n; ++i) expected += spike_lengths_[i] / n;
    const double ahead =
        std::max(expected - (last_time_ - spike_start_), params_.spike_min_seconds);
    const double peak = lag + (std::max(rate_fast_, raw) - capacity_) * ahead;
    absorbed_ = peak < params_.spike_lag;
    overloaded = !absorbed_;
  }
  up_target_ = current;
  down_target_ = current;
  int target = current;
  std::string why;
  if (known && overloaded) {
    // A level above capacity is sized on the level: its noise is the lag allowance's to absorb.
    // A burst is sized on the fast average or the raw rate of the last two ticks, whichever is
    // higher: after a jump the averages lag behind, and a step sized on them would need more
    // steps after it; the lower of two ticks, not this tick's alone, so that one tick's noise on
    // top of a rise does not size the step (the surplus it leaves costs worker-seconds until a
    // scale-down pays for itself).
    const double rate = burst ? std::max({rate_slow_, rate_fast_, raw}) : rate_slow_;
    // The chase step: a load still rising right after a scale-up rises on while these workers
    // start; sized on where it is heading, the pool needs one step fewer.
    const bool chasing = params_.chase_window_seconds > 0.0 && changed_ && last_change_up_ &&
                         last_time_ - up_time_ <= params_.chase_window_seconds;
    const double rise = chasing ? std::max(0.0, rate - up_rate_) : 0.0;
    up_time_ = last_time_;
    up_rate_ = rate;
    const double sizing = rate + rise + (burst && raw_over ? backlog_ahead : backlog);
    const double need = workers_for(sizing / params_.target_utilization);
    up_target_ =
        std::isfinite(need) ? std::max(current + 1, to_workers(std::ceil(need - 1e-9))) : ceiling;
    target = up_target_;
    forget_scale_down();
    if (obs.explain) {
      why = "demand " + fixed(std::max(demand_, rate_fast_ + backlog), 0) + "/s above capacity " +
            fixed(capacity_, 0) + "/s of " + std::to_string(current) + ": scale up to " +
            std::to_string(up_target_) + " (" + num(params_.target_utilization * 100) +
            "% utilization" +
            (rise > 0.0 ? ", chasing a rise of " + fixed(rise, 0) + "/s since the last step" : "") +
            ")";
    }
  } else if (known) {
    down_target_ = std::clamp(
        to_workers(std::ceil(workers_for(rate_fast_ / params_.scale_down_utilization) - 1e-9)), lo,
        std::max(lo, current));
    const bool draining = lag > params_.scale_down_lag_fraction * params_.lag_allowance;
    if (pending_down_ > 0 && (pending_down_ >= current || draining)) pending_down_ = 0;
    // A paid-for step that the pool has not reached yet (a guard holds it back, such as a step
    // limit) is dropped, with the surplus that paid for it, once the load is back above the
    // target's capacity by burst_margin: the gap it was paid in is over, and shedding now would
    // buy the workers back on the next tick.
    if (pending_down_ > 0 && rate_fast_ > capacity(pending_down_) * (1.0 + params_.burst_margin)) {
      pending_down_ = 0;
      surplus_ = 0.0;
      in_surplus_ = false;
    }
    // A tick without surplus (the rate's noise back at the pool's size) leaves S alone: waste
    // already spent stays spent, and resetting on every noisy tick would hold a pool one worker
    // too large for as long as the noise touches the boundary. A backlog resets it.
    if (draining) {
      surplus_ = 0.0;
      in_surplus_ = false;
    } else if (down_target_ < current) {
      if (!in_surplus_) surplus_since_ = last_time_;
      in_surplus_ = true;
      surplus_ += (current - down_target_) * dt;
    }
    // The gap hold: after a scale-up that reversed a scale-down, the surplus must also last as
    // long as the gap did before the next scale-down (a burst back after the same gap finds the
    // pool still there), but no longer than gap_hold_ratio x the time the pool was busy after
    // that scale-up (a burst of seconds is not worth holding its workers through minutes).
    double hold = hold_;
    if (params_.gap_hold_ratio > 0.0 && in_surplus_ && changed_ && last_change_up_) {
      hold = std::min(hold, params_.gap_hold_ratio * (surplus_since_ - last_change_time_));
    }
    // The saturation hold: a surplus that began right after a spike that ran the pool at its
    // ceiling, overloaded, lasts saturation_hold_seconds before it is shed, unless the calendar
    // has the next burst due later than that.
    const double saturation_hold = params_.saturation_hold_seconds;
    const bool saturation_held =
        saturation_hold > 0.0 && in_surplus_ &&
        surplus_since_ - saturated_end_ <= saturation_hold && saturation_hold > hold &&
        !(calendar_.known() && calendar_.due() - last_time_ > saturation_hold);
    if (saturation_held) hold = saturation_hold;
    // The calm budget: while the pool has run within (1 + calm_budget) x the fluid need over the
    // window, the surplus is held; holding spends that slack.
    const bool timed_hold = in_surplus_ && last_time_ - surplus_since_ < hold;
    const bool calm_held = params_.calm_budget > 0.0 && in_surplus_ && calm_slack() > 0.0;
    const bool held = timed_hold || calm_held;
    // Once paid for, the step is latched: proposed unchanged on every tick until the pool
    // reaches it (a target that followed the falling rate tick by tick would come out as many
    // small steps). Not while the last two ticks' rate is above the target's capacity: the load
    // is back, and the fast average, still low, would shed the pool it needs (after a held gap
    // the surplus was paid long before the load returned).
    const bool back = raw > capacity(down_target_);
    if (pending_down_ == 0 && down_target_ < current && !held && !back &&
        surplus_ >= params_.scale_down_cost) {
      pending_down_ = down_target_;
      shed_since_ = surplus_since_;
      plateau_step_ = false;
    }
    // The plateau step: to the size a scale-up would give the level, inside the band where the
    // step above holds still, once that surplus has paid the higher plateau_cost. It accrues
    // only inside the band (no surplus for the step above): in a gap, the slow average's
    // surplus is the step above's to pay, and a plateau step paid in a gap would fire when the
    // load returns, as the hold ends.
    const int plateau = std::clamp(
        to_workers(std::ceil(workers_for(rate_slow_ / params_.target_utilization) - 1e-9)), lo,
        std::max(lo, current));
    if (draining) {
      plateau_surplus_ = 0.0;
    } else if (params_.plateau_cost > 0.0 && plateau < current && down_target_ >= current) {
      plateau_surplus_ += (current - plateau) * dt;
    }
    if (pending_down_ == 0 && plateau < current && !held && params_.plateau_cost > 0.0 &&
        plateau_surplus_ >= params_.plateau_cost) {
      pending_down_ = plateau;
      shed_since_ = last_time_;
      plateau_step_ = true;
    }
    if (pending_down_ > 0) target = pending_down_;
    if (obs.explain) {
      why = "rate " + fixed(rate_fast_, 0) + "/s, capacity " + fixed(capacity_, 0) + "/s of " +
            std::to_string(current);
      if (target < current && plateau_step_) {
        why += ": plateau: surplus over " + num(params_.target_utilization * 100) +
               "% utilization paid " + num(params_.plateau_cost) + " worker-s: scale down to " +
               std::to_string(target);
      } else if (target < current) {
        why += ": surplus paid for the step: scale down to " + std::to_string(target);
      } else if (down_target_ < current && calm_held && !timed_hold &&
                 surplus_ >= params_.scale_down_cost) {
        why += ": hold (calm budget: the pool ran within " + num(100 * params_.calm_budget) +
               "% of the fluid need; " + fixed(calm_slack(), 0) + " worker-s left)";
      } else if (down_target_ < current && held && surplus_ >= params_.scale_down_cost) {
        why +=
            saturation_held
                ? ": hold (saturation hold: the last spike overloaded the pool at its ceiling; "
                  "surplus for " +
                      fixed(last_time_ - surplus_since_, 0) + " of " + num(saturation_hold) + " s)"
                : ": hold (gap hold: the load came back after " + fixed(hold_, 0) +
                      " s last time; surplus for " + fixed(last_time_ - surplus_since_, 0) + " s)";
      } else if (down_target_ < current && back && surplus_ >= params_.scale_down_cost) {
        why += ": hold (the load is back: the last two ticks, " + fixed(raw, 0) +
               "/s, above the capacity of " + std::to_string(down_target_) + ")";
      } else if (down_target_ < current) {
        why += draining ? ": hold (lag " + std::to_string(obs.total_lag) + " still draining)"
                        : ": hold (" + fixed(surplus_, 0) + " of " + num(params_.scale_down_cost) +
                              " surplus worker-s toward " + std::to_string(down_target_) + ")";
      } else if (absorbed_) {
        why += ": hold (spike left to the lag buffer)";
      } else if (drains) {
        why += ": hold (the pool drains the lag of " + std::to_string(obs.total_lag) + ")";
      } else if (fast_over && lag_ahead < params_.burst_lag) {
        why += ": hold (burst left to the lag buffer: " + fixed(lag_ahead, 0) + " below " +
               num(params_.burst_lag) + " messages in " + num(params_.burst_horizon_seconds) +
               " s)";
      } else if (fast_over) {
        why += ": hold (no burst: the rate of the last two ticks, " + fixed(raw, 0) +
               "/s, is under capacity)";
      } else {
        why += ": hold";
      }
    }
  } else if (obs.explain) {
    why = "no rate measured yet: hold " + std::to_string(current);
  }
  // A burst due by the calendar: the pool it had last time is ready before it arrives, and is
  // held until it does (or is late beyond its window, which clears the calendar).
  const int ready =
      spike_ || !known ? 0 : calendar_.wanted(last_time_, params_.burst_calendar_lead_seconds);
  if (ready == 0) {
    ready_from_ = 0;
  } else if (target < ready) {
    if (ready > current && ready_from_ == 0) ready_from_ = current;
    target = ready;
    forget_scale_down();
    if (obs.explain) {
      why = "burst due at t=" + fixed(calendar_.due(), 0) + " s (every " +
            fixed(calendar_.period(), 0) + " s): ready with " + std::to_string(ready);
    }
  }
  workers_ = std::clamp(target, lo, ceiling);
  own_ = workers_;
  if (!obs.explain) return {workers_, {}};
  if (own_pool) {
    why = "pool " + std::to_string(obs.current_workers) + " set by an override, planning for " +
          std::to_string(current) + ": " + why;
  }
  if (workers_ != target) {
    why += "; limits [" + std::to_string(lo) + ", " + std::to_string(ceiling) + "]" +
           (ceiling < hi ? " (cap: peak_fraction x N*)" : "") + ": " + std::to_string(workers_);
  }
  return {workers_, std::move(why)};
}

nlohmann::json HybridPolicy::state() const {
  return {{"rate_fast", rate_fast_},
          {"rate_slow", rate_slow_},
          {"demand", demand_},
          {"capacity", capacity_},
          {"up_target", up_target_},
          {"down_target", down_target_},
          {"surplus", surplus_},
          {"pending_down", pending_down_},
          {"gap_hold", hold_},
          {"spike", spike_},
          {"absorbed", absorbed_},
          {"plateau_surplus", plateau_surplus_},
          {"calm_slack", calm_slack()},
          {"burst_due", calendar_.known() ? nlohmann::json(calendar_.due()) : nlohmann::json()},
          {"cap", finite_or_null(cap_)},
          {"workers", workers_},
          {"fit", learner_.fitted().to_json()}};
}

}  // namespace lagpilot
