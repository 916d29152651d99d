#pragma once
// The simulated consumer: a pool of workers that take messages from one FIFO queue.
//
// Model (ConsumerModel):
//   - Service time. Each message's service time is drawn from `service_distribution` (mean
//     `service_mean_seconds`, coefficient of variation `service_cv`) and multiplied by
//         stretch(n) = usl(n) * max(1, X_usl(n) / downstream_capacity),
//         usl(n)     = 1 + sigma (n - 1) + kappa n (n - 1),   X_usl(n) = n / (mean * usl(n)),
//     where n is the number of busy workers when the message starts (itself included). With n
//     workers always busy the throughput is n / (mean * stretch(n)) = capacity(n): the Universal
//     Scalability Law curve (contention sigma, coherency kappa), capped at the downstream
//     capacity (past which service time grows with concurrency, so throughput stays flat).
//     (Batch fidelity: n = 1 + the other workers weighted by the fraction of time they work, a
//     worker on a batch that trickles in being busy only part of the time; the formula is
//     evaluated at that fractional n.)
//   - Resize. A new worker is not productive until `warmup_seconds` after it was added.
//     Shrinking removes warming workers first (newest first), then idle workers, then marks busy
//     workers to retire after the message (or batch) in hand. Growing first cancels pending
//     retirements (those workers are productive at once), then adds new workers.
//   - Work units ("chunks"). The model serves chunks of `count` messages whose arrivals are
//     spread evenly over [first_arrival, last_arrival]. In per-message fidelity every chunk is
//     one message with first_arrival == last_arrival: the textbook multi-server queue. In batch
//     fidelity a chunk is a batch: the worker that takes it at time s works on it for
//         W = stretch(n) * (sum of `count` service times)   (drawn at once, see below)
//     and finishes at e = s + max(W, (last_arrival - s) + W / count): it cannot finish before
//     its last message arrived. Progress through a batch is counted linearly between s and e
//     (to the nearest message) when the model is sampled, so a batch in service adds only its
//     unfinished part to the lag at a tick, and a batch that trickles in at light load does not
//     show up as a lag of the whole batch. The sum of
//     `count` service times is a Gamma variate with the exact mean and variance (exact for
//     exponential service; an approximation for lognormal), count * mean for deterministic.
//   - Shedding by age (docs/pipeline.md, "Shedding in the simulator"). While set_shedding(true)
//     holds (simulate() drives it with the live runtime's ShedGate, policies/shed_gate.h), a
//     worker about to take a chunk from the queue at time `now` first sheds its messages whose
//     age, now - arrival, is above max_age_seconds, as a live worker asks about each record
//     before the sink runs: they leave the backlog, are counted (shed()), and take no worker
//     time. A chunk whose messages are all old is shed whole and the worker takes the next one;
//     in batch fidelity the old front part of a batch is shed (its j-th message arrives at
//     a0 + (a1 - a0)(j + 0.5) / count) and the rest keeps its even spread. Records have no key
//     or headers here, so there is no priority rule. arrived = processed + shed + in system.
//
// Measurements, reset at every sample (the "window"): completed messages and their service
// times (latency), record ages (completion - arrival) and queueing delays; the busy-worker
// time integral. In batch fidelity individual service times are not drawn, so the latency
// percentiles are the service distribution's percentile times the percentile of the stretch
// factor the window's messages saw (exact when the stretch did not change in the window);
// record ages spread linearly over each batch (from its mean service time), and their p99 is
// shifted up by the service-time tail (latency p99 - mean service time).
//
// Thread-safety: a ConsumerModel is a plain single-threaded object (one per simulation run).
// ConsumerModelConfig is a plain value.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/log_histogram.h"
#include "sim/event_heap.h"
#include "sim/random.h"
#include "sim/window_histogram.h"

