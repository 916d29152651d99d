#pragma once
// The oracle's value functions: non-decreasing, integer-valued step functions of the lag, stored
// exactly by their level sets (sim/oracle.h, "Algorithm"), and the operations the DP's backward
// step needs (through a tick's lag map, a pointwise minimum with a shift).
//
// Internal to the oracle (sim/oracle_solver.cpp). Thread-safety: value types, pure functions.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/fluid_lag.h"

namespace lagpilot::sim::fluid {

constexpr int64_t kInfCost = std::numeric_limits<int64_t>::max() / 4;

// ---------------------------------------------------------------------------------------------
// Step functions of the lag.

// A non-decreasing, integer-valued function of the lag L (the cost to go), stored by its level
// sets: f(L) <= base + k  iff  L <= thr[k]. thr is non-decreasing; thr.back() is +infinity when f
// is finite up to the top of the domain, else f is infinite (infeasible) above it. Only the
// domain [lo, hi] of the time point matters: levels whose set ends below lo are dropped (base is
// the value at lo) and the first level that reaches hi ends the list (as +infinity).
struct StepFn {
  int64_t base = kInfCost;
  std::vector<double> thr;

  bool feasible() const { return base < kInfCost; }
  void set_infeasible() {
    base = kInfCost;
    thr.clear();
  }
  void set_zero() {
    base = 0;
    thr.assign(1, kInf);
  }
  int64_t eval(double lag) const {
    if (!feasible()) return kInfCost;
    const auto it = std::lower_bound(thr.begin(), thr.end(), lag - kLagTol);
    if (it == thr.end()) return kInfCost;
    return base + (it - thr.begin());
  }
};

// out(L) = add + f(m(L)) where m(L) <= cap, else infinity; normalized to the domain [lo, hi].
inline void transform(const StepFn& f, const LagMap& m, double cap, int64_t add, double lo,
                      double hi, StepFn& out) {
  if (!f.feasible()) {
    out.set_infeasible();
    return;
  }
  const std::size_t n = f.thr.size();
  const double* in = f.thr.data();
  // m(L) <= y  iff  alpha <= y and L <= y - beta, with y = min(thr, cap). Levels whose set lies
  // below the domain (or is empty: y < alpha) come first; skip them.
  std::size_t k = 0;
  for (; k < n; ++k) {
    const double y = std::min(in[k], cap);
    if (y + kLagTol >= m.alpha && y - m.beta >= lo - kLagTol) break;
  }
  if (k == n) {
    out.set_infeasible();
    return;
  }
  // The list ends at the first level whose set reaches hi (+infinity from there) or is cut at the
  // cap (every further level has the same set). Both tests only turn true as the thresholds grow,
  // so that level is found by bisection and the levels before it are one branch-free loop (the
  // compiler vectorizes it): the same values as a level-by-level walk, at a fraction of its
  // mispredicted branches.
  const double beta = m.beta;
  const double* stop = std::partition_point(in + k, in + n, [cap, beta, hi](double t) {
    const double y = std::min(t, cap);
    return !(y - beta >= hi || y == cap);
  });
  const auto e = static_cast<std::size_t>(stop - in);
  out.base = f.base + add + static_cast<int64_t>(k);
  out.thr.resize(e - k + (e < n ? 1 : 0));
  double* o = out.thr.data();
  for (std::size_t i = k; i < e; ++i) o[i - k] = std::min(in[i], cap) - beta;
  if (e < n) {
    const double x = std::min(in[e], cap) - beta;
    o[e - k] = x >= hi ? kInf : x;
  }
}

// out(y) = f(y) + price where y > slo, f(y) where y <= slo: the cost to go of a tick-end lag y
// with a price on ending the tick above the SLO. Still a non-decreasing step function: its level
// set k is {y <= min(thr[k], slo)} united with {slo < y <= thr[k - price]}, i.e.
// y <= max(min(thr[k], slo), thr[k - price]) (thr past its end: its last threshold; before its
// start: empty). out is never f.
inline void add_price_above(const StepFn& f, double slo, int64_t price, StepFn& out) {
  out.base = f.base;
  if (!f.feasible() || price <= 0 || f.thr.back() <= slo) {  // nothing above the SLO to price
    out.thr.assign(f.thr.begin(), f.thr.end());
    if (!f.feasible()) out.set_infeasible();
    return;
  }
  const std::size_t n = f.thr.size();
  const auto p = static_cast<std::size_t>(price);
  const double* in = f.thr.data();
  const double last = in[n - 1];
  // Levels from n - 1 + price on equal the last threshold (+infinity or not): the list ends there.
  out.thr.resize(n + p);
  double* o = out.thr.data();
  for (std::size_t k = 0; k < n + p; ++k) {
    const double own = std::min(k < n ? in[k] : last, slo);
    o[k] = k >= p ? std::max(own, in[k - p]) : own;
  }
  std::size_t len = out.thr.size();
  while (len >= 2 && o[len - 2] == o[len - 1]) --len;
  out.thr.resize(len);
}

// out (levels from base db) = pointwise max of the level sets of dst (from base db) and src
// (from base sb >= db): the level sets of min(f, g). Beyond the end of a list its last threshold
// holds. out may be dst itself (in place); otherwise one pass reads both lists and writes out,
// which spares the copy of dst that an in-place merge on a copy would need. out is never src.
inline void merge_above(const std::vector<double>& dst, int64_t db, const std::vector<double>& src,
                        int64_t sb, std::vector<double>& out) {
  const std::size_t nd = dst.size(), ns = src.size();
  const auto off = static_cast<std::size_t>(sb - db);
  const double dlast = dst.back(), slast = src.back();
  if (dlast == kInf && off + 1 >= nd) {  // dst covers the whole domain before src starts
    if (&out != &dst) out.assign(dst.begin(), dst.end());
    return;
  }
  // Where the result first reaches +infinity (each list is +infinity at most at its end).
  std::size_t cut = std::numeric_limits<std::size_t>::max();
  if (dlast == kInf) cut = nd;
  if (slast == kInf) cut = std::min(cut, off + ns);
  const std::size_t end = std::min(cut, std::max(nd, off + ns));
  const std::size_t common = std::min(nd, end);
  const std::size_t low = std::min(off, common);  // levels of dst alone
  if (&out == &dst) {
    out.resize(end, dlast);  // levels past dst's end: dst's last threshold
  } else {
    out.resize(end);
    std::copy(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(low), out.begin());
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(common),
              out.begin() + static_cast<std::ptrdiff_t>(std::max(common, std::min(off, end))),
              dlast);
  }
  double* o = out.data();
  const double* d = dst.data();
  const double* sp = src.data();
  // Levels [off, common): both lists.
  if (off < common) {
    const std::size_t both = std::min(common, off + ns);
    for (std::size_t i = off; i < both; ++i) o[i] = std::max(d[i], sp[i - off]);
    for (std::size_t i = both; i < common; ++i) o[i] = std::max(d[i], slast);
  }
  // Levels [max(common, off), end): src's thresholds against dst's last one.
  for (std::size_t i = std::max(common, off); i < end; ++i) {
    o[i] = std::max(dlast, i - off < ns ? sp[i - off] : slast);
  }
  // Trailing repeats of a finite last threshold say nothing more than "no level reaches beyond
  // it" (what the end of the list says): drop them.
  std::size_t len = out.size();
  while (len >= 2 && o[len - 2] == o[len - 1]) --len;
  out.resize(len);
}

// out = min(acc, g + add), pointwise. out may be acc itself; `scratch` is reused memory (and
// must be neither).
inline void min_to(const StepFn& acc, const StepFn& g, int64_t add, StepFn& out,
                   std::vector<double>& scratch) {
  if (!g.feasible()) {
    if (&out != &acc) out = acc;
    return;
  }
  const int64_t gb = g.base + add;
  if (!acc.feasible()) {
    out.base = gb;
    out.thr.assign(g.thr.begin(), g.thr.end());
    return;
  }
  if (gb >= acc.base) {
    merge_above(acc.thr, acc.base, g.thr, gb, out.thr);
    out.base = acc.base;
  } else if (&out == &acc) {
    merge_above(g.thr, gb, acc.thr, acc.base, scratch);
    out.thr.swap(scratch);
    out.base = gb;
  } else {
    merge_above(g.thr, gb, acc.thr, acc.base, out.thr);
    out.base = gb;
  }
}

// acc = min(acc, g + add), pointwise. `scratch` is reused memory.
inline void min_into(StepFn& acc, const StepFn& g, int64_t add, std::vector<double>& scratch) {
  min_to(acc, g, add, acc, scratch);
}

}  // namespace lagpilot::sim::fluid
