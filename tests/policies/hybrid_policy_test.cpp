// The hybrid policy in closed loop with fluid plants: it answers a jump at once and in one or two
// steps (a jump far above capacity on its second tick), sheds a surplus only after it has paid
// for the step (and then in one step), holds the pool through a gap like the last one that it
// shed in and bought back, leaves a spike as short as the last ones to the lag buffer, steps a
// pool that sits still for long down to what a scale-up would choose, never goes past the
// fitted peak, and names bad parameters.
#include "policies/hybrid_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "policies/config_reader.h"
#include "policies/control_loop.h"
#include "policies/guards.h"
#include "tests/policies/control_loop_fakes.h"
#include "tests/policies/fluid_plant.h"

namespace lagpilot {
namespace {

using testing::FluidPlant;

int changes(const std::vector<int>& proposals, std::size_t from, std::size_t to) {
  int n = 0;
  for (std::size_t i = std::max<std::size_t>(from, 1); i < to && i < proposals.size(); ++i) {
    n += proposals[i] != proposals[i - 1] ? 1 : 0;
  }
  return n;
}

// Runs `plant` under `policy` for `seconds`, with the arrival rate given per second; the
// largest lag the plant reached goes to `peak_lag` when given.
std::vector<int> run(HybridPolicy& policy, FluidPlant& plant, int seconds,
                     double (*arrival)(int second), double* peak_lag = nullptr) {
  std::vector<int> proposals;
  for (int s = 0; s < seconds; ++s) {
    plant.arrival = arrival(s);
    const Proposal p = policy.decide(plant.observe());
    EXPECT_FALSE(p.reason.empty());
    proposals.push_back(p.workers);
    plant.workers = p.workers;
    plant.step(1.0);
    if (peak_lag) *peak_lag = std::max(*peak_lag, plant.lag);
  }
  return proposals;
}

// Runs `plant` under `params` through the ControlLoop and the default guards (60 s scale-down
// stabilization window, bounds [4, 16]) for `seconds`; returns the pool at each second.
std::vector<int> run_guarded(const HybridParams& params, FluidPlant& plant, int seconds,
                             double (*arrival)(int second)) {
  struct Sampler : lagpilot::Sampler {
    FluidPlant* plant = nullptr;
    Observation sample(double) override { return plant->observe(); }
  };
  struct Actuator : lagpilot::Actuator {
    FluidPlant* plant = nullptr;
    void resize(int n) override { plant->workers = n; }
  };
  Sampler sampler;
  sampler.plant = &plant;
  Actuator actuator;
  actuator.plant = &plant;
  ControlLoop loop(sampler, actuator, std::make_unique<HybridPolicy>(params), GuardConfig{});
  std::vector<int> pool;
  for (int s = 0; s < seconds; ++s) {
    plant.arrival = arrival(s);
    loop.tick(plant.time);
    pool.push_back(plant.workers);
    plant.step(1.0);
  }
  return pool;
}

TEST(HybridPolicy, AnswersAJumpAtOnceInFewSteps) {
  HybridPolicy policy;
  FluidPlant plant;  // 100 msg/s per worker, bounds [4, 16]
  const auto proposals = run(policy, plant, 900, [](int s) { return s < 600 ? 300.0 : 1000.0; });
  EXPECT_EQ(proposals[599], 4);
  // 1000 msg/s needs 10 workers, 11 at 97 % utilization: there within 15 s, in at most 2 steps.
  EXPECT_GE(proposals[615], 11);
  EXPECT_LE(changes(proposals, 600, 900), 2);
  EXPECT_LT(plant.lag, 1.0);
}

TEST(HybridPolicy, ShedsASurplusOnlyOnceItPaidForTheStepAndInOneStep) {
  HybridParams params;
  params.scale_down_cost = 600;  // worker-seconds
  HybridPolicy policy(params);
  FluidPlant plant;
  plant.workers = 12;
  const auto proposals = run(policy, plant, 1500, [](int s) { return s < 600 ? 1100.0 : 300.0; });
  const int high = proposals[599];
  ASSERT_GE(high, 12);
  // After the drop the surplus is about high - 4 workers: it pays for 600 worker-seconds in
  // 600 / (high - 4) seconds (plus the fast average's settling), not before.
  const int earliest = 600 + static_cast<int>(600.0 / (high - 4)) - 1;
  for (int s = 600; s < earliest; ++s) ASSERT_EQ(proposals[s], high) << "t=" << s;
  EXPECT_EQ(proposals.back(), 4);
  EXPECT_EQ(changes(proposals, 600, 1500), 1);
}

TEST(HybridPolicy, HoldsInsideTheBandWithoutAnyAction) {
  HybridPolicy policy;
  FluidPlant plant;
  plant.workers = 8;
  // 8 workers carry 800 msg/s; 780 msg/s uses 97.5 % of them, inside [95 %, 100 %].
  const auto proposals = run(policy, plant, 3600, [](int) { return 780.0; });
  EXPECT_EQ(changes(proposals, 0, proposals.size()), 0);
  EXPECT_EQ(proposals.back(), 8);
}

// After a scale-down, a level up to reversal_margin above the new pool's capacity is left to the
// lag allowance (no scale-up that would reverse the step); a backlog past the allowance is not.
TEST(HybridPolicy, AfterAScaleDownTheLevelMustClearTheReversalMargin) {
  for (const double margin : {0.0, 0.1}) {
    HybridParams params;
    params.level_margin = 0.0;  // the reversal margin alone
    params.reversal_margin = margin;
    HybridPolicy policy(params);
    FluidPlant plant;
    plant.workers = 12;
    // 1100/s, then 700/s (the pool sheds to 8), then 840/s: 5 % above what 8 workers carry.
    const auto proposals = run(policy, plant, 1500, [](int s) {
      return s < 300 ? 1100.0 : s < 900 ? 700.0 : 840.0;
    });
    ASSERT_EQ(proposals[899], 8) << "margin " << margin;
    if (margin > 0.0) {
      // The lag grows at 40/s: past the 2000 allowance after 50 s, and then the backlog term
      // lifts the demand over the margin (to 8.8 workers at 900 + 50 + 60 x 0.1 x 800 / 40).
      EXPECT_EQ(proposals[950], 8);
      EXPECT_GT(proposals.back(), 8);
    } else {
      EXPECT_GT(proposals[950], 8);  // the level trigger alone
    }
  }
}

// At any time (here after a scale-up), a level up to level_margin above the pool's capacity is
// left to the lag buffer until the backlog term asks for workers; with no margin the level
// alone scales the pool up within a minute.
TEST(HybridPolicy, LeavesALevelJustAboveCapacityToTheLagBuffer) {
  for (const double margin : {0.0, 0.1}) {
    HybridParams params;
    params.level_margin = margin;
    HybridPolicy policy(params);
    FluidPlant plant;
    // 300/s, then 600/s (a scale-up to 7; not a raw burst, which would size the step for its
    // lag), then 735/s: 5 % above what 7 workers carry.
    const auto proposals = run(policy, plant, 1800, [](int s) {
      return s < 600 ? 300.0 : s < 1200 ? 600.0 : 735.0;
    });
    ASSERT_EQ(proposals[1199], 7) << "margin " << margin;
    if (margin > 0.0) {
      // The lag grows at 35/s: 2,100 after 60 s, the backlog term 2/s, the demand far from 770/s.
      EXPECT_EQ(proposals[1260], 7);
      EXPECT_GT(proposals.back(), 7);  // the growing backlog lifts it over the margin
    } else {
      EXPECT_GT(proposals[1260], 7);  // the slow average passes 700/s after about 40 s
    }
  }
}

// A burst whose lag the buffer absorbs (lag + (fast average - capacity) x burst_horizon_seconds
// stays below burst_lag) moves no worker; the same rate held on is answered within seconds, and
// with burst_lag 0 the short one is answered too.
TEST(HybridPolicy, LeavesABurstTheLagBufferAbsorbsAndAnswersOneThatLasts) {
  for (const double burst_lag : {0.0, HybridParams{}.burst_lag}) {
    HybridParams params;
    params.burst_lag = burst_lag;
    {
      HybridPolicy policy(params);
      FluidPlant plant;  // 4 workers carry 400 msg/s
      // 300 msg/s, then 10 s at 620 msg/s (the lag peaks near 2,200; below 1.6x capacity, so no
      // raw burst), then 300 msg/s again.
      const auto proposals =
          run(policy, plant, 1200, [](int s) { return s >= 600 && s < 610 ? 620.0 : 300.0; });
      ASSERT_EQ(proposals[599], 4);
      if (burst_lag > 0.0) {
        EXPECT_EQ(changes(proposals, 0, proposals.size()), 0) << "burst_lag " << burst_lag;
      } else {
        EXPECT_GT(*std::max_element(proposals.begin() + 600, proposals.begin() + 620), 4);
      }
    }
    {
      HybridPolicy policy(params);
      FluidPlant plant;
      const auto proposals = run(policy, plant, 900, [](int s) { return s < 600 ? 300.0 : 620.0; });
      // 620 msg/s needs 7 workers at 97 % utilization: there within 20 s.
      EXPECT_GE(proposals[620], 7) << "burst_lag " << burst_lag;
      EXPECT_LE(changes(proposals, 600, 900), 2);
    }
  }
}

// A jump far above capacity (300 -> 1100 msg/s on 4 workers, 2.75x) is a burst on its second
// tick in the raw rate of the last two ticks, and the step is sized for the jump in one go; with
// the raw test off, the fast average needs three ticks to clear the burst margin and the lag
// test.
TEST(HybridPolicy, AnswersAJumpFarAboveCapacityOnItsSecondTick) {
  for (const double raw_margin : {HybridParams{}.raw_burst_margin, 100.0}) {
    HybridParams params;
    params.raw_burst_margin = raw_margin;
    // Before any spike was seen, this one is expected to last spike_prior_seconds and its lag
    // stays just under spike_lag for five ticks: spike absorption (tested below) off.
    params.spike_prior_seconds = 0.0;
    HybridPolicy policy(params);
    FluidPlant plant;
    const auto proposals = run(policy, plant, 900, [](int s) { return s < 600 ? 300.0 : 1100.0; });
    ASSERT_EQ(proposals[599], 4);
    EXPECT_EQ(proposals[600], 4) << "raw_burst_margin " << raw_margin;  // one tick is no jump
    if (raw_margin < 100.0) {
      EXPECT_GE(proposals[601], 12);  // 1100 / 0.97 = 11.3 workers
    } else {
      EXPECT_EQ(proposals[601], 4);
      EXPECT_GE(proposals[605], 12);
    }
    // The raw burst's step is sized to drain the lag the jump would build in
    // raw_burst_horizon_seconds; on this plant, whose new workers start at once, that leaves a
    // surplus that is shed later (one step down).
    EXPECT_LE(changes(proposals, 600, 900), 2) << "raw_burst_margin " << raw_margin;
  }
}

// A raw burst's step drains the lag the jump builds within raw_burst_horizon_seconds, the time
// new workers take to start, not within the burst test's longer horizon: 300 -> 1100 msg/s on 4
// workers, 700 messages of lag on the second tick, asks for 13 workers (1100 msg/s plus 7,700 -
// 2,000 messages within 60 s, at 97 %), where a 30 s horizon would ask for 15 and hold the
// surplus until a scale-down has paid for itself.
TEST(HybridPolicy, SizesARawBurstForTheLagItBuildsWhileWorkersStart) {
  auto first_step = [](double horizon) {
    HybridParams params;
    params.raw_burst_horizon_seconds = horizon;
    params.spike_prior_seconds = 0.0;  // as in the test above
    HybridPolicy policy(params);
    FluidPlant plant;
    const auto proposals = run(policy, plant, 700, [](int s) { return s < 600 ? 300.0 : 1100.0; });
    EXPECT_EQ(proposals[600], 4);
    return proposals[601];
  };
  EXPECT_EQ(first_step(HybridParams{}.raw_burst_horizon_seconds), 13);
  EXPECT_EQ(first_step(30.0), 15);
}

// The chase step: on a steep rise (a staircase from 300 to 2,000 msg/s, 400 more every 5 s), a
// scale-up within chase_window_seconds of the last one adds the rise since then to its sizing.
// Without it the second step, 10 s after the first, sizes for where the load is (17 workers) and
// the pool sits below the load for half a minute, until the level or the backlog asks for more;
// with it the second step reaches past the plateau's size, and the lag stays a fraction of that.
TEST(HybridPolicy, ChaseStepSizesARiseForWhereItIsHeading) {
  struct Outcome {
    std::vector<int> pool;
    double peak_lag = 0.0;
  };
  auto rise = [](double window) {
    HybridParams params;
    params.chase_window_seconds = window;
    params.spike_prior_seconds = 0.0;  // a rise, not a spike: answered, not absorbed
    HybridPolicy policy(params);
    FluidPlant plant;
    plant.max_workers = 24;
    Outcome out;
    out.pool = run(
        policy, plant, 900,
        [](int s) { return s < 600 ? 300.0 : std::min(2000.0, 700.0 + 400.0 * ((s - 600) / 5)); },
        &out.peak_lag);
    return out;
  };
  const Outcome chased = rise(HybridParams{}.chase_window_seconds);
  const Outcome unchased = rise(0.0);
  auto second_step = [](const std::vector<int>& pool) {
    int steps = 0;
    for (std::size_t s = 600; s < pool.size(); ++s) {
      if (pool[s] != pool[s - 1] && ++steps == 2) return pool[s];
    }
    return 0;
  };
  EXPECT_EQ(second_step(unchased.pool), 17);  // 1,500 msg/s plus the lag, at 97 %
  EXPECT_GE(second_step(chased.pool), 21);    // 2,000 msg/s at 97 %: 20.6 workers
  EXPECT_GT(unchased.peak_lag, 8000.0);
  EXPECT_LT(chased.peak_lag, 0.5 * unchased.peak_lag);
}

// A burst's step is sized on the lower of the last two ticks' rates: one noisy tick at 1000 msg/s
// on the tick the burst to 600 msg/s is answered does not size the pool for 1000.
TEST(HybridPolicy, DoesNotSizeABurstOnOneNoisyTick) {
  auto first_step = [](int spike_at) {
    HybridPolicy policy;
    FluidPlant plant;
    static int spike;
    spike = spike_at;
    const auto proposals = run(policy, plant, 700, [](int s) {
      return s < 600 ? 300.0 : s == spike ? 1000.0 : 600.0;
    });
    for (int s = 600; s < 700; ++s) {
      if (proposals[s] != proposals[599]) return std::make_pair(s, proposals[s]);
    }
    return std::make_pair(-1, 0);
  };
  const auto [at, workers] = first_step(-1);
  ASSERT_GT(at, 600);
  EXPECT_EQ(workers, 7);  // 600 / 0.97 = 6.2 workers
  const auto [at_spiked, workers_spiked] = first_step(at);
  EXPECT_EQ(at_spiked, at);
  EXPECT_EQ(workers_spiked, 7);  // not 11 (1000 / 0.97)
}

// A second, smaller spike right after a first one (the Azure trace's shape): 800 msg/s for 10 s
// into 4 workers at a base of 200 msg/s, left to the buffer (projected under spike_lag), then
// 3 s at 260 msg/s, then 650 msg/s for 9 s. On the second spike's first tick the fast average
// still holds the first one, and fast + backlog clears the burst margin with lag to spare; but
// the raw rate (the lower of the last two ticks) is still 260 msg/s, under the capacity: no
// burst. On its second tick it is a spike of its own, expected as short as the first, and left
// to the buffer too. No worker moves, and the lag stays under the SLO.
TEST(HybridPolicy, AFastAverageThatRemembersASpikeIsNoBurst) {
  HybridPolicy policy;
  FluidPlant plant;
  double peak_lag = 0.0;
  const auto proposals = run(
      policy, plant, 900,
      [](int s) {
        return s < 600 ? 200.0 : s < 610 ? 800.0 : s < 613 ? 260.0 : s < 622 ? 650.0 : 200.0;
      },
      &peak_lag);
  ASSERT_EQ(proposals[599], 4);
  EXPECT_EQ(changes(proposals, 0, proposals.size()), 0);
  EXPECT_GT(peak_lag, 4000.0);  // the buffer did carry both spikes
  EXPECT_LT(peak_lag, 10000.0);
}

// A pool that drains its lag (the arrivals of the last two ticks under its capacity) is not
// grown while the lag drains within catch_up_seconds, even above burst_lag: after an 11 s spike
// to 1,000 msg/s into 4 workers (left to the buffer here by a spike_lag above the SLO), 6,600
// messages of lag drain at 200 msg/s in 33 s. The level and the backlog term still remember
// the spike and would buy workers for a load that is over.
TEST(HybridPolicy, APoolThatDrainsItsLagInTimeIsNotGrown) {
  HybridParams params;
  params.spike_lag = 20000.0;  // the spike itself is not the subject
  HybridPolicy policy(params);
  FluidPlant plant;
  const auto proposals =
      run(policy, plant, 900, [](int s) { return s >= 600 && s < 611 ? 1000.0 : 200.0; });
  ASSERT_EQ(proposals[599], 4);
  EXPECT_EQ(changes(proposals, 0, proposals.size()), 0);
}

// A spike far above capacity (300 -> 750 msg/s on 4 workers, a raw burst) that lasts 14 s, under
// the 20 s prior: the lag it builds (about 5,000 messages) is projected to stay under spike_lag,
// so no worker moves, neither while it lasts nor after it, when the level and the backlog term
// still remember it but the pool already drains the lag (without that rule the level test
// answers it on its first tick back at 300 msg/s). With spike_lag 0 the spike is answered on
// its second tick.
TEST(HybridPolicy, LeavesASpikeAsShortAsExpectedToTheLagBuffer) {
  for (const double spike_lag : {HybridParams{}.spike_lag, 0.0}) {
    HybridParams params;
    params.spike_lag = spike_lag;
    HybridPolicy policy(params);
    FluidPlant plant;
    const auto proposals =
        run(policy, plant, 1200, [](int s) { return s >= 600 && s < 614 ? 750.0 : 300.0; });
    ASSERT_EQ(proposals[599], 4);
    if (spike_lag > 0.0) {
      EXPECT_EQ(changes(proposals, 0, proposals.size()), 0);
    } else {
      EXPECT_GT(proposals[601], 4);
    }
  }
}

// The same 750 msg/s held on outlasts the expected length and is answered while its lag is
// still under the SLO; and once a spike has lasted minutes, the next one is expected to last as
// long and is answered on its second tick.
TEST(HybridPolicy, AnswersASpikeThatOutlastsTheExpectedLength) {
  HybridPolicy policy;
  FluidPlant plant;
  double max_lag = 0.0;
  std::vector<int> proposals;
  for (int s = 0; s < 1600; ++s) {
    plant.arrival = (s >= 600 && s < 720) || s >= 1500 ? 750.0 : 300.0;
    const Proposal p = policy.decide(plant.observe());
    proposals.push_back(p.workers);
    plant.workers = p.workers;
    plant.step(1.0);
    if (s < 720) max_lag = std::max(max_lag, plant.lag);
  }
  ASSERT_EQ(proposals[599], 4);
  EXPECT_EQ(proposals[601], 4);  // absorbed at first: 20 s expected
  EXPECT_GT(proposals[625], 4);  // answered once the spike outlasts it
  EXPECT_LT(max_lag, 9000.0);
  ASSERT_EQ(proposals[1499], 4);
  EXPECT_GT(proposals[1501], 4);  // the last spike lasted 120 s: answered at once
}

// 960 msg/s on 11 workers (100 msg/s each): 87 % of 11, 96 % of 10. The scale-down, sized at
// scale_down_utilization 0.95, holds 11; the plateau step goes to the 10 that a scale-up would
// choose (target_utilization 0.97) once that surplus has cost plateau_cost worker-seconds, and
// nothing brings the eleventh back.
TEST(HybridPolicy, PlateauStepGoesToWhatAScaleUpWouldChoose) {
  for (const double cost : {HybridParams{}.plateau_cost, 0.0}) {
    HybridParams params;
    params.plateau_cost = cost;
    HybridPolicy policy(params);
    FluidPlant plant;
    plant.workers = 11;
    const auto proposals = run(policy, plant, 3600, [](int) { return 960.0; });
    EXPECT_EQ(proposals[300], 11) << "plateau_cost " << cost;
    if (cost > 0.0) {
      EXPECT_EQ(proposals[static_cast<int>(cost) + 60], 10);
      EXPECT_EQ(proposals.back(), 10);
      EXPECT_EQ(changes(proposals, 0, proposals.size()), 1);
    } else {
      EXPECT_EQ(changes(proposals, 0, proposals.size()), 0);
    }
  }
}

// Through the ControlLoop and its 60 s stabilization window: bursts of 750 msg/s (8 workers) with
// gaps at 300 msg/s (4 workers). In the first gap (150 s) the pool sheds and buys the workers
// back when the burst returns, a scale-up that reverses the scale-down; the gap hold then keeps
// the pool through the second gap, as long as the first, where without the hold the pool sheds
// again (its 4 surplus workers pay the price in 60 s, the window passes it 60 s later) and buys
// the workers back (two more actions, two more reversals). A steady fall afterwards still sheds
// promptly: the surplus the held gap paid counts (waste spent stays spent), so its first step
// passes the 60 s window at once.
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
    // The steady fall: a first step within the price (about 70 s for 4 surplus workers) and the
    // 60 s window, and down to 4 within a few minutes.
    EXPECT_LT(pool[1660 + 70 + 60 + 20], 8) << "hold " << hold;
    EXPECT_EQ(pool[2100], 4) << "hold " << hold;
    EXPECT_LE(changes(pool, 1660, 2400), 2) << "hold " << hold;
  }
}

