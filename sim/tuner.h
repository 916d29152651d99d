#pragma once
// `lagpilot tune`: searches a policy's parameters by replaying traces through the simulator.
//
// Objective (lower is better). For one run of a candidate on one trace:
//
//   objective_run = (worker_seconds + w_slo * seconds_above_slo + w_actions * scale_actions)
//                   / duration_seconds
//
// i.e. the mean pool size plus penalties, in "workers". Dividing by the trace's duration
// normalizes each trace, so a 1-hour and a 7-day trace weigh the same; a candidate's objective
// on a set of traces is the MEAN of its per-trace objectives. Defaults (ObjectiveWeights):
// w_slo = 100 worker-seconds per second above the lag SLO (being above the SLO 1 % of the time
// costs as much as one more worker around the clock), w_actions = 10 worker-seconds per scale
// action (a resize costs a rebalance and a warm-up; scaling once a minute costs ~0.17 workers).
//
// Search space (TuneSpace, JSON; errors are ConfigError with the JSON path):
//
//   { "policy": "pid",                                   optional; must match --policy
//     "fixed":  {"metric": "lag"},                       optional; untuned params
//     "params": { "kp":       {"min": 1e-4, "max": 0.02, "log": true},
//                 "setpoint": {"min": 100,  "max": 10000, "log": true, "points": 5},
//                 "steps[0].workers": {"min": 9, "max": 16, "integer": true} },
//     "weights": {"slo": 100, "actions": 10} }           optional; see ObjectiveWeights
//
// (the whole object may also sit under a top-level "tune" key). A parameter name is a path
// into the policy's params object: keys joined by '.', array elements as [i]. Each must name a
// number of the policy (checked at load). "log" searches log(value) uniformly (min > 0);
// "integer" rounds (it defaults to true for parameters whose default value is an integer);
// "points" is the grid's number of values for that parameter. Candidate params = `fixed`, with
// each tuned path set; a tuned path whose top-level key is absent from `fixed` starts from that
// key's resolved value (make_policy(policy, fixed)->params()). TuneSpace::default_for() has a
// built-in space for static, threshold, pid, hpa, keda and model.
//
// Strategies (TuneOptions::strategy), all on the normalized space [0, 1]^d (u -> value:
// linear or logarithmic between min and max, rounded to 6 significant digits; integers: one
// equal-width bucket of u per integer):
//   grid         every combination of `points` values per parameter (evenly spaced in u;
//                parameters without `points` share the budget: floor(budget^(1/d)) each, at
//                least 2); more combinations than the budget is an error.
//   random       uniform draws from a seeded generator until `budget` distinct configurations.
//   nelder-mead  `starts` independent Nelder-Mead searches (NelderMead below) run in lock step;
//                the first starts at the baseline params, the others at seeded random points; a
//                search that converges restarts at a new random point while budget remains.
// `budget` counts distinct configurations simulated (a repeat, e.g. after integer rounding, is
// answered from a cache). Every configuration is simulated on every train trace with the same
// SimConfig (same seed: the same arrivals for all candidates). With at least a run a thread, the
// runs of a round on one trace go to simulate_all() together (up to 8 a thread per call), which
// spreads them over the threads: they draw their arrival counts once, and while their pools are
// equal they take one model's samples (simulation.h). With fewer, each run is a job of its own
// and the traces run side by side. The proposals of a round never depend on the order in which
// runs finish, so the result depends only on the inputs and the seed, not on threads.
//
// Thread-safety: every free function and TuneSpace member is pure and may be called from any
// thread. tune() runs its simulations on TuneOptions::threads threads of its own and returns
// when they are done; its progress callback is called from those threads (or the caller's),
// one call at a time.
// A NelderMead object is a plain value: one owner.

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "policies/guards.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace lagpilot::sim {

struct ObjectiveWeights {
  double slo = 100.0;     // worker-seconds charged per second above the lag SLO (>= 0)
  double actions = 10.0;  // worker-seconds charged per scale action (>= 0)

  // Reads {"slo", "actions"}; throws ConfigError naming the path.
  static ObjectiveWeights from_json(const nlohmann::json& j, const std::string& path);
  // Parses "slo=100,actions=10" on top of `base` (a key left out keeps base's value); throws
  // ConfigError naming `where` for a malformed or negative value or an unknown key.
  static ObjectiveWeights parse(const std::string& text, const ObjectiveWeights& base,
                                const std::string& where = "--weights");
  nlohmann::json to_json() const;
  // "(worker_s + 100 x s_above_slo + 10 x scale_actions) / duration, mean over traces"
  std::string describe() const;
};

// The objective of one run (see the header comment): in workers, +infinity when the run has no
// duration.
double run_objective(const Kpis& kpis, const ObjectiveWeights& weights);

// One tuned parameter.
struct TuneParam {
  std::string name;  // path into the params object: "kp", "steps[0].above"
  double min = 0.0;
  double max = 1.0;
  bool log_scale = false;
  bool integer = false;
  int points = 0;  // grid values for this parameter; 0 = shared out of the budget

