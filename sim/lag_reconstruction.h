#pragma once
// Arrivals reconstructed from a lag recording: over a bin, what arrived is the lag's change plus
// what was processed, and what was processed comes from a companion recording (the processed
// rate itself, or the worker count times a per-worker rate).
//
// Internal to the trace readers. Thread-safety: pure functions.

#include <optional>
#include <string>

#include "sim/trace_csv.h"

namespace lagpilot::sim::trace_io {

bool looks_like_lag(const std::string& name);

// `companion_text`: the companion's contents, or nullopt to read the file options.companion.
Trace lag_trace(const CsvFile& lag_file, const TraceLoadOptions& options,
                const std::optional<std::string_view>& companion_text, TraceLoadStats& stats);

}  // namespace lagpilot::sim::trace_io
