#pragma once
// The clairvoyant oracle: the fewest worker-seconds with which ANY policy could have kept the lag
// of a trace within the SLO, given that it knew every future arrival. A floor for `lagpilot sim`
// to measure policies against ("pid spends 1.4x the oracle's worker-seconds").
//
// Model (the fluid model of the simulator):
//   - Time is cut into control ticks of T = SimConfig::tick_seconds; tick k (k = 0 .. K-1, with
//     K = ceil(trace duration / T)) is [k T, (k+1) T). The pool size n_k is constant within a tick
//     and changes only at tick boundaries, as in the simulator (the decision taken at (k+1) T sets
//     n_{k+1}); n_0 = SimConfig::initial_workers, productive at once; n_k for k >= 1 lies within
//     the guards' [min_workers, max_workers]. Worker-seconds = T * sum n_k (warming workers count,
//     as in Kpis::worker_seconds).
//   - A worker added at time t is productive from t + W, W = model.warmup_seconds. Shrinking
//     removes the newest workers first (warming ones before productive ones), as ConsumerModel
//     does, so the productive count at time t is the smallest pool size over [t - W, t].
//   - Lag is a fluid: lag' = arrivals(t) - capacity(productive(t)) while lag > 0, and lag stays at
//     0 when the consumer keeps up; capacity(N) is ConsumerModelConfig::capacity (USL curve,
//     downstream cap). The SLO is checked on the lag sampled at every tick end ((k+1) T), exactly
//     what Kpis::seconds_above_slo counts; between samples the lag may be anything.
//
// Decisions are per control tick, not per trace bin: a policy may resize at every tick, so an
// oracle that could only resize per bin would not be a lower bound (and the SLO is sampled per
// tick). Guards other than the bounds (step limits, stabilization, latency ceiling) only restrict
// policies further, so the oracle ignores them: its figure is a floor under any guard settings.
//
// Objective, lexicographic: (1) the fewest ticks with lag above the SLO, then (2) the fewest
// worker-seconds. (1) is solved exactly by one forward pass: with every productive worker it can
// get (max workers from the first decision on; more precisely the count with the highest
// capacity, see "capacity" below) the lag is pointwise the smallest any schedule can have, so the
// ticks at which even that lag is above the SLO (the "unavoidable" ticks, U) are above it under
// every schedule, and that schedule is above it nowhere else. (2) then minimizes worker-seconds
// subject to lag <= SLO at every tick outside U. When U is empty (the usual case) this is "the
// fewest worker-seconds that keep lag within the SLO"; when not, the trace is infeasible even at
// max workers and OracleResult says so (unavoidable_ticks > 0).
//
// Algorithm for (2): a dynamic program that is exact over continuous lag.
//   Step 1, warm-up as a cost. Let p_k be the productive count in tick k. In an optimal schedule
//   no worker is removed before it became productive (dropping it and the workers added above it
//   while they warm changes no productive count and costs less), so every worker's life is
//   "warm for W, then productive"; and a worker that is idle-dropped and re-added within W might
//   as well have stayed. Both facts give (proof by the usual layer argument: worker h of the
//   stack is present on its productive runs extended W to the left) that the minimum cost of a
//   schedule whose productive counts are p is
//         sum_k p_k + m * (number of unit increases of p),   W = (m + f) T, m whole, 0 <= f < 1
//   when p has no dip shorter than the warm-up, and at most that otherwise; and that removing
//   short dips only adds capacity at no cost. So the problem becomes: choose p_k directly, pay
//   p_k per tick plus m per worker added, and let added workers be productive at once (subject
//   only to "no additions before the first warm-up has elapsed"). The pool schedule is then
//   n_k = max(p_k .. p_{k+m}) (the workers warming for the next m ticks). With f > 0 a worker
//   added at a tick boundary becomes productive a fraction f into the m-th tick after: each
//   tick is then split at f T, removals happen at its start and additions become productive at
//   f T (charged for the m ticks before, from the boundary where they were added).
//   Step 2, the DP. State at a tick boundary: (q, L) = productive count and lag. With costs
//   integral (worker-ticks) and the lag map of a tick L -> max(a, L + b) monotone, the value
//   V_k(q, .) is a non-decreasing step function of the lag, stored exactly as the largest lag at
//   which each cost level is still reachable (no lag grid, no rounding). The backward step is
//   one transform of each function through the tick's lag map (clipping at the SLO), a running
//   minimum over "add workers" (cost m each) and one over "remove workers" (free): O(P * D) per
//   tick for P worker counts and D cost levels between the smallest and the largest reachable
//   lag. A forward pass then picks, tick by tick, a cheapest choice that realizes V.
//   (Why not greedy: "fewest workers now", even within the largest lag from which the rest stays
//   feasible, is not optimal once capacity has diminishing returns: one worker added early, at a
//   low pool size, can drain what would take several workers later at a high one.)
//   Step 3, speed: a calm stretch (arrivals below capacity(min_workers), long enough to drain any
//   reachable lag and to re-warm) splits the trace: by an exchange argument some optimal schedule
//   sits at min_workers with lag 0 inside it, so the busy segments between calm stretches are
//   solved independently (the World Cup 98 trace is mostly calm). Long segments keep the value
//   functions only at checkpoints and recompute each block between two of them just before the
//   forward pass reads it: blocks of 64 ticks, short enough to be read back from the cache, as
//   long as that keeps no more sets than checkpoints every OracleOptions::checkpoint_ticks would.
//   Cost: about 4 us per busy tick with workers in [4, 16] (D ~ 120; every tick is computed
//   twice), near nothing per calm one: the 87-day World Cup 98 trace at 1 s ticks (2.8 % busy)
//   takes ~1.2 s of CPU, a trace that is busy throughout (NYC taxi at --speedup 1, 18.6 M ticks)
//   minutes.
// The trace's end is free: the oracle may end with the lag at the SLO (as could a policy).
//
// Self-checks: the pool schedule is replayed through an independent fluid evaluator
// (evaluate_fluid, which simulates the worker stack itself); its worker-ticks must equal the DP's
// optimum (OracleResult::bound_worker_ticks) and its SLO violations must be exactly U.
//
// Capacity must not decrease with more workers over [min(initial, min_workers), best], where
// best is the smallest count in [min_workers, max_workers] with the highest capacity; the oracle
// never uses more than `best` (more would cost more and drain less). A USL curve satisfies this
// unless min_workers lies past its peak (std::invalid_argument then).
//
// What the bound covers: the fluid model. The simulator adds noise (Poisson arrivals, service
// time variance) and a retiring worker finishes the message or batch in hand, so a lucky run can
// beat the fluid bound by a little; real policies are far from it. A schedule that rides the SLO
// exactly is, under that noise, above it about half the time: that is why the "oracle" run
// reports the fluid KPIs of its own schedule (comparable worker-seconds; the lag columns are the
// fluid's), and replay_schedule() offers the simulator's view of the same schedule.
//
// Thread-safety: pure functions of their arguments; call them from any thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policies/guards.h"
#include "policies/policy.h"
#include "sim/simulation.h"
#include "sim/trace.h"
#include "sim/worker_schedule.h"

