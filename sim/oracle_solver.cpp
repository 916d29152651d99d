#include "sim/oracle_solver.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <utility>

#include "sim/fluid_lag.h"
#include "sim/oracle_checks.h"
#include "sim/oracle_step_fn.h"
#include "sim/worker_schedule.h"

namespace lagpilot::sim::fluid {
namespace {

// Ticks of a block of value functions that stays in the cache (see block_ticks).
constexpr int64_t kCacheBlock = 64;

// ---------------------------------------------------------------------------------------------
// The reformulated problem (see the header): productive counts p per tick, warm-up as a cost.
//
// Ticks are numbered j = 1 .. K here (tick j = [(j-1) T, j T)); the state at t_j = j T is the
// productive count q at the end of tick j and the lag L. Within tick j the productive count is
// p^a in [t_{j-1}, t_{j-1} + f T) (after removals at t_{j-1}) and p^b in the rest (after
// additions); with f = 0 the first part is empty. Cost of tick j: p^b + m (p^b - p^a).
class OracleSolver {
 public:
  OracleSolver(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
               const OracleOptions& options)
      : trace_(trace), options_(options), cursor_(trace) {
    check_oracle_inputs(trace, config, guards, options);
    price_ = options.change_price;
    reversal_price_ = options.reversal_price;
    soft_slo_ = options.lag_ceiling > 0.0;
    ceiling_ = options.lag_ceiling;
    slo_price_ = options.slo_price;
    // The calm-stretch split rests on an exchange argument that a price breaks: with a price on
    // changes an optimal schedule may rather hold a raised pool through a calm stretch than drop
    // to min_workers and rise again (two changes). So a priced DP runs over the whole trace.
    split_calm_ = options.split_at_calm && price_ == 0 && reversal_price_ == 0 && !soft_slo_;
    tick_ = config.tick_seconds;
    ticks_ = tick_count(trace, tick_);
    slo_ = static_cast<double>(config.lag_slo);
    const double w = config.model.warmup_seconds / tick_;
    double whole = std::floor(w + 1e-9);
    double frac = w - whole;
    if (frac < 1e-9) frac = 0.0;
    if (whole > 1e8) throw std::invalid_argument("oracle: warm-up longer than 1e8 ticks");
    m_ = static_cast<int>(whole);
    f_ = frac;
    split_ = f_ > 0.0;
    if (reversal_price_ > 0 && split_) {
      throw std::invalid_argument(
          "oracle: reversal_price needs a warm-up of whole ticks (a tick with a removal and an "
          "addition would hold a reversal of its own)");
    }
    dirs_ = reversal_price_ > 0 ? 3 : 1;
    j0_ = static_cast<int64_t>(m_) + 2;
    initial_ = config.initial_workers;
    min_ = guards.min_workers;
    max_ = guards.max_workers;
    pmax_ = std::max(initial_, max_);
    capacity_.resize(static_cast<std::size_t>(pmax_) + 1);
    for (int p = 0; p <= pmax_; ++p) capacity_[p] = config.model.capacity(p);
    best_ = min_;
    for (int p = min_ + 1; p <= max_; ++p) {
      if (capacity_[p] > capacity_[best_]) best_ = p;
    }
    for (int p = std::min(initial_, min_); p < best_; ++p) {
      if (capacity_[p + 1] < capacity_[p]) {
        throw std::invalid_argument(
            "oracle: capacity falls from " + std::to_string(p) + " to " + std::to_string(p + 1) +
            " workers, below the best count " + std::to_string(best_) +
            " (min_workers past the USL peak?); the oracle needs capacity non-decreasing up to it");
      }
    }
  }

  OracleResult solve();

 private:
  struct Ranges {
    int a_lo, a_hi;  // productive counts allowed after the removals at the tick's start
    int b_lo, b_hi;  // ... and after the additions (the state at the tick's end)
    bool grow;       // additions allowed in this tick
  };