namespace lagpilot::sim {

class PrefetchedStream;

struct ConsumerModelConfig {
  // Mean service time of one message on an idle consumer, seconds (> 0).
  double service_mean_seconds = 0.01;
  // Coefficient of variation (stddev / mean) of the service time. Lognormal: any value >= 0.
  // Exponential has CV 1 and deterministic CV 0: setting another value for them is an error;
  // leaving it out sets it to 1 or 0.
  double service_cv = 1.0;
  // "lognormal" (default), "exponential" or "deterministic".
  std::string service_distribution = "lognormal";
  // Universal Scalability Law contention (sigma) and coherency (kappa) coefficients, >= 0.
  double usl_sigma = 0.02;
  double usl_kappa = 0.0005;
  // What sits downstream can take at most this many messages/s; 0 = unlimited.
  double downstream_capacity = 0.0;
  // Seconds after it is added before a new worker takes messages (>= 0).
  double warmup_seconds = 5.0;
  // A sink that takes at most this many concurrent deliveries (an HTTP service with a
  // concurrency limit); 0 = no limit. Beyond it the extra workers' attempts are pushed back
  // (429) and retried, so a busy worker's message takes max(1, busy / sink_concurrency) times
  // as long (the latency knee), throughput stays at that of sink_concurrency workers, and the
  // sample reports the pushed-back fraction (Observation::sink_pushback).
  double sink_concurrency = 0.0;

  // Reads a "model" object. Unknown keys and out-of-range values throw ConfigError naming
  // `path`.key.
  static ConsumerModelConfig from_json(const nlohmann::json& j, const std::string& path = "model");
  nlohmann::json to_json() const;
  // A calibrated model (`lagpilot calibrate`): the one whose capacity(N) is the measured USL
  // curve lambda N / (1 + sigma (N - 1) + kappa N (N - 1)). Since capacity(N) = N / (mean x
  // usl_factor(N)), that is service_mean_seconds = 1 / lambda, usl_sigma = sigma, usl_kappa =
  // kappa and no downstream cap (the measurement already includes whatever downstream did);
  // the service distribution, CV and warm-up come from `base`. Throws std::invalid_argument
  // unless lambda > 0 and sigma, kappa are in [0, 1] (the ranges from_json accepts).
  static ConsumerModelConfig from_usl(double lambda, double sigma, double kappa,
                                      const ConsumerModelConfig& base);

  // 1 + sigma (n - 1) + kappa n (n - 1), for n >= 1 busy workers.
  double usl_factor(int busy) const;
  // Service-time multiplier with `busy` workers busy: usl_factor * downstream slowdown *
  // sink pushback.
  double stretch(int busy) const;
  // Steady-state throughput (messages/s) of `workers` always-busy workers:
  // min(N / (mean * usl_factor(N)), downstream_capacity if set). 0 for workers <= 0.
  double capacity(int workers) const;
  // The q-quantile (0 < q < 1) of one message's unstretched service time.
  double service_quantile(double q) const;
};

// Messages handed to the model at once, arriving evenly over [first_arrival, last_arrival].
struct ArrivalChunk {
  double first_arrival = 0.0;
  double last_arrival = 0.0;
  int64_t count = 1;
};

// What ConsumerModel::sample() reports at a tick.
struct ModelSample {
  int64_t processed = 0;       // completed messages so far, counting progress inside batches
  int64_t in_system = 0;       // arrived - processed: queued + in service (from the model's side)
  int64_t queue_depth = 0;     // arrived, not started
  int pool_size = 0;           // workers in the pool, warming ones included
  int productive_workers = 0;  // workers past their warm-up (busy or idle), not retiring
  int busy_now = 0;            // workers holding a message/batch now
  double busy_mean = 0.0;      // mean busy workers over the window (work done / window length)
  double latency_p50 = 0.0;    // service time of the window's completed messages, s (0: none)
  double latency_p99 = 0.0;
  double record_age_p99 = 0.0;   // completion - arrival, s
  int64_t window_completed = 0;  // messages completed in the window (whole batches only)
  int64_t shed = 0;              // messages shed so far (set_shedding)
  // Fraction of the window's delivery attempts the sink pushed back: (busy - limit) / busy over
  // the window's mean busy workers; -1 without a sink limit.
  double sink_pushback = -1.0;
};

// A stack of worker slots with room for every slot there is (reserve() as slots are added), so
// that a push never reallocates: std::vector's push_back, with its reallocation path, was not
// inlined in the model's event loop (about 2 % of a run's instructions). Vector-like names.
class SlotStack {
 public:
  void reserve(std::size_t slots) {
    if (slots > slots_.size()) slots_.resize(slots);
  }
  void push_back(int w) { slots_[size_++] = w; }  // at most reserve()'s slots
  void pop_back() { --size_; }
  int back() const { return slots_[size_ - 1]; }
  int& operator[](std::size_t i) { return slots_[i]; }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  const int* begin() const { return slots_.data(); }
  const int* end() const { return slots_.data() + size_; }

