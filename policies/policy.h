#pragma once
// The Policy interface: turns an Observation into a desired worker count.
//
// Thread-safety contract: a Policy is NOT thread-safe. The ControlLoop calls decide() from its
// one control thread (or the simulator's event loop) and serialises every other access. A policy
// never reads a clock: the only time it knows is Observation::time.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "policies/observation.h"

namespace lagpilot {

// The policy's proposal, before guards.
struct Proposal {
  int workers = 0;
  std::string reason;  // human-readable: "lag 7200 above 5000: step to 16"
};

// What a caller that replays many ticks (the simulator) may leave out for a policy without
// changing anything it decides.
enum class TickSkipping {
  // Every tick must reach decide(): the policy integrates over time (pid), keeps a schedule in
  // time (hpa's syncs, keda's polls and cooldowns) or learns from every sample (model). The
  // default, and the only safe answer for a policy that has not thought about it.
  kNever,
  // decide() on an observation equal to the previous one in every field but `time` returns the
  // same worker count and leaves the policy's state as it was (only the reason text may
  // differ), so such a tick may be answered with the previous proposal while nobody reads the
  // text (Observation::explain false).
  kIdempotentOnUnchangedObservation,
};

class Policy {
 public:
  virtual ~Policy() = default;
  // Short name as used on the command line and in configs: "pid", "threshold", ...
  virtual std::string name() const = 0;
  // Called once per control tick with the current observation.
  virtual Proposal decide(const Observation& obs) = 0;
  // The parameters in effect, as the JSON object accepted by make_policy().
  virtual nlohmann::json params() const = 0;
  // Internal state for logs and debugging (PID terms, fit quality, ...). Empty by default.
  virtual nlohmann::json state() const { return nlohmann::json::object(); }
  // Which ticks may be skipped (see TickSkipping); policies_test checks every declaration.
  virtual TickSkipping tick_skipping() const { return TickSkipping::kNever; }
  // Whether decide() reads Observation::latency_p50, latency_p99 or record_age_p99. A caller
  // for which they cost work (the simulator finds percentiles of every tick's completions) may
  // leave them at 0 when neither the policy nor the guards read them. True, the default, is the
  // only safe answer for a policy that has not thought about it; policies_test checks that a
  // policy that answers false decides the same whatever the latencies are.
  virtual bool reads_latency() const { return true; }
  // Whether the policy holds its scale-downs against dips itself, with a stabilization window of
  // its own (the HPA's behavior.scaleDown, which KEDA's HPA has too) or with a rule that decides
  // which dips are worth holding through (hybrid's price and holds). The guards' scale-down
  // window is then not applied on top: stacked, the two windows would hold every scale-down for
  // their sum (360 s for the HPA's 300 s and the guards' 60 s), which is not what the policy's
  // own settings say, nor what a Kubernetes HPA does. False, the default, keeps the guards'
  // window.
  virtual bool stabilizes_scale_down() const { return false; }
};

}  // namespace lagpilot
