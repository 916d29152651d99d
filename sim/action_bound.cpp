#include "sim/action_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/fluid_lag.h"
#include "sim/oracle_solver.h"

namespace lagpilot::sim {
namespace {

class Search {
 public:
  Search(const Trace& trace, const SimConfig& config, const GuardConfig& guards, int64_t budget,
         const ActionBoundOptions& options, ActionBound& out)
      : reversals_(out.reversals),
        trace_(trace),
        config_(config),
        guards_(guards),
        budget_(budget),
        options_(options),
        out_(out) {}

  ActionBoundProbe probe(int64_t price) {
    OracleOptions o = options_.oracle;
    (reversals_ ? o.reversal_price : o.change_price) = price;
    // Checkpoints every ~sqrt(ticks): the memory of a priced DP (long value functions) is
    // (ticks / every + every) value-function sets.
    const auto ticks = static_cast<double>(fluid::tick_count(trace_, config_.tick_seconds));
    o.checkpoint_ticks =
        std::clamp(static_cast<int>(std::sqrt(ticks)), 16, options_.oracle.checkpoint_ticks);
    const OracleResult r = fluid::solve_schedule(trace_, config_, guards_, o);
    if (r.forward_mismatches != 0) {
      throw std::logic_error(
          "action_budget_bound: the DP's forward pass missed its optimum at "
          "price " +
          std::to_string(price));
    }
    ++solves_;
    ActionBoundProbe p;
    p.price = price;
    p.priced_optimum = r.priced_optimum;
    p.changes = reversals_ ? r.productive_reversals : r.productive_changes;
    p.value = r.priced_optimum - price * budget_;
    const FluidRun fluid = evaluate_fluid(trace_, config_, r.workers);
    p.pool_actions = fluid.kpis.scale_actions;
    p.pool_reversals = fluid.kpis.reversals;
    p.pool_worker_ticks = r.worker_ticks;
    const int64_t above = std::llround(fluid.kpis.seconds_above_slo / config_.tick_seconds);
    p.pool_keeps_slo = above <= r.unavoidable_ticks;
    if (price == 0) {
      out_.oracle_worker_ticks = r.bound_worker_ticks;
      out_.oracle_actions = p.pool_actions;
      out_.unavoidable_ticks = r.unavoidable_ticks;
    }
    if (out_.probes.empty() || p.value > out_.bound_worker_ticks) {
      out_.bound_worker_ticks = p.value;
      out_.best_price = price;
    }
    if (p.changes == budget_ && p.value == out_.bound_worker_ticks) out_.exact = true;
    if (p.pool_keeps_slo && (reversals_ ? p.pool_reversals : p.pool_actions) <= budget_ &&
        (!out_.has_witness || p.pool_worker_ticks < out_.witness_worker_ticks)) {
      out_.has_witness = true;
      out_.witness_worker_ticks = p.pool_worker_ticks;
      out_.witness_actions = p.pool_actions;
      out_.witness_reversals = p.pool_reversals;
      out_.witness_price = price;
    }
    out_.probes.push_back(p);
    return p;
  }
  bool can_solve() const { return solves_ < options_.max_solves; }

