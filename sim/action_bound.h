#pragma once
// The fewest worker-seconds with which ANY schedule could keep the lag within the SLO (outside
// the oracle's unavoidable ticks) while taking at most K scale actions: a lower bound that says
// whether the worker-seconds goal (<= 1.15x the oracle's) and the scale-actions goal (<= 0.5x
// HPA's, so K = floor(0.5 x HPA's actions)) can be met together on a trace, by any policy.
//
// Algorithm: Lagrangian relaxation of the action budget, solved by the oracle's exact DP.
//   For a price lambda >= 0 (integral, in worker-ticks) the oracle with
//   OracleOptions::change_price = lambda computes exactly
//         V(lambda) = min over the DP's schedules p of  cost(p) + lambda x changes(p)
//   (cost: the oracle's worker-tick cost model, sim/oracle.h; changes: ticks in which the
//   productive count changes). Weak duality: for every schedule p with changes(p) <= K,
//   V(lambda) - lambda K <= cost(p) + lambda (changes(p) - K) <= cost(p). So every
//         g(lambda) = V(lambda) - lambda K
//   is a lower bound on the least cost with at most K changes, and we report the largest found.
//   g is concave and piecewise linear in lambda; the changes of a DP optimum at lambda are a
//   supergradient (g(mu) <= g(lambda) + (changes - K)(mu - lambda) for every mu). The search:
//   lambda = 0 (the oracle; if it changes at most K times the bound is the oracle itself), then
//   doubling until an optimum changes at most K times, then on the integers between the last two
//   prices: the crossing of the two supergradient lines (alternating with bisection), stopping
//   when the interval is one wide, a supergradient is 0 (the bound is then exact: that schedule
//   has K changes and cost g), or the crossing's value shows no integer g can beat the best.
//   If even a price above any cost difference (every schedule then has the fewest changes
//   possible) leaves more than K changes, no schedule with at most K actions keeps the SLO; the
//   prices tried stop at ActionBoundOptions::max_price, so that proof needs the difference to be
//   below it (small traces).
//
// Why it bounds every policy, not only the DP's schedules: take any pool schedule n (the pool
// size per tick, as a policy produces it) with A scale actions, C worker-ticks and a fluid lag
// within the SLO outside the unavoidable ticks. Its productive count is the sliding minimum
// p(t) = min of n over [t - W, t] (W the warm-up; shrinking removes warming workers first).
//   - Changes: p changes at t only if n steps down at t (a new minimum enters the window) or n
//     steps up at t - W (the old minimum leaves it). A step down of n at s cannot also change p
//     at s + W (the lower value after it is still in the window), and a step up cannot change p
//     at s (a higher value entering moves no minimum). So every action of n changes p at most
//     once, and the ticks in which p changes number at most A.
//   - Cost: by layers (worker h present while n >= h), each run of layer h longer than W (or
//     present from the start) yields one productive run, charged by the DP its length plus m
//     ticks of warm-up (m + f = W / T), i.e. the pool run's own length; shorter runs yield
//     nothing. So the DP's cost of p is at most C.
//   - Bounds: p lies in [min_workers, max_workers]; clipping it at the oracle's best count (the
//     highest capacity, sim/oracle.h) loses no capacity, costs no more and adds no change.
//   So min(p, best) is one of the DP's schedules, no lag above the pool's anywhere, with at most
//   A changes and cost at most C: the bound holds for n. Hence "bound / oracle > 1.15" means no
//   policy can meet the worker-seconds goal and the actions goal together on that trace (in the
//   fluid model, as the oracle itself: simulator noise may move a real run a little either way).
//
// The SLO allowance: the SLO goal lets a policy spend some avoidable ticks above the SLO (A, in
// ActionBoundOptions::slo_allowance_ticks), which could buy back worker-seconds. With A = 0 the
// bound keeps the lag within the SLO outside the unavoidable ticks U, as the oracle does. With
// A > 0 it bounds every schedule with at most A ticks above the SLO outside U, by a second
// Lagrange multiplier: the DP runs with a soft SLO (OracleOptions::lag_ceiling, slo_price sigma:
// a tick ending above the SLO, outside U, pays sigma), and
//         g(price, sigma) = V(price, sigma) - price K - sigma A
// is a lower bound for every price and sigma >= 0, by the same weak duality. The argument above
// carries over: the clipped sliding minimum p of a schedule n has a lag no higher than n's, so
// no more ticks above the SLO. The soft DP also needs a finite lag ceiling C, a constraint of its
// own; C is chosen so that no schedule with at most |U| + A ticks above the SLO can exceed it
// (a run of ticks above the SLO is at most that long, and within it the lag rises at most by the
// arrivals less what the fewest workers serve: lag_ceiling_of in action_bound.cpp), so it cuts
// off none of the schedules bounded. The search: for each sigma, the price search as above
// (started at the last sigma's best price); over sigma, which h(sigma) = max over the price of g
// is concave in, doubling from 0 until the best probe's ticks above the SLO are at most A, then
// bisection on the integers, at most ActionBoundOptions::max_slo_prices values of sigma.
//
// Upper side: at every probed price the DP's pool schedule is replayed through the fluid model
// (evaluate_fluid); if it takes at most K actions and keeps the SLO, it is a real schedule with
// at most K actions, and its worker-ticks bound the least cost from above (the "witness"; the
// cheapest one is kept).
//
// Thread-safety: a pure function of its arguments.

