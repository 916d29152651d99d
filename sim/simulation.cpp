#include "sim/simulation.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "policies/config_reader.h"
#include "policies/control_loop.h"
#include "policies/infinity.h"
#include "sim/arrivals.h"
#include "sim/block_pipeline.h"
#include "sim/lag_quantile.h"
#include "sim/parallel_for.h"
#include "sim/random.h"
#include "sim/tick_loop.h"

namespace lagpilot::sim {
namespace {

// The service-time stream under the user's seed (the arrival streams: sim/arrivals.h).
constexpr uint64_t kServiceStream = 3;

using arrivals::ArrivalGenerator;
using arrivals::Arrivals;
using arrivals::CountTape;

// What a followed run (SimRun::can_follow) hands its followers at each tick: its model's sample,
// the arrivals so far, and whether its own pool changed at that tick.
struct LeaderTick {
  ModelSample sample;
  int64_t arrived = 0;
  bool resized = false;
};

// The Sampler and Actuator the ControlLoop sees: the model, observed like a real consumer.
class SimulatedConsumer final : public Sampler, public Actuator {
 public:
  SimulatedConsumer(ConsumerModel& model, int partitions)
      : model_(model), partitions_(partitions) {}

  Observation sample(double now) override {
    Observation obs;
    sample_into(now, obs);
    return obs;
  }

  // In place (the ControlLoop's every tick): see Sampler::sample_into.
  void sample_into(double now, Observation& obs) override {
    now_ = now;
    if (source_) {  // following: the leader's model was sampled at this tick already
      last_ = source_->sample;
      last_arrived_ = source_->arrived;
    } else {
      last_ = model_.sample(now);
      last_arrived_ = model_.arrived();
    }
    last_lag_ = last_arrived_ - last_.processed - last_.shed;
    observations_.fill(obs, now, last_, last_arrived_, last_lag_, last_.queue_depth, partitions_,
                       explain_);
  }

  void resize(int workers) override {
    if (source_) {
      requested_ = workers;  // SimRun::step decides whether the run can go on following
    } else if (workers != model_.pool_size()) {  // else the model would do nothing
      model_.resize(now_, workers);
    }
  }

  // The next sample is taken from `source` (the followed run's record of this tick), and resizes
  // are only recorded (requested()) while it is set; nullptr: the own model again.
  void follow(const LeaderTick* source) { source_ = source; }
  int requested() const { return requested_; }
  // The own model's sample at now() (after a catch-up: the one the leader's replaced).
  void resample() {
    last_ = model_.sample(now_);
    last_arrived_ = model_.arrived();
  }

  // Observation::explain of the next samples: whether the decision's text will be read.
  void set_explain(bool explain) { explain_ = explain; }

  const ModelSample& last_sample() const { return last_; }
  int64_t last_lag() const { return last_lag_; }
  int64_t last_arrived() const { return last_arrived_; }

