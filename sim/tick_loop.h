#pragma once
// What simulate() (sim/simulation.cpp) and the fleet simulator (sim/fleet_simulation.cpp) share
// around their tick loops, written once so that a fleet of one instance stays simulate()
// exactly: the tick grid and the series cadence, the batch layout's service time per message at
// the current pool size, and the Observation a ControlLoop sees, built from a model sample the
// way a real consumer's sampler would (rates over the window since the previous sample).
//
// Thread-safety: plain values, one owner each.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "policies/observation.h"
#include "policies/quotients.h"
#include "sim/consumer_model.h"

namespace lagpilot::sim {

// Ticks i = 1 .. ticks cover [(i - 1) tick, i tick); a series point is kept every series_every
// ticks and at the last one.
struct TickGrid {
  TickGrid(double trace_duration, double tick_seconds, double series_interval_seconds)
      : tick(tick_seconds),
        ticks(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(trace_duration / tick - 1e-9)))),
        series_every(series_interval_seconds > 0.0
                         ? std::max<int64_t>(1, std::llround(series_interval_seconds / tick))
                         : 1) {}

  double start(int64_t i) const { return static_cast<double>(i - 1) * tick; }
  double end(int64_t i) const { return static_cast<double>(i) * tick; }
  bool series_point(int64_t i) const { return i % series_every == 0 || i == ticks; }

  double tick;
  int64_t ticks;
  int64_t series_every;
};

// The batch layout's service time per message at a pool size, recomputed only when the pool
// changes.
class StretchedService {
 public:
  explicit StretchedService(const ConsumerModelConfig& model) : model_(model) {}
  double seconds_per_message(int pool) {
    if (pool != pool_) {
      pool_ = pool;
      seconds_ = model_.service_mean_seconds * model_.stretch(pool);
    }
    return seconds_;
  }

 private:
  const ConsumerModelConfig& model_;
  int pool_ = -1;
  double seconds_ = 0.0;
};

// Builds each tick's Observation from the model's sample and the counts the caller keeps
// (arrivals to the consumer so far, its lag, its queue), with the rates over the window since
// the previous build.
class ObservationBuilder {
 public:
  explicit ObservationBuilder(double start_time = 0.0) : previous_time_(start_time) {}

  Observation build(double now, const ModelSample& m, int64_t arrived, int64_t lag,
                    int64_t queue_depth, int partitions, bool explain) {
    Observation obs;
    fill(obs, now, m, arrived, lag, queue_depth, partitions, explain);
    return obs;
  }

  // The same into an existing Observation, for a caller that keeps one across ticks (a fresh
  // one is zeroed, all ~150 bytes, before these stores overwrite it: a quarter of the
  // simulator's sampling cost). Every field the builder owns is written; partition_lag is left
  // as it is (the simulator never fills it), and the bounds and `pinned` are the ControlLoop's.
  void fill(Observation& obs, double now, const ModelSample& m, int64_t arrived, int64_t lag,
            int64_t queue_depth, int partitions, bool explain) {
    const double window = now - previous_time_;
    // Counts over the window, per second (no division at a 1 s window: see divide()).
    const auto rate = [window](int64_t count) {
      return window > 0 ? divide(static_cast<double>(count), window) : 0;
    };
    obs.time = now;
    obs.total_lag = lag;
    obs.arrival_rate = rate(arrived - previous_arrived_);
    // The work done: shed messages leave the lag but took no worker time, so they are not in
    // the rate (the live runtime counts them apart too), which the policies and pacing read as
    // the pool's throughput.
    obs.processed_rate = rate(m.processed - previous_processed_);
    obs.lag_slope = rate(lag - previous_lag_);
    obs.latency_p50 = m.latency_p50;
    obs.latency_p99 = m.latency_p99;
    obs.record_age_p99 = m.record_age_p99;
    obs.current_workers = m.pool_size;
    obs.busy_workers = m.busy_mean;
    obs.queue_depth = queue_depth;
    obs.queue_capacity = 0;  // unbounded in the simulator
    obs.assigned_partitions = partitions;
    obs.sink_pushback = m.sink_pushback;
    obs.explain = explain;
    previous_time_ = now;
    previous_arrived_ = arrived;
    previous_processed_ = m.processed;
    previous_lag_ = lag;
  }

 private:
  double previous_time_;
  int64_t previous_arrived_ = 0;
  int64_t previous_processed_ = 0;
  int64_t previous_lag_ = 0;
};

}  // namespace lagpilot::sim
