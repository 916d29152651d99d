#include "sim/peak_load.h"

#include <gtest/gtest.h>

namespace lagpilot::sim {
namespace {

// The default consumer: about 370/s at 4 workers and 1130/s at 16.
constexpr double kAtMin = 370, kAtMax = 1130;

TEST(PeakLoad, AGivenScaleIsKeptAsItIs) {
  for (const double requested : {0.0, 0.5, 1.2, 3.0}) {
    for (const double peak : {10.0, 800.0, 1e6}) {
      const PeakLoadChoice c = choose_peak_load(requested, peak, kAtMin, kAtMax, 4, 16);
      EXPECT_EQ(c.peak_load, requested);
      EXPECT_FALSE(c.automatic);
      EXPECT_TRUE(c.note.empty());
    }
  }
}

TEST(PeakLoad, ATraceBelowTheMinimumPoolIsScaledAndTheNoteSaysWhy) {
  const PeakLoadChoice c = choose_peak_load(-1, 45, kAtMin, kAtMax, 4, 16);
  EXPECT_EQ(c.peak_load, kAutomaticPeakLoad);
  EXPECT_TRUE(c.automatic);
  EXPECT_EQ(c.note.rfind("scaled to peak 1.2x capacity at max workers", 0), 0u) << c.note;
  EXPECT_NE(c.note.find("45/s"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("4 workers"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("--peak-load 0 keeps absolute rates"), std::string::npos) << c.note;
  EXPECT_TRUE(choose_peak_load(-1, kAtMin, kAtMin, kAtMax, 4, 16).automatic);
}

TEST(PeakLoad, ATraceFarAboveTheMaximumPoolIsScaled) {
  const PeakLoadChoice c = choose_peak_load(-1, 3 * kAtMax, kAtMin, kAtMax, 4, 16);
  EXPECT_TRUE(c.automatic);
  EXPECT_NE(c.note.find("3.0x"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("16 workers"), std::string::npos) << c.note;
}

TEST(PeakLoad, ATraceInTheConsumersRangeIsKept) {
  for (const double peak : {kAtMin * 1.01, kAtMax, kSaturatingPeakLoad * kAtMax}) {
    const PeakLoadChoice c = choose_peak_load(-1, peak, kAtMin, kAtMax, 4, 16);
    EXPECT_EQ(c.peak_load, 0.0) << peak;
    EXPECT_FALSE(c.automatic) << peak;
  }
  EXPECT_FALSE(choose_peak_load(-1, 0, kAtMin, kAtMax, 4, 16).automatic) << "no arrivals";
}

}  // namespace
}  // namespace lagpilot::sim