  // u in [0, 1] (clamped) -> value (see the header comment).
  double value_at(double u) const;
  // value -> u in [0, 1] (clamped): the inverse of value_at up to rounding.
  double position_of(double value) const;
};

struct TuneSpace {
  std::string policy;
  nlohmann::json fixed = nlohmann::json::object();
  std::vector<TuneParam> params;  // in the order of the JSON "params" object (sorted names)
  bool has_weights = false;       // the spec gave "weights"
  ObjectiveWeights weights;

  // Reads a spec (see the header comment). `policy` is the policy being tuned: the spec's own
  // "policy", when present, must equal it; "" takes the spec's (then it is required). Throws
  // ConfigError: "tune.params.kp.min: must be < max (0.01), got 0.02", "tune.params.kq: not a
  // numeric parameter of policy pid (numeric parameters: dead_band, ...)".
  static TuneSpace from_json(const nlohmann::json& j, const std::string& policy = "",
                             const std::string& path = "tune");
  nlohmann::json to_json() const;
  // The built-in space of a policy (static, threshold, pid, hpa, keda, model, hybrid), worker
  // counts within [guards.min_workers, guards.max_workers]; docs/tune.md lists them. Throws
  // ConfigError ("--policy") for a policy without one: pass a --space file then.
  static TuneSpace default_for(const std::string& policy, const GuardConfig& guards);

  // Parameter values (one per params entry) at a point of [0, 1]^d.
  std::vector<double> values_at(const std::vector<double>& u) const;
  // The params object of a candidate: `fixed` with each tuned path set (integers as JSON
  // integers). Not validated: make_policy() judges it.
  nlohmann::json params_for(const std::vector<double>& values) const;
  // The point of [0, 1]^d where `params` (a full params object of the policy) sits, each
  // coordinate clamped; a path missing from `params` gives 0.5.
  std::vector<double> position_of(const nlohmann::json& params) const;
  // "kp=0.002 ki=0.0001": the tuned values of a candidate.
  std::string describe(const std::vector<double>& values) const;
};

// Reads the number at a parameter path ("steps[0].above") of a params object into `out`;
// false when the path does not lead to a number. Throws ConfigError (at `where`) for a
// malformed path.
bool param_at(const nlohmann::json& params, const std::string& path, double& out,
              const std::string& where = "path");

// Indices of the points that no other point dominates, minimizing both coordinates (a
// dominates b: a.first <= b.first and a.second <= b.second, one of them strictly). Equal
// points are all on the front. Sorted by first coordinate, then second, then index. Points
// with a NaN or infinite coordinate are never on the front.
std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& points);

// Algorithm: Nelder-Mead downhill simplex (Nelder & Mead 1965, standard coefficients:
// reflection 1, expansion 2, contraction 0.5, shrink 0.5) on the box [0, 1]^d, as an
// ask/tell state machine so a caller can evaluate many searches' points in parallel.
// The simplex starts at `start` plus `initial_step` along each axis (minus, where plus would
// leave the box). Each iteration reflects the worst vertex through the centroid of the others;
// a reflection better than the best is tried further (expansion); one no better than the
// second worst is pulled back (outside or inside contraction); if that fails too, every vertex
// shrinks toward the best. Every point is projected onto the box (coordinates clamped), which
// keeps the search bounded. It converges when every vertex lies within `tolerance` (max norm)
// of the best one; then ask() returns nothing. Ties keep the older vertex (stable sort), so a
// run is a deterministic function of the values told.
class NelderMead {
 public:
  NelderMead(std::vector<double> start, double initial_step = 0.25, double tolerance = 1e-3);

  // The points to evaluate next (1 point, or d + 1 at the start, or d after a shrink); empty
  // once converged. Calling ask() twice without tell() returns the same points.
  const std::vector<std::vector<double>>& ask() const { return pending_; }
  // The values of the points ask() returned, in the same order. Throws std::invalid_argument
  // on a count mismatch.
  void tell(const std::vector<double>& values);

  bool converged() const { return pending_.empty(); }
  // The best vertex so far and its value (+infinity before the first tell()).
  const std::vector<double>& best_point() const;
  double best_value() const;
  int iterations() const { return iterations_; }

 private:
  enum class Stage { kInit, kReflect, kExpand, kContractOutside, kContractInside, kShrink };
  void sort_simplex();
  void next_iteration();  // checks convergence, then proposes the reflection
  std::vector<double> toward(const std::vector<double>& from, const std::vector<double>& to,
                             double factor) const;  // clamp(from + factor * (to - from))

  std::size_t dims_;
  double tolerance_;
  std::vector<std::vector<double>> simplex_;
  std::vector<double> values_;
  std::vector<double> centroid_;
  std::vector<double> reflected_;
  double reflected_value_ = std::numeric_limits<double>::infinity();
  Stage stage_ = Stage::kInit;
  std::vector<std::vector<double>> pending_;
  int iterations_ = 0;
};

struct TuneProgress {
  int done = 0;   // distinct configurations simulated so far
  int total = 0;  // the budget (grid: its size)
  // Best objective among the configurations finished so far (+infinity before the first).
  double best_objective = std::numeric_limits<double>::infinity();
};

