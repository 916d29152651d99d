#include "sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "policies/config_reader.h"
#include "policies/control_loop.h"
#include "policies/infinity.h"
#include "sim/lag_quantile.h"
#include "sim/parallel_for.h"
#include "sim/prefetched_stream.h"
#include "sim/random.h"
#include "sim/tick_loop.h"

namespace lagpilot::sim {
namespace {

// Stream numbers under the user's seed.
constexpr uint64_t kArrivalCountStream = 1;
constexpr uint64_t kArrivalPositionStream = 2;
constexpr uint64_t kServiceStream = 3;

// Algorithm: produces the arrivals of one tick window at a time, in time order. The window is cut
// at trace-bin boundaries into segments; each segment gets Poisson(rate * length) messages from
// the count stream. Per-message mode hands them out one by one at the uniform order statistics
// of the segment, generated ascending without sorting (x' = x + (1 - x)(1 - U^(1/m)) with m
// messages left); batch mode hands out the segment's batches, all at the segment's start.
class ArrivalGenerator {
 public:
  ArrivalGenerator(const Trace& trace, uint64_t seed, bool batch, int batch_size)
      : trace_(trace),
        duration_(trace.duration()),
        counts_(Rng::stream(seed, kArrivalCountStream)),
        positions_(Rng::stream(seed, kArrivalPositionStream)),
        batch_(batch),
        batch_size_(batch_size) {}

  // Prepares [t0, t1). `seconds_per_message` (service time with stretch) and `pool_size` size
  // the batches (batch mode only).
  void begin_window(double t0, double t1, double seconds_per_message, int pool_size) {
    window_end_ = std::min(t1, duration_);
    cursor_ = t0;
    // Windows come one after the other, so bin_ already points at the bin holding t0 (the last
    // one's window did not end at its end) or at the next one; only a jump needs the division.
    if (t0 != previous_window_end_) {
      bin_ = static_cast<std::size_t>(std::max(0.0, std::floor(t0 / trace_.bin_seconds)));
    }
    previous_window_end_ = window_end_;
    seconds_per_message_ = seconds_per_message;
    pool_size_ = pool_size;
    chunks_.clear();
    next_chunk_ = 0;
    left_in_segment_ = 0;
    if (batch_) {
      while (next_segment()) {
        // Batches of this segment, in `lanes` parallel streams that each cover the segment in
        // `slots` consecutive sub-windows: enough lanes that one worker keeps up with each lane
        // as it trickles in (capped by the pool), enough slots that no batch holds more than
        // batch_size messages. A batch becomes available when its sub-window opens.
        const int64_t n = left_in_segment_;
        const double length = segment_end_ - segment_start_;
        const double work = static_cast<double>(n) * seconds_per_message_;
        if (n <= batch_size_ && work <= length) {  // the common light-load case: one batch
          chunks_.push_back(ArrivalChunk{segment_start_, segment_end_, n});
        } else {
          const int64_t lanes =
              std::max<int64_t>(1, static_cast<int64_t>(std::min({std::ceil(work / length),
                                                                  static_cast<double>(pool_size_),
                                                                  static_cast<double>(n)})));
          const int64_t by_size = (n + batch_size_ - 1) / batch_size_;
          const int64_t slots = std::max<int64_t>(1, (by_size + lanes - 1) / lanes);
          const int64_t count = std::min(n, lanes * slots);
          const int64_t used_slots = (count + lanes - 1) / lanes;
          const double slot_length = length / static_cast<double>(used_slots);
          const int64_t base = n / count;
          const int64_t extra = n % count;
          for (int64_t i = 0; i < count; ++i) {
            const int64_t slot = i / lanes;
            const double from = segment_start_ + static_cast<double>(slot) * slot_length;
            const double to = slot + 1 == used_slots ? segment_end_ : from + slot_length;
            chunks_.push_back(ArrivalChunk{from, to, base + (i < extra ? 1 : 0)});
          }
        }
        left_in_segment_ = 0;
      }
      next_time_ = chunks_.empty() ? kInf : chunks_[0].first_arrival;
    } else {
      position_ = 0.0;
      advance_message();
    }
  }