namespace lagpilot::sim {

struct OracleOptions {
  // Split the trace at calm stretches (exact, see above). Off: one DP over the whole trace.
  bool split_at_calm = true;
  // Long segments keep the DP's value functions every this many ticks (>= 1), or more often
  // when that keeps no more of them (see "speed" above), and recompute the ticks in between
  // during the forward pass: memory ~ (segment / checkpoint_ticks + checkpoint_ticks) P D doubles.
  int checkpoint_ticks = 1024;
  // A price, in worker-ticks, on every tick in which the productive count changes (a removal, an
  // addition becoming productive, or both): the DP then minimizes worker-ticks + change_price x
  // changes, exactly (integral, like every cost of the DP). 0 (the default) is the oracle itself,
  // decision for decision. With a price the calm-stretch split is off (its exchange argument
  // does not hold: holding a raised pool through a calm stretch may beat two priced changes), so
  // the DP runs over the whole trace. Used by action_budget_bound (sim/action_bound.h).
  int64_t change_price = 0;
  // A price, in worker-ticks, on every change of the productive count against the direction of
  // the previous change (a reversal). The DP then keeps the last change's direction in its state
  // (three times the work) and needs a warm-up of whole ticks. 0: off. Used by
  // reversal_budget_bound (sim/action_bound.h).
  int64_t reversal_price = 0;
  // A soft SLO, for bounds on schedules that spend some ticks above it (sim/action_bound.h):
  // above 0 (and at least the lag SLO), a tick outside U may end with any lag up to this
  // ceiling, and each tick that ends above the SLO pays slo_price worker-ticks (>= 0). 0 (the
  // default): the SLO is a hard cap outside U, as the oracle's objective says. The ceiling is a
  // constraint of its own: choose it above every lag the schedules to be bounded can reach.
  // Like the prices it turns the calm-stretch split off.
  double lag_ceiling = 0.0;
  int64_t slo_price = 0;
};

struct OracleResult {
  // Pool size during tick k = [k T, (k+1) T), k = 0 .. K-1; workers[0] = initial_workers. Kept
  // as runs: its memory grows with the schedule's changes, not with the trace's length.
  WorkerSchedule workers;
  int64_t worker_ticks = 0;  // sum of workers (worker-seconds / T)
  // The DP's optimum; equals worker_ticks (a self-check). With a change price: the worker-ticks
  // of the DP's schedule, priced_optimum - change_price x productive_changes (worker_ticks, the
  // pool's, may be less if that schedule has a dip shorter than the warm-up); with a reversal
  // price, minus reversal_price x productive_reversals too, and slo_price x priced_slo_ticks.
  int64_t bound_worker_ticks = 0;
  int64_t change_price = 0;          // OracleOptions::change_price
  int64_t priced_optimum = 0;        // min over schedules of worker-ticks + the prices
  int64_t productive_changes = 0;    // ticks in which the DP schedule's productive count changes
  int64_t reversal_price = 0;        // OracleOptions::reversal_price
  int64_t productive_reversals = 0;  // ... its changes against the previous one (with the price)
  double lag_ceiling = 0.0;          // OracleOptions::lag_ceiling
  int64_t slo_price = 0;             // OracleOptions::slo_price
  // Ticks outside U at whose end the DP schedule's lag is above the SLO (with a lag ceiling).
  int64_t priced_slo_ticks = 0;
  int64_t unavoidable_ticks = 0;  // ticks above the SLO even at max workers (|U|)
  // Of `workers` in the fluid model; equals unavoidable_ticks (with a lag ceiling it may be more).
  int64_t ticks_above_slo = 0;
  int warmup_ticks = 0;            // m: whole ticks a new worker is charged before it is productive
  double warmup_fraction = 0.0;    // f: W = (m + f) T
  int best_workers = 0;            // the highest-capacity count the oracle allows itself
  int64_t dp_ticks = 0;            // ticks solved by the DP (the rest are calm: min_workers)
  int segments = 0;                // busy segments solved independently
  int64_t forward_mismatches = 0;  // forward-pass choices that did not realize V (0 unless a bug)
  double mean_levels = 0.0;        // D: cost levels per value function, mean over DP states
  int64_t max_levels = 0;          // ... and the largest
  // The schedule as a run for reports: label and policy "oracle", fidelity "fluid", the fluid
  // KPIs of `workers` (series and decisions as SimConfig asks), params describing the bound.
  RunResult run;

