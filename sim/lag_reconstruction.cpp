#include "sim/lag_reconstruction.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string_view>

#include "policies/number_text.h"
#include "sim/trace_binning.h"

namespace lagpilot::sim::trace_io {

// ---------------------------------------------------------------------------------------------
// Lag reconstruction

// A companion recording as a step function: each sample holds until the next one, the last one
// for one median step. integral() must be called with non-decreasing intervals.
class StepFunction {
 public:
  StepFunction(const CsvFile& file, const Series& series) {
    const int64_t step = median_step(file, series);
    for (std::size_t i = 0; i < series.times.size(); ++i) {
      if (std::isnan(series.values[i])) continue;
      times_.push_back(series.times[i]);
      values_.push_back(series.values[i]);
    }
    if (times_.empty())
      file.fail(0, "all " + std::to_string(series.values.size()) + " values are NaN");
    end_ = times_.back() + step;
  }
  int64_t begin() const { return times_.front(); }
  int64_t end() const { return end_; }

  // Integral over [a, b) in value * seconds; [a, b) must lie within [begin(), end()].
  double integral(int64_t a, int64_t b) {
    while (cursor_ + 1 < times_.size() && times_[cursor_ + 1] <= a) ++cursor_;
    double sum = 0;
    int64_t from = a;
    for (std::size_t j = cursor_; from < b; ++j) {
      const int64_t until = j + 1 < times_.size() ? std::min(times_[j + 1], b) : b;
      sum += values_[j] * to_seconds(until - from);
      from = until;
    }
    return sum;
  }

 private:
  std::vector<int64_t> times_;
  std::vector<double> values_;
  int64_t end_ = 0;
  std::size_t cursor_ = 0;
};

bool contains_any(const std::string& text, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return text.find(w) != std::string::npos; });
}

bool looks_like_lag(const std::string& name) {
  return contains_any(lowercase(name), {"lag"});
}

std::string guess_companion_kind(const CsvFile& file, const std::string& name) {
  const std::string n = lowercase(name);
  if (contains_any(n, {"taskmanager", "worker", "replica", "pod", "instance"})) return "workers";
  if (contains_any(n, {"process", "consum", "rate", "throughput"})) return "processed_rate";
  file.fail(0, "cannot tell whether metric " + in_quotes(name) +
                   " is a worker count or a processed rate; set companion_kind to workers or "
                   "processed_rate");
}

// Lag file or companion: a Prometheus export or 2 columns, values as they are.
SeriesLayout gauge_layout(const CsvFile& file, const std::string& metric) {
  const bool prometheus =
      file.has_header() ? file.find_column({"__name__"}) != kNoColumn : file.columns() == 3;
  return prometheus ? prometheus_layout(file, metric)
                    : two_column_layout(file, "a lag or companion recording without __name__");
}

// `companion_text`: the companion's contents, or nullopt to read the file options.companion.
Trace lag_trace(const CsvFile& lag_file, const TraceLoadOptions& options,
                const std::optional<std::string_view>& companion_text, TraceLoadStats& stats) {
  Series lag = read_series(lag_file, gauge_layout(lag_file, options.metric));
  stats.metric = lag.name;
  stats.data_rows = lag.times.size();
  stats.skipped_rows = lag.skipped_rows;
  stats.blank_lines = lag.blank_lines;
  stats.nan_values = lag.nan_values;

  const CsvFile companion_file(options.companion, companion_text
                                                      ? std::string(*companion_text)
                                                      : read_whole_file(options.companion));
  const Series companion = read_series(companion_file, gauge_layout(companion_file, ""));
  stats.companion_nan_values = companion.nan_values;
  stats.companion_kind = options.companion_kind == "auto"
                             ? guess_companion_kind(companion_file, companion.name)
                             : options.companion_kind;
  const bool workers = stats.companion_kind == "workers";
  if (workers && !(options.per_worker_rate > 0 && std::isfinite(options.per_worker_rate))) {
    lag_file.fail(0,
                  "a worker-count companion needs per_worker_rate > 0 (messages/s per worker), "
                  "got " +
                      text::general(options.per_worker_rate, 10));
  }
  StepFunction processed(companion_file, companion);

  // Lag on a regular grid; NaN samples and gaps inside are interpolated, the ends trimmed.
  const int64_t step = median_step(lag_file, lag);
  const std::vector<std::size_t> index = grid_indices(lag_file, lag, step);
  const std::size_t grid_size = index.back() + 1;
  stats.gap_bins = grid_size - index.size();
  std::vector<double> grid(grid_size, std::numeric_limits<double>::quiet_NaN());
  std::vector<std::size_t> position(grid_size);
  for (std::size_t k = 0; k < grid_size; ++k) position[k] = k;
  for (std::size_t i = 0; i < index.size(); ++i) grid[index[i]] = lag.values[i];
  std::size_t first = 0;
  while (first < grid_size && std::isnan(grid[first])) ++first;
  std::size_t last = grid_size;
  while (last > first && std::isnan(grid[last - 1])) --last;
  if (last - first < 2) lag_file.fail(0, "at least two lag samples that are not NaN are needed");
  interpolate_nans(grid, position);  // the ends are trimmed below, so their fill does not matter

  // Keep the intervals [k, k + 1) inside both the lag samples and the companion's span.
  const int64_t t0 = lag.times.front();
  std::size_t begin = first;
  while (begin + 1 < last && t0 + static_cast<int64_t>(begin) * step < processed.begin()) ++begin;
  std::size_t end = last - 1;  // exclusive end of intervals
  while (end > begin && t0 + static_cast<int64_t>(end) * step > processed.end()) --end;
  if (end <= begin || t0 + static_cast<int64_t>(begin) * step < processed.begin()) {
    lag_file.fail(
        0, "the companion " + options.companion + " (epoch " +
               text::general(to_seconds(processed.begin()), 10) + " to " +
               text::general(to_seconds(processed.end()), 10) +
               " s) does not cover any lag interval (epoch " +
               text::general(to_seconds(t0 + static_cast<int64_t>(first) * step), 10) + " to " +
               text::general(to_seconds(t0 + static_cast<int64_t>(last - 1) * step), 10) + " s)");
  }
  stats.trimmed_bins = (grid_size - 1) - (end - begin);

  Trace trace;
  trace.source = lag_file.path();
  trace.start_epoch = to_seconds(t0 + static_cast<int64_t>(begin) * step);
  trace.bin_seconds = to_seconds(step);
  trace.rates.reserve(end - begin);
  const double factor = workers ? options.per_worker_rate : 1.0;
  for (std::size_t k = begin; k < end; ++k) {
    const int64_t a = t0 + static_cast<int64_t>(k) * step;
    const double done = processed.integral(a, a + step) * factor;
    double arrived = grid[k + 1] - grid[k] + done;
    if (arrived < 0) {
      arrived = 0;
      ++stats.clamped_bins;
    }
    trace.rates.push_back(arrived / trace.bin_seconds);
    if (!std::isfinite(trace.rates.back())) {  // huge lag values or per_worker_rate
      lag_file.fail(0, "the arrivals reconstructed for the interval at epoch " +
                           text::general(to_seconds(a), 10) + " s are not a finite rate");
    }
  }
  return trace;
}

}  // namespace lagpilot::sim::trace_io
