// `lagpilot sim --html` rendered by a real browser: headless Chromium loads the report from a
// file:// URL, and the test checks the parsed DOM (chart SVGs, KPI table), the browser's console
// (no messages at all: the page has no scripts, so any console line is an error) and its network
// log (no request leaves the file). A sanity test first shows that both detectors do fire on a
// page that logs to the console and fetches from the network, so a pass means something.
// Skipped (with a message) only when no Chromium binary is installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_test_util.h"
#include "tests/common/ci_skip.h"

namespace lagpilot {
namespace {

using testing::run_command;
using testing::shell_quote;
using testing::slurp;

// The Chromium binary, or "" when none is installed (LAGPILOT_CHROMIUM overrides).
std::string find_chromium() {
  if (const char* env = std::getenv("LAGPILOT_CHROMIUM"); env && *env) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    auto r = run_command(std::string("command -v ") + name);
    if (r.exit_code == 0 && !r.output.empty()) {
      std::string path = r.output.substr(0, r.output.find('\n'));
      if (!path.empty()) return path;
    }
  }
  return "";
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("lagpilot-html-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

struct BrowserLoad {
  int exit_code = -1;
  std::string dom;                         // document.documentElement.outerHTML after load
  std::vector<std::string> console_lines;  // console messages and uncaught errors
  std::vector<std::string> page_requests;  // network URLs the page asked for
  bool net_log_read = false;
  std::string stderr_text;
};

// Loads `html_path` in headless Chromium with a fresh profile, background networking off and a
// dead proxy (nothing can actually leave the machine), console logging to stderr and a NetLog.
BrowserLoad load_in_chromium(const std::string& chromium, const std::string& html_path,
                             const TempDir& dir, int window_width = 0) {
  const std::string dom = dir / "dom.html", err = dir / "stderr.txt", net = dir / "netlog.json";
  const std::string cmd =
      "(timeout 60 " + shell_quote(chromium) +
      " --headless=new --no-sandbox --disable-gpu --no-first-run --disable-extensions"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --disable-default-apps --proxy-server=127.0.0.1:9"
      " --enable-logging=stderr --v=0" +
      (window_width > 0 ? " --window-size=" + std::to_string(window_width) + ",900" : "") +
      " --user-data-dir=" + shell_quote(dir / "profile") + " --log-net-log=" + shell_quote(net) +
      " --dump-dom " + shell_quote("file://" + std::filesystem::absolute(html_path).string()) +
      " >" + shell_quote(dom) + " 2>" + shell_quote(err) + ")";
  BrowserLoad load;
  load.exit_code = run_command(cmd).exit_code;
  load.dom = slurp(dom);
  load.stderr_text = slurp(err);
  // Chromium logs console output as "[pid:tid:time:INFO:CONSOLE:line] "message", source: ..."
  // (older versions: "CONSOLE(line)"); an uncaught exception arrives the same way.
  static const std::regex kConsole(R"(:CONSOLE[:(]|Uncaught )");
  std::istringstream lines(load.stderr_text);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, kConsole)) load.console_lines.push_back(line);
  }
  // A request the page made carries the page's (file://) network isolation key; the browser's
  // own background requests do not.
  try {
    const auto log = nlohmann::json::parse(slurp(net));
    load.net_log_read = log.contains("events");
    for (const auto& event : log.value("events", nlohmann::json::array())) {
      const auto params = event.value("params", nlohmann::json::object());
      if (!params.contains("url") || !params.contains("network_isolation_key")) continue;
      const std::string url = params["url"].get<std::string>();
      const std::string key = params["network_isolation_key"].dump();
      if (key.find("file://") != std::string::npos && url.rfind("file:", 0) != 0 &&
          url.rfind("data:", 0) != 0) {
        load.page_requests.push_back(url);
      }
    }
  } catch (const std::exception&) {
    load.net_log_read = false;
  }
  return load;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// A script appended to a report (a copy: the reports themselves have none) that runs after
// layout and writes, into <pre id="width-probe">, the page's width, the document's scroll width
// and every element that reaches past the page's right (or left) edge. With STRICT false, an
// element inside a horizontally scrolling box that fits the page is let off (a wide table on a
// narrow window scrolls in its box); with STRICT true it is not: everything fits as laid out,
// no column hidden at the box's edge behind a scroll bar that overlay scroll bars do not show.
const char* const kWidthProbe = R"js(<script>
(() => {
  const strict = STRICT;
  const page = document.documentElement.clientWidth;
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const wide = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || (r.right <= page + 0.5 && r.left >= -0.5)) continue;
    let box = el.parentElement;
    while (box && box !== document.body && !scrolls(box)) box = box.parentElement;
    if (!strict && box && box !== document.body) {
      const b = box.getBoundingClientRect();
      if (b.right <= page + 0.5 && b.left >= -0.5) continue;
    }
    wide.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(r.left) +
              '..' + Math.round(r.right));
  }
  const out = document.createElement('pre');
  out.id = 'width-probe';
  out.textContent = JSON.stringify({page, scroll_width: document.documentElement.scrollWidth, wide});
  document.body.appendChild(out);
})();
</script>)js";

