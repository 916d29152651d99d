#include "sim/report_charts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "policies/number_text.h"
#include "sim/html_text.h"
#include "sim/svg_chart.h"

namespace lagpilot::sim::html {
namespace {

// Tableau 10: distinguishable, readable on white, reasonably colorblind-safe.
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

constexpr const char* kOracleColor = "#222222";

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

}  // namespace

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

  // Only runs with shedding configured (SimConfig::shedding) have a shed-rate chart.
  const bool any_shedding = std::any_of(runs.begin(), runs.end(), [](const RunResult* r) {
    return r->kpis.shedding && !r->series.empty();
  });
  ChartSpec shed = time_chart("shed", "Shed rate (records shed by age)", "msg/s", 170);

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
    if (r.kpis.shedding) {
      std::vector<XYPoint> shed_pts;
      shed_pts.reserve(r.series.size());
      for (const auto& p : r.series) shed_pts.push_back({p.t, p.shed_rate});
      shed.lines.push_back(
          {downsample_min_max(shed_pts, kColumns), colors[i], cls, r.label, dashed, false});
    }
  }
  // One policy far above the SLO would flatten every other line: switch to a log scale then.
  double max_lag = 0;
  for (const auto& line : lag.lines) {
    for (const auto& p : line.points) max_lag = std::max(max_lag, p.y);
  }
  if (max_lag > kLogLagFactor * static_cast<double>(std::max<int64_t>(lag_slo, 1))) {
    lag.log_y = true;
    lag.caption += " (log scale: some lag exceeds " + text::fixed(kLogLagFactor, 0) + "x the SLO)";
  }
  out << "<div class=\"charts\">\n";
  write_chart(out, arrivals);
  write_chart(out, lag);
  if (any_shedding) write_chart(out, shed);
  write_chart(out, workers);
  out << "</div>\n";
}

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

std::string first_run_color() {
  return kPalette[0];
}

}  // namespace lagpilot::sim::html
