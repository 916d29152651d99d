#pragma once
// The control loop, shared by the simulator and the live runtime:
//
//   Observation obs = sampler.sample(now);
//   Proposal p      = policy.decide(obs);
//   Decision d      = guards.apply(p, obs);
//   actuator.resize(d.workers);
//   record(d);
//
// Only the Sampler and the Actuator differ between simulation and production; the ControlLoop
// never reads a clock (the caller passes `now`).
//
// Thread-safety: tick() is called from one control thread. set_policy(), set_override(),
// clear_override(), set_bounds(), record_event(), recent_decisions() and the other accessors may
// be called from any thread (the HTTP API); a mutex serialises them with tick(). The Sampler and
// the Actuator are called only from tick(), on the control thread, with the mutex released.
// A ControlLoop built with Threading::kOwnerOnly (the simulator's: millions of ticks, nobody else
// holds it) is a plain single-threaded object instead: tick() takes no lock, so every method must
// then be called from the one thread that owns it.

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/guards.h"
#include "policies/observation.h"
#include "policies/policy.h"

namespace lagpilot {

// Where observations come from: the simulator's consumer model, or the live pool + Kafka.
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual Observation sample(double now) = 0;
  // The same into `obs`, which holds the previous tick's observation (or a default one): the
  // ControlLoop keeps one Observation across ticks, so that a sampler that overwrites the
  // fields in place (the simulator's) neither builds nor zeroes a new one per tick. An override
  // must leave `obs` exactly as `obs = sample(now)` would, except for the fields the ControlLoop
  // sets itself (time, min_workers, max_workers, pinned).
  virtual void sample_into(double now, Observation& obs) { obs = sample(now); }
};

// What applies the decision: the simulator's consumer model, or the live worker pool.
class Actuator {
 public:
  virtual ~Actuator() = default;
  virtual void resize(int workers) = 0;
};

class ControlLoop {
 public:
  // Called on the control thread after each tick, with the mutex released.
  using DecisionListener = std::function<void(const Observation&, const Decision&)>;

  // `decision_history`: how many decisions (and operator notes) recent_decisions() keeps; 0
  // keeps none (then last_decision() and last_observation() are empty and notes carry 0
  // workers): for callers that never read them, such as the simulator, which ticks millions of
  // times.
  // `threading`: kShared (the default) for a loop that other threads reach (the live runtime's
  // HTTP API); kOwnerOnly for one that only its owner's thread ever calls (see above), whose
  // tick() then skips the uncontended lock and unlock.
  enum class Threading { kShared, kOwnerOnly };
  ControlLoop(Sampler& sampler, Actuator& actuator, std::unique_ptr<Policy> policy,
              GuardConfig guards, std::size_t decision_history = 1000,
              Threading threading = Threading::kShared);

  // One iteration of the loop at time `now` (seconds, from the caller's clock). `late` says why
  // the caller ran this tick late ("" when on schedule); the decision records it. The decision
  // is the loop's own, overwritten by the next tick(): copy it to keep it.
  const Decision& tick(double now, std::string_view late = {});

  void set_listener(DecisionListener listener);
  // Swaps the policy from the next tick on; the decision log records it at `now`.
  void set_policy(std::unique_ptr<Policy> policy, double now);
  // The same, stamped with the time of the last tick (0 before any): for callers without a
  // clock. Prefer the overload with `now`.
  void set_policy(std::unique_ptr<Policy> policy);
  void set_override(ManualOverride pin, double now);
  void clear_override(double now);
  void set_bounds(int min_workers, int max_workers, double now);
  // Appends an operator note to the decision log (pause, resume, ...): the size is unchanged
  // (workers = previous_workers = the last decided size), policy kOperatorPolicy, no guards.
  // Not a decision: last_decision() skips it, like the notes of the mutations above.
  static constexpr const char* kOperatorPolicy = "operator";
  void record_event(double now, std::string source, std::string reason);

  std::string policy_name() const;
  nlohmann::json policy_params() const;
  GuardConfig guard_config() const;
  std::optional<ManualOverride> active_override(double now);
  std::optional<Decision> last_decision() const;
  std::optional<Observation> last_observation() const;
  // Newest last; at most `limit` entries.
  std::vector<Decision> recent_decisions(std::size_t limit) const;
  std::size_t ticks() const;

 private:
  void record_locked(Decision d);
  // A log note for an operator action at `now`, based on the last decided size.
  Decision note_locked(double now) const;
  // The i-th oldest entry of the history (i < history_.size()).
  const Decision& history_at(std::size_t i) const {
    return history_[(history_head_ + i) % history_.size()];
  }

  Sampler& sampler_;
  Actuator& actuator_;
  DecisionListener listener_;  // set before the loop starts
  const bool locked_ticks_;    // Threading::kShared: tick() takes mutex_

  mutable std::mutex mutex_;  // guards everything below
  std::unique_ptr<Policy> policy_;
  std::string policy_name_;  // policy_->name(), kept so that a tick does not build it
  GuardChain guards_;
  // The last history_limit_ decisions, a ring buffer: in order until it is full, then the
  // oldest sits at history_head_ (a deque of Decisions allocated a block every few ticks).
  std::vector<Decision> history_;
  std::size_t history_head_ = 0;
  std::size_t history_limit_;
  // This tick's observation, filled by Sampler::sample_into(). Touched only by tick(), on the
  // control thread (with the mutex released while the sampler writes it), so no lock.
  Observation obs_;
  // This tick's decision, likewise: reused so that its strings and guard list keep their
  // buffers instead of a Decision being built and destroyed per tick.
  Decision decision_;
  // Whether decision_.policy must be set to policy_name_ at the next tick (a new policy): a
  // flag rather than a string comparison per tick.
  bool decision_policy_stale_ = true;
  std::optional<Observation> last_observation_;  // kept only with a history
  double last_tick_time_ = 0.0;                  // the `now` of the last tick
  std::size_t ticks_ = 0;
};

}  // namespace lagpilot
