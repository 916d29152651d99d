// The clairvoyant oracle (sim/oracle.h): exact against brute force over every schedule on tiny
// traces, hand-computed cases (warm-up, infeasible bursts), optimality and lower-bound properties
// against real policies, and the report columns relative to the oracle.
#include "sim/oracle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "policies/policy_factory.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"
#include "tests/sim/sim_test_util.h"

namespace lagpilot::sim {
namespace {

using testing::bounds;
using testing::burst_trace;
using testing::linear_config;
using testing::open_guards;

int64_t sum(const std::vector<int>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

int64_t ticks_above(const FluidRun& r, const SimConfig& c) {
  return std::llround(r.kpis.seconds_above_slo / c.tick_seconds);
}

int64_t tick_count(const Trace& t, const SimConfig& c) {
  return std::max<int64_t>(1,
                           static_cast<int64_t>(std::ceil(t.duration() / c.tick_seconds - 1e-9)));
}

Trace trace_of(std::vector<double> rates, double bin_seconds = 1.0) {
  Trace t;
  t.source = "test";
  t.bin_seconds = bin_seconds;
  t.rates = std::move(rates);
  return t;
}

// The lexicographic optimum (fewest ticks above the SLO, then fewest worker-ticks) over EVERY
// schedule, each evaluated by the fluid model.
struct BruteForce {
  int64_t above = std::numeric_limits<int64_t>::max();
  int64_t cost = std::numeric_limits<int64_t>::max();
};

BruteForce brute_force(const Trace& trace, const SimConfig& config, int min_w, int max_w) {
  const int64_t ticks = tick_count(trace, config);
  std::vector<int> w(static_cast<std::size_t>(ticks), min_w);
  w[0] = config.initial_workers;
  BruteForce best;
  for (;;) {
    const FluidRun r = evaluate_fluid(trace, config, WorkerSchedule::from_vector(w));
    const int64_t above = ticks_above(r, config);
    const int64_t cost = sum(w);
    if (above < best.above || (above == best.above && cost < best.cost)) best = {above, cost};
    std::size_t k = 1;
    while (k < w.size() && w[k] == max_w) w[k++] = min_w;
    if (k >= w.size()) break;
    ++w[k];
  }
  return best;
}

void expect_self_consistent(const OracleResult& o, const Trace& trace, const SimConfig& config) {
  EXPECT_EQ(o.worker_ticks, o.bound_worker_ticks);
  EXPECT_EQ(o.forward_mismatches, 0);
  EXPECT_EQ(o.ticks_above_slo, o.unavoidable_ticks);
  EXPECT_EQ(static_cast<int64_t>(o.workers.size()), tick_count(trace, config));
  EXPECT_EQ(o.workers[0], config.initial_workers);
  EXPECT_DOUBLE_EQ(o.run.kpis.worker_seconds, double(o.worker_ticks) * config.tick_seconds);
  EXPECT_EQ(o.run.label, "oracle");
  EXPECT_EQ(o.run.policy, "oracle");
  EXPECT_EQ(o.run.kpis.arrived, o.run.kpis.processed + o.run.kpis.final_lag);
}

TEST(Oracle, MatchesBruteForceOnTinyTraces) {
  std::mt19937 rng(20241130);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int instances = 0, infeasible = 0, with_warmup = 0, split = 0;
  for (int instance = 0; instance < 260; ++instance) {
    SimConfig c;
    c.model.service_mean_seconds = 0.1;  // capacity(1) = 10/s, concave (USL) beyond
    c.model.usl_sigma = 0.1;
    c.model.usl_kappa = 0.02;
    c.tick_seconds = instance % 5 == 0 ? 2.0 : 1.0;
    const double warmups[] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 2.5};
    c.model.warmup_seconds = warmups[instance % 7] * c.tick_seconds;
    const int min_w = instance % 3 == 0 ? 0 : 1;
    const int max_w = min_w + 1 + (instance % 4 == 0 ? 2 : 1);
    c.initial_workers = static_cast<int>(unit(rng) * (max_w + 2));
    c.lag_slo = static_cast<int64_t>(unit(rng) * 25.0);
    const double bins[] = {1.0, 0.5, 1.5, 3.0};
    const double bin = bins[instance % 4] * c.tick_seconds;
    const int ticks = max_w - min_w >= 3 ? 5 : 6 + instance % 2;
    Trace t;
    t.source = "random";
    t.bin_seconds = bin;
    const int nbins = static_cast<int>(std::ceil(ticks * c.tick_seconds / bin - 1e-9));
    for (int b = 0; b < nbins; ++b) {
      const double u = unit(rng);
      t.rates.push_back(u < 0.2 ? 0.0 : u * 1.3 * c.model.capacity(max_w));
    }
    const GuardConfig g = bounds(min_w, max_w);
    const BruteForce want = brute_force(t, c, min_w, max_w);
    OracleOptions options;
    options.checkpoint_ticks = instance % 2 == 0 ? 1024 : 2;  // also exercise the checkpoints
    const OracleResult o = solve_oracle(t, c, g, options);
    SCOPED_TRACE(
        "instance " + std::to_string(instance) + ": tick " + std::to_string(c.tick_seconds) +
        " warmup " + std::to_string(c.model.warmup_seconds) + " bin " + std::to_string(bin) +
        " workers [" + std::to_string(min_w) + ", " + std::to_string(max_w) + "] initial " +
        std::to_string(c.initial_workers) + " slo " + std::to_string(c.lag_slo));
    EXPECT_EQ(o.unavoidable_ticks, want.above);
    EXPECT_EQ(o.worker_ticks, want.cost);
    expect_self_consistent(o, t, c);
    // The schedule itself achieves it in the independent fluid evaluator.
    const FluidRun check = evaluate_fluid(t, c, o.workers);
    EXPECT_EQ(ticks_above(check, c), want.above);
    for (int64_t k = 1; k < o.workers.size(); ++k) {
      EXPECT_GE(o.workers[k], min_w);
      EXPECT_LE(o.workers[k], max_w);
    }
    ++instances;
    if (want.above > 0) ++infeasible;
    if (c.model.warmup_seconds > 0) ++with_warmup;
    if (o.dp_ticks < static_cast<int64_t>(o.workers.size())) ++split;
  }
  // The random instances cover both regimes, and the calm-stretch split.
  std::printf("[ info ] %d instances: %d infeasible, %d with warm-up, %d split at calm ticks\n",
              instances, infeasible, with_warmup, split);
  EXPECT_GT(split, 20);
  EXPECT_GT(infeasible, 20);
  EXPECT_LT(infeasible, instances - 50);
  EXPECT_GT(with_warmup, 150);
}

TEST(Oracle, HandComputedWarmup) {
  // Capacity 10/s per worker, SLO 0: 5/s for 10 s needs 1 worker, then 35/s needs 4 productive
  // workers from t = 10 on. With a 3 s warm-up the 3 extra workers join at t = 7.
  const Trace t = trace_of({5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35});
  SimConfig c = linear_config(10.0, 3.0, 1, 0);
  const OracleResult o = solve_oracle(t, c, bounds(1, 10));
  std::vector<int> want(20, 4);
  std::fill(want.begin(), want.begin() + 7, 1);
  EXPECT_EQ(o.workers.to_vector(), want);
  EXPECT_EQ(o.worker_ticks, 7 * 1 + 13 * 4);
  EXPECT_TRUE(o.feasible());
  EXPECT_EQ(o.warmup_ticks, 3);
  expect_self_consistent(o, t, c);
  // The fluid evaluator honours the warm-up: 4 productive only from the end of tick 9 on.
  const FluidRun f = evaluate_fluid(t, c, o.workers);
  EXPECT_EQ(f.productive[8], 1);
  EXPECT_EQ(f.productive[9], 4);  // ready at t = 10, the end of tick 9
  EXPECT_EQ(f.kpis.max_lag, 0);

  // No warm-up: the workers join exactly at t = 10.
  c.model.warmup_seconds = 0.0;
  const OracleResult instant = solve_oracle(t, c, bounds(1, 10));
  std::fill(want.begin(), want.begin() + 10, 1);
  EXPECT_EQ(instant.workers.to_vector(), want);
  EXPECT_EQ(instant.worker_ticks, 10 + 10 * 4);

  // A warm-up of 2.5 s: workers added at t = 7 are productive from 9.5, those added at t = 8
  // only from 10.5. The SLO is sampled at tick ends, so the lag may grow within [10, 10.5) if it
  // is back to 0 at t = 11: 3 productive workers there leave 2.5 messages, which 4 drain in
  // [10.5, 11). So only 2 workers must join at t = 7 and the third can wait until t = 8 (with 1
  // or 2 at t = 7 the lag at t = 11 would be 10 or 5): 7 + 3 + 12 * 4 = 58 worker-ticks.
  c.model.warmup_seconds = 2.5;
  const OracleResult half = solve_oracle(t, c, bounds(1, 10));
  std::fill(want.begin(), want.end(), 4);
  std::fill(want.begin(), want.begin() + 7, 1);
  want[7] = 3;
  EXPECT_EQ(half.workers.to_vector(), want);
  EXPECT_EQ(half.worker_ticks, 58);
  EXPECT_EQ(evaluate_fluid(t, c, half.workers).kpis.seconds_above_slo, 0.0);
  EXPECT_EQ(half.warmup_ticks, 2);
  EXPECT_DOUBLE_EQ(half.warmup_fraction, 0.5);
  expect_self_consistent(half, t, c);

  // A lag SLO of 50 lets the lag absorb part of the step: the 350 messages of t = 10 .. 20 need
  // at least 300 messages of capacity (30 productive worker-ticks), hence a peak of at least 3
  // workers (2 added, 3 ticks of warm-up each), plus 1 worker for t < 10: at least
  // 10 + 30 + 2 * 3 = 46, which 3 workers from t = 7 on achieve (lag 5/s, 50 at the end).
  c.model.warmup_seconds = 3.0;
  c.lag_slo = 50;
  const OracleResult slack = solve_oracle(t, c, bounds(1, 10));
  EXPECT_EQ(slack.worker_ticks, 46);
  EXPECT_TRUE(slack.feasible());
  expect_self_consistent(slack, t, c);
  EXPECT_NEAR(evaluate_fluid(t, c, slack.workers).kpis.max_lag, 50, 1);
}

TEST(Oracle, InfeasibleBurstMinimizesSecondsAboveSloFirst) {
  // 50/s for 5 s against at most 4 workers (40/s), SLO 20, all 4 from the start: lag 10, 20,
  // 30, 40, 50, then 0/s drains 40/s: 10, 0. Ticks 2, 3 and 4 are above the SLO whatever the
  // schedule; the oracle keeps all 4 workers while it matters, then drops to the minimum.
  const Trace t = trace_of({50, 50, 50, 50, 50, 0, 0, 0, 0, 0});
  const SimConfig c = linear_config(10.0, 2.0, 4, 20);
  const OracleResult o = solve_oracle(t, c, bounds(1, 4));
  EXPECT_FALSE(o.feasible());
  EXPECT_EQ(o.unavoidable_ticks, 3);
  EXPECT_EQ(o.ticks_above_slo, 3);
  EXPECT_DOUBLE_EQ(o.run.kpis.seconds_above_slo, 3.0);
  EXPECT_EQ(o.run.policy_params["feasible"], false);
  EXPECT_EQ(o.run.policy_params["unavoidable_seconds_above_slo"], 3.0);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(o.workers[k], 4) << k;
  // Tick 5 still drains 50 - 40 ... the lag of 50 needs 40 + 10: 4 workers leave 10 <= 20; the
  // cheapest that keeps lag <= 20 at t = 6 with the 0/s tail: 3 workers (30/s) leave 20.
  EXPECT_EQ(o.workers[5], 3);
  EXPECT_EQ(o.workers[9], 1);
  expect_self_consistent(o, t, c);
  EXPECT_EQ(brute_force(trace_of({50, 50, 50, 50, 50, 0, 0}), c, 1, 4).above, 3);
}

TEST(Oracle, NoCheaperScheduleNearTheOptimumIsFeasible) {
  // Optimality, checked locally on a bursty 10-minute trace: taking one worker away at any tick
  // (a cheaper schedule) must break the SLO somewhere, in the independent fluid evaluator.
  SimConfig c;  // defaults: tick 1 s, warm-up 5 s, SLO 10000, USL capacity
  c.lag_slo = 3000;
  const Trace t = burst_trace(300.0, 1050.0, 150.0, 90.0);
  const GuardConfig g;  // [4, 16]
  const OracleResult o = solve_oracle(t, c, g);
  ASSERT_TRUE(o.feasible());
  expect_self_consistent(o, t, c);
  int checked = 0;
  const std::vector<int> schedule = o.workers.to_vector();
  for (std::size_t k = 1; k < schedule.size(); ++k) {
    if (schedule[k] <= g.min_workers) continue;
    std::vector<int> cheaper = schedule;
    --cheaper[k];
    EXPECT_GT(ticks_above(evaluate_fluid(t, c, WorkerSchedule::from_vector(cheaper)), c), 0)
        << "tick " << k;
    ++checked;
  }
  EXPECT_GT(checked, 60);
  // And the oracle scaled up ahead of the burst (warm-up) and back down after it.
  const int peak = *std::max_element(schedule.begin(), schedule.end());
  EXPECT_GT(peak, 8);
  EXPECT_EQ(schedule.back(), g.min_workers);
}

TEST(Oracle, WarmupIsHonouredAndCosts) {
  // The longer the warm-up, the earlier the pool must grow and the more it costs; the fluid
  // evaluator (which simulates the warming workers) never sees the SLO broken.
  const Trace t = burst_trace(200.0, 1000.0, 120.0, 60.0);
  SimConfig c;
  c.lag_slo = 2000;
  int64_t previous = 0;
  for (const double warmup : {0.0, 5.0, 20.0, 60.0}) {
    c.model.warmup_seconds = warmup;
    const OracleResult o = solve_oracle(t, c, GuardConfig{});
    SCOPED_TRACE("warm-up " + std::to_string(warmup));
    ASSERT_TRUE(o.feasible());
    expect_self_consistent(o, t, c);
    EXPECT_GE(o.worker_ticks, previous);  // a longer warm-up never makes it cheaper
    const std::vector<int> schedule = o.workers.to_vector();
    const auto rise =
        std::find_if(schedule.begin() + 1, schedule.end(), [&](int n) { return n > schedule[0]; });
    ASSERT_NE(rise, schedule.end());
    const int first_rise = static_cast<int>(rise - schedule.begin());
    // The burst starts at t = 120; workers are useful only once productive, so the first rise
    // comes no earlier than needed: within warm-up + a little of the burst's start.
    EXPECT_GE(first_rise, 120 - static_cast<int>(warmup) - 1);
    const FluidRun f = evaluate_fluid(t, c, o.workers);
    EXPECT_EQ(f.kpis.seconds_above_slo, 0.0);
    previous = o.worker_ticks;
  }
  EXPECT_GT(previous, solve_oracle(
                          t,
                          [&] {
                            SimConfig z = c;
                            z.model.warmup_seconds = 0.0;
                            return z;
                          }(),
                          GuardConfig{})
                          .worker_ticks);
}

TEST(Oracle, SplittingAndCheckpointsDoNotChangeTheOptimum) {
  // The World Cup 98 trace's two busiest days (1-minute bins, the final week) compressed 16x,
  // peaking at 1.2x capacity: the calm-stretch split and the checkpointed recomputation are
  // exact, so all variants agree.
  Trace trace = load_trace(std::string(LAGPILOT_SOURCE_DIR) + "/traces/wc98_invocation_count.csv");
  Trace slice = trace;
  const std::size_t start = 67 * 1440;
  slice.rates.assign(trace.rates.begin() + start, trace.rates.begin() + start + 2 * 1440);
  slice = compress_time(std::move(slice), 16.0);
  SimConfig c;
  c.lag_slo = 2000;
  GuardConfig g;
  slice = scale_to_peak(std::move(slice), 1.2 * c.model.capacity(g.max_workers));
  OracleOptions whole;
  whole.split_at_calm = false;
  whole.checkpoint_ticks = 1 << 20;
  OracleOptions split_small;
  split_small.checkpoint_ticks = 37;
  OracleOptions whole_small;
  whole_small.split_at_calm = false;
  whole_small.checkpoint_ticks = 100;
  const OracleResult a = solve_oracle(slice, c, g, whole);
  const OracleResult b = solve_oracle(slice, c, g);
  const OracleResult d = solve_oracle(slice, c, g, split_small);
  const OracleResult e = solve_oracle(slice, c, g, whole_small);
  EXPECT_EQ(a.segments, 1);
  EXPECT_GT(b.segments, 1);
  EXPECT_LT(b.dp_ticks, a.dp_ticks);
  for (const OracleResult* r : {&a, &b, &d, &e}) {
    expect_self_consistent(*r, slice, c);
    EXPECT_EQ(r->worker_ticks, a.worker_ticks);
    EXPECT_EQ(r->unavoidable_ticks, a.unavoidable_ticks);
  }
  // The checkpoints' spacing (and the blocks recomputed between them) changes nothing: the same
  // value functions, so the same choices, tick for tick.
  EXPECT_EQ(d.workers, b.workers);
  EXPECT_EQ(e.workers, a.workers);
  EXPECT_GT(a.unavoidable_ticks, 0);  // 1.2x the capacity at max workers: some overload
  std::printf(
      "[ info ] two days of WC98, %lld ticks: %d segments, %lld ticks in the DP, %lld "
      "unavoidable\n",
      (long long)a.workers.size(), b.segments, (long long)b.dp_ticks,
      (long long)a.unavoidable_ticks);
}

// Every policy of a simulated run that stays within the SLO spends at least the oracle's
// worker-seconds; and every policy's realized schedule that stays within the SLO in the fluid
// model (where the bound is a theorem) does too.
TEST(Oracle, LowerBoundOfEveryPolicy) {
  struct Case {
    Trace trace;
    int64_t slo;
  };
  std::vector<Case> cases;
  cases.push_back({burst_trace(250.0, 1000.0, 120.0, 90.0), 10000});
  cases.push_back({burst_trace(400.0, 900.0, 60.0, 200.0), 3000});
  {
    Trace ramp = trace_of({}, 10.0);
    for (int i = 0; i < 60; ++i) ramp.rates.push_back(200.0 + 800.0 * std::sin(i / 60.0 * M_PI));
    cases.push_back({ramp, 5000});
  }
  const std::vector<std::string> policies = {"pid",      "threshold", "hpa",      "keda",
                                             "static:8", "static:12", "static:16"};
  int within_slo = 0, fluid_feasible = 0;
  for (const Case& cs : cases) {
    SimConfig c;
    c.lag_slo = cs.slo;
    c.fidelity = "message";
    c.record_series = true;  // every tick: the realized schedule
    GuardConfig g;
    std::vector<PolicySpec> specs;
    for (const auto& p : policies) specs.push_back(parse_policy_spec(p));
    const std::vector<RunResult> runs = simulate_all(cs.trace, specs, g, c, 2);
    const OracleResult o = solve_oracle(cs.trace, c, g);
    ASSERT_TRUE(o.feasible());
    expect_self_consistent(o, cs.trace, c);
    for (const RunResult& r : runs) {
      SCOPED_TRACE(r.label + " on " + cs.trace.source);
      if (r.kpis.seconds_above_slo == 0.0) {
        ++within_slo;
        EXPECT_GE(r.kpis.worker_seconds, o.run.kpis.worker_seconds);
      }
      std::vector<int> schedule(r.series.size());
      for (std::size_t i = 0; i < r.series.size(); ++i) schedule[i] = r.series[i].workers;
      ASSERT_EQ(static_cast<int64_t>(schedule.size()), o.workers.size());
      if (evaluate_fluid(cs.trace, c, WorkerSchedule::from_vector(schedule))
              .kpis.seconds_above_slo == 0.0) {
        ++fluid_feasible;
        EXPECT_GE(sum(schedule), o.worker_ticks);
      }
    }
  }
  EXPECT_GE(within_slo, 6);  // the property was exercised
  EXPECT_GE(fluid_feasible, 6);
}

TEST(Oracle, AScheduleOfDaysIsKeptAsItsChanges) {
  // 10 days of one-second ticks, quiet but for one burst an hour: the schedule's memory is its
  // runs (a few per burst), not 864,000 ticks.
  Trace t;
  t.source = "month";
  t.bin_seconds = 60.0;
  for (int minute = 0; minute < 10 * 24 * 60; ++minute)
    t.rates.push_back(minute % 60 == 30 ? 1500.0 : 100.0);
  SimConfig c;
  const OracleResult o = solve_oracle(t, c, GuardConfig{});
  ASSERT_EQ(o.workers.size(), 10 * 24 * 3600);
  EXPECT_LT(o.workers.runs().size(), 10u * 24u * 20u);
  EXPECT_GT(o.workers.runs().size(), 10u * 24u);  // it does scale for each burst
  EXPECT_EQ(o.worker_ticks, o.bound_worker_ticks);
}

TEST(Oracle, ReplayThroughTheSimulator) {
  const Trace t = burst_trace(250.0, 1000.0, 60.0, 60.0);
  SimConfig c;
  c.lag_slo = 4000;
  const GuardConfig g;
  const OracleResult o = solve_oracle(t, c, g);
  const RunResult replay = replay_schedule(t, o.workers, "oracle-replay", g, c);
  EXPECT_EQ(replay.label, "oracle-replay");
  EXPECT_EQ(replay.policy, "schedule");
  // The pool follows the schedule exactly (the guards are reduced to the bounds).
  EXPECT_DOUBLE_EQ(replay.kpis.worker_seconds, o.run.kpis.worker_seconds);
  EXPECT_EQ(replay.kpis.scale_actions, o.run.kpis.scale_actions);
  // Same arrivals as any policy in the simulator; lag close to the fluid's (noise only).
  EXPECT_EQ(replay.kpis.arrived, simulate(t, parse_policy_spec("static:16"), g, c).kpis.arrived);
  EXPECT_LT(replay.kpis.max_lag, 4000 + 1500);
  EXPECT_THROW(replay_schedule(t, WorkerSchedule{4, 4}, "x", g, c), std::invalid_argument);
}

TEST(Oracle, SeriesAndDecisionsLikeTheSimulator) {
  const Trace t = burst_trace(250.0, 1000.0, 60.0, 60.0);
  SimConfig c;
  c.record_series = true;
  c.series_interval_seconds = 10.0;
  c.max_decisions = 3;
  const OracleResult o = solve_oracle(t, c, GuardConfig{});
  const RunResult sim = simulate(t, parse_policy_spec("pid"), GuardConfig{}, c);
  ASSERT_EQ(o.run.series.size(), sim.series.size());
  for (std::size_t i = 0; i < sim.series.size(); ++i) {
    EXPECT_EQ(o.run.series[i].t, sim.series[i].t);
    EXPECT_EQ(o.run.series[i].workers, o.workers[static_cast<std::size_t>(o.run.series[i].t) - 1]);
  }
  std::ostringstream csv;
  write_series_csv(csv, {sim, o.run});  // same times: accepted
  EXPECT_NE(csv.str().find("oracle_workers"), std::string::npos);
  EXPECT_EQ(o.run.decisions.size(), 3u);
  EXPECT_EQ(o.run.decisions[0].policy, "oracle");
  EXPECT_EQ(o.run.fidelity, "fluid");
}

TEST(Oracle, ReportsRatiosToTheOracle) {
  const Trace t = burst_trace(250.0, 1000.0, 60.0, 60.0);
  SimConfig c;
  c.lag_slo = 2000;
  const GuardConfig g;
  std::vector<RunResult> runs =
      simulate_all(t, {parse_policy_spec("static:16"), parse_policy_spec("static:4")}, g, c, 2);
  const OracleResult o = solve_oracle(t, c, g);
  runs.push_back(o.run);

  const std::string table = format_kpi_table(runs);
  EXPECT_NE(table.find("ws_vs_oracle"), std::string::npos);
  EXPECT_NE(table.find("above_slo_vs_oracle"), std::string::npos);
  std::istringstream lines(table);
  std::string header, units, row_static16, row_static4, row_oracle;
  std::getline(lines, header);
  std::getline(lines, units);
  std::getline(lines, row_static16);
  std::getline(lines, row_static4);
  std::getline(lines, row_oracle);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3fx",
                runs[0].kpis.worker_seconds / o.run.kpis.worker_seconds);
  EXPECT_NE(row_static16.find(ratio), std::string::npos) << row_static16;
  EXPECT_NE(row_oracle.find("1.000x"), std::string::npos) << row_oracle;
  // static:4 cannot keep up: its excess seconds above the SLO show as "+N".
  ASSERT_GT(runs[1].kpis.seconds_above_slo, 0.0);
  EXPECT_NE(row_static4.find("+" + std::to_string(std::llround(runs[1].kpis.seconds_above_slo))),
            std::string::npos)
      << row_static4;

