#pragma once
// The multi-trace scoreboard: how each policy did over a set of traces, against the two
// references a control-quality goal is stated in.
//
//   oracle  the clairvoyant floor on worker-seconds (sim/oracle.h); its seconds above the lag
//           SLO are the unavoidable ones, so a policy's "avoidable" seconds are its own minus
//           the oracle's (never below 0).
//   hpa     the Kubernetes HPA baseline (policies/hpa_policy.h) in its default behaviour: the
//           reference for seconds above the SLO, scale actions and direction reversals.
//
// Goals (ScoreboardGoals), each checked on every trace; a policy passes a goal when no trace
// misses it:
//   worker-seconds      <= max_worker_seconds_ratio x the oracle's
//   avoidable SLO s     <= avoidable_slo_factor x HPA's avoidable + avoidable_slo_allowance_seconds
//   scale actions       <= max_actions_ratio x HPA's
//   reversals           <= max_reversals_ratio x HPA's
//   max workers         <= the consumer model's throughput peak N* (when the model has one)
// Per policy it reports the worst and the geometric mean (over traces) of the worker-seconds
// ratio, the sums of avoidable seconds, actions and reversals beside HPA's, the worst per-trace
// ratios, and the oracle's own scale actions (not a goal: it minimizes worker-seconds only).
//
// Thread-safety: pure functions of their arguments.

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/action_bound.h"
#include "sim/simulation.h"

namespace lagpilot::sim {

struct ScoreboardGoals {
  double max_worker_seconds_ratio = 1.15;
  double avoidable_slo_factor = 0.25;
  double avoidable_slo_allowance_seconds = 60.0;
  double max_actions_ratio = 0.5;
  double max_reversals_ratio = 0.5;

  nlohmann::json to_json() const;
};

// The runs of every policy on one trace (the same policies, in the same order, on each trace).
struct TraceRuns {
  std::string trace;  // a name for reports (the file's name)
  std::vector<RunResult> runs;
};

// One policy on one trace, with the references' figures and the verdict per goal.
struct TraceScore {
  std::string trace;
  Kpis kpis;
  // Worker-seconds / the oracle's; NaN without an oracle run (or when it spent none).
  double worker_seconds_ratio = std::numeric_limits<double>::quiet_NaN();
  double avoidable_seconds = 0.0;      // seconds above the SLO minus the oracle's, >= 0
  double hpa_avoidable_seconds = 0.0;  // the same for the HPA run
  int hpa_scale_actions = 0;
  int hpa_reversals = 0;
  bool worker_seconds_ok = false;
  bool slo_ok = false;
  bool actions_ok = false;
  bool reversals_ok = false;
  bool peak_ok = false;
};

// One policy over every trace.
struct PolicyScore {
  std::string label;
  std::string policy;  // Policy::name() ("oracle" for the oracle)
  bool is_oracle = false;
  bool is_hpa = false;  // the HPA reference run itself
  std::vector<TraceScore> traces;
  double worst_worker_seconds_ratio = std::numeric_limits<double>::quiet_NaN();
  double geomean_worker_seconds_ratio = std::numeric_limits<double>::quiet_NaN();
  double avoidable_seconds = 0.0;  // sums over the traces
  double hpa_avoidable_seconds = 0.0;
  int64_t scale_actions = 0;
  int64_t hpa_scale_actions = 0;
  int64_t reversals = 0;
  int64_t hpa_reversals = 0;
  // Worst per-trace ratios to HPA (a count against HPA's 0 is +infinity; 0 against 0 is 0).
  double worst_actions_ratio = 0.0;
  double worst_reversals_ratio = 0.0;
  int max_workers = 0;
  // Traces on which each goal is missed (0: the goal is met on every trace).
  int worker_seconds_misses = 0;
  int slo_misses = 0;
  int actions_misses = 0;
  int reversals_misses = 0;
  int peak_misses = 0;

