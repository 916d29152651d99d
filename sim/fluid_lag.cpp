#include "sim/fluid_lag.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "policies/number_text.h"
#include "sim/lag_quantile.h"

namespace lagpilot::sim::fluid {

namespace {

// The pieces of [t0, t1) from bin b on, b = floor(max(0, t0 / bin)) (trace_pieces).
void pieces_from(const Trace& trace, std::size_t b, double t0, double t1, std::vector<Piece>& out) {
  out.clear();
  const double bin = trace.bin_seconds;
  const std::size_t bins = trace.rates.size();
  auto append = [&out](double length, double rate) {
    if (length <= 0.0) return;
    if (!out.empty() && out.back().rate == rate) {
      out.back().length += length;
    } else {
      out.push_back(Piece{length, rate});
    }
  };
  double u = t0;
  while (u < t1) {
    if (b >= bins) {
      append(t1 - u, 0.0);
      break;
    }
    const double bin_end = static_cast<double>(b + 1) * bin;
    if (bin_end > u) {
      const double end = std::min(bin_end, t1);
      append(end - u, trace.rates[b]);
      u = end;
    }
    ++b;
  }
}

std::size_t first_bin(const Trace& trace, double t0) {
  return static_cast<std::size_t>(std::max(0.0, std::floor(t0 / trace.bin_seconds)));
}

}  // namespace

void trace_pieces(const Trace& trace, double t0, double t1, std::vector<Piece>& out) {
  pieces_from(trace, first_bin(trace, t0), t0, t1, out);
}

void PieceCursor::seek_and_cut(double t0, double t1, std::vector<Piece>& out) {
  if (!(t0 >= from_ && t0 < until_)) {
    bin_ = first_bin(*trace_, t0);
    // first_bin is a non-decreasing function of t0 (a correctly rounded division, floor and
    // clamp are), so the t0 it maps to bin_ form an interval: [from_, until_), the first doubles
    // it maps past bin_ - 1 and past bin_, found by stepping from the product to where the
    // division's rounding turns.
    auto first_past = [this](std::size_t b) {  // the smallest t with first_bin(t) > b
      double t = static_cast<double>(b + 1) * trace_->bin_seconds;
      while (first_bin(*trace_, t) > b) t = std::nextafter(t, -kInf);
      while (first_bin(*trace_, t) <= b) t = std::nextafter(t, kInf);
      return t;
    };
    from_ = bin_ == 0 ? -kInf : first_past(bin_ - 1);
    until_ = first_past(bin_);
    bin_end_ = static_cast<double>(bin_ + 1) * trace_->bin_seconds;
  }
  pieces_from(*trace_, bin_, t0, t1, out);
}

int64_t tick_count(const Trace& trace, double tick) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(trace.duration() / tick - 1e-9)));
}

void check_trace(const Trace& trace, const char* who) {
  const std::string prefix = std::string(who) + ": trace '" + trace.source + "'";
  if (trace.rates.empty()) throw std::invalid_argument(prefix + " has no bins");
  if (!(trace.bin_seconds > 0.0) || !std::isfinite(trace.bin_seconds)) {
    throw std::invalid_argument(prefix + ": bin_seconds must be > 0");
  }
  for (std::size_t i = 0; i < trace.rates.size(); ++i) {
    if (!(trace.rates[i] >= 0.0) || !std::isfinite(trace.rates[i])) {
      throw std::invalid_argument(prefix + ": bin " + std::to_string(i) + " has rate " +
                                  std::to_string(trace.rates[i]) + " (must be finite and >= 0)");
    }
  }
}

void check_config(const SimConfig& c, const char* who) {
  const std::string prefix = std::string(who) + ": ";
  if (!(c.tick_seconds > 0.0) || !std::isfinite(c.tick_seconds)) {
    throw std::invalid_argument(prefix + "sim.tick_seconds must be > 0");
  }
  if (c.initial_workers < 0)
    throw std::invalid_argument(prefix + "sim.initial_workers must be >= 0");
  if (c.lag_slo < 0) throw std::invalid_argument(prefix + "lag_slo must be >= 0");
  if (!(c.model.warmup_seconds >= 0.0) || !std::isfinite(c.model.warmup_seconds)) {
    throw std::invalid_argument(prefix + "sim.model.warmup_seconds must be finite and >= 0");
  }
}

// ---------------------------------------------------------------------------------------------
// Fluid evaluation of a schedule.