 private:
  ConsumerModel& model_;
  const LeaderTick* source_ = nullptr;
  int partitions_;
  double now_ = 0.0;
  ObservationBuilder observations_;
  int64_t last_lag_ = 0;
  int64_t last_arrived_ = 0;
  int requested_ = 0;
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

// One simulate() run, a tick at a time (step), so that simulate_all() can advance its runs a
// block of ticks at a time over one CountTape per block (run_group). With `prefetch` (and per-
// message fidelity) the arrivals and the service times are drawn ahead on two more threads: the
// same result either way.
class SimRun {
 public:
  SimRun(const Trace& trace, std::unique_ptr<Policy> policy, const std::string& label,
         const GuardConfig& guards, const SimConfig& config, bool prefetch)
      : config_((check_trace(trace), check_config(config), config)),
        fidelity_(config.resolve_fidelity(trace)),
        grid_(trace.duration(), config.tick_seconds, config.series_interval_seconds),
        model_(config.model, config.initial_workers,
               Rng::stream(config.seed, kServiceStream).next_u64(), fidelity_ == "batch"),
        arrivals_(trace, config.seed, fidelity_ == "batch", config.batch_size, prefetch,
                  grid_.ticks, grid_.tick),
        consumer_(model_, config.partitions),
        p99_lag_(0.99, grid_.ticks),
        stretched_(config.model) {
    if (!policy) throw std::invalid_argument("simulate: no policy");
    result_.label = label.empty() ? policy->name() : label;
    result_.policy = policy->name();
    result_.policy_params = policy->params();
    result_.fidelity = fidelity_;
    if (prefetch) model_.prefetch_service_times();
    // The latency percentiles cost work at every completion and every tick; only the series,
    // the latency-ceiling guard and a policy that says it reads them need them (the KPIs do
    // not).
    latency_wanted_ =
        config.record_series || guards.latency_ceiling_seconds > 0.0 || policy->reads_latency();
    model_.set_latency_wanted(latency_wanted_);
    prefetch_ = prefetch;
    // Only this run's thread touches its loop: no lock per tick.
    controller_.emplace(consumer_, consumer_, std::move(policy), guards, /*decision_history=*/0,
                        ControlLoop::Threading::kOwnerOnly);
    Kpis& k = result_.kpis;
    k.max_workers = config.initial_workers;
    if (config.record_series) {
      result_.series.reserve(static_cast<std::size_t>(grid_.ticks / grid_.series_every + 1));
    }
    if (config.shedding.enabled) {
      gate_.emplace(config.shedding.after_pressure_seconds, config.shedding.release_after_seconds);
      model_.set_shed_max_age(config.shedding.max_age_seconds);
      k.shedding = true;
    }
  }

  int64_t ticks() const { return grid_.ticks; }

  // The block of ticks [from, to) replays its arrival counts from `tape` (simulate_all's
  // groups; see CountTape); nullptr: the run draws them. A followed run records the block's
  // ticks for its followers in its ring slot `slot`, where they read them.
  void begin_block(const CountTape* tape, int64_t from, int64_t to, std::size_t slot) {
    tape_ = tape;
    block_from_ = from;
    slot_ = slot;
    if (!leader_) arrivals_.replay_counts(tape);
    // Acquire: a follower's last reads of this run's records and copies come before its leave.
    recording_ = followers_.load(std::memory_order_acquire) > 0;
    if (recording_) {
      records_[slot].resize(static_cast<std::size_t>(to - from));
      BlockStart& start = block_starts_[slot];
      start.from = 0;  // not valid until both copies are whole
      start.model = model_;
      start.arrivals = arrivals_.generator();
      start.from = from;
    }
  }

  // Exact memoization (simulate_all's groups). Two runs whose models got the same inputs so far
  // (the same arrivals, which every run of a simulate_all() gets, and only resizes to the size
  // the pool already had, which change nothing) hold models in the same state, bit for bit, so
  // a follower takes the leader's model sample at each tick instead of simulating its own. It
  // leaves at the first tick where either run's resize would change its pool (or the leader
  // fails): it then takes a copy of the leader's model and arrivals as they were at the start
  // of the block (the leader keeps one per block it runs while followed) and brings it through
  // the block's ticks so far (catch_up: at most a block, so the work saved stays saved), and
  // goes on alone. Only runs whose models are configured alike
  // (latency percentiles wanted or not) and that do not shed (the gate feeds the model) follow.
  bool can_follow(const SimRun& leader) const {
    return !prefetch_ && !leader.prefetch_ && !gate_ && !leader.gate_ && !leader.leader_ &&
           latency_wanted_ == leader.latency_wanted_ && fidelity_ == leader.fidelity_ &&
           &config_ == &leader.config_;
  }
  // Follows `leader`, which runs each block before this run does and keeps `slots` blocks of
  // records (LeaderTick) for it. Before the first step.
  void follow(SimRun& leader, std::size_t slots) {
    leader_ = &leader;
    leader.followers_.fetch_add(1, std::memory_order_relaxed);
    if (leader.records_.size() != slots) {
      leader.records_.resize(slots);
      leader.block_starts_.resize(slots);
    }
  }
  bool following() const { return leader_ != nullptr; }
  // The run failed at tick i: its followers catch up there and go on alone.
  void fail_at(int64_t i) { failed_tick_.store(i, std::memory_order_relaxed); }