  // Time of the next arrival (chunk) in the window; +infinity when the window is exhausted.
  double next_time() const { return next_time_; }

  ArrivalChunk pop() {
    if (batch_) {
      const ArrivalChunk c = chunks_[next_chunk_++];
      generated_ += c.count;
      next_time_ = next_chunk_ < chunks_.size() ? chunks_[next_chunk_].first_arrival : kInf;
      return c;
    }
    const ArrivalChunk c{next_time_, next_time_, 1};
    ++generated_;
    advance_message();
    return c;
  }

  int64_t generated() const { return generated_; }

 private:
  // Moves to the next segment of the window that has at least one arrival; false at the end.
  bool next_segment() {
    while (cursor_ < window_end_) {
      const double bin_end = static_cast<double>(bin_ + 1) * trace_.bin_seconds;
      const double end = std::min(bin_end, window_end_);
      const double start = cursor_;
      const double rate = bin_ < trace_.rates.size() ? trace_.rates[bin_] : 0.0;
      if (bin_end <= window_end_) ++bin_;
      if (end <= start) continue;
      cursor_ = end;
      const int64_t n = counts_.poisson(rate * (end - start));
      if (n > 0) {
        segment_start_ = start;
        segment_end_ = end;
        if (!batch_) last_before_end_ = std::nextafter(end, -kInf);  // only messages use it
        left_in_segment_ = n;
        return true;
      }
    }
    return false;
  }

  void advance_message() {
    if (left_in_segment_ == 0) {
      if (!next_segment()) {
        next_time_ = kInf;
        return;
      }
      position_ = 0.0;
    }
    // Smallest of m uniforms on [position, 1): position + (1 - position)(1 - U^(1/m)).
    const double m = static_cast<double>(left_in_segment_--);
    const double u = positions_.uniform_pos();
    position_ += (1.0 - position_) * -std::expm1(std::log(u) / m);
    next_time_ =
        std::min(segment_start_ + position_ * (segment_end_ - segment_start_), last_before_end_);
  }

  const Trace& trace_;
  const double duration_;
  Rng counts_;
  Rng positions_;
  const bool batch_;
  const int64_t batch_size_;

  double window_end_ = 0.0;
  double previous_window_end_ = 0.0;
  double cursor_ = 0.0;
  std::size_t bin_ = 0;
  double seconds_per_message_ = 0.0;
  int pool_size_ = 0;

  double segment_start_ = 0.0;
  double segment_end_ = 0.0;
  double last_before_end_ = 0.0;
  int64_t left_in_segment_ = 0;
  double position_ = 0.0;

  std::vector<ArrivalChunk> chunks_;
  std::size_t next_chunk_ = 0;
  double next_time_ = kInf;
  int64_t generated_ = 0;
};

// Per-message fidelity's arrivals do not depend on anything the run does (the windows are the
// ticks, one after the other, and a message's time comes from the count and position streams
// alone), so a spare core can draw them ahead (PrefetchedStream): a producer runs the same
// ArrivalGenerator over every tick window and writes each window's arrival times, then +infinity
// as the window's end, a block at a time. The times are the ones the generator would have handed
// out in the run, bit for bit.
class ArrivalFill {
 public:
  ArrivalFill(const Trace& trace, uint64_t seed, int batch_size, int64_t ticks, double tick)
      : generator_(trace, seed, /*batch=*/false, batch_size), ticks_(ticks), tick_(tick) {}

  std::size_t operator()(double* out, std::size_t n) {
    std::size_t k = 0;
    while (k < n) {
      if (!in_window_) {
        if (window_ == ticks_) break;  // every window written: the stream ends
        ++window_;
        generator_.begin_window(static_cast<double>(window_ - 1) * tick_,
                                static_cast<double>(window_) * tick_, 0.0, 0);
        in_window_ = true;
      }
      const double t = generator_.next_time();
      out[k++] = t;
      if (t == kInf) {
        in_window_ = false;
      } else {
        generator_.pop();
      }
    }
    return k;
  }