// A step paid for in a gap that the guards' window still holds back when the burst returns (a
// gap of 90 s: 60 s to pay, then the window) is dropped, with the surplus that paid for it: the
// pool does not shed on the burst's return and buy its workers back on the next tick, gap hold or
// none.
double bursts_with_a_short_gap(int s) {
  if (s < 600) return 750.0;
  if (s < 750) return 300.0;
  if (s < 1100) return 750.0;
  if (s < 1190) return 300.0;  // 90 s
  if (s < 1600) return 750.0;
  return 300.0;
}

TEST(HybridPolicy, APaidForStepIsDroppedWhenTheLoadReturnsFirst) {
  for (const double hold : {HybridParams{}.gap_hold_seconds, 0.0}) {
    const auto pool =
        run_bursts_with_gaps(hold, HybridParams{}.gap_hold_ratio, 2400, bursts_with_a_short_gap);
    ASSERT_EQ(pool[800], 8) << "hold " << hold;
    EXPECT_EQ(changes(pool, 800, 1600), 0) << "hold " << hold;
    EXPECT_EQ(pool[2100], 4) << "hold " << hold;
  }
}

// The gap hold is at most gap_hold_ratio x the time the returned burst kept the pool busy: after
// a 30 s burst (the first gap 150 s, so the plain hold is 120 s) the pool sheds at least 30 s
// sooner with the default ratio than without it.
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
  // Without the ratio: the 120 s hold and the 60 s window after the surplus began (about t =
  // 780). With it the hold is at most 90 s, and the price (60 s for 4 surplus workers) binds
  // once the short burst's busy time is that short.
  EXPECT_GE(shed_at[1], 780 + 120 + 60) << "without the ratio";
  EXPECT_LE(shed_at[0] + 30, shed_at[1]) << "with the ratio " << HybridParams{}.gap_hold_ratio;
  EXPECT_GE(shed_at[0], 780 + 60 + 60);  // the price and the window still apply
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

