#pragma once
// Trace readers: turn a recorded workload file into a sim::Trace (piecewise-constant arrival
// rate), plus the two transformations the simulator applies before replaying one.
//
// Thread safety: every function here is pure (no shared state, no clock, no randomness); call
// them from any thread, concurrently.
//
// Formats (TraceLoadOptions::format). "auto" decides from the options and the header (or, in a
// file without a header, the first row): `lag` if a companion is set; else `prometheus` if
// there is a `__name__` column (headerless: 3 columns with a non-numeric middle one); else
// `rate` for 2 columns; else `events`.
//
//   prometheus  A Prometheus export `timestamp,__name__,value` (detected by a `__name__`
//               column; the timestamp and value columns are found by name, so extra label
//               columns are fine). The value is taken as it is: a per-second rate (or any
//               gauge). Rows of other metrics are skipped; if the file holds several metrics,
//               TraceLoadOptions::metric picks one ("" and several metrics is an error).
//   rate        Two columns `timestamp,value` (any header names: `period,count`, ...). The
//               value is a COUNT per bin (messages in the bin that starts at the timestamp);
//               the bin width is the median timestamp step, and the rate is count / bin width.
//               A per-second-rate file with a 2-column layout must therefore not be loaded as
//               `rate` unless its step is 1 s; export it with `__name__` or rescale it.
//   events      One row per event (any other column count, e.g. Azure's
//               `TIMESTAMP,ContextTokens,GeneratedTokens`): only the timestamp column (named
//               timestamp/time/date/period/ts, else the first) is read; other columns are not
//               checked beyond the column count. Events are counted in bins of
//               `event_bin_seconds`, aligned to multiples of the bin width in epoch time
//               (1-minute bins start on whole minutes), and divided by the bin width. Equal
//               timestamps are fine here (two events at once); decreasing ones are an error.
//   lag         A lag recording (Prometheus export or `timestamp,value`, the value being the
//               lag in messages) plus a `companion` recording (Prometheus or `timestamp,value`,
//               value taken as it is) of either the worker count or the processed rate
//               (messages/s). companion_kind "auto" guesses from the companion's metric name
//               (or value column name): taskmanager/worker/replica/pod/instance -> workers,
//               else process/consum/rate/throughput -> processed_rate, else an error. "auto" picks
//               `lag` whenever `companion` is set; an auto-loaded file whose metric or value column
//               is named like `*lag*` without a companion is an error (it holds lag, not arrivals).
//               Arrivals are reconstructed per lag sampling interval [t_k, t_k+1):
//                   arrived = lag(t_k+1) - lag(t_k) + processed,
//                   processed = mean companion over the interval * interval
//                               (* per_worker_rate for a worker count),
//               clamped at >= 0 (TraceLoadStats::clamped_bins counts the clamps). The
//               companion is a step function: each sample holds until the next one (its last
//               one for one companion step); its NaN rows are skipped (the previous sample
//               holds). Bins not fully covered by the companion are trimmed off the ends.
//               With a worker count the reconstruction assumes the workers were busy at
//               `per_worker_rate` the whole interval: where the lag sits at zero the consumer
//               was partly idle, so arrivals there are an upper bound. A processed-rate
//               companion has no such bias.
//
// Timestamps: epoch seconds (integer or fractional, e.g. `1648143909` or `1648143909.25`) or
// `YYYY-MM-DD[ HH:MM:SS[.fraction]]` (also with `T` between date and time, and an optional
// trailing `Z`), read as UTC. Times are kept as integer nanoseconds, so Azure's 7 fractional
// digits (100 ns) are exact; digits past the 9th are ignored. Epoch milliseconds are not
// recognised (as seconds they lie past 2262: "out of range").
//
// Layout: an optional header line (a first line whose first field is not a timestamp); fields
// separated by commas, surrounding spaces and double quotes trimmed; LF, CRLF or CR line
// endings; a missing final newline; blank lines are skipped (they still count for line
// numbers); a UTF-8 byte-order mark is ignored.
//
// Missing data:
//   - NaN values (`NaN`, `nan`, `-nan`, any case) are counted in TraceLoadStats::nan_values.
//     In `rate` and `prometheus` traces a NaN is an unknown value, replaced by linear
//     interpolation between the nearest non-NaN rows (at the ends: the nearest non-NaN value);
//     a file with only NaN values is an error. In `lag` recordings NaN lag samples inside the
//     recording are interpolated the same way and NaN samples at either end are trimmed.
//   - Gaps (missing timestamps in a `rate` or `prometheus` trace, i.e. a step larger than the
//     bin width) become zero-rate bins, counted in TraceLoadStats::gap_bins: an aggregator that
//     writes one row per non-empty bin leaves exactly such gaps. In `lag` recordings a gap is
//     interpolated like a NaN sample (the lag did not drop to zero), counted in gap_bins.
//   - Timestamps are placed in bins by rounding (first timestamp + k * bin width), so scrape
//     jitter is harmless; two rows landing in the same bin are an error.
//   - Length: a trace of n rows (events: n events) may span at most max(10^6, 1000 n) bins, and
//     never more than 10^8; longer is an error naming the row (mostly gaps: it takes a
//     mistyped timestamp, and would allocate up to 800 MB of empty bins).
//
// Errors: TraceError with "path:line: what is wrong" (1-based line numbers, the header is line
// 1) for a malformed row (wrong column count, non-numeric or infinite value, bad timestamp,
// negative value), unsorted or duplicate timestamps, an empty file ("path:1: file is empty"),
// a header without rows ("path:1: header but no data rows"); "path: what is wrong" (no line)
// for problems of the whole file or of the options (cannot open, fewer than two rows where a
// bin width must be detected, several metrics and none chosen, missing per_worker_rate, ...).

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/trace.h"

