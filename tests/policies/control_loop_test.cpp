// The ControlLoop loop with fake sampler/actuator and simulated time.
#include "policies/control_loop.h"

#include <gtest/gtest.h>

#include "policies/event_queue.h"
#include "tests/policies/control_loop_fakes.h"

namespace lagpilot {
namespace {

using testing::FixedPolicy;
using testing::guards_without_window;
using Fixture = testing::FakeSamplerAndActuator;

// Asks for lag / 100 workers and remembers the bounds it saw.
struct LagOverHundred : Policy {
  int seen_max = 0;
  std::string name() const override { return "lag100"; }
  Proposal decide(const Observation& o) override {
    seen_max = o.max_workers;
    return {static_cast<int>(o.total_lag / 100), "lag/100"};
  }
  nlohmann::json params() const override { return nlohmann::json::object(); }
};

TEST(ControlLoop, TickSamplesDecidesGuardsAndActuates) {
  Fixture f;
  auto policy = std::make_unique<LagOverHundred>();
  LagOverHundred* raw = policy.get();
  ControlLoop c(f.sampler, f.actuator, std::move(policy), guards_without_window());
  f.sampler.lag = 1000;
  Decision d = c.tick(1.0);
  EXPECT_EQ(d.workers, 10);
  EXPECT_EQ(f.actuator.workers, 10);
  EXPECT_EQ(raw->seen_max, 16);
  f.sampler.lag = 5000;
  d = c.tick(2.0);
  EXPECT_EQ(d.workers, 16);
  EXPECT_EQ(d.policy_workers, 50);
  EXPECT_EQ(d.previous_workers, 10);
  EXPECT_EQ(c.ticks(), 2u);
  EXPECT_EQ(c.recent_decisions(10).size(), 2u);
}

TEST(ControlLoop, ALateTickIsRecordedInItsDecision) {
  Fixture f;
  ControlLoop c(f.sampler, f.actuator, std::make_unique<LagOverHundred>(), guards_without_window());
  EXPECT_TRUE(c.tick(1.0).late.empty());
  const Decision d = c.tick(2.4, "0.400 s late: the control thread woke late");
  EXPECT_EQ(d.late, "0.400 s late: the control thread woke late");
  EXPECT_EQ(c.recent_decisions(1).back().late, d.late);
  EXPECT_NE(describe(d).find("late tick: 0.400 s late"), std::string::npos) << describe(d);
}

TEST(ControlLoop, DrivenByEventQueueWithOverrideExpiry) {
  Fixture f;
  ControlLoop c(f.sampler, f.actuator, std::make_unique<LagOverHundred>(), guards_without_window());
  f.sampler.lag = 600;
  EventQueue<int> events;  // payload: 0 = tick
  for (int t = 1; t <= 20; ++t) events.schedule(t, 0);
  c.set_override({12, 10.0, "drill"}, 0.0);
  std::vector<int> sizes;
  while (!events.empty()) sizes.push_back(c.tick(events.pop().time).workers);
  ASSERT_EQ(sizes.size(), 20u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(sizes[i], 12) << "tick " << i + 1;
  for (int i = 9; i < 20; ++i) EXPECT_EQ(sizes[i], 6) << "tick " << i + 1;
  // The API mutation is in the decision log with its source.
  bool saw_api = false;
  for (const auto& d : c.recent_decisions(100)) saw_api |= d.source == "api";
  EXPECT_TRUE(saw_api);
}

TEST(ControlLoop, PolicySwapTakesEffectOnNextTick) {
  Fixture f;
  ControlLoop c(f.sampler, f.actuator, std::make_unique<FixedPolicy>(5), guards_without_window());
  EXPECT_EQ(c.tick(1).workers, 5);
  c.set_policy(std::make_unique<FixedPolicy>(9));
  EXPECT_EQ(c.policy_params()["workers"], 9);
  EXPECT_EQ(c.tick(2).workers, 9);
}

// Asks for lag / 100 workers and says it holds its scale-downs itself, as hpa and keda do.
struct SelfStabilizing : LagOverHundred {
  bool stabilizes_scale_down() const override { return true; }
};

TEST(ControlLoop, TheGuardsWindowHoldsOnlyPoliciesWithoutOneOfTheirOwn) {
  Fixture f;
  ControlLoop c(f.sampler, f.actuator, std::make_unique<SelfStabilizing>(), GuardConfig{});
  ASSERT_GT(c.guard_config().scale_down_window_seconds, 0.0);
  f.sampler.lag = 1200;
  EXPECT_EQ(c.tick(1).workers, 12);
  f.sampler.lag = 500;
  EXPECT_EQ(c.tick(2).workers, 5);  // its own decision, not the guards' window
  c.set_policy(std::make_unique<LagOverHundred>());
  f.sampler.lag = 1200;
  EXPECT_EQ(c.tick(3).workers, 12);
  f.sampler.lag = 500;
  EXPECT_EQ(c.tick(4).workers, 12);  // held by the guards' window
  c.set_policy(std::make_unique<SelfStabilizing>());
  EXPECT_EQ(c.tick(5).workers, 5);
}

TEST(ControlLoop, OwnerOnlyLoopDecidesAsTheSharedOne) {
  // Threading::kOwnerOnly (the simulator's loops) only drops the lock: the same ticks give the
  // same decisions, pins, bounds and log, tick for tick.
  Fixture shared_io, owned_io;
  ControlLoop shared(shared_io.sampler, shared_io.actuator, std::make_unique<LagOverHundred>(),
                     guards_without_window());
  ControlLoop owned(owned_io.sampler, owned_io.actuator, std::make_unique<LagOverHundred>(),
                    guards_without_window(), 1000, ControlLoop::Threading::kOwnerOnly);
  for (ControlLoop* c : {&shared, &owned}) {
    c->set_override({12, 6.0, "drill"}, 0.0);
    c->set_bounds(5, 14, 0.0);
  }
  for (int t = 1; t <= 12; ++t) {
    shared_io.sampler.lag = owned_io.sampler.lag = 250 * t;
    const Decision a = shared.tick(t);
    const Decision b = owned.tick(t);
    EXPECT_EQ(a.workers, b.workers) << t;
    EXPECT_EQ(a.source, b.source) << t;
    EXPECT_EQ(describe(a), describe(b)) << t;
    EXPECT_EQ(shared_io.actuator.workers, owned_io.actuator.workers) << t;
  }
  EXPECT_EQ(owned_io.actuator.workers, 14);  // the pin expired, the bound holds
  EXPECT_EQ(shared.ticks(), owned.ticks());
  ASSERT_EQ(shared.recent_decisions(100).size(), owned.recent_decisions(100).size());
  EXPECT_EQ(describe(shared.recent_decisions(1)[0]), describe(owned.recent_decisions(1)[0]));
}

TEST(EventQueue, TiesComeOutInScheduleOrder) {
  EventQueue<int> q;
  q.schedule(2.0, 1);
  q.schedule(1.0, 2);
  q.schedule(2.0, 3);
  q.schedule(1.0, 4);
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  EXPECT_EQ(order, (std::vector<int>{2, 4, 1, 3}));
}

}  // namespace
}  // namespace lagpilot
