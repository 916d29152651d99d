// The hybrid policy in closed loop with fluid plants: it answers a jump at once and in one or two
// steps (a jump far above capacity on its second tick), sheds a surplus only after it has paid
// for the step (and then in one step), leaves a level just above capacity and a short burst or
// spike to the lag buffer, sizes a burst and a rise for where they are heading, and steps a pool
// that sits still for long down to what a scale-up would choose. The gap hold, the periodic
// bursts, the fitted peak, overrides and bad parameters are in hybrid_policy_gaps_test.cpp.
#include "policies/hybrid_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/policies/fluid_plant.h"
#include "tests/policies/hybrid_test_runs.h"

namespace lagpilot {
namespace {

using hybrid_testing::changes;
using hybrid_testing::run;
using testing::FluidPlant;

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

}  // namespace
}  // namespace lagpilot
