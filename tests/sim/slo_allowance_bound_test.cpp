// The soft SLO of the oracle's DP (OracleOptions::lag_ceiling, slo_price) and the budget bounds
// with an SLO allowance built on it (sim/action_bound.h): the priced DP against brute force over
// every pool schedule of tiny traces, the bounds against the least cost of the schedules they
// bound, a hand-computed spike that the allowance absorbs, and the allowance 0 leaving the bound
// as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/action_bound.h"
#include "sim/oracle.h"
#include "sim/simulation.h"
#include "tests/sim/sim_test_util.h"

namespace lagpilot::sim {
namespace {

using testing::bounds;

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

Trace rates_of(std::vector<double> rates) {
  Trace t;
  t.source = "test";
  t.bin_seconds = 1.0;
  t.rates = std::move(rates);
  return t;
}

// Every pool schedule of a tiny trace, as the fluid model sees it.
struct Schedule {
  int64_t cost = 0;
  int reversals = 0;
  std::vector<double> lag;  // at each tick's end
};
struct AllSchedules {
  std::vector<Schedule> all;
  std::vector<bool> unavoidable;  // above the SLO under every schedule
};

AllSchedules every_schedule(const Trace& t, const SimConfig& c, int min_w, int max_w, int ticks) {
  AllSchedules out;
  out.unavoidable.assign(static_cast<std::size_t>(ticks), true);
  std::vector<int> w(static_cast<std::size_t>(ticks), min_w);
  w[0] = c.initial_workers;
  const double slo = static_cast<double>(c.lag_slo);
  for (;;) {
    const FluidRun r = evaluate_fluid(t, c, WorkerSchedule::from_vector(w));
    Schedule s;
    s.cost = std::accumulate(w.begin(), w.end(), int64_t{0});
    s.reversals = r.kpis.reversals;
    s.lag = r.lag;
    for (int k = 0; k < ticks; ++k) {
      if (!(s.lag[static_cast<std::size_t>(k)] > slo + 1e-6)) {
        out.unavoidable[static_cast<std::size_t>(k)] = false;
      }
    }
    out.all.push_back(std::move(s));
    std::size_t k = 1;
    while (k < w.size() && w[k] == max_w) w[k++] = min_w;
    if (k >= w.size()) break;
    ++w[k];
  }
  return out;
}

// Ticks outside U at whose end s is above the SLO; -1 when s exceeds `ceiling` outside U.
int64_t priced_ticks(const AllSchedules& a, const Schedule& s, double slo, double ceiling) {
  int64_t n = 0;
  for (std::size_t k = 0; k < s.lag.size(); ++k) {
    if (a.unavoidable[k]) continue;
    if (s.lag[k] > ceiling + 1e-6) return -1;
    if (s.lag[k] > slo + 1e-6) ++n;
  }
  return n;
}

SimConfig tiny_config(std::mt19937& rng, int instance, int min_w) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  SimConfig c;
  c.model.service_mean_seconds = 0.1;  // capacity(1) = 10/s, concave (USL) beyond
  c.model.usl_sigma = 0.1;
  c.model.usl_kappa = 0.02;
  c.model.warmup_seconds = static_cast<double>(instance % 3);  // whole ticks (reversal prices)
  c.initial_workers = min_w + static_cast<int>(unit(rng) * 3);
  c.lag_slo = static_cast<int64_t>(unit(rng) * 25.0);
  return c;
}

Trace tiny_trace(std::mt19937& rng, const SimConfig& c, int max_w, int ticks) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> rates;
  for (int b = 0; b < ticks; ++b) {
    const double u = unit(rng);
    rates.push_back(u < 0.2 ? 0.0 : u * 1.2 * c.model.capacity(max_w));
  }
  return rates_of(std::move(rates));
}

// A random tiny instance (7 ticks, a pool of 0-2 or 1-3 workers) with all of its schedules.
struct TinyCase {
  SimConfig config;
  Trace trace;
  GuardConfig guards;
  AllSchedules schedules;
};
TinyCase tiny_case(std::mt19937& rng, int instance) {
  const int min_w = instance % 2, max_w = min_w + 2, ticks = 7;
  TinyCase k;
  k.config = tiny_config(rng, instance, min_w);
  k.trace = tiny_trace(rng, k.config, max_w, ticks);
  k.guards = bounds(min_w, max_w);
  k.schedules = every_schedule(k.trace, k.config, min_w, max_w, ticks);
  return k;
}

