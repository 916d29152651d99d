// `lagpilot tune` throughput: configurations evaluated per minute on a 24-hour trace.
//
//   BM_Tune24h/<policy>/threads:N   tune() with the random strategy over the policy's built-in
//                   space (sim/tuner.h), budget 60, on one day of the World Cup 98 trace at its
//                   native resolution (1440 one-minute bins: 1998-06-30, the busiest day), scaled
//                   to peak at 1.2 x capacity(max_workers), tick 1 s (86,400 ticks per run),
//                   batch fidelity. Counter "configs/min" = distinct configurations / wall time.
//                   Goal: >= 100 per minute with 2 threads (pid, 2 cores).
//   BM_Simulate24h/<policy>        one simulate() of the same day with the policy's defaults:
//                   what one configuration costs on one core (the tuner's own overhead is the
//                   difference).
//
// Run: build/<dir>/bench/tune_bench [--benchmark_filter=...]. Wall time: the machine is shared,
// so the CPU-seconds counter ("cpu_s") says how busy the threads really were.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"
#include "sim/tuner.h"

namespace lagpilot::sim {
namespace {

const char* const kPolicies[] = {"pid", "threshold", "hpa", "keda"};
constexpr int kBudget = 60;
constexpr double kDayStartEpoch = 899164800.0;  // 1998-06-30 00:00:00 UTC

using bench::Stopwatch;
using bench::wc98_path;

// One day of the World Cup trace, 1-minute bins, peak at 1.2 x capacity(max_workers).
const Trace& one_day() {
  static const Trace day = [] {
    const Trace all = load_trace(wc98_path());
    const auto first =
        static_cast<std::size_t>((kDayStartEpoch - all.start_epoch) / all.bin_seconds);
    const auto bins = static_cast<std::size_t>(86400.0 / all.bin_seconds);
    if (first + bins > all.rates.size()) throw std::runtime_error("WC98 trace too short");
    Trace t;
    t.source = "wc98 1998-06-30";
    t.start_epoch = kDayStartEpoch;
    t.bin_seconds = all.bin_seconds;
    t.rates.assign(all.rates.begin() + static_cast<std::ptrdiff_t>(first),
                   all.rates.begin() + static_cast<std::ptrdiff_t>(first + bins));
    return scale_to_peak(std::move(t), 1.2 * SimConfig{}.model.capacity(GuardConfig{}.max_workers));
  }();
  return day;
}

SimConfig batch_config() {
  SimConfig c;
  c.fidelity = "batch";
  c.tick_seconds = 1.0;
  return c;
}

void BM_Tune24h(benchmark::State& state) {
  const std::string policy = kPolicies[state.range(0)];
  const int threads = static_cast<int>(state.range(1));
  const Trace& day = one_day();
  const GuardConfig guards;
  const TuneSpace space = TuneSpace::default_for(policy, guards);
  TuneOptions options;
  options.strategy = "random";
  options.budget = kBudget;
  options.threads = threads;
  double configs = 0, wall = 0, cpu = 0;
  for (auto _ : state) {
    const Stopwatch stopwatch;
    const TuneResult r = tune(space, {day}, guards, batch_config(), options);
    cpu += stopwatch.cpu_seconds();
    wall += stopwatch.wall_seconds();
    configs += double(r.evaluations.size());
    benchmark::DoNotOptimize(r.best);
  }
  const double per_minute = 60.0 * configs / wall;
  state.SetLabel(policy);
  state.counters["configs/min"] = per_minute;
  state.counters["cpu_s"] = cpu / double(state.iterations());
  std::printf(
      "tune %-9s %d thread(s): %3.0f configurations of 24 h (%zu ticks, batch) in %.2f s "
      "wall, %.2f s CPU: %.0f configurations/min%s\n",
      policy.c_str(), threads, configs / double(state.iterations()),
      static_cast<std::size_t>(day.duration()), wall / double(state.iterations()),
      cpu / double(state.iterations()), per_minute,
      threads == 2 ? (per_minute >= 100 ? " (goal >= 100/min: met)" : " (goal >= 100/min: NOT met)")
                   : "");
  std::fflush(stdout);
}
BENCHMARK(BM_Tune24h)
    ->ArgNames({"policy", "threads"})
    ->ArgsProduct({{0, 1, 2, 3}, {2}})
    ->Args({0, 1})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

void BM_Simulate24h(benchmark::State& state) {
  const std::string policy = kPolicies[state.range(0)];
  const Trace& day = one_day();
  SimConfig config = batch_config();
  config.max_decisions = 0;  // as the tuner runs it
  for (auto _ : state) {
    const RunResult r =
        simulate(day, PolicySpec{policy, nlohmann::json::object(), policy}, GuardConfig{}, config);
    benchmark::DoNotOptimize(r.kpis.worker_seconds);
  }
  state.SetLabel(policy);
}
BENCHMARK(BM_Simulate24h)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lagpilot::sim

BENCHMARK_MAIN();
