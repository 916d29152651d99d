// HTML reports: structure, one SVG per chart, escaping, no network references, downsampling,
// oracle ratios, and error handling. (tests/integration/html_chromium_test.cpp loads a report
// in a real browser.)
#include "sim/html_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>

#include "sim/simulation.h"

namespace lagpilot::sim {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Checks that tags nest properly: every opened element is closed in order, except HTML void
// elements and self-closed SVG elements; <style> content is skipped. Returns "" or a problem.
std::string check_nesting(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta", "input", "br", "hr", "img", "link", "wbr"};
  std::vector<std::string> stack;
  std::size_t pos = 0;
  if (html.rfind("<!DOCTYPE html>", 0) != 0) return "no <!DOCTYPE html> at the start";
  pos = html.find('>') + 1;
  while ((pos = html.find('<', pos)) != std::string::npos) {
    const std::size_t end = html.find('>', pos);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(pos);
    const std::string tag = html.substr(pos + 1, end - pos - 1);
    if (tag.empty()) return "empty tag at " + std::to_string(pos);
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) {
        return "</" + name + "> closes <" + (stack.empty() ? "nothing" : stack.back()) + "> at " +
               std::to_string(pos);
      }
      stack.pop_back();
    } else {
      const std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
      const bool self_closed = tag.back() == '/';
      if (!self_closed && !kVoid.count(name)) stack.push_back(name);
      if (name == "style") {  // skip to </style>
        pos = html.find("</style>", end);
        if (pos == std::string::npos) return "unterminated <style>";
        continue;
      }
    }
    pos = end + 1;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

std::vector<SeriesPoint> make_series(std::size_t n, double dt, int64_t base_lag, int workers) {
  std::vector<SeriesPoint> series;
  for (std::size_t i = 0; i < n; ++i) {
    SeriesPoint p;
    p.t = dt * double(i + 1);
    p.arrival_rate = 100 + 50 * std::sin(double(i) / 50.0);
    p.processed_rate = p.arrival_rate;
    p.lag = base_lag + int64_t(i % 17);
    p.workers = workers + int(i / 1000 % 3);
    series.push_back(p);
  }
  return series;
}

RunResult make_run(const std::string& label, double worker_seconds, double above_slo,
                   std::vector<SeriesPoint> series) {
  RunResult r;
  r.label = label;
  r.policy = label;
  r.policy_params = {{"label", label}};
  r.fidelity = "message";
  r.kpis.worker_seconds = worker_seconds;
  r.kpis.seconds_above_slo = above_slo;
  r.kpis.max_lag = 1234;
  r.series = std::move(series);
  return r;
}

SimHtmlReport make_sim_report(std::size_t points = 500) {
  SimHtmlReport report;
  report.title = "test report";
  report.trace.source = "traces/example.csv";
  report.trace.bins = points;
  report.trace.bin_seconds = 60;
  report.trace.duration_seconds = 60.0 * double(points);
  report.config.tick_seconds = 60;
  report.lag_slo = 500;
  report.runs.push_back(make_run("pid", 2000, 30, make_series(points, 60, 100, 4)));
  report.runs.push_back(make_run("static:16", 8000, 0, make_series(points, 60, 10, 16)));
  return report;
}

TEST(HtmlReport, SimReportIsWellFormedWithOneSvgPerChart) {
  const std::string html = render_sim_html(make_sim_report());
  EXPECT_EQ(check_nesting(html), "");
  EXPECT_EQ(count(html, "<html"), 1u);
  EXPECT_EQ(count(html, "<head>"), 1u);
  EXPECT_EQ(count(html, "<body>"), 1u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 3u);
  for (const char* id : {"chart-arrivals", "chart-lag", "chart-workers", "kpi-table"}) {
    EXPECT_EQ(count(html, std::string("id=\"") + id + "\""), 1u) << id;
  }
  // One lag and one workers line per policy, in the policy's class for the legend toggles.
  EXPECT_EQ(count(html, "<polyline class=\"run-0\""), 2u);
  EXPECT_EQ(count(html, "<polyline class=\"run-1\""), 2u);
  EXPECT_EQ(count(html, "id=\"toggle-"), 2u);
  EXPECT_NE(html.find("SLO 500"), std::string::npos) << "lag SLO line label";
  // Human time ticks: 500 minutes -> hour ticks.
  EXPECT_NE(html.find(">2h<"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(HtmlReport, EscapesEveryUserSuppliedText) {
  SimHtmlReport report = make_sim_report(50);
  report.title = "t<i>tle & \"q\"";
  report.trace.source = "<img src=x onerror=alert(1)>.csv";
  report.runs[0].label = "<script>alert('x')</script>";
  report.runs[0].policy_params = {{"k", "</td><script>"}};
  const std::string html = render_sim_html(report);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<i>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("t&lt;i&gt;tle &amp; &quot;q&quot;"), std::string::npos);
  EXPECT_EQ(check_nesting(html), "");
  EXPECT_EQ(html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

// No external resources: the only URL allowed is the SVG namespace name (never fetched).
void expect_self_contained(const std::string& html) {
  std::string rest = html;
  const std::string xmlns = "xmlns=\"http://www.w3.org/2000/svg\"";
  for (auto pos = rest.find(xmlns); pos != std::string::npos; pos = rest.find(xmlns)) {
    rest.erase(pos, xmlns.size());
  }
  EXPECT_EQ(rest.find("http://"), std::string::npos);
  EXPECT_EQ(rest.find("https://"), std::string::npos);
  EXPECT_EQ(rest.find(" src="), std::string::npos);
  EXPECT_EQ(rest.find(" href="), std::string::npos);
  EXPECT_EQ(rest.find("url("), std::string::npos);
  EXPECT_EQ(rest.find("@import"), std::string::npos);
}

TEST(HtmlReport, HasNoNetworkReferences) {
  expect_self_contained(render_sim_html(make_sim_report()));
  TuneHtmlReport tune;
  tune.points.push_back({{{"kp", 1}}, 100, 5, 3, 150, true});
  expect_self_contained(render_tune_html(tune));
}

TEST(HtmlReport, DownsamplingKeepsExtremesAndBoundsThePointCount) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(0, 10);
  std::vector<XYPoint> points;
  for (int i = 0; i < 100'000; ++i) points.push_back({double(i) * 0.5, 100 + noise(rng)});
  points[31'337].y = 99'999;  // a one-sample spike
  points[77'777].y = -5'000;  // and a dip
  const auto out = downsample_min_max(points, 900);
  EXPECT_LE(out.size(), 1800u);
  EXPECT_GE(out.size(), 900u);
  const auto [lo, hi] =
      std::minmax_element(out.begin(), out.end(), [](auto& a, auto& b) { return a.y < b.y; });
  EXPECT_EQ(hi->y, 99'999);
  EXPECT_EQ(hi->x, points[31'337].x);
  EXPECT_EQ(lo->y, -5'000);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(), [](auto& a, auto& b) { return a.x < b.x; }));
  // Every column's own max survives, not just the global one.
  const double column_width = (points.back().x - points.front().x) / 900;
  for (int column : {0, 450, 899}) {
    double want = -1e300, got = -1e300;
    for (const auto& p : points) {
      const int c = std::min(899, int((p.x - points.front().x) / column_width));
      if (c == column) want = std::max(want, p.y);
    }
    for (const auto& p : out) {
      const int c = std::min(899, int((p.x - points.front().x) / column_width));
      if (c == column) got = std::max(got, p.y);
    }
    EXPECT_EQ(got, want) << "column " << column;
  }
  // Short series pass through untouched; zero columns is an error.
  std::vector<XYPoint> few(points.begin(), points.begin() + 100);
  EXPECT_EQ(downsample_min_max(few, 900).size(), 100u);
  EXPECT_THROW(downsample_min_max(few, 0), std::invalid_argument);
}

TEST(HtmlReport, LongSeriesAreDownsampledInThePage) {
  SimHtmlReport report = make_sim_report(60'000);
  report.runs[0].series[34'567].lag = 7'654'321;  // far above everything else
  const std::string html = render_sim_html(report);
  // Every polyline has at most ~2 points per pixel column of a 1000-unit-wide chart.
  // Plain find, not std::regex: libstdc++'s regex recurses once per character and overflows
  // the (ASan-enlarged) stack on a 100 KB attribute.
  const std::string opening = "<polyline class=\"run-0\" points=\"";
  int lines = 0;
  for (size_t at = html.find(opening); at != std::string::npos; at = html.find(opening, at)) {
    ++lines;
    at += opening.size();
    const size_t close = html.find('"', at);
    ASSERT_NE(close, std::string::npos);
    EXPECT_LE(std::count(html.begin() + at, html.begin() + close, ','), 2000);
  }
  EXPECT_EQ(lines, 2);
  EXPECT_LT(html.size(), 400'000u);
  // The spike forces the log scale (over 30x the SLO) and its 10M top tick.
  EXPECT_NE(html.find("log scale"), std::string::npos);
  EXPECT_NE(html.find(">10M<"), std::string::npos);
}

TEST(HtmlReport, OracleRatiosAppearOnlyWithAnOracleRun) {
  SimHtmlReport report = make_sim_report(50);
  std::string html = render_sim_html(report);
  EXPECT_EQ(html.find("vs oracle"), std::string::npos);
  report.runs.push_back(make_run("oracle", 1000, 10, make_series(50, 60, 0, 2)));
  html = render_sim_html(report);
  EXPECT_EQ(count(html, "vs oracle<small>"), 2u);
  EXPECT_NE(html.find("<td>2.00x</td>"), std::string::npos) << "pid: 2000 / 1000 worker*s";
  EXPECT_NE(html.find("<td>8.00x</td>"), std::string::npos) << "static:16: 8000 / 1000";
  EXPECT_NE(html.find("<td>+20</td>"), std::string::npos) << "pid: 30 - 10 s above SLO";
  EXPECT_NE(html.find("<td>-10</td>"), std::string::npos) << "static:16: 0 - 10 s";
  EXPECT_EQ(check_nesting(html), "");
}

TEST(HtmlReport, RunsWithoutSeriesStillGetTableRows) {
  SimHtmlReport report = make_sim_report(50);
  report.runs.push_back(make_run("no-series", 10, 0, {}));
  const std::string html = render_sim_html(report);
  EXPECT_NE(html.find("no-series</td>"), std::string::npos);
  EXPECT_EQ(count(html, "<polyline class=\"run-2\""), 0u);
  for (auto& r : report.runs) r.series.clear();
  const std::string bare = render_sim_html(report);
  EXPECT_EQ(count(bare, "<svg"), 0u);
  EXPECT_NE(bare.find("No time series"), std::string::npos);
}

TEST(HtmlReport, MismatchedSeriesTimesAreRejected) {
  SimHtmlReport report = make_sim_report(50);
  report.runs[1].series = make_series(50, 30, 0, 4);
  try {
    render_sim_html(report);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("static:16"), std::string::npos) << e.what();
  }
}

TEST(HtmlReport, RealSimulationRendersAndShowsItsKpis) {
  Trace trace;
  trace.source = "synthetic";
  trace.bin_seconds = 10;
  for (int i = 0; i < 120; ++i) trace.rates.push_back(i >= 40 && i < 60 ? 900.0 : 100.0);
  SimConfig config;
  config.record_series = true;
  config.lag_slo = 2000;
  GuardConfig guards;
  SimHtmlReport report;
  report.trace = TraceInfo::of(trace);
  report.config = config;
  report.lag_slo = config.lag_slo;
  report.runs = simulate_all(trace,
                             {PolicySpec{"threshold", nlohmann::json::object(), "threshold"},
                              PolicySpec{"static", {{"workers", 8}}, "static:8"}},
                             guards, config);
  const std::string html = render_sim_html(report);
  EXPECT_EQ(check_nesting(html), "");
  EXPECT_EQ(count(html, "<svg"), 3u);
  // The arrived count (grouped with commas) is in the table.
  const std::string digits = std::to_string(report.runs[0].kpis.arrived);
  std::string arrived;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) arrived.push_back(',');
    arrived.push_back(digits[i]);
  }
  ASSERT_GT(report.runs[0].kpis.arrived, 1000);
  EXPECT_NE(html.find("<td>" + arrived + "</td>"), std::string::npos) << arrived;
}

TEST(HtmlReport, TuneReportHasParetoScatterAndTrainTestTable) {
  TuneHtmlReport tune;
  tune.title = "tune <pid>";
  tune.policy = "pid";
  tune.objective = "worker_s + 100 x s_above_slo";
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 40; ++i) {
    TunePoint p;
    p.params = {{"kp", u(rng)}, {"ki", u(rng)}};
    p.worker_seconds = 1000 + 1000 * u(rng);
    p.seconds_above_slo = 300 * u(rng);
    p.scale_actions = i;
    p.objective = p.worker_seconds + 100 * p.seconds_above_slo;
    tune.points.push_back(p);
  }
  // Mark the true front (not dominated in both coordinates).
  int front = 0;
  for (auto& p : tune.points) {
    p.on_pareto_front =
        std::none_of(tune.points.begin(), tune.points.end(), [&](const TunePoint& q) {
          return q.worker_seconds <= p.worker_seconds &&
                 q.seconds_above_slo <= p.seconds_above_slo &&
                 (q.worker_seconds < p.worker_seconds || q.seconds_above_slo < p.seconds_above_slo);
        });
    front += p.on_pareto_front;
  }
  ASSERT_GE(front, 2);
  tune.best_params = {{"kp", "<b>bold</b>"}};
  Kpis k;
  k.worker_seconds = 4321;
  tune.train_rows = {{"train-a.csv", k}, {"train-b.csv", k}};
  tune.test_rows = {{"test-<x>.csv", k}};

  std::string html = render_tune_html(tune);
  EXPECT_EQ(check_nesting(html), "");
  EXPECT_EQ(count(html, "<svg"), 1u);
  EXPECT_EQ(count(html, "id=\"chart-pareto\""), 1u);
  EXPECT_EQ(count(html, "<circle class=\"front\""), std::size_t(front));
  EXPECT_EQ(count(html, "<circle class=\"point\""), tune.points.size() - std::size_t(front));
  EXPECT_EQ(count(html, "<circle class=\"best\""), 1u);
  EXPECT_EQ(count(html, "<tr class=\"train\""), 2u);
  EXPECT_EQ(count(html, "<tr class=\"test\""), 1u);
  EXPECT_NE(html.find("test-&lt;x&gt;.csv"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("4,321"), std::string::npos);

  // With the best configuration's series: three more charts.
  tune.has_best_run = true;
  tune.best_run = make_run("pid (best)", 1, 0, make_series(100, 60, 5, 4));
  tune.best_run_trace.source = "train-a.csv";
  tune.lag_slo = 100;
  html = render_tune_html(tune);
  EXPECT_EQ(check_nesting(html), "");
  EXPECT_EQ(count(html, "<svg"), 4u);
  EXPECT_EQ(count(html, "id=\"chart-best-lag\""), 1u);
}

}  // namespace
}  // namespace lagpilot::sim
