#pragma once
// Replays an arrival trace against the simulated consumer under one policy and measures it.
//
// simulate() wires the SAME ControlLoop, policy and guards as the live runtime to a
// ConsumerModel (through a Sampler and an Actuator) and runs the whole trace:
//
//   for each tick k = 1 .. ceil(duration / tick_seconds), at t = k * tick_seconds:
//     arrivals of [t - tick, t) and the model's events before t run in time order
//     (at equal times: model events first, then arrivals; an event AT t runs after the tick)
//     controller.tick(t): sample -> policy -> guards -> resize the model
//     KPIs and the series take that tick's sample
//
// Arrivals: each trace bin is cut at tick boundaries into segments; a segment of length L at
// rate r gets Poisson(r L) messages, spread over it as a Poisson process (uniform order
// statistics). Counts come from an RNG stream that depends only on the seed, the trace and
// tick_seconds, so every policy and both fidelities see the same number of arrivals in every
// tick; positions and service times have their own streams.
//
// Fidelity (SimConfig::fidelity):
//   message  one event per arrival and one per completion: exact M/G/c-with-scaling queueing.
//   batch    a segment's n messages become batches of at most batch_size messages, laid out as
//            `lanes` parallel streams that each cover the segment in consecutive sub-windows;
//            lanes = ceil(n * mean service time * stretch(pool) / L), capped by the pool size,
//            so that one worker keeps up with each lane as its messages trickle in. One event per
//            batch arrival (when its sub-window opens) and one per batch completion. A batch
//            never spans a tick, so the arrivals at every tick are exact; ConsumerModel says how
//            progress inside a batch is counted. Accuracy against `message` (same seeds, real
//            policies, a 3.5-day World Cup 98 slice compressed 6x): worker-seconds within 0.2 %,
//            lag integral within 3-6 % with batch_size 100 and within 1 % with batch_size 10;
//            with a standing backlog within 0.1 %. At light load it over-states the lag by up to
//            about one batch (lower batch_size if that matters).
//   auto     (default) `message` when the trace's expected message count is at most
//            auto_message_limit (20 M), else `batch`.
//
// Shedding (SimConfig::shedding, the config's top-level "shedding" object, the one `lagpilot run`
// reads): after each tick's decision the live runtime's ShedGate (policies/shed_gate.h) is fed
// the pressure at that tick, the sampled lag above lag_slo (the simulator's queue is unbounded,
// so the live runtime's other pressure, a pool at its high watermark, never holds here); from
// then until the next tick the model sheds by age while the gate is on (sim/consumer_model.h).
// The priority rule is not simulated (records have no key or headers).
//
// Thread-safety: simulate() is a pure function of its arguments (it builds its own policy,
// controller and model) and may run concurrently on different threads; simulate_all() does.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/guards.h"
#include "policies/observation.h"
#include "policies/policy.h"
#include "policies/policy_factory.h"
#include "policies/shed_gate.h"
#include "sim/consumer_model.h"
#include "sim/trace.h"

namespace lagpilot::sim {

struct SimConfig {
  // Control tick and metric sampling interval, seconds (> 0).
  double tick_seconds = 1.0;
  // Lag SLO, messages: Kpis::seconds_above_slo counts the seconds (tick samples * tick_seconds)
  // at which the sampled lag was above it. Not part of the "sim" object: in a config file it is
  // the top-level "lag_slo" shared with `lagpilot run` (cli::sim_config() sets it), so
  // from_json() rejects a "lag_slo" key and to_json() does not write one.
  int64_t lag_slo = 10000;
  // "message", "batch" or "auto" (see the header comment).
  std::string fidelity = "auto";
  // `auto` picks `message` when the trace's expected message count is at most this.
  int64_t auto_message_limit = 20'000'000;
  // Batch fidelity: at most this many messages per batch (>= 1). Smaller is closer to
  // `message` and slower: 10 is within about 1 % of it (see above).
  int batch_size = 100;
  // Seeds every random stream (arrival counts, arrival positions, service times).
  uint64_t seed = 1;
  // Pool size at t = 0 (productive at once; the first tick's guards apply the bounds).
  int initial_workers = 4;
  // Observation::assigned_partitions (the simulated consumer owns this many partitions).
  int partitions = 8;
  ConsumerModelConfig model;
  // Keep RunResult::series (one point per series_interval_seconds).
  bool record_series = false;
  // Series spacing, seconds, rounded to a whole number of ticks (0 = every tick).
  double series_interval_seconds = 0.0;
  // RunResult::decisions keeps the first this many scale actions (decisions that changed the
  // pool size); 0 keeps none.
  int max_decisions = 1000;
  // Shedding by age (see the header comment); off unless `enabled`. Like lag_slo, not part of
  // the "sim" object: cli::sim_config() copies the config's top-level "shedding" (read by
  // ShedConfig::from_json, the same as `lagpilot run`), and from_json()/to_json() leave it out.
  ShedConfig shedding;

  // Reads a "sim" object (its "model" child through ConsumerModelConfig::from_json). Unknown
  // keys and out-of-range values throw ConfigError naming the path ("sim.batch_size: ..."); so
  // does "lag_slo", which moved to the config's top level. lag_slo keeps its default.
  static SimConfig from_json(const nlohmann::json& j, const std::string& path = "sim");
  // Every field but lag_slo (see above); from_json(to_json()) gives the same JSON back.
  nlohmann::json to_json() const;

