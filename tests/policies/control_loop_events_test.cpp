// Operator notes in the ControlLoop's decision log: record_event() (pause/resume), the time
// stamped on a policy swap, and that notes never pose as the last decision.
#include <gtest/gtest.h>

#include <thread>

#include "policies/control_loop.h"
#include "tests/policies/control_loop_fakes.h"

namespace lagpilot {
namespace {

using testing::FixedPolicy;
using testing::guards_without_window;

class ControllerEvents : public ::testing::Test, protected testing::FakeSamplerAndActuator {
 protected:
  ControllerEvents()
      : controller(std::make_unique<ControlLoop>(
            sampler, actuator, std::make_unique<FixedPolicy>(7), guards_without_window())) {}
  std::unique_ptr<ControlLoop> controller;
};

TEST_F(ControllerEvents, RecordEventAppendsAnOperatorNoteWithTheSizeUnchanged) {
  controller->tick(10.0);
  ASSERT_EQ(actuator.workers, 7);
  const int resizes = actuator.calls;
  controller->record_event(12.5, "api", "paused by api: broker maintenance");

  const std::vector<Decision> log = controller->recent_decisions(10);
  ASSERT_EQ(log.size(), 2u);
  const Decision& note = log.back();
  EXPECT_DOUBLE_EQ(note.time, 12.5);
  EXPECT_EQ(note.source, "api");
  EXPECT_EQ(note.policy, ControlLoop::kOperatorPolicy);
  EXPECT_EQ(note.reason, "paused by api: broker maintenance");
  EXPECT_EQ(note.workers, 7);
  EXPECT_EQ(note.previous_workers, 7);
  EXPECT_TRUE(note.guards.empty());
  // A note is not a decision: the actuator is untouched and last_decision() is the tick's.
  EXPECT_EQ(actuator.calls, resizes);
  ASSERT_TRUE(controller->last_decision().has_value());
  EXPECT_DOUBLE_EQ(controller->last_decision()->time, 10.0);
  EXPECT_EQ(controller->last_decision()->policy, "fixed-7");
  EXPECT_EQ(controller->ticks(), 1u);
}

TEST_F(ControllerEvents, RecordEventKeepsTheSourceItIsGiven) {
  controller->tick(1.0);
  controller->record_event(2.0, "signal", "resumed by signal");
  const Decision note = controller->recent_decisions(1).back();
  EXPECT_EQ(note.source, "signal");
  EXPECT_EQ(note.policy, ControlLoop::kOperatorPolicy);
  // Skipped by last_decision() for its policy, whatever its source.
  EXPECT_DOUBLE_EQ(controller->last_decision()->time, 1.0);
}

TEST_F(ControllerEvents, RecordEventBeforeAnyTickCarriesZeroWorkers) {
  controller->record_event(0.5, "api", "paused by api");
  const std::vector<Decision> log = controller->recent_decisions(10);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].workers, 0);
  EXPECT_EQ(log[0].previous_workers, 0);
  EXPECT_FALSE(controller->last_decision().has_value());
  // The next tick is unaffected.
  EXPECT_EQ(controller->tick(1.0).workers, 7);
}

TEST_F(ControllerEvents, MutationNotesAfterAnEventNameTheActivePolicyNotTheOperator) {
  controller->tick(1.0);
  controller->record_event(2.0, "api", "paused by api");
  controller->set_bounds(5, 12, 3.0);
  const Decision note = controller->recent_decisions(1).back();
  EXPECT_EQ(note.source, "api");
  EXPECT_EQ(note.policy, "fixed-7");
  EXPECT_DOUBLE_EQ(note.time, 3.0);
  EXPECT_EQ(note.workers, 7);
  EXPECT_EQ(note.previous_workers, 7);
}

TEST_F(ControllerEvents, SetPolicyIsLoggedAtTheTimeGiven) {
  controller->tick(1.0);
  controller->tick(2.0);
  controller->set_policy(std::make_unique<FixedPolicy>(9), 42.0);
  const Decision note = controller->recent_decisions(1).back();
  EXPECT_DOUBLE_EQ(note.time, 42.0);  // not the last tick's 2.0
  EXPECT_EQ(note.source, "api");
  EXPECT_EQ(note.policy, "fixed-9");
  EXPECT_NE(note.reason.find("policy set to fixed-9"), std::string::npos) << note.reason;
  EXPECT_EQ(note.workers, 7);  // the swap itself changes nothing until the next tick
  EXPECT_EQ(controller->tick(43.0).workers, 9);
}

