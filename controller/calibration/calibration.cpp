#include "controller/calibration/calibration.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/rdkafka_producer.h"

namespace lagpilot {
namespace {

// Standard normal quantile at 0.99, for the lognormal cv estimate.
constexpr double kZ99 = 2.3263478740408408;

std::string printf_text(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// 12345.6 -> "12,346"; small rates keep one decimal ("196.4").
std::string rate_text(double v) {
  if (!std::isfinite(v)) return "inf";
  if (std::fabs(v) < 1000) return printf_text("%.1f", v);
  std::string digits = printf_text("%.0f", v);
  std::string out;
  const std::size_t start = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void bad_option(const std::string& what) {
  throw std::invalid_argument(what);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CalibrationOptions

std::vector<int> CalibrationOptions::doubling_steps(int max_workers) {
  std::vector<int> steps;
  for (int n = 1; n < max_workers; n *= 2) steps.push_back(n);
  if (max_workers >= 1) steps.push_back(max_workers);
  return steps;
}

std::vector<int> CalibrationOptions::effective_steps() const {
  return steps.empty() ? doubling_steps(max_workers) : steps;
}

void CalibrationOptions::validate() const {
  if (steps.empty() && (max_workers < 1 || max_workers > 4096)) {
    bad_option("max_workers: must be in [1, 4096], got " + std::to_string(max_workers));
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] < 1 || steps[i] > 4096) {
      bad_option("steps[" + std::to_string(i) + "]: must be in [1, 4096], got " +
                 std::to_string(steps[i]));
    }
    if (i > 0 && steps[i] <= steps[i - 1]) {
      bad_option("steps[" + std::to_string(i) + "]: must be larger than the step before (" +
                 std::to_string(steps[i - 1]) + "), got " + std::to_string(steps[i]));
    }
  }
  if (!(warmup_seconds >= 0) || !std::isfinite(warmup_seconds)) {
    bad_option("warmup_seconds: must be >= 0, got " + printf_text("%g", warmup_seconds));
  }
  if (!(dwell_seconds > warmup_seconds) || !std::isfinite(dwell_seconds)) {
    bad_option("dwell_seconds: must be > warmup_seconds (" + printf_text("%g", warmup_seconds) +
               "), got " + printf_text("%g", dwell_seconds));
  }
  if (!(sample_seconds > 0) || !std::isfinite(sample_seconds)) {
    bad_option("sample_seconds: must be > 0, got " + printf_text("%g", sample_seconds));
  }
  if (!(fit_slice_seconds > 0) || !std::isfinite(fit_slice_seconds)) {
    bad_option("fit_slice_seconds: must be > 0, got " + printf_text("%g", fit_slice_seconds));
  }
  if (!(headroom >= 0 && headroom < 1)) {
    bad_option("headroom: must be in [0, 1), got " + printf_text("%g", headroom));
  }
  if (!(min_busy_fraction >= 0 && min_busy_fraction <= 1)) {
    bad_option("min_busy_fraction: must be in [0, 1], got " + printf_text("%g", min_busy_fraction));
  }
  if (!(ready_timeout_seconds > 0)) {
    bad_option("ready_timeout_seconds: must be > 0, got " +
               printf_text("%g", ready_timeout_seconds));
  }
}

// ---------------------------------------------------------------------------------------------
// CalibrationResult

nlohmann::json CalibrationResult::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const CalibrationStep& s : steps) {
    rows.push_back({{"workers", s.workers},
                    {"measured_seconds", s.measured_seconds},
                    {"completed", s.completed},
                    {"throughput", s.throughput},
                    {"per_worker", s.per_worker},
                    {"efficiency", s.efficiency},
                    {"latency_p50_seconds", s.latency_p50},
                    {"latency_p99_seconds", s.latency_p99},
                    {"busy_mean", s.busy_mean},
                    {"min_lag", s.min_lag},
                    {"samples", s.samples},
                    {"dry_samples", s.dry_samples},
                    {"saturated", s.saturated},
                    {"starved", s.starved},
                    {"fitted_throughput", s.fitted_throughput}});
  }
  nlohmann::json cv = nullptr;
  if (service_cv_estimate >= 0) cv = service_cv_estimate;
  return {{"steps", rows},
          {"fit", fit.to_json()},
          {"base_rate", base_rate},
          {"sustained_rate", sustained_rate},
          {"sustained_workers", sustained_workers},
          {"headroom", headroom},
          {"recommended_rate_limit", recommended_rate_limit},
          {"service_cv_estimate", cv},
          {"complete", complete},
          {"warnings", warnings}};
}

std::string CalibrationResult::format_table() const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%7s %13s %12s %10s %8s %8s %6s %9s %11s\n", "workers",
                "throughput/s", "per worker/s", "efficiency", "p50 ms", "p99 ms", "busy", "min lag",
                "USL fit/s");
  out += line;
  for (const CalibrationStep& s : steps) {
    std::snprintf(line, sizeof line, "%7d %13s %12s %8.0f %% %8.2f %8.2f %6.2f %9lld %11s%s\n",
                  s.workers, rate_text(s.throughput).c_str(), rate_text(s.per_worker).c_str(),
                  100.0 * s.efficiency, s.latency_p50 * 1e3, s.latency_p99 * 1e3, s.busy_mean,
                  static_cast<long long>(s.min_lag),
                  fit.valid ? rate_text(s.fitted_throughput).c_str() : "-",
                  !s.saturated ? "  (ran dry)" : (s.starved ? "  (starved)" : ""));
    out += line;
  }
  out += "\n";
  if (fit.valid) {
    out += "USL fit: lambda " + rate_text(fit.lambda) + "/s per worker, sigma " +
           printf_text("%.4g", fit.sigma) + ", kappa " + printf_text("%.4g", fit.kappa) + ", R^2 " +
           printf_text("%.4f", fit.r_squared) + " (" + std::to_string(fit.parameters) +
           (fit.parameters == 1 ? " parameter, " : " parameters, ") +
           std::to_string(fit.distinct_workers) + " worker counts)\n";
    const double peak = fit.peak_workers();
    if (std::isfinite(peak)) {
      out += "peak: N* = " + printf_text("%.1f", peak) + " workers, " +
             rate_text(fit.peak_throughput()) + "/s; more workers lower throughput\n";
    } else {
      out += "peak: none (kappa = 0: throughput keeps rising";
      if (fit.sigma > 0)
        out += " towards lambda / sigma = " + rate_text(fit.peak_throughput()) + "/s";
      out += ")\n";
    }
  } else {
    out += "USL fit: none (no usable step)\n";
  }
  if (sustained_workers > 0) {
    out += "recommended producer rate limit: " + rate_text(recommended_rate_limit) + " msg/s (" +
           rate_text(sustained_rate) + "/s sustained at " + std::to_string(sustained_workers) +
           " workers, less " + printf_text("%.0f", headroom * 100) + " % headroom)\n";
  }
  if (!complete) out += "interrupted: only the steps above were measured\n";
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// LiveCalibrationTarget