namespace lagpilot::sim {

struct TraceLoadOptions {
  // auto | rate | prometheus | events | lag
  std::string format = "auto";
  // prometheus: which __name__ to use when a file holds several ("" = the only one)
  std::string metric;
  // events: bin width for binning one-row-per-event traces
  double event_bin_seconds = 1.0;
  // lag: path of the worker-count or processed-rate recording (Prometheus or rate format)
  std::string companion;
  // lag: "workers" | "processed_rate" | "auto" (guess from metric name:
  // taskmanager/workers/replicas -> workers)
  std::string companion_kind = "auto";
  // lag + workers companion: messages/s one worker processes (required then, > 0)
  double per_worker_rate = 0;
};

// A trace file (or the options used to read it) is wrong. what() is "path:line: what is wrong",
// or "path: what is wrong" when no single line is to blame (line() == 0).
class TraceError : public std::runtime_error {
 public:
  TraceError(const std::string& path, std::size_t line, const std::string& what);
  const std::string& path() const { return path_; }
  std::size_t line() const { return line_; }  // 1-based; 0 = the whole file or the options

 private:
  std::string path_;
  std::size_t line_;
};

// What load_trace did to the file, for logs and reports (see the header comment for meanings).
struct TraceLoadStats {
  std::string format;          // the format used (auto resolved): rate | prometheus | events | lag
  std::string metric;          // prometheus/lag: the __name__ used; rate: the value column name
  std::string companion_kind;  // lag: workers | processed_rate (auto resolved)
  std::size_t data_rows = 0;   // rows used (events: events); other metrics' rows not included
  std::size_t skipped_rows = 0;          // rows of other metrics in a Prometheus export
  std::size_t blank_lines = 0;           // blank lines skipped
  std::size_t nan_values = 0;            // NaN values in the main file (interpolated or trimmed)
  std::size_t gap_bins = 0;              // bins with no row (zero-filled; lag: interpolated)
  std::size_t trimmed_bins = 0;          // lag: bins dropped at the ends (NaN ends, no companion)
  std::size_t clamped_bins = 0;          // lag: bins whose reconstructed arrivals were < 0
  std::size_t companion_nan_values = 0;  // lag: NaN rows skipped in the companion
};

struct LoadedTrace {
  Trace trace;
  TraceLoadStats stats;
};

// Reads `path` (see the header comment for formats). Throws TraceError.
Trace load_trace(const std::string& path, const TraceLoadOptions& options = {});
// Same, and also says how the file was read (NaN values, gaps, clamps, ...).
LoadedTrace load_trace_with_stats(const std::string& path, const TraceLoadOptions& options = {});

// The same from memory, for tests and fuzzing: `text` is the file's contents and `name` stands
// for its path in errors and Trace::source. For a lag trace, `companion_text` is the companion
// recording's contents (options.companion then only names it in errors). Nothing is read from
// disk. Throws TraceError.
LoadedTrace parse_trace_with_stats(std::string_view text, const std::string& name,
                                   const TraceLoadOptions& options = {},
                                   std::string_view companion_text = {});
Trace parse_trace(std::string_view text, const std::string& name,
                  const TraceLoadOptions& options = {}, std::string_view companion_text = {});

// Replays the trace `speedup` times faster: bin_seconds / speedup, rates * speedup, so every bin
// (and the whole trace) carries the same number of messages. start_epoch is left alone (it is
// the recording's wall clock). Throws std::invalid_argument unless speedup is finite and > 0,
// and if the result would have an infinite rate or a zero bin width.
Trace compress_time(Trace trace, double speedup);

// Multiplies every rate by one factor so that peak_rate() == peak_rate; the shape, the bin
// width and the duration are unchanged, total messages scale by the same factor. Throws
// std::invalid_argument unless peak_rate is finite and > 0 and the trace has a rate > 0.
Trace scale_to_peak(Trace trace, double peak_rate);

}  // namespace lagpilot::sim