TEST(SloAllowanceBound, SoftSloDpAgainstBruteForceOnTinyTraces) {
  std::mt19937 rng(20261204);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int exact_cases = 0, priced_above = 0;
  for (int instance = 0; instance < 90; ++instance) {
    const auto [c, t, g, a] = tiny_case(rng, instance);
    const double slo = static_cast<double>(c.lag_slo);
    const double ceiling = slo + unit(rng) * 40.0 + 0.5;
    for (const int64_t sigma : {0, 1, 3, 8}) {
      for (const int64_t reversal : {0, 2, 9}) {
        OracleOptions o;
        o.lag_ceiling = ceiling;
        o.slo_price = sigma;
        o.reversal_price = reversal;
        const OracleResult r = solve_oracle(t, c, g, o);
        EXPECT_EQ(r.forward_mismatches, 0);
        EXPECT_EQ(r.priced_optimum, r.bound_worker_ticks + sigma * r.priced_slo_ticks +
                                        reversal * r.productive_reversals);
        // A relaxation of every pool schedule within the ceiling (priced by its ticks above the
        // SLO and its reversals) ...
        int64_t relaxed = kNone;
        for (const Schedule& s : a.all) {
          const int64_t above = priced_ticks(a, s, slo, ceiling);
          if (above < 0) continue;
          relaxed = std::min(relaxed, s.cost + sigma * above + reversal * s.reversals);
        }
        ASSERT_NE(relaxed, kNone) << "instance " << instance;
        EXPECT_LE(r.priced_optimum, relaxed)
            << "instance " << instance << " sigma " << sigma << " reversal " << reversal;
        // ... and exact without a warm-up (every productive schedule is a pool schedule).
        if (c.model.warmup_seconds == 0.0) {
          EXPECT_EQ(r.priced_optimum, relaxed)
              << "instance " << instance << " sigma " << sigma << " reversal " << reversal;
          ++exact_cases;
          // The pool is the productive schedule then: its ticks above the SLO are the DP's
          // (counted at every SLO price, 0 too).
          Schedule pool;
          pool.lag = evaluate_fluid(t, c, r.workers).lag;
          EXPECT_EQ(r.priced_slo_ticks, priced_ticks(a, pool, slo, ceiling))
              << "instance " << instance << " sigma " << sigma;
        }
        if (r.priced_slo_ticks > 0) ++priced_above;
      }
    }
  }
  EXPECT_GT(exact_cases, 300);
  EXPECT_GT(priced_above, 50);  // schedules that end ticks above the SLO were chosen, often
}

TEST(SloAllowanceBound, BoundsEverySchedulesWithinTheBudgetsOnTinyTraces) {
  std::mt19937 rng(20261205);
  int checked = 0, witnesses = 0, below_hard = 0;
  for (int instance = 0; instance < 60; ++instance) {
    const auto [c, t, g, a] = tiny_case(rng, instance);
    const double slo = static_cast<double>(c.lag_slo);
    for (const int64_t allowance : {int64_t{1}, int64_t{2}}) {
      for (int64_t budget = 0; budget <= 1; ++budget) {
        // The least worker-ticks of a schedule with at most R reversals and A ticks above the
        // SLO outside U (no ceiling: the bound's own must cut none of them off).
        int64_t least = kNone, least_hard = kNone;
        for (const Schedule& s : a.all) {
          const int64_t above = priced_ticks(a, s, slo, std::numeric_limits<double>::infinity());
          if (s.reversals > budget) continue;
          if (above <= allowance) least = std::min(least, s.cost);
          if (above == 0) least_hard = std::min(least_hard, s.cost);
        }
        ActionBoundOptions o;
        o.slo_allowance_ticks = allowance;
        const ActionBound b = reversal_budget_bound(t, c, g, budget, o);
        EXPECT_EQ(b.slo_allowance_ticks, allowance);
        EXPECT_GE(b.lag_ceiling, slo);
        if (least == kNone) {
          EXPECT_FALSE(b.has_witness);
          continue;
        }
        ++checked;
        EXPECT_LE(b.bound_worker_ticks, least)
            << "instance " << instance << " R " << budget << " A " << allowance;
        if (least < least_hard) ++below_hard;
        if (b.has_witness) {
          ++witnesses;
          EXPECT_GE(b.witness_worker_ticks, least);
          EXPECT_LE(b.witness_reversals, budget);
          EXPECT_LE(b.witness_slo_ticks, allowance);
        }
      }
    }
  }
  EXPECT_GT(checked, 150);
  EXPECT_GT(witnesses, 50);
  EXPECT_GT(below_hard, 10);  // the allowance buys back worker-ticks on some of them
}