  // Tick 0 stands for the start state (q = initial_workers).
  Ranges ranges(int64_t j) const {
    if (j <= 1) return {initial_, initial_, initial_, initial_, false};
    if (j < j0_) {
      if (initial_ < min_) return {initial_, initial_, initial_, initial_, false};
      const int top = std::min(initial_, best_);
      return {min_, top, min_, top, false};
    }
    if (j == j0_ && initial_ < min_) return {initial_, initial_, min_, best_, true};
    return {min_, best_, min_, best_, true};
  }

  // Loads the arrival pieces of tick j into a_pieces_ and b_pieces_.
  void load_tick(int64_t j) {
    const double t0 = static_cast<double>(j - 1) * tick_;
    const double t1 = static_cast<double>(j) * tick_;
    if (split_) {
      const double tm = t0 + f_ * tick_;
      cursor_.pieces(t0, tm, a_pieces_);
      cursor_.pieces(tm, t1, b_pieces_);
    } else {
      a_pieces_.clear();
      cursor_.pieces(t0, t1, b_pieces_);
    }
  }
  LagMap map_a(int p) const { return lag_map(a_pieces_, capacity_[p]); }
  LagMap map_b(int p) const { return lag_map(b_pieces_, capacity_[p]); }
  // Lag at the end of the loaded tick from `lag` at its start, with p^a = r and p^b = p.
  double advance(double lag, int r, int p) const {
    return map_b(p).apply(split_ ? map_a(r).apply(lag) : lag);
  }
  bool unavoidable(int64_t j) const {
    // The last run starting at or before j.
    const auto after = std::upper_bound(
        unavoidable_.begin(), unavoidable_.end(), j,
        [](int64_t t, const std::pair<int64_t, int64_t>& r) { return t < r.first; });
    return after != unavoidable_.begin() && j <= std::prev(after)->second;
  }
  // The largest lag allowed at the end of tick j: the SLO (or, soft, the ceiling) outside U.
  double cap_of(int64_t j) const { return unavoidable(j) ? kInf : soft_slo_ ? ceiling_ : slo_; }
  // Whether a tick ending above the SLO counts against it (soft SLO, outside U), paying the SLO
  // price (which may be 0).
  bool priced_above(int64_t j) const { return soft_slo_ && !unavoidable(j); }
  // f, or f with the SLO price on tick-end lags above the SLO (into priced_) when tick j pays it.
  const StepFn& with_slo_price(int64_t j, const StepFn& f) {
    if (slo_price_ == 0 || !priced_above(j)) return f;
    add_price_above(f, slo_, slo_price_, priced_);
    return priced_;
  }
  // p_j, written in ascending j by the forward passes; the ticks they skip (calm) are min_.
  void set_productive(int64_t j, int p) {
    if (j < productive_.size()) throw std::logic_error("oracle: forward pass out of order");
    productive_.append(min_, j - productive_.size());
    productive_.append(p);
  }
  WorkerSchedule pool_schedule() const;

  void find_unavoidable_and_calm();
  void solve_segment(int64_t s, int64_t e, int q0);
  int64_t block_ticks(int64_t n) const;
  // Value-function sets V (one StepFn per productive count) live in pool_, named by index.
  void backward_step(int64_t j, const std::vector<StepFn>& next, std::vector<StepFn>& out,
                     double lo, double hi);
  void directed_step(int64_t j, const std::vector<StepFn>& next, std::vector<StepFn>& out,
                     double lo, double hi);
  template <typename Visit>
  void backward_range(int64_t s, int64_t top, int top_set, int64_t bottom, int first_slot,
                      bool keep, Visit&& visit);
  void forward(int64_t from, int64_t to, const std::vector<int>& sets, int64_t sets_first);
  std::vector<StepFn>& slot(int id) {
    if (static_cast<std::size_t>(id) >= pool_.size()) {
      pool_.resize(static_cast<std::size_t>(id) + 1,
                   std::vector<StepFn>(static_cast<std::size_t>(dirs_ * (pmax_ + 1))));
    }
    return pool_[static_cast<std::size_t>(id)];
  }

