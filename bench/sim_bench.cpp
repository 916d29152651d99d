// Simulator throughput.
//
//   BM_MessageFidelity     per-message events (arrivals + completions) per second on one core,
//                          with the whole control loop running every simulated second. Goal:
//                          >= 5 M events/s (counter "events/s").
//   BM_ModelOnly           the same events through ConsumerModel alone (no controller, no arrival
//                          generator): the engine's own ceiling.
//   BM_WorldCup98EngineOnly  the same trace under a do-nothing policy: the simulator's (and the
//                          ControlLoop's) own cost, without any policy's decide().
//   BM_WorldCup98Batch     the whole World Cup 98 trace (87 days of per-minute counts, 7.5 M
//                          ticks of 1 s) scaled to peak at 1.2 x capacity(max_workers), batch
//                          fidelity, under pid, threshold, hpa, keda and static:16, as
//                          `lagpilot sim --peak-load 1.2` runs it. Goal (issue): < 20 s wall for
//                          all five with simulate_all() on 2 threads (/2). /1 runs them one after
//                          the other on one thread and prints what each policy costs. Prints the
//                          KPI table once. Each policy explains (builds reason text) only until
//                          it has recorded SimConfig::max_decisions scale actions, so a policy
//                          that rarely scales (static, keda) pays for text on every tick.
//                          /1/0: one thread with max_decisions 0, i.e. no text at all (what the
//                          text still costs is the difference to /1/1000).
//
// Run: build/<dir>/bench/sim_bench [--benchmark_filter=...]

#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "sim/consumer_model.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"
#include "tests/common/fixed_policy.h"

namespace lagpilot::sim {
namespace {

using bench::Stopwatch;
using bench::wc98_at_peak_load;

Trace constant_trace(double rate, double seconds) {
  Trace t;
  t.source = "constant";
  t.bin_seconds = seconds;
  t.rates = {rate};
  return t;
}

void BM_MessageFidelity(benchmark::State& state) {
  SimConfig config;
  config.fidelity = "message";
  config.initial_workers = 16;
  const double rate = 0.8 * config.model.capacity(16);
  const Trace trace = constant_trace(rate, 1000.0);  // ~900 k messages, 1000 control ticks
  GuardConfig guards;
  int64_t events = 0;
  for (auto _ : state) {
    const RunResult r =
        simulate(trace, PolicySpec{"static", {{"workers", 16}}, "static:16"}, guards, config);
    events += r.kpis.arrived + r.kpis.processed;
    benchmark::DoNotOptimize(r.kpis.lag_integral);
  }
  state.counters["events/s"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate);
}
// CPU time, not wall time: the rate is per core even on a busy machine.
BENCHMARK(BM_MessageFidelity)->Unit(benchmark::kMillisecond);

void BM_ModelOnly(benchmark::State& state) {
  ConsumerModelConfig model;
  const double rate = 0.8 * model.capacity(16);
  int64_t events = 0;
  for (auto _ : state) {
    ConsumerModel m(model, 16, 1, false);
    Rng rng(2);
    double t = 0.0;
    const int n = 1'000'000;
    for (int i = 0; i < n; ++i) {
      t += rng.exponential() / rate;
      while (m.next_event_time() <= t) m.run_next_event();
      m.arrive(t, ArrivalChunk{t, t, 1});
    }
    while (m.next_event_time() < 1e300) m.run_next_event();
    events += 2 * int64_t{n};
    benchmark::DoNotOptimize(m.completed());
  }
  state.counters["events/s"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ModelOnly)->Unit(benchmark::kMillisecond);

void BM_WorldCup98Batch(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  SimConfig config;  // fidelity auto: batch for this trace
  config.max_decisions = static_cast<int>(state.range(1));
  GuardConfig guards;
  const Trace trace = wc98_at_peak_load(config, guards);
  std::vector<PolicySpec> specs;
  for (const char* text : {"pid", "threshold", "hpa", "keda", "static:16"}) {
    specs.push_back(parse_policy_spec(text));
  }
  static bool printed = false;
  for (auto _ : state) {
    const Stopwatch stopwatch;
    std::vector<RunResult> results;
    if (threads <= 1) {  // one by one, to show what each policy costs
      for (const PolicySpec& spec : specs) {
        const Stopwatch policy_stopwatch;
        results.push_back(simulate(trace, spec, guards, config));
        std::printf("  %-10s %6.2f s CPU\n", spec.label.c_str(), policy_stopwatch.cpu_seconds());
      }
    } else {
      results = simulate_all(trace, specs, guards, config, threads);
    }
    const double cpu_seconds = stopwatch.cpu_seconds();
    const double seconds = stopwatch.wall_seconds();
    int64_t messages = 0;
    for (const RunResult& r : results) messages += r.kpis.arrived;
    std::printf(
        "\nWorld Cup 98: %zu bins of %.0f s (%.1f days), peak %.0f msg/s, mean %.1f msg/s, "
        "%s fidelity, %d thread(s), max_decisions %d: %.2f s wall, %.2f s CPU for %zu "
        "policies, %.3g messages%s\n",
        trace.rates.size(), trace.bin_seconds, trace.duration() / 86400.0, trace.peak_rate(),
        trace.mean_rate(), results[0].fidelity.c_str(), threads, config.max_decisions, seconds,
        cpu_seconds, results.size(), double(messages),
        threads == 2
            ? (seconds < 20.0 ? " (goal < 20 s wall: met)" : " (goal < 20 s wall: NOT met)")
            : "");
    if (!printed) {
      std::printf("%s", format_kpi_table(results).c_str());
      printed = true;
    }
    std::fflush(stdout);
    state.counters["wall_s"] = seconds;
    state.counters["cpu_s"] = cpu_seconds;
  }
}
BENCHMARK(BM_WorldCup98Batch)
    ->ArgNames({"threads", "max_decisions"})
    ->Args({1, 1000})
    ->Args({2, 1000})
    ->Args({1, 0})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

// The simulator's own cost on the same trace: a policy that does nothing (no reason text), so
// the difference to BM_WorldCup98Batch is what the policies' decide() costs.
void BM_WorldCup98EngineOnly(benchmark::State& state) {
  SimConfig config;
  GuardConfig guards;
  const Trace trace = wc98_at_peak_load(config, guards);
  int64_t ticks = 0;
  for (auto _ : state) {
    const RunResult r = simulate(trace, std::make_unique<testing::FixedPolicy>(16, "noop", ""),
                                 "noop", guards, config);
    ticks += r.kpis.ticks;
  }
  state.counters["ticks/s"] = benchmark::Counter(double(ticks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WorldCup98EngineOnly)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace lagpilot::sim

BENCHMARK_MAIN();
