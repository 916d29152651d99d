#include "sim/html_report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace lagpilot::sim {
namespace {

// ---------------------------------------------------------------------------------------------
// Number and time formatting

std::string printf_string(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// 1234567 -> "1,234,567" (integers), 0.01234 -> "0.0123", 123.4 -> "123".
std::string grouped(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "n/a" : (v > 0 ? "inf" : "-inf");
  const double a = std::fabs(v);
  if (a != 0.0 && a < 100 && v != std::floor(v)) return printf_string("%.3g", v);
  if (a >= 1e15) return printf_string("%.3e", v);
  const std::string digits = printf_string("%.0f", a);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  if (v < 0 && digits != "0") out.insert(out.begin(), '-');
  return out;
}

// Axis tick label with an SI suffix: 1500 -> "1.5k", 2000000 -> "2M", 0.25 -> "0.25".
std::string si(double v) {
  const double a = std::fabs(v);
  const char* suffix = "";
  double scaled = v;
  if (a >= 1e12) {
    scaled = v / 1e12, suffix = "T";
  } else if (a >= 1e9) {
    scaled = v / 1e9, suffix = "G";
  } else if (a >= 1e6) {
    scaled = v / 1e6, suffix = "M";
  } else if (a >= 1e3) {
    scaled = v / 1e3, suffix = "k";
  }
  std::string s = printf_string("%.3g", scaled);
  if (s == "-0") s = "0";
  return s + suffix;
}

// Seconds as a short human duration: 45 -> "45s", 5400 -> "1h30m", 86400 -> "1d".
std::string human_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  const bool negative = seconds < 0;
  double s = std::fabs(seconds);
  if (s < 1.0 && s > 0) return printf_string("%.3gs", seconds);
  auto whole = static_cast<long long>(std::llround(s));
  const long long d = whole / 86400, h = whole % 86400 / 3600, m = whole % 3600 / 60,
                  sec = whole % 60;
  std::string out;
  if (d > 0) out += std::to_string(d) + "d";
  if (h > 0) out += std::to_string(h) + "h";
  if (m > 0 && d == 0) out += std::to_string(m) + "m";
  if (sec > 0 && d == 0 && h == 0) out += std::to_string(sec) + "s";
  if (out.empty()) out = "0";
  if (negative) out.insert(out.begin(), '-');
  return out;
}

// Parameters for display: floats rounded to 6 significant digits, compact JSON.
nlohmann::json rounded_for_display(nlohmann::json j) {
  if (j.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", j.get<double>());
    return std::strtod(buf, nullptr);
  }
  if (j.is_object() || j.is_array()) {
    for (auto& v : j) v = rounded_for_display(std::move(v));
  }
  return j;
}

std::string params_text(const nlohmann::json& params) {
  return rounded_for_display(params).dump();
}

// SVG coordinate: one decimal, no trailing ".0".
std::string coord(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

// Nice tick step (1, 2 or 5 x 10^k) giving about `target` intervals over `span`.
double nice_step(double span, int target) {
  if (!(span > 0) || !std::isfinite(span)) return 1.0;
  const double raw = span / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  const double m = r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10;
  return m * magnitude;
}

// Tick step for a time axis in seconds: a whole number of seconds, minutes, hours or days.
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

// ---------------------------------------------------------------------------------------------
// Colors and labels

// Tableau 10: distinguishable, readable on white, reasonably colorblind-safe.
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

constexpr const char* kOracleColor = "#222222";

bool is_oracle(const RunResult& r) {
  return r.label == "oracle" || r.policy == "oracle";
}

std::vector<std::string> run_colors(const std::vector<RunResult>& runs) {
  std::vector<std::string> colors;
  std::size_t next = 0;
  for (const auto& r : runs) {
    if (is_oracle(r)) {
      colors.emplace_back(kOracleColor);
    } else {
      colors.emplace_back(kPalette[next++ % std::size(kPalette)]);
    }
  }
  return colors;
}

// ---------------------------------------------------------------------------------------------
// Charts

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

// The lag chart uses a log scale when the highest lag is above this multiple of the SLO.
constexpr double kLogLagFactor = 30;

// Workers are constant during the tick that ends at each point: draw steps.
std::vector<XYPoint> step_points(const std::vector<SeriesPoint>& series, double t0) {
  std::vector<XYPoint> pts;
  pts.reserve(series.size() * 2);
  double prev = t0;
  for (const auto& p : series) {
    pts.push_back({prev, static_cast<double>(p.workers)});
    pts.push_back({p.t, static_cast<double>(p.workers)});
    prev = p.t;
  }
  return pts;
}

// Checks that every run with a series has the same series times; returns the first one.
const RunResult* reference_series(const std::vector<const RunResult*>& runs) {
  const RunResult* ref = nullptr;
  for (const RunResult* r : runs) {
    if (r->series.empty()) continue;
    if (!ref) {
      ref = r;
      continue;
    }
    bool same = r->series.size() == ref->series.size();
    for (std::size_t i = 0; same && i < r->series.size(); ++i) {
      same = std::fabs(r->series[i].t - ref->series[i].t) <= 1e-9 * (1 + std::fabs(r->series[i].t));
    }
    if (!same) {
      throw std::invalid_argument("html report: run '" + r->label +
                                  "' has different series times than run '" + ref->label +
                                  "' (different traces or sim configs?)");
    }
  }
  return ref;
}

// Arrivals, lag and workers panels for the runs that have a series. `colors[i]` and
// "run-i" belong to runs[i].
void write_time_charts(std::ostringstream& out, const std::vector<const RunResult*>& runs,
                       const std::vector<std::string>& colors, int64_t lag_slo,
                       const std::string& id_prefix) {
  const RunResult* ref = reference_series(runs);
  if (!ref) {
    out << "<p class=\"note\">No time series were recorded, so there are no charts.</p>\n";
    return;
  }
  // Series start at the first tick; the axis starts at 0, the start of the trace.
  const double t0 = 0.0;
  const double t1 = ref->series.back().t;
  const std::string x_label = "time since trace start (simulated)";
  // The three charts, stacked, share the time axis.
  auto time_chart = [&](const std::string& name, const std::string& caption,
                        const std::string& y_unit, double height) {
    ChartSpec chart;
    chart.id = id_prefix + name;
    chart.caption = caption;
    chart.y_unit = y_unit;
    chart.height = height;
    chart.x_min = t0;
    chart.x_max = t1;
    return chart;
  };

  ChartSpec arrivals = time_chart("arrivals", "Arrivals (the same for every policy)", "msg/s", 170);
  {
    // The simulated arrivals (the oracle's fluid model has the expected rate, not the draws).
    const RunResult* source = ref;
    for (const RunResult* r : runs) {
      if (!r->series.empty() && !is_oracle(*r)) {
        source = r;
        break;
      }
    }
    std::vector<XYPoint> pts;
    pts.reserve(source->series.size());
    for (const auto& p : source->series) pts.push_back({p.t, p.arrival_rate});
    arrivals.lines.push_back(
        {downsample_min_max(pts, kColumns), "#8c8c8c", "arrivals", "arrival rate", false, true});
  }

  ChartSpec lag = time_chart("lag", "Consumer lag", "messages", 230);
  if (lag_slo > 0)
    lag.marker = HorizontalMarker{double(lag_slo), "SLO " + grouped(double(lag_slo))};

  ChartSpec workers = time_chart("workers", "Workers", "workers", 200);
  workers.x_label = x_label;

  // The oracle first, so that the policies are drawn on top of it.
  std::vector<std::size_t> draw_order;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (is_oracle(*runs[i]) == (pass == 0)) draw_order.push_back(i);
    }
  }
  for (const std::size_t i : draw_order) {
    const RunResult& r = *runs[i];
    if (r.series.empty()) continue;
    const std::string cls = "run-" + std::to_string(i);
    const bool dashed = is_oracle(r);
    std::vector<XYPoint> lag_pts;
    lag_pts.reserve(r.series.size());
    for (const auto& p : r.series) lag_pts.push_back({p.t, static_cast<double>(p.lag)});
    lag.lines.push_back(
        {downsample_min_max(lag_pts, kColumns), colors[i], cls, r.label, dashed, false});
    workers.lines.push_back({downsample_min_max(step_points(r.series, t0), kColumns), colors[i],
                             cls, r.label, dashed, false});
  }
  // One policy far above the SLO would flatten every other line: switch to a log scale then.
  double max_lag = 0;
  for (const auto& line : lag.lines) {
    for (const auto& p : line.points) max_lag = std::max(max_lag, p.y);
  }
  if (max_lag > kLogLagFactor * static_cast<double>(std::max<int64_t>(lag_slo, 1))) {
    lag.log_y = true;
    lag.caption +=
        " (log scale: some lag exceeds " + printf_string("%.0f", kLogLagFactor) + "x the SLO)";
  }
  out << "<div class=\"charts\">\n";
  write_chart(out, arrivals);
  write_chart(out, lag);
  write_chart(out, workers);
  out << "</div>\n";
}