  // Tick i (1 .. ticks(), in order).
  void step(int64_t i) {
    const SimConfig& config = config_;
    const double tick = grid_.tick;
    const double t1 = grid_.end(i);
    ConsumerModel& model = model_;
    // Then this tick as any run's. (The leader's failure at a later tick may be stored while
    // this reads it: no tick of this block compares above it either way.)
    if (leader_ && i >= leader_->failed_tick_.load(std::memory_order_relaxed)) catch_up(i - 1);
    const LeaderTick* led =
        leader_ ? &leader_->records_[slot_][static_cast<std::size_t>(i - block_from_)] : nullptr;
    consumer_.follow(led);
    if (!leader_) advance_window(i);

    // Only recorded decisions keep their text: once RunResult::decisions is full, nobody reads
    // a reason again, so the policy and the guards skip writing them (same numbers either way).
    consumer_.set_explain(static_cast<int>(result_.decisions.size()) < config.max_decisions);
    const Decision& d = controller_->tick(t1);  // the loop's, valid until its next tick
    if (led &&
        (led->resized || std::max(0, consumer_.requested()) != consumer_.last_sample().pool_size)) {
      catch_up(i);
      model.resize(t1, consumer_.requested());
    }
    const ModelSample& m = consumer_.last_sample();
    const int64_t lag = consumer_.last_lag();
    const int before = m.pool_size;  // pool during [t0, t1)
    Kpis& k = result_.kpis;
    k.lag_integral += static_cast<double>(lag) * tick;
    k.max_lag = std::max(k.max_lag, lag);
    if (lag > config.lag_slo) k.seconds_above_slo += tick;
    p99_lag_.add(lag);
    k.worker_seconds += static_cast<double>(before) * tick;
    if (gate_) {
      if (gate_->active()) k.shed_seconds += tick;  // on during [t0, t1)
      // Pressure as the live runtime sees it at its tick (see simulation.h): lag above the SLO.
      if (gate_->update(t1, lag > config.lag_slo) == ShedGate::Transition::kStarted) {
        ++k.shed_starts;
      }
      model.set_shedding(gate_->active());
    }
    const int after = model.pool_size();
    if (recording_) {  // for the followers' step(i)
      // Field by field: a LeaderTick built aside and copied in stalled on its last bytes.
      LeaderTick& record = records_[slot_][static_cast<std::size_t>(i - block_from_)];
      record.sample = consumer_.last_sample();
      record.arrived = consumer_.last_arrived();
      record.resized = after != before;
    }
    k.max_workers = std::max(k.max_workers, after);
    if (after != before) {
      ++k.scale_actions;
      const int direction = after > before ? 1 : -1;
      if (last_direction_ != 0 && direction != last_direction_) ++k.reversals;
      last_direction_ = direction;
      if (static_cast<int>(result_.decisions.size()) < config.max_decisions) {
        result_.decisions.push_back(d);
      }
    }
    if (config.record_series && grid_.series_point(i)) {
      const double span = t1 - series_time_;
      SeriesPoint p;
      p.t = t1;
      p.arrival_rate = static_cast<double>(consumer_.last_arrived() - series_arrived_) / span;
      p.processed_rate = static_cast<double>(m.processed - series_processed_) / span;
      p.lag = lag;
      p.workers = before;
      p.latency_p99 = m.latency_p99;
      p.shed_rate = static_cast<double>(m.shed - series_shed_) / span;
      result_.series.push_back(p);
      series_shed_ = m.shed;
      series_arrived_ = consumer_.last_arrived();
      series_processed_ = m.processed;
      series_time_ = t1;
    }
  }

