#include "policies/burst_calendar.h"

#include <gtest/gtest.h>

namespace lagpilot {
namespace {

// Four onsets 1,800 s apart: the period is known after the fourth, and the next burst is due
// at 4 x 1,800 + 100 s.
BurstCalendar every_half_hour(int pool = 16) {
  BurstCalendar calendar;
  for (int i = 0; i < 4; ++i) {
    calendar.onset(100.0 + 1800.0 * i);
    calendar.ended(pool);
  }
  return calendar;
}

TEST(BurstCalendar, LearnsAPeriodFromEvenlySpacedOnsets) {
  BurstCalendar calendar = every_half_hour();
  ASSERT_TRUE(calendar.known());
  EXPECT_DOUBLE_EQ(calendar.period(), 1800.0);
  EXPECT_DOUBLE_EQ(calendar.due(), 100.0 + 1800.0 * 4);
}

TEST(BurstCalendar, WantsTheLastBurstsPoolFromTheLeadUntilTheBurstOrItsWindowEnds) {
  BurstCalendar calendar = every_half_hour(11);
  const double due = calendar.due();
  EXPECT_EQ(calendar.wanted(due - 11.0, 10.0), 0);
  EXPECT_EQ(calendar.wanted(due - 10.0, 10.0), 11);
  EXPECT_EQ(calendar.wanted(due, 10.0), 11);
  // The window after the due time: the larger of the lead and 2 % of the period (36 s).
  EXPECT_EQ(calendar.wanted(due + 36.0, 10.0), 11);
  EXPECT_TRUE(calendar.known());
}

TEST(BurstCalendar, ABurstLateBeyondItsWindowClearsThePeriod) {
  BurstCalendar calendar = every_half_hour();
  const double due = calendar.due();
  EXPECT_EQ(calendar.wanted(due + 37.0, 10.0), 0);
  EXPECT_FALSE(calendar.known());
  EXPECT_EQ(calendar.wanted(due + 1800.0, 10.0), 0);  // a stopped job buys nothing more
  // The period is learned anew from the last onset on: three more gaps.
  for (int i = 1; i <= 2; ++i) calendar.onset(100.0 + 1800.0 * (3 + i));
  EXPECT_FALSE(calendar.known());
  calendar.onset(100.0 + 1800.0 * 6);
  EXPECT_TRUE(calendar.known());
}

TEST(BurstCalendar, UnevenGapsOrShortPeriodsAreNoCalendar) {
  BurstCalendar uneven;
  for (const double t : {0.0, 1800.0, 3600.0, 5500.0}) uneven.onset(t);  // 100 s off: 5.6 %
  EXPECT_FALSE(uneven.known());
  BurstCalendar close_enough;
  for (const double t : {0.0, 1800.0, 3600.0, 5430.0}) close_enough.onset(t);  // 30 s: 1.7 %
  EXPECT_TRUE(close_enough.known());
  BurstCalendar fast;
  for (const double t : {0.0, 30.0, 60.0, 90.0}) fast.onset(t);  // under the 60 s minimum
  EXPECT_FALSE(fast.known());
  BurstCalendar off({.intervals = 0});
  for (const double t : {0.0, 1800.0, 3600.0, 5400.0}) off.onset(t);
  EXPECT_FALSE(off.known());
}

TEST(BurstCalendar, NothingIsWantedBeforeABurstHasEnded) {
  BurstCalendar calendar;
  for (int i = 0; i < 4; ++i) calendar.onset(1800.0 * i);  // no ended(): no pool known
  ASSERT_TRUE(calendar.known());
  EXPECT_EQ(calendar.wanted(calendar.due(), 10.0), 0);
}

}  // namespace
}  // namespace lagpilot
