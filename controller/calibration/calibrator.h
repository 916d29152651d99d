#pragma once
// Measuring a consumer's true capacity (`lagpilot calibrate`): hold the worker pool at a list
// of sizes in turn, measure the sustained throughput and latency at each size while the topic
// stays saturated, fit the Universal Scalability Law (policies/usl_fit.h) and recommend a
// producer rate limit.
//
// Pieces:
//   CalibrationTarget          what the Calibrator drives: pool size, completed count, lag,
//                              latency and busy workers. LiveCalibrationTarget
//                              (live_calibration_target.h) adapts a KafkaSource + WorkerPool;
//                              tests may fake it in a few lines.
//   Calibrator                 the procedure (see its class comment).
//   CalibrationResult          the table, the fit, the rate limit; to_json() and format_table().
//
// The calibrator itself does no I/O and starts no threads. Time is injected: it reads a Clock
// and waits through a Sleeper, so a test can drive it with a ManualClock and a fake target
// without sleeping.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/pool/worker_pool.h"
#include "policies/clock.h"
#include "policies/usl_fit.h"

namespace lagpilot {

struct CalibrationOptions {
  // Pool sizes to hold, in order; strictly increasing, each in [1, 4096]. Empty: doubling
  // from 1 to max_workers (see doubling_steps).
  std::vector<int> steps;
  int max_workers = 16;  // only used when `steps` is empty
  // Seconds each size is held, including the warm-up (> warmup_seconds).
  double dwell_seconds = 5.0;
  // Seconds discarded at the start of each step (the pool and the fetch path settle), >= 0.
  double warmup_seconds = 1.0;
  // The target is read (lag, completed) every this many seconds while measuring, > 0. A read
  // that finds lag 0 counts as "dry": the topic ran out, so throughput was under-reported.
  double sample_seconds = 0.25;
  // The measured part of a step is cut into slices of about this length, each one sample of
  // the fit (so the fit sees the noise of the measurement), > 0.
  double fit_slice_seconds = 0.5;
  // Recommended producer rate limit = sustained rate at the largest step x (1 - headroom),
  // in [0, 1).
  double headroom = 0.25;
  // A step whose mean busy workers fall below this fraction of its size although lag > 0 is
  // flagged: something before the workers (fetching, dispatch, ordering lanes) limits it.
  double min_busy_fraction = 0.9;
  // Before the first step: wait at most this long for the consumer to get partitions and
  // see a backlog, > 0.
  double ready_timeout_seconds = 30.0;

  // 1, 2, 4, ... up to max_workers, with max_workers itself last even if not a power of two.
  static std::vector<int> doubling_steps(int max_workers);
  // The steps run() uses (steps, or doubling_steps(max_workers)).
  std::vector<int> effective_steps() const;
  // Throws std::invalid_argument naming the field ("dwell_seconds: must be > warmup_seconds").
  void validate() const;
};

// One row of the table: one pool size, measured over the steady part of its dwell.
struct CalibrationStep {
  int workers = 0;
  double measured_seconds = 0.0;  // length of the steady part
  uint64_t completed = 0;         // messages finished in it
  double throughput = 0.0;        // completed / measured_seconds, messages/s
  double per_worker = 0.0;        // throughput / workers
  double efficiency = 0.0;        // throughput / (workers x base rate); see CalibrationResult
  double latency_p50 = 0.0;       // handler time per message, seconds (within 0.8 %)
  double latency_p99 = 0.0;
  double busy_mean = 0.0;          // mean busy workers over the steady part
  int64_t min_lag = -1;            // least lag read during the steady part (-1: never read)
  int samples = 0;                 // lag reads during the steady part
  int dry_samples = 0;             // reads that found lag 0
  bool saturated = true;           // no dry read
  bool starved = false;            // busy_mean < min_busy_fraction x workers although never dry
  double fitted_throughput = 0.0;  // X(workers) of the fitted curve (0: no fit)
};

struct CalibrationResult {
  std::vector<CalibrationStep> steps;
  UslModel fit;  // fit.valid false: no usable step
  // The rate efficiency is measured against: the 1-worker step's throughput, or (no such step)
  // the fitted lambda.
  double base_rate = 0.0;
  // Sustained rate at the largest step, and the recommended producer rate limit.
  double sustained_rate = 0.0;
  int sustained_workers = 0;
  double headroom = 0.0;
  double recommended_rate_limit = 0.0;
  // Coefficient of variation of the handler time, estimated from the 1-worker step's p50 and
  // p99 assuming a lognormal (p99 / p50 = exp(2.326 s), cv = sqrt(exp(s^2) - 1)); -1 when there
  // is no 1-worker step. p50 and p99 are each within 0.8 % of the measured ones.
  double service_cv_estimate = -1.0;
  bool complete = true;               // false: interrupted (the steps run so far are here)
  std::vector<std::string> warnings;  // unsaturated or starved steps, peak before the end, ...