#include <cstdint>
#include <vector>

#include "policies/guards.h"
#include "sim/oracle.h"
#include "sim/simulation.h"
#include "sim/trace.h"
#include "sim/worker_schedule.h"

namespace lagpilot::sim {

// Cost: each probe is a whole-trace DP (no calm split; three times the states with a reversal
// price), and its value functions hold one level per worker-tick of cost over the reachable
// lags, so a high price (one change or reversal worth 10^4-10^6 worker-ticks, which a budget
// far below the oracle's own count needs) makes a probe far slower than the oracle.
struct ActionBoundOptions {
  // At most this many DP solves (each a whole-trace oracle, no calm split); the bound is valid
  // whenever the search stops, only perhaps not the largest.
  int max_solves = 40;
  // The highest price tried (a memory bound: a value function holds about one level per
  // worker-tick of price, and a 24 GB machine ran out of memory at 10^6). Above it the search
  // stops with the bound it has (valid, perhaps not the largest), and a budget that no schedule
  // meets is then not proven infeasible.
  int64_t max_price = int64_t{1} << 15;
  // A: ticks above the SLO outside the unavoidable ones that the bounded schedules may have (the
  // SLO goal's allowance, in ticks). 0: none, the lag within the SLO (as the oracle). With A > 0
  // max_solves counts per value of the SLO price, and at most max_slo_prices are tried.
  int64_t slo_allowance_ticks = 0;
  int max_slo_prices = 8;
  OracleOptions oracle;  // checkpoint_ticks; split_at_calm is moot (off with a price)
};

// One price tried.
struct ActionBoundProbe {
  int64_t price = 0;
  int64_t slo_price = 0;       // sigma (0 without an SLO allowance)
  int64_t priced_optimum = 0;  // V(price)
  int64_t changes = 0;         // of the DP optimum found, or its reversals (a supergradient + K)
  int64_t value = 0;           // g(price) = V(price) - price x K (- sigma A): a lower bound
  int64_t slo_ticks = 0;       // the DP optimum's ticks above the SLO outside U (soft SLO)
  int pool_actions = 0;        // scale actions of its pool schedule (fluid replay)
  int pool_reversals = 0;      // ... and its direction reversals
  int64_t pool_worker_ticks = 0;
  int64_t pool_slo_ticks = 0;   // ... and its ticks above the SLO outside the unavoidable ones
  bool pool_keeps_slo = false;  // pool_slo_ticks <= A (no such tick when A = 0)
};

struct ActionBound {
  bool reversals = false;           // the budget counts reversals (reversal_budget_bound)
  int64_t budget = 0;               // K (or R)
  int64_t slo_allowance_ticks = 0;  // A
  double lag_ceiling = 0.0;         // C, the soft SLO's ceiling (A > 0)
  double tick_seconds = 1.0;
  int64_t oracle_worker_ticks = 0;  // price 0: the oracle's optimum
  int oracle_actions = 0;           // ... and its pool's scale actions
  int64_t unavoidable_ticks = 0;
  // False: even at a price above any cost difference the DP needs more than K changes: no
  // schedule with at most K actions keeps the SLO (bound_worker_ticks is then meaningless).
  bool budget_feasible = true;
  int64_t bound_worker_ticks = 0;  // the largest g found: a lower bound
  int64_t best_price = 0;          // where
  int64_t best_slo_price = 0;      // ... and at which sigma
  bool exact = false;  // a DP optimum within the budgets, each priced one used up, attained it
  bool has_witness = false;  // a real schedule with <= K actions within the SLO (or A ticks off)
  int64_t witness_worker_ticks = 0;  // its worker-ticks (an upper bound on the least)
  int witness_actions = 0;
  int witness_reversals = 0;
  int64_t witness_slo_ticks = 0;
  int64_t witness_price = 0;
  std::vector<ActionBoundProbe> probes;  // in the order tried

