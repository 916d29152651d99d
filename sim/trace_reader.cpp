#include "sim/trace_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "policies/number_text.h"
#include "sim/lag_reconstruction.h"
#include "sim/trace_binning.h"
#include "sim/trace_csv.h"

namespace lagpilot::sim {

TraceError::TraceError(const std::string& path, std::size_t line, const std::string& what)
    : std::runtime_error(line == 0 ? path + ": " + what
                                   : path + ":" + std::to_string(line) + ": " + what),
      path_(path),
      line_(line) {}

namespace {

using namespace trace_io;

// Format detection and loading

bool valid_format(const std::string& f) {
  return f == "auto" || f == "rate" || f == "prometheus" || f == "events" || f == "lag";
}

std::string resolve_format(const CsvFile& file, const TraceLoadOptions& options) {
  if (options.format != "auto") return options.format;
  if (!options.companion.empty()) return "lag";
  if (file.has_header()) {
    if (file.find_column({"__name__"}) != kNoColumn) return "prometheus";
    return file.columns() == 2 ? "rate" : "events";
  }
  // No header: 2 columns are a rate; 3 with a non-numeric middle field a Prometheus export.
  if (file.columns() == 2) return "rate";
  if (file.columns() == 3) {
    double ignored = 0;
    if (parse_value(file.first_fields()[1], ignored) == ValueError::kNotNumber) return "prometheus";
  }
  return "events";
}

void reject_lag_as_rate(const CsvFile& file, const std::string& name) {
  if (looks_like_lag(name)) {
    file.fail(0, "metric " + in_quotes(name) +
                     " looks like consumer lag, not arrivals: set the companion option (worker "
                     "count or processed rate) to reconstruct arrivals, or an explicit format to "
                     "read the values as they are");
  }
}

// Reads the file `path`, or parses `text` under that name when given (and then the companion
// from `companion_text`, never from disk).
LoadedTrace load_or_parse(const std::string& path, const std::optional<std::string_view>& text,
                          const std::optional<std::string_view>& companion_text,
                          const TraceLoadOptions& options) {
  if (!valid_format(options.format)) {
    throw TraceError(path, 0,
                     "unknown format " + in_quotes(options.format) +
                         " (expected auto, rate, prometheus, events or lag)");
  }
  if (options.companion_kind != "auto" && options.companion_kind != "workers" &&
      options.companion_kind != "processed_rate") {
    throw TraceError(path, 0,
                     "unknown companion_kind " + in_quotes(options.companion_kind) +
                         " (expected auto, workers or processed_rate)");
  }
  if (options.format == "lag" && options.companion.empty()) {
    throw TraceError(path, 0,
                     "format lag needs a companion recording (worker count or processed rate)");
  }
  if (!options.companion.empty() && options.format != "lag" && options.format != "auto") {
    throw TraceError(path, 0, "a companion is only used with format lag, not " + options.format);
  }

  const CsvFile file(path, text ? std::string(*text) : read_whole_file(path));
  LoadedTrace result;
  TraceLoadStats& stats = result.stats;
  stats.format = resolve_format(file, options);
  const bool auto_format = options.format == "auto";
  if (!options.metric.empty() && stats.format != "prometheus" && stats.format != "lag") {
    file.fail(0, "the metric option (" + in_quotes(options.metric) +
                     ") needs a Prometheus export, but the file is read as " + stats.format);
  }

  if (stats.format == "lag") {
    result.trace = lag_trace(file, options, companion_text, stats);
    return result;
  }

  SeriesLayout layout;
  if (stats.format == "prometheus") {
    layout = prometheus_layout(file, options.metric);
  } else if (stats.format == "rate") {
    layout = two_column_layout(file, "the rate format");
  } else {  // events
    layout.time_column = file.find_time_column();
    if (layout.time_column == kNoColumn) layout.time_column = 0;
    layout.allow_equal_times = true;
  }
  Series series = read_series(file, layout);
  stats.metric = series.name;
  stats.data_rows = series.times.size();
  stats.skipped_rows = series.skipped_rows;
  stats.blank_lines = series.blank_lines;
  stats.nan_values = series.nan_values;
  if (auto_format && stats.format != "events") reject_lag_as_rate(file, series.name);

  if (stats.format == "events") {
    result.trace = event_trace(file, series, options.event_bin_seconds);
  } else {
    result.trace = binned_trace(file, std::move(series), stats.format == "rate", stats);
  }
  return result;
}

}  // namespace

LoadedTrace load_trace_with_stats(const std::string& path, const TraceLoadOptions& options) {
  return load_or_parse(path, std::nullopt, std::nullopt, options);
}

Trace load_trace(const std::string& path, const TraceLoadOptions& options) {
  return load_trace_with_stats(path, options).trace;
}

LoadedTrace parse_trace_with_stats(std::string_view text, const std::string& name,
                                   const TraceLoadOptions& options,
                                   std::string_view companion_text) {
  return load_or_parse(name, text, companion_text, options);
}

Trace parse_trace(std::string_view text, const std::string& name, const TraceLoadOptions& options,
                  std::string_view companion_text) {
  return parse_trace_with_stats(text, name, options, companion_text).trace;
}

Trace compress_time(Trace trace, double speedup) {
  if (!(speedup > 0) || !std::isfinite(speedup)) {
    throw std::invalid_argument("compress_time: speedup must be finite and > 0, got " +
                                text::general(speedup, 10));
  }
  trace.bin_seconds /= speedup;
  for (double& r : trace.rates) r *= speedup;
  // (A fuzz-contract finding.) A finite but huge rate (or speedup) overflowed to infinity, and a
  // tiny bin underflowed to 0, both silently.
  const bool overflow = std::any_of(trace.rates.begin(), trace.rates.end(),
                                    [](double r) { return !std::isfinite(r); });
  if (overflow || !(trace.bin_seconds > 0)) {
    throw std::invalid_argument("compress_time: speedup " + text::general(speedup, 10) + " makes " +
                                (overflow ? "a rate of trace " : "the bin width of trace ") +
                                trace.source + (overflow ? " infinite" : " zero"));
  }
  return trace;
}

Trace scale_to_peak(Trace trace, double peak_rate) {
  if (!(peak_rate > 0) || !std::isfinite(peak_rate)) {
    throw std::invalid_argument("scale_to_peak: peak_rate must be finite and > 0, got " +
                                text::general(peak_rate, 10));
  }
  const double current = trace.peak_rate();
  if (!(current > 0)) {
    throw std::invalid_argument("scale_to_peak: trace " + trace.source +
                                " has no rate above 0 to scale");
  }
  const double factor = peak_rate / current;
  if (std::isfinite(factor)) {
    for (double& r : trace.rates) r = r == current ? peak_rate : r * factor;
  } else {
    // A tiny peak (5e-324): factor overflows, and 0 * inf would be NaN. r / current <= 1.
    for (double& r : trace.rates) r = r == current ? peak_rate : r / current * peak_rate;
  }
  return trace;
}

}  // namespace lagpilot::sim