 private:
  std::vector<int> slots_;
  std::size_t size_ = 0;
};

// Algorithm: see the header comment. An event-driven multi-server FIFO queue whose own events
// (completions, warm-ups) sit in an EventHeap ordered by (time, sequence); arrivals are pushed
// in from outside by the caller in time order, interleaved with run_next_event() by comparing
// times (so the heap only ever holds at most one event per worker), or, for per-message arrivals
// drawn ahead, handed over a tick window at a time (run_window: the same interleaving).
class ConsumerModel {
 public:
  // `batch_fidelity` selects how a chunk's service time is drawn (one draw per message when
  // false: chunks must then hold one message each). Initial workers are productive at once.
  ConsumerModel(const ConsumerModelConfig& config, int initial_workers, uint64_t service_seed,
                bool batch_fidelity);
  ~ConsumerModel();
  // A copy is the same model, bit for bit (simulate_all(): a run that stops following another
  // takes the other's model). A model whose service times are prefetched must not be copied:
  // the copy would share the stream.
  ConsumerModel(const ConsumerModel&) = default;
  ConsumerModel& operator=(const ConsumerModel&) = default;

  // Per-message fidelity: draw the service times ahead on a second thread (PrefetchedStream).
  // They do not depend on the queue (the n-th message to start gets the stream's n-th draw), so
  // the run is the same, bit for bit. Call before the first arrival; does nothing in batch
  // fidelity or for deterministic service times (nothing to draw).
  void prefetch_service_times();

  // Time of the model's next own event (completion or end of warm-up); +infinity if none.
  double next_event_time() const {
    return events_.empty() ? std::numeric_limits<double>::infinity() : events_.top_time();
  }
  // Runs the event at next_event_time(). Precondition: there is one.
  void run_next_event();
  // Messages arrive at `now` (== chunk.first_arrival); now >= every event already run.
  void arrive(double now, const ArrivalChunk& chunk);
  // Per-message fidelity's window in one call: runs the model's events and the arrivals of
  // `arrivals` (message times in order, each tick window's ended by +infinity; `next_arrival`
  // holds the stream's next time between calls) up to t1, exactly as a caller's loop would that
  // runs the event when next_event_time() <= the next arrival and takes the arrival otherwise,
  // both only while before t1. Returns the number of messages that arrived. One loop with the
  // event, the completion and the start inlined: the calls, their register saves and reloads
  // were a fifth of an M/M/c run's instructions. `Source` is a PrefetchedStream or the
  // simulator's per-message ArrivalGenerator (sim/arrivals.h): `double next()` consumes the
  // arrival at hand and returns the next time (instantiated for those two in the .cpp).
  template <class Source>
  int64_t run_window(double t1, Source& arrivals, double& next_arrival);
  // Sets the pool size (>= 0) at `now`.
  void resize(double now, int workers);
  // Shedding by age (see the header comment): the age limit (> 0; set once, before the first
  // arrival) and whether shedding is on from now on.
  void set_shed_max_age(double max_age_seconds) { shed_max_age_ = max_age_seconds; }
  void set_shedding(bool active) { shedding_ = active && shed_max_age_ > 0.0; }
  bool shedding() const { return shedding_; }
  // Whether sample() reports the latency and record-age percentiles (true by default). When
  // nobody reads them (simulate(): neither the policy, see Policy::reads_latency, nor the
  // latency-ceiling guard, nor a series), completions skip recording them and sample() reports
  // 0 for them; everything else is the same. Set once, before the first arrival.
  void set_latency_wanted(bool wanted) { latency_wanted_ = wanted; }
  int64_t shed() const { return shed_; }  // messages shed so far
  // Snapshot at `now` (no event of the model is pending before `now`), then starts a new window.
  ModelSample sample(double now);