  // The result, after the last step.
  RunResult finish() {
    // Conservation, counted two ways: the arrival and completion counters against what sits in
    // the queue and on the workers.
    // A run that followed to the end counts from its leader's model (the same state).
    const SimRun& source = leader_ ? *leader_ : *this;
    const ConsumerModel& model = source.model_;
    Kpis& k = result_.kpis;
    const ModelSample& last = consumer_.last_sample();
    const int64_t partial = last.processed - model.completed();
    k.arrived = model.arrived();
    k.processed = last.processed;
    k.final_lag = model.in_system() - partial;
    k.shed = last.shed;
    if (k.arrived != k.processed + k.shed + k.final_lag || k.shed != model.shed() ||
        k.arrived != source.arrivals_.generated() || k.final_lag != consumer_.last_lag()) {
      throw std::logic_error(
          "simulate: conservation violated: arrived " + std::to_string(k.arrived) + " (generated " +
          std::to_string(arrivals_.generated()) + ") != processed " + std::to_string(k.processed) +
          " + shed " + std::to_string(k.shed) + " + final lag " + std::to_string(k.final_lag) +
          " (sampled lag " + std::to_string(consumer_.last_lag()) + ")");
    }

    k.p99_lag = p99_lag_.value();
    k.ticks = grid_.ticks;
    k.duration_seconds = static_cast<double>(grid_.ticks) * grid_.tick;
    k.mean_workers = k.worker_seconds / k.duration_seconds;
    if (model.completed() > 0) {
      k.mean_wait_seconds = model.total_wait_seconds() / static_cast<double>(model.completed());
      k.mean_service_seconds =
          model.total_service_seconds() / static_cast<double>(model.completed());
    }
    return std::move(result_);
  }

 private:
  // The model through the window of tick i: its events and the window's arrivals.
  void advance_window(int64_t i) {
    const double t0 = grid_.start(i);
    const double t1 = grid_.end(i);
    ConsumerModel& model = model_;
    const int pool = model.pool_size();
    arrivals_.begin_window(t0, t1, stretched_.seconds_per_message(pool), pool);
    if (arrivals_.per_message()) {
      arrivals_.run_window(model, t1);  // the loop below, inside the model
    } else {
      for (;;) {
        const double te = model.next_event_time();
        const double ta = arrivals_.next_time();
        if (te <= ta) {
          if (te >= t1) break;
          model.run_next_event();
        } else {
          if (ta >= t1) break;
          model.arrive(ta, arrivals_.pop());
        }
      }
    }
    if (arrivals_.next_time() != kInf) {
      throw std::logic_error("simulate: arrivals left over past their tick window");
    }
  }

  // Stops following: the model and arrivals through ticks 1 .. k, sampled at each, as the run
  // would have had them alone (every resize so far left the pool as it was, so none is
  // replayed). From the leader's copy at the block's start when k is in the block (the same
  // state: the same inputs so far), else the own untouched model from tick 1: counts before the
  // block are then drawn from the run's own count stream (the recorder's, draw for draw), the
  // block's are replayed. The sample at k must be the leader's, which the run used.
  void catch_up(int64_t k) {
    const ModelSample used = consumer_.last_sample();
    SimRun& leader = *leader_;
    leader_ = nullptr;
    consumer_.follow(nullptr);  // the own model from here on
    int64_t first = 1;
    const BlockStart* start = leader.block_starts_.empty() ? nullptr : &leader.block_starts_[slot_];
    if (start && start->from == block_from_ && k >= block_from_) {
      model_ = *start->model;
      arrivals_.restore(*start->arrivals);  // replays this block's tape from its start
      first = block_from_;
    } else {
      arrivals_.replay_counts(nullptr);
    }
    leader.followers_.fetch_sub(1, std::memory_order_release);  // nothing of the leader read after
    for (int64_t t = first; t <= k; ++t) {
      if (t == block_from_) arrivals_.replay_counts(tape_);
      advance_window(t);
      if (t < k) model_.sample(grid_.end(t));
    }
    if (k < block_from_) arrivals_.replay_counts(tape_);
    if (k == 0) return;
    consumer_.resample();
    const ModelSample& own = consumer_.last_sample();
    if (own.processed != used.processed || own.shed != used.shed ||
        own.queue_depth != used.queue_depth || own.pool_size != used.pool_size ||
        own.busy_mean != used.busy_mean || own.latency_p99 != used.latency_p99) {
      throw std::logic_error("simulate: a followed model differs from the run's own");
    }
  }