TEST(SloAllowanceBound, ASpikeTheAllowanceAbsorbs) {
  // 10/s per worker, SLO 5, 1-2 workers, no warm-up. A one-tick spike of 20/s: the oracle adds a
  // worker for it (1,2,1,1: 5 worker-ticks); one worker throughout ends ticks 2-4 at lag 10
  // (3 ticks above the SLO, 4 worker-ticks). The ceiling: 3 ticks in a row at most, and the lag
  // rises by 10 in them at 1 worker, so 5 + 10.
  const SimConfig c = testing::linear_config(10.0, 0.0, 1, 5);
  const GuardConfig g = bounds(1, 2);
  const Trace t = rates_of({10, 20, 10, 10});
  ActionBoundOptions o;
  o.slo_allowance_ticks = 3;
  const ActionBound b = reversal_budget_bound(t, c, g, 1, o);
  EXPECT_EQ(b.oracle_worker_ticks, 5);
  EXPECT_NEAR(b.lag_ceiling, 15.0, 1e-5);
  EXPECT_EQ(b.bound_worker_ticks, 4);
  EXPECT_TRUE(b.exact);
  ASSERT_TRUE(b.has_witness);
  EXPECT_EQ(b.witness_worker_ticks, 4);
  EXPECT_EQ(b.witness_slo_ticks, 3);
  EXPECT_STREQ(action_budget_verdict(b, 1.0), "possible");
  // Without the allowance the spike must be answered: the oracle's 5.
  const ActionBound hard = reversal_budget_bound(t, c, g, 1);
  EXPECT_EQ(hard.bound_worker_ticks, 5);
  EXPECT_EQ(hard.lag_ceiling, 0.0);
}

TEST(SloAllowanceBound, AllowanceZeroIsTheHardSloBound) {
  // The same probes, prices and bound as before the allowance existed.
  SimConfig c;
  c.initial_workers = 16;
  c.lag_slo = 10000;
  const GuardConfig g = bounds(4, 16);
  // Short (seven minutes): at R = 0 the price search's high prices make long value functions.
  const Trace t =
      testing::burst_trace(0.3 * c.model.capacity(16), 0.9 * c.model.capacity(16), 120, 60);
  const ActionBound zero = reversal_budget_bound(t, c, g, 0);
  ActionBoundOptions o;
  o.slo_allowance_ticks = 0;
  const ActionBound same = reversal_budget_bound(t, c, g, 0, o);
  ASSERT_EQ(zero.probes.size(), same.probes.size());
  for (std::size_t i = 0; i < zero.probes.size(); ++i) {
    EXPECT_EQ(zero.probes[i].price, same.probes[i].price);
    EXPECT_EQ(zero.probes[i].value, same.probes[i].value);
    EXPECT_EQ(zero.probes[i].slo_price, 0);
  }
  EXPECT_EQ(zero.bound_worker_ticks, same.bound_worker_ticks);
  // A generous allowance: every schedule the hard bound covers is covered too, so the hard
  // bound's witness (a schedule within the SLO, no reversal) costs no less than the new bound.
  o.slo_allowance_ticks = 120;
  const ActionBound loose = reversal_budget_bound(t, c, g, 0, o);
  EXPECT_GT(loose.lag_ceiling, 10000.0);
  ASSERT_TRUE(zero.has_witness);
  EXPECT_LE(loose.bound_worker_ticks, zero.witness_worker_ticks);
  for (const ActionBoundProbe& p : loose.probes) EXPECT_LE(p.value, zero.witness_worker_ticks);
}

TEST(SloAllowanceBound, RejectsBadOptions) {
  const SimConfig c = testing::linear_config(10.0, 0.0, 1, 5);
  const Trace t = rates_of({10, 20, 10, 10});
  ActionBoundOptions o;
  o.slo_allowance_ticks = -1;
  EXPECT_THROW(reversal_budget_bound(t, c, bounds(1, 2), 0, o), std::invalid_argument);
  OracleOptions bad;
  bad.slo_price = 3;  // no ceiling
  EXPECT_THROW(solve_oracle(t, c, bounds(1, 2), bad), std::invalid_argument);
  bad.lag_ceiling = 4.0;  // below the SLO of 5
  EXPECT_THROW(solve_oracle(t, c, bounds(1, 2), bad), std::invalid_argument);
  bad.lag_ceiling = -1.0;
  EXPECT_THROW(solve_oracle(t, c, bounds(1, 2), bad), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot::sim
