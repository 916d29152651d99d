#include "sim/action_bound.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

  bool soft() const { return out_.slo_allowance_ticks > 0; }
  // The SLO price of the probes that follow (soft SLO only); each price has its own solve count.
  void set_slo_price(int64_t price) {
    slo_price_ = price;
    solves_ = 0;
  }

  ActionBoundProbe probe(int64_t price) {
    OracleOptions o = options_.oracle;
    (reversals_ ? o.reversal_price : o.change_price) = price;
    if (soft()) {
      o.lag_ceiling = out_.lag_ceiling;
      o.slo_price = slo_price_;
    }
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
    p.slo_price = slo_price_;
    p.priced_optimum = r.priced_optimum;
    p.changes = reversals_ ? r.productive_reversals : r.productive_changes;
    p.slo_ticks = r.priced_slo_ticks;
    p.value = r.priced_optimum - price * budget_ - slo_price_ * out_.slo_allowance_ticks;
    const FluidRun fluid = evaluate_fluid(trace_, config_, r.workers);
    p.pool_actions = fluid.kpis.scale_actions;
    p.pool_reversals = fluid.kpis.reversals;
    p.pool_worker_ticks = r.worker_ticks;
    const int64_t above = std::llround(fluid.kpis.seconds_above_slo / config_.tick_seconds);
    p.pool_slo_ticks = std::max<int64_t>(0, above - r.unavoidable_ticks);
    p.pool_keeps_slo = p.pool_slo_ticks <= out_.slo_allowance_ticks;
    if (!soft() && price == 0) {
      out_.oracle_worker_ticks = r.bound_worker_ticks;
      out_.oracle_actions = p.pool_actions;
      out_.unavoidable_ticks = r.unavoidable_ticks;
    }
    if (out_.probes.empty() || p.value > out_.bound_worker_ticks) {
      out_.bound_worker_ticks = p.value;
      out_.best_price = price;
      out_.best_slo_price = slo_price_;
    }
    // Complementary slackness: a DP optimum within both budgets whose every priced budget is
    // used up exactly has cost g, so the bound is attained.
    const bool within =
        p.changes <= budget_ && (!soft() || p.slo_ticks <= out_.slo_allowance_ticks);
    const bool slack = (price == 0 || p.changes == budget_) &&
                       (slo_price_ == 0 || p.slo_ticks == out_.slo_allowance_ticks);
    if (within && slack && p.value == out_.bound_worker_ticks) out_.exact = true;
    if (p.pool_keeps_slo && (reversals_ ? p.pool_reversals : p.pool_actions) <= budget_ &&
        (!out_.has_witness || p.pool_worker_ticks < out_.witness_worker_ticks)) {
      out_.has_witness = true;
      out_.witness_worker_ticks = p.pool_worker_ticks;
      out_.witness_actions = p.pool_actions;
      out_.witness_reversals = p.pool_reversals;
      out_.witness_slo_ticks = p.pool_slo_ticks;
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
  int64_t slo_price_ = 0;
  int solves_ = 0;
};

// The largest g(., sigma) = V(., sigma) - . K - sigma A over the budget's price at the current
// SLO price sigma, searched from the price `start`: bracketed by halving (down to 0) or doubling
// (up to max_price) until one end's optimum changes more than K times and the other's at most K,
// then on the integers between the two: the crossing of the two supergradient lines (alternating
// with bisection), stopping when the interval is one wide, a supergradient is 0, or the
// crossing's value shows no integer g can beat the best. Returns the best probe (for its SLO
// ticks: a supergradient in sigma, plus A).
ActionBoundProbe search_price(Search& search, int64_t budget, int64_t start, int64_t max_price,
                              int64_t proof_price, ActionBound& out) {
  ActionBoundProbe best = search.probe(start);
  auto take = [&](int64_t price) {
    const ActionBoundProbe p = search.probe(price);
    if (p.value > best.value) best = p;
    return p;
  };
  ActionBoundProbe lo = best, hi = best;  // lo: more than K changes; hi: at most K
  bool have_lo = best.changes > budget, have_hi = !have_lo;
  if (best.changes == budget) return best;
  while (!have_lo) {  // halving: g's maximum over prices >= 0 is at 0 when 0 has at most K
    if (hi.price == 0 || !search.can_solve()) return best;
    const ActionBoundProbe p = take(hi.price / 2);
    if (p.changes == budget) return best;
    (p.changes > budget ? lo : hi) = p;
    have_lo = p.changes > budget;
  }
  while (!have_hi) {  // doubling
    if (lo.price >= max_price) {
      // At a price above any cost difference the fewest changes possible exceed K; below it
      // nothing is proven.
      if (max_price == proof_price) out.budget_feasible = false;
      return best;
    }
    if (!search.can_solve()) return best;  // valid, perhaps not the largest
    const ActionBoundProbe p = take(lo.price == 0 ? 1 : std::min(max_price, lo.price * 2));
    if (p.changes == budget) return best;
    (p.changes > budget ? lo : hi) = p;
    have_hi = p.changes <= budget;
  }
  // Integers between lo (supergradient > 0) and hi (< 0): the maximum of the concave g lies in
  // [lo.price, hi.price]. The two supergradient lines meet at x, above every g on the interval.
  bool bisect = false;
  while (hi.price - lo.price > 1 && search.can_solve()) {
    const double s_lo = double(lo.changes - budget), s_hi = double(hi.changes - budget);
    const double x =
        (double(hi.value - lo.value) + s_lo * double(lo.price) - s_hi * double(hi.price)) /
        (s_lo - s_hi);
    const double ceiling = double(lo.value) + s_lo * (x - double(lo.price));
    if (std::floor(ceiling + 1e-9) <= double(best.value)) break;  // g is integral
    int64_t mid = bisect ? lo.price + (hi.price - lo.price) / 2 : std::llround(x);
    mid = std::clamp(mid, lo.price + 1, hi.price - 1);
    bisect = !bisect;
    const ActionBoundProbe p = take(mid);
    if (p.changes == budget) break;  // a supergradient 0: g's maximum
    (p.changes > budget ? lo : hi) = p;
  }
  return best;
}

// The largest tick-end lag of any schedule that ends at most `run_ticks` ticks in a row above the
// SLO: such a run starts after a tick end s with lag <= SLO, and the lag at a tick end k in it
// is at most SLO + N(k) - N(s') for some s' in [s, k] (N: the arrivals less what the fewest
// productive workers any schedule has, min(initial, min_workers), serve, summed from the start;
// the lag restarts from 0 <= SLO wherever it empties), with k - s <= run_ticks.
double lag_ceiling_of(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                      int64_t run_ticks) {
  const double capacity =
      config.model.capacity(std::min(config.initial_workers, guards.min_workers));
  const double slo = static_cast<double>(config.lag_slo);
  const int64_t ticks = fluid::tick_count(trace, config.tick_seconds);
  fluid::PieceCursor cursor(trace);
  std::vector<fluid::Piece> pieces;
  std::deque<std::pair<int64_t, double>> window;  // (k, N(k)), N increasing: its front the minimum
  double n = 0.0, rise = 0.0;
  window.emplace_back(0, 0.0);
  for (int64_t k = 1; k <= ticks; ++k) {
    const double t0 = static_cast<double>(k - 1) * config.tick_seconds;
    cursor.pieces(t0, t0 + config.tick_seconds, pieces);
    for (const fluid::Piece& p : pieces) n += (p.rate - capacity) * p.length;
    while (!window.empty() && window.front().first < k - run_ticks) window.pop_front();
    if (!window.empty()) rise = std::max(rise, n - window.front().second);
    while (!window.empty() && window.back().second >= n) window.pop_back();
    window.emplace_back(k, n);
  }
  return slo + rise + fluid::kLagTol;
}

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
  if (options.slo_allowance_ticks < 0) {
    throw std::invalid_argument("budget bound: the SLO allowance must be >= 0 ticks");
  }
  if (options.max_slo_prices < 1) {
    throw std::invalid_argument("budget bound: max_slo_prices must be >= 1");
  }
  ActionBound out;
  out.reversals = reversals;
  out.budget = budget;
  out.tick_seconds = config.tick_seconds;
  out.slo_allowance_ticks = options.slo_allowance_ticks;
  Search search(trace, config, guards, budget, options, out);

  // A price above any difference of worker-tick costs makes the DP minimize changes first. Any
  // DP schedule costs at most ticks x best x (1 + m) (each tick's workers, each added worker's
  // warm-up, at most best added per tick); max_workers stands in for best.
  const int64_t ticks = fluid::tick_count(trace, config.tick_seconds);
  const int64_t warmup_ticks =
      static_cast<int64_t>(std::ceil(config.model.warmup_seconds / config.tick_seconds)) + 1;
  const int64_t top = std::max(guards.max_workers, config.initial_workers);
  const int64_t proof_price = ticks * top * (1 + warmup_ticks) + 1;
  const int64_t max_price = std::min(proof_price, options.max_price);

  if (!search.soft()) {
    search_price(search, budget, 0, max_price, proof_price, out);
    return out;
  }

  // With an allowance A: the oracle (hard SLO, no price) for the reference figures and U, the
  // lag ceiling, then the SLO price sigma. h(sigma) = max over the budget's price of g is
  // concave, and the SLO ticks of its best probe less A are a supergradient: doubling from 0
  // until they are at most A, then bisection on the integers between the last two.
  const OracleResult oracle = fluid::solve_schedule(trace, config, guards, options.oracle);
  out.oracle_worker_ticks = oracle.bound_worker_ticks;
  out.oracle_actions = evaluate_fluid(trace, config, oracle.workers).kpis.scale_actions;
  out.unavoidable_ticks = oracle.unavoidable_ticks;
  out.lag_ceiling =
      lag_ceiling_of(trace, config, guards, oracle.unavoidable_ticks + options.slo_allowance_ticks);
  int64_t start = 0;  // each search starts at the best price of the last one
  int tried = 0;
  auto at = [&](int64_t sigma) {
    search.set_slo_price(sigma);
    ++tried;
    const ActionBoundProbe b = search_price(search, budget, start, max_price, proof_price, out);
    start = b.price;
    return b;
  };
  int64_t lo = 0;
  ActionBoundProbe b = at(0);
  if (b.slo_ticks <= options.slo_allowance_ticks) return out;
  int64_t hi = -1;
  for (int64_t sigma = 1; tried < options.max_slo_prices; sigma *= 2) {
    b = at(sigma);
    if (b.slo_ticks == options.slo_allowance_ticks) return out;
    if (b.slo_ticks < options.slo_allowance_ticks) {
      hi = sigma;
      break;
    }
    lo = sigma;
    if (sigma > max_price) return out;  // every tick above the SLO costs more than any saving
  }
  while (hi - lo > 1 && tried < options.max_slo_prices) {
    const int64_t mid = lo + (hi - lo) / 2;
    b = at(mid);
    if (b.slo_ticks == options.slo_allowance_ticks) break;
    (b.slo_ticks > options.slo_allowance_ticks ? lo : hi) = mid;
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
