// The oracle's building blocks that were rewritten for speed, against the plain versions they
// replace: transform (bisection for the list's end) and merge_above (one pass into another list)
// on random step functions, add_price_above against the pointwise sum it stands for, and
// PieceCursor against trace_pieces on bins and ticks whose divisions round. The DP's results rest
// on these being the same values, bit for bit.
#include "sim/oracle_step_fn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "sim/fluid_lag.h"

namespace lagpilot::sim::fluid {
namespace {

// The level-by-level walk that transform replaced.
void transform_walk(const StepFn& f, const LagMap& m, double cap, int64_t add, double lo, double hi,
                    StepFn& out) {
  if (!f.feasible()) {
    out.set_infeasible();
    return;
  }
  const std::size_t n = f.thr.size();
  std::size_t k = 0;
  for (; k < n; ++k) {
    const double y = std::min(f.thr[k], cap);
    if (y + kLagTol >= m.alpha && y - m.beta >= lo - kLagTol) break;
  }
  if (k == n) {
    out.set_infeasible();
    return;
  }
  out.base = f.base + add + static_cast<int64_t>(k);
  out.thr.clear();
  for (; k < n; ++k) {
    const double y = std::min(f.thr[k], cap);
    const double x = y - m.beta;
    if (x >= hi) {
      out.thr.push_back(kInf);
      break;
    }
    out.thr.push_back(x);
    if (y == cap) break;
  }
}

// A random value function: base, then non-decreasing thresholds with repeats, ending at
// +infinity or not.
StepFn random_fn(std::mt19937& rng) {
  std::uniform_int_distribution<int> len(1, 40), coin(0, 3), step(0, 4);
  StepFn f;
  f.base = std::uniform_int_distribution<int>(0, 20)(rng);
  double t = std::uniform_real_distribution<double>(-5.0, 50.0)(rng);
  const int n = len(rng);
  for (int i = 0; i < n; ++i) {
    f.thr.push_back(t);
    if (coin(rng) != 0) t += step(rng) * 2.5;  // repeats, and thresholds on the test's grid
  }
  if (coin(rng) != 0) f.thr.back() = kInf;
  // A finite list ends without repeats (merge_above's invariant).
  while (f.thr.size() >= 2 && f.thr.back() != kInf && f.thr[f.thr.size() - 2] == f.thr.back()) {
    f.thr.pop_back();
  }
  return f;
}

bool same(const StepFn& a, const StepFn& b) {
  if (a.base != b.base || a.thr.size() != b.thr.size()) return false;
  return a.thr.empty() ||
         std::memcmp(a.thr.data(), b.thr.data(), a.thr.size() * sizeof(double)) == 0;
}

TEST(OracleStepFn, TransformEqualsTheLevelByLevelWalk) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-10.0, 60.0);
  std::uniform_int_distribution<int> pick(0, 3);
  int cut_at_cap = 0, cut_at_hi = 0;
  for (int i = 0; i < 20000; ++i) {
    const StepFn f = random_fn(rng);
    LagMap m;
    m.beta = pick(rng) == 0 ? 0.0 : u(rng) / 2.0;
    m.alpha = std::max(0.0, m.beta + (pick(rng) == 0 ? 0.0 : std::abs(u(rng))));
    // Caps and bounds often on a threshold (the ties the walk breaks in order).
    const double on = f.thr[std::uniform_int_distribution<std::size_t>(0, f.thr.size() - 1)(rng)];
    const double cap = pick(rng) == 0 ? kInf : pick(rng) == 0 && on != kInf ? on : u(rng);
    const double lo = std::min(0.0, u(rng));
    const double hi = pick(rng) == 0 ? kInf : pick(rng) == 0 ? on - m.beta : lo + std::abs(u(rng));
    StepFn want, got;
    transform_walk(f, m, cap, 3, lo, hi, want);
    transform(f, m, cap, 3, lo, hi, got);
    ASSERT_TRUE(same(want, got)) << "case " << i;
    if (want.feasible() && !want.thr.empty() && want.thr.back() != kInf) ++cut_at_cap;
    if (want.feasible() && want.thr.back() == kInf && f.thr.back() != kInf) ++cut_at_hi;
  }
  EXPECT_GT(cut_at_cap, 100);  // both ways a list ends were exercised
  EXPECT_GT(cut_at_hi, 100);
}