 private:
  bool reversals_;
  const Trace& trace_;
  const SimConfig& config_;
  const GuardConfig& guards_;
  int64_t budget_;
  const ActionBoundOptions& options_;
  ActionBound& out_;
  int solves_ = 0;
};

}  // namespace

double ActionBound::bound_ratio() const {
  if (!budget_feasible) return std::numeric_limits<double>::infinity();
  if (oracle_worker_ticks <= 0) return std::numeric_limits<double>::quiet_NaN();
  return double(bound_worker_ticks) / double(oracle_worker_ticks);
}

double ActionBound::witness_ratio() const {
  if (!has_witness || oracle_worker_ticks <= 0) return std::numeric_limits<double>::quiet_NaN();
  return double(witness_worker_ticks) / double(oracle_worker_ticks);
}

namespace {

ActionBound budget_bound(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                         int64_t budget, bool reversals, const ActionBoundOptions& options) {
  if (budget < 0) throw std::invalid_argument("budget bound: the budget must be >= 0");
  if (options.max_solves < 2) {
    throw std::invalid_argument("budget bound: max_solves must be >= 2");
  }
  ActionBound out;
  out.reversals = reversals;
  out.budget = budget;
  out.tick_seconds = config.tick_seconds;
  Search search(trace, config, guards, budget, options, out);

  ActionBoundProbe lo = search.probe(0);
  if (lo.changes <= budget) {
    out.exact = true;  // the oracle itself changes at most K times: g(0) = its cost is the least
    return out;
  }
  // A price above any difference of worker-tick costs makes the DP minimize changes first. Any
  // DP schedule costs at most ticks x best x (1 + m) (each tick's workers, each added worker's
  // warm-up, at most best added per tick); max_workers stands in for best.
  const int64_t ticks = fluid::tick_count(trace, config.tick_seconds);
  const int64_t warmup_ticks =
      static_cast<int64_t>(std::ceil(config.model.warmup_seconds / config.tick_seconds)) + 1;
  const int64_t top = std::max(guards.max_workers, config.initial_workers);
  const int64_t proof_price = ticks * top * (1 + warmup_ticks) + 1;
  const int64_t max_price = std::min(proof_price, options.max_price);

  // Doubling: the first price whose optimum changes at most K times.
  ActionBoundProbe hi = lo;
  for (int64_t price = 1;; price = std::min(max_price, price * 2)) {
    if (!search.can_solve()) return out;  // valid, perhaps not the largest
    hi = search.probe(price);
    if (hi.changes <= budget) break;
    lo = hi;
    if (price == max_price) {
      // At a price above any cost difference the fewest changes possible exceed K; below it
      // nothing is proven.
      if (max_price == proof_price) out.budget_feasible = false;
      return out;
    }
  }
  if (hi.changes == budget) return out;

  // Integers between lo (supergradient > 0) and hi (< 0): the maximum of the concave g lies in
  // [lo.price, hi.price]. The two supergradient lines meet at x, above every g on the interval.
  bool bisect = false;
  while (hi.price - lo.price > 1 && search.can_solve()) {
    const double s_lo = double(lo.changes - budget), s_hi = double(hi.changes - budget);
    const double x =
        (double(hi.value - lo.value) + s_lo * double(lo.price) - s_hi * double(hi.price)) /
        (s_lo - s_hi);
    const double ceiling = double(lo.value) + s_lo * (x - double(lo.price));
    if (std::floor(ceiling + 1e-9) <= double(out.bound_worker_ticks)) break;  // g is integral
    int64_t mid = bisect ? lo.price + (hi.price - lo.price) / 2 : std::llround(x);
    mid = std::clamp(mid, lo.price + 1, hi.price - 1);
    bisect = !bisect;
    const ActionBoundProbe p = search.probe(mid);
    if (p.changes == budget) break;  // a supergradient 0: g's maximum
    if (p.changes > budget) {
      lo = p;
    } else {
      hi = p;
    }
  }
  return out;
}

}  // namespace

ActionBound action_budget_bound(const Trace& trace, const SimConfig& config,
                                const GuardConfig& guards, int64_t budget,
                                const ActionBoundOptions& options) {
  return budget_bound(trace, config, guards, budget, false, options);
}

ActionBound reversal_budget_bound(const Trace& trace, const SimConfig& config,
                                  const GuardConfig& guards, int64_t budget,
                                  const ActionBoundOptions& options) {
  return budget_bound(trace, config, guards, budget, true, options);
}

JointBound joint_budget_bound(const Trace& trace, const SimConfig& config,
                              const GuardConfig& guards, const ActionBound& by_actions,
                              const ActionBound& by_reversals) {
  if (by_actions.reversals || !by_reversals.reversals) {
    throw std::invalid_argument("joint_budget_bound: an action bound and a reversal bound, please");
  }
  JointBound out;
  const int64_t k = by_actions.budget, r = by_reversals.budget;
  out.budget_feasible = by_actions.budget_feasible && by_reversals.budget_feasible;
  out.bound_worker_ticks = std::max(by_actions.bound_worker_ticks, by_reversals.bound_worker_ticks);
  auto consider = [&](int64_t worker_ticks, int actions, int reversals, bool keeps_slo) {
    if (!keeps_slo || actions > k || reversals > r) return;
    if (out.has_witness && worker_ticks >= out.witness_worker_ticks) return;
    out.has_witness = true;
    out.witness_worker_ticks = worker_ticks;
    out.witness_actions = actions;
    out.witness_reversals = reversals;
  };
  for (const ActionBound* b : {&by_actions, &by_reversals}) {
    for (const ActionBoundProbe& p : b->probes) {
      consider(p.pool_worker_ticks, p.pool_actions, p.pool_reversals, p.pool_keeps_slo);
    }
  }
  if (!out.budget_feasible) return out;
  const int64_t la = by_actions.best_price, lr = by_reversals.best_price;
  for (const int64_t change : {la / 2, la, la * 2}) {
    for (const int64_t reversal : {lr / 2, lr, lr * 2}) {
      if (change == 0 || reversal == 0) continue;  // the 1-D searches' ground
      OracleOptions o;
      o.change_price = std::min(change, ActionBoundOptions{}.max_price);
      o.reversal_price = std::min(reversal, ActionBoundOptions{}.max_price);
      const auto ticks = static_cast<double>(fluid::tick_count(trace, config.tick_seconds));
      o.checkpoint_ticks = std::clamp(static_cast<int>(std::sqrt(ticks)), 16, o.checkpoint_ticks);
      const OracleResult res = fluid::solve_schedule(trace, config, guards, o);
      ++out.solves;
      out.bound_worker_ticks = std::max(
          out.bound_worker_ticks, res.priced_optimum - o.change_price * k - o.reversal_price * r);
      const FluidRun fluid = evaluate_fluid(trace, config, res.workers);
      const int64_t above = std::llround(fluid.kpis.seconds_above_slo / config.tick_seconds);
      consider(res.worker_ticks, fluid.kpis.scale_actions, fluid.kpis.reversals,
               above <= res.unavoidable_ticks);
    }
  }
  return out;
}

const char* joint_budget_verdict(const JointBound& b, int64_t oracle_worker_ticks,
                                 double max_worker_seconds_ratio) {
  const double limit = max_worker_seconds_ratio * double(oracle_worker_ticks);
  if (!b.budget_feasible || double(b.bound_worker_ticks) > limit) return "impossible";
  if (b.has_witness && double(b.witness_worker_ticks) <= limit) return "possible";
  return "open";
}

const char* action_budget_verdict(const ActionBound& b, double max_worker_seconds_ratio) {
  if (!b.budget_feasible) return "impossible";
  // Integral worker-ticks against the ratio: the bound rules the goal out when even it is above.
  if (double(b.bound_worker_ticks) > max_worker_seconds_ratio * double(b.oracle_worker_ticks)) {
    return "impossible";
  }
  if (b.has_witness &&
      double(b.witness_worker_ticks) <= max_worker_seconds_ratio * double(b.oracle_worker_ticks)) {
    return "possible";
  }
  return "open";
}

}  // namespace lagpilot::sim
