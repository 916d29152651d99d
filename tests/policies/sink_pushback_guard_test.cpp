// The sink_pushback guard: no scale-up while the sink pushes back, a step down when it lasts,
// a learned ceiling probed upward, and a pool that settles at what the sink takes.
#include <gtest/gtest.h>

#include <algorithm>

#include "policies/guards.h"

namespace lagpilot {
namespace {

Observation at(double t, int current, double pushback) {
  Observation o;
  o.time = t;
  o.current_workers = current;
  o.sink_pushback = pushback;
  return o;
}

GuardConfig config() {
  GuardConfig c;
  c.scale_down_window_seconds = 0;
  c.sink_pushback_seconds = 30;
  return c;
}

TEST(SinkPushbackGuard, DoesNothingWithoutASink) {
  GuardChain g(config());
  EXPECT_EQ(g.apply({16, ""}, "t", at(0, 4, -1)).workers, 16);
}

TEST(SinkPushbackGuard, BlocksScaleUpWhileTheSinkPushesBack) {
  GuardChain g(config());
  const Decision d = g.apply({16, ""}, "t", at(0, 8, 0.12));
  EXPECT_EQ(d.workers, 8);
  ASSERT_EQ(d.guards.size(), 1u);
  EXPECT_EQ(d.guards[0], "sink pushback 12 % > 1.0 %: no scale-up");
  // Scaling down is not blocked.
  EXPECT_EQ(g.apply({5, ""}, "t", at(1, 8, 0.12)).workers, 5);
}

TEST(SinkPushbackGuard, LastingPushbackStepsDownOncePerPeriod) {
  GuardChain g(config());
  int w = 10;
  std::vector<int> steps;
  for (int t = 0; t <= 95; ++t) {
    const Decision d = g.apply({16, ""}, "t", at(t, w, 0.2));
    if (d.workers < w) steps.push_back(t);
    w = d.workers;
  }
  EXPECT_EQ(steps, (std::vector<int>{30, 60, 90}));
  EXPECT_EQ(w, 7);
}

TEST(SinkPushbackGuard, HoldsAtTheCeilingThenProbesUp) {
  GuardChain g(config());
  for (int t = 0; t <= 30; ++t) g.apply({16, ""}, "t", at(t, 8, 0.2));  // steps to 7 at t=30
  // Quiet now: the ceiling 7 holds for 30 s, then rises by one per quiet period.
  EXPECT_EQ(g.apply({16, ""}, "t", at(31, 7, 0.0)).workers, 7);
  const Decision held = g.apply({16, ""}, "t", at(45, 7, 0.0));
  EXPECT_EQ(held.workers, 7);
  ASSERT_EQ(held.guards.size(), 1u);
  EXPECT_NE(held.guards[0].find("ceiling 7"), std::string::npos) << held.guards[0];
  EXPECT_EQ(g.apply({16, ""}, "t", at(61, 7, 0.0)).workers, 8);  // probe
  EXPECT_EQ(g.apply({16, ""}, "t", at(62, 8, 0.0)).workers, 8);
}

// A sink that takes 6 concurrent deliveries and pushes back the rest, under a policy that
// always asks for 16: the pool settles at 6 +- 1.
TEST(SinkPushbackGuard, SettlesAtTheSinksConcurrency) {
  GuardChain g(config());
  int w = 4;
  int lo = 16, hi = 0, changes = 0;
  for (int t = 0; t < 1800; ++t) {
    const double pushback = w > 6 ? static_cast<double>(w - 6) / w : 0.0;
    const int next = g.apply({16, ""}, "t", at(t, w, pushback)).workers;
    changes += next != w;
    w = next;
    if (t >= 600) {
      lo = std::min(lo, w);
      hi = std::max(hi, w);
    }
  }
  EXPECT_GE(lo, 5);
  EXPECT_LE(hi, 7);
  EXPECT_LT(changes, 80);  // one probe and one step back per minute at most
}

// A policy that sizes a backlog in one jump (hybrid: 4 -> 13) before the sink's pushback shows:
// the guard steps back at once to the share the sink took, then holds near its concurrency.
TEST(SinkPushbackGuard, AJumpPastTheSinkStepsBackAtOnceToWhatTheSinkTook) {
  GuardChain g(config());
  int w = 4;
  std::vector<int> sizes;
  for (int t = 0; t < 600; ++t) {
    const double pushback = w > 6 ? static_cast<double>(w - 6) / w : 0.0;
    const Decision d = g.apply({13, ""}, "t", at(t, w, pushback));
    if (t == 1) {
      ASSERT_EQ(d.guards.size(), 1u);
      EXPECT_EQ(d.guards[0],
                "sink pushback 54 % after the pool grew from 4: back to 6, the share "
                "the sink served");
    }
    w = d.workers;
    sizes.push_back(w);
  }
  EXPECT_EQ(sizes[0], 13);  // no pushback at 4: the jump goes through
  EXPECT_EQ(sizes[1], 6);
  for (std::size_t t = 1; t < sizes.size(); ++t) {
    EXPECT_GE(sizes[t], 6) << "t=" << t;
    EXPECT_LE(sizes[t], 7) << "t=" << t;
  }
}

// A sink whose retries back off: only 8 % of the deliveries are pushed back at 16 workers, but
// the processed rate stayed at what 6 workers do. The step back goes by the processed rate.
TEST(SinkPushbackGuard, TheStepBackGoesByTheThroughputTheSinkServed) {
  GuardChain g(config());
  Observation quiet = at(0, 4, 0.0);
  quiet.busy_workers = 4;
  quiet.processed_rate = 190;  // 47.5/s per worker
  EXPECT_EQ(g.apply({16, ""}, "t", quiet).workers, 16);
  Observation pushed = at(1, 16, 0.08);
  pushed.busy_workers = 16;
  pushed.processed_rate = 286;  // 6.0 workers' worth
  EXPECT_EQ(g.apply({16, ""}, "t", pushed).workers, 6);
}

// The step back after a jump never goes below the size the sink took without pushback, however
// much of the larger pool's deliveries it pushed back.
TEST(SinkPushbackGuard, TheStepBackStaysWithinTheBoundsAndAboveTheQuietSize) {
  GuardChain g(config());
  EXPECT_EQ(g.apply({12, ""}, "t", at(0, 8, 0.0)).workers, 12);
  // 90 % pushed back at 12: 1.2 workers' worth accepted, but 8 took everything.
  EXPECT_EQ(g.apply({12, ""}, "t", at(1, 12, 0.9)).workers, 8);
}

TEST(SinkPushbackGuard, CanBeSwitchedOff) {
  GuardConfig c = config();
  c.sink_pushback_guard = false;
  GuardChain g(c);
  EXPECT_EQ(g.apply({16, ""}, "t", at(0, 8, 0.5)).workers, 16);
  EXPECT_EQ(GuardConfig::from_json(c.to_json()).sink_pushback_guard, false);
}

}  // namespace
}  // namespace lagpilot
