// Worker pool benchmarks.
//
// BM_PoolResizeLatency/from/to: on an idle pool, the time from resize(to) until the pool has
// `to` threads in their loop: for a grow, the new workers are started and waiting for tasks;
// for a shrink, the surplus workers have left their loop (their threads are joined by the
// next resize). Each iteration does from -> to and back; the counters are the medians over
// all iterations in microseconds (goal: < 1000 us), plus the time spent inside resize() alone.
//
// BM_PoolSleepThroughput/workers: tasks that sleep 1 ms (the simulated handler work) through
// a pool of 1 or 16 workers; items_per_second is the throughput.
// BM_PoolSleepScaling: both in one run; counter `speedup_16_vs_1` is the ratio (goal >= 12).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "controller/pool/worker_pool.h"
#include "controller/steady_clock.h"
#include "policies/clock.h"

namespace lagpilot {
namespace {

using SteadyTime = std::chrono::steady_clock;

double micros_since(SteadyTime::time_point start) {
  return std::chrono::duration<double, std::micro>(SteadyTime::now() - start).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
}

// Resizes to n and spins until n threads are in their loop; returns {total us, resize() us}.
std::pair<double, double> timed_resize(WorkerPool& pool, int n) {
  const auto start = SteadyTime::now();
  pool.resize(n);
  const double call = micros_since(start);
  while (pool.live_threads() != n) std::this_thread::yield();  // 2 cores: leave them the CPU
  return {micros_since(start), call};
}

void BM_PoolResizeLatency(benchmark::State& state) {
  const int from = static_cast<int>(state.range(0));
  const int to = static_cast<int>(state.range(1));
  SteadyClock clock;
  WorkerPoolOptions options;
  options.initial_workers = from;
  options.max_workers = std::max(from, to);
  WorkerPool pool(options, clock);
  pool.wait_idle();
  std::vector<double> there;
  std::vector<double> back;
  std::vector<double> there_call;
  std::vector<double> back_call;
  for (auto _ : state) {
    auto [t1, c1] = timed_resize(pool, to);
    auto [t2, c2] = timed_resize(pool, from);
    there.push_back(t1);
    there_call.push_back(c1);
    back.push_back(t2);
    back_call.push_back(c2);
  }
  const bool grow = to > from;
  state.counters[grow ? "grow_median_us" : "shrink_median_us"] = median(there);
  state.counters[grow ? "grow_p90_us" : "shrink_p90_us"] = percentile(there, 0.9);
  state.counters[grow ? "shrink_median_us" : "grow_median_us"] = median(back);
  state.counters[grow ? "shrink_p90_us" : "grow_p90_us"] = percentile(back, 0.9);
  state.counters[grow ? "grow_call_median_us" : "shrink_call_median_us"] = median(there_call);
  state.counters[grow ? "shrink_call_median_us" : "grow_call_median_us"] = median(back_call);
}
BENCHMARK(BM_PoolResizeLatency)
    ->Args({4, 5})
    ->Args({4, 12})
    ->Args({1, 16})
    ->Iterations(500)
    ->Unit(benchmark::kMicrosecond);

// Runs `tasks` tasks that sleep 1 ms on `workers` workers; returns tasks per second.
double sleep_throughput(int workers, int tasks) {
  SteadyClock clock;
  WorkerPoolOptions options;
  options.initial_workers = workers;
  options.max_workers = workers;
  options.queue_capacity = static_cast<std::size_t>(tasks);
  WorkerPool pool(options, clock);
  pool.wait_idle();
  const auto start = SteadyTime::now();
  for (int i = 0; i < tasks; ++i) {
    pool.try_submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
  }
  pool.wait_idle();
  return tasks / (micros_since(start) * 1e-6);
}

void BM_PoolSleepThroughput(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const int tasks = 100 * workers;  // about 100 ms per iteration
  double rate = 0.0;
  for (auto _ : state) rate = sleep_throughput(workers, tasks);
  state.SetItemsProcessed(state.iterations() * tasks);
  state.counters["tasks_per_s"] = rate;
}
BENCHMARK(BM_PoolSleepThroughput)
    ->Arg(1)
    ->Arg(16)
    ->Iterations(5)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_PoolSleepScaling(benchmark::State& state) {
  std::vector<double> one;
  std::vector<double> sixteen;
  for (auto _ : state) {
    one.push_back(sleep_throughput(1, 200));
    sixteen.push_back(sleep_throughput(16, 3200));
  }
  const double r1 = median(one);
  const double r16 = median(sixteen);
  state.counters["tasks_per_s_1"] = r1;
  state.counters["tasks_per_s_16"] = r16;
  state.counters["speedup_16_vs_1"] = r16 / r1;
}
BENCHMARK(BM_PoolSleepScaling)->Iterations(3)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lagpilot

BENCHMARK_MAIN();
