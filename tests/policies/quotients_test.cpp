#include "policies/quotients.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lagpilot {
namespace {

TEST(LastQuotient, EveryCallGivesTheQuotientOfItsOwnOperands) {
  LastQuotient q;
  // A tick length that repeats, changes and comes back; operands as a filter's gain uses them.
  const double steps[][2] = {{1.0, 31.0}, {1.0, 31.0}, {0.7, 30.7},   {0.7, 30.7}, {1.0, 31.0},
                             {1.0, 1.0},  {0.0, 5.0},  {2.5, 1e-300}, {1.0, 31.0}};
  for (const auto& s : steps) EXPECT_EQ(q(s[0], s[1]), s[0] / s[1]) << s[0] << " / " << s[1];
  // The first call divides (the remembered operands start as NaN, equal to nothing).
  LastQuotient fresh;
  EXPECT_EQ(fresh(0.0, 1.0), 0.0);
  EXPECT_TRUE(std::isnan(fresh(0.0, 0.0)));
  EXPECT_EQ(fresh(3.0, 2.0), 1.5);
}

TEST(LastDecay, EveryCallGivesTheDecayOfItsOwnOperands) {
  LastDecay d;
  // A tick length that repeats, changes and comes back, against a window (dt, tau).
  const double steps[][2] = {{1.0, 21600.0}, {1.0, 21600.0}, {0.5, 21600.0},
                             {1.0, 600.0},   {0.0, 600.0},   {1.0, 21600.0}};
  for (const auto& s : steps) {
    EXPECT_EQ(d(s[0], s[1]), std::exp(-s[0] / s[1])) << "exp(-" << s[0] << " / " << s[1] << ")";
  }
}

TEST(Divide, IsTheQuotientWithOrWithoutTheDivision) {
  for (const double x : {0.0, -3.5, 1e300, 7.0 / 3.0}) {
    for (const double d : {1.0, 0.7, 2.0, 1.0 + 1e-15})
      EXPECT_EQ(divide(x, d), x / d) << x << " / " << d;
  }
}

}  // namespace
}  // namespace lagpilot
