// The action-budget bound (sim/action_bound.h) and the oracle's change price behind it: a
// hand-computed pulse (both sides of the duality), the priced DP against brute force over every
// pool schedule of tiny traces, the bound between the oracle and real schedules with at most K
// actions, and the price 0 leaving the oracle as it was.
#include "sim/action_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "policies/static_policy.h"
#include "sim/oracle.h"
#include "sim/simulation.h"
#include "tests/sim/sim_test_util.h"

namespace lagpilot::sim {
namespace {

using testing::bounds;
using testing::open_guards;

// Linear capacity: 10 messages/s per worker, deterministic.
SimConfig linear_config(double warmup, int initial, int64_t slo) {
  return testing::linear_config(10.0, warmup, initial, slo);
}

Trace trace_of(std::vector<double> rates) {
  Trace t;
  t.source = "test";
  t.bin_seconds = 1.0;
  t.rates = std::move(rates);
  return t;
}

// 10 ticks: 10/s, a pulse of 30/s in ticks 4-6, 10/s again. With 10/s per worker and an SLO of
// 5 messages, the pulse needs 3 workers (at 2 the lag grows 10 a tick) and 1 suffices elsewhere.
Trace pulse() {
  return trace_of({10, 10, 10, 30, 30, 30, 10, 10, 10, 10});
}

OracleResult priced(const Trace& t, const SimConfig& c, const GuardConfig& g, int64_t price) {
  OracleOptions o;
  o.change_price = price;
  return solve_oracle(t, c, g, o);
}

TEST(ActionBound, PulseBothSidesOfTheDuality) {
  // Starting at 1 worker (no warm-up): the oracle is 1,1,1,3,3,3,1,1,1,1 (16 worker-ticks, 2
  // changes); with one change the cheapest is 1,1,1,3,3,3,3,3,3,3 (24); none keeps the SLO.
  const SimConfig c = linear_config(0.0, 1, 5);
  const GuardConfig g = bounds(1, 3);
  const OracleResult o = priced(pulse(), c, g, 0);
  EXPECT_EQ(o.bound_worker_ticks, 16);
  EXPECT_EQ(o.productive_changes, 2);
  // V(price) = min(16 + 2 price, 24 + price): the two schedules tie at 8.
  const OracleResult low = priced(pulse(), c, g, 5);
  EXPECT_EQ(low.priced_optimum, 26);
  EXPECT_EQ(low.productive_changes, 2);
  EXPECT_EQ(low.bound_worker_ticks, 16);
  const OracleResult high = priced(pulse(), c, g, 10);
  EXPECT_EQ(high.priced_optimum, 34);
  EXPECT_EQ(high.productive_changes, 1);
  EXPECT_EQ(high.bound_worker_ticks, 24);
  EXPECT_EQ(high.worker_ticks, 24);
  EXPECT_EQ(high.ticks_above_slo, 0);

  // K = 1: g(price) = min(16 + price, 24), largest (24, exact) from price 8 on.
  const ActionBound one = action_budget_bound(pulse(), c, g, 1);
  EXPECT_TRUE(one.budget_feasible);
  EXPECT_EQ(one.oracle_worker_ticks, 16);
  EXPECT_EQ(one.bound_worker_ticks, 24);
  EXPECT_GE(one.best_price, 8);
  EXPECT_TRUE(one.has_witness);
  EXPECT_EQ(one.witness_worker_ticks, 24);
  EXPECT_EQ(one.witness_actions, 1);
  EXPECT_DOUBLE_EQ(one.bound_ratio(), 1.5);
  EXPECT_STREQ(action_budget_verdict(one, 1.15), "impossible");
  EXPECT_STREQ(action_budget_verdict(one, 1.5), "possible");
  for (const ActionBoundProbe& p : one.probes) EXPECT_LE(p.value, 24) << "price " << p.price;

  // K = 2: the oracle itself.
  const ActionBound two = action_budget_bound(pulse(), c, g, 2);
  EXPECT_EQ(two.bound_worker_ticks, 16);
  EXPECT_TRUE(two.exact);
  EXPECT_EQ(two.probes.size(), 1u);
  EXPECT_STREQ(action_budget_verdict(two, 1.15), "possible");

  // K = 0: staying at 1 misses the SLO in the pulse.
  const ActionBound none = action_budget_bound(pulse(), c, g, 0);
  EXPECT_FALSE(none.budget_feasible);
  EXPECT_TRUE(std::isinf(none.bound_ratio()));
  EXPECT_STREQ(action_budget_verdict(none, 10.0), "impossible");
}

TEST(ActionBound, PulseFromAFullPoolNeedsNoChangeAtAHighPrice) {
  // Starting at 3: the oracle drops to 1, rises for the pulse and drops again (3, 1, 1, 3, 3, 3,
  // 1, 1, 1, 1: 18 worker-ticks, 3 changes); one change: 3 through the pulse, then 1 (22); none:
  // 3 throughout (30). With K = 0, g = V = min(18 + 3 price, 22 + price, 30): 30 from price 8.
  const SimConfig c = linear_config(0.0, 3, 5);
  const GuardConfig g = bounds(1, 3);
  EXPECT_EQ(priced(pulse(), c, g, 0).bound_worker_ticks, 18);
  EXPECT_EQ(priced(pulse(), c, g, 0).productive_changes, 3);
  EXPECT_EQ(priced(pulse(), c, g, 3).priced_optimum, 25);
  EXPECT_EQ(priced(pulse(), c, g, 3).productive_changes, 1);
  EXPECT_EQ(priced(pulse(), c, g, 9).priced_optimum, 30);
  EXPECT_EQ(priced(pulse(), c, g, 9).productive_changes, 0);
  const ActionBound none = action_budget_bound(pulse(), c, g, 0);
  EXPECT_EQ(none.bound_worker_ticks, 30);
  EXPECT_TRUE(none.exact);
  EXPECT_EQ(none.witness_worker_ticks, 30);
  EXPECT_EQ(none.witness_actions, 0);
  const ActionBound one = action_budget_bound(pulse(), c, g, 1);
  EXPECT_EQ(one.bound_worker_ticks, 22);
  EXPECT_EQ(one.witness_worker_ticks, 22);

  // A static policy (0 actions) in the simulator spends at least the bound at K = 0.
  const RunResult run =
      simulate(pulse(), std::make_unique<StaticPolicy>(StaticParams{3}), "static", g, c);
  EXPECT_EQ(run.kpis.scale_actions, 0);
  EXPECT_GE(run.kpis.worker_seconds + 1e-9, none.bound_worker_seconds());
}

struct Brute {
  int64_t unavoidable = std::numeric_limits<int64_t>::max();
  // Per K: the fewest worker-ticks of a schedule with at most K actions within the SLO outside
  // the unavoidable ticks (max when none).
  std::vector<int64_t> least;
  // Per pool schedule within the SLO: (worker-ticks, actions).
  std::vector<std::pair<int64_t, int>> feasible;
};

Brute brute_force(const Trace& trace, const SimConfig& c, int min_w, int max_w, int ticks) {
  std::vector<int> w(static_cast<std::size_t>(ticks), min_w);
  w[0] = c.initial_workers;
  std::vector<std::tuple<int64_t, int64_t, int>> all;  // above, cost, actions
  for (;;) {
    const FluidRun r = evaluate_fluid(trace, c, WorkerSchedule::from_vector(w));
    all.emplace_back(std::llround(r.kpis.seconds_above_slo / c.tick_seconds),
                     std::accumulate(w.begin(), w.end(), int64_t{0}), r.kpis.scale_actions);
    std::size_t k = 1;
    while (k < w.size() && w[k] == max_w) w[k++] = min_w;
    if (k >= w.size()) break;
    ++w[k];
  }
  Brute b;
  for (const auto& [above, cost, actions] : all) b.unavoidable = std::min(b.unavoidable, above);
  b.least.assign(static_cast<std::size_t>(ticks) + 1, std::numeric_limits<int64_t>::max());
  for (const auto& [above, cost, actions] : all) {
    if (above != b.unavoidable) continue;
    b.feasible.emplace_back(cost, actions);
    for (std::size_t k = static_cast<std::size_t>(actions); k < b.least.size(); ++k) {
      b.least[k] = std::min(b.least[k], cost);
    }
  }
  return b;
}

TEST(ActionBound, PricedDpAgainstBruteForceOnTinyTraces) {
  std::mt19937 rng(20261202);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int checked = 0, exact_cases = 0;
  for (int instance = 0; instance < 120; ++instance) {
    SimConfig c;
    c.model.service_mean_seconds = 0.1;  // capacity(1) = 10/s, concave (USL) beyond
    c.model.usl_sigma = 0.1;
    c.model.usl_kappa = 0.02;
    const double warmups[] = {0.0, 1.0, 0.5, 2.0, 1.5};
    c.model.warmup_seconds = warmups[instance % 5];
    const int min_w = instance % 3 == 0 ? 0 : 1;
    const int max_w = min_w + 2;
    c.initial_workers = min_w + static_cast<int>(unit(rng) * 3);
    c.lag_slo = static_cast<int64_t>(unit(rng) * 25.0);
    const int ticks = 7;
    Trace t;
    t.source = "random";
    t.bin_seconds = instance % 2 == 0 ? 1.0 : 0.5;
    const int nbins = static_cast<int>(std::lround(ticks / t.bin_seconds));
    for (int b = 0; b < nbins; ++b) {
      const double u = unit(rng);
      t.rates.push_back(u < 0.2 ? 0.0 : u * 1.2 * c.model.capacity(max_w));
    }
    const GuardConfig g = bounds(min_w, max_w);
    const Brute want = brute_force(t, c, min_w, max_w, ticks);
    const OracleResult oracle = solve_oracle(t, c, g);
    ASSERT_EQ(oracle.unavoidable_ticks, want.unavoidable) << "instance " << instance;
    for (const int64_t price : {0, 1, 3, 7, 20}) {
      const OracleResult o = priced(t, c, g, price);
      EXPECT_EQ(o.forward_mismatches, 0);
      EXPECT_EQ(o.priced_optimum, o.bound_worker_ticks + price * o.productive_changes);
      // A relaxation of every pool schedule (priced by its actions) ...
      int64_t relaxed = std::numeric_limits<int64_t>::max();
      for (const auto& [cost, actions] : want.feasible) {
        relaxed = std::min(relaxed, cost + price * actions);
      }
      EXPECT_LE(o.priced_optimum, relaxed) << "instance " << instance << " price " << price;
      // ... and exact when every productive schedule is a pool schedule (no warm-up).
      if (c.model.warmup_seconds == 0.0) {
        EXPECT_EQ(o.priced_optimum, relaxed) << "instance " << instance << " price " << price;
        ++exact_cases;
      }
      if (price == 0) {
        EXPECT_EQ(o.bound_worker_ticks, oracle.bound_worker_ticks);
      }
    }
    for (int64_t k = 0; k <= 3; ++k) {
      const ActionBound b = action_budget_bound(t, c, g, k);
      const int64_t least = want.least[static_cast<std::size_t>(k)];
      if (least == std::numeric_limits<int64_t>::max()) {
        // No pool schedule keeps the SLO with K actions; the bound may still be finite (it
        // relaxes), but it never says "feasible" with a witness.
        EXPECT_FALSE(b.has_witness) << "instance " << instance << " K " << k;
        continue;
      }
      ++checked;
      ASSERT_TRUE(b.budget_feasible) << "instance " << instance << " K " << k;
      EXPECT_LE(b.bound_worker_ticks, least) << "instance " << instance << " K " << k;
      EXPECT_GE(b.bound_worker_ticks, oracle.bound_worker_ticks);
      if (b.has_witness) {
        EXPECT_GE(b.witness_worker_ticks, least);
        EXPECT_LE(b.witness_actions, k);
      }
    }
  }
  EXPECT_GT(checked, 200);
  EXPECT_GT(exact_cases, 100);
}

TEST(ActionBound, BetweenTheOracleAndAStaticPoolOnABurst) {
  // A real trace shape with the default consumer model: the bound at K = 0 lies between the
  // oracle and the static pool at the fewest workers that keep the SLO (0 actions).
  SimConfig c;
  c.initial_workers = 16;
  c.lag_slo = 10000;
  const GuardConfig g = bounds(4, 16);
  const Trace t =
      testing::burst_trace(0.3 * c.model.capacity(16), 0.9 * c.model.capacity(16), 600, 300);
  const OracleResult oracle = solve_oracle(t, c, g);
  ASSERT_TRUE(oracle.feasible());
  const RunResult full =
      simulate(t, std::make_unique<StaticPolicy>(StaticParams{16}), "static", g, c);
  ASSERT_EQ(full.kpis.scale_actions, 0);
  const ActionBound none = action_budget_bound(t, c, g, 0);
  ASSERT_TRUE(none.budget_feasible);
  EXPECT_GE(none.bound_worker_ticks, oracle.bound_worker_ticks);
  EXPECT_LE(none.bound_worker_seconds(), full.kpis.worker_seconds + 1e-9);
  // More actions allowed: a bound no higher.
  const ActionBound two = action_budget_bound(t, c, g, 2);
  EXPECT_LE(two.bound_worker_ticks, none.bound_worker_ticks);
  EXPECT_GE(two.bound_worker_ticks, oracle.bound_worker_ticks);
}

TEST(ActionBound, PulseWithoutReversals) {
  // From 1 worker: up for the pulse and down after it is one reversal (the oracle, 16); with
  // none the pool stays up after the pulse (24), at a reversal price above 8.
  const SimConfig c = linear_config(0.0, 1, 5);
  const GuardConfig g = bounds(1, 3);
  OracleOptions o;
  o.reversal_price = 5;
  const OracleResult low = solve_oracle(pulse(), c, g, o);
  EXPECT_EQ(low.priced_optimum, 21);
  EXPECT_EQ(low.productive_reversals, 1);
  EXPECT_EQ(low.bound_worker_ticks, 16);
  o.reversal_price = 9;
  const OracleResult high = solve_oracle(pulse(), c, g, o);
  EXPECT_EQ(high.priced_optimum, 24);
  EXPECT_EQ(high.productive_reversals, 0);
  const ActionBound none = reversal_budget_bound(pulse(), c, g, 0);
  EXPECT_TRUE(none.reversals);
  EXPECT_EQ(none.bound_worker_ticks, 24);
  EXPECT_TRUE(none.has_witness);
  EXPECT_EQ(none.witness_reversals, 0);
  EXPECT_EQ(reversal_budget_bound(pulse(), c, g, 1).bound_worker_ticks, 16);
  // Both budgets: one action and no reversal is 1,1,1,3,...,3 again.
  const JointBound both =
      joint_budget_bound(pulse(), c, g, action_budget_bound(pulse(), c, g, 1), none);
  EXPECT_EQ(both.bound_worker_ticks, 24);
  ASSERT_TRUE(both.has_witness);
  EXPECT_EQ(both.witness_worker_ticks, 24);
  EXPECT_EQ(both.witness_actions, 1);
  EXPECT_EQ(both.witness_reversals, 0);
  EXPECT_STREQ(joint_budget_verdict(both, 16, 1.15), "impossible");
  EXPECT_STREQ(joint_budget_verdict(both, 16, 1.5), "possible");
  // A fractional warm-up has no reversal DP.
  SimConfig half = c;
  half.model.warmup_seconds = 0.5;
  EXPECT_THROW(reversal_budget_bound(pulse(), half, g, 0), std::invalid_argument);
}

TEST(ActionBound, ReversalBoundAgainstBruteForceOnTinyTraces) {
  std::mt19937 rng(20261203);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int checked = 0;
  for (int instance = 0; instance < 90; ++instance) {
    SimConfig c;
    c.model.service_mean_seconds = 0.1;
    c.model.usl_sigma = 0.1;
    c.model.usl_kappa = 0.02;
    c.model.warmup_seconds = static_cast<double>(instance % 3);  // whole ticks
    const int min_w = instance % 2;
    const int max_w = min_w + 2;
    c.initial_workers = min_w + static_cast<int>(unit(rng) * 3);
    c.lag_slo = static_cast<int64_t>(unit(rng) * 25.0);
    const int ticks = 7;
    Trace t = trace_of({});
    for (int b = 0; b < ticks; ++b) {
      const double u = unit(rng);
      t.rates.push_back(u < 0.2 ? 0.0 : u * 1.2 * c.model.capacity(max_w));
    }
    const GuardConfig g = bounds(min_w, max_w);
    // Brute force over every pool schedule: the least worker-ticks with at most R reversals.
    std::vector<int> w(ticks, min_w);
    w[0] = c.initial_workers;
    int64_t unavoidable = std::numeric_limits<int64_t>::max();
    std::vector<std::tuple<int64_t, int64_t, int>> all;
    for (;;) {
      const FluidRun r = evaluate_fluid(t, c, WorkerSchedule::from_vector(w));
      const int64_t above = std::llround(r.kpis.seconds_above_slo);
      unavoidable = std::min(unavoidable, above);
      all.emplace_back(above, std::accumulate(w.begin(), w.end(), int64_t{0}), r.kpis.reversals);
      std::size_t k = 1;
      while (k < w.size() && w[k] == max_w) w[k++] = min_w;
      if (k >= w.size()) break;
      ++w[k];
    }
    for (int64_t budget = 0; budget <= 2; ++budget) {
      int64_t least = std::numeric_limits<int64_t>::max();
      for (const auto& [above, cost, reversals] : all) {
        if (above == unavoidable && reversals <= budget) least = std::min(least, cost);
      }
      const ActionBound b = reversal_budget_bound(t, c, g, budget);
      if (least == std::numeric_limits<int64_t>::max()) {
        EXPECT_FALSE(b.has_witness);
        continue;
      }
      ++checked;
      EXPECT_LE(b.bound_worker_ticks, least) << "instance " << instance << " R " << budget;
      if (b.has_witness) {
        EXPECT_GE(b.witness_worker_ticks, least);
      }
      // No warm-up: every productive schedule is a pool schedule, and R = 0 is solved exactly
      // (a price above any cost difference).
      if (c.model.warmup_seconds == 0.0 && budget == 0) {
        EXPECT_EQ(b.bound_worker_ticks, least) << "instance " << instance;
      }
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(ActionBound, RejectsANegativeBudgetAndPrice) {
  const SimConfig c = linear_config(0.0, 1, 5);
  EXPECT_THROW(action_budget_bound(pulse(), c, bounds(1, 3), -1), std::invalid_argument);
  OracleOptions o;
  o.change_price = -1;
  EXPECT_THROW(solve_oracle(pulse(), c, bounds(1, 3), o), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot::sim