TEST(OracleStepFn, MergeIntoAnotherListEqualsTheMergeInPlace) {
  std::mt19937 rng(12);
  std::vector<double> scratch;
  for (int i = 0; i < 20000; ++i) {
    const StepFn a = random_fn(rng), g = random_fn(rng);
    const int64_t add = std::uniform_int_distribution<int>(0, 6)(rng);
    StepFn in_place = a;
    min_into(in_place, g, add, scratch);
    StepFn elsewhere;
    min_to(a, g, add, elsewhere, scratch);
    ASSERT_TRUE(same(in_place, elsewhere)) << "case " << i;
    // And the values: min(a, g + add) at lags on and between the thresholds.
    for (double lag = -5.0; lag <= 120.0; lag += 1.25) {
      const int64_t ga = g.eval(lag);
      const int64_t want = std::min(a.eval(lag), ga >= kInfCost ? kInfCost : ga + add);
      ASSERT_EQ(elsewhere.eval(lag), want) << "case " << i << " lag " << lag;
    }
  }
}

TEST(OracleStepFn, PriceAboveTheSloIsThePointwiseSum) {
  // By hand: f = 0 up to lag 2, 1 up to 8, infeasible beyond; a price of 3 above an SLO of 5:
  // 0 up to 2, 1 up to 5, 4 up to 8 (the levels 2 and 3 empty, so at 5 too).
  StepFn f;
  f.base = 0;
  f.thr = {2.0, 8.0};
  StepFn g;
  add_price_above(f, 5.0, 3, g);
  EXPECT_EQ(g.base, 0);
  EXPECT_EQ(g.thr, (std::vector<double>{2.0, 5.0, 5.0, 5.0, 8.0}));
  EXPECT_EQ(g.eval(6.0), 4);
  EXPECT_EQ(g.eval(9.0), kInfCost);
  // At random: f(y) + price where y > slo, at lags on and between the thresholds.
  std::mt19937 rng(14);
  for (int i = 0; i < 20000; ++i) {
    const StepFn a = random_fn(rng);
    const int64_t price = std::uniform_int_distribution<int>(0, 6)(rng);
    const double slo = std::uniform_int_distribution<int>(-2, 40)(rng) * 1.25;
    StepFn priced;
    add_price_above(a, slo, price, priced);
    for (double lag = -5.0; lag <= 120.0; lag += 1.25) {
      const int64_t fa = a.eval(lag);
      const int64_t want = fa >= kInfCost ? kInfCost : fa + (lag > slo ? price : 0);
      ASSERT_EQ(priced.eval(lag), want) << "case " << i << " lag " << lag << " slo " << slo;
    }
  }
}

TEST(OracleStepFn, PieceCursorEqualsTracePieces) {
  std::mt19937 rng(13);
  for (const double bin : {1.0, 60.0, 0.1, 7.0 / 3.0, 0.3}) {
    Trace trace;
    trace.bin_seconds = bin;
    std::uniform_int_distribution<int> rate(0, 3);
    for (int b = 0; b < 500; ++b) trace.rates.push_back(rate(rng) * 10.0);
    for (const double tick : {1.0, 0.1, 0.3, 0.7, 1.0 / 3.0, 5.0}) {
      PieceCursor cursor(trace);
      std::vector<Piece> want, got;
      const auto ticks = static_cast<int64_t>(std::ceil(trace.duration() / tick)) + 3;
      auto check = [&](double t0, double t1) {
        trace_pieces(trace, t0, t1, want);
        cursor.pieces(t0, t1, got);
        ASSERT_EQ(want.size(), got.size()) << "bin " << bin << " [" << t0 << ", " << t1 << ")";
        for (std::size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(want[i].length, got[i].length);
          ASSERT_EQ(want[i].rate, got[i].rate);
        }
      };
      for (int64_t j = 1; j <= ticks; ++j) {  // in order, as a pass through the trace
        check(static_cast<double>(j - 1) * tick, static_cast<double>(j) * tick);
      }
      std::uniform_int_distribution<int64_t> any(0, ticks);
      for (int i = 0; i < 2000; ++i) {  // and in any order, on and next to bin boundaries
        const int64_t j = any(rng);
        const double t0 = i % 3 == 0   ? static_cast<double>(j) * tick
                          : i % 3 == 1 ? static_cast<double>(j % 500) * bin
                                       : std::nextafter(static_cast<double>(j % 500) * bin, 0.0);
        check(t0, t0 + tick);
      }
    }
  }
}

}  // namespace
}  // namespace lagpilot::sim::fluid
