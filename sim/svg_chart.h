#pragma once
// An SVG line chart for the HTML reports, written as text: axes with "nice" ticks (1, 2 or 5 x
// 10^k; whole seconds, minutes, hours or days on a time axis), lines, filled areas and one
// horizontal marker (the lag SLO). Every chart has the same width and margins, so panels stacked
// on a page share their x scale.
//
// Thread-safety: pure functions; any thread.

#include <cstddef>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/html_report.h"

namespace lagpilot::sim::html {

// Geometry shared by every time chart, so stacked panels have the same x scale.
constexpr double kWidth = 1000;
constexpr double kLeft = 72;
constexpr double kRight = 16;
constexpr double kTop = 14;
constexpr double kBottom = 30;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
// One min/max pair per pixel column of the plot area.
constexpr std::size_t kColumns = static_cast<std::size_t>(kPlotWidth);

struct Line {
  std::vector<XYPoint> points;
  std::string color;
  std::string css_class;  // e.g. "run-2", for the legend toggles
  std::string title;      // tooltip (already plain text; escaped when written)
  bool dashed = false;
  bool filled = false;  // area down to y = 0
};

struct HorizontalMarker {
  double y = 0;
  std::string label;
};

struct ChartSpec {
  std::string id;
  std::string caption;
  std::string y_unit;
  double height = 200;
  double x_min = 0, x_max = 1;
  bool x_is_time = true;
  std::string x_label;
  bool y_from_zero = true;
  // y drawn as log10(1 + y) with ticks at 0 and powers of ten (values must be >= 0).
  bool log_y = false;
  std::vector<Line> lines;
  std::optional<HorizontalMarker> marker;
};

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

// Writes one <svg> chart. Lines are expected to be already downsampled.
void write_chart(std::ostringstream& out, const ChartSpec& c);

// SVG coordinate: one decimal, no trailing ".0".
std::string coord(double v);

// Nice tick step (1, 2 or 5 x 10^k) giving about `target` intervals over `span`.
double nice_step(double span, int target);

// Tick step for a time axis in seconds: a whole number of seconds, minutes, hours or days.
double time_step(double span, int target);

}  // namespace lagpilot::sim::html
