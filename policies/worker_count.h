#pragma once
// Small conversions shared by the policies that size the pool from real numbers (model, hybrid).
// Pure functions; any thread.

#include <nlohmann/json.hpp>

namespace lagpilot {

// Worker counts beyond this are treated as "unbounded" before converting to int.
inline constexpr double kMaxWorkerCount = 1e6;

// A real worker count as an int: truncated, 0 for anything not > 0 (also NaN), at most
// kMaxWorkerCount (so +infinity does not overflow).
int to_workers(double v);

// v as a JSON number, or null when it is not finite (JSON has no infinity or NaN): for state().
nlohmann::json finite_or_null(double v);

}  // namespace lagpilot