// ---------------------------------------------------------------------------------------------
// Page pieces

const char* const kCss = R"css(
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #ffffff; --zebra: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; padding: 16px 24px 48px; max-width: 1180px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.sub { color: var(--muted); margin: 0 0 12px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 2px 14px; margin: 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; font-variant-numeric: tabular-nums; word-break: break-all; }
table { font-size: 13px; border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 6px 0; }
th, td { padding: 4px 7px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: var(--zebra); font-weight: 600; vertical-align: bottom; }
th small { display: block; font-weight: 400; color: var(--muted); }
td.name, th.name { text-align: left; }
td.best { font-weight: 700; }
tr.oracle td { color: var(--muted); font-style: italic; }
.table-wrap { overflow-x: auto; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 8px 0; position: sticky; top: 0;
          background: var(--bg); padding: 6px 0; z-index: 1; }
.legend label { cursor: pointer; user-select: none; }
.toggle { position: absolute; opacity: 0; pointer-events: none; }
figure.chart { margin: 0 0 4px; }
figure.chart figcaption { font-weight: 600; margin: 6px 0 0; }
svg.chart { width: 100%; height: auto; display: block; }
svg .grid line { stroke: #eaeef2; stroke-width: 1; }
svg .axis text { font-size: 11px; fill: var(--muted); }
svg .axis text.unit { font-size: 11px; fill: var(--fg); }
svg .frame { fill: none; stroke: var(--line); }
svg polyline { fill: none; stroke-width: 1.4; stroke-linejoin: round; vector-effect: non-scaling-stroke; }
svg polygon.area { fill-opacity: 0.35; stroke-width: 1; }
svg line.slo { stroke: #cf222e; stroke-width: 1.2; stroke-dasharray: 5 4; }
svg text.slo { font-size: 11px; fill: #cf222e; }
svg circle.point { fill: #afb8c1; fill-opacity: 0.7; }
svg circle.front { fill: #e15759; }
svg circle.best { fill: none; stroke: #1f2328; stroke-width: 2; }
svg polyline.front { stroke: #e15759; stroke-width: 1.2; stroke-dasharray: 4 3; }
pre { background: var(--zebra); padding: 8px 10px; border-radius: 6px; overflow-x: auto; }
.note { color: var(--muted); }
footer { color: var(--muted); margin-top: 32px; font-size: 12px; }
)css";

void write_head(std::ostringstream& out, const std::string& title, const std::string& extra_css) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<meta name=\"generator\" content=\"lagpilot\">\n"
      << "<title>" << html_escape(title) << "</title>\n<style>" << kCss << extra_css
      << "</style>\n</head>\n<body>\n";
}

void write_foot(std::ostringstream& out) {
  out << "<footer>Generated by lagpilot. Self-contained: no scripts, fonts or network "
         "resources. Hover a line or point for its name.</footer>\n</body>\n</html>\n";
}

// Flattens {"a": {"b": 1}} into ("a.b", "1") pairs (arrays and strings as compact JSON/text).
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else if (j.is_string()) {
    out.emplace_back(prefix, j.get<std::string>());
  } else if (j.is_number_float()) {
    out.emplace_back(prefix, printf_string("%.6g", j.get<double>()));
  } else {
    out.emplace_back(prefix, j.dump());
  }
}

void write_facts(std::ostringstream& out,
                 const std::vector<std::pair<std::string, std::string>>& facts) {
  out << "<dl class=\"facts\">\n";
  for (const auto& [k, v] : facts) {
    out << "<dt>" << html_escape(k) << "</dt><dd>" << html_escape(v) << "</dd>\n";
  }
  out << "</dl>\n";
}

std::vector<std::pair<std::string, std::string>> trace_facts(const TraceInfo& t) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"source", t.source},
      {"duration", human_duration(t.duration_seconds) + " (" + grouped(t.duration_seconds) + " s)"},
      {"bins", grouped(double(t.bins)) + " x " + printf_string("%.6g", t.bin_seconds) + " s"},
      {"messages", grouped(t.total_messages)},
      {"mean rate", grouped(t.mean_rate) + " msg/s"},
      {"peak rate", grouped(t.peak_rate) + " msg/s"},
  };
  if (t.notes.is_object()) {
    std::vector<std::pair<std::string, std::string>> notes;
    flatten(t.notes, "", notes);
    for (auto& n : notes) f.emplace_back(std::move(n));
  }
  return f;
}

// CSS for the no-script legend toggles: unchecking "toggle-i" hides every ".run-i".
std::string toggle_css(std::size_t runs) {
  std::string css;
  for (std::size_t i = 0; i < runs; ++i) {
    const std::string n = std::to_string(i);
    css += "#toggle-" + n + ":not(:checked) ~ .charts .run-" + n + " { display: none; }\n";
    css += "#toggle-" + n + ":not(:checked) ~ .legend label[for=toggle-" + n +
           "] { opacity: 0.35; text-decoration: line-through; }\n";
  }
  return css;
}

void write_legend(std::ostringstream& out, const std::vector<const RunResult*>& runs,
                  const std::vector<std::string>& colors) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->series.empty()) continue;
    out << "<input type=\"checkbox\" class=\"toggle\" id=\"toggle-" << i << "\" checked>\n";
  }
  out << "<div class=\"legend\">";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->series.empty()) continue;
    out << "<label for=\"toggle-" << i
        << "\" title=\"click to show or hide\"><span class=\"swatch\" style=\"background:"
        << colors[i] << "\"></span>" << html_escape(runs[i]->label) << "</label>";
  }
  out << "</div>\n";
}

