// The hybrid policy through the ControlLoop and its guards: it holds the pool through a gap like
// the last one it shed in and bought back (not after the first small step of a new rise), and
// through one that the calm budget pays for, makes the pool ready for a periodic burst, never
// goes past the fitted peak, returns to its own size when an override ends, and names bad
// parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "policies/config_reader.h"
#include "policies/control_loop.h"
#include "policies/guards.h"
#include "policies/hybrid_policy.h"
#include "tests/policies/control_loop_fakes.h"
#include "tests/policies/fluid_plant.h"
#include "tests/policies/hybrid_test_runs.h"

namespace lagpilot {
namespace {

using hybrid_testing::changes;
using hybrid_testing::run;
using hybrid_testing::run_guarded;
using testing::FluidPlant;

// Through the ControlLoop and its guards: bursts of 750 msg/s (8 workers) with gaps at 300 msg/s
// (4 workers). In the first gap (150 s) the pool sheds and buys the workers back when the burst
// returns, a scale-up that reverses the scale-down; the gap hold then keeps the pool through the
// second gap, as long as the first, where without the hold the pool sheds again (its 4 surplus
// workers pay the price in 60 s) and buys the workers back (two more actions, two more
// reversals). A steady fall afterwards still sheds promptly: the surplus the held gap paid counts
// (waste spent stays spent), so its first step comes as soon as the hold allows.
double bursts_with_gaps(int s) {
  if (s < 600) return 750.0;
  if (s < 750) return 300.0;  // gap 1
  if (s < 1100) return 750.0;
  if (s < 1250) return 300.0;  // gap 2
  if (s < 1660) return 750.0;
  return 300.0;  // a steady fall
}

// 750 msg/s on 4 workers (1.9x) stays a burst of the fast average, sized for 8 workers: the raw
// burst's sizing, which adds the lag of its first seconds, is tested above.
HybridParams no_raw_bursts() {
  HybridParams params;
  params.raw_burst_margin = 1.0;
  return params;
}

// A guarded run from a pool of 8 of a burst load with gaps, without raw bursts and with the gap
// hold (or none, at 0) and its ratio as given.
std::vector<int> run_bursts_with_gaps(double gap_hold, double ratio, int seconds,
                                      double (*arrival)(int second)) {
  HybridParams params = no_raw_bursts();
  params.gap_hold_seconds = gap_hold;
  params.gap_hold_ratio = ratio;
  FluidPlant plant;
  plant.workers = 8;
  return run_guarded(params, plant, seconds, arrival);
}

TEST(HybridPolicy, GapHoldKeepsThePoolThroughAGapLikeTheLastOne) {
  for (const double hold : {HybridParams{}.gap_hold_seconds, 0.0}) {
    const auto pool =
        run_bursts_with_gaps(hold, HybridParams{}.gap_hold_ratio, 2400, bursts_with_gaps);
    ASSERT_EQ(pool[599], 8) << "hold " << hold;
    EXPECT_EQ(pool[749], 4) << "hold " << hold;  // shed in gap 1
    EXPECT_EQ(pool[800], 8) << "hold " << hold;  // bought back
    if (hold > 0.0) {
      EXPECT_EQ(changes(pool, 800, 1660), 0);  // held through gap 2
    } else {
      EXPECT_EQ(changes(pool, 800, 1660), 2);  // shed and bought back again
    }
    // The steady fall: a first step within the price (about 70 s for 4 surplus workers), and
    // down to 4 within a few minutes.
    EXPECT_LT(pool[1660 + 70 + 20], 8) << "hold " << hold;
    EXPECT_EQ(pool[2100], 4) << "hold " << hold;
    EXPECT_LE(changes(pool, 1660, 2400), 2) << "hold " << hold;
  }
}

// A hold that ends after the load returned sheds nothing. The first gap (150 s) teaches a gap
// hold, here capped at 130 s; the second gap is 125 s, so the hold ends about 8 s after the burst
// returned, when the surplus paid in the gap is long paid and the fast average, still catching
// up (about 550 msg/s), asks for 6 workers. The last two ticks' rate (750 msg/s, above the
// capacity of 6) says the load is back, and no step is latched: the pool does not shed on the
// burst's return and buy its workers back a tick later.
double bursts_with_a_shorter_gap(int s) {
  if (s < 600) return 750.0;
  if (s < 750) return 300.0;  // 150 s
  if (s < 1100) return 750.0;
  if (s < 1225) return 300.0;  // 125 s
  if (s < 1600) return 750.0;
  return 300.0;
}

TEST(HybridPolicy, AHoldThatEndsAfterTheLoadReturnedShedsNothing) {
  const auto pool =
      run_bursts_with_gaps(130.0, HybridParams{}.gap_hold_ratio, 2400, bursts_with_a_shorter_gap);
  ASSERT_EQ(pool[749], 4);  // shed in the first gap
  ASSERT_EQ(pool[800], 8);  // bought back: the gap hold is set
  EXPECT_EQ(changes(pool, 800, 1600), 0);
  EXPECT_EQ(pool[2100], 4);
}

// The gap hold is at most gap_hold_ratio x the time the returned burst kept the pool busy: after
// a 30 s burst (the first gap 150 s, so the plain hold is about 148 s) the pool sheds at least
// 30 s sooner with the default ratio than without it.
double a_short_burst_after_a_gap(int s) {
  if (s < 600) return 750.0;
  if (s < 750) return 300.0;
  if (s < 780) return 750.0;  // 30 s
  return 300.0;
}

TEST(HybridPolicy, GapHoldIsShortAfterAShortBurst) {
  std::vector<int> shed_at;
  for (const double ratio : {HybridParams{}.gap_hold_ratio, 0.0}) {
    const auto pool = run_bursts_with_gaps(HybridParams{}.gap_hold_seconds, ratio, 1400,
                                           a_short_burst_after_a_gap);
    ASSERT_EQ(pool[749], 4) << "ratio " << ratio;
    ASSERT_EQ(pool[790], 8) << "ratio " << ratio;  // bought back: a reversal
    int t = 790;
    while (t < 1400 && pool[t] == 8) ++t;
    shed_at.push_back(t);
  }
  // Without the ratio: the hold of the first gap (about 148 s) after the surplus began (about
  // t = 780). With it the hold is at most 90 s, and the price (60 s for 4 surplus workers)
  // binds once the short burst's busy time is that short.
  EXPECT_GE(shed_at[1], 780 + 140) << "without the ratio";
  EXPECT_LE(shed_at[0] + 30, shed_at[1]) << "with the ratio " << HybridParams{}.gap_hold_ratio;
  EXPECT_GE(shed_at[0], 780 + 60);  // the price still applies
}

// A steady fall that reverses nothing is not held: it sheds as it did without the gap hold.
TEST(HybridPolicy, GapHoldLeavesASteadyFallAlone) {
  auto falling = [](int s) { return s < 600 ? 1100.0 : std::max(300.0, 1100.0 - (s - 600)); };
  std::vector<int> with_hold, without_hold;
  for (const double hold : {HybridParams{}.gap_hold_seconds, 0.0}) {
    HybridParams params;
    params.gap_hold_seconds = hold;
    HybridPolicy policy(params);
    FluidPlant plant;
    plant.workers = 12;
    (hold > 0.0 ? with_hold : without_hold) = run(policy, plant, 2400, falling);
  }
  EXPECT_EQ(with_hold, without_hold);
  EXPECT_EQ(with_hold.back(), 4);
  EXPECT_GE(changes(with_hold, 600, 2400), 2);  // in steps, as the fall pays for them
}

// A sawtooth: a drop from 1,100 to 300 msg/s, a rise of 1 msg/s per second to 1,800 (above the
// capacity of 16 workers), and a second drop. The rise's first step comes within the reversal
// window of the first drop's scale-down, but it takes back two of the eight workers shed: a new
// rise, not the old load back. So the second drop is shed as it would be without the gap hold;
// counted as a return, that step held the second drop's 12 surplus workers for 180 s. (The calm
// budget is off here: it would hold both runs alike.)
double a_sawtooth(int s) {
  if (s < 600) return 1100.0;
  if (s < 2100) return 300.0 + (s - 600);
  return 300.0;
}

TEST(HybridPolicy, TheFirstStepOfASlowRiseAfterADropIsNoReturn) {
  std::vector<int> with_hold, without_hold;
  for (const double hold : {HybridParams{}.gap_hold_seconds, 0.0}) {
    HybridParams params;
    params.gap_hold_seconds = hold;
    params.calm_budget = 0.0;
    FluidPlant plant;
    plant.workers = 12;
    (hold > 0.0 ? with_hold : without_hold) = run_guarded(params, plant, 2700, a_sawtooth);
  }
  // Not vacuous: the drop was shed, the rise's first step, a small one, came within the reversal
  // window (300 s) of that scale-down, and the pool reached its ceiling before the second drop.
  int shed = 600;
  while (shed < 900 && with_hold[shed] >= 8) ++shed;
  ASSERT_LT(shed, 900) << "the first drop was not shed";
  int step = shed;
  while (step < 2100 && with_hold[step] <= with_hold[shed]) ++step;
  ASSERT_LT(step - shed, HybridParams{}.reversal_window_seconds) << "no step up in the window";
  EXPECT_LE(with_hold[step] - with_hold[shed], 2) << "the rise's first step is a small one";
  ASSERT_EQ(with_hold[2099], 16);
  EXPECT_EQ(with_hold, without_hold);
  EXPECT_LT(with_hold[2100 + 90], 16) << "the second drop is shed within 90 s";
}

// A load above the capacity of the largest pool (1,800 msg/s against 1,600 of 16 workers), a gap
// of 80 s, and a return to 1,500 msg/s. The lag that a return into a shed pool builds before new
// workers start would not drain while the load stays above capacity, so the saturation hold keeps
// the pool through the gap (without it: shed in the gap, bought back). After the gap the level
// (the slow average) still remembers it while the pool is at 94 %, inside the band: the plateau
// step, paid only inside the band, does not step to 15 workers on the surplus the gap ran up.
double a_saturating_load_with_a_short_gap(int s) {
  if (s < 100) return 300.0;
  if (s < 400) return 1800.0;
  if (s < 480) return 300.0;  // 80 s
  return 1500.0;
}

TEST(HybridPolicy, ASaturatingLoadIsHeldThroughAShortGap) {
  for (const double hold : {HybridParams{}.saturation_hold_seconds, 0.0}) {
    HybridParams params;
    params.saturation_hold_seconds = hold;
    FluidPlant plant;
    const auto pool = run_guarded(params, plant, 1500, a_saturating_load_with_a_short_gap);
    ASSERT_EQ(pool[399], 16) << "hold " << hold;
    if (hold > 0.0) {
      EXPECT_EQ(changes(pool, 399, 1500), 0) << "held through the gap, and after it";
    } else {
      EXPECT_LT(*std::min_element(pool.begin() + 400, pool.begin() + 480), 16) << "shed";
      EXPECT_EQ(pool[600], 16) << "bought back";
    }
  }
}

// Two bursts of 800 msg/s (10 workers) for 120 s, 200 s apart, on a load of 200 msg/s (the 4
// workers of min_workers carry it), after `quiet` seconds of that load.
template <int quiet>
double two_bursts_after(int s) {
  if (s < quiet) return 200.0;
  s -= quiet;
  return (s < 120 || (s >= 320 && s < 440)) ? 800.0 : 200.0;
}

// The calm budget: two hours at min_workers, where the pool is the fluid need, leave slack that
// holds the first burst's workers through the gap (without the budget: shed in it and bought
// back, two more actions and reversals); holding spends it, and the pool sheds once it is spent.
// Without the quiet hours the pool has run above the need (10 workers for 8 workers' load) and
// has no slack: the same schedule as without the budget.
TEST(HybridPolicy, TheCalmBudgetHoldsABurstsWorkersWhereThePoolRanNearTheNeed) {
  auto run_with = [](double budget, double (*arrival)(int)) {
    HybridParams params;
    params.calm_budget = budget;
    FluidPlant plant;
    return run_guarded(params, plant, 9500, arrival);
  };
  const int second = 7200 + 320;  // the second burst's onset
  const auto held = run_with(HybridParams{}.calm_budget, two_bursts_after<7200>);
  const auto shed = run_with(0.0, two_bursts_after<7200>);
  ASSERT_GE(held[7300], 10) << "the first burst answered";
  EXPECT_EQ(changes(held, 7300, second + 120), 0) << "held through the gap";
  EXPECT_EQ(held.back(), 4) << "shed once the budget is spent";
  EXPECT_EQ(changes(held, 7300, held.size()), 1);
  EXPECT_EQ(changes(shed, 7300, second + 120), 2) << "without the budget: shed and bought back";
  EXPECT_EQ(run_with(HybridParams{}.calm_budget, two_bursts_after<0>),
            run_with(0.0, two_bursts_after<0>))
      << "no quiet hours, no slack";
}

// Bursts of `rate` msg/s for 120 s every 600 s, from t = 100 s, on a load of 300 msg/s; they stop
// after `last` of them.
template <int last, int rate = 1200>
double bursts_every_ten_minutes(int s) {
  const int k = (s - 100) / 600;
  return s >= 100 && k < last && (s - 100) % 600 < 120 ? rate : 300.0;
}

// Saturating bursts (1,800 msg/s, above the capacity of 16 workers). After the first, the
// saturation hold keeps the pool 90 s into the gap (nothing says when the load returns); once the
// burst calendar knows the period (four onsets), the next burst is due minutes later, and the pool
// is shed as soon as the surplus has paid for it.
TEST(HybridPolicy, ASaturatingBurstThatIsDueLaterIsNotHeld) {
  FluidPlant plant;
  const auto pool = run_guarded(HybridParams{}, plant, 3600, bursts_every_ten_minutes<6, 1800>);
  auto shed_after = [&](int end) {
    int t = end;
    while (t < static_cast<int>(pool.size()) && pool[t] == 16) ++t;
    return t - end;
  };
  ASSERT_EQ(pool[219], 16);
  EXPECT_GE(shed_after(220), HybridParams{}.saturation_hold_seconds) << "the first burst";
  ASSERT_EQ(pool[3219], 16);
  EXPECT_LT(shed_after(3220), 60) << "the sixth burst, its period known";
}

// Bursts of 1,200 msg/s (3x the capacity of 4 workers): after the fourth onset the period is
// known, and the pool the last burst had is ready 10 s before the fifth (t = 2,500 s), so that
// burst builds no lag while workers start.
TEST(HybridPolicy, MakesThePoolReadyForAPeriodicBurst) {
  std::vector<std::vector<int>> pools;
  std::vector<double> peak_lag;
  for (const int intervals : {HybridParams{}.burst_calendar_intervals, 0}) {
    HybridParams params;
    params.burst_calendar_intervals = intervals;
    FluidPlant plant;
    pools.push_back(run_guarded(params, plant, 2700, bursts_every_ten_minutes<6>));
    // The fifth burst's lag, replayed through the same fluid model from the pool it met.
    FluidPlant replay;
    double peak = 0.0;
    for (int t = 2400; t < 2700; ++t) {
      replay.arrival = bursts_every_ten_minutes<6>(t);
      replay.workers = pools.back()[t];
      replay.step(1.0);
      peak = std::max(peak, replay.lag);
    }
    peak_lag.push_back(peak);
  }
  const auto& with = pools[0];
  const auto& without = pools[1];
  EXPECT_EQ(with[1850], 4);  // shed between bursts, as without the calendar
  EXPECT_EQ(without[1850], 4);
  EXPECT_GE(with[2495], 12) << "ready before the fifth burst";
  EXPECT_EQ(with[2489], 4) << "not before the lead";
  EXPECT_EQ(without[2495], 4);
  EXPECT_LT(peak_lag[0], 0.25 * peak_lag[1]) << "the burst met a ready pool";
}

TEST(HybridPolicy, AStoppedPeriodicBurstBuysOneWindowAndNoMore) {
  HybridParams params;
  FluidPlant plant;
  // Four bursts teach the period; the fifth (due at t = 2,500 s) never comes.
  const auto pool = run_guarded(params, plant, 4000, bursts_every_ten_minutes<4>);
  EXPECT_GE(pool[2495], 12);
  // Late beyond its window (the larger of the lead and 2 % of the period: 12 s): shed after the
  // price (30 s for 8 surplus workers), and nothing is made ready at t = 3,100 s.
  EXPECT_EQ(pool[2500 + 12 + 30 + 10], 4);
  EXPECT_EQ(changes(pool, 2700, 4000), 0);
}

// Runs `policy` for `seconds` on a consumer whose throughput follows the USL curve `curve`, from
// a pool of `workers` under a constant `arrival` rate (msg/s); returns the proposal of each tick.
std::vector<int> run_on_usl_curve(HybridPolicy& policy, const UslSeed& curve, int workers,
                                  double arrival, int seconds) {
  auto capacity = [&](int n) {
    return n <= 0 ? 0.0
                  : curve.lambda * n / (1 + curve.sigma * (n - 1) + curve.kappa * n * (n - 1));
  };
  std::vector<int> proposals;
  double lag = 0, time = 0;
  for (int s = 0; s < seconds; ++s) {
    Observation o;
    o.time = time;
    o.total_lag = std::llround(lag);
    o.arrival_rate = arrival;
    o.current_workers = workers;
    o.min_workers = 1;
    o.max_workers = 32;
    const double processed = std::min(capacity(workers), lag + arrival);
    o.processed_rate = processed;
    o.busy_workers = capacity(workers) > 0 ? workers * processed / capacity(workers) : 0;
    o.queue_depth = lag > 0 ? 1 : 0;
    workers = policy.decide(o).workers;
    proposals.push_back(workers);
    lag = std::max(0.0, lag + arrival - processed);
    time += 1;
  }
  return proposals;
}

TEST(HybridPolicy, NeverGoesPastTheFittedPeak) {
  // A consumer whose throughput peaks at N* = sqrt(0.9 / 0.01) = 9.5 workers; the cap is
  // floor(0.85 N*) = 8 once the fit has seen it. Fed three times what it can do.
  const UslSeed curve{100, 0.1, 0.01};
  HybridParams params;
  params.model.fit = curve;
  HybridPolicy policy(params);
  const double arrival = 3 * 100 * 9 / (1 + 0.1 * 8 + 0.01 * 9 * 8);
  const auto proposals = run_on_usl_curve(policy, curve, 4, arrival, 1200);
  EXPECT_LE(*std::max_element(proposals.begin(), proposals.end()), 9);
  EXPECT_GE(proposals.back(), 7);
}

// The cap stops growth; a pool already above it is shed to it at once only where the cap does at
// least as much. Peak N* = sqrt(0.9 / 0.004) = 15, cap floor(0.85 N*) = 12: a pool of 14 does
// more than 12 (462 against 457 msg/s) and keeps its workers until a surplus has paid for the
// step (here, under 300 msg/s, about 34 s at 7 surplus workers), where a pool of 32, far past
// the peak (397 msg/s), is shed to the cap on the first tick.
TEST(HybridPolicy, ShedsAPoolAboveTheCapAtOnceOnlyWhereTheCapDoesMore) {
  const UslSeed curve{100, 0.1, 0.004};
  HybridParams params;
  params.model.fit = curve;
  {
    HybridPolicy policy(params);
    const auto proposals = run_on_usl_curve(policy, curve, 14, 300, 120);
    EXPECT_EQ(proposals[0], 14);
    EXPECT_EQ(changes(proposals, 0, 20), 0) << "shed before a surplus paid for it";
    EXPECT_LT(proposals.back(), 12) << "the surplus never paid";
  }
  {
    HybridPolicy policy(params);
    EXPECT_EQ(run_on_usl_curve(policy, curve, 32, 300, 1)[0], 12);
  }
}

// An operator pin, through the ControlLoop and the default guards: when it ends, the pool returns
// to hybrid's own size at once, with no traffic at all (no curve learned: the pool it held before
// the pin) and under a load (no scale-down price owed for a size the policy did not choose).
TEST(HybridPolicy, ReturnsToItsOwnSizeWhenAnOverrideEnds) {
  {
    testing::FakeSamplerAndActuator io;  // no traffic: lag 0, no rates
    ControlLoop loop(io.sampler, io.actuator, std::make_unique<HybridPolicy>(), GuardConfig{});
    for (int t = 0; t < 5; ++t) loop.tick(t);
    ASSERT_EQ(io.actuator.workers, 4);
    loop.set_override({11, 15.0, "test"}, 5.0);
    for (int t = 5; t < 15; ++t) EXPECT_EQ(loop.tick(t).workers, 11) << "t=" << t;
    const Decision after = loop.tick(15);
    EXPECT_EQ(after.source, "policy");
    EXPECT_EQ(after.workers, 4) << describe(after);
  }
  {
    // 650 msg/s on 100 msg/s workers: hybrid's own size is 7.
    struct Sampler : lagpilot::Sampler {
      FluidPlant* plant;
      Observation sample(double) override { return plant->observe(); }
    };
    struct Actuator : lagpilot::Actuator {
      FluidPlant* plant;
      void resize(int n) override { plant->workers = n; }
    };
    FluidPlant plant;
    plant.arrival = 650;
    Sampler sampler;
    sampler.plant = &plant;
    Actuator actuator;
    actuator.plant = &plant;
    ControlLoop loop(sampler, actuator, std::make_unique<HybridPolicy>(), GuardConfig{});
    auto run_until = [&](double end) {
      for (; plant.time < end; plant.step(1.0)) loop.tick(plant.time);
    };
    run_until(300);
    const int own = plant.workers;
    ASSERT_EQ(own, 7);
    // A pin short enough that the 7 surplus workers do not pay the 240 worker-second price
    // during it (7 x 20 s = 140).
    loop.set_override({14, 320.0, "test"}, 300.0);
    run_until(320);
    EXPECT_EQ(plant.workers, 14);
    run_until(322);
    EXPECT_EQ(plant.workers, own);
  }
}

TEST(HybridPolicy, BadParametersNameTheField) {
  auto error = [](const nlohmann::json& j) {
    try {
      HybridParams::from_json(j, "policy.params");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error({{"target_utilization", 0}}).find("policy.params.target_utilization"),
            std::string::npos);
  EXPECT_NE(error({{"scale_down_utilization", 0.99}}).find("must be <= target_utilization"),
            std::string::npos);
  EXPECT_NE(error({{"model", {{"target_utilization", 0.8}}}})
                .find("policy.params.model.target_utilization: not used by hybrid"),
            std::string::npos);
  EXPECT_NE(error({{"model", {{"forgetting", 0}}}}).find("policy.params.model.forgetting"),
            std::string::npos);
  EXPECT_NE(error({{"scale_down_cots", 1}}).find("scale_down_cots"), std::string::npos);
  EXPECT_NE(error({{"reversal_window_seconds", 0}}).find("policy.params.reversal_window_seconds"),
            std::string::npos);
  EXPECT_NE(error({{"gap_hold_seconds", -1}}).find("policy.params.gap_hold_seconds"),
            std::string::npos);
  EXPECT_NE(error({{"spike_lag", -1}}).find("policy.params.spike_lag"), std::string::npos);
  EXPECT_NE(error({{"plateau_cost", -1}}).find("policy.params.plateau_cost"), std::string::npos);
  EXPECT_NE(error({{"calm_budget", -0.1}}).find("policy.params.calm_budget"), std::string::npos);
  EXPECT_NE(error({{"calm_window_seconds", 0}}).find("policy.params.calm_window_seconds"),
            std::string::npos);
  EXPECT_NE(error({{"gap_hold_ratio", -1}}).find("policy.params.gap_hold_ratio"),
            std::string::npos);
  EXPECT_NE(error({{"burst_calendar_intervals", 9}}).find("policy.params.burst_calendar_intervals"),
            std::string::npos);
  EXPECT_NE(error({{"burst_calendar_intervals", 1.5}}).find("burst_calendar_intervals"),
            std::string::npos);
  EXPECT_NE(
      error({{"burst_calendar_tolerance", -0.1}}).find("policy.params.burst_calendar_tolerance"),
      std::string::npos);
  EXPECT_NE(error({{"burst_calendar_lead_seconds", -1}})
                .find("policy.params.burst_calendar_lead_seconds"),
            std::string::npos);
  EXPECT_NE(error({{"raw_burst_margin", -0.5}}).find("policy.params.raw_burst_margin"),
            std::string::npos);
  EXPECT_NE(
      error({{"raw_burst_horizon_seconds", -1.0}}).find("policy.params.raw_burst_horizon_seconds"),
      std::string::npos);
  EXPECT_NE(error({{"chase_window_seconds", -1.0}}).find("policy.params.chase_window_seconds"),
            std::string::npos);
  EXPECT_EQ(error(nullptr), "no error");
}

}  // namespace
}  // namespace lagpilot
