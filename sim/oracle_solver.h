#pragma once
// The oracle's dynamic program over (tick, productive workers, lag); sim/oracle.h explains the
// problem, its reformulation and the bounds it reports.
//
// Internal to the oracle. Thread-safety: a pure function.

#include "sim/oracle.h"

namespace lagpilot::sim::fluid {

// The cheapest schedule (workers per tick) on `trace`; OracleResult::run and ::lag are left
// for the caller, which evaluates the schedule with fluid_run.
OracleResult solve_schedule(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                            const OracleOptions& options);

}  // namespace lagpilot::sim::fluid