CalibrationTarget::Reading LiveCalibrationTarget::read() {
  const SourceStats stats = source_.stats(true);
  assigned_partitions_ = stats.assigned_partitions;
  Reading r;
  r.completed = pool_.completed();
  r.lag = stats.assigned_partitions > 0 ? stats.total_lag : -1;
  return r;
}

// ---------------------------------------------------------------------------------------------
// SaturatingProducer

struct SaturatingProducer::Impl {
  SaturatingProducerOptions options;
  std::function<uint64_t()> consumed;
  const Clock& clock;
  std::atomic<bool> stop_requested{false};  // atomic: set by stop(), read by the thread
  bool stopped = false;
  // atomic: written on the producer thread (and its delivery callbacks), read by stats().
  std::atomic<uint64_t> produced{0};
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> failed{0};
  // Last, so that it is destroyed first: its delivery callback writes the counters above.
  std::unique_ptr<RdKafkaProducer> kafka;

  Impl(SaturatingProducerOptions o, std::function<uint64_t()> c, const Clock& cl)
      : options(std::move(o)), consumed(std::move(c)), clock(cl) {}

  static void delivery_cb(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->delivered.fetch_add(1, std::memory_order_relaxed);
    } else if (self->failed.fetch_add(1, std::memory_order_relaxed) < 5) {
      spdlog::error("calibration producer: delivery to {} failed: {}", self->options.topic,
                    rd_kafka_err2str(msg->err));
    }
  }

  void create() {
    kafka = std::make_unique<RdKafkaProducer>(RdKafkaProducerSettings{
        .client_name = "calibration producer",
        .bootstrap = options.bootstrap,
        .topic = options.topic,
        .properties = options.properties,
        .on_delivery = &Impl::delivery_cb,
        .opaque = this,
    });
  }

  void loop() {
    constexpr int64_t kMaxPerLoop = 10000;
    constexpr double kRateWindowSeconds = 0.5;
    std::string value;
    uint64_t seq = 0;
    double rate = 0.0;  // smoothed consumption rate, messages/s
    double last_time = clock.now();
    uint64_t last_consumed = consumed();
    while (!stop_requested.load(std::memory_order_relaxed)) {
      const double now = clock.now();
      const uint64_t done = consumed();
      if (now - last_time >= 0.05) {
        const double instant = static_cast<double>(done - last_consumed) / (now - last_time);
        const double alpha = 1.0 - std::exp(-(now - last_time) / kRateWindowSeconds);
        rate += alpha * (instant - rate);
        last_time = now;
        last_consumed = done;
      }
      const auto target = std::clamp<int64_t>(static_cast<int64_t>(options.lead_seconds * rate),
                                              options.min_backlog, options.max_backlog);
      const int64_t backlog = static_cast<int64_t>(produced.load(std::memory_order_relaxed)) -
                              static_cast<int64_t>(done);
      int64_t shortfall = std::min(target - backlog, kMaxPerLoop);
      while (shortfall > 0 && !stop_requested.load(std::memory_order_relaxed)) {
        encode_message_into(value, seq, epoch_micros_now(), options.padding_bytes);
        const rd_kafka_resp_err_t err = kafka->produce(value, seq, options.keys);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          produced.fetch_add(1, std::memory_order_relaxed);
          ++seq;
          --shortfall;
          continue;
        }
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          kafka->poll(1);  // let deliveries drain the local queue, then retry
          continue;
        }
        if (failed.fetch_add(1, std::memory_order_relaxed) < 5) {
          spdlog::error("calibration producer: produce to {} failed: {}", options.topic,
                        rd_kafka_err2str(err));
        }
        break;  // not transient: try again next loop
      }
      kafka->poll(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

SaturatingProducer::SaturatingProducer(SaturatingProducerOptions options,
                                       std::function<uint64_t()> consumed, const Clock& clock) {
  if (options.bootstrap.empty()) bad_option("producer: bootstrap: must not be empty");
  if (options.topic.empty()) bad_option("producer: topic: must not be empty");
  if (!consumed) bad_option("producer: consumed: a callback is required");
  if (options.min_backlog < 1) bad_option("producer: min_backlog: must be >= 1");
  if (options.max_backlog < options.min_backlog) {
    bad_option("producer: max_backlog: must be >= min_backlog");
  }
  if (!(options.lead_seconds >= 0)) bad_option("producer: lead_seconds: must be >= 0");
  impl_ = std::make_unique<Impl>(std::move(options), std::move(consumed), clock);
  impl_->create();
}

SaturatingProducer::~SaturatingProducer() {
  stop();
}

void SaturatingProducer::start() {
  if (thread_.joinable() || impl_->stopped) throw std::logic_error("producer: start() twice");
  thread_ = std::thread([this] { impl_->loop(); });
}

void SaturatingProducer::stop(double flush_timeout_seconds) {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->stop_requested.store(true);
  if (thread_.joinable()) thread_.join();
  rd_kafka_t* producer = impl_->kafka->handle();
  rd_kafka_flush(producer, static_cast<int>(std::max(0.0, flush_timeout_seconds) * 1000));
  const int left = rd_kafka_outq_len(producer);
  if (left > 0) {
    spdlog::warn("calibration producer: {} messages without delivery report after {} s", left,
                 flush_timeout_seconds);
  }
}

SaturatingProducerStats SaturatingProducer::stats() const {
  return {impl_->produced.load(std::memory_order_relaxed),
          impl_->delivered.load(std::memory_order_relaxed),
          impl_->failed.load(std::memory_order_relaxed)};
}

// ---------------------------------------------------------------------------------------------
// Calibrator

Calibrator::Calibrator(CalibrationOptions options, CalibrationTarget& target, const Clock& clock,
                       Sleeper sleep, ProgressCallback progress)
    : options_(std::move(options)),
      target_(target),
      clock_(clock),
      sleep_(std::move(sleep)),
      progress_(std::move(progress)) {
  options_.validate();
  if (!sleep_) bad_option("sleep: a Sleeper is required");
  steps_ = options_.effective_steps();
}

bool Calibrator::wait(double seconds) {
  return sleep_(std::max(seconds, 1e-4));
}

CalibrationResult Calibrator::run() {
  // Wait for the consumer: partitions assigned and a backlog to measure.
  const double wait_start = clock_.now();
  for (;;) {
    const bool ready = target_.ready();
    const CalibrationTarget::Reading r = target_.read();
    if (ready && r.lag != 0) break;
    if (progress_) {
      CalibrationProgress p;
      p.phase = CalibrationProgress::Phase::kWaitingForConsumer;
      p.step_count = static_cast<int>(steps_.size());
      p.workers = steps_.front();
      p.lag = r.lag;
      progress_(p);
    }
    if (clock_.now() - wait_start > options_.ready_timeout_seconds) {
      throw std::runtime_error(ready
                                   ? "calibration: the topic stayed empty for " +
                                         printf_text("%g", options_.ready_timeout_seconds) +
                                         " s (no backlog to measure: is the producer running?)"
                                   : "calibration: the consumer got no partitions within " +
                                         printf_text("%g", options_.ready_timeout_seconds) + " s");
    }
    if (wait(options_.sample_seconds)) {
      CalibrationResult partial = summarize({}, {}, options_);
      partial.complete = false;
      return partial;
    }
  }

  std::vector<CalibrationStep> rows;
  std::vector<UslSample> samples;
  bool stopped = false;
  for (std::size_t i = 0; i < steps_.size() && !stopped; ++i) {
    CalibrationStep row = measure_step(static_cast<int>(i), steps_[i], samples, stopped);
    if (stopped) break;  // a step cut short is not a measurement
    rows.push_back(row);
    if (progress_) {
      CalibrationProgress p;
      p.phase = CalibrationProgress::Phase::kStepDone;
      p.step_index = static_cast<int>(i);
      p.step_count = static_cast<int>(steps_.size());
      p.workers = row.workers;
      p.step_elapsed = options_.dwell_seconds;
      p.step_seconds = options_.dwell_seconds;
      p.overall_fraction = static_cast<double>(i + 1) / static_cast<double>(steps_.size());
      p.rate = row.throughput;
      p.lag = row.min_lag;
      p.step = &rows.back();
      progress_(p);
    }
  }
  CalibrationResult result = summarize(std::move(rows), samples, options_);
  result.complete = !stopped;
  return result;
}

CalibrationStep Calibrator::measure_step(int index, int workers, std::vector<UslSample>& samples,
                                         bool& stopped) {
  const int got = target_.set_workers(workers);
  if (got != workers) {
    spdlog::warn("calibration: pool resize to {} left it at {}", workers, got);
  }
  const double dwell = options_.dwell_seconds;
  const double measured = dwell - options_.warmup_seconds;
  const double t0 = clock_.now();
  const int count = static_cast<int>(steps_.size());

  uint64_t last_completed = target_.read().completed;
  double last_time = t0;
  auto report = [&](CalibrationProgress::Phase phase, const CalibrationTarget::Reading& r,
                    double now) {
    if (!progress_) return;
    CalibrationProgress p;
    p.phase = phase;
    p.step_index = index;
    p.step_count = count;
    p.workers = workers;
    p.step_elapsed = std::min(now - t0, dwell);
    p.step_seconds = dwell;
    p.overall_fraction = (index + p.step_elapsed / dwell) / count;
    p.rate = now > last_time ? static_cast<double>(r.completed - last_completed) / (now - last_time)
                             : 0.0;
    p.lag = r.lag;
    last_completed = r.completed;
    last_time = now;
    progress_(p);
  };

  // 1. Warm-up, discarded.
  const double warm_end = t0 + options_.warmup_seconds;
  for (double now = clock_.now(); now < warm_end; now = clock_.now()) {
    if (wait(std::min(options_.sample_seconds, warm_end - now))) {
      stopped = true;
      return {};
    }
    report(CalibrationProgress::Phase::kWarmup, target_.read(), clock_.now());
  }

  // 2. Steady part, read every sample_seconds, cut into fit slices.
  CalibrationStep row;
  row.workers = workers;
  target_.take_window();  // reset latency and busy accounting
  const CalibrationTarget::Reading first = target_.read();
  const double start = clock_.now();
  const double end = start + measured;
  const int slices =
      std::max(1, static_cast<int>(std::lround(measured / options_.fit_slice_seconds)));
  const double slice_length = measured / slices;
  uint64_t slice_completed = first.completed;
  double slice_start = start;
  CalibrationTarget::Reading last = first;
  double now = start;
  for (int k = 1; k <= slices; ++k) {
    const double boundary = k == slices ? end : start + k * slice_length;
    // A sleeper that overshot past this boundary: the slice merges into the next one.
    if (k < slices && now >= boundary - 1e-9) continue;
    do {
      if (wait(std::min(options_.sample_seconds, boundary - now))) {
        stopped = true;
        return {};
      }
      last = target_.read();
      now = clock_.now();
      ++row.samples;
      if (last.lag >= 0) {
        row.min_lag = row.min_lag < 0 ? last.lag : std::min(row.min_lag, last.lag);
        if (last.lag == 0) ++row.dry_samples;
      }
      report(CalibrationProgress::Phase::kMeasuring, last, now);
    } while (now < boundary - 1e-9);
    if (now > slice_start) {
      samples.push_back(
          {static_cast<double>(workers),
           static_cast<double>(last.completed - slice_completed) / (now - slice_start), 1.0});
    }
    slice_completed = last.completed;
    slice_start = now;
  }
  const PoolWindow window = target_.take_window();

  // 3. The row.
  row.measured_seconds = now - start;
  row.completed = last.completed - first.completed;
  row.throughput = row.measured_seconds > 0 ? row.completed / row.measured_seconds : 0.0;
  row.latency_p50 = window.latency_p50;
  row.latency_p99 = window.latency_p99;
  row.busy_mean = window.busy_mean;
  row.saturated = row.dry_samples == 0;
  row.starved = row.saturated && row.busy_mean < options_.min_busy_fraction * workers;
  return row;
}

CalibrationResult Calibrator::summarize(std::vector<CalibrationStep> steps,
                                        const std::vector<UslSample>& samples,
                                        const CalibrationOptions& options) {
  CalibrationResult r;
  r.headroom = options.headroom;
  r.steps = std::move(steps);
  UslFitOptions fit_options;
  fit_options.min_distinct_workers = 1;  // partial fits (lambda, sigma) with one or two sizes
  r.fit = UslFit::fit(samples, fit_options);

  const CalibrationStep* one = nullptr;
  for (const CalibrationStep& s : r.steps) {
    if (s.workers == 1) one = &s;
  }
  r.base_rate = one != nullptr ? one->throughput : (r.fit.valid ? r.fit.lambda : 0.0);
  if (one != nullptr && one->latency_p50 > 0 && one->latency_p99 > 0) {
    const double s = std::max(0.0, std::log(one->latency_p99 / one->latency_p50)) / kZ99;
    r.service_cv_estimate = std::sqrt(std::expm1(s * s));
  }
  for (CalibrationStep& s : r.steps) {
    s.per_worker = s.workers > 0 ? s.throughput / s.workers : 0.0;
    s.efficiency = r.base_rate > 0 && s.workers > 0 ? s.throughput / (s.workers * r.base_rate) : 0;
    s.fitted_throughput = r.fit.valid ? r.fit.throughput(s.workers) : 0.0;
  }
  if (r.steps.empty()) {
    r.warnings.push_back("no step was measured");
    return r;
  }

  const CalibrationStep& largest = r.steps.back();
  r.sustained_workers = largest.workers;
  r.sustained_rate = largest.throughput;
  r.recommended_rate_limit = r.sustained_rate * (1.0 - options.headroom);

  for (const CalibrationStep& s : r.steps) {
    if (!s.saturated) {
      r.warnings.push_back(
          std::to_string(s.workers) + " workers: the topic ran dry (lag 0 in " +
          std::to_string(s.dry_samples) + " of " + std::to_string(s.samples) +
          " reads); the throughput is under-reported: the producer could not keep up");
    } else if (s.starved) {
      r.warnings.push_back(
          std::to_string(s.workers) + " workers: only " + printf_text("%.1f", s.busy_mean) +
          " busy on average although lag stayed above 0: fetching, dispatch or ordering lanes "
          "(too few keys?) limit this consumer before its workers do");
    }
  }
  const auto best = std::max_element(r.steps.begin(), r.steps.end(),
                                     [](const CalibrationStep& a, const CalibrationStep& b) {
                                       return a.throughput < b.throughput;
                                     });
  if (best->workers != largest.workers && best->throughput > 1.03 * largest.throughput) {
    r.warnings.push_back("throughput peaked at " + std::to_string(best->workers) + " workers (" +
                         rate_text(best->throughput) + "/s); " + std::to_string(largest.workers) +
                         " workers did " + rate_text(largest.throughput) +
                         "/s: more workers lowered it; consider guards.max_workers " +
                         std::to_string(best->workers));
  }
  if (!r.fit.valid) {
    r.warnings.push_back("no USL fit (no step with a positive throughput)");
  } else if (r.fit.distinct_workers < 3) {
    r.warnings.push_back("only " + std::to_string(r.fit.distinct_workers) +
                         " worker count(s): the fit cannot determine both sigma and kappa; "
                         "measure at least 3 sizes");
  }
  return r;
}

}  // namespace lagpilot
