#include "sim/trace_binning.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policies/number_text.h"

namespace lagpilot::sim::trace_io {

// The bin width of a sampled series: the median step between consecutive rows.
int64_t median_step(const CsvFile& file, const Series& series) {
  if (series.times.size() < 2) {
    file.fail(0, "at least two rows are needed to detect the bin width (found " +
                     std::to_string(series.times.size()) + ")");
  }
  std::vector<int64_t> steps(series.times.size() - 1);
  for (std::size_t i = 1; i < series.times.size(); ++i) {
    steps[i - 1] = series.times[i] - series.times[i - 1];
  }
  const auto middle = steps.begin() + static_cast<std::ptrdiff_t>((steps.size() - 1) / 2);
  std::nth_element(steps.begin(), middle, steps.end());
  return *middle;
}

// Grid position of each row: round((t - t0) / step). Two rows in one bin are an error.
std::vector<std::size_t> grid_indices(const CsvFile& file, const Series& series, int64_t step) {
  std::vector<std::size_t> index(series.times.size());
  const int64_t t0 = series.times.front();
  const std::size_t max_bins = max_bins_for(series.times.size());
  for (std::size_t i = 0; i < series.times.size(); ++i) {
    const int64_t offset = series.times[i] - t0;
    const int64_t bins = offset / step + (offset % step >= step - step / 2 ? 1 : 0);
    if (static_cast<uint64_t>(bins) >= max_bins) {
      file.fail(series.lines[i],
                "timestamp is " + std::to_string(bins) + " bins after the first row; " +
                    too_many_bins(series.times.size(), static_cast<uint64_t>(bins) + 1));
    }
    index[i] = static_cast<std::size_t>(bins);
    if (i > 0 && index[i] == index[i - 1]) {
      file.fail(series.lines[i], "timestamp falls into the same " +
                                     text::general(to_seconds(step), 10) + " s bin as line " +
                                     std::to_string(series.lines[i - 1]) +
                                     " (irregular timestamps; the bin width is the median step)");
    }
  }
  return index;
}

// Replaces each NaN value by linear interpolation (in grid position) between the nearest
// non-NaN values; at the ends, by the nearest non-NaN value. False if every value is NaN.
bool interpolate_nans(std::vector<double>& values, const std::vector<std::size_t>& position) {
  std::size_t previous = kNoColumn;  // last non-NaN row
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isnan(values[i])) {
      previous = i;
      continue;
    }
    std::size_t next = i + 1;
    while (next < values.size() && std::isnan(values[next])) ++next;
    if (previous == kNoColumn && next == values.size()) return false;
    for (std::size_t j = i; j < next; ++j) {
      if (previous == kNoColumn) {
        values[j] = values[next];
      } else if (next == values.size()) {
        values[j] = values[previous];
      } else {
        const double w = static_cast<double>(position[j] - position[previous]) /
                         static_cast<double>(position[next] - position[previous]);
        values[j] = values[previous] + w * (values[next] - values[previous]);
      }
    }
    i = next - 1;
  }
  return true;
}

// rate / prometheus: one bin per row, zero-rate bins for gaps; `counts` divides by the width.
Trace binned_trace(const CsvFile& file, Series series, bool counts, TraceLoadStats& stats) {
  const int64_t step = median_step(file, series);
  const std::vector<std::size_t> index = grid_indices(file, series, step);
  if (!interpolate_nans(series.values, index)) {
    file.fail(0, "all " + std::to_string(series.values.size()) + " values are NaN");
  }
  Trace trace;
  trace.source = file.path();
  trace.start_epoch = to_seconds(series.times.front());
  trace.bin_seconds = to_seconds(step);
  trace.rates.assign(index.back() + 1, 0.0);
  const double divisor = counts ? trace.bin_seconds : 1.0;
  for (std::size_t i = 0; i < index.size(); ++i) {
    const double rate = series.values[i] / divisor;
    // A huge count in a tiny bin (1e308 in 1 ns; a fuzz-contract finding) has no finite rate.
    if (!std::isfinite(rate)) {
      file.fail(series.lines[i], "value " + text::general(series.values[i], 10) + " in a " +
                                     text::general(trace.bin_seconds, 10) +
                                     " s bin is not a finite rate (messages/s)");
    }
    trace.rates[index[i]] = rate;
  }
  stats.gap_bins = trace.rates.size() - index.size();
  return trace;
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

Trace event_trace(const CsvFile& file, const Series& series, double bin_seconds) {
  const double bin_nanos_real = std::round(bin_seconds * 1e9);
  if (!(bin_nanos_real >= 1) || bin_nanos_real > 1e18) {
    file.fail(
        0, "event_bin_seconds must be between 1e-9 and 1e9, got " + text::general(bin_seconds, 10));
  }
  const auto bin_nanos = static_cast<int64_t>(bin_nanos_real);
  // Nanosecond times reach about 292 years either side of 1970; the first bin must start
  // inside that range too (a 1684 timestamp once overflowed here).
  if (series.times.front() < std::numeric_limits<int64_t>::min() + bin_nanos) {
    file.fail(series.lines.front(), "timestamp too far in the past to bin");
  }
  const int64_t start = floor_div(series.times.front(), bin_nanos) * bin_nanos;
  // Times are sorted, so back - start >= 0, and as unsigned it cannot overflow.
  const auto offset = [start](int64_t t) {
    return static_cast<uint64_t>(t) - static_cast<uint64_t>(start);
  };
  const uint64_t last_bin = offset(series.times.back()) / static_cast<uint64_t>(bin_nanos);
  if (last_bin >= max_bins_for(series.times.size())) {
    file.fail(series.lines.back(), "the events span " + std::to_string(last_bin + 1) + " bins of " +
                                       text::general(bin_seconds, 10) + " s; " +
                                       too_many_bins(series.times.size(), last_bin + 1));
  }
  Trace trace;
  trace.source = file.path();
  trace.start_epoch = to_seconds(start);
  trace.bin_seconds = to_seconds(bin_nanos);
  trace.rates.assign(static_cast<std::size_t>(last_bin) + 1, 0.0);
  for (int64_t t : series.times)
    trace.rates[static_cast<std::size_t>(offset(t) / static_cast<uint64_t>(bin_nanos))] += 1;
  for (double& r : trace.rates) r /= trace.bin_seconds;
  return trace;
}

}  // namespace lagpilot::sim::trace_io
