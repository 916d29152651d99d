// The clairvoyant oracle (sim/oracle.h) on the whole World Cup 98 trace.
//
//   BM_OracleWorldCup98   87 days of per-minute counts (7.5 M ticks of 1 s) scaled to peak at
//                         1.2 x capacity(max_workers), default SimConfig and guards, exactly as
//                         `lagpilot sim --trace traces/wc98_invocation_count.csv --peak-load 1.2`
//                         runs the oracle. Goal: < 10 s wall. Prints the time, how
//                         much of the trace the DP had to solve, and the bound.
//   BM_OracleNoSplit      the same on the first 7 days without the calm-stretch split: what the
//                         split saves (the result is identical; the test suite checks that).
//
// Run: build/<dir>/bench/oracle_bench [--benchmark_filter=...]

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "bench/bench_util.h"
#include "policies/guards.h"
#include "sim/oracle.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"

namespace lagpilot::sim {
namespace {

using bench::Stopwatch;
using bench::wc98_at_peak_load;

void report(const char* what, const Trace& trace, const OracleResult& o, double seconds,
            double cpu_seconds, const SimConfig& config, bool goal) {
  std::printf(
      "\n%s: %zu bins of %.0f s (%.1f days, %lld ticks): %.2f s wall, %.2f s CPU%s\n"
      "  DP over %lld ticks (%.1f %%) in %d segments; %.4g worker-seconds (mean %.2f workers), "
      "%lld s above the SLO unavoidable; cost levels per state %.1f mean, %lld max; "
      "self-check %s\n",
      what, trace.rates.size(), trace.bin_seconds, trace.duration() / 86400.0,
      static_cast<long long>(o.workers.size()), seconds, cpu_seconds,
      goal ? (seconds < 10.0 ? " (goal < 10 s wall: met)"
                             : " (goal < 10 s wall: NOT met; see CPU on a loaded machine)")
           : "",
      static_cast<long long>(o.dp_ticks), 100.0 * double(o.dp_ticks) / double(o.workers.size()),
      o.segments, o.run.kpis.worker_seconds, o.run.kpis.mean_workers,
      static_cast<long long>(o.unavoidable_ticks * static_cast<int64_t>(config.tick_seconds)),
      o.mean_levels, static_cast<long long>(o.max_levels),
      o.worker_ticks == o.bound_worker_ticks && o.forward_mismatches == 0 &&
              o.ticks_above_slo == o.unavoidable_ticks
          ? "ok"
          : "FAILED");
  std::fflush(stdout);
}

void BM_OracleWorldCup98(benchmark::State& state) {
  const SimConfig config;
  const GuardConfig guards;
  const Trace trace = wc98_at_peak_load(config, guards);
  for (auto _ : state) {
    const Stopwatch stopwatch;
    const OracleResult o = solve_oracle(trace, config, guards);
    const double cpu_seconds = stopwatch.cpu_seconds();
    const double seconds = stopwatch.wall_seconds();
    report("Oracle, World Cup 98 at --peak-load 1.2", trace, o, seconds, cpu_seconds, config, true);
    state.counters["wall_s"] = seconds;
    state.counters["cpu_s"] = cpu_seconds;
    state.counters["dp_ticks"] = double(o.dp_ticks);
  }
}
BENCHMARK(BM_OracleWorldCup98)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

void BM_OracleNoSplit(benchmark::State& state) {
  const SimConfig config;
  const GuardConfig guards;
  Trace trace = wc98_at_peak_load(config, guards);
  trace.rates.resize(7 * 1440);
  OracleOptions options;
  options.split_at_calm = static_cast<bool>(state.range(0));
  for (auto _ : state) {
    const Stopwatch stopwatch;
    const OracleResult o = solve_oracle(trace, config, guards, options);
    const double cpu_seconds = stopwatch.cpu_seconds();
    const double seconds = stopwatch.wall_seconds();
    report(options.split_at_calm ? "Oracle, first 7 days, split" : "Oracle, first 7 days, no split",
           trace, o, seconds, cpu_seconds, config, false);
    state.counters["wall_s"] = seconds;
  }
}
BENCHMARK(BM_OracleNoSplit)
    ->ArgName("split")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace lagpilot::sim

BENCHMARK_MAIN();
