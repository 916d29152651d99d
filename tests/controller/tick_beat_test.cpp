// TickBeat on simulated times: on-time ticks are not late, a tick delayed by the previous one or
// by a late wake-up says which, and a loop more than a period behind skips the missed beats
// instead of running them back to back.
#include "controller/tick_beat.h"

#include <gtest/gtest.h>

namespace lagpilot {
namespace {

TEST(TickBeat, OnTimeTicksFollowTheGridAndAreNotLate) {
  TickBeat beat(1.0, 100.0);
  for (int k = 1; k <= 5; ++k) {
    EXPECT_DOUBLE_EQ(beat.due(), 100.0 + k);
    const double start = beat.due() + 0.04;  // within 5 % of the period
    const TickSchedule s = beat.begin(start);
    EXPECT_TRUE(s.late.empty()) << s.late;
    EXPECT_EQ(s.skipped, 0);
    EXPECT_NEAR(s.late_seconds, 0.04, 1e-9);
    beat.end(start + 0.01);
  }
  EXPECT_DOUBLE_EQ(beat.due(), 106.0);  // the grid does not drift with the lateness
}

TEST(TickBeat, ATickDelayedByThePreviousOneSaysSo) {
  TickBeat beat(1.0, 0.0);
  beat.begin(1.0);
  beat.end(2.3);  // ran 1.3 s, past the next due time
  const TickSchedule s = beat.begin(2.3);
  EXPECT_NEAR(s.late_seconds, 0.3, 1e-9);
  EXPECT_EQ(s.skipped, 0);
  EXPECT_NE(s.late.find("0.300 s late"), std::string::npos) << s.late;
  EXPECT_NE(s.late.find("previous tick ran until 0.300 s past due"), std::string::npos) << s.late;
  EXPECT_DOUBLE_EQ(beat.due(), 3.0);
}

TEST(TickBeat, ALateWakeUpIsNotBlamedOnThePreviousTick) {
  TickBeat beat(2.0, 0.0);
  beat.begin(2.0);
  beat.end(2.1);
  const TickSchedule s = beat.begin(4.5);
  EXPECT_NE(s.late.find("0.500 s late: the control thread woke late"), std::string::npos) << s.late;
}

TEST(TickBeat, MissedBeatsAreSkippedNotRunBackToBack) {
  TickBeat beat(1.0, 0.0);
  beat.begin(1.0);
  beat.end(1.1);
  const TickSchedule s = beat.begin(4.6);  // due at 2: beats 3 and 4 are gone
  EXPECT_EQ(s.skipped, 2);
  EXPECT_NE(s.late.find("2 ticks skipped"), std::string::npos) << s.late;
  EXPECT_DOUBLE_EQ(beat.due(), 5.0);  // the next beat on the grid, not 3.0
  beat.end(4.7);
  EXPECT_TRUE(beat.begin(5.0).late.empty());
}

}  // namespace
}  // namespace lagpilot