  const Trace& trace_;
  OracleOptions options_;
  int64_t price_ = 0;           // OracleOptions::change_price
  int64_t reversal_price_ = 0;  // OracleOptions::reversal_price
  bool soft_slo_ = false;       // OracleOptions::lag_ceiling > 0
  double ceiling_ = 0.0;        // OracleOptions::lag_ceiling
  int64_t slo_price_ = 0;       // OracleOptions::slo_price
  // States per productive count: 1, or 3 with a reversal price (the direction of the last
  // change: none, up, down); a value-function set holds dirs_ x (pmax_ + 1) functions, the
  // direction d's at d x (pmax_ + 1) + q.
  int dirs_ = 1;
  int d_ = 0;               // forward pass: the direction of the last change
  bool split_calm_ = true;  // split at calm stretches (never with a price)
  double tick_ = 1.0;
  int64_t ticks_ = 1;
  double slo_ = 0.0;
  int m_ = 0;
  double f_ = 0.0;
  bool split_ = false;
  int64_t j0_ = 2;  // first tick in which added workers can be productive
  int initial_ = 0, min_ = 0, max_ = 0, best_ = 0, pmax_ = 0;
  std::vector<double> capacity_;

  // U as [first, last] runs of ticks, ascending, and its size: the runs are few (overloads),
  // the ticks many.
  std::vector<std::pair<int64_t, int64_t>> unavoidable_;
  int64_t unavoidable_ticks_ = 0;
  std::vector<std::pair<int64_t, int64_t>> calm_;  // [first, last] ticks at min_workers, lag 0
  WorkerSchedule productive_;                      // p^b by tick j = 0 .. K (0: initial)

  // Per segment.
  std::vector<double> lag_lo_, lag_hi_;  // bounds of any allowed lag at t_{s-1+i}
  int q_ = 0;                            // forward pass state
  double lag_ = 0;                       // forward pass state
  int64_t path_cost_ = 0;
  int64_t path_slo_ticks_ = 0;  // forward pass: priced ticks ending above the SLO
  int64_t mismatches_ = 0;
  int64_t dp_ticks_ = 0;
  int segments_ = 0;
  int64_t objective_ = 0;
  int64_t level_sum_ = 0, level_count_ = 0, level_max_ = 0;

  std::vector<std::vector<StepFn>> pool_;  // value-function sets
  std::vector<int> block_sets_;            // pool_ index of V per time of a block (forward pass)

