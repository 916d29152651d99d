#include "sim/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policies/number_text.h"
#include "sim/html_text.h"

namespace lagpilot::sim {
namespace html {

std::string coord(double v) {
  std::string s = text::fixed(v, 1);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

double nice_step(double span, int target) {
  if (!(span > 0) || !std::isfinite(span)) return 1.0;
  const double raw = span / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  const double m = r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10;
  return m * magnitude;
}

double time_step(double span, int target) {
  static const double kSteps[] = {1,     2,     5,      10,     15,     30,      60,     120,
                                  300,   600,   900,    1800,   3600,   7200,    10800,  21600,
                                  43200, 86400, 172800, 345600, 604800, 1209600, 2419200};
  const double raw = span / std::max(1, target);
  for (double s : kSteps) {
    if (s >= raw) return s;
  }
  return nice_step(span / 86400, target) * 86400;
}

void write_chart(std::ostringstream& out, const ChartSpec& c) {
  const double plot_h = c.height - kTop - kBottom;
  Range y;
  for (const auto& line : c.lines) {
    for (const auto& p : line.points) y.add(p.y);
  }
  if (c.marker) y.add(c.marker->y);
  if (y.empty()) y = Range{0, 1};
  if (c.y_from_zero || c.log_y) y.lo = std::min(0.0, y.lo);
  if (y.hi <= y.lo) y.hi = y.lo + 1;
  std::vector<double> y_ticks;
  double y_lo = 0, y_hi = 1;  // in drawn units (log10(1 + y) when log_y)
  auto ty = [&](double v) { return c.log_y ? std::log10(1.0 + std::max(0.0, v)) : v; };
  if (c.log_y) {
    const int top =
        std::max(1, static_cast<int>(std::ceil(std::log10(std::max(1.0, y.hi)) - 1e-9)));
    const int every = top > 6 ? 2 : 1;
    y_ticks.push_back(0);
    for (int k = top % every; k <= top; k += every) {
      if (k > 0 || every == 1) y_ticks.push_back(std::pow(10.0, k));
    }
    y_hi = ty(std::pow(10.0, top));
  } else {
    const double y_step = nice_step(y.hi - y.lo, 4);
    y_lo = std::floor(y.lo / y_step) * y_step;
    y_hi = std::ceil(y.hi / y_step - 1e-9) * y_step;
    for (double v = y_lo; v <= y_hi + y_step * 1e-6; v += y_step) {
      y_ticks.push_back(std::fabs(v) < y_step * 1e-6 ? 0.0 : v);
    }
  }
  double x_lo = c.x_min, x_hi = c.x_max;
  if (!(x_hi > x_lo)) x_hi = x_lo + 1;

  auto sx = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * kPlotWidth; };
  auto sy = [&](double v) { return kTop + (y_hi - ty(v)) / (y_hi - y_lo) * plot_h; };

  out << "<figure class=\"chart\"><figcaption>" << html_escape(c.caption) << "</figcaption>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" << html_escape(c.id)
      << "\" class=\"chart\" viewBox=\"0 0 " << coord(kWidth) << ' ' << coord(c.height)
      << "\" role=\"img\" aria-label=\"" << html_escape(c.caption) << "\">\n";
  // Grid and y ticks.
  out << "<g class=\"grid\">";
  for (double v : y_ticks) {
    const double py = sy(v);
    out << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << coord(py) << "\" x2=\""
        << coord(kLeft + kPlotWidth) << "\" y2=\"" << coord(py) << "\"/>";
  }
  const double x_step = c.x_is_time ? time_step(x_hi - x_lo, 8) : nice_step(x_hi - x_lo, 8);
  std::vector<double> x_ticks;
  for (double v = std::ceil(x_lo / x_step - 1e-9) * x_step; v <= x_hi + x_step * 1e-6;
       v += x_step) {
    x_ticks.push_back(v);
  }
  for (double v : x_ticks) {
    out << "<line x1=\"" << coord(sx(v)) << "\" y1=\"" << coord(kTop) << "\" x2=\"" << coord(sx(v))
        << "\" y2=\"" << coord(kTop + plot_h) << "\"/>";
  }
  out << "</g>\n<g class=\"axis\">";
  for (double v : y_ticks) {
    out << "<text x=\"" << coord(kLeft - 6) << "\" y=\"" << coord(sy(v) + 4)
        << "\" text-anchor=\"end\">" << html_escape(si(v)) << "</text>";
  }
  for (double v : x_ticks) {
    out << "<text x=\"" << coord(sx(v)) << "\" y=\"" << coord(kTop + plot_h + 16)
        << "\" text-anchor=\"middle\">" << html_escape(c.x_is_time ? human_duration(v) : si(v))
        << "</text>";
  }
  out << "<text class=\"unit\" x=\"" << coord(kLeft + 6) << "\" y=\"" << coord(kTop + 13) << "\">"
      << html_escape(c.y_unit) << "</text>";
  if (!c.x_label.empty()) {
    out << "<text class=\"unit\" x=\"" << coord(kLeft + kPlotWidth) << "\" y=\""
        << coord(c.height - 2) << "\" text-anchor=\"end\">" << html_escape(c.x_label) << "</text>";
  }
  out << "<rect class=\"frame\" x=\"" << coord(kLeft) << "\" y=\"" << coord(kTop) << "\" width=\""
      << coord(kPlotWidth) << "\" height=\"" << coord(plot_h) << "\"/>";
  out << "</g>\n<g class=\"series\">\n";
  for (const auto& line : c.lines) {
    if (line.points.empty()) continue;
    std::string pts;
    pts.reserve(line.points.size() * 12);
    if (line.filled) {
      pts += coord(sx(line.points.front().x)) + ',' + coord(kTop + plot_h) + ' ';
    }
    for (const auto& p : line.points) {
      pts += coord(sx(p.x));
      pts += ',';
      pts += coord(sy(p.y));
      pts += ' ';
    }
    if (line.filled) {
      pts += coord(sx(line.points.back().x)) + ',' + coord(kTop + plot_h);
    } else if (!pts.empty()) {
      pts.pop_back();
    }
    out << (line.filled ? "<polygon" : "<polyline") << " class=\"" << html_escape(line.css_class)
        << (line.filled ? " area" : "") << "\" points=\"" << pts << "\" style=\""
        << (line.filled ? "fill:" + line.color + ";stroke:" + line.color : "stroke:" + line.color)
        << (line.dashed ? ";stroke-dasharray:6 3" : "") << "\"><title>" << html_escape(line.title)
        << "</title>" << (line.filled ? "</polygon>" : "</polyline>") << "\n";
  }
  if (c.marker) {
    const double py = sy(c.marker->y);
    out << "<line class=\"slo\" x1=\"" << coord(kLeft) << "\" y1=\"" << coord(py) << "\" x2=\""
        << coord(kLeft + kPlotWidth) << "\" y2=\"" << coord(py) << "\"/>"
        << "<text class=\"slo\" x=\"" << coord(kLeft + kPlotWidth - 4) << "\" y=\"" << coord(py - 4)
        << "\" text-anchor=\"end\">" << html_escape(c.marker->label) << "</text>\n";
  }
  out << "</g>\n</svg></figure>\n";
}

}  // namespace html

std::vector<XYPoint> downsample_min_max(const std::vector<XYPoint>& points, std::size_t columns) {
  if (columns == 0) throw std::invalid_argument("downsample_min_max: columns must be >= 1");
  if (points.size() <= 2 * columns) return points;
  const double x0 = points.front().x, x1 = points.back().x;
  const double span = x1 - x0;
  std::vector<XYPoint> out;
  out.reserve(2 * columns);
  std::size_t i = 0;
  while (i < points.size()) {
    const std::size_t column =
        span > 0 ? std::min(columns - 1,
                            static_cast<std::size_t>((points[i].x - x0) / span * double(columns)))
                 : 0;
    std::size_t lo = i, hi = i, j = i;
    for (; j < points.size(); ++j) {
      const std::size_t cj =
          span > 0 ? std::min(columns - 1,
                              static_cast<std::size_t>((points[j].x - x0) / span * double(columns)))
                   : 0;
      if (cj != column) break;
      if (points[j].y < points[lo].y) lo = j;
      if (points[j].y > points[hi].y) hi = j;
    }
    if (lo == hi) {
      out.push_back(points[lo]);
    } else {
      out.push_back(points[std::min(lo, hi)]);
      out.push_back(points[std::max(lo, hi)]);
    }
    i = j;
  }
  return out;
}

}  // namespace lagpilot::sim