struct TuneOptions {
  std::string strategy = "random";  // grid | random | nelder-mead
  int budget = 100;                 // distinct configurations to simulate (>= 1)
  uint64_t seed = 1;                // search randomness (random draws, Nelder-Mead starts)
  int threads = 0;                  // simulation threads; 0 = std::thread::hardware_concurrency
  int starts = 2;                   // nelder-mead: searches in lock step (>= 1)
  ObjectiveWeights weights;
  // Where the nelder-mead's first start begins and what the report calls the baseline: the
  // policy's params (null = make_policy(policy, space.fixed)'s).
  nlohmann::json baseline = nullptr;
  // Called as configurations finish (from the simulation threads or the caller's, never two at
  // once). May be empty.
  std::function<void(const TuneProgress&)> progress;
  // Params of the policy simulated on every train trace beside the first round's
  // configurations (the report's baseline), outside the search and the budget: they join that
  // round's groups of runs (see the header comment) instead of taking a round of their own
  // afterwards. Each must be valid (ConfigError otherwise). TuneResult::extra_kpis holds their
  // KPIs, the same as evaluate_on() gives with the same SimConfig.
  std::vector<nlohmann::json> extra_params;
};

// One distinct configuration and how it did on the train traces.
struct TuneEvaluation {
  std::vector<double> values;  // one per TuneSpace::params (integers rounded)
  nlohmann::json params;       // the full params (Policy::params()), or the candidate if invalid
  double objective = std::numeric_limits<double>::infinity();  // mean over train traces
  double worker_seconds = 0.0;                                 // sums over train traces
  double seconds_above_slo = 0.0;
  int scale_actions = 0;
  std::vector<Kpis> kpis;  // per train trace
  bool on_pareto_front = false;
  std::string error;  // non-empty: make_policy rejected the params (objective +infinity)
};

struct TuneResult {
  std::string policy;
  std::string strategy;
  std::vector<TuneEvaluation> evaluations;    // distinct configurations, in order of proposal
  std::size_t best = 0;                       // index of the lowest objective (first on ties)
  std::vector<std::size_t> pareto_front;      // worker_seconds vs seconds_above_slo, see above
  int proposals = 0;                          // candidates proposed, repeats included
  int rounds = 0;                             // parallel rounds run
  std::vector<std::vector<Kpis>> extra_kpis;  // per TuneOptions::extra_params, per train trace

  const TuneEvaluation& best_evaluation() const { return evaluations.at(best); }
};

// Runs the search (see the header comment) on the `train` traces with `guards` and `config`
// (record_series and max_decisions are turned off for speed). Throws std::invalid_argument
// for bad options (unknown strategy, budget < 1, no traces, a grid larger than the budget),
// ConfigError for a bad space, std::runtime_error when no candidate was valid.
TuneResult tune(const TuneSpace& space, const std::vector<Trace>& train, const GuardConfig& guards,
                const SimConfig& config, const TuneOptions& options);

// One configuration on a set of traces (the held-out report).
struct SetEvaluation {
  std::vector<RunResult> runs;  // one per trace, labelled with the trace's source
  double objective = std::numeric_limits<double>::infinity();  // mean of run_objective
  double worker_seconds = 0.0;                                 // sums
  double seconds_above_slo = 0.0;
  int scale_actions = 0;
};

// The SetEvaluation of runs already simulated: one run per trace (labelled with its source,
// only `label` and `kpis` set) and the aggregates, computed as evaluate_on() computes them.
SetEvaluation set_evaluation(const std::vector<Kpis>& kpis, const std::vector<Trace>& traces,
                             const ObjectiveWeights& weights);

// Simulates `params` of `policy` on every trace (in `threads` threads; 0 = all cores). Runs
// keep their series when config.record_series. Throws ConfigError for bad params.
SetEvaluation evaluate_on(const std::string& policy, const nlohmann::json& params,
                          const std::vector<Trace>& traces, const GuardConfig& guards,
                          const SimConfig& config, const ObjectiveWeights& weights,
                          int threads = 0);
// The same for several parameter sets (one SetEvaluation each, in order), their runs in one pool
// of jobs: the tune report's best and baseline on one long trace take one run's time on two
// threads instead of two runs' one after the other.
std::vector<SetEvaluation> evaluate_on(const std::string& policy,
                                       const std::vector<nlohmann::json>& params,
                                       const std::vector<Trace>& traces, const GuardConfig& guards,
                                       const SimConfig& config, const ObjectiveWeights& weights,
                                       int threads = 0);

// {"policy", "strategy", "space", "weights", "objective", "proposals", "evaluations": [{"params",
// "values", "objective", "worker_seconds", "seconds_above_slo", "scale_actions",
// "on_pareto_front", "error"?}], "pareto_front": [indices], "best": index}. Floats rounded to 9
// significant digits (stable output); an infinite objective is written as null.
nlohmann::json to_json(const TuneResult& result, const TuneSpace& space,
                       const ObjectiveWeights& weights);

}  // namespace lagpilot::sim
