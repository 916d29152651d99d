#pragma once
// The fluid model of the lag that the oracle optimizes and evaluates: arrivals as pieces of
// constant rate, workers as a constant capacity per tick, and the lag as
// L -> max(0, L + (rate - capacity) * length) over each piece (no service-time noise, no queue).
//
// Internal to the oracle (sim/oracle.h is the interface). Thread-safety: pure functions.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/oracle.h"

namespace lagpilot::sim::fluid {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Lag comparisons (messages): floating-point noise of the lag arithmetic is far below this.
constexpr double kLagTol = 1e-6;

// A stretch of constant arrival rate.
struct Piece {
  double length;
  double rate;
};

// What a stretch of pieces does to the lag at a fixed capacity: L -> max(alpha, L + beta), L >= 0
// (the composition of max(0, L + (rate - capacity) * length) over the pieces).
struct LagMap {
  double alpha = 0.0;
  double beta = 0.0;
  double apply(double lag) const { return std::max(alpha, lag + beta); }
};

// The pieces of [t0, t1), cut at trace-bin boundaries (rate 0 past the trace's end); adjacent
// pieces of equal rate are merged.
void trace_pieces(const Trace& trace, double t0, double t1, std::vector<Piece>& out);

// trace_pieces for the ticks of a pass through the trace: the same pieces, without a division
// per call while t0 stays within one bin (it remembers which t0 map to the bin of the last call).
// Any order of calls is right; in order, the division runs once per bin.
class PieceCursor {
 public:
  explicit PieceCursor(const Trace& trace) : trace_(&trace) {}
  void pieces(double t0, double t1, std::vector<Piece>& out) {
    // The common case inline: a tick within the bin of the last call (one piece).
    if (t0 >= from_ && t0 < until_ && t0 < t1 && bin_ < trace_->rates.size() && bin_end_ > t0 &&
        bin_end_ >= t1) {
      out.clear();
      out.push_back(Piece{t1 - t0, trace_->rates[bin_]});
      return;
    }
    seek_and_cut(t0, t1, out);
  }

 private:
  void seek_and_cut(double t0, double t1, std::vector<Piece>& out);

  const Trace* trace_;
  std::size_t bin_ = 0;
  double from_ = kInf, until_ = -kInf;  // the t0 that map to bin_: [from_, until_)
  double bin_end_ = 0.0;                // (bin_ + 1) bin, as trace_pieces computes it
};

// Inline: the DP and the passes over every tick call these several times a tick.
inline LagMap lag_map(const std::vector<Piece>& pieces, double capacity) {
  LagMap m;
  for (const Piece& p : pieces) {
    const double d = (p.rate - capacity) * p.length;
    m.beta += d;
    m.alpha = std::max(0.0, m.alpha + d);
  }
  return m;
}

inline double max_rate_of(const std::vector<Piece>& pieces) {
  double r = 0.0;
  for (const Piece& p : pieces) r = std::max(r, p.rate);
  return r;
}

int64_t tick_count(const Trace& trace, double tick);

void check_trace(const Trace& trace, const char* who);

void check_config(const SimConfig& c, const char* who);

// Simulates the worker stack and the fluid lag; fills `run` (KPIs, and when given series and
// decisions as `config` asks). Without `run` (evaluate_fluid) it also returns the per-tick lag
// and productive counts; with it, nothing per tick (the oracle's memory does not grow with the
// trace beyond its schedule's runs).
FluidRun fluid_run(const Trace& trace, const SimConfig& config, const WorkerSchedule& workers,
                   RunResult* run, const std::string& policy_name);

}  // namespace lagpilot::sim::fluid