  double oracle_worker_seconds() const { return double(oracle_worker_ticks) * tick_seconds; }
  double bound_worker_seconds() const { return double(bound_worker_ticks) * tick_seconds; }
  double witness_worker_seconds() const { return double(witness_worker_ticks) * tick_seconds; }
  // bound / oracle (+infinity when the budget is infeasible).
  double bound_ratio() const;
  // witness / oracle (NaN without a witness).
  double witness_ratio() const;
};

// The bound for budget K >= 0 on `trace` under `config` and the bounds of `guards` (as
// solve_oracle). Throws std::invalid_argument as solve_oracle does, and for K < 0.
ActionBound action_budget_bound(const Trace& trace, const SimConfig& config,
                                const GuardConfig& guards, int64_t budget,
                                const ActionBoundOptions& options = {});

// The same for a budget of R direction reversals (a change against the previous change's
// direction, as Kpis::reversals counts them), with OracleOptions::reversal_price in place of the
// change price: the least worker-seconds with at most R reversals (any number of actions). The
// DP keeps the last change's direction in its state. The argument above carries over, with
// reversals counted as the interior turning points (plateaus below or above both neighbours) of
// a step function: the sliding minimum p of n has no more of either kind than n. A low plateau
// of p at v on [a, b] needs n = v somewhere in [a, b - W] with n > v just before a and on
// (b - W, b]: a low plateau of n inside [a, b - W]. A high plateau of p at v on [a, b] needs
// n >= v on [a - W, b] with n < v just before a - W and just after b: a high plateau of n there;
// and two high plateaus of p are separated by a low one of p, so by a point of n below both
// (in (b1, a2 - W]): their plateaus of n are distinct. Clipping at best merges plateaus only.
// Needs a warm-up of whole ticks (std::invalid_argument otherwise). The witness: a schedule with
// at most R reversals (its actions reported).
ActionBound reversal_budget_bound(const Trace& trace, const SimConfig& config,
                                  const GuardConfig& guards, int64_t budget,
                                  const ActionBoundOptions& options = {});

// Both budgets at once (K actions and R reversals), from the two searches above and a few
// probes with both prices on (the searches' best prices, halved and doubled): the lower bound is
// the largest V(change, reversal) - change K - reversal R over every probe (weak duality again;
// the 1-D bounds are its probes with one price at 0), the witness the cheapest probe schedule
// with at most K actions and R reversals that keeps the SLO (over every probe of all three).
struct JointBound {
  int64_t bound_worker_ticks = 0;
  bool budget_feasible = true;  // false when either search found its budget infeasible
  bool has_witness = false;
  int64_t witness_worker_ticks = 0;
  int witness_actions = 0;
  int witness_reversals = 0;
  int solves = 0;  // the extra probes with both prices
};
JointBound joint_budget_bound(const Trace& trace, const SimConfig& config,
                              const GuardConfig& guards, const ActionBound& by_actions,
                              const ActionBound& by_reversals);
// The verdict of a joint bound against the oracle's worker-ticks (as action_budget_verdict).
const char* joint_budget_verdict(const JointBound& b, int64_t oracle_worker_ticks,
                                 double max_worker_seconds_ratio);

// "possible", "impossible" or "open" for meeting worker-seconds <= ratio x the oracle's with at
// most K actions: impossible when the bound (or an infeasible budget) rules it out, possible
// when the witness meets it (fluid model), open otherwise.
const char* action_budget_verdict(const ActionBound& b, double max_worker_seconds_ratio);

}  // namespace lagpilot::sim