  int pool_size() const { return pool_size_; }
  // Productive workers without a message (a message arriving now starts at once on one).
  int idle_workers() const { return static_cast<int>(idle_.size()); }
  int64_t arrived() const { return arrived_; }
  int64_t completed() const { return completed_; }  // whole chunks completed, in messages
  // Messages queued or in service, counted from the queue and the workers (not from the
  // arrived/completed counters): the conservation check compares the two.
  int64_t in_system() const;
  // Sum over completed messages of (start of service - arrival), seconds.
  double total_wait_seconds() const { return total_wait_; }
  // Sum over completed messages of their service time (batches: the batch's work), seconds.
  double total_service_seconds() const { return total_service_; }
  const ConsumerModelConfig& config() const { return config_; }

 private:
  enum class WorkerState : uint8_t { kFree, kWarming, kIdle, kBusy };
  struct Worker {
    WorkerState state = WorkerState::kFree;
    bool retiring = false;
    // The sequence number of the worker's pending event (kNoEvent: none). An event whose number
    // is not this one is stale (its worker was removed meanwhile) and is ignored.
    uint64_t event_seq = kNoEvent;
    int busy_at_start = 0;
    double ready_at = 0.0;   // warming: when productive
    double start = 0.0;      // busy: service start
    double end = 0.0;        // busy: completion
    double work = 0.0;       // busy: busy-seconds of work in the chunk
    double busy_rate = 0.0;  // work / (end - start): fraction of the worker actually busy
    ArrivalChunk chunk;
  };
  static constexpr uint64_t kNoEvent = ~uint64_t{0};  // above every EventHeap sequence number

  // A FIFO ring buffer of chunks (grows by doubling; never allocates in steady state).
  class ChunkQueue {
   public:
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    [[gnu::always_inline]] void push(const ArrivalChunk& c) {
      if (size_ == buffer_.size()) [[unlikely]]
        grow();
      buffer_[(head_ + size_) & (buffer_.size() - 1)] = c;
      ++size_;
    }
    [[gnu::always_inline]] ArrivalChunk pop() {
      const ArrivalChunk c = buffer_[head_];
      head_ = (head_ + 1) & (buffer_.size() - 1);
      --size_;
      return c;
    }
    template <typename F>
    void for_each(F&& f) const {
      for (std::size_t i = 0; i < size_; ++i) f(buffer_[(head_ + i) & (buffer_.size() - 1)]);
    }

   private:
    void grow();  // doubles the buffer, the chunks kept in order
    std::vector<ArrivalChunk> buffer_ = std::vector<ArrivalChunk>(1024);
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };

