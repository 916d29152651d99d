#include "policies/control_loop.h"

#include <cstdio>

namespace lagpilot {

ControlLoop::ControlLoop(Sampler& sampler, Actuator& actuator, std::unique_ptr<Policy> policy,
                         GuardConfig guards, std::size_t decision_history, Threading threading)
    : sampler_(sampler),
      actuator_(actuator),
      locked_ticks_(threading == Threading::kShared),
      policy_(std::move(policy)),
      policy_name_(policy_ ? policy_->name() : std::string()),
      guards_(std::move(guards)),
      history_limit_(decision_history) {
  if (policy_) guards_.set_policy_stabilizes(policy_->stabilizes_scale_down());
}

const Decision& ControlLoop::tick(double now, std::string_view late) {
  Observation& obs = obs_;
  sampler_.sample_into(now, obs);
  obs.time = now;
  // Deferred, then taken only when other threads may call in (Threading::kShared).
  std::unique_lock lock(mutex_, std::defer_lock);
  if (locked_ticks_) lock.lock();
  obs.min_workers = guards_.config().min_workers;
  obs.max_workers = guards_.config().max_workers;
  obs.pinned = guards_.pinned(now);
  Proposal proposal = policy_->decide(obs);
  Decision& d = decision_;
  if (decision_policy_stale_) {
    d.policy = policy_name_;
    decision_policy_stale_ = false;
  }
  guards_.apply_into(proposal.workers, obs, d);
  // The reason is moved into the Decision (apply() would copy it): one allocation less per
  // tick that has one. Without explain both are empty at almost every tick: no assignment.
  if (!proposal.reason.empty() || !d.reason.empty()) d.reason = std::move(proposal.reason);
  // Usually both empty: then no assignment at all.
  if (!late.empty() || !d.late.empty()) d.late.assign(late.data(), late.size());
  // Without a history (the simulator's loops) nobody asks for the last observation either: the
  // copy of its ~150 bytes was a tenth of a tick's control-loop cost there.
  if (history_limit_ > 0) last_observation_ = obs;
  last_tick_time_ = now;
  ++ticks_;
  if (history_limit_ == 0) {
    // No history kept (the simulator's loops: nobody reads it).
  } else if (history_.size() >= history_limit_) {
    // Full (the steady state): overwrite the oldest entry, so that its strings' buffers take
    // this tick's text by assignment instead of each tick allocating new ones.
    history_[history_head_] = d;
    history_head_ = (history_head_ + 1) % history_.size();
  } else {
    record_locked(d);
  }
  if (lock.owns_lock()) lock.unlock();
  // resize() is idempotent, so it is called every tick: the pool converges on the decision even
  // if a previous resize was rolled back (thread start failure).
  actuator_.resize(d.workers);
  if (listener_) listener_(obs, d);
  return d;
}

void ControlLoop::set_listener(DecisionListener listener) {
  listener_ = std::move(listener);
}

void ControlLoop::set_policy(std::unique_ptr<Policy> policy, double now) {
  std::lock_guard lock(mutex_);
  policy_ = std::move(policy);
  policy_name_ = policy_->name();
  guards_.set_policy_stabilizes(policy_->stabilizes_scale_down());
  decision_policy_stale_ = true;
  Decision note = note_locked(now);
  note.reason = "policy set to " + policy_->name() + " " + policy_->params().dump();
  record_locked(std::move(note));
}

void ControlLoop::set_policy(std::unique_ptr<Policy> policy) {
  double last_tick_time = 0.0;
  {
    std::lock_guard lock(mutex_);
    if (ticks_ > 0) last_tick_time = last_tick_time_;
  }
  set_policy(std::move(policy), last_tick_time);
}

void ControlLoop::set_override(ManualOverride pin, double now) {
  std::lock_guard lock(mutex_);
  guards_.set_override(pin);  // throws ConfigError when outside the hard limits
  Decision note = note_locked(now);
  char buf[160];
  std::snprintf(buf, sizeof buf, "override: pin %d workers for %.0f s", pin.workers,
                pin.expires_at - now);
  note.reason = buf + (pin.reason.empty() ? "" : " (" + pin.reason + ")");
  record_locked(std::move(note));
}

void ControlLoop::clear_override(double now) {
  std::lock_guard lock(mutex_);
  guards_.clear_override();
  Decision note = note_locked(now);
  note.reason = "override cleared";
  record_locked(std::move(note));
}

void ControlLoop::set_bounds(int min_workers, int max_workers, double now) {
  std::lock_guard lock(mutex_);
  guards_.set_bounds(min_workers, max_workers);
  Decision note = note_locked(now);
  note.reason =
      "bounds set to [" + std::to_string(min_workers) + ", " + std::to_string(max_workers) + "]";
  record_locked(std::move(note));
}

void ControlLoop::record_event(double now, std::string source, std::string reason) {
  std::lock_guard lock(mutex_);
  Decision note = note_locked(now);
  note.policy = kOperatorPolicy;
  note.source = std::move(source);
  note.reason = std::move(reason);
  record_locked(std::move(note));
}

std::string ControlLoop::policy_name() const {
  std::lock_guard lock(mutex_);
  return policy_->name();
}

nlohmann::json ControlLoop::policy_params() const {
  std::lock_guard lock(mutex_);
  return policy_->params();
}

GuardConfig ControlLoop::guard_config() const {
  std::lock_guard lock(mutex_);
  return guards_.config();
}

std::optional<ManualOverride> ControlLoop::active_override(double now) {
  std::lock_guard lock(mutex_);
  return guards_.active_override(now);
}

std::optional<Decision> ControlLoop::last_decision() const {
  std::lock_guard lock(mutex_);
  for (std::size_t i = history_.size(); i-- > 0;) {
    const Decision& d = history_at(i);
    if (d.source != "api" && d.policy != kOperatorPolicy) return d;
  }
  return std::nullopt;
}

std::optional<Observation> ControlLoop::last_observation() const {
  std::lock_guard lock(mutex_);
  return last_observation_;
}

std::vector<Decision> ControlLoop::recent_decisions(std::size_t limit) const {
  std::lock_guard lock(mutex_);
  const std::size_t n = std::min(limit, history_.size());
  std::vector<Decision> out;
  out.reserve(n);
  for (std::size_t i = history_.size() - n; i < history_.size(); ++i) out.push_back(history_at(i));
  return out;
}

std::size_t ControlLoop::ticks() const {
  std::lock_guard lock(mutex_);
  return ticks_;
}

Decision ControlLoop::note_locked(double now) const {
  // The size a note carries is the last decided one (a note does not change it); an empty log
  // gives 0 workers.
  Decision note = history_.empty() ? Decision{} : history_at(history_.size() - 1);
  note.time = now;
  note.previous_workers = note.workers;
  note.policy = policy_->name();
  note.guards.clear();
  note.source = "api";
  return note;
}

void ControlLoop::record_locked(Decision d) {
  if (history_limit_ == 0) return;
  if (history_.size() < history_limit_) {
    history_.push_back(std::move(d));
  } else {
    history_[history_head_] = std::move(d);
    history_head_ = (history_head_ + 1) % history_.size();
  }
}

}  // namespace lagpilot
