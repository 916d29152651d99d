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

TEST(SinkPushbackGuard, CanBeSwitchedOff) {
  GuardConfig c = config();
  c.sink_pushback_guard = false;
  GuardChain g(c);
  EXPECT_EQ(g.apply({16, ""}, "t", at(0, 8, 0.5)).workers, 16);
  EXPECT_EQ(GuardConfig::from_json(c.to_json()).sink_pushback_guard, false);
}

}  // namespace
}  // namespace lagpilot