struct WidthProbe {
  int page = 0;
  int scroll_width = 0;
  std::vector<std::string> wide;  // elements past the page's edge, outside a scrolling box
  std::string error;              // the probe's output was not found or not JSON
};

// Loads a copy of `html_path` with kWidthProbe in Chromium at `window_width` pixels.
WidthProbe probe_widths(const std::string& chromium, const std::string& html_path,
                        const TempDir& dir, int window_width, bool strict) {
  std::string html = slurp(html_path);
  const auto body_end = html.rfind("</body>");
  if (body_end == std::string::npos) return {0, 0, {}, "no </body> in " + html_path};
  std::string probe_script = kWidthProbe;
  probe_script.replace(probe_script.find("STRICT"), 6, strict ? "true" : "false");
  html.insert(body_end, probe_script);
  const std::string probed = dir / "probed.html";
  std::ofstream(probed, std::ios::binary) << html;
  const BrowserLoad load = load_in_chromium(chromium, probed, dir, window_width);
  WidthProbe probe;
  static const std::regex kOut(R"(<pre id="width-probe">([^<]*)</pre>)");
  std::smatch m;
  if (load.exit_code != 0 || !std::regex_search(load.dom, m, kOut)) {
    probe.error = "no probe output (exit " + std::to_string(load.exit_code) +
                  "): " + load.stderr_text.substr(0, 2000);
    return probe;
  }
  std::string text = m[1].str();
  for (auto pos = text.find("&quot;"); pos != std::string::npos; pos = text.find("&quot;"))
    text.replace(pos, 6, "\"");
  try {
    const auto j = nlohmann::json::parse(text);
    probe.page = j.at("page").get<int>();
    probe.scroll_width = j.at("scroll_width").get<int>();
    for (const auto& w : j.at("wide")) probe.wide.push_back(w.get<std::string>());
  } catch (const std::exception& e) {
    probe.error = std::string("probe output is not JSON: ") + e.what() + ": " + text;
  }
  return probe;
}

class HtmlChromium : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty()) {
      LAGPILOT_SKIP_UNLESS_CI(
          "chromium not installed (apt-get install chromium, see scripts/install-deps.sh); the "
          "HTML report was not checked in a browser");
    }
  }
  std::string chromium_;
  TempDir dir_;
};

// The detectors must be able to fire, or the real test would pass vacuously.
TEST_F(HtmlChromium, DetectorsCatchConsoleErrorsAndNetworkRequests) {
  const std::string bad = dir_ / "bad.html";
  std::ofstream(bad) << "<!DOCTYPE html><html><head><title>bad</title>"
                        "<link rel=\"stylesheet\" href=\"https://example.invalid/x.css\"></head>"
                        "<body><p id=\"marker\">hi</p><img src=\"http://example.invalid/a.png\">"
                        "<script>console.error('lagpilot-marker'); notDefined();</script>"
                        "</body></html>";
  const BrowserLoad load = load_in_chromium(chromium_, bad, dir_);
  ASSERT_EQ(load.exit_code, 0) << load.stderr_text;
  EXPECT_NE(load.dom.find("id=\"marker\""), std::string::npos) << load.dom;
  const std::string console = join(load.console_lines);
  EXPECT_NE(console.find("lagpilot-marker"), std::string::npos)
      << "console.error not seen; stderr:\n"
      << load.stderr_text;
  EXPECT_NE(console.find("notDefined"), std::string::npos) << console;
  ASSERT_TRUE(load.net_log_read) << "no readable NetLog";
  EXPECT_NE(join(load.page_requests).find("example.invalid/a.png"), std::string::npos)
      << "image request not seen in the NetLog: " << join(load.page_requests);
  EXPECT_NE(join(load.page_requests).find("example.invalid/x.css"), std::string::npos);
}