struct KpiColumn {
  std::string name;
  std::string unit;
  double (*value)(const Kpis&);
  bool lower_is_better;  // mark the best value of the column (oracle excluded)
};

const std::vector<KpiColumn>& kpi_columns() {
  static const std::vector<KpiColumn> columns = {
      {"worker-seconds", "worker*s", [](const Kpis& k) { return k.worker_seconds; }, true},
      {"mean workers", "workers", [](const Kpis& k) { return k.mean_workers; }, false},
      {"max workers", "workers", [](const Kpis& k) { return double(k.max_workers); }, false},
      {"above SLO", "s", [](const Kpis& k) { return k.seconds_above_slo; }, true},
      {"lag integral", "msg*s", [](const Kpis& k) { return k.lag_integral; }, true},
      {"max lag", "msg", [](const Kpis& k) { return double(k.max_lag); }, true},
      {"p99 lag", "msg", [](const Kpis& k) { return double(k.p99_lag); }, true},
      {"scale actions", "count", [](const Kpis& k) { return double(k.scale_actions); }, true},
      {"reversals", "count", [](const Kpis& k) { return double(k.reversals); }, true},
      {"mean wait", "s", [](const Kpis& k) { return k.mean_wait_seconds; }, true},
      {"arrived", "msg", [](const Kpis& k) { return double(k.arrived); }, false},
      {"processed", "msg", [](const Kpis& k) { return double(k.processed); }, false},
      {"final lag", "msg", [](const Kpis& k) { return double(k.final_lag); }, false},
  };
  return columns;
}