// Bursts of 1,200 msg/s (3x the capacity of 4 workers) for 120 s every 600 s, from t = 100 s, on
// a load of 300 msg/s: after the fourth onset the period is known, and the pool the last burst
// had is ready 10 s before the fifth (t = 2,500 s), so that burst builds no lag while workers
// start. The bursts stop after `last` of them.
template <int last>
double bursts_every_ten_minutes(int s) {
  const int k = (s - 100) / 600;
  return s >= 100 && k < last && (s - 100) % 600 < 120 ? 1200.0 : 300.0;
}

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
  // price and the guards' window, and nothing is made ready at t = 3,100 s.
  EXPECT_EQ(pool[2500 + 12 + 30 + 60 + 10], 4);
  EXPECT_EQ(changes(pool, 2700, 4000), 0);
}

TEST(HybridPolicy, NeverGoesPastTheFittedPeak) {
  // A consumer whose throughput peaks at N* = sqrt(0.9 / 0.01) = 9.5 workers; the cap is
  // floor(0.85 N*) = 8 once the fit has seen it. Fed three times what it can do.
  const double lambda = 100, sigma = 0.1, kappa = 0.01;
  auto capacity = [&](int n) {
    return n <= 0 ? 0.0 : lambda * n / (1 + sigma * (n - 1) + kappa * n * (n - 1));
  };
  HybridParams params;
  params.model.fit = UslSeed{lambda, sigma, kappa};
  HybridPolicy policy(params);
  double lag = 0, time = 0;
  int workers = 4;
  const double arrival = 3 * capacity(9);
  for (int s = 0; s < 1200; ++s) {
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
    const Proposal p = policy.decide(o);
    ASSERT_LE(p.workers, 9) << "t=" << s << ": " << p.reason;
    workers = p.workers;
    lag = std::max(0.0, lag + arrival - processed);
    time += 1;
  }
  EXPECT_GE(workers, 7);
}

// An operator pin, through the ControlLoop and the default guards (60 s stabilization window):
// when it ends, the pool returns to hybrid's own size at once, with no traffic at all (no curve
// learned: the pool it held before the pin) and under a load (no scale-down price owed for a
// size the policy did not choose).
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
