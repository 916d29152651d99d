#include "controller/calibration/calibrator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "policies/number_text.h"

namespace lagpilot {
namespace {

// Standard normal quantile at 0.99, for the lognormal cv estimate.
constexpr double kZ99 = 2.3263478740408408;

// 12345.6 -> "12,346"; small rates keep one decimal ("196.4").
std::string rate_text(double v) {
  if (!std::isfinite(v)) return "inf";
  if (std::fabs(v) < 1000) return text::fixed(v, 1);
  return text::thousands(v);
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
    bad_option("warmup_seconds: must be >= 0, got " + text::num(warmup_seconds));
  }
  if (!(dwell_seconds > warmup_seconds) || !std::isfinite(dwell_seconds)) {
    bad_option("dwell_seconds: must be > warmup_seconds (" + text::num(warmup_seconds) + "), got " +
               text::num(dwell_seconds));
  }
  if (!(sample_seconds > 0) || !std::isfinite(sample_seconds)) {
    bad_option("sample_seconds: must be > 0, got " + text::num(sample_seconds));
  }
  if (!(fit_slice_seconds > 0) || !std::isfinite(fit_slice_seconds)) {
    bad_option("fit_slice_seconds: must be > 0, got " + text::num(fit_slice_seconds));
  }
  if (!(headroom >= 0 && headroom < 1)) {
    bad_option("headroom: must be in [0, 1), got " + text::num(headroom));
  }
  if (!(min_busy_fraction >= 0 && min_busy_fraction <= 1)) {
    bad_option("min_busy_fraction: must be in [0, 1], got " + text::num(min_busy_fraction));
  }
  if (!(ready_timeout_seconds > 0)) {
    bad_option("ready_timeout_seconds: must be > 0, got " + text::num(ready_timeout_seconds));
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
           text::general(fit.sigma, 4) + ", kappa " + text::general(fit.kappa, 4) + ", R^2 " +
           text::fixed(fit.r_squared, 4) + " (" + std::to_string(fit.parameters) +
           (fit.parameters == 1 ? " parameter, " : " parameters, ") +
           std::to_string(fit.distinct_workers) + " worker counts)\n";
    const double peak = fit.peak_workers();
    if (std::isfinite(peak)) {
      out += "peak: N* = " + text::fixed(peak, 1) + " workers, " +
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
           " workers, less " + text::fixed(headroom * 100, 0) + " % headroom)\n";
  }
  if (!complete) out += "interrupted: only the steps above were measured\n";
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  return out;
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
      throw std::runtime_error(ready ? "calibration: the topic stayed empty for " +
                                           text::num(options_.ready_timeout_seconds) +
                                           " s (no backlog to measure: is the producer running?)"
                                     : "calibration: the consumer got no partitions within " +
                                           text::num(options_.ready_timeout_seconds) + " s");
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
          std::to_string(s.workers) + " workers: only " + text::fixed(s.busy_mean, 1) +
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