void write_kpi_header(std::ostringstream& out, const std::vector<std::string>& leading,
                      bool oracle_columns) {
  out << "<thead><tr>";
  for (const auto& l : leading) out << "<th class=\"name\">" << html_escape(l) << "</th>";
  for (const auto& c : kpi_columns()) {
    out << "<th>" << html_escape(c.name) << "<small>" << html_escape(c.unit) << "</small></th>";
    if (oracle_columns && c.name == "worker-seconds") {
      out << "<th>vs oracle<small>ratio</small></th>";
    }
    if (oracle_columns && c.name == "above SLO") {
      out << "<th>vs oracle<small>+s</small></th>";
    }
  }
  out << "</tr></thead>\n";
}

// The KPI table of `runs` (with worker-seconds ratio and above-SLO difference to the oracle run
// when there is one). Best values (oracle excluded) are bold.
void write_sim_kpi_table(std::ostringstream& out, const std::vector<const RunResult*>& runs,
                         const std::vector<std::string>& colors) {
  const RunResult* oracle = nullptr;
  for (const RunResult* r : runs) {
    if (is_oracle(*r) && (!oracle || r->label == "oracle")) oracle = r;
  }
  const auto& columns = kpi_columns();
  std::vector<double> best(columns.size(), std::numeric_limits<double>::infinity());
  std::vector<double> worst(columns.size(), -std::numeric_limits<double>::infinity());
  int non_oracle = 0;
  for (const RunResult* r : runs) {
    if (is_oracle(*r)) continue;
    ++non_oracle;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      best[c] = std::min(best[c], columns[c].value(r->kpis));
      worst[c] = std::max(worst[c], columns[c].value(r->kpis));
    }
  }
  out << "<div class=\"table-wrap\"><table id=\"kpi-table\" class=\"kpi\">\n";
  write_kpi_header(out, {"policy"}, oracle != nullptr);
  out << "<tbody>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = *runs[i];
    out << "<tr" << (is_oracle(r) ? " class=\"oracle\"" : "") << "><td class=\"name\" title=\""
        << html_escape(r.policy + " " + params_text(r.policy_params) + " (" + r.fidelity +
                       " fidelity)")
        << "\"><span class=\"swatch\" style=\"background:" << colors[i] << "\"></span>"
        << html_escape(r.label) << "</td>";
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const double v = columns[c].value(r.kpis);
      const bool mark = non_oracle > 1 && columns[c].lower_is_better && !is_oracle(r) &&
                        v == best[c] && v != worst[c];
      out << "<td" << (mark ? " class=\"best\"" : "") << ">" << html_escape(grouped(v)) << "</td>";
      if (oracle && columns[c].name == "worker-seconds") {
        const double o = oracle->kpis.worker_seconds;
        out << "<td>" << (o > 0 ? html_escape(printf_string("%.2fx", v / o)) : "n/a") << "</td>";
      }
      if (oracle && columns[c].name == "above SLO") {
        const double d = v - oracle->kpis.seconds_above_slo;
        out << "<td>" << (d > 0 ? "+" : "") << html_escape(grouped(d)) << "</td>";
      }
    }
    out << "</tr>\n";
  }
  out << "</tbody></table></div>\n";
  if (oracle) {
    out << "<p class=\"note\">Oracle: the clairvoyant lower bound on worker-seconds. "
           "\"vs oracle\" columns give each policy's worker-seconds as a multiple of the "
           "oracle's, and its seconds above the lag SLO minus the oracle's.</p>\n";
  }
  out << "<p class=\"note\">Bold: the best value of the column (lower is better). Hover a "
         "policy name for its parameters.</p>\n";
}

