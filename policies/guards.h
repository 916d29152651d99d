#pragma once
// Guards: rules applied after any policy, in this fixed order:
//
//   1. bounds         clamp to [min_workers, max_workers]
//   2. step limits    move at most max_step_up / max_step_down workers per tick (0 = no limit)
//   3. stabilization  scale-down stabilization: the highest recommendation in the last
//                     scale_down_window_seconds wins, so a dip does not shrink the pool at once;
//                     skipped for a policy that holds its own scale-downs (hpa, keda, hybrid:
//                     Policy::stabilizes_scale_down, set_policy_stabilizes below)
//   4. latency ceiling  no scale-up while process latency p99 is above latency_ceiling_seconds
//                     and the last scale-up did not raise throughput (downstream is saturated)
//   5. sink pushback  no scale-up while the sink pushes back (Observation::sink_pushback above
//                     sink_pushback_threshold); pushback that lasts sink_pushback_seconds lowers
//                     the size by one and makes it the sink's ceiling, which is probed one
//                     worker higher after each sink_pushback_seconds without pushback (so the
//                     pool settles at the concurrency the sink takes instead of flapping).
//                     Pushback that appears after the pool grew past the last size without
//                     pushback (one jump overshot the sink) steps back at once, to the share
//                     the sink served (processed rate / the rate per busy worker without
//                     pushback), but not below that size
//   6. manual override  an operator pin replaces the size until it expires (clamped to the
//                     hard limits, never to the soft bounds)
//
// Every guard that changes the size appends one sentence to Decision::guards.
// Thread-safety: not thread-safe; the ControlLoop serialises access.

#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "policies/config_reader.h"
#include "policies/observation.h"
#include "policies/policy.h"

namespace lagpilot {

struct GuardConfig {
  int min_workers = 4;
  int max_workers = 16;
  // Hard limits fixed at start-up: bounds changed at runtime must stay inside them.
  int hard_min_workers = 1;
  int hard_max_workers = 64;
  int max_step_up = 0;                      // workers per tick; 0 = unlimited
  int max_step_down = 0;                    // workers per tick; 0 = unlimited
  double scale_down_window_seconds = 60.0;  // 0 disables stabilization
  double latency_ceiling_seconds = 0.0;     // 0 disables the latency ceiling
  // A scale-up "raised throughput" when processed rate grew by at least this fraction.
  double latency_ceiling_min_gain = 0.05;
  // A scale-up is judged this long after it was decided (new workers need time to warm up);
  // until then further scale-ups are held while latency is above the ceiling.
  double latency_ceiling_judge_seconds = 10.0;
  // Sink pushback guard: on whenever the sink reports pushback (Observation::sink_pushback >= 0).
  bool sink_pushback_guard = true;
  double sink_pushback_threshold = 0.01;  // fraction of deliveries pushed back
  double sink_pushback_seconds = 30.0;    // pushback this long steps the size down

  // Reads the "guards" object; validates ranges and min <= max. Throws ConfigError.
  static GuardConfig from_json(const nlohmann::json& j, const std::string& path = "guards");
  nlohmann::json to_json() const;
};

struct ManualOverride {
  int workers = 0;
  double expires_at = 0.0;  // Observation time at which the pin ends
  std::string reason;
};

class GuardChain {
 public:
  explicit GuardChain(GuardConfig config);

  // Applies the guards to the policy's proposal; obs.current_workers is the pool size now.
  Decision apply(const Proposal& proposal, const std::string& policy_name, const Observation& obs);
  // The guards' part of that into `d`, a previous tick's decision (or a default one) whose
  // strings keep their buffers (the ControlLoop's every tick): time, the three sizes, the guard
  // notes and the source. `policy`, `reason` and `late` are the caller's, left as they are.
  void apply_into(int proposed_workers, const Observation& obs, Decision& d);

  // Throws ConfigError when outside the hard limits or min > max.
  void set_bounds(int min_workers, int max_workers);
  // Throws ConfigError when outside the hard limits.
  void set_override(ManualOverride pin);
  void clear_override();
  // The pin in effect at `now`, if any (an expired pin is dropped here).
  std::optional<ManualOverride> active_override(double now);
  // Whether a pin is in effect at `now` (as active_override(now).has_value(), without the copy
  // of the pin and its reason that the ControlLoop's every tick made). The one place that drops
  // an expired pin: active_override() and apply() go through it.
  bool pinned(double now) {
    if (override_ && now >= override_->expires_at) override_.reset();
    return override_.has_value();
  }
  const GuardConfig& config() const { return config_; }
  // Whether the policy in effect stabilizes its own scale-downs (Policy::stabilizes_scale_down):
  // then step 3 is skipped. The ControlLoop sets it with every policy; a change forgets the
  // window's recommendations, which the other policy made.
  void set_policy_stabilizes(bool stabilizes) {
    if (stabilizes != policy_stabilizes_) recent_.clear();
    policy_stabilizes_ = stabilizes;
  }

 private:
  GuardConfig config_;
  std::deque<std::pair<double, int>> recent_;  // (time, recommendation) for stabilization
  bool policy_stabilizes_ = false;             // see set_policy_stabilizes
  std::optional<ManualOverride> override_;
  // Latency-ceiling memory: throughput before the last scale-up, when it happened, whether it
  // is still waiting to be judged, and the verdict of the last judged one.
  double rate_before_scale_up_ = 0.0;
  double scale_up_time_ = 0.0;
  bool scale_up_pending_ = false;
  bool last_scale_up_helped_ = true;
  // Sink-pushback memory: when the current run of pushback began (-1: none), when the sink
  // last pushed back, when the guard last stepped down or probed, and the ceiling it learned
  // (0: none).
  double pushback_since_ = -1.0;
  double last_pushback_ = 0.0;
  double last_pushback_step_ = -1e300;
  int pushback_ceiling_ = 0;
  int last_quiet_pool_ = 0;  // the pool at the last tick without pushback (0: none yet)
  // Messages/s one busy worker processed at the last tick without pushback (0: unknown).
  double quiet_rate_per_worker_ = 0.0;
  int apply_sink_pushback(int w, const Observation& obs, Decision& d);
};

}  // namespace lagpilot