 private:
  ArrivalGenerator generator_;
  int64_t ticks_;
  double tick_;
  int64_t window_ = 0;  // windows begun
  bool in_window_ = false;
};

// The run's arrivals: drawn in place, or read from a PrefetchedStream (per-message fidelity).
class Arrivals {
 public:
  Arrivals(const Trace& trace, uint64_t seed, bool batch, int batch_size, bool prefetch,
           int64_t ticks, double tick)
      : generator_(trace, seed, batch, batch_size) {
    if (prefetch && !batch) {
      // Fill must be copyable: the generator sits behind a shared pointer.
      auto fill = std::make_shared<ArrivalFill>(trace, seed, batch_size, ticks, tick);
      prefetched_ = std::make_unique<PrefetchedStream>(
          PrefetchedStream::Fill([fill](double* out, std::size_t n) { return (*fill)(out, n); }));
    }
  }
  void begin_window(double t0, double t1, double seconds_per_message, int pool_size) {
    if (prefetched_) {
      next_ = prefetched_->next();  // the window's first time, or its end (+infinity)
    } else {
      generator_.begin_window(t0, t1, seconds_per_message, pool_size);
    }
  }
  double next_time() const { return prefetched_ ? next_ : generator_.next_time(); }
  ArrivalChunk pop() {
    if (!prefetched_) return generator_.pop();
    const ArrivalChunk c{next_, next_, 1};
    ++generated_;
    next_ = prefetched_->next();
    return c;
  }
  int64_t generated() const { return prefetched_ ? generated_ : generator_.generated(); }

  // Prefetched arrivals go to the model a window at a time (ConsumerModel::run_window: the same
  // order as the caller's loop over next_time() and pop()).
  bool prefetched() const { return prefetched_ != nullptr; }
  void run_window(ConsumerModel& model, double t1) {
    generated_ += model.run_window(t1, *prefetched_, next_);
  }

 private:
  ArrivalGenerator generator_;
  std::unique_ptr<PrefetchedStream> prefetched_;
  double next_ = kInf;
  int64_t generated_ = 0;
};

// The Sampler and Actuator the ControlLoop sees: the model, observed like a real consumer.
class SimulatedConsumer final : public Sampler, public Actuator {
 public:
  SimulatedConsumer(ConsumerModel& model, int partitions)
      : model_(model), partitions_(partitions) {}

  Observation sample(double now) override {
    now_ = now;
    last_ = model_.sample(now);
    last_lag_ = model_.arrived() - last_.processed - last_.shed;
    return observations_.build(now, last_, model_.arrived(), last_lag_, last_.queue_depth,
                               partitions_, explain_);
  }

  void resize(int workers) override { model_.resize(now_, workers); }

  // Observation::explain of the next samples: whether the decision's text will be read.
  void set_explain(bool explain) { explain_ = explain; }

  const ModelSample& last_sample() const { return last_; }
  int64_t last_lag() const { return last_lag_; }

