#pragma once
// From a metric's rows to a trace of rates per bin: the bin width of a sampled series (the
// median step), each row's grid position, NaN rows filled by interpolation, counts turned into
// rates, and one-row-per-event files counted into bins.
//
// Internal to the trace readers. Thread-safety: pure functions.

#include <cstdint>
#include <vector>

#include "sim/trace_csv.h"

namespace lagpilot::sim::trace_io {

// The bin width of a sampled series: the median step between consecutive rows.
int64_t median_step(const CsvFile& file, const Series& series);

// Grid position of each row: round((t - t0) / step). Two rows in one bin are an error.
std::vector<std::size_t> grid_indices(const CsvFile& file, const Series& series, int64_t step);

// Replaces each NaN value by linear interpolation (in grid position) between the nearest
// non-NaN values; at the ends, by the nearest non-NaN value. False if every value is NaN.
bool interpolate_nans(std::vector<double>& values, const std::vector<std::size_t>& position);

// rate / prometheus: one bin per row, zero-rate bins for gaps; `counts` divides by the width.
Trace binned_trace(const CsvFile& file, Series series, bool counts, TraceLoadStats& stats);

Trace event_trace(const CsvFile& file, const Series& series, double bin_seconds);

}  // namespace lagpilot::sim::trace_io