  const nlohmann::json j = to_json(runs, c, TraceInfo::of(t));
  const nlohmann::json& v = j["runs"][0]["vs_oracle"];
  EXPECT_NEAR(v["worker_seconds_ratio"].get<double>(),
              runs[0].kpis.worker_seconds / o.run.kpis.worker_seconds, 1e-6);
  EXPECT_EQ(v["seconds_above_slo_excess"], runs[0].kpis.seconds_above_slo);
  EXPECT_TRUE(v["seconds_above_slo_ratio"].is_null());  // the oracle has 0 s: no ratio
  EXPECT_EQ(j["runs"][2]["vs_oracle"]["worker_seconds_ratio"], 1.0);

  // Without an oracle run: no extra columns, no vs_oracle.
  runs.pop_back();
  EXPECT_EQ(format_kpi_table(runs).find("vs_oracle"), std::string::npos);
  EXPECT_FALSE(to_json(runs, c, TraceInfo::of(t))["runs"][0].contains("vs_oracle"));
}

TEST(Oracle, RejectsBadInput) {
  SimConfig c;
  const Trace t = trace_of({1, 2, 3});
  EXPECT_THROW(solve_oracle(trace_of({}), c, GuardConfig{}), std::invalid_argument);
  EXPECT_THROW(solve_oracle(trace_of({1, -2}), c, GuardConfig{}), std::invalid_argument);
  GuardConfig inverted;
  inverted.min_workers = 8;
  inverted.max_workers = 4;
  EXPECT_THROW(solve_oracle(t, c, inverted), std::invalid_argument);
  SimConfig bad_tick;
  bad_tick.tick_seconds = 0.0;
  EXPECT_THROW(solve_oracle(t, bad_tick, GuardConfig{}), std::invalid_argument);
  // min_workers past the USL peak (N* = sqrt(0.98 / 0.0005) ~ 44): capacity falls.
  SimConfig c2;
  c2.initial_workers = 50;
  GuardConfig past_peak;
  past_peak.min_workers = 50;
  past_peak.max_workers = 60;
  past_peak.hard_max_workers = 64;
  EXPECT_NO_THROW(solve_oracle(t, c2, past_peak));  // decreasing above the best count is fine
  c2.initial_workers = 4;
  try {
    solve_oracle(t, c2, past_peak);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("capacity falls"), std::string::npos) << e.what();
  }
  EXPECT_THROW(evaluate_fluid(t, c, WorkerSchedule{4, 4}), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot::sim