// ---------------------------------------------------------------------------------------------
// Pareto scatter for tune

void write_pareto_chart(std::ostringstream& out, const TuneHtmlReport& r) {
  const double height = 380;
  const double plot_h = height - kTop - kBottom - 10;
  Range xr, yr;
  for (const auto& p : r.points) {
    xr.add(p.worker_seconds);
    yr.add(p.seconds_above_slo);
  }
  if (xr.empty()) xr = Range{0, 1};
  if (yr.empty()) yr = Range{0, 1};
  yr.lo = std::min(0.0, yr.lo);
  if (xr.hi <= xr.lo) {
    xr.lo -= std::max(1.0, std::fabs(xr.lo) * 0.05);
    xr.hi += std::max(1.0, std::fabs(xr.hi) * 0.05);
  }
  if (yr.hi <= yr.lo) yr.hi = yr.lo + 1;
  const double xpad = (xr.hi - xr.lo) * 0.04;
  const double x_step = nice_step(xr.hi - xr.lo + 2 * xpad, 8);
  const double x_lo = std::floor((xr.lo - xpad) / x_step) * x_step;
  const double x_hi = std::ceil((xr.hi + xpad) / x_step) * x_step;
  const double y_step = nice_step(yr.hi - yr.lo, 5);
  const double y_lo = std::floor(yr.lo / y_step) * y_step;
  const double y_hi = std::ceil(yr.hi * 1.04 / y_step) * y_step;
  auto sx = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * kPlotWidth; };
  auto sy = [&](double v) { return kTop + (y_hi - v) / (y_hi - y_lo) * plot_h; };

  std::size_t best = r.points.size();
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    if (best == r.points.size() || r.points[i].objective < r.points[best].objective) best = i;
  }

  out << "<figure class=\"chart\"><figcaption>Pareto front: worker-seconds vs seconds above "
         "the lag SLO (every evaluated configuration; front in red, best objective circled)"
         "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"chart-pareto\" "
         "class=\"chart\" viewBox=\"0 0 "
      << coord(kWidth) << ' ' << coord(height)
      << "\" role=\"img\" aria-label=\"Pareto front\">\n<g class=\"grid\">";
  for (double v = y_lo; v <= y_hi + y_step * 1e-6; v += y_step) {
    out << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << coord(sy(v)) << "\" x2=\""
        << coord(kLeft + kPlotWidth) << "\" y2=\"" << coord(sy(v)) << "\"/>";
  }
  for (double v = x_lo; v <= x_hi + x_step * 1e-6; v += x_step) {
    out << "<line x1=\"" << coord(sx(v)) << "\" y1=\"" << coord(kTop) << "\" x2=\"" << coord(sx(v))
        << "\" y2=\"" << coord(kTop + plot_h) << "\"/>";
  }
  out << "</g>\n<g class=\"axis\">";
  for (double v = y_lo; v <= y_hi + y_step * 1e-6; v += y_step) {
    out << "<text x=\"" << coord(kLeft - 6) << "\" y=\"" << coord(sy(v) + 4)
        << "\" text-anchor=\"end\">" << html_escape(si(v)) << "</text>";
  }
  for (double v = x_lo; v <= x_hi + x_step * 1e-6; v += x_step) {
    out << "<text x=\"" << coord(sx(v)) << "\" y=\"" << coord(kTop + plot_h + 16)
        << "\" text-anchor=\"middle\">" << html_escape(si(v)) << "</text>";
  }
  out << "<text class=\"unit\" x=\"" << coord(kLeft + kPlotWidth) << "\" y=\"" << coord(height - 4)
      << "\" text-anchor=\"end\">worker-seconds [worker*s]</text>"
      << "<text class=\"unit\" x=\"" << coord(kLeft + 4) << "\" y=\"" << coord(kTop + 12)
      << "\">seconds above SLO [s]</text>"
      << "<rect class=\"frame\" x=\"" << coord(kLeft) << "\" y=\"" << coord(kTop) << "\" width=\""
      << coord(kPlotWidth) << "\" height=\"" << coord(plot_h) << "\"/>";
  out << "</g>\n<g class=\"series\">\n";
  // Front as a staircase (sorted by worker-seconds).
  std::vector<const TunePoint*> front;
  for (const auto& p : r.points) {
    if (p.on_pareto_front) front.push_back(&p);
  }
  std::sort(front.begin(), front.end(), [](const TunePoint* a, const TunePoint* b) {
    return a->worker_seconds < b->worker_seconds;
  });
  if (front.size() > 1) {
    out << "<polyline class=\"front\" points=\"";
    for (std::size_t i = 0; i < front.size(); ++i) {
      if (i > 0) {
        out << ' ' << coord(sx(front[i]->worker_seconds)) << ','
            << coord(sy(front[i - 1]->seconds_above_slo)) << ' ';
      }
      out << coord(sx(front[i]->worker_seconds)) << ',' << coord(sy(front[i]->seconds_above_slo));
    }
    out << "\"/>\n";
  }
  auto point_title = [](const TunePoint& p) {
    return params_text(p.params) + "\nworker-seconds " + grouped(p.worker_seconds) +
           ", above SLO " + grouped(p.seconds_above_slo) + " s, scale actions " +
           std::to_string(p.scale_actions) + ", objective " + grouped(p.objective);
  };
  // Dominated points first, so the front is drawn on top.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& p : r.points) {
      if (p.on_pareto_front != (pass == 1)) continue;
      if (!std::isfinite(p.worker_seconds) || !std::isfinite(p.seconds_above_slo)) continue;
      out << "<circle class=\"" << (p.on_pareto_front ? "front" : "point") << "\" cx=\""
          << coord(sx(p.worker_seconds)) << "\" cy=\"" << coord(sy(p.seconds_above_slo))
          << "\" r=\"" << (p.on_pareto_front ? "4.5" : "3.5") << "\"><title>"
          << html_escape(point_title(p)) << "</title></circle>\n";
    }
  }
  if (best < r.points.size() && std::isfinite(r.points[best].worker_seconds) &&
      std::isfinite(r.points[best].seconds_above_slo)) {
    out << "<circle class=\"best\" cx=\"" << coord(sx(r.points[best].worker_seconds)) << "\" cy=\""
        << coord(sy(r.points[best].seconds_above_slo))
        << "\" r=\"9\"><title>best objective: " << html_escape(point_title(r.points[best]))
        << "</title></circle>\n";
  }
  out << "</g>\n</svg></figure>\n";
}