  // Pops the queue's next chunk for a worker that starts at `now`, shedding old messages first
  // while shedding is on; false when nothing is left to take.
  // start, complete, take_next, accept and handle_top_event are inlined where they are called
  // (all in consumer_model.cpp): run_window()'s loop holds them all.
  [[gnu::always_inline]] inline bool take_next(double now, ArrivalChunk& chunk);
  int new_worker_slot();
  void free_worker(int w);
  // The list of busy workers, which sample() walks instead of every slot.
  [[gnu::always_inline]] inline void add_busy(int w);
  [[gnu::always_inline]] inline void remove_busy(int w);
  // `batch` is batch_fidelity_, passed in so that run_window()'s constant false drops the batch
  // code (and the batch-only fields start() would write) from its loop.
  [[gnu::always_inline]] inline void start(int w, double now, const ArrivalChunk& chunk,
                                           bool batch);
  [[gnu::always_inline]] inline void complete(int w, double now, bool batch);
  [[gnu::always_inline]] inline void accept(double now, const ArrivalChunk& chunk,
                                            bool batch);            // arrive()
  [[gnu::always_inline]] inline void handle_top_event(bool batch);  // run_next_event()
  void become_productive(int w, double now);
  // The busy-worker time integral up to `now` (`batch`: batch_fidelity_). One message a worker
  // keeps every worker busy all the time it holds one, so there the busy rate is busy_ itself
  // (busy_rate_sum_, a sum of 1.0s, would be the same number) and is not kept.
  void integrate_busy(double now, bool batch) {
    busy_area_ += busy_rate(batch) * (now - busy_since_);
    busy_since_ = now;
  }
  double busy_rate(bool batch) const { return batch ? busy_rate_sum_ : static_cast<double>(busy_); }
  double draw_work(int64_t count);
  // Table lookup for whole numbers of busy workers (the table grows on first use of a count).
  double stretch_of(int busy) {
    if (busy < static_cast<int>(stretch_table_.size())) return stretch_table_[busy];
    return grow_stretch_table(busy);
  }
  double grow_stretch_table(int busy);
  double stretch_at(double busy) const;  // the same formula for a fractional concurrency
  int64_t progress(const Worker& w, double now) const;

  ConsumerModelConfig config_;
  bool batch_fidelity_;
  Rng rng_;
  // prefetch_service_times(): draw_work(1). Shared only so that the model is copyable (see the
  // copy constructor).
  std::shared_ptr<PrefetchedStream> service_times_;
  // Per-distribution constants.
  int distribution_ = 0;  // 0 lognormal, 1 exponential, 2 deterministic
  double log_mu_ = 0.0, log_sigma_ = 0.0;
  double gamma_scale_ = 0.0, gamma_shape_per_message_ = 0.0;
  // Rng::gamma's constants for a batch of `count` messages, by count (below kGammaShapes; empty
  // unless the service times are random): a square root and a division less a batch.
  static constexpr int64_t kGammaShapes = 256;
  std::vector<Rng::GammaShape> gamma_shapes_;
  double base_p50_ = 0.0, base_p99_ = 0.0;
  std::vector<double> stretch_table_;

  EventHeap events_;  // the slots of the workers whose events they are
  std::vector<Worker> workers_;
  SlotStack free_slots_;
  SlotStack idle_;               // productive idle workers (a stack: the last one idled goes first)
  SlotStack busy_slots_;         // workers holding a chunk, in no particular order
  std::vector<int> busy_index_;  // by slot: its position in busy_slots_ (-1: not busy)
  ChunkQueue queue_;
  int64_t queued_messages_ = 0;
  int pool_size_ = 0;  // warming + idle + busy non-retiring
  int busy_ = 0;       // workers holding a chunk (retiring ones included)

  int64_t arrived_ = 0;
  int64_t completed_ = 0;
  int64_t shed_ = 0;
  double shed_max_age_ = 0.0;  // 0: no age rule
  bool shedding_ = false;
  double total_wait_ = 0.0;
  double total_service_ = 0.0;

  // Window measurements.
  double busy_rate_sum_ = 0.0;  // batch fidelity: the busy workers' rates (busy_rate)
  double busy_area_ = 0.0;
  double busy_since_ = 0.0;
  double window_start_ = 0.0;
  double window_busy_area_start_ = 0.0;
  int64_t window_completed_ = 0;
  bool latency_wanted_ = true;  // set_latency_wanted()
  WindowHistogram latency_;     // per-message fidelity
  WindowHistogram record_age_;
  std::vector<double> stretch_weight_;  // batch fidelity: messages completed per busy count
  int stretch_lo_ = std::numeric_limits<int>::max();
  int stretch_hi_ = -1;
};

}  // namespace lagpilot::sim
