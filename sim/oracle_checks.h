#pragma once
// The oracle's input checks: every bad trace, config, guard range or option is rejected with an
// std::invalid_argument that names it, before the DP allocates anything.
//
// Internal to the oracle. Thread-safety: a pure function.

#include <cstdint>

#include "policies/guards.h"
#include "sim/oracle.h"

namespace lagpilot::sim::fluid {

// The largest change, reversal and SLO price: price x changes (<= ticks) stays far below the
// DP's infinite cost.
inline constexpr int64_t kMaxChangePrice = int64_t{1} << 40;

void check_oracle_inputs(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                         const OracleOptions& options);

}  // namespace lagpilot::sim::fluid