 private:
  ConsumerModel& model_;
  int partitions_;
  double now_ = 0.0;
  ObservationBuilder observations_;
  int64_t last_lag_ = 0;
  bool explain_ = true;
  ModelSample last_;
};

void check_trace(const Trace& trace) {
  if (trace.rates.empty()) throw std::invalid_argument("trace '" + trace.source + "' has no bins");
  if (!(trace.bin_seconds > 0.0) || !std::isfinite(trace.bin_seconds)) {
    throw std::invalid_argument("trace '" + trace.source + "': bin_seconds must be > 0");
  }
  // A billion messages/s is far beyond any consumer group; past it, arrival counts drawn per
  // bin would no longer fit the simulator's 64-bit counters.
  constexpr double kMaxRate = 1e9;
  for (std::size_t i = 0; i < trace.rates.size(); ++i) {
    if (!(trace.rates[i] >= 0.0) || !(trace.rates[i] <= kMaxRate)) {
      throw std::invalid_argument("trace '" + trace.source + "': bin " + std::to_string(i) +
                                  " has rate " + std::to_string(trace.rates[i]) +
                                  " (must be between 0 and 1e9 messages/s)");
    }
  }
}

void check_config(const SimConfig& c) {
  if (!(c.tick_seconds > 0.0) || !std::isfinite(c.tick_seconds)) {
    throw std::invalid_argument("sim.tick_seconds must be > 0");
  }
  if (c.batch_size < 1) throw std::invalid_argument("sim.batch_size must be >= 1");
  if (c.initial_workers < 0) throw std::invalid_argument("sim.initial_workers must be >= 0");
  if (c.fidelity != "message" && c.fidelity != "batch" && c.fidelity != "auto") {
    throw std::invalid_argument("sim.fidelity must be message, batch or auto");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SimConfig

SimConfig SimConfig::from_json(const nlohmann::json& j, const std::string& path) {
  SimConfig c;
  JsonObjectReader r(j, path);
  r.read("tick_seconds", c.tick_seconds, 1e-6, 86400.0);
  if (const nlohmann::json* slo = r.raw("lag_slo")) {
    // A config written before `run` and `sim` shared one lag SLO: say exactly what to change.
    const std::string value = slo->is_number() ? slo->dump() : "N";
    throw ConfigError(r.path_of("lag_slo"),
                      "moved to the top level of the config file (one lag SLO for run, sim, tune "
                      "and calibrate): delete it here and write \"lag_slo\": " +
                          value + " beside \"policy\" and \"guards\"");
  }
  r.read_enum("fidelity", c.fidelity, {"message", "batch", "auto"});
  r.read("auto_message_limit", c.auto_message_limit, int64_t{0});
  r.read("batch_size", c.batch_size, 1, 1'000'000);
  int64_t seed = static_cast<int64_t>(c.seed);
  r.read("seed", seed, int64_t{0});
  c.seed = static_cast<uint64_t>(seed);
  r.read("initial_workers", c.initial_workers, 0, 100'000);
  r.read("partitions", c.partitions, 1, 1'000'000);
  if (r.has("model")) {
    c.model = ConsumerModelConfig::from_json(*r.raw("model"), r.path_of("model"));
  }
  r.read("record_series", c.record_series);
  r.read("series_interval_seconds", c.series_interval_seconds, 0.0);
  r.read("max_decisions", c.max_decisions, 0);
  r.finish();
  return c;
}

nlohmann::json SimConfig::to_json() const {
  return nlohmann::json{{"tick_seconds", tick_seconds},
                        {"fidelity", fidelity},
                        {"auto_message_limit", auto_message_limit},
                        {"batch_size", batch_size},
                        {"seed", seed},
                        {"initial_workers", initial_workers},
                        {"partitions", partitions},
                        {"model", model.to_json()},
                        {"record_series", record_series},
                        {"series_interval_seconds", series_interval_seconds},
                        {"max_decisions", max_decisions}};
}

std::string SimConfig::resolve_fidelity(const Trace& trace) const {
  if (fidelity != "auto") return fidelity;
  return trace.total_messages() <= static_cast<double>(auto_message_limit) ? "message" : "batch";
}

// ---------------------------------------------------------------------------------------------
// simulate

namespace {

// simulate(), with the arrivals and the service times drawn ahead on two more threads when
// `prefetch` (and the fidelity is per message): the same result either way.
RunResult simulate_run(const Trace& trace, std::unique_ptr<Policy> policy, const std::string& label,
                       const GuardConfig& guards, const SimConfig& config, bool prefetch) {
  check_trace(trace);
  check_config(config);
  if (!policy) throw std::invalid_argument("simulate: no policy");

  RunResult result;
  result.label = label.empty() ? policy->name() : label;
  result.policy = policy->name();
  result.policy_params = policy->params();
  result.fidelity = config.resolve_fidelity(trace);
  const bool batch = result.fidelity == "batch";

  const TickGrid grid(trace.duration(), config.tick_seconds, config.series_interval_seconds);
  const double tick = grid.tick;
  const int64_t ticks = grid.ticks;

  ConsumerModel model(config.model, config.initial_workers,
                      Rng::stream(config.seed, kServiceStream).next_u64(), batch);
  if (prefetch) model.prefetch_service_times();
  // The latency percentiles cost work at every completion and every tick; only the series, the
  // latency-ceiling guard and a policy that says it reads them need them (the KPIs do not).
  model.set_latency_wanted(config.record_series || guards.latency_ceiling_seconds > 0.0 ||
                           policy->reads_latency());
  Arrivals arrivals(trace, config.seed, batch, config.batch_size, prefetch, ticks, tick);
  SimulatedConsumer consumer(model, config.partitions);
  ControlLoop controller(consumer, consumer, std::move(policy), guards, /*decision_history=*/0);

  Kpis& k = result.kpis;
  k.max_workers = config.initial_workers;
  LagQuantile p99_lag(0.99, ticks);
  int last_direction = 0;
  if (config.record_series) {
    result.series.reserve(static_cast<std::size_t>(ticks / grid.series_every + 1));
  }
  int64_t series_arrived = 0;
  int64_t series_processed = 0;
  double series_time = 0.0;
  int64_t series_shed = 0;
  std::optional<ShedGate> gate;
  if (config.shedding.enabled) {
    gate.emplace(config.shedding.after_pressure_seconds, config.shedding.release_after_seconds);
    model.set_shed_max_age(config.shedding.max_age_seconds);
    k.shedding = true;
  }
  StretchedService stretched(config.model);
  for (int64_t i = 1; i <= ticks; ++i) {
    const double t0 = grid.start(i);
    const double t1 = grid.end(i);
    const int pool = model.pool_size();
    arrivals.begin_window(t0, t1, stretched.seconds_per_message(pool), pool);
    if (arrivals.prefetched()) {
      arrivals.run_window(model, t1);  // the loop below, inside the model
    } else {
      for (;;) {
        const double te = model.next_event_time();
        const double ta = arrivals.next_time();
        if (te <= ta) {
          if (te >= t1) break;
          model.run_next_event();
        } else {
          if (ta >= t1) break;
          model.arrive(ta, arrivals.pop());
        }
      }
    }
    if (arrivals.next_time() != kInf) {
      throw std::logic_error("simulate: arrivals left over past their tick window");
    }

    // Only recorded decisions keep their text: once RunResult::decisions is full, nobody reads a
    // reason again, so the policy and the guards skip writing them (same numbers either way).
    consumer.set_explain(static_cast<int>(result.decisions.size()) < config.max_decisions);
    const Decision d = controller.tick(t1);
    const ModelSample& m = consumer.last_sample();
    const int64_t lag = consumer.last_lag();
    const int before = m.pool_size;  // pool during [t0, t1)
    k.lag_integral += static_cast<double>(lag) * tick;
    k.max_lag = std::max(k.max_lag, lag);
    if (lag > config.lag_slo) k.seconds_above_slo += tick;
    p99_lag.add(lag);
    k.worker_seconds += static_cast<double>(before) * tick;
    if (gate) {
      if (gate->active()) k.shed_seconds += tick;  // on during [t0, t1)
      // Pressure as the live runtime sees it at its tick (see simulation.h): lag above the SLO.
      if (gate->update(t1, lag > config.lag_slo) == ShedGate::Transition::kStarted) {
        ++k.shed_starts;
      }
      model.set_shedding(gate->active());
    }
    const int after = model.pool_size();
    k.max_workers = std::max(k.max_workers, after);
    if (after != before) {
      ++k.scale_actions;
      const int direction = after > before ? 1 : -1;
      if (last_direction != 0 && direction != last_direction) ++k.reversals;
      last_direction = direction;
      if (static_cast<int>(result.decisions.size()) < config.max_decisions) {
        result.decisions.push_back(d);
      }
    }
    if (config.record_series && grid.series_point(i)) {
      const double span = t1 - series_time;
      SeriesPoint p;
      p.t = t1;
      p.arrival_rate = static_cast<double>(model.arrived() - series_arrived) / span;
      p.processed_rate = static_cast<double>(m.processed - series_processed) / span;
      p.lag = lag;
      p.workers = before;
      p.latency_p99 = m.latency_p99;
      p.shed_rate = static_cast<double>(m.shed - series_shed) / span;
      result.series.push_back(p);
      series_shed = m.shed;
      series_arrived = model.arrived();
      series_processed = m.processed;
      series_time = t1;
    }
  }

  // Conservation, counted two ways: the arrival and completion counters against what sits in
  // the queue and on the workers.
  const ModelSample& last = consumer.last_sample();
  const int64_t partial = last.processed - model.completed();
  k.arrived = model.arrived();
  k.processed = last.processed;
  k.final_lag = model.in_system() - partial;
  k.shed = last.shed;
  if (k.arrived != k.processed + k.shed + k.final_lag || k.shed != model.shed() ||
      k.arrived != arrivals.generated() || k.final_lag != consumer.last_lag()) {
    throw std::logic_error("simulate: conservation violated: arrived " + std::to_string(k.arrived) +
                           " (generated " + std::to_string(arrivals.generated()) +
                           ") != processed " + std::to_string(k.processed) + " + shed " +
                           std::to_string(k.shed) + " + final lag " + std::to_string(k.final_lag) +
                           " (sampled lag " + std::to_string(consumer.last_lag()) + ")");
  }

  k.p99_lag = p99_lag.value();
  k.ticks = ticks;
  k.duration_seconds = static_cast<double>(ticks) * tick;
  k.mean_workers = k.worker_seconds / k.duration_seconds;
  if (model.completed() > 0) {
    k.mean_wait_seconds = model.total_wait_seconds() / static_cast<double>(model.completed());
    k.mean_service_seconds = model.total_service_seconds() / static_cast<double>(model.completed());
  }
  return result;
}

}  // namespace

RunResult simulate(const Trace& trace, std::unique_ptr<Policy> policy, const std::string& label,
                   const GuardConfig& guards, const SimConfig& config) {
  return simulate_run(trace, std::move(policy), label, guards, config, /*prefetch=*/false);
}

RunResult simulate(const Trace& trace, const PolicySpec& spec, const GuardConfig& guards,
                   const SimConfig& config) {
  return simulate(trace, make_policy(spec.name, spec.params),
                  spec.label.empty() ? spec.name : spec.label, guards, config);
}

// Fleet hooks (see simulation.h): the same generator and seeds as simulate().
std::unique_ptr<TickArrivals> make_tick_arrivals(const Trace& trace, const SimConfig& config) {
  check_trace(trace);
  check_config(config);
  class Adapter final : public TickArrivals {
   public:
    Adapter(const Trace& trace, const SimConfig& config)
        : generator_(trace, config.seed, config.resolve_fidelity(trace) == "batch",
                     config.batch_size) {}
    void begin_window(double t0, double t1, double seconds_per_message, int pool) override {
      generator_.begin_window(t0, t1, seconds_per_message, pool);
    }
    double next_time() const override { return generator_.next_time(); }
    ArrivalChunk pop() override { return generator_.pop(); }
    int64_t generated() const override { return generator_.generated(); }

   private:
    ArrivalGenerator generator_;
  };
  return std::make_unique<Adapter>(trace, config);
}

uint64_t model_service_seed(const SimConfig& config) {
  return Rng::stream(config.seed, kServiceStream).next_u64();
}

std::vector<RunResult> simulate_all(const Trace& trace, const std::vector<PolicySpec>& specs,
                                    const GuardConfig& guards, const SimConfig& config,
                                    int threads) {
  std::vector<std::unique_ptr<Policy>> policies;
  policies.reserve(specs.size());
  for (const PolicySpec& spec : specs) policies.push_back(make_policy(spec.name, spec.params));
  std::vector<RunResult> results(specs.size());
  // Threads left over once every run has one draw a run's per-message arrivals and service
  // times ahead (two helper threads: the two streams cost about the same as the queue itself).
  const bool prefetch = static_cast<std::size_t>(std::max(1, threads)) > specs.size();
  auto run = [&](std::size_t i) {
    results[i] = simulate_run(trace, std::move(policies[i]),
                              specs[i].label.empty() ? specs[i].name : specs[i].label, guards,
                              config, prefetch);
  };
  parallel_for(specs.size(), std::max(1, threads), run);
  return results;
}

}  // namespace lagpilot::sim