// Simulates the worker stack and the fluid lag; fills `run` (KPIs, and when given series and
// decisions as `config` asks); without `run`, also the per-tick lag and productive counts.
FluidRun fluid_run(const Trace& trace, const SimConfig& config, const WorkerSchedule& workers,
                   RunResult* run, const std::string& policy_name) {
  check_trace(trace, "evaluate_fluid");
  check_config(config, "evaluate_fluid");
  const double tick = config.tick_seconds;
  const int64_t ticks = tick_count(trace, tick);
  if (static_cast<int64_t>(workers.size()) != ticks) {
    throw std::invalid_argument("evaluate_fluid: schedule has " + std::to_string(workers.size()) +
                                " entries, the trace has " + std::to_string(ticks) + " ticks");
  }
  int top = 0;
  for (const WorkerSchedule::Run& r : workers.runs()) {
    if (r.workers < 0) {
      throw std::invalid_argument("evaluate_fluid: workers[" + std::to_string(r.first) + "] < 0");
    }
    top = std::max(top, r.workers);
  }
  std::vector<double> capacity(static_cast<std::size_t>(top) + 1);
  for (int p = 0; p <= top; ++p) capacity[p] = config.model.capacity(p);
  const double warmup = config.model.warmup_seconds;
  const double slo = static_cast<double>(config.lag_slo);

  FluidRun out;
  // The per-tick lag and productive counts are for evaluate_fluid()'s callers; the oracle's own
  // run keeps only its KPIs, in memory that does not grow with the trace. llround is monotone,
  // so the p99 of the rounded lags is the rounded p99 of the lags.
  const bool keep_series = run == nullptr;
  if (keep_series) {
    out.lag.resize(static_cast<std::size_t>(ticks));
    out.productive.resize(static_cast<std::size_t>(ticks));
  }
  LagQuantile p99_lag(0.99, ticks);
  double max_lag = 0.0;
  Kpis& k = out.kpis;
  WorkerSchedule::Reader schedule(workers);
  int pool = schedule.next();
  k.max_workers = pool;
  int productive = pool;
  std::deque<double> warming;  // ready times, oldest first
  double lag = 0.0;
  double arrived = 0.0;
  double service_weighted = 0.0, processed_total = 0.0;
  int last_direction = 0;
  std::vector<Piece> pieces;
  PieceCursor cursor(trace);

  const bool series = run != nullptr && config.record_series;
  const int64_t series_every =
      config.series_interval_seconds > 0.0
          ? std::max<int64_t>(1, std::llround(config.series_interval_seconds / tick))
          : 1;
  double series_arrived = 0.0, series_processed = 0.0, series_time = 0.0;
  const double service_p99 = config.model.service_quantile(0.99);

  for (int64_t i = 0; i < ticks; ++i) {
    const double t0 = static_cast<double>(i) * tick;
    const double t1 = static_cast<double>(i + 1) * tick;
    if (i > 0) {
      pool = schedule.next();
      const int target = pool;
      int size = productive + static_cast<int>(warming.size());
      if (target != size && run != nullptr &&
          static_cast<int>(run->decisions.size()) < config.max_decisions) {
        Decision d;
        d.time = t0;
        d.workers = target;
        d.policy_workers = target;
        d.previous_workers = size;
        d.policy = policy_name;
        d.reason = "clairvoyant schedule: " + std::to_string(size) + " -> " +
                   std::to_string(target) + " workers (fluid lag " + text::fixed(lag, 0) + ")";
        run->decisions.push_back(std::move(d));
      }
      if (target != size) {
        ++k.scale_actions;
        const int direction = target > size ? 1 : -1;
        if (last_direction != 0 && direction != last_direction) ++k.reversals;
        last_direction = direction;
      }
      for (; size < target; ++size) warming.push_back(t0 + warmup);
      for (; size > target; --size) {
        if (!warming.empty()) {
          warming.pop_back();  // the newest warming worker first
        } else {
          --productive;
        }
      }
      k.max_workers = std::max(k.max_workers, target);
    }
    cursor.pieces(t0, t1, pieces);
    const double lag_before = lag;
    double tick_arrivals = 0.0;
    double u = t0;
    for (std::size_t pi = 0; pi < pieces.size(); ++pi) {
      const Piece& piece = pieces[pi];
      const double end = pi + 1 == pieces.size() ? t1 : u + piece.length;
      tick_arrivals += piece.rate * piece.length;
      while (!warming.empty() && warming.front() < end) {
        const double ready = std::max(u, warming.front());
        lag = std::max(0.0, lag + (piece.rate - capacity[productive]) * (ready - u));
        u = ready;
        ++productive;
        warming.pop_front();
      }
      lag = std::max(0.0, lag + (piece.rate - capacity[productive]) * (end - u));
      u = end;
    }
    while (!warming.empty() && warming.front() <= t1) {  // ready exactly at the tick's end
      ++productive;
      warming.pop_front();
    }
    const double processed = tick_arrivals + lag_before - lag;
    arrived += tick_arrivals;
    processed_total += processed;
    service_weighted += processed * config.model.service_mean_seconds *
                        config.model.stretch(std::max(1, productive));
    if (keep_series) {
      out.lag[static_cast<std::size_t>(i)] = lag;
      out.productive[static_cast<std::size_t>(i)] = productive;
    }
    p99_lag.add(std::llround(lag));
    max_lag = i == 0 ? lag : std::max(max_lag, lag);
    k.worker_seconds += static_cast<double>(pool) * tick;
    k.lag_integral += lag * tick;
    if (lag > slo + kLagTol) k.seconds_above_slo += tick;
    if (series && ((i + 1) % series_every == 0 || i + 1 == ticks)) {
      const double span = t1 - series_time;
      SeriesPoint p;
      p.t = t1;
      p.arrival_rate = (arrived - series_arrived) / span;
      p.processed_rate = (processed_total - series_processed) / span;
      p.lag = std::llround(lag);
      p.workers = pool;
      p.latency_p99 =
          processed > 0.0 ? service_p99 * config.model.stretch(std::max(1, productive)) : 0.0;
      run->series.push_back(p);
      series_arrived = arrived;
      series_processed = processed_total;
      series_time = t1;
    }
  }
  k.p99_lag = p99_lag.value();
  k.max_lag = std::llround(max_lag);
  k.arrived = std::llround(arrived);
  k.final_lag = std::llround(lag);
  k.processed = k.arrived - k.final_lag;
  k.ticks = ticks;
  k.duration_seconds = static_cast<double>(ticks) * tick;
  k.mean_workers = k.worker_seconds / k.duration_seconds;
  if (processed_total > 0.0) {
    // Little's law: mean time in the system = lag integral / messages processed.
    k.mean_service_seconds = service_weighted / processed_total;
    k.mean_wait_seconds = std::max(0.0, k.lag_integral / processed_total - k.mean_service_seconds);
  }
  return out;
}

}  // namespace lagpilot::sim::fluid
