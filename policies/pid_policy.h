#pragma once
// The `pid` policy: a PID controller on total lag or on drain time.
//
// Thread-safety: like every Policy, not thread-safe; the ControlLoop serialises calls.

#include <nlohmann/json.hpp>
#include <string>

#include "policies/policy.h"
#include "policies/quotients.h"

namespace lagpilot {

struct PidParams {
  // "lag": the measurement is Observation::total_lag (messages).
  // "drain_time": lag / processed_rate (seconds to drain the backlog at the current rate); 0
  // when there is no lag, drain_time_cap_seconds when lag > 0 but nothing is processed.
  std::string metric = "lag";
  // Defaults are for metric "lag" and a consumer with 4-16 workers at ~100 msg/s each; the
  // drain_time defaults (see defaults_for()) are in brackets.
  double setpoint = 2000.0;  // messages [4 s]
  double kp = 0.002;         // workers per message of error: 500 over -> +1 worker [1.6]
  double ki = 0.0001;        // workers per message-second [0.08]
  double kd = 0.002;         // workers per message/s of lag slope [1.6]
  double derivative_filter_seconds = 5.0;  // time constant of the derivative's low-pass
  double dead_band = 500.0;                // |error| up to this counts as 0 [1.5 s]
  // Integral clamp: the integral term (a pool size, see the class comment) stays within
  // [min_workers - margin, max_workers + margin]; 0 keeps it inside the output range.
  double integral_clamp_margin = 0.0;
  // Back-calculation anti-windup: each tick the integral moves toward the proposal actually
  // made (clamped, quantized) by (proposal - u) * min(1, dt / tracking_time_seconds).
  // 0 disables.
  double tracking_time_seconds = 20.0;
  // Output quantizer hysteresis, workers: the proposal leaves its last value only when u is
  // more than 0.5 + output_hysteresis away from it.
  double output_hysteresis = 0.25;
  double drain_time_cap_seconds = 600.0;  // drain_time only: the measurement's ceiling
  // Low-pass time constant on the measurement itself (0 = none) [10 s]. Drain time moves the
  // moment the pool changes (the processed rate is in it); unfiltered, that instant feedback
  // makes the loop flip the pool every tick.
  double measurement_filter_seconds = 0.0;
  // A scale-down goes no lower than ceil(busy_workers / scale_down_utilization): the pool
  // shrinks only to a size that would have carried the workers' measured load at most at this
  // utilization, in [0, 1]; 0 disables (see the class comment: this is what stops the limit
  // cycle at a steady load).
  double scale_down_utilization = 0.95;
  // Low-pass time constant on busy_workers for that floor, seconds (0 = none): one tick's busy
  // count carries the arrivals' noise, and a single low tick would let the pool down.
  double busy_filter_seconds = 30.0;