TEST_F(ControllerEvents, SetPolicyWithoutATimeUsesTheLastTick) {
  controller->tick(1.0);
  controller->set_override({3, 100.0, "drill"}, 5.0);  // a later note must not lend its time
  controller->tick(6.0);
  controller->set_policy(std::make_unique<FixedPolicy>(9));
  EXPECT_DOUBLE_EQ(controller->recent_decisions(1).back().time, 6.0);
}

TEST_F(ControllerEvents, EventsAreOrderedAndBoundedByTheHistoryLimit) {
  ControlLoop small(sampler, actuator, std::make_unique<FixedPolicy>(5), guards_without_window(),
                    3);
  small.tick(1.0);
  small.record_event(2.0, "api", "paused by api");
  small.record_event(3.0, "api", "resumed by api");
  small.tick(4.0);
  const std::vector<Decision> log = small.recent_decisions(10);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].reason, "paused by api");
  EXPECT_EQ(log[1].reason, "resumed by api");
  EXPECT_EQ(log[2].source, "policy");
  EXPECT_DOUBLE_EQ(log[2].time, 4.0);
}

// record_event() from another thread while the control thread ticks (for the sanitizer builds).
TEST_F(ControllerEvents, RecordEventIsSafeWhileTicking) {
  ControlLoop c(sampler, actuator, std::make_unique<FixedPolicy>(7), guards_without_window(),
                5000);  // keeps all
  std::thread control([&] {
    for (int i = 1; i <= 2000; ++i) c.tick(i);
  });
  for (int i = 0; i < 500; ++i) {
    c.record_event(0.5 * i, "api", i % 2 ? "resumed by api" : "paused by api");
  }
  control.join();
  int notes = 0, decisions = 0;
  for (const Decision& d : c.recent_decisions(5000)) {
    if (d.policy == ControlLoop::kOperatorPolicy) {
      ++notes;
      EXPECT_EQ(d.workers, d.previous_workers);
    } else {
      ++decisions;
      EXPECT_EQ(d.workers, 7);
    }
  }
  EXPECT_EQ(notes, 500);
  EXPECT_EQ(decisions, 2000);
  ASSERT_TRUE(c.last_decision().has_value());
  EXPECT_DOUBLE_EQ(c.last_decision()->time, 2000.0);
}

}  // namespace
}  // namespace lagpilot

namespace lagpilot {
namespace {

// The history is a ring: once full, the oldest entry gives way and the order stays oldest first.
TEST(ControlLoopHistory, KeepsTheLastDecisionsInOrderAndNoneWhenAskedForNone) {
  testing::FakeSamplerAndActuator fakes;
  ControlLoop three(fakes.sampler, fakes.actuator, std::make_unique<testing::FixedPolicy>(5),
                    testing::guards_without_window(), 3);
  for (int t = 1; t <= 5; ++t) three.tick(t);
  three.record_event(5.5, "api", "note");
  const std::vector<Decision> log = three.recent_decisions(10);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_DOUBLE_EQ(log[0].time, 4.0);
  EXPECT_DOUBLE_EQ(log[1].time, 5.0);
  EXPECT_DOUBLE_EQ(log[2].time, 5.5);
  EXPECT_DOUBLE_EQ(three.last_decision()->time, 5.0);
  EXPECT_EQ(three.recent_decisions(1).front().reason, "note");

  ControlLoop none(fakes.sampler, fakes.actuator, std::make_unique<testing::FixedPolicy>(5),
                   testing::guards_without_window(), 0);
  EXPECT_EQ(none.tick(1.0).workers, 5);
  EXPECT_TRUE(none.recent_decisions(10).empty());
  EXPECT_FALSE(none.last_decision().has_value());
}

}  // namespace
}  // namespace lagpilot