  bool meets_all() const {
    return worker_seconds_misses + slo_misses + actions_misses + reversals_misses + peak_misses ==
           0;
  }
};

// Per trace, with `lagpilot sim --action-bound`: the least worker-seconds any schedule needs to
// keep the SLO with at most K = floor(max_actions_ratio x HPA's) scale actions
// (sim/action_bound.h), and so whether the worker-seconds and actions goals can be met together.
struct TraceActionBound {
  std::string trace;
  int hpa_scale_actions = 0;
  int hpa_reversals = 0;
  ActionBound bound;  // bound.budget = K
  // The same with at most R = floor(max_reversals_ratio x HPA's) reversals
  // (reversal_budget_bound), when has_reversal_bound.
  bool has_reversal_bound = false;
  ActionBound reversal_bound;
  JointBound joint;  // both budgets (when has_reversal_bound)
  // At most R reversals and at most A = slo_allowance_ticks_of ticks above the SLO outside the
  // unavoidable ones (ActionBoundOptions::slo_allowance_ticks): what the reversals and SLO goals
  // allow together. Computed where the bound within the SLO does not already show a schedule
  // that meets the worker-seconds goal with R reversals (the allowance could only help there).
  bool has_slo_bound = false;
  ActionBound slo_bound;
};

struct Scoreboard {
  ScoreboardGoals goals;
  // Empty unless computed (it takes a few whole-trace oracle DPs per trace); in trace order.
  std::vector<TraceActionBound> action_bounds;
  std::vector<std::string> traces;
  // The consumer model's throughput peak N* (workers); +infinity when it has none.
  double peak_workers = std::numeric_limits<double>::infinity();
  bool has_oracle = false;
  bool has_hpa = false;
  std::vector<PolicyScore> policies;  // in the order of the runs
};

// The throughput peak of a consumer model: sqrt((1 - sigma) / kappa) for its USL curve, or
// +infinity when kappa is 0.
double model_peak_workers(const ConsumerModelConfig& model);

// Scores every policy of `traces`. The oracle reference is each trace's first run of policy
// "oracle" (labelled "oracle" preferred); the HPA reference its first run of policy "hpa"
// labelled "hpa" (else the first "hpa" run). Without one, the goals that need it are counted as
// missed and the ratios are NaN. Throws std::invalid_argument when the traces do not have the
// same run labels in the same order, or when there are none.
Scoreboard build_scoreboard(const std::vector<TraceRuns>& traces, double peak_workers,
                            const ScoreboardGoals& goals = {});

// K for the action-budget bound of one trace's runs: floor(goals.max_actions_ratio x the HPA
// reference's scale actions); -1 without an HPA run.
int64_t action_budget_of(const std::vector<RunResult>& runs, const ScoreboardGoals& goals = {});
// R for the reversal-budget bound: floor(goals.max_reversals_ratio x HPA's reversals); -1
// without an HPA run.
int64_t reversal_budget_of(const std::vector<RunResult>& runs, const ScoreboardGoals& goals = {});
// A for the bound with the SLO allowance: the avoidable seconds the SLO goal allows on this
// trace (goals.avoidable_slo_factor x HPA's avoidable + goals.avoidable_slo_allowance_seconds,
// HPA's avoidable being its seconds above the SLO less the oracle's), in whole ticks of
// `tick_seconds`; -1 without an HPA run.
int64_t slo_allowance_ticks_of(const std::vector<RunResult>& runs, double tick_seconds,
                               const ScoreboardGoals& goals = {});

// The text table: one row per policy, then the traces on which each non-reference policy
// misses a goal, then (when computed) the action-budget bound per trace; a trace on which no
// policy can meet the worker-seconds and actions goals together is marked in both.
std::string format_scoreboard(const Scoreboard& board);

// {"goals", "traces", "peak_workers", "policies": [{label, policy, summary..., "goals":
// {"worker_seconds": bool, ...}, "traces": [{trace, kpis, ratios, verdicts}]}]}, numbers
// rounded like every report (rounded_json).
nlohmann::json scoreboard_to_json(const Scoreboard& board);

// The same table as HTML (a <table id="scoreboard"> and a note), for the sim report.
void write_scoreboard_table(std::ostringstream& out, const Scoreboard& board);

}  // namespace lagpilot::sim