  // "message" or "batch": what `fidelity` means for this trace.
  std::string resolve_fidelity(const Trace& trace) const;
};

struct Kpis {
  double lag_integral = 0.0;          // message*s: sum over ticks of sampled lag * tick_seconds
  int64_t max_lag = 0;                // messages, highest sampled lag
  int64_t p99_lag = 0;                // messages, nearest-rank 99th percentile of the tick samples
  double seconds_above_slo = 0.0;     // s, tick samples with lag > lag_slo, times tick_seconds
  double worker_seconds = 0.0;        // worker*s: pool size (warming workers included) over time
  int scale_actions = 0;              // ticks at which the pool size changed
  int reversals = 0;                  // scale actions in the opposite direction of the previous one
  int max_workers = 0;                // largest pool size (the initial one included)
  int64_t arrived = 0;                // messages
  int64_t processed = 0;              // messages (completed, counting progress inside batches)
  int64_t final_lag = 0;              // messages queued or in service at the end
  double mean_wait_seconds = 0.0;     // mean queueing delay (service start - arrival) of completed
                                      // messages; batch fidelity: from each batch's evenly spread
                                      // arrivals and starts
  double mean_service_seconds = 0.0;  // mean service time of completed messages (stretch incl.)
  double mean_workers = 0.0;          // worker_seconds / duration
  int64_t ticks = 0;
  double duration_seconds = 0.0;  // ticks * tick_seconds
  // Shedding (only when SimConfig::shedding is enabled; reports write these only then).
  bool shedding = false;
  int64_t shed = 0;           // messages shed, all by age (arrived = processed + shed + final lag)
  double shed_seconds = 0.0;  // s, ticks during which shedding was on, times tick_seconds
  int shed_starts = 0;        // times the gate turned shedding on
};

// One point of the time series (at a tick).
struct SeriesPoint {
  double t = 0.0;               // s
  double arrival_rate = 0.0;    // messages/s since the previous point
  double processed_rate = 0.0;  // messages/s since the previous point
  int64_t lag = 0;              // messages, sampled at t
  int workers = 0;              // pool size during the tick that ends at t (before its decision)
  double latency_p99 = 0.0;     // s, service time of the tick's completed messages
  double shed_rate = 0.0;       // messages/s shed since the previous point
};

struct RunResult {
  std::string label;             // the column/row name in reports ("pid", "static:16", ...)
  std::string policy;            // Policy::name()
  nlohmann::json policy_params;  // Policy::params() at the start of the run
  std::string fidelity;          // "message" or "batch" (auto resolved)
  Kpis kpis;
  std::vector<SeriesPoint> series;  // empty unless SimConfig::record_series
  std::vector<Decision> decisions;  // the first SimConfig::max_decisions scale actions
};

// Hook for the fleet simulator (sim/fleet_simulation.h), so that a fleet of one instance sees
// exactly simulate()'s arrivals and service times: the arrival generator simulate() uses, one
// tick window [t0, t1) at a time (begin_window, then pop() while next_time() < t1), and the seed
// of its consumer model's service-time stream. make_tick_arrivals() checks the trace and the
// config as simulate() does (std::invalid_argument).
class TickArrivals {
 public:
  virtual ~TickArrivals() = default;
  // `seconds_per_message` (stretched service time) and `pool_size` lay out batches (batch only).
  virtual void begin_window(double t0, double t1, double seconds_per_message, int pool_size) = 0;
  virtual double next_time() const = 0;  // +infinity when the window is exhausted
  virtual ArrivalChunk pop() = 0;
  virtual int64_t generated() const = 0;  // messages popped so far
};
std::unique_ptr<TickArrivals> make_tick_arrivals(const Trace& trace, const SimConfig& config);
uint64_t model_service_seed(const SimConfig& config);

// Runs `trace` with an already built policy. Throws std::invalid_argument for an unusable trace
// (no bins, bin_seconds <= 0, a negative or non-finite rate) or config, and std::logic_error if
// conservation (arrived == processed + shed + final_lag) fails (a bug, never expected).
RunResult simulate(const Trace& trace, std::unique_ptr<Policy> policy, const std::string& label,
                   const GuardConfig& guards, const SimConfig& config);

// Builds the policy with make_policy(spec.name, spec.params); label = spec.label, or the
// name when empty. Also throws ConfigError for bad policy parameters.
RunResult simulate(const Trace& trace, const PolicySpec& spec, const GuardConfig& guards,
                   const SimConfig& config);

// Runs every spec (in `threads` threads; <= 1: all on the calling thread) and returns the
// results in the order of `specs`. Results do not depend on `threads`: each is the result
// simulate() gives for its spec alone. Policies are all built (and their parameters checked)
// before anything runs. With more threads than specs, each per-message run draws its arrival
// times and service times ahead on two helper threads (sim/prefetched_stream.h). With fewer,
// the runs advance together a block of ticks at a time, on `threads` threads that each take the
// run furthest behind (sim/block_pipeline.h): they draw their arrival counts once, and a run
// whose model got the same inputs as the first run (no resize that changed its pool yet) takes
// that run's model samples instead of simulating its own (simulation.cpp, SimRun::can_follow).
// The same values either way, so the same results.
std::vector<RunResult> simulate_all(const Trace& trace, const std::vector<PolicySpec>& specs,
                                    const GuardConfig& guards, const SimConfig& config,
                                    int threads = 1);

}  // namespace lagpilot::sim