  // Scratch.
  std::vector<Piece> a_pieces_, b_pieces_;
  PieceCursor cursor_;
  std::vector<StepFn> g_, y_, stay_;
  StepFn acc_;
  StepFn priced_;  // with_slo_price's result
  std::vector<double> scratch_;
};

void OracleSolver::find_unavoidable_and_calm() {
  unavoidable_.clear();
  unavoidable_ticks_ = 0;
  calm_.clear();
  bool unavoidable_before = false;  // tick j - 1 in U (tick 0 is not)
  double best_lag = 0.0;  // with every worker the oracle may use: pointwise the smallest lag
  int best_q = initial_;
  double max_lag = 0.0;  // with the fewest workers, capped at the SLO: the largest allowed lag
  bool in_run = false;
  int64_t run_start = 0, drained_at = -1;
  double drain_lag = 0.0;
  const double calm_capacity = capacity_[min_];
  auto close_run = [&](int64_t last, bool at_end) {
    // Exchange argument (header): an optimal schedule sits at min_workers with lag 0 on
    // [drained_at, last - 1] (on [drained_at, last] at the trace's end), provided the run is
    // long enough to pay the re-warm-up (last - run_start >= m).
    if (drained_at < 0) return;
    if (at_end) {
      calm_.emplace_back(drained_at, last);
    } else if (last - run_start >= m_ && drained_at <= last - 1) {
      calm_.emplace_back(drained_at, last - 1);
    }
  };
  for (int64_t j = 1; j <= ticks_; ++j) {
    load_tick(j);
    const Ranges r = ranges(j);
    const int pb = r.grow ? r.b_hi : std::min(best_q, r.b_hi);
    best_lag = advance(best_lag, std::min(best_q, pb), pb);
    best_q = pb;
    const bool in_u = best_lag > slo_ + kLagTol;
    if (in_u) {
      if (unavoidable_before) {
        unavoidable_.back().second = j;
      } else {
        unavoidable_.emplace_back(j, j);
      }
      ++unavoidable_ticks_;
    }
    const bool u_before = unavoidable_before;
    unavoidable_before = in_u;
    const double before = max_lag;
    max_lag = std::min(in_u ? kInf : slo_, advance(max_lag, r.a_lo, r.b_lo));
    if (!split_calm_) continue;
    const bool calm = j >= j0_ + 1 && !in_u && max_rate_of(a_pieces_) <= calm_capacity &&
                      max_rate_of(b_pieces_) <= calm_capacity;
    if (calm) {
      if (!in_run && !u_before) {
        in_run = true;
        run_start = j;
        drained_at = -1;
        drain_lag = before;
      }
      if (in_run) {
        drain_lag = advance(drain_lag, min_, min_);
        if (drained_at < 0 && drain_lag <= 0.0) drained_at = j;
      }
    } else if (in_run) {
      close_run(j - 1, false);
      in_run = false;
    }
  }
  if (in_run) close_run(ticks_, true);
}

void OracleSolver::backward_step(int64_t j, const std::vector<StepFn>& next,
                                 std::vector<StepFn>& out, double lo, double hi) {
  if (dirs_ > 1) {
    directed_step(j, next, out, lo, hi);
    return;
  }
  load_tick(j);
  const Ranges r = ranges(j);
  const Ranges prev = ranges(j - 1);
  const double cap = cap_of(j);
  // G_p: the tick's second part (or all of it) with p^b = p, plus the tick's charge p.
  const double mid_lo = split_ ? 0.0 : lo;
  const double mid_hi = split_ ? kInf : hi;
  for (int p = r.b_lo; p <= r.b_hi; ++p) {
    transform(with_slo_price(j, next[p]), map_b(p), cap, p, mid_lo, mid_hi, g_[p]);
  }
  // With a change price: S_q, the tick with the productive count held at q (no removal, no
  // addition), before the running minima below mix in the changes.
  if (price_ > 0) {
    for (int q = prev.b_lo; q <= prev.b_hi; ++q) {
      if (q < r.a_lo || q > r.a_hi || q < r.b_lo || q > r.b_hi) {
        stay_[q].set_infeasible();
      } else if (split_) {
        transform(g_[q], map_a(q), kInf, 0, lo, hi, stay_[q]);
      } else {
        stay_[q] = g_[q];
      }
    }
  }
  // Additions: p^a = r may grow to any p >= r at m per worker (running minimum from the top).
  if (r.grow) {
    for (int p = r.b_hi - 1; p >= r.b_lo; --p) min_into(g_[p], g_[p + 1], m_, scratch_);
  }
  // Removals at the tick's start: from q to any p^a <= q, free (running minimum from the bottom).
  // Without a price V_q is that running minimum itself, so it is built in out[q] from out[q - 1]
  // (no copy of a running accumulator per q); with one, acc_ holds it and out[q] prices it.
  acc_.set_infeasible();
  const StepFn* below = &acc_;  // the running minimum up to q - 1
  int a = r.a_lo;
  for (int q = prev.b_lo; q <= prev.b_hi; ++q) {
    StepFn& o = out[q];
    bool written = false;
    for (; a <= std::min(q, r.a_hi); ++a) {
      // X_a = G_a, or G_{b_lo} plus the additions up to it when a lies below b_lo.
      const int from = std::max(a, r.b_lo);
      int64_t add = static_cast<int64_t>(m_) * (from - a);
      const StepFn* x = &g_[from];
      if (split_) {
        transform(g_[from], map_a(a), kInf, add, lo, hi, y_[a]);
        x = &y_[a];
        add = 0;
      }
      if (price_ > 0) {
        min_into(acc_, *x, add, scratch_);
      } else {
        min_to(written ? o : *below, *x, add, o, scratch_);
        written = true;
      }
    }
    if (price_ > 0) {
      // Any change (removals, additions or both) pays the price once: V_q = min(S_q, A_q + price).
      o.base = acc_.feasible() ? acc_.base + price_ : kInfCost;
      o.thr.assign(acc_.thr.begin(), acc_.thr.end());
      min_into(o, stay_[q], 0, scratch_);
    } else {
      if (!written) o = *below;
      below = &o;
    }
    const auto levels = static_cast<int64_t>((price_ > 0 ? acc_ : o).thr.size());
    level_sum_ += levels;
    ++level_count_;
    level_max_ = std::max(level_max_, levels);
  }
}

// backward_step with a reversal price (whole-tick warm-up: no tick splits, so a tick changes the
// productive count at most once, up or down). From state (q, d) at the tick's start: stay at q
// (direction d kept); go up to p > q (additions, m each; direction up); go down to p < q
// (removals; direction down). A change pays change_price, and reversal_price when it goes
// against d (d = none before the first change).
void OracleSolver::directed_step(int64_t j, const std::vector<StepFn>& next,
                                 std::vector<StepFn>& out, double lo, double hi) {
  load_tick(j);
  const Ranges r = ranges(j);
  const Ranges prev = ranges(j - 1);
  const double cap = cap_of(j);
  const int n = pmax_ + 1;
  for (int d = 0; d < 3; ++d) {
    for (int p = r.b_lo; p <= r.b_hi; ++p) {
      transform(with_slo_price(j, next[d * n + p]), map_b(p), cap, p, lo, hi, g_[d * n + p]);
    }
  }
  // y_[p] = min over p' >= p of G_up(p') + m (p' - p): the cheapest way up to p or beyond.
  if (r.grow) {
    y_[r.b_hi] = g_[n + r.b_hi];
    for (int p = r.b_hi - 1; p >= r.b_lo; --p) {
      y_[p] = g_[n + p];
      min_into(y_[p], y_[p + 1], m_, scratch_);
    }
  }
  const int down_lo = std::max(r.a_lo, r.b_lo), down_hi = std::min(r.a_hi, r.b_hi);
  StepFn down;  // min of G_down(p) over the allowed p < q (grows with q)
  int next_down = down_lo;
  StepFn up;
  for (int q = prev.b_lo; q <= prev.b_hi; ++q) {
    for (; next_down <= std::min(q - 1, down_hi); ++next_down) {
      min_into(down, g_[2 * n + next_down], 0, scratch_);
    }
    const bool keeps = q >= r.a_lo && q <= r.a_hi;  // q itself: no removal before an addition
    const int s = std::max(q + 1, r.b_lo);
    up.set_infeasible();
    if (r.grow && keeps && s <= r.b_hi) {
      up = y_[s];
      if (up.feasible()) up.base += static_cast<int64_t>(m_) * (s - q);
    }
    const bool stays = keeps && q >= r.b_lo && q <= r.b_hi;
    for (int d = 0; d < 3; ++d) {
      StepFn& o = out[d * n + q];
      if (stays) {
        o = g_[d * n + q];
      } else {
        o.set_infeasible();
      }
      min_into(o, up, price_ + (d == 2 ? reversal_price_ : 0), scratch_);
      min_into(o, down, price_ + (d == 1 ? reversal_price_ : 0), scratch_);
      const auto levels = static_cast<int64_t>(o.thr.size());
      level_sum_ += levels;
      ++level_count_;
      level_max_ = std::max(level_max_, levels);
    }
  }
}

// The backward recursion from V at relative index `top` (pool_[top_set]) down to index
// `bottom`, calling visit(i, set) for i = top - 1 .. bottom. Computed sets go to pool slots from
// `first_slot`: alternating between two when `keep` is false (only the latest is needed), else
// one new slot each (the caller keeps them all).
template <typename Visit>
void OracleSolver::backward_range(int64_t s, int64_t top, int top_set, int64_t bottom,
                                  int first_slot, bool keep, Visit&& visit) {
  // Size pool_ up front: no reallocation while references into it are held below.
  slot(keep ? first_slot + static_cast<int>(top - bottom) - 1 : first_slot + 1);
  int next = top_set;
  int writes = 0;
  for (int64_t i = top - 1; i >= bottom; --i) {
    const int id = keep ? first_slot + writes++ : first_slot + writes++ % 2;
    backward_step(s + i, pool_[static_cast<std::size_t>(next)], pool_[static_cast<std::size_t>(id)],
                  lag_lo_[static_cast<std::size_t>(i)], lag_hi_[static_cast<std::size_t>(i)]);
    next = id;
    visit(i, next);
  }
}

void OracleSolver::forward(int64_t from, int64_t to, const std::vector<int>& sets,
                           int64_t sets_first) {
  for (int64_t j = from; j <= to; ++j) {
    load_tick(j);
    const Ranges r = ranges(j);
    const std::vector<StepFn>& next =
        pool_[static_cast<std::size_t>(sets[static_cast<std::size_t>(j - sets_first)])];
    const double cap = cap_of(j);
    const bool priced = priced_above(j);
    int64_t best = kInfCost;
    int best_p = -1;
    // With a reversal price: the direction after choosing p, and whether p reverses.
    auto dir_of = [&](int p) { return p > q_ ? 1 : p < q_ ? 2 : d_; };
    auto reversal = [&](int p) { return d_ != 0 && p != q_ && dir_of(p) != d_; };
    double best_lag = 0.0;
    for (int p = r.b_lo; p <= r.b_hi; ++p) {
      if (!r.grow && p > q_) continue;
      const int a = std::min(q_, p);  // removing more than needed never helps (see header)
      if (a < r.a_lo || a > r.a_hi) continue;
      const double lag = advance(lag_, a, p);
      if (lag > cap + kLagTol) continue;
      const int64_t above = priced && lag > slo_ + kLagTol ? slo_price_ : 0;
      const int64_t rest = next[(dirs_ > 1 ? dir_of(p) : 0) * (pmax_ + 1) + p].eval(lag);
      if (rest >= kInfCost) continue;
      const int64_t total = rest + p + static_cast<int64_t>(m_) * (p - a) + (p != q_ ? price_ : 0) +
                            (reversal(p) ? reversal_price_ : 0) + above;
      if (total < best || (total == best && std::abs(p - q_) < std::abs(best_p - q_))) {
        best = total;
        best_p = p;
        best_lag = lag;
      }
    }
    if (best_p < 0) {
      throw std::logic_error("oracle: no feasible choice at tick " + std::to_string(j) + " (lag " +
                             std::to_string(lag_) + ", productive " + std::to_string(q_) + ")");
    }
    path_cost_ += best_p + static_cast<int64_t>(m_) * (best_p - std::min(q_, best_p));
    path_cost_ += (best_p != q_ ? price_ : 0) + (reversal(best_p) ? reversal_price_ : 0);
    if (priced && best_lag > slo_ + kLagTol) {
      path_cost_ += slo_price_;
      ++path_slo_ticks_;
    }
    d_ = dir_of(best_p);
    set_productive(j, best_p);
    q_ = best_p;
    lag_ = best_lag;
  }
}

// Ticks between checkpoints for a segment of n ticks. The forward pass reads each block's value
// functions right after the backward pass recomputed them; a block of kCacheBlock ticks stays in
// the cache in between (P * D doubles a set: ~1 MB for 64 sets with P = 13, D = 120), a block of
// 1024 does not, and reading it back cold cost more than the DP's arithmetic. So blocks are that
// short whenever the checkpoints they need cost no more sets than OracleOptions::checkpoint_ticks
// would (n / every + every sets); the sets kept, and the recomputation (every tick once more),
// stay within what the option allows.
int64_t OracleSolver::block_ticks(int64_t n) const {
  const int64_t option = options_.checkpoint_ticks;
  auto sets = [n](int64_t every) { return (n + every - 1) / every + every; };
  int64_t every = std::min<int64_t>(kCacheBlock, option);
  while (every < option && sets(every) > sets(option)) every = std::min(option, every * 2);
  return every;
}

void OracleSolver::solve_segment(int64_t s, int64_t e, int q0) {
  const int64_t n = e - s + 1;
  ++segments_;
  dp_ticks_ += n;
  // Bounds of the lag of any allowed schedule: every worker it may use (lower) and the fewest,
  // capped at the SLO (upper). Index i: the time t_{s-1+i}.
  lag_lo_.assign(static_cast<std::size_t>(n) + 1, 0.0);
  lag_hi_.assign(static_cast<std::size_t>(n) + 1, 0.0);
  {
    double lo = 0.0, hi = 0.0;
    int q = q0;
    for (int64_t j = s; j <= e; ++j) {
      load_tick(j);
      const Ranges r = ranges(j);
      const int pb = r.grow ? r.b_hi : std::min(q, r.b_hi);
      lo = advance(lo, std::min(q, pb), pb);
      q = pb;
      hi = std::min(cap_of(j), advance(hi, r.a_lo, r.b_lo));
      if (lo > hi + kLagTol) {
        throw std::logic_error("oracle: empty lag range at tick " + std::to_string(j));
      }
      lag_lo_[static_cast<std::size_t>(j - s + 1)] = lo;
      lag_hi_[static_cast<std::size_t>(j - s + 1)] = std::max(lo, hi);
    }
  }
  // Slot 0: the terminal set (zero cost to go), or a block's checkpoint.
  {
    std::vector<StepFn>& terminal = slot(0);
    for (StepFn& f : terminal) f.set_infeasible();
    const Ranges r = ranges(e);
    for (int d = 0; d < dirs_; ++d) {
      for (int q = r.b_lo; q <= r.b_hi; ++q) terminal[d * (pmax_ + 1) + q].set_zero();
    }
  }
  const int64_t every = block_ticks(n);
  int64_t expected = kInfCost;
  q_ = q0;
  d_ = 0;
  lag_ = 0.0;
  path_cost_ = 0;
  auto value_at_start = [&](int set) { return pool_[static_cast<std::size_t>(set)][q0].eval(0.0); };
  if (n <= every) {
    // Keep every value function: block_sets_[i] = V at relative index i.
    block_sets_.assign(static_cast<std::size_t>(n) + 1, 0);
    backward_range(s, n, 0, 0, 1, true,
                   [&](int64_t i, int set) { block_sets_[static_cast<std::size_t>(i)] = set; });
    expected = value_at_start(block_sets_[0]);
    forward(s, e, block_sets_, s - 1);
  } else {
    // Checkpoints at relative indices n, n - every, ... (> 0); the forward pass recomputes the
    // value functions of one block at a time from its checkpoint.
    std::vector<std::pair<int64_t, std::vector<StepFn>>> checkpoints;  // descending index
    checkpoints.emplace_back(n, slot(0));
    backward_range(s, n, 0, 0, 1, false, [&](int64_t i, int set) {
      if (i > 0 && (n - i) % every == 0) {
        checkpoints.emplace_back(i, pool_[static_cast<std::size_t>(set)]);
      }
      if (i == 0) expected = value_at_start(set);
    });
    int64_t lo_index = 0;
    for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it) {
      const int64_t hi_index = it->first;
      // block_sets_[k] = V at relative index lo_index + k, for k = 1 .. hi_index - lo_index.
      block_sets_.assign(static_cast<std::size_t>(hi_index - lo_index) + 1, 0);
      slot(0) = it->second;
      backward_range(s, hi_index, 0, lo_index + 1, 1, true, [&](int64_t i, int set) {
        block_sets_[static_cast<std::size_t>(i - lo_index)] = set;
      });
      forward(s + lo_index, s - 1 + hi_index, block_sets_, s - 1 + lo_index);
      lo_index = hi_index;
    }
  }
  if (expected >= kInfCost) {
    throw std::logic_error("oracle: segment [" + std::to_string(s) + ", " + std::to_string(e) +
                           "] infeasible (a bug: the unavoidable ticks make it feasible)");
  }
  objective_ += expected;
  mismatches_ += std::abs(path_cost_ - expected);
}

OracleResult OracleSolver::solve() {
  find_unavoidable_and_calm();
  productive_ = WorkerSchedule();
  productive_.append(initial_);
  g_.assign(static_cast<std::size_t>(dirs_ * (pmax_ + 1)), StepFn{});
  y_.assign(static_cast<std::size_t>(pmax_) + 1, StepFn{});
  stay_.assign(static_cast<std::size_t>(pmax_) + 1, StepFn{});
  objective_ = 0;
  path_slo_ticks_ = 0;
  int64_t next = 1;
  auto busy = [&](int64_t s, int64_t e) {
    if (s > e) return;
    solve_segment(s, e, s == 1 ? initial_ : min_);
  };
  for (const auto& [first, last] : calm_) {
    busy(next, first - 1);
    objective_ += static_cast<int64_t>(min_) * (last - first + 1);
    next = last + 1;
  }
  busy(next, ticks_);

  OracleResult result;
  result.warmup_ticks = m_;
  result.warmup_fraction = f_;
  result.best_workers = best_;
  result.dp_ticks = dp_ticks_;
  result.segments = segments_;
  result.forward_mismatches = mismatches_;
  result.change_price = price_;
  result.priced_optimum = objective_;
  result.reversal_price = reversal_price_;
  result.mean_levels = level_count_ > 0 ? double(level_sum_) / double(level_count_) : 0.0;
  result.max_levels = level_max_;
  result.unavoidable_ticks = unavoidable_ticks_;
  productive_.append(min_, ticks_ + 1 - productive_.size());  // calm to the end
  // Changes and reversals of the productive schedule over the whole trace (calm stretches
  // included): what the prices charged when they are on (one segment).
  int last_direction = 0;
  const auto& p_runs = productive_.runs();
  for (std::size_t i = 1; i < p_runs.size(); ++i) {
    const int direction = p_runs[i].workers > p_runs[i - 1].workers ? 1 : 2;
    ++result.productive_changes;
    if (last_direction != 0 && direction != last_direction) ++result.productive_reversals;
    last_direction = direction;
  }
  result.lag_ceiling = ceiling_;
  result.slo_price = slo_price_;
  result.priced_slo_ticks = path_slo_ticks_;
  result.bound_worker_ticks = objective_ - price_ * result.productive_changes -
                              reversal_price_ * result.productive_reversals -
                              slo_price_ * path_slo_ticks_;
  result.workers = pool_schedule();
  const auto& runs = result.workers.runs();
  for (std::size_t r = 0; r < runs.size(); ++r) {
    result.worker_ticks +=
        static_cast<int64_t>(runs[r].workers) * static_cast<int64_t>(result.workers.length(r));
  }
  return result;
}

// Pool schedule: n_j = max(min_workers, p_j .. p_{j+m}) for j >= 2 (the workers warming for the
// next m ticks are in the pool), n_1 = initial; workers[j - 1] = n_j. A sliding-window maximum
// over the runs of p: the maximum changes only where a run enters the window (at its first tick
// - m) or the run holding it leaves (after its last tick), so the work is per run, not per tick.
WorkerSchedule OracleSolver::pool_schedule() const {
  WorkerSchedule pool;
  pool.append(initial_);  // n_1
  const auto& runs = productive_.runs();
  auto last_of = [&](std::size_t r) {
    return runs[r].first + static_cast<int64_t>(productive_.length(r)) - 1;
  };
  std::deque<std::size_t> window;  // runs in the window, decreasing counts (front: the maximum)
  std::size_t entering = 0;        // the next run to enter
  for (int64_t j = 2; j <= ticks_;) {
    for (; entering < runs.size() && runs[entering].first <= j + m_; ++entering) {
      while (!window.empty() && runs[window.back()].workers <= runs[entering].workers) {
        window.pop_back();
      }
      window.push_back(entering);
    }
    while (last_of(window.front()) < j) window.pop_front();
    int64_t until = std::min(ticks_, last_of(window.front()));  // the maximum's run leaves after
    if (entering < runs.size()) until = std::min(until, runs[entering].first - m_ - 1);
    pool.append(std::max(min_, runs[window.front()].workers), until - j + 1);
    j = until + 1;
  }
  return pool;
}

}  // namespace

OracleResult solve_schedule(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                            const OracleOptions& options) {
  return OracleSolver(trace, config, guards, options).solve();
}

}  // namespace lagpilot::sim::fluid