TEST_F(HtmlChromium, SimReportLoadsWithChartsTableAndNoErrorsOrNetwork) {
  const std::string report = dir_ / "report.html";
  auto sim = run_command(
      testing::sim_command("--policy pid,static:8 --threads 2 --html " + shell_quote(report)));
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const std::string html = slurp(report);
  ASSERT_FALSE(html.empty());
  EXPECT_LT(html.size(), 2'000'000u) << "report unexpectedly large";

  const BrowserLoad load = load_in_chromium(chromium_, report, dir_);
  ASSERT_EQ(load.exit_code, 0) << load.stderr_text;
  const std::string& dom = load.dom;
  // The parsed DOM: three chart SVGs sharing one x scale, the KPI table with both policies.
  for (const char* id : {"chart-arrivals", "chart-lag", "chart-workers", "kpi-table"}) {
    EXPECT_NE(dom.find(std::string("id=\"") + id + "\""), std::string::npos) << id << " missing";
  }
  EXPECT_EQ(count(dom, "<svg"), 3u);
  EXPECT_EQ(count(dom, "</svg>"), 3u);
  // One line per policy on the lag and workers panels (+ the arrivals area).
  EXPECT_EQ(count(dom, "<polyline class=\"run-0"), 2u);
  EXPECT_EQ(count(dom, "<polyline class=\"run-1"), 2u);
  EXPECT_EQ(count(dom, "<polygon class=\"arrivals"), 1u);
  const auto table = dom.substr(dom.find("id=\"kpi-table\""));
  const auto tbody = table.substr(0, table.find("</table>"));
  EXPECT_EQ(count(tbody, "<tr"), 3u) << "header + 2 policies";
  EXPECT_NE(tbody.find(">pid</td>"), std::string::npos);
  EXPECT_NE(tbody.find(">static:8</td>"), std::string::npos);
  EXPECT_EQ(dom.find("<script"), std::string::npos);

  EXPECT_TRUE(load.console_lines.empty()) << "console output:\n" << join(load.console_lines);
  ASSERT_TRUE(load.net_log_read) << "no readable NetLog";
  EXPECT_TRUE(load.page_requests.empty()) << "network requests:\n" << join(load.page_requests);
}

// The probe itself must see a table that is too wide, or a pass means nothing.
TEST_F(HtmlChromium, WidthProbeCatchesAnElementWiderThanThePage) {
  const std::string page = dir_ / "wide.html";
  std::ofstream(page) << "<!DOCTYPE html><html><body><table id=\"t\" style=\"width:2000px\">"
                         "<tr><td>x</td></tr></table><div style=\"overflow-x:auto\">"
                         "<table id=\"ok\" style=\"width:2000px\"><tr><td>y</td></tr></table>"
                         "</div></body></html>";
  const WidthProbe probe = probe_widths(chromium_, page, dir_, 800, false);
  ASSERT_TRUE(probe.error.empty()) << probe.error;
  EXPECT_LE(probe.page, 800);
  EXPECT_GT(probe.scroll_width, probe.page);
  EXPECT_NE(join(probe.wide).find("table#t "), std::string::npos) << join(probe.wide);
  EXPECT_EQ(join(probe.wide).find("table#ok "), std::string::npos) << join(probe.wide);
  const WidthProbe strict = probe_widths(chromium_, page, dir_, 800, true);
  EXPECT_NE(join(strict.wide).find("table#ok "), std::string::npos) << join(strict.wide);
}

// The sim and tune reports at a laptop's width: every element, every table column included,
// fits the page as laid out; at a narrow width nothing reaches past the page's edge, and the
// wide tables scroll inside their own box.
TEST_F(HtmlChromium, ReportsFitThePageAndWideTablesScrollInTheirBox) {
  const std::string sim_report = dir_ / "sim.html", tune_report = dir_ / "tune.html";
  auto sim = run_command(testing::sim_command("--policy pid,threshold,hpa,static:8,oracle --html " +
                                              shell_quote(sim_report)));
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  auto tune = run_command(testing::kBinary + " tune --policy pid " +
                          testing::twitter_trace_args("--train") + " --test " +
                          shell_quote(testing::kTraces + "nab_nyc_taxi.csv") +
                          " --budget 6 --html " + shell_quote(tune_report));
  ASSERT_EQ(tune.exit_code, 0) << tune.output;
  for (const std::string& report : {sim_report, tune_report}) {
    for (const int width : {1280, 720}) {
      const WidthProbe probe = probe_widths(chromium_, report, dir_, width, width >= 1280);
      ASSERT_TRUE(probe.error.empty()) << probe.error;
      EXPECT_LE(probe.page, width) << report;
      EXPECT_GT(probe.page, width - 40) << report << ": the window size was not applied";
      EXPECT_LE(probe.scroll_width, probe.page) << report << " at " << width << " px";
      EXPECT_TRUE(probe.wide.empty()) << report << " at " << width << " px:\n" << join(probe.wide);
    }
  }
}

}  // namespace
}  // namespace lagpilot
