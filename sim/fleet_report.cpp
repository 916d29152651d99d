#include "sim/fleet_report.h"

#include <algorithm>
#include <sstream>

#include "sim/html_report.h"
#include "sim/html_text.h"
#include "sim/svg_chart.h"

namespace lagpilot::sim {
namespace {

using html::ChartSpec;
using html::HorizontalMarker;
using html::kColumns;

const char* const kFleetCss = R"css(
body { font: 14px/1.45 system-ui, sans-serif; color: #1f2328; margin: 0 auto; padding: 16px 24px;
       max-width: 1180px; }
h1 { font-size: 22px; } h2 { font-size: 17px; border-bottom: 1px solid #d0d7de; }
table { font-size: 13px; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 6px; border-bottom: 1px solid #d0d7de; text-align: right; }
th { background: #f6f8fa; } td.name, th.name { text-align: left; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 6px; }
svg.chart { width: 100%; height: auto; display: block; }
svg .grid line { stroke: #eaeef2; } svg .axis text { font-size: 11px; fill: #656d76; }
svg .frame { fill: none; stroke: #d0d7de; }
svg polyline { fill: none; stroke-width: 1.4; vector-effect: non-scaling-stroke; }
svg polygon { stroke: none; opacity: 0.25; }
)css";

const std::vector<std::string> kColors{"#0969da", "#cf222e", "#1a7f37", "#8250df",
                                       "#bf8700", "#57606a", "#e16f24", "#1b7c83"};

// A step line: the value of a tick holds over the tick that ends at its time.
template <typename F>
std::vector<XYPoint> steps(const std::vector<FleetSeriesPoint>& series, F value) {
  std::vector<XYPoint> pts;
  double t = 0.0;
  for (const FleetSeriesPoint& p : series) {
    pts.push_back({t, value(p)});
    pts.push_back({p.t, value(p)});
    t = p.t;
  }
  return downsample_min_max(pts, kColumns);
}

}  // namespace

std::string render_fleet_html(const FleetHtmlReport& r) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
      << html_escape(r.title) << "</title><style>" << kFleetCss << "</style></head><body>\n";
  out << "<h1>" << html_escape(r.title) << "</h1>\n<p>" << html_escape(r.summary) << "</p>\n";

  double t_end = 1.0;
  for (const FleetResult& run : r.runs) {
    if (!run.series.empty()) t_end = std::max(t_end, run.series.back().t);
  }
  auto chart = [&](const std::string& id, const std::string& caption, const std::string& unit,
                   double height) {
    ChartSpec c;
    c.id = id;
    c.caption = caption;
    c.y_unit = unit;
    c.height = height;
    c.x_min = 0;
    c.x_max = t_end;
    return c;
  };
  ChartSpec arrivals = chart("arrivals", "Arrivals", "msg/s", 150);
  ChartSpec lag = chart("lag", "Group lag (all partitions)", "messages", 220);
  if (r.lag_slo > 0) {
    lag.marker = HorizontalMarker{static_cast<double>(r.lag_slo),
                                  "SLO " + html::grouped(static_cast<double>(r.lag_slo))};
  }
  ChartSpec replicas = chart("replicas", "Replicas (pods alive; shaded: rebalancing)", "pods", 180);
  ChartSpec workers = chart("workers", "Workers (sum of the pools)", "workers", 180);
  workers.x_label = "time since trace start (simulated)";
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const FleetResult& run = r.runs[i];
    if (run.series.empty()) continue;
    const std::string& color = kColors[i % kColors.size()];
    const std::string cls = "run-" + std::to_string(i);
    if (arrivals.lines.empty()) {
      std::vector<XYPoint> pts;
      for (const auto& p : run.series) pts.push_back({p.t, p.arrival_rate});
      arrivals.lines.push_back(
          {downsample_min_max(pts, kColumns), "#8c8c8c", "arrivals", "arrival rate", false, true});
    }
    std::vector<XYPoint> lag_pts;
    for (const auto& p : run.series) lag_pts.push_back({p.t, static_cast<double>(p.lag)});
    lag.lines.push_back(
        {downsample_min_max(lag_pts, kColumns), color, cls, run.label, false, false});
    const double top = static_cast<double>(std::max(1, run.fleet.max_replicas));
    html::Line paused{
        steps(run.series, [&](const FleetSeriesPoint& p) { return p.rebalancing ? top : 0.0; }),
        color,
        cls,
        run.label + ": rebalancing",
        false,
        true};
    replicas.lines.push_back(paused);
    replicas.lines.push_back(
        {steps(run.series, [](const FleetSeriesPoint& p) { return double(p.replicas); }), color,
         cls, run.label, false, false});
    workers.lines.push_back(
        {steps(run.series, [](const FleetSeriesPoint& p) { return double(p.workers); }), color, cls,
         run.label, false, false});
  }
  out << "<p>";
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    out << "<span class=\"swatch\" style=\"background:" << kColors[i % kColors.size()]
        << "\"></span>" << html_escape(r.runs[i].label) << " &nbsp; ";
  }
  out << "</p>\n";
  if (!arrivals.lines.empty()) {
    html::write_chart(out, arrivals);
    html::write_chart(out, lag);
    html::write_chart(out, replicas);
    html::write_chart(out, workers);
  }

  out << "<h2>KPIs</h2>\n<table><tr><th class=\"name\">run</th><th>lag integral</th><th>p99 "
         "lag</th><th>max lag</th><th>s above SLO</th><th>worker-s</th><th>mean "
         "workers</th><th>replica-s</th><th>mean replicas</th><th>max replicas</th>"
         "<th>rebalances</th><th>s rebalancing</th><th>scale actions</th><th>final lag</th>"
         "</tr>\n";
  for (const FleetResult& run : r.runs) {
    const Kpis& k = run.kpis;
    out << "<tr><td class=\"name\">" << html_escape(run.label) << "</td><td>"
        << html::si(k.lag_integral) << "</td><td>" << html::grouped(double(k.p99_lag))
        << "</td><td>" << html::grouped(double(k.max_lag)) << "</td><td>"
        << html::grouped(k.seconds_above_slo) << "</td><td>" << html::si(k.worker_seconds)
        << "</td><td>" << html::grouped(k.mean_workers) << "</td><td>"
        << html::si(run.fleet.replica_seconds) << "</td><td>"
        << html::grouped(run.fleet.mean_replicas) << "</td><td>" << run.fleet.max_replicas
        << "</td><td>" << run.fleet.rebalances << "</td><td>"
        << html::grouped(run.fleet.rebalance_seconds) << "</td><td>" << k.scale_actions
        << "</td><td>" << html::grouped(double(k.final_lag)) << "</td></tr>\n";
  }
  out << "</table>\n</body></html>\n";
  return out.str();
}

}  // namespace lagpilot::sim
