#include "policies/last_quotient.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lagpilot {
namespace {

TEST(LastQuotient, EveryCallGivesTheQuotientOfItsOwnOperands) {
  LastQuotient q;
  // A tick length that repeats, changes and comes back; operands as a filter's gain uses them.
  const double steps[][2] = {{1.0, 31.0}, {1.0, 31.0}, {0.7, 30.7}, {0.7, 30.7}, {1.0, 31.0},
                             {1.0, 1.0},  {0.0, 5.0},  {2.5, 1e-300}, {1.0, 31.0}};
  for (const auto& s : steps) EXPECT_EQ(q(s[0], s[1]), s[0] / s[1]) << s[0] << " / " << s[1];
  // The first call divides (the remembered operands start as NaN, equal to nothing).
  LastQuotient fresh;
  EXPECT_EQ(fresh(0.0, 1.0), 0.0);
  EXPECT_TRUE(std::isnan(fresh(0.0, 0.0)));
  EXPECT_EQ(fresh(3.0, 2.0), 1.5);
}

}  // namespace
}  // namespace lagpilot
