#pragma once
// Reports of simulation runs: a text table for people, JSON for machines, CSV for plots.
//
// The JSON is deterministic: object keys are sorted (nlohmann::json) and every floating-point
// number is rounded to 9 significant digits before it is written, so the same runs give
// byte-identical output (a fixed seed gives the same runs).
//
// Thread-safety: pure functions.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/simulation.h"
#include "sim/trace.h"

namespace lagpilot::sim {

// What a report says about the trace that was replayed.
struct TraceInfo {
  std::string source;
  std::size_t bins = 0;
  double bin_seconds = 0.0;
  double duration_seconds = 0.0;
  double mean_rate = 0.0;       // messages/s
  double peak_rate = 0.0;       // messages/s
  double total_messages = 0.0;  // expected (sum of rate * bin width)
  // Free-form extras written under "notes" (e.g. {"speedup": 60, "peak_rate": 1352}).
  nlohmann::json notes = nlohmann::json::object();

  static TraceInfo of(const Trace& trace);
};

// The reference run for "vs oracle" figures: the first run whose policy is "oracle" (see
// sim/oracle.h: the fewest worker-seconds any policy could have spent), or nullptr.
const RunResult* find_oracle(const std::vector<RunResult>& results);

// One row per run, one column per KPI (units in the header), aligned. When the runs include the
// oracle (find_oracle), two more columns compare each run with it:
//   ws_vs_oracle         worker-seconds / the oracle's, e.g. "1.372x" (the oracle is the floor;
//                        "n/a" when the oracle spent none)
//   above_slo_vs_oracle  seconds above the lag SLO minus the oracle's, e.g. "+120": the oracle's
//                        are the seconds no schedule can avoid (usually 0, so a ratio would mean
//                        nothing), so this is the avoidable excess
std::string format_kpi_table(const std::vector<RunResult>& results);

// The KPIs of one run as a JSON object (numbers rounded as described above). With shedding
// (Kpis::shedding) also "shed": {"total", "age"}, "shed_seconds" and "shed_starts"; without it
// exactly the keys it always had. The text table adds "shed" and "shed_time" columns likewise,
// and the CSV a <label>_shed_rate column.
nlohmann::json kpis_to_json(const Kpis& kpis);

// `j` with every float rounded to 9 significant digits (short text that is the same on every
// run) and non-finite floats as null (what dump() writes for them anyway). Pure.
nlohmann::json rounded_json(nlohmann::json j);

// {"trace": {...}, "sim": SimConfig::to_json(), "runs": [{"label", "policy", "params",
//  "fidelity", "kpis": {...}, "scale_actions_recorded": [{"t", "from", "to", "reason"}...]}]}
// (no series: see write_series_csv); with shedding configured, "shedding": ShedConfig::to_json().
// With an oracle run (find_oracle) every run also has "vs_oracle": {"worker_seconds_ratio":
// worker-seconds / the oracle's (null if the oracle's are 0), "seconds_above_slo_excess": seconds
// above SLO minus the oracle's, "seconds_above_slo_ratio": seconds above SLO / the oracle's (null
// when the oracle's are 0, the usual case)}.
nlohmann::json to_json(const std::vector<RunResult>& results, const SimConfig& config,
                       const TraceInfo& trace);

// CSV: t,arrival_rate, then <label>_lag,<label>_workers,<label>_latency_p99 for each run.
// Every run must have the same series times (same trace and SimConfig, record_series on);
// throws std::invalid_argument otherwise. Labels with commas or quotes are quoted (RFC 4180).
void write_series_csv(std::ostream& out, const std::vector<RunResult>& results);

}  // namespace lagpilot::sim
