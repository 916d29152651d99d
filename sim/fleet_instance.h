#pragma once
// One pod of the fleet simulator (sim/fleet_simulation.h), an implementation detail of it: the
// pod's fetch buffer, its ConsumerModel and what its ControlLoop sees, built by the same
// ObservationBuilder (sim/tick_loop.h) as simulate()'s SimulatedConsumer (the buffer counted as
// the queue the single model would hold), so that a fleet of one is simulate() exactly.
//
// Thread-safety: a plain single-threaded object, owned by one fleet run.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "policies/capacity_estimator.h"
#include "policies/control_loop.h"
#include "sim/consumer_model.h"
#include "sim/replica_policy.h"
#include "sim/tick_loop.h"

namespace lagpilot::sim::fleet_detail {

// An arrival chunk with its partition and its place in the arrival order (buffers stay sorted
// by it, also after a rebalance merges two of them).
struct Tagged {
  ArrivalChunk chunk;
  int partition = 0;
  uint64_t seq = 0;
};

// Algorithm: messages wait in the buffer (FIFO in arrival order) and go to the model only when it
// has an idle worker, which the model then starts at once, as its own queue would.
class Instance final : public Sampler, public Actuator {
 public:
  Instance(const ConsumerModelConfig& model, int initial_workers, uint64_t seed, bool batch,
           double now, double catch_up_seconds)
      : model_(model, initial_workers, seed, batch),
        observations_(now),
        recommended_(catch_up_seconds) {}

  void start_loop(std::unique_ptr<Policy> policy, const GuardConfig& guards) {
    loop_ = std::make_unique<ControlLoop>(*this, *this, std::move(policy), guards, 0);
  }
  void stop_loop() { loop_.reset(); }
  ControlLoop* loop() { return loop_.get(); }

  Observation sample(double now) override {
    now_ = now;
    last_ = model_.sample(now);
    last_lag_ = lag_now();
    last_obs_ = observations_.build(now, last_, arrivals_, last_lag_, last_.queue_depth + buffered_,
                                    static_cast<int>(partitions_.size()), explain_);
    return last_obs_;
  }

  // Grows one worker at a time, feeding each new productive worker before the next is added:
  // what ConsumerModel::resize does when its own queue holds the messages.
  void resize(int workers) override {
    if (workers <= model_.pool_size()) {
      model_.resize(now_, workers);
      return;
    }
    for (int n = model_.pool_size() + 1; n <= workers; ++n) {
      model_.resize(now_, n);
      feed(now_);
    }
  }

  // Hands buffered messages to idle workers (none while paused).
  void feed(double now) {
    if (paused_) return;
    while (!buffer_.empty() && model_.idle_workers() > 0) {
      const Tagged t = buffer_.front();
      buffer_.pop_front();
      buffered_ -= t.chunk.count;
      model_.arrive(now, t.chunk);
    }
  }

  void receive(double now, const Tagged& t) {
    buffer_.push_back(t);
    buffered_ += t.chunk.count;
    received_ += t.chunk.count;
    arrivals_ += t.chunk.count;
    feed(now);
  }

  // Rebalance: removes the buffered messages of partitions not in `keep` (by partition number).
  std::vector<Tagged> revoke(const std::vector<char>& keep) {
    std::vector<Tagged> out;
    std::deque<Tagged> kept;
    for (const Tagged& t : buffer_) {
      if (keep[static_cast<std::size_t>(t.partition)]) {
        kept.push_back(t);
      } else {
        out.push_back(t);
      }
    }
    buffer_.swap(kept);
    for (const Tagged& t : out) {
      buffered_ -= t.chunk.count;
      handed_over_ += t.chunk.count;
    }
    return out;
  }
  // Rebalance: takes over messages another member had buffered, in arrival order.
  void take_over(const std::vector<Tagged>& moved) {
    if (moved.empty()) return;
    for (const Tagged& t : moved) {
      buffer_.push_back(t);
      buffered_ += t.chunk.count;
      received_ += t.chunk.count;
    }
    std::sort(buffer_.begin(), buffer_.end(),
              [](const Tagged& a, const Tagged& b) { return a.seq < b.seq; });
  }

  int64_t lag_now() const { return model_.arrived() + buffered_ - last_.processed; }
  // For pods without a loop (draining): sample the model directly.
  int64_t sample_lag(double now) {
    last_ = model_.sample(now);
    last_lag_ = lag_now();
    return last_lag_;
  }
  int64_t final_lag() const {
    return model_.in_system() - (last_.processed - model_.completed()) + buffered_;
  }
  bool empty() const { return buffered_ == 0 && model_.in_system() == 0; }

  ConsumerModel& model() { return model_; }
  const ModelSample& last_sample() const { return last_; }
  const Observation& last_observation() const { return last_obs_; }
  int64_t last_lag() const { return last_lag_; }
  int64_t received() const { return received_; }
  int64_t handed_over() const { return handed_over_; }
  CapacityEstimator& recommended() { return recommended_; }
  void set_partitions(std::vector<int> p) { partitions_ = std::move(p); }
  const std::vector<int>& partitions() const { return partitions_; }
  void set_paused(bool paused) { paused_ = paused; }
  void set_explain(bool explain) { explain_ = explain; }

  // Per-instance KPI counters (the fleet sums them).
  int last_direction = 0;
  int scale_actions = 0;
  int reversals = 0;
  double worker_seconds = 0.0;

 private:
  ConsumerModel model_;
  std::unique_ptr<ControlLoop> loop_;
  std::deque<Tagged> buffer_;
  int64_t buffered_ = 0;
  int64_t received_ = 0;     // arrivals + taken over
  int64_t arrivals_ = 0;     // arrivals to its partitions while it held them
  int64_t handed_over_ = 0;  // buffered messages moved to others
  std::vector<int> partitions_;
  bool paused_ = false;
  bool explain_ = true;
  double now_ = 0.0;
  ObservationBuilder observations_;
  int64_t last_lag_ = 0;
  ModelSample last_;
  Observation last_obs_;
  CapacityEstimator recommended_;
};

}  // namespace lagpilot::sim::fleet_detail