  // {"steps": [...], "fit": UslModel::to_json(), "base_rate", "sustained_rate",
  //  "sustained_workers", "headroom", "recommended_rate_limit", "service_cv_estimate",
  //  "complete", "warnings"}.
  nlohmann::json to_json() const;
  // The human table, the fit and the rate limit (several lines, ends with a newline).
  std::string format_table() const;
};

// What the Calibrator drives and reads. Called only from the thread that runs the Calibrator.
class CalibrationTarget {
 public:
  virtual ~CalibrationTarget() = default;
  // The consumer can be measured (it has partitions assigned).
  virtual bool ready() = 0;
  // Sets the pool size; returns the size in effect afterwards.
  virtual int set_workers(int workers) = 0;
  struct Reading {
    uint64_t completed = 0;  // messages finished since the start (monotonic)
    int64_t lag = -1;        // messages not yet finished (Kafka lag); -1: unknown
  };
  virtual Reading read() = 0;
  // Latency percentiles and mean busy workers since the previous call (WorkerPool semantics).
  virtual PoolWindow take_window() = 0;
};

struct CalibrationProgress {
  enum class Phase { kWaitingForConsumer, kWarmup, kMeasuring, kStepDone };
  Phase phase = Phase::kWaitingForConsumer;
  int step_index = 0;  // 0-based
  int step_count = 0;
  int workers = 0;
  double step_elapsed = 0.0;      // seconds into this step's dwell
  double step_seconds = 0.0;      // the dwell
  double overall_fraction = 0.0;  // of all dwells, in [0, 1]
  double rate = 0.0;              // messages/s since the previous report of this step (0: none)
  int64_t lag = -1;               // last lag read
  const CalibrationStep* step = nullptr;  // the finished row (kStepDone only; valid during the
                                          // callback only)
};

// The procedure. For each pool size N in the step list:
//   1. resize the pool to N and wait warmup_seconds (discarded: the pool and the fetch path
//      settle after the resize);
//   2. reset the pool's latency window, note the completed count, and for the rest of the
//      dwell read the target every sample_seconds: each read's lag (0 = dry: the topic ran
//      out) and, at each slice boundary (about fit_slice_seconds), the slice's throughput, one
//      sample (N, X) for the fit;
//   3. the row: throughput = completed in the steady part / its length (clock time), p50/p99
//      and mean busy workers from the pool window, dryness and starvation flags.
// Then the USL is fitted to all slices (UslFit::fit, min 1 distinct count: one size fits lambda
// alone, two at most lambda and one of sigma, kappa; a warning says so), each row gets its fitted
// throughput and its efficiency X(N) / (N x base rate), and the rate limit is the largest
// step's throughput x (1 - headroom). Warnings: an unsaturated or starved step; a peak before
// the largest step (more workers lowered throughput); too few steps for the full curve.
//
// The sizes are the pool's size, not its busy count: what the real consumer delivers with N
// workers is what a calibrated simulator must reproduce (see ConsumerModelConfig::from_usl).
//
// Thread-safety: run() on one thread (the target's control thread). The Sleeper waits (it may
// return early) and returns true when the run must stop: run() then returns the steps so far,
// with complete = false.
class Calibrator {
 public:
  using Sleeper = std::function<bool(double seconds)>;
  using ProgressCallback = std::function<void(const CalibrationProgress&)>;

  // Throws std::invalid_argument for bad options.
  Calibrator(CalibrationOptions options, CalibrationTarget& target, const Clock& clock,
             Sleeper sleep, ProgressCallback progress = {});

  // Throws std::runtime_error if the consumer is not ready (or sees no backlog) within
  // ready_timeout_seconds.
  CalibrationResult run();

  // Fills fits, efficiencies, the rate limit and warnings from measured rows and fit samples
  // (what run() does after the last step; public for tests and offline use).
  static CalibrationResult summarize(std::vector<CalibrationStep> steps,
                                     const std::vector<UslSample>& samples,
                                     const CalibrationOptions& options);

 private:
  bool wait(double seconds);  // true: stop
  CalibrationStep measure_step(int index, int workers, std::vector<UslSample>& samples,
                               bool& stopped);

  CalibrationOptions options_;
  std::vector<int> steps_;
  CalibrationTarget& target_;
  const Clock& clock_;
  Sleeper sleep_;
  ProgressCallback progress_;
};

}  // namespace lagpilot
