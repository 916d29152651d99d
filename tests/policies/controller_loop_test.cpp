// The Controller loop with fake sampler/actuator and simulated time.
#include <gtest/gtest.h>

#include "policies/controller.h"
#include "policies/event_queue.h"

namespace lagpilot {
namespace {

// A sampler whose lag the test sets; reports the actuator's size as current workers.
struct FakeSampler : Sampler {
  int64_t lag = 0;
  int* workers = nullptr;
  Observation sample(double now) override {
    Observation o;
    o.time = now;
    o.total_lag = lag;
    o.current_workers = *workers;
    return o;
  }
};

struct FakeActuator : Actuator {
  int workers = 4;
  int calls = 0;
  void resize(int n) override {
    workers = n;
    ++calls;
  }
};

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

struct Fixture {
  FakeActuator actuator;
  FakeSampler sampler;
  Fixture() { sampler.workers = &actuator.workers; }
};

TEST(Controller, TickSamplesDecidesGuardsAndActuates) {
  Fixture f;
  auto policy = std::make_unique<LagOverHundred>();
  LagOverHundred* raw = policy.get();
  GuardConfig g;
  g.scale_down_window_seconds = 0;
  Controller c(f.sampler, f.actuator, std::move(policy), g);
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

TEST(Controller, DrivenByEventQueueWithOverrideExpiry) {
  Fixture f;
  GuardConfig g;
  g.scale_down_window_seconds = 0;
  Controller c(f.sampler, f.actuator, std::make_unique<LagOverHundred>(), g);
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

TEST(Controller, PolicySwapTakesEffectOnNextTick) {
  struct Fixed : Policy {
    int n;
    explicit Fixed(int v) : n(v) {}
    std::string name() const override { return "fixed"; }
    Proposal decide(const Observation&) override { return {n, "fixed"}; }
    nlohmann::json params() const override { return {{"workers", n}}; }
  };
  Fixture f;
  GuardConfig g;
  g.scale_down_window_seconds = 0;
  Controller c(f.sampler, f.actuator, std::make_unique<Fixed>(5), g);
  EXPECT_EQ(c.tick(1).workers, 5);
  c.set_policy(std::make_unique<Fixed>(9));
  EXPECT_EQ(c.policy_params()["workers"], 9);
  EXPECT_EQ(c.tick(2).workers, 9);
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