  bool feasible() const { return unavoidable_ticks == 0; }
};

// Solves the oracle for `trace` under `config` (tick, lag SLO, consumer model, initial workers,
// series options) and the bounds of `guards`. Throws std::invalid_argument for an unusable
// trace, config or bounds (naming what), or a capacity curve the oracle cannot handle.
OracleResult solve_oracle(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                          const OracleOptions& options = {});

// The fluid model's view of any pool schedule (workers[k] = pool during tick k, workers[0] the
// initial pool, productive at once; K entries, K = ceil(duration / T)): per-tick lag and the KPIs
// the simulator would report (lag sampled at tick ends; wait and service times from Little's law).
// Independent of the oracle's DP: it simulates the worker stack (warm-up, newest removed first).
struct FluidRun {
  std::vector<double> lag;      // at the end of each tick (evaluate_fluid only)
  std::vector<int> productive;  // productive workers at the end of each tick (evaluate_fluid only)
  Kpis kpis;
};
FluidRun evaluate_fluid(const Trace& trace, const SimConfig& config, const WorkerSchedule& workers);

// A Policy that plays back a pool schedule: at the tick ending at time (k+1) T it asks for
// workers[k+1] (the pool of the next tick); past the end it repeats the last entry. Name
// "schedule". Not thread-safe (like every Policy).
class SchedulePolicy : public Policy {
 public:
  SchedulePolicy(WorkerSchedule workers, double tick_seconds);
  std::string name() const override { return "schedule"; }
  Proposal decide(const Observation& obs) override;
  nlohmann::json params() const override;

 private:
  WorkerSchedule workers_;
  std::size_t run_ = 0;  // the run of the last tick asked for (WorkerSchedule::at)
  double tick_seconds_;
};

// Replays a pool schedule through the real simulator (same arrivals and seeds as every other run
// with `config`), with guards reduced to the bounds of `guards` (no step limits, stabilization or
// latency ceiling, which would bend the schedule). Worker-seconds equal the schedule's exactly;
// lag KPIs include the simulator's noise.
RunResult replay_schedule(const Trace& trace, const WorkerSchedule& workers,
                          const std::string& label, const GuardConfig& guards,
                          const SimConfig& config);

}  // namespace lagpilot::sim