void write_front_table(std::ostringstream& out, const TuneHtmlReport& r) {
  std::vector<const TunePoint*> front;
  for (const auto& p : r.points) {
    if (p.on_pareto_front) front.push_back(&p);
  }
  std::sort(front.begin(), front.end(), [](const TunePoint* a, const TunePoint* b) {
    return a->worker_seconds < b->worker_seconds;
  });
  out << "<div class=\"table-wrap\"><table id=\"pareto-table\">\n<thead><tr><th>worker-seconds"
         "<small>worker*s</small></th><th>above SLO<small>s</small></th><th>scale actions"
         "<small>count</small></th><th>objective<small>lower is better</small></th>"
         "<th class=\"name\">parameters</th></tr></thead>\n<tbody>\n";
  for (const TunePoint* p : front) {
    out << "<tr><td>" << html_escape(grouped(p->worker_seconds)) << "</td><td>"
        << html_escape(grouped(p->seconds_above_slo)) << "</td><td>" << p->scale_actions
        << "</td><td>" << html_escape(grouped(p->objective)) << "</td><td class=\"name\"><code>"
        << html_escape(params_text(p->params)) << "</code></td></tr>\n";
  }
  out << "</tbody></table></div>\n";
}

void write_train_test_table(std::ostringstream& out, const TuneHtmlReport& r) {
  const auto& columns = kpi_columns();
  out << "<div class=\"table-wrap\"><table id=\"train-test-table\" class=\"kpi\">\n";
  write_kpi_header(out, {"set", "trace"}, false);
  out << "<tbody>\n";
  auto rows = [&](const std::vector<std::pair<std::string, Kpis>>& set, const char* name) {
    for (const auto& [trace, k] : set) {
      out << "<tr class=\"" << name << "\"><td class=\"name\">" << name
          << "</td><td class=\"name\">" << html_escape(trace) << "</td>";
      for (const auto& c : columns) out << "<td>" << html_escape(grouped(c.value(k))) << "</td>";
      out << "</tr>\n";
    }
  };
  rows(r.train_rows, "train");
  rows(r.test_rows, "test");
  out << "</tbody></table></div>\n";
  if (r.test_rows.empty()) {
    out << "<p class=\"note\">No test traces: pass --test to see how the tuned parameters do on "
           "traces they were not tuned on (overfitting shows as much worse test rows).</p>\n";
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public functions

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

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

std::string render_sim_html(const SimHtmlReport& report) {
  std::vector<const RunResult*> runs;
  for (const auto& r : report.runs) runs.push_back(&r);
  const std::vector<std::string> colors = run_colors(report.runs);

  std::ostringstream out;
  write_head(out, report.title, toggle_css(runs.size()));
  out << "<h1>" << html_escape(report.title) << "</h1>\n<p class=\"sub\">"
      << html_escape(std::to_string(report.runs.size()) + " polic" +
                     (report.runs.size() == 1 ? "y" : "ies") + " replayed on " +
                     report.trace.source + "; lag SLO " + grouped(double(report.lag_slo)) +
                     " messages")
      << "</p>\n";

  out << "<h2>Key figures</h2>\n";
  write_sim_kpi_table(out, runs, colors);

  out << "<h2>Over time</h2>\n";
  write_legend(out, runs, colors);
  write_time_charts(out, runs, colors, report.lag_slo, "chart-");
  bool thinned = false;
  for (const auto& r : report.runs) {
    thinned = thinned || (!r.series.empty() &&
                          report.config.series_interval_seconds > report.config.tick_seconds * 1.5);
  }
  out << "<p class=\"note\">Long series are reduced to the minimum and maximum of each pixel "
         "column, so peaks stay visible."
      << (thinned ? html_escape(" Series were recorded every " +
                                human_duration(report.config.series_interval_seconds) +
                                " (lag and workers sampled at those instants; arrivals averaged "
                                "over them); the KPI table uses every tick.")
                  : std::string())
      << " Click a legend entry to hide or show a policy.</p>\n";

  out << "<h2>Trace</h2>\n";
  write_facts(out, trace_facts(report.trace));
  out << "<h2>Simulator configuration</h2>\n";
  std::vector<std::pair<std::string, std::string>> config;
  flatten(report.config.to_json(), "", config);
  write_facts(out, config);
  write_foot(out);
  return out.str();
}

std::string render_tune_html(const TuneHtmlReport& report) {
  std::ostringstream out;
  std::vector<const RunResult*> runs;
  if (report.has_best_run) runs.push_back(&report.best_run);
  const std::vector<std::string> colors = {kPalette[0]};
  write_head(out, report.title, toggle_css(runs.size()));
  std::size_t front = 0;
  for (const auto& p : report.points) front += p.on_pareto_front ? 1 : 0;
  out << "<h1>" << html_escape(report.title) << "</h1>\n<p class=\"sub\">"
      << html_escape("policy " + report.policy + ": " + std::to_string(report.points.size()) +
                     " configurations evaluated, " + std::to_string(front) + " on the Pareto front")
      << "</p>\n";
  out << "<h2>Best parameters</h2>\n<p>Objective (lower is better): <code>"
      << html_escape(report.objective) << "</code></p>\n<pre id=\"best-params\">"
      << html_escape(report.best_params.dump(2)) << "</pre>\n";
  out << "<h2>Train and test</h2>\n";
  write_train_test_table(out, report);
  out << "<h2>Pareto front</h2>\n";
  write_pareto_chart(out, report);
  write_front_table(out, report);
  if (report.has_best_run && !report.best_run.series.empty()) {
    out << "<h2>Best configuration over time</h2>\n<p class=\"sub\">"
        << html_escape(report.best_run.label + " on " + report.best_run_trace.source) << "</p>\n";
    write_legend(out, runs, colors);
    write_time_charts(out, runs, colors, report.lag_slo, "chart-best-");
  }
  write_foot(out);
  return out.str();
}

void write_html_file(const std::string& path, const std::string& html) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
  }
  out.write(html.data(), static_cast<std::streamsize>(html.size()));
  out.close();
  if (!out) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
}

}  // namespace lagpilot::sim