  // The defaults for a metric ("lag" or "drain_time").
  static PidParams defaults_for(const std::string& metric);
  // Reads "metric" first, starts from defaults_for(metric), then the other keys.
  // Throws ConfigError naming the field ("policy.params.kp: must be >= 0, got -1").
  static PidParams from_json(const nlohmann::json& j, const std::string& path);
  nlohmann::json to_json() const;
};

// Algorithm: a position-form PID whose output is the pool size.
//
//   y  = measurement (lag, or drain time)        e = y - setpoint   (positive: too much lag)
//   e' = 0 inside the dead band |e| <= dead_band, else e - sign(e) * dead_band (continuous)
//   P  = kp * e'
//   I  = I + ki * e' * dt                         (the integral term itself, in workers)
//   D  = kd * dy_f/dt   derivative on the measurement, not on the error, low-pass filtered
//                       with time constant derivative_filter_seconds
//   u  = P + I + D ;  proposal = round(u) clamped to [obs.min_workers, obs.max_workers], but
//        the last proposal is kept while |u - last| <= 0.5 + output_hysteresis
//
// Why position form: a lag backlog is an integrating plant (lag grows at arrival minus
// capacity), so at steady state the pool must match the load while the error is zero. In
// position form that pool size lives in I, an explicit, clampable, loggable state; velocity
// form (workers = current + round(du)) hides it in the actuator and rounds small increments
// away. At the first tick I = current_workers - P (bumpless: no jump when the policy is
// swapped in) and neither I nor D is computed (no dt yet). dt comes from successive
// Observation::time; a tick with dt <= 0 updates neither I nor D.
//
// Anti-windup, three layers: (1) conditional integration: no ki*e'*dt on a tick where the
// output would be beyond a bound with the error pushing it further out; (2) the integral
// clamp [min_workers - integral_clamp_margin, max_workers + integral_clamp_margin];
// (3) back-calculation toward the proposal actually made (tracking_time_seconds). After a
// long saturation the output leaves the bound as soon as the error changes sign.
//
// The pool is an integer. Under a load of exactly k workers any constant lag is an
// equilibrium; tracking plus the dead band let the loop settle there instead of integrating
// a small residual error until it hunts k-1 <-> k+1, and the output hysteresis stops u near
// k + 0.5 from flipping the pool every tick.
//
// What stops the limit cycle at a steady load between k and k+1 workers: the scale-down floor.
// No integer pool holds the lag constant there. k+1 workers drain the lag to 0, where the
// measurement sits at its floor: the error stays at -setpoint whatever the surplus, so the
// integral winds down until the pool is too small, the lag climbs back through the dead band,
// and the loop overshoots upward (with kp, the P term alone is -3 workers at lag 0, so the cycle
// spans several workers, 5 <-> 11 at 55 % load in the simulator, not k <-> k+1). Neither the
// output hysteresis nor the dead band can stop it, because the error that drives it is real. The
// floor ceil(busy / scale_down_utilization), busy the low-passed busy_workers, is a second
// measurement, of the load itself: k+1 workers with k.6 of them busy cannot shrink to k, so the
// pool stays at k+1 with the lag at 0 (a surplus of under one worker) and back-calculation keeps
// I from winding down behind the held proposal. A real drop in load lowers busy_workers, and the
// pool follows it down.
//
// Default gains (lag): with per-worker rate r = 100 msg/s the PI loop
// e'' = -r (kp e' + ki e) has natural frequency sqrt(r ki) = 0.1 rad/s and damping
// r kp / (2 sqrt(r ki)) = 1.0 (critically damped); kd adds a little damping against ramps.
// The drain_time defaults scale the lag gains by a typical processed rate (~800 msg/s).
// ki or kd may be 0 (PD, PI, P).
class PidPolicy : public Policy {
 public:
  explicit PidPolicy(PidParams params = {});

  std::string name() const override { return "pid"; }
  bool reads_latency() const override { return false; }  // sizes from lag and rates
  Proposal decide(const Observation& obs) override;
  nlohmann::json params() const override { return params_.to_json(); }
  // measurement, setpoint, error, effective_error, p, i, d, derivative (filtered dy/dt),
  // output (u before rounding), workers, integrating (false when anti-windup held I), floored
  // (the scale-down floor held the proposal).
  nlohmann::json state() const override;

 private:
  double measure(const Observation& obs) const;
  // The decision's text, from the terms of the tick just decided. Out of line and cold: only a
  // tick whose text is read (Observation::explain) builds it, and inlined it made decide()
  // several times larger than its arithmetic, which the simulator runs at every tick.
  [[gnu::cold, gnu::noinline]] std::string reason() const;

  PidParams params_;
  // params_.metric == "drain_time", compared once here instead of twice a tick.
  bool drain_time_ = params_.metric == "drain_time";
  bool started_ = false;
  double prev_time_ = 0.0;
  double prev_measurement_ = 0.0;
  double derivative_ = 0.0;  // filtered dy/dt
  double integral_ = 0.0;    // the I term, workers
  // Last tick's terms, for state().
  double measurement_ = 0.0;
  double error_ = 0.0;
  double effective_error_ = 0.0;
  double p_ = 0.0;
  double d_ = 0.0;
  double output_ = 0.0;
  int workers_ = 0;  // the last proposal
  bool integrating_ = false;
  bool floored_ = false;  // the scale-down floor held this tick's proposal
  double busy_ = 0.0;     // busy_workers, low-passed (busy_filter_seconds)
  // The filters' gains and the tracking's share of a tick, divided once per tick length.
  LastQuotient busy_gain_;
  LastQuotient measurement_gain_;
  LastQuotient derivative_gain_;
  LastQuotient tracking_share_;
};

}  // namespace lagpilot