  const SimConfig& config_;
  const std::string fidelity_;
  const TickGrid grid_;
  ConsumerModel model_;
  Arrivals arrivals_;
  SimulatedConsumer consumer_;
  std::optional<ControlLoop> controller_;  // built once the policy is checked
  RunResult result_;
  LagQuantile p99_lag_;
  int last_direction_ = 0;
  int64_t series_arrived_ = 0;
  int64_t series_processed_ = 0;
  double series_time_ = 0.0;
  int64_t series_shed_ = 0;
  std::optional<ShedGate> gate_;
  StretchedService stretched_;
  bool latency_wanted_ = false;
  bool prefetch_ = false;
  // Groups (simulate_all): the block's tape, first tick and ring slot, the run followed (see
  // can_follow), the records kept for this run's followers (a vector per ring slot; empty when
  // nobody follows), and the tick where this run failed (read by its followers' threads).
  const CountTape* tape_ = nullptr;
  int64_t block_from_ = 1;
  std::size_t slot_ = 0;
  SimRun* leader_ = nullptr;
  std::vector<std::vector<LeaderTick>> records_;
  // Runs following this one (follow() adds, catch_up() takes away, on the followers' threads);
  // the run keeps records and block-start copies only for blocks begun while it is above 0.
  std::atomic<int> followers_{0};
  bool recording_ = false;
  // By ring slot, while followed: the model and arrivals at the start of the slot's block
  // (`from`, 0 while being copied), which a departing follower starts from.
  struct BlockStart {
    int64_t from = 0;
    std::optional<ConsumerModel> model;
    std::optional<ArrivalGenerator> arrivals;
  };
  std::vector<BlockStart> block_starts_;
  std::atomic<int64_t> failed_tick_{std::numeric_limits<int64_t>::max()};
};

RunResult simulate_run(const Trace& trace, std::unique_ptr<Policy> policy, const std::string& label,
                       const GuardConfig& guards, const SimConfig& config, bool prefetch) {
  SimRun run(trace, std::move(policy), label, guards, config, prefetch);
  for (int64_t i = 1; i <= run.ticks(); ++i) run.step(i);
  return run.finish();
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

namespace {

// The runs of simulate_all() with fewer threads than runs, advanced a block of ticks at a time
// on `threads` threads (BlockPipeline): one generator draws a block's arrival counts into a
// CountTape, which every run replays, and the runs that can follow the first one take its
// model's samples (SimRun::can_follow), recorded for them as it runs the block. A run that
// throws stops; the others go on.
void run_group(const Trace& trace, const SimConfig& config,
               std::vector<std::unique_ptr<SimRun>>& runs, std::vector<std::exception_ptr>& errors,
               std::vector<RunResult>& results, int threads) {
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]) live.push_back(i);
  }
  if (live.empty()) return;
  if (live.size() == 1) {  // nobody to share the counts with: draw them in place
    const std::size_t i = live[0];
    try {
      for (int64_t t = 1; t <= runs[i]->ticks(); ++t) runs[i]->step(t);
      results[i] = runs[i]->finish();
    } catch (...) {
      errors[i] = std::current_exception();
    }
    runs[i].reset();
    return;
  }
  // Blocks alive at once: a follower is at most this many blocks behind its leader, whose
  // records of them (about 100 bytes a tick) are kept for it.
  constexpr std::size_t kWindow = 4;
  // The first run leads; the others that can follow it do (SimRun::can_follow).
  SimRun& leader = *runs[live[0]];
  for (std::size_t j = 1; j < live.size(); ++j) {
    if (runs[live[j]]->can_follow(leader)) runs[live[j]]->follow(leader, kWindow);
  }
  const TickGrid grid(trace.duration(), config.tick_seconds, config.series_interval_seconds);
  ArrivalGenerator counts(trace, config.seed, /*batch=*/true, config.batch_size);
  struct Block {
    CountTape tape;
    int64_t from = 1;
    int64_t to = 1;  // the block is [from, to)
  };
  std::vector<Block> blocks(kWindow);
  int64_t next_from = 1;  // touched by produce alone
  BlockPipeline::Steps steps;
  steps.produce = [&](int64_t, std::size_t slot) {
    if (next_from > grid.ticks) return false;
    Block& block = blocks[slot];
    block.tape.clear();
    block.from = next_from;
    block.to = next_from;
    // At most kBlock counts, and kBlock ticks (a tick past the trace's end draws none).
    while (block.to <= grid.ticks && block.tape.size() < CountTape::kBlock &&
           block.to - block.from < static_cast<int64_t>(CountTape::kBlock)) {
      counts.record_counts(grid.start(block.to), grid.end(block.to), block.tape);
      ++block.to;
    }
    next_from = block.to;
    return true;
  };
  steps.step = [&](std::size_t unit, int64_t, std::size_t slot) {
    const std::size_t i = live[unit];
    SimRun& run = *runs[i];
    const Block& block = blocks[slot];
    int64_t t = block.from;
    try {
      run.begin_block(&block.tape, block.from, block.to, slot);
      for (; t < block.to; ++t) run.step(t);
    } catch (...) {
      errors[i] = std::current_exception();
      run.fail_at(t);  // its followers catch up there
      return false;
    }
    return true;
  };
  steps.waits_for = [&](std::size_t unit) {
    return runs[live[unit]]->following() ? std::size_t{0} : BlockPipeline::kNone;
  };
  BlockPipeline::run(live.size(), kWindow, threads, steps);
  for (const std::size_t i : live) {
    if (errors[i]) continue;
    try {
      results[i] = runs[i]->finish();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (const std::size_t i : live) runs[i].reset();  // a follower's finish() read its leader
}

}  // namespace

std::vector<RunResult> simulate_all(const Trace& trace, const std::vector<PolicySpec>& specs,
                                    const GuardConfig& guards, const SimConfig& config,
                                    int threads) {
  std::vector<std::unique_ptr<Policy>> policies;
  policies.reserve(specs.size());
  for (const PolicySpec& spec : specs) policies.push_back(make_policy(spec.name, spec.params));
  std::vector<RunResult> results(specs.size());
  const auto label = [&](std::size_t i) {
    return specs[i].label.empty() ? specs[i].name : specs[i].label;
  };
  const std::size_t thread_count = static_cast<std::size_t>(std::max(1, threads));
  if (thread_count >= specs.size()) {
    // A thread a run. Threads left over once every run has one draw a run's per-message arrivals
    // and service times ahead (two helper threads: the two streams cost about the same as the
    // queue itself).
    const bool prefetch = thread_count > specs.size();
    auto run = [&](std::size_t i) {
      results[i] = simulate_run(trace, std::move(policies[i]), label(i), guards, config, prefetch);
    };
    parallel_for(specs.size(), static_cast<int>(thread_count), run);
    return results;
  }
  // More runs than threads: the runs advance together a block of ticks at a time (run_group),
  // sharing their arrival counts, on `threads` threads. The failure of the lowest index is
  // rethrown once all have finished, as parallel_for does.
  std::vector<std::unique_ptr<SimRun>> runs(specs.size());
  std::vector<std::exception_ptr> errors(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    try {
      runs[i] = std::make_unique<SimRun>(trace, std::move(policies[i]), label(i), guards, config,
                                         /*prefetch=*/false);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  run_group(trace, config, runs, errors, results, static_cast<int>(thread_count));
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

}  // namespace lagpilot::sim
